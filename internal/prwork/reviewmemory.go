package prwork

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/convergeloop/converge/internal/prloop"
)

// CopilotInstructionsFile is where Copilot reads a repository's
// instructions; the settled section is synced into it (review_memory).
const CopilotInstructionsFile = ".github/copilot-instructions.md"

var _ prloop.MemoryWorkspace = (*GitWorkspace)(nil)

// SetReviewMemory is what the next Fix's commit writes into the settled
// section of the review instructions; nil writes nothing.
func (w *GitWorkspace) SetReviewMemory(m *prloop.ReviewMemory) { w.memory = m }

// writeReviewMemory writes the settled section (prloop.MemorySection) into
// the review instructions and, the same section, into Copilot's
// instructions, in the worktree about to be committed; only when the
// round's fix changed something there, so the section never makes a
// commit of its own. It returns the paths it changed. Failing to write is
// logged, never fatal: the fix stands without it.
func (w *GitWorkspace) writeReviewMemory(ctx context.Context) []string {
	m := w.memory
	w.memory = nil
	if m == nil {
		return nil
	}
	st, err := w.worktree.Run(ctx, "status", "--porcelain", "--untracked-files=all")
	if err != nil {
		w.logf("review memory: not written: %v", err)
		return nil
	}
	if strings.TrimSpace(st) == "" {
		return nil
	}
	review := w.instructionsPath()
	cur, _, err := w.readInWorktree(review)
	if err != nil {
		w.logf("review memory: not written: %v", err)
		return nil
	}
	section := prloop.MemorySection(cur, *m)
	var changed []string
	for _, p := range []string{review, CopilotInstructionsFile} {
		if slices.Contains(changed, p) {
			continue
		}
		ok, err := w.putSection(p, section)
		if err != nil {
			w.logf("review memory: %s not written: %v", p, err)
			continue
		}
		if ok {
			changed = append(changed, p)
		}
	}
	return changed
}

// instructionsPath is the review instructions' path in the repository,
// as the local review and the classifier's judge read it.
func (w *GitWorkspace) instructionsPath() string {
	if w.Reviewer != nil && w.Reviewer.InstructionsPath != "" {
		return w.Reviewer.InstructionsPath
	}
	return ReviewInstructionsFile
}

// putSection puts section into the worktree's file p, reporting whether
// the file changed.
func (w *GitWorkspace) putSection(p, section string) (bool, error) {
	old, existed, err := w.readInWorktree(p)
	if err != nil {
		return false, err
	}
	next := prloop.PutMemorySection(old, section)
	if next == old {
		return false, nil
	}
	abs := filepath.Join(w.worktree.Dir, filepath.FromSlash(p))
	if next == "" && existed {
		return true, os.Remove(abs)
	}
	if err := os.MkdirAll(filepath.Dir(abs), 0o755); err != nil {
		return false, err
	}
	return true, os.WriteFile(abs, []byte(next), 0o644)
}

// readInWorktree reads the worktree's file p; a missing file is "". A
// path through a symbolic link is refused: the branch decides where a
// link points, and converge writes only inside the repository.
func (w *GitWorkspace) readInWorktree(p string) (string, bool, error) {
	if p == "" || filepath.IsAbs(p) || strings.Contains("/"+filepath.ToSlash(p)+"/", "/../") {
		return "", false, errors.New("not a path inside the repository: " + p)
	}
	cur := w.worktree.Dir
	for _, part := range strings.Split(filepath.ToSlash(p), "/") {
		cur = filepath.Join(cur, part)
		fi, err := os.Lstat(cur)
		if errors.Is(err, fs.ErrNotExist) {
			return "", false, nil
		}
		if err != nil {
			return "", false, err
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			return "", false, errors.New(p + " is, or is under, a symbolic link")
		}
	}
	b, err := os.ReadFile(filepath.Join(w.worktree.Dir, filepath.FromSlash(p)))
	if err != nil {
		return "", false, err
	}
	return string(b), true, nil
}

// memoryLines is what the section changed in commit sha: not the loop's
// work on the PR, so not counted toward its diff growth (PR-T6).
func (w *GitWorkspace) memoryLines(ctx context.Context, sha string, paths []string) int {
	if len(paths) == 0 {
		return 0
	}
	out, err := w.worktree.Run(ctx, append([]string{"diff", "--numstat", "--no-renames", "--no-color", "--no-ext-diff", sha + "~1", sha, "--"}, paths...)...)
	if err != nil {
		return 0
	}
	n := 0
	for _, l := range strings.Split(out, "\n") {
		f := strings.SplitN(l, "\t", 3)
		if len(f) < 3 {
			continue
		}
		a, errA := strconv.Atoi(f[0])
		d, errD := strconv.Atoi(f[1])
		if errA == nil && errD == nil {
			n += a + d
		}
	}
	return n
}

// withoutPaths drops the hunks of paths: the section's own lines are no
// fix a later round can undo (PR-S8) or cause findings on.
func withoutPaths(hs []prloop.Hunk, paths []string) []prloop.Hunk {
	if len(paths) == 0 {
		return hs
	}
	return slices.DeleteFunc(hs, func(h prloop.Hunk) bool { return slices.Contains(paths, h.Path) })
}
