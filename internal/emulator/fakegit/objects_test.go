package fakegit

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// commitFilesWithGit is what CommitFiles did before it wrote objects
// itself, one git per step: the oracle its commits must equal.
func commitFilesWithGit(ctx context.Context, dir, parent string, files map[string]string, message string, when time.Time, identity []string) (string, error) {
	idxPath := filepath.Join(filepath.Dir(dir), fmt.Sprintf("index-%d", time.Now().UnixNano()))
	defer os.Remove(idxPath)
	env := []string{"GIT_INDEX_FILE=" + idxPath}
	if parent != "" {
		if _, err := Run(ctx, dir, env, nil, "read-tree", parent); err != nil {
			return "", err
		}
	}
	var info strings.Builder
	for path, content := range files {
		if content == DeleteFile {
			fmt.Fprintf(&info, "0 %s\t%s\n", strings.Repeat("0", 40), path)
			continue
		}
		sha, err := Run(ctx, dir, nil, []byte(content), "hash-object", "-w", "--stdin")
		if err != nil {
			return "", err
		}
		fmt.Fprintf(&info, "100644 %s\t%s\n", sha, path)
	}
	if info.Len() > 0 {
		if _, err := Run(ctx, dir, env, []byte(info.String()), "update-index", "--add", "--index-info"); err != nil {
			return "", err
		}
	}
	tree, err := Run(ctx, dir, env, nil, "write-tree")
	if err != nil {
		return "", err
	}
	args := []string{"commit-tree", tree, "-m", message}
	if parent != "" {
		args = append(args, "-p", parent)
	}
	date := when.Format(time.RFC3339)
	cenv := append([]string{"GIT_AUTHOR_DATE=" + date, "GIT_COMMITTER_DATE=" + date}, identity...)
	return Run(ctx, dir, cenv, nil, args...)
}

// CommitFiles writes the very commit git's own plumbing writes for the
// same files, message, date and identity (same id, so the emulators'
// histories are what they were), on top of a parent git wrote with an
// executable, a symlink and a submodule in it, and its objects pass
// git fsck --strict.
func TestCommitFilesWritesWhatGitWrites(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	ours, theirs := filepath.Join(root, "ours.git"), filepath.Join(root, "theirs.git")
	utc := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	india := time.Date(2026, 1, 2, 3, 4, 5, 0, time.FixedZone("IST", 5*3600+1800))
	west := time.Date(2026, 7, 2, 3, 4, 5, 0, time.FixedZone("PDT", -7*3600))

	// A parent only git could write: modes CommitFiles never writes.
	var parent string
	for _, dir := range []string{ours, theirs} {
		if err := InitBare(ctx, dir, "main"); err != nil {
			t.Fatal(err)
		}
		blob, err := Run(ctx, dir, nil, []byte("#!/bin/sh\n"), "hash-object", "-w", "--stdin")
		if err != nil {
			t.Fatal(err)
		}
		link, err := Run(ctx, dir, nil, []byte("run.sh"), "hash-object", "-w", "--stdin")
		if err != nil {
			t.Fatal(err)
		}
		idx := []string{"GIT_INDEX_FILE=" + filepath.Join(root, "idx-"+filepath.Base(dir))}
		info := fmt.Sprintf("100755 %s\trun.sh\n120000 %s\tlink\n160000 %s\tvendor/sub\n", blob, link, strings.Repeat("ab", 20))
		if _, err := Run(ctx, dir, idx, []byte(info), "update-index", "--add", "--index-info"); err != nil {
			t.Fatal(err)
		}
		tree, err := Run(ctx, dir, idx, nil, "write-tree")
		if err != nil {
			t.Fatal(err)
		}
		env := append([]string{"GIT_AUTHOR_DATE=" + utc.Format(time.RFC3339), "GIT_COMMITTER_DATE=" + utc.Format(time.RFC3339)}, testIdentity...)
		sha, err := Run(ctx, dir, env, nil, "commit-tree", tree, "-m", "git's own")
		if err != nil {
			t.Fatal(err)
		}
		if parent != "" && sha != parent {
			t.Fatalf("the two parents differ: %s %s", parent, sha)
		}
		parent = sha
		if _, err := Run(ctx, dir, nil, nil, "update-ref", "refs/heads/main", sha); err != nil {
			t.Fatal(err)
		}
	}

	type step struct {
		parent  string // "" root, "prev" the last step's commit, else a rev
		files   map[string]string
		message string
		when    time.Time
	}
	steps := []step{
		{"", map[string]string{"a.txt": "one\n"}, "root", utc},
		{"prev", map[string]string{"b/c.txt": "c\n", "b-c.txt": "dash\n", "b.txt": "dot\n", "b/d/e.txt": "deep\n", "b0": "zero\n", "é.txt": "accent\n", "with space.txt": "", "bin": "\x00\x01\xff"}, "nested\n\nwith a body", india},
		{"prev", map[string]string{"a.txt": DeleteFile, "b/d/e.txt": DeleteFile, "b/c.txt": "changed\n"}, "deletes\n", west},
		{parent, map[string]string{"run.sh": "#!/bin/sh\necho changed\n", "vendor/new.txt": "beside a submodule\n", "link": DeleteFile}, "on git's parent", utc},
		{"refs/heads/main", map[string]string{"run.sh": DeleteFile, "vendor/sub": DeleteFile, "link": DeleteFile}, "", utc},
		{parent[:12], map[string]string{"z/y/x.txt": "by a short id\n"}, "short", utc},
	}
	prev := ""
	for i, s := range steps {
		p := s.parent
		if p == "prev" {
			p = prev
		}
		want, err := commitFilesWithGit(ctx, theirs, p, s.files, s.message, s.when, testIdentity)
		if err != nil {
			t.Fatalf("step %d with git: %v", i, err)
		}
		got, err := CommitFiles(ctx, ours, p, s.files, s.message, s.when, testIdentity)
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		if got != want {
			a, _ := Run(ctx, theirs, nil, nil, "cat-file", "-p", want)
			b, _ := Run(ctx, ours, nil, nil, "cat-file", "-p", got)
			ta, _ := Run(ctx, theirs, nil, nil, "ls-tree", "-r", "-t", want)
			tb, _ := Run(ctx, ours, nil, nil, "ls-tree", "-r", "-t", got)
			t.Fatalf("step %d: commit %s, git writes %s\ngit's:\n%s\n%s\nours:\n%s\n%s", i, got, want, a, ta, b, tb)
		}
		prev = got
	}
	if out, err := Run(ctx, ours, nil, nil, "fsck", "--strict", "--no-dangling"); err != nil {
		t.Fatalf("fsck: %v\n%s", err, out)
	}
}

// What git would refuse, CommitFiles refuses: paths a tree cannot hold,
// a file where a directory is, and an identity git would have to trim.
func TestCommitFilesRefusesWhatGitRefuses(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "r.git")
	if err := InitBare(ctx, dir, "main"); err != nil {
		t.Fatal(err)
	}
	when := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	base, err := CommitFiles(ctx, dir, "", map[string]string{"a": "file\n"}, "base", when, testIdentity)
	if err != nil {
		t.Fatal(err)
	}
	for _, files := range []map[string]string{
		{"../x": "up"}, {"/abs": "abs"}, {"a//b": "empty"}, {".git/config": "git"}, {"d/.GIT/x": "git"}, {"d/./x": "dot"}, {"x/": "slash"},
		{"a/b": "under a file"},
		{"d": "file", "d/e": "and directory"},
	} {
		if sha, err := CommitFiles(ctx, dir, base, files, "bad", when, testIdentity); err == nil {
			t.Errorf("CommitFiles(%q) = %s, want an error", files, sha)
		}
	}
	for _, key := range []string{"GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL"} {
		t.Setenv(key, "")
	}
	for _, id := range [][]string{
		testIdentity[1:],
		{"GIT_AUTHOR_NAME=<T>", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=T", "GIT_COMMITTER_EMAIL=t@example.com"},
		{"GIT_AUTHOR_NAME=T ", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=T", "GIT_COMMITTER_EMAIL=t@example.com"},
		{"GIT_AUTHOR_NAME=T", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=T", "GIT_COMMITTER_EMAIL=t@ex\nample.com"},
	} {
		if sha, err := CommitFiles(ctx, dir, base, map[string]string{"b": "b\n"}, "id", when, id); err == nil {
			t.Errorf("CommitFiles with identity %q = %s, want an error", id, sha)
		}
	}
	if sha, err := CommitFiles(ctx, dir, strings.Repeat("0", 40), map[string]string{"b": "b\n"}, "no parent", when, testIdentity); err == nil {
		t.Errorf("CommitFiles on a missing parent = %s, want an error", sha)
	}
	tree, err := Run(ctx, dir, nil, nil, "rev-parse", base+"^{tree}")
	if err != nil {
		t.Fatal(err)
	}
	if sha, err := CommitFiles(ctx, dir, tree, map[string]string{"b": "b\n"}, "tree parent", when, testIdentity); err == nil {
		t.Errorf("CommitFiles on a tree as parent = %s, want an error", sha)
	}
}
