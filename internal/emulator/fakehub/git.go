package fakehub

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/convergeloop/converge/internal/emulator/fakegit"
)

// gitIdentity is set explicitly on every commit the hub writes: machines
// running tests may have no git identity.
var gitIdentity = []string{
	"GIT_AUTHOR_NAME=Octo Author", "GIT_AUTHOR_EMAIL=octo-author@users.noreply.fakehub",
	"GIT_COMMITTER_NAME=fakehub", "GIT_COMMITTER_EMAIL=noreply@fakehub",
}

// The generic git pieces live in fakegit, shared with the GitLab emulator.

func runGit(ctx context.Context, dir string, env []string, stdin []byte, args ...string) (string, error) {
	return fakegit.Run(ctx, dir, env, stdin, args...)
}

func exitCode(err error) int { return fakegit.ExitCode(err) }

// initBare creates a bare repository whose HEAD names branch.
func initBare(ctx context.Context, dir, branch string) error {
	return fakegit.InitBare(ctx, dir, branch)
}

// commitFiles writes files on top of parent (or an empty tree when parent is
// "") into the bare repository and returns the new commit. A file whose
// content is the DeleteFile marker is removed.
func commitFiles(ctx context.Context, dir, parent string, files map[string]string, message string, when time.Time) (string, error) {
	return fakegit.CommitFiles(ctx, dir, parent, files, message, when, gitIdentity)
}

// DeleteFile as a file's content in CreatePR/PushFiles removes the file.
const DeleteFile = fakegit.DeleteFile

func revParse(ctx context.Context, dir, rev string) (string, error) {
	return fakegit.RevParse(ctx, dir, rev)
}

// readRefs maps branch name to sha.
func readRefs(ctx context.Context, dir string) (map[string]string, error) {
	return fakegit.ReadRefs(ctx, dir)
}

// fileAt reads a file's exact bytes at a commit.
func fileAt(ctx context.Context, dir, sha, path string) (string, bool) {
	return fakegit.FileAt(ctx, dir, sha, path)
}

// gitCache memoises answers that depend only on immutable commit ids.
type gitCache struct {
	mu      sync.Mutex
	merge   map[string]mergeInfo
	commits map[string][]commitInfo
	hunks   map[string][]hunk
	changed map[string]int
	diffs   map[string]string
	files   map[string][]prFile // diff.go
	// testMerges: a clean PR's test merge commit (fidelity.go)
	testMerges map[string]string
}

// memo returns m[key], computing and storing it on a miss. Answers depend
// only on immutable commit ids, so a racing duplicate compute is harmless.
func memo[T any](c *gitCache, m *map[string]T, key string, compute func() (T, error)) (T, error) {
	c.mu.Lock()
	v, ok := (*m)[key]
	c.mu.Unlock()
	if ok {
		return v, nil
	}
	v, err := compute()
	if err != nil {
		return v, err
	}
	c.mu.Lock()
	if *m == nil {
		*m = map[string]T{}
	}
	(*m)[key] = v
	c.mu.Unlock()
	return v, nil
}

type mergeInfo struct {
	conflict bool
	behind   bool
	tree     string
}

// mergeState computes conflicts with merge-tree and "behind" with
// merge-base --is-ancestor.
func (h *Hub) mergeState(ctx context.Context, dir, base, head string) (mergeInfo, error) {
	key := dir + "\x00" + base + "\x00" + head
	return memo(&h.git, &h.git.merge, key, func() (mergeInfo, error) {
		var mi mergeInfo
		out, err := runGit(ctx, dir, nil, nil, "merge-tree", "--write-tree", "--no-messages", base, head)
		switch {
		case err == nil:
			mi.tree = strings.SplitN(out, "\n", 2)[0]
		case exitCode(err) == 1:
			mi.conflict = true
		default:
			return mi, err
		}
		_, err = runGit(ctx, dir, nil, nil, "merge-base", "--is-ancestor", base, head)
		switch {
		case err == nil:
		case exitCode(err) == 1:
			mi.behind = true
		default:
			return mi, err
		}
		return mi, nil
	})
}

type commitInfo struct {
	sha       string
	tree      string
	parents   []string
	committed time.Time
	authored  time.Time
	message   string
	// author and committer as git records them
	authorName, authorEmail       string
	committerName, committerEmail string
}

// commitFormat is git log's format for parseCommit: the message last, as
// it may hold anything but NUL.
const commitFormat = "%H%x00%P%x00%cI%x00%aI%x00%an%x00%ae%x00%cn%x00%ce%x00%T%x00%B"

func parseCommit(rec string) (commitInfo, bool) {
	f := strings.SplitN(rec, "\x00", 10)
	if len(f) < 10 {
		return commitInfo{}, false
	}
	ct, _ := time.Parse(time.RFC3339, f[2])
	at, _ := time.Parse(time.RFC3339, f[3])
	return commitInfo{sha: f[0], parents: strings.Fields(f[1]), committed: ct.UTC(), authored: at.UTC(),
		authorName: f[4], authorEmail: f[5], committerName: f[6], committerEmail: f[7], tree: f[8],
		message: strings.TrimRight(f[9], "\n")}, true
}

// prCommits lists base..head oldest first.
func (h *Hub) prCommits(ctx context.Context, dir, base, head string) ([]commitInfo, error) {
	key := dir + "\x00" + base + "\x00" + head
	return memo(&h.git, &h.git.commits, key, func() ([]commitInfo, error) {
		out, err := runGit(ctx, dir, nil, nil, "log", "--reverse", "--format="+commitFormat+"%x1e", base+".."+head)
		if err != nil {
			return nil, err
		}
		var cs []commitInfo
		for _, rec := range strings.Split(out, "\x1e") {
			if ci, ok := parseCommit(strings.TrimLeft(rec, "\n")); ok {
				cs = append(cs, ci)
			}
		}
		return cs, nil
	})
}

// commitOne reads one commit's metadata.
func commitOne(ctx context.Context, dir, sha string) (commitInfo, error) {
	out, err := runGit(ctx, dir, nil, nil, "log", "-1", "--format="+commitFormat, sha)
	if err != nil {
		return commitInfo{}, err
	}
	ci, ok := parseCommit(out)
	if !ok {
		return commitInfo{}, fmt.Errorf("parse commit %s", sha)
	}
	return ci, nil
}

// changedFiles counts files changed between the merge base and head.
func (h *Hub) changedFiles(ctx context.Context, dir, base, head string) int {
	key := dir + "\x00" + base + "\x00" + head
	n, _ := memo(&h.git, &h.git.changed, key, func() (int, error) {
		out, err := runGit(ctx, dir, nil, nil, "diff", "--name-only", base+"..."+head)
		if err != nil {
			return 0, err
		}
		n := 0
		for _, l := range strings.Split(out, "\n") {
			if l != "" {
				n++
			}
		}
		return n, nil
	})
	return n
}

// hunk is one -U0 hunk: old lines [oldStart, oldStart+oldLen) became new
// lines [newStart, newStart+newLen). A zero length means the hunk sits after
// line start.
type hunk struct{ oldStart, oldLen, newStart, newLen int }

// deletedFile marks a path that no longer exists at the new commit.
var deletedFile = []hunk{{oldStart: -1}}

var hunkRE = regexp.MustCompile(`^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@`)

func (h *Hub) diffHunks(ctx context.Context, dir, from, to, path string) ([]hunk, error) {
	key := dir + "\x00" + from + "\x00" + to + "\x00" + path
	return memo(&h.git, &h.git.hunks, key, func() ([]hunk, error) {
		var hs []hunk
		if _, ok := fileAt(ctx, dir, to, path); !ok {
			hs = deletedFile
		} else {
			out, err := runGit(ctx, dir, nil, nil, "diff", "-U0", "--no-color", "--no-ext-diff", from, to, "--", path)
			if err != nil {
				return nil, err
			}
			for _, l := range strings.Split(out, "\n") {
				m := hunkRE.FindStringSubmatch(l)
				if m == nil {
					continue
				}
				atoi := func(s string, def int) int {
					if s == "" {
						return def
					}
					n, _ := strconv.Atoi(s)
					return n
				}
				hs = append(hs, hunk{atoi(m[1], 0), atoi(m[2], 1), atoi(m[3], 0), atoi(m[4], 1)})
			}
		}
		return hs, nil
	})
}

// commentHunk is GitHub's diff_hunk for a comment on line of path: the
// header of the hunk of the PR's diff at commit (base...commit, three
// lines of context, as the pull request page shows it) that holds the
// line on side (RIGHT: the new file, the default; LEFT: the old one),
// then that hunk's lines from its start up to and including the line, no
// newline after the last.
//
// GitHub refuses a comment on a line outside the diff; the emulator takes
// one, and serves it a hunk widened until the line is in it (the whole
// file as context when the PR does not change the file).
func (h *Hub) commentHunk(ctx context.Context, dir, base, commit, path, side string, line int) (string, error) {
	left := strings.EqualFold(side, "LEFT")
	for _, unified := range []string{"-U3", "-U" + strconv.Itoa(math.MaxInt32)} {
		key := strings.Join([]string{dir, base, commit, path, unified}, "\x00")
		out, err := memo(&h.git, &h.git.diffs, key, func() (string, error) {
			return runGit(ctx, dir, nil, nil, "diff", "--no-color", "--no-ext-diff", unified, base+"..."+commit, "--", path)
		})
		if err != nil {
			return "", err
		}
		if h, ok := hunkUpTo(out, left, line); ok {
			return h, nil
		}
	}
	sha := commit
	if left {
		sha = base
	}
	content, _ := fileAt(ctx, dir, sha, path)
	lines := strings.Split(strings.TrimSuffix(content, "\n"), "\n")
	if line < 1 || line > len(lines) {
		return "", fmt.Errorf("line %d of %s could not be resolved", line, path)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "@@ -1,%d +1,%d @@", len(lines), len(lines))
	for _, l := range lines[:line] {
		b.WriteString("\n " + l)
	}
	return b.String(), nil
}

// hunkUpTo cuts, from the output of git diff on one file, the hunk holding
// line of the old (left) or new file, up to and including that line.
func hunkUpTo(diff string, left bool, line int) (string, bool) {
	var cur []string
	oldN, newN := 0, 0
	for _, l := range strings.Split(diff, "\n") {
		if m := hunkRE.FindStringSubmatch(l); m != nil {
			cur = []string{l}
			oldN, _ = strconv.Atoi(m[1])
			newN, _ = strconv.Atoi(m[3])
			continue
		}
		if cur == nil {
			continue // the file's header lines
		}
		cur = append(cur, l)
		onOld, onNew := true, true
		switch {
		case strings.HasPrefix(l, "+"):
			onOld = false
		case strings.HasPrefix(l, "-"):
			onNew = false
		case strings.HasPrefix(l, `\`):
			onOld, onNew = false, false // "\ No newline at end of file"
		}
		if left && onOld && oldN == line || !left && onNew && newN == line {
			return strings.Join(cur, "\n"), true
		}
		if onOld {
			oldN++
		}
		if onNew {
			newN++
		}
	}
	return "", false
}

// mapRange maps lines [start, end] of the old file through hunks; ok is
// false when any of those lines changed (the thread is outdated).
func mapRange(hs []hunk, start, end int) (newStart, newEnd int, ok bool) {
	if len(hs) == 1 && hs[0].oldStart == -1 {
		return 0, 0, false
	}
	shift := 0
	for _, x := range hs {
		if x.oldLen == 0 {
			// Pure insertion after line oldStart.
			switch {
			case x.oldStart < start:
				shift += x.newLen
			case x.oldStart < end:
				return 0, 0, false
			}
			continue
		}
		last := x.oldStart + x.oldLen - 1
		switch {
		case last < start:
			shift += x.newLen - x.oldLen
		case x.oldStart > end:
		default:
			return 0, 0, false
		}
	}
	return start + shift, end + shift, true
}

// serveGit hands smart-HTTP to git (fakegit.ServeHTTP) after checking the token;
// pushes need write access and re-read the refs afterwards.
func (h *Hub) serveGit(w http.ResponseWriter, r *http.Request) {
	u := h.authenticate(r)
	h.mu.Lock()
	h.countLocked("git", u)
	h.mu.Unlock()
	p := r.URL.Path
	i := strings.Index(p, ".git")
	parts := strings.Split(strings.Trim(p[:i], "/"), "/")
	if len(parts) != 2 {
		writeJSON(w, http.StatusNotFound, notFoundBody())
		return
	}
	owner, name := parts[0], parts[1]
	h.mu.Lock()
	rp := h.repoLocked(owner, name)
	h.mu.Unlock()
	if rp == nil {
		http.Error(w, "Repository not found.", http.StatusNotFound)
		return
	}
	if u == nil {
		w.Header().Set("WWW-Authenticate", `Basic realm="fakehub"`)
		http.Error(w, "Authentication required", http.StatusUnauthorized)
		return
	}
	push := strings.HasSuffix(p, "/git-receive-pack") || r.URL.Query().Get("service") == "git-receive-pack"
	if push && r.Method == http.MethodPost {
		h.wlog.add(u, "git", "push "+p)
	}
	if push && !u.canWrite() {
		http.Error(w, fmt.Sprintf("Permission to %s/%s.git denied to %s.", owner, name, u.restLogin), http.StatusForbidden)
		return
	}
	fakegit.ServeHTTP(w, r, filepath.Join(h.opts.StateDir, "repos"), u.restLogin)
	if push && r.Method == http.MethodPost {
		h.afterPush(owner, name, u)
	}
}

// afterPush re-reads refs and moves PR heads (and bases) accordingly.
func (h *Hub) afterPush(owner, name string, by *user) {
	ctx := h.Context()
	h.mu.Lock()
	rp := h.repoLocked(owner, name)
	h.mu.Unlock()
	if rp == nil {
		return
	}
	refs, err := readRefs(ctx, rp.dir)
	if err != nil {
		h.log.Error("fakehub read refs", "repo", rp.fullName(), "err", err)
		return
	}
	h.refsChanged(ctx, rp, refs, by)
}

// refsChanged updates every open PR from the branch tips and starts CI on
// moved heads.
func (h *Hub) refsChanged(ctx context.Context, rp *repo, refs map[string]string, by *user) {
	type moved struct {
		p     *pr
		old   string
		force bool
	}
	var ms []moved
	h.pushHooks(rp, refs, by)
	if h.refsMoved(rp, refs) {
		h.pushed(ctx, rp)
	}
	h.mu.Lock()
	prs := append([]*pr(nil), rp.prs...)
	h.mu.Unlock()
	for _, p := range prs {
		h.mu.Lock()
		open := p.state == "OPEN"
		head, base, oldHead := p.headRef, p.baseRef, p.headSHA
		h.mu.Unlock()
		if !open {
			continue
		}
		newHead, newBase := refs[head], refs[base]
		if newHead == "" && h.headDeleted(ctx, rp, p, by) {
			continue
		}
		force := false
		if newHead != "" && newHead != oldHead {
			if _, err := runGit(ctx, rp.dir, nil, nil, "merge-base", "--is-ancestor", oldHead, newHead); err != nil {
				force = true
			}
		}
		h.mu.Lock()
		if (newBase != "" && newBase != p.baseSHA) || (newHead != "" && newHead != p.headSHA) {
			h.mergeChangedLocked(p)
		}
		if newBase != "" {
			p.baseSHA = newBase
		}
		if newHead != "" && newHead != p.headSHA {
			ms = append(ms, moved{p: p, old: p.headSHA, force: force})
			p.headSHA = newHead
			p.heads = append(p.heads, newHead)
			p.updatedAt = h.now()
			if force {
				h.addEventLocked(p, &issueEvent{event: "head_ref_force_pushed", actor: by, commitID: newHead, before: oldHead})
			}
			h.publishLocked(Event{Kind: "push", Owner: rp.owner, Repo: rp.name, Number: p.number, SHA: newHead, Actor: by.restLogin})
		}
		h.mu.Unlock()
	}
	for _, m := range ms {
		h.startCI(rp, m.p)
	}
	if len(ms) == 0 {
		h.mu.Lock()
		h.publishLocked(Event{Kind: "push", Owner: rp.owner, Repo: rp.name, Actor: by.restLogin})
		h.mu.Unlock()
	}
}
