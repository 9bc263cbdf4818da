// Package fakegit holds the git pieces the forge emulators (fakehub for
// GitHub, fakelab for GitLab) share: running git, bare repositories,
// committing files without a work tree, serving git smart HTTP (as git
// http-backend would, one process fewer), a CI runner that runs a
// repository's test command on a commit, and a throwaway CA for https on
// loopback.
package fakegit

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// Run runs git in dir with extra env (and stdin when not nil) and returns
// stdout without its trailing newlines.
func Run(ctx context.Context, dir string, env []string, stdin []byte, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = dir
	cmd.Env = append(append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_TERMINAL_PROMPT=0", "LC_ALL=C"), env...)
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if err != nil {
		return strings.TrimSpace(out.String()), &Error{Args: args, Err: err, Stderr: strings.TrimSpace(errb.String())}
	}
	return strings.TrimRight(out.String(), "\n"), nil
}

// Error is a failed git command with its stderr.
type Error struct {
	Args   []string
	Err    error
	Stderr string
}

func (e *Error) Error() string {
	return fmt.Sprintf("git %s: %v: %s", strings.Join(e.Args, " "), e.Err, e.Stderr)
}

func (e *Error) Unwrap() error { return e.Err }

// ExitCode is the exit status of a failed command, -1 when it did not run.
func ExitCode(err error) int {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	return -1
}

// InitBare creates a bare repository whose HEAD names branch, ready to be
// served over smart HTTP (pushes allowed, any sha fetchable).
func InitBare(ctx context.Context, dir, branch string) error {
	forget(dir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("mkdir repo: %w", err)
	}
	if _, err := Run(ctx, dir, nil, nil, "init", "--bare", "--quiet", "--initial-branch="+branch); err != nil {
		return err
	}
	// Pushes over http need receive-pack; fetches of arbitrary shas help
	// clients that fetch a PR head by oid. Appended to the config git
	// init just wrote (what three `git config` runs would write).
	f, err := os.OpenFile(filepath.Join(dir, "config"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return fmt.Errorf("repo config: %w", err)
	}
	_, err = f.WriteString("[http]\n\treceivepack = true\n[uploadpack]\n\tallowAnySHA1InWant = true\n[receive]\n\tdenyDeleteCurrent = warn\n")
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("repo config: %w", err)
	}
	return nil
}

// DeleteFile as a file's content in CommitFiles removes the file. The
// value is fakehub's historical marker, kept so both emulators agree.
const DeleteFile = "\x00fakehub:delete\x00"

// CommitFiles writes files on top of parent (or an empty tree when parent
// is "") into the bare repository dir and returns the new commit, dated
// when, with identity (all four GIT_AUTHOR_NAME=…, GIT_AUTHOR_EMAIL=…,
// GIT_COMMITTER_NAME=… and GIT_COMMITTER_EMAIL=… entries: machines
// running tests may have none). A file whose content is DeleteFile is
// removed; a file written is an ordinary file (mode 100644).
//
// The objects are written here, as git writes loose objects, not by a
// git per file, tree and commit (hash-object, update-index, write-tree,
// commit-tree): they are byte for byte what those would write, so the
// commit id is the same (TestCommitFilesWritesWhatGitWrites). git runs
// only to list the parent's files, once per parent this process did not
// write itself.
func CommitFiles(ctx context.Context, dir, parent string, files map[string]string, message string, when time.Time, identity []string) (string, error) {
	author, committer, err := identityLines(identity, when)
	if err != nil {
		return "", err
	}
	entries := map[string]treeEntry{}
	if parent != "" {
		if parent, entries, err = listFiles(ctx, dir, parent); err != nil {
			return "", err
		}
	}
	for path, content := range files {
		if content == DeleteFile {
			delete(entries, path)
			continue
		}
		if !validTreePath(path) {
			return "", fmt.Errorf("commit files: invalid path %q", path)
		}
		sha, err := writeObject(dir, "blob", []byte(content))
		if err != nil {
			return "", err
		}
		entries[path] = treeEntry{mode: "100644", sha: sha}
	}
	tree, err := writeTree(dir, entries)
	if err != nil {
		return "", err
	}
	var c strings.Builder
	fmt.Fprintf(&c, "tree %s\n", tree)
	if parent != "" {
		fmt.Fprintf(&c, "parent %s\n", parent)
	}
	fmt.Fprintf(&c, "author %s\ncommitter %s\n\n%s", author, committer, message)
	if message != "" && !strings.HasSuffix(message, "\n") {
		c.WriteByte('\n')
	}
	sha, err := writeObject(dir, "commit", []byte(c.String()))
	if err != nil {
		return "", err
	}
	objCache.put(&objCache.commits, dir+"\x00"+sha, sha)
	objCache.putFiles(dir, sha, entries)
	return sha, nil
}

// RevParse resolves rev to a commit id. A branch is read from its loose
// ref file when it has one, and that a full commit id names a commit is
// remembered: the emulators never delete objects.
func RevParse(ctx context.Context, dir, rev string) (string, error) {
	if sha, ok := looseBranch(dir, rev); ok {
		rev = sha
	}
	if !fullSHA(rev) {
		return Run(ctx, dir, nil, nil, "rev-parse", "--verify", "--quiet", rev+"^{commit}")
	}
	return objCache.remember(&objCache.commits, dir+"\x00"+rev, func() (string, error) {
		return Run(ctx, dir, nil, nil, "rev-parse", "--verify", "--quiet", rev+"^{commit}")
	})
}

// RunAt runs git like Run, for an answer that depends only on the objects
// named by shas (commits, and what they reach). When every one is a full
// commit id, a successful answer is remembered per dir and args: objects
// never change, and the emulators never delete them.
func RunAt(ctx context.Context, dir string, shas []string, args ...string) (string, error) {
	for _, sha := range shas {
		if !fullSHA(sha) {
			return Run(ctx, dir, nil, nil, args...)
		}
	}
	return objCache.remember(&objCache.outs, dir+"\x00"+strings.Join(args, "\x00"), func() (string, error) {
		return Run(ctx, dir, nil, nil, args...)
	})
}

// ReadRefs maps branch name to sha.
func ReadRefs(ctx context.Context, dir string) (map[string]string, error) {
	out, err := Run(ctx, dir, nil, nil, "for-each-ref", "--format=%(objectname) %(refname)", "refs/heads/")
	if err != nil {
		return nil, err
	}
	refs := map[string]string{}
	for _, l := range strings.Split(out, "\n") {
		sha, ref, ok := strings.Cut(l, " ")
		if ok {
			refs[strings.TrimPrefix(ref, "refs/heads/")] = sha
		}
	}
	return refs, nil
}

// FileAt reads a file's exact bytes at a commit. What a full commit id
// holds never changes, so found files are remembered.
func FileAt(ctx context.Context, dir, sha, path string) (string, bool) {
	if !fullSHA(sha) {
		return fileAt(ctx, dir, sha, path)
	}
	v, err := objCache.remember(&objCache.files, dir+"\x00"+sha+":"+path, func() (string, error) {
		if v, ok := fileAt(ctx, dir, sha, path); ok {
			return v, nil
		}
		return "", errNoFile
	})
	return v, err == nil
}

var errNoFile = errors.New("no such file at the commit")

func fileAt(ctx context.Context, dir, sha, path string) (string, bool) {
	cmd := exec.CommandContext(ctx, "git", "cat-file", "blob", sha+":"+path)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1")
	out, err := cmd.Output()
	if err != nil {
		return "", false
	}
	return string(out), true
}

// IsAncestor reports whether a is an ancestor of (or equal to) b.
func IsAncestor(ctx context.Context, dir, a, b string) (bool, error) {
	_, err := Run(ctx, dir, nil, nil, "merge-base", "--is-ancestor", a, b)
	switch {
	case err == nil:
		return true, nil
	case ExitCode(err) == 1:
		return false, nil
	}
	return false, err
}

// MergeTree tells whether head merges cleanly into base, and the merged
// tree when it does.
func MergeTree(ctx context.Context, dir, base, head string) (tree string, conflict bool, err error) {
	out, err := Run(ctx, dir, nil, nil, "merge-tree", "--write-tree", "--no-messages", base, head)
	switch {
	case err == nil:
		return strings.SplitN(out, "\n", 2)[0], false, nil
	case ExitCode(err) == 1:
		return "", true, nil
	}
	return "", false, err
}

// looseBranch reads a branch ref (refs/heads/…, plainly named) from its
// loose ref file, as git would before looking in packed-refs; false when
// there is no such file or it holds anything but an object id (a symbolic
// ref), so git is asked instead. Git replaces ref files by rename, so a
// read sees the old or the new id, as git rev-parse would.
func looseBranch(dir, ref string) (string, bool) {
	name, ok := strings.CutPrefix(ref, "refs/heads/")
	if !ok || !plainRefName(name) {
		return "", false
	}
	b, err := os.ReadFile(filepath.Join(dir, "refs", "heads", filepath.FromSlash(name)))
	if err != nil {
		return "", false
	}
	sha, ok := strings.CutSuffix(string(b), "\n")
	if !ok || !fullSHA(sha) {
		return "", false
	}
	return sha, true
}

// plainRefName is a branch name of letters, digits, '-', '_', '.' and '/'
// that git check-ref-format accepts; names outside that are left to git.
func plainRefName(name string) bool {
	if name == "" || strings.HasSuffix(name, ".lock") {
		return false
	}
	for _, c := range strings.Split(name, "/") {
		if c == "" || c[0] == '.' || strings.HasSuffix(c, ".") || strings.HasSuffix(c, ".lock") || strings.Contains(c, "..") {
			return false
		}
		for i := 0; i < len(c); i++ {
			if b := c[i]; !(b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9' || b == '-' || b == '_' || b == '.') {
				return false
			}
		}
	}
	return true
}

// fullSHA tells a full object id (SHA-1 or SHA-256, lower-case hex, as the
// emulators hand them out) from anything git would have to resolve.
func fullSHA(s string) bool {
	if len(s) != 40 && len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// objCache remembers positive answers about immutable objects in the
// emulators' bare repositories, keyed by repository dir. Objects are never
// deleted there (no gc, prune or repack runs; pushes skip gc --auto), and
// InitBare forgets a dir in case a repository is created there afresh.
// Failures are never remembered.
var objCache = &objMemo{}

// objMemoMax bounds each map; a full map is emptied rather than grown.
const objMemoMax = 1 << 12

type objMemo struct {
	mu      sync.Mutex
	commits map[string]string               // dir NUL sha -> commit id
	files   map[string]string               // dir NUL sha:path -> content
	outs    map[string]string               // dir NUL args -> RunAt's output
	trees   map[string]map[string]treeEntry // dir NUL commit -> its files (never changed)
}

// getFiles is a copy of the files of commit sha in dir, when known.
func (c *objMemo) getFiles(dir, sha string) (map[string]treeEntry, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	files, ok := c.trees[dir+"\x00"+sha]
	return maps.Clone(files), ok
}

// putFiles remembers the files of commit sha in dir (a copy).
func (c *objMemo) putFiles(dir, sha string, files map[string]treeEntry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.trees == nil || len(c.trees) >= objMemoMax {
		c.trees = map[string]map[string]treeEntry{}
	}
	c.trees[dir+"\x00"+sha] = maps.Clone(files)
}

// remember answers from m when it holds key, else with compute, whose
// answer is kept only when it succeeded.
func (c *objMemo) remember(m *map[string]string, key string, compute func() (string, error)) (string, error) {
	if v, ok := c.get(m, key); ok {
		return v, nil
	}
	v, err := compute()
	if err == nil {
		c.put(m, key, v)
	}
	return v, err
}

func (c *objMemo) get(m *map[string]string, key string) (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := (*m)[key]
	return v, ok
}

func (c *objMemo) put(m *map[string]string, key, v string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if *m == nil || len(*m) >= objMemoMax {
		*m = map[string]string{}
	}
	(*m)[key] = v
}

// forget drops what is remembered about the repository at dir.
func forget(dir string) {
	prefix := dir + "\x00"
	c := objCache
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, m := range []map[string]string{c.commits, c.files, c.outs} {
		for k := range m {
			if strings.HasPrefix(k, prefix) {
				delete(m, k)
			}
		}
	}
	for k := range c.trees {
		if strings.HasPrefix(k, prefix) {
			delete(c.trees, k)
		}
	}
}
