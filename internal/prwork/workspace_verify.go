package prwork

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/convergeloop/converge/internal/agent"
	"github.com/convergeloop/converge/internal/forge"
	"github.com/convergeloop/converge/internal/prloop"
	"github.com/convergeloop/converge/internal/repo"
	"github.com/convergeloop/converge/internal/text"
	"github.com/convergeloop/converge/internal/verify"
)

// Verified work (PR-V1, PR-V2, PR-V3): nothing a fixer says is taken on
// its word. Its git history is discarded and only its tree counts; the
// round's change must keep the tests and the pull request's own work and
// add no unexplained file; and each finding counts as addressed only when
// the change touches its lines (and, where configured, the verifier judge
// agrees). What fails is re-dispatched once with the reason, then handed
// off quoting it.

// verifyState is what the verification of the Fix under way keeps.
type verifyState struct {
	mu sync.Mutex
	// rejected: why a finding's earlier fix was rejected, for its
	// re-dispatch (agent.Task.Rejected).
	rejected map[string]string
	// proven: what was proven of each finding found addressed, for its
	// reply (FixResult.Proven).
	proven map[string]string
	// notes are what the fixers did to git that converge undid (PR-V2)
	// and the changes it undid (PR-V3), for the round's record.
	notes []string
	// tree is the tree object the last apply verified.
	tree string
	// red is the feedback of a red build the fixers get with their next
	// dispatch (PR-S10; redfeedback.go).
	red string
}

func (v *verifyState) note(s string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if !slices.Contains(v.notes, s) {
		v.notes = append(v.notes, s)
	}
}

// rejectedFor is why converge rejected the earlier fix of fs, "" on a
// first dispatch.
func (w *GitWorkspace) rejectedFor(fs []prloop.Finding) string {
	w.vs.mu.Lock()
	defer w.vs.mu.Unlock()
	var out []string
	for _, f := range fs {
		if why := w.vs.rejected[f.ID]; why != "" {
			out = append(out, fmt.Sprintf("%s: %s", findingWhere(f), why))
		}
	}
	if w.vs.red != "" {
		out = append(out, w.vs.red)
	}
	return strings.Join(out, "\n")
}

// provenFor is what was proven of each of ids, for the replies.
func (w *GitWorkspace) provenFor(ids []string) map[string]string {
	w.vs.mu.Lock()
	defer w.vs.mu.Unlock()
	var out map[string]string
	for _, id := range ids {
		if p := w.vs.proven[id]; p != "" {
			if out == nil {
				out = map[string]string{}
			}
			out[id] = p
		}
	}
	return out
}

func findingWhere(f prloop.Finding) string {
	switch {
	case f.Path == "":
		return "the finding about the pull request"
	case f.EndLine <= 0:
		return "the finding on " + f.Path
	case f.StartLine > 0 && f.StartLine != f.EndLine:
		return fmt.Sprintf("the finding on %s:%d-%d", f.Path, f.StartLine, f.EndLine)
	}
	return fmt.Sprintf("the finding on %s:%d", f.Path, f.EndLine)
}

// apply runs the round's fixers on fs (applyFixers) and verifies their
// combined change before anything is tested or committed: a change that
// breaks PR-V3 is undone, a finding whose fix is not proven (PR-V1) is
// re-dispatched once with the reason, and what still fails is blocked
// with a reason that quotes it. The verified change is left staged on
// the head, as applyFixers leaves its own.
func (w *GitWorkspace) apply(ctx context.Context, pr *forge.PullRequest, round int, fs []prloop.Finding) (map[string]agent.FindingOutcome, error) {
	outcomes, err := w.applyVerified(ctx, pr, round, fs)
	if err != nil {
		return nil, err
	}
	// What was verified is what gets committed, whatever the tests
	// that run next write into the tree (restoreVerified).
	if _, err := w.worktree.Run(ctx, "add", "-A", "--", "."); err != nil {
		return nil, fmt.Errorf("verify: %w", err)
	}
	tree, err := w.worktree.Run(ctx, "write-tree")
	if err != nil {
		return nil, fmt.Errorf("verify: %w", err)
	}
	w.vs.mu.Lock()
	w.vs.tree = strings.TrimSpace(tree)
	w.vs.mu.Unlock()
	return outcomes, nil
}

// restoreVerified puts the worktree back on the tree the last apply
// verified: the build and tests run in between run code of the change,
// which may write files, and only what was verified is committed.
func (w *GitWorkspace) restoreVerified(ctx context.Context) error {
	w.vs.mu.Lock()
	tree := w.vs.tree
	w.vs.mu.Unlock()
	if tree == "" {
		return nil
	}
	for _, args := range [][]string{{"read-tree", "--reset", "-u", tree}, {"clean", "-fdq"}} {
		if _, err := w.worktree.Run(ctx, args...); err != nil {
			return fmt.Errorf("restore the verified tree: %w", err)
		}
	}
	return nil
}

// applyVerified is apply without recording the tree.
func (w *GitWorkspace) applyVerified(ctx context.Context, pr *forge.PullRequest, round int, fs []prloop.Finding) (map[string]agent.FindingOutcome, error) {
	w.vs.mu.Lock()
	if w.vs.proven == nil {
		w.vs.proven = map[string]string{}
	}
	if w.vs.rejected == nil {
		w.vs.rejected = map[string]string{}
	}
	for _, f := range fs {
		delete(w.vs.proven, f.ID)
		delete(w.vs.rejected, f.ID)
	}
	w.vs.mu.Unlock()
	defer w.flushNotes()

	outcomes, runs, err := w.applyFixers(ctx, pr, round, fs)
	if err != nil {
		return nil, err
	}
	prDiff, err := w.diffOf(ctx, "origin/"+pr.BaseRef+"..."+pr.HeadSHA)
	if err != nil {
		return nil, fmt.Errorf("read the pull request's own change: %w", err)
	}
	failed, handOff, err := w.verifyChange(ctx, pr, pr.HeadSHA, nil, fs, outcomes, runs, prDiff)
	if err != nil {
		return nil, err
	}
	// Re-dispatch once, on the verified part of the round, with the
	// reason; a change over a bound is handed off at once (PR-V3).
	var again []prloop.Finding
	w.vs.mu.Lock()
	for _, f := range fs {
		if why, ok := failed[f.ID]; ok && !handOff[f.ID] {
			again = append(again, f)
			w.vs.rejected[f.ID] = why
		}
	}
	w.vs.mu.Unlock()
	if len(again) == 0 {
		return outcomes, nil
	}
	w.logf("converge could not verify the fix of %d finding(s); dispatching them once more with the reason: %s",
		len(again), text.Clip(joinReasons(failed, handOff), 400))
	kept, err := w.checkpoint(ctx)
	if err != nil {
		return nil, err
	}
	keptDiff, err := w.diffOf(ctx, pr.HeadSHA, kept)
	if err != nil {
		return nil, err
	}
	outs2, runs2, err := w.applyFixers(ctx, pr, round, again)
	if err != nil {
		return nil, err
	}
	failed2, _, err := w.verifyChange(ctx, pr, kept, [][]verify.FileDiff{keptDiff}, fs, outs2, runs2, prDiff)
	if err != nil {
		return nil, err
	}
	// HEAD back on the head, the whole verified change staged on it.
	if _, err := w.worktree.Run(ctx, "reset", "--quiet", "--soft", pr.HeadSHA); err != nil {
		return nil, fmt.Errorf("verify: %w", err)
	}
	for _, f := range again {
		o := outs2[f.ID]
		why1 := failed[f.ID]
		switch {
		case failed2[f.ID] == "" && o.Status == agent.StatusComplete:
			outcomes[f.ID] = o
		case failed2[f.ID] != "":
			outcomes[f.ID] = agent.FindingOutcome{FindingID: f.ID, Status: agent.StatusBlocked,
				Reason: fmt.Sprintf("converge could not verify the fix: %s; dispatched again with that reason, the new fix failed too: %s", why1, failed2[f.ID])}
		default:
			outcomes[f.ID] = agent.FindingOutcome{FindingID: f.ID, Status: agent.StatusBlocked,
				Reason: fmt.Sprintf("converge could not verify the fix: %s; dispatched again with that reason, the fixer answered: %s",
					why1, strings.TrimSpace(cmpOr(o.Reason, string(o.Status), "no answer")))}
		}
	}
	return outcomes, nil
}

func cmpOr(ss ...string) string {
	for _, s := range ss {
		if strings.TrimSpace(s) != "" {
			return s
		}
	}
	return ""
}

// joinReasons are the reasons of m but those of skip's findings, each
// once.
func joinReasons(m map[string]string, skip map[string]bool) string {
	ids := make([]string, 0, len(m))
	for id := range m {
		if !skip[id] {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	parts := make([]string, 0, len(ids))
	for _, id := range ids {
		if !slices.Contains(parts, m[id]) {
			parts = append(parts, m[id])
		}
	}
	return strings.Join(parts, "; ")
}

// flushNotes moves the verification's notes into the Fix's.
func (w *GitWorkspace) flushNotes() {
	w.vs.mu.Lock()
	notes := w.vs.notes
	w.vs.notes = nil
	w.vs.mu.Unlock()
	for _, n := range notes {
		if !slices.Contains(w.notes, n) {
			w.notes = append(w.notes, n)
		}
	}
}

// verifyChange checks the change staged in the run's worktree against
// from (the head, or the checkpoint of a re-dispatch; mapped maps a
// finding's lines from the head to from): PR-V3 on the whole change
// since the head, with every finding of the round (fs) as what may ask
// for a protected change, undoing the change of every fixer that broke it, then
// PR-V1 on each finding a fixer reported complete. The change of a
// fixer that takes the round over one of its bounds (Bounds) is undone
// too, and its findings are handed off, never re-dispatched (handOff).
// It returns the findings that failed, with why; their outcomes are
// blocked, and the change of a fixer none of whose findings passed is
// undone too.
func (w *GitWorkspace) verifyChange(ctx context.Context, pr *forge.PullRequest, from string, mapped [][]verify.FileDiff,
	fs []prloop.Finding, outcomes map[string]agent.FindingOutcome, runs []fixerRun, prDiff []verify.FileDiff) (failed map[string]string, handOff map[string]bool, err error) {
	failed, handOff = map[string]string{}, map[string]bool{}
	explained := map[string]string{}
	for _, r := range runs {
		for p, why := range r.explained {
			if strings.TrimSpace(why) != "" {
				explained[p] = why
			}
		}
	}
	violated := map[string]bool{}
	// overrule undoes (with undo) the change of each fixer of over, and
	// hands its findings off with why (PR-V3's bounds).
	overrule := func(over map[int]verify.Violation, undo map[string]bool) {
		for _, i := range slices.Sorted(maps.Keys(over)) {
			r := runs[i]
			violated[r.id] = true
			why := "the change was undone: " + over[i].Why
			w.logf("fixer of %s: %s (PR-V3)", r.id, why)
			w.vs.note(fmt.Sprintf("fixer of %s: %s", r.id, why))
			for _, p := range r.files {
				undo[p] = true
			}
			for _, f := range r.findings {
				if outcomes[f.ID].Status == agent.StatusComplete {
					failed[f.ID] = why
					handOff[f.ID] = true
				}
			}
		}
	}
	whole, err := w.stagedDiff(ctx, pr.HeadSHA)
	if errors.Is(err, verify.ErrTooLarge) {
		// Too large to read line by line: the fixers over a bound by
		// their files' growth alone are undone first; the rest is read
		// as ever (and still too large, an error: no proof on half a
		// diff).
		over, berr := w.overBoundsBySize(ctx, pr.HeadSHA, runs, violated)
		if berr != nil {
			return nil, nil, berr
		}
		gone := map[string]bool{}
		overrule(over, gone)
		if err := w.restorePaths(ctx, from, gone); err != nil {
			return nil, nil, err
		}
		whole, err = w.stagedDiff(ctx, pr.HeadSHA)
	}
	if err != nil {
		return nil, nil, err
	}
	var vfs []verify.Finding
	for _, f := range fs {
		vfs = append(vfs, verify.Finding{ID: f.ID, Path: f.Path, Start: f.StartLine, End: f.EndLine, Body: f.Summary})
	}
	violations := verify.Preserve(verify.Round{Change: whole, PR: prDiff, Findings: vfs, Explained: explained, Infra: w.infra})
	undo := map[string]bool{}
	for _, r := range runs {
		if !r.applied {
			continue
		}
		var whys []string
		for _, v := range violations {
			if slices.Contains(r.files, v.Path) {
				whys = append(whys, v.Why)
			}
		}
		if len(whys) == 0 {
			continue
		}
		violated[r.id] = true
		why := "the change was undone: " + strings.Join(whys, "; ")
		w.logf("fixer of %s: %s (PR-V3)", r.id, why)
		w.vs.note(fmt.Sprintf("fixer of %s: %s", r.id, why))
		for _, p := range r.files {
			undo[p] = true
		}
		for _, f := range r.findings {
			if outcomes[f.ID].Status == agent.StatusComplete {
				failed[f.ID] = why
			}
		}
	}
	// Nothing has written to the worktree since whole was read: against
	// the head, ours is whole.
	ours := whole
	if from != pr.HeadSHA {
		if ours, err = w.stagedDiff(ctx, from); err != nil {
			return nil, nil, err
		}
	}
	// The bounds of what a round may push (PR-V3), on the whole change
	// since the head: the fixers over them are undone and handed off.
	over, err := w.overBounds(ctx, whole, ours, runs, violated)
	if err != nil {
		return nil, nil, err
	}
	overrule(over, undo)
	for _, v := range violations {
		// A change no fixer's files account for is not kept either; one
		// from before from (an earlier pass of the round) is not this
		// pass's to undo.
		if !undo[v.Path] && verify.File(ours, v.Path) != nil {
			undo[v.Path] = true
			w.vs.note("undone: " + v.Why)
		}
	}
	// A change in no fixer's files was made outside the fixers' own
	// worktrees (into the run's, say): nothing vouches for it.
	for _, d := range ours {
		if p := d.Path(); !undo[p] && !changedByRun(runs, d) {
			undo[p] = true
			w.logf("%s changed outside every fixer's worktree; undone", p)
			w.vs.note(p + " was changed outside every fixer's worktree; undone")
		}
	}
	// What is left once undone is the change to prove; when nothing was
	// undone, it is ours as read.
	change := ours
	if len(undo) > 0 {
		if err := w.restorePaths(ctx, from, undo); err != nil {
			return nil, nil, err
		}
		if change, err = w.stagedDiff(ctx, from); err != nil {
			return nil, nil, err
		}
	}
	undo = map[string]bool{}
	for _, r := range runs {
		if !r.applied || violated[r.id] {
			continue
		}
		proved, claimed := 0, 0
		for _, f := range r.findings {
			if outcomes[f.ID].Status != agent.StatusComplete {
				continue
			}
			claimed++
			p, vf := w.prove(ctx, pr, f, change, mapped, r.explained)
			if !p.Touched {
				failed[f.ID] = p.Why
				continue
			}
			agreed := ""
			if w.Verifier != nil {
				v := w.askVerifier(ctx, f, vf, from, change)
				if err := ctx.Err(); err != nil {
					return nil, nil, err
				}
				if !v.Addressed {
					why := "the verifier judge did not confirm the fix: " + v.Why
					if v.Valid {
						why = "the verifier judge found the fix does not address it: " + v.Why
					}
					failed[f.ID] = why
					continue
				}
				agreed = v.Why
				p.Evidence += "; the verifier judge agreed: " + v.Why
			}
			if f.Verdict == prloop.VerdictStructural {
				// PR-V7: touched lines are not a fix; a structural
				// finding is proven or handed off.
				proof, ok, err := w.proveStructural(ctx, pr, f, vf, r, from, change, agreed)
				if err != nil {
					return nil, nil, err
				}
				if !ok {
					// Re-dispatched once with why (a test may still show
					// it), then handed off quoting it.
					failed[f.ID] = proof
					continue
				}
				p.Evidence += "; " + proof
			}
			proved++
			w.vs.mu.Lock()
			w.vs.proven[f.ID] = p.Evidence
			w.vs.mu.Unlock()
		}
		if claimed > 0 && proved == 0 {
			// Half a fix is not pushed under a round that says it fixed
			// something else (as errNothingAddressed).
			for _, p := range r.files {
				undo[p] = true
			}
		}
	}
	if err := w.restorePaths(ctx, from, undo); err != nil {
		return nil, nil, err
	}
	for id, why := range failed {
		outcomes[id] = agent.FindingOutcome{FindingID: id, Status: agent.StatusBlocked, Reason: why}
	}
	return failed, handOff, nil
}

// overBounds measures the round's change since the head (whole; ours
// is what this pass changed, from its start) against w.Bounds: by the
// index of runs, the fixers whose part is to be undone, with why. What
// an earlier pass of the round kept counts, and is never undone here; a
// file of no fixer's is undone anyway, and does not count.
func (w *GitWorkspace) overBounds(ctx context.Context, whole, ours []verify.FileDiff, runs []fixerRun, violated map[string]bool) (map[int]verify.Violation, error) {
	if len(whole) == 0 {
		return nil, nil
	}
	sizes, err := w.binarySizes(ctx, whole)
	if err != nil {
		return nil, err
	}
	added := map[string]int64{}
	for _, d := range whole {
		added[d.Path()] = verify.AddedBytes(d, sizes[d.Path()])
	}
	var rest []string
	for _, d := range whole {
		if verify.File(ours, d.Path()) == nil {
			rest = append(rest, d.Path())
		}
	}
	return w.bound(runs, violated, added, rest), nil
}

// bound holds the fixers' parts of a change (added: the bytes each path
// adds) to the round's bounds; rest are the paths no fixer's part holds
// that count too, never undone.
func (w *GitWorkspace) bound(runs []fixerRun, violated map[string]bool, added map[string]int64, rest []string) map[int]verify.Violation {
	parts := make([][]verify.Sized, len(runs))
	inPart := map[string]bool{}
	for i, r := range runs {
		if !r.applied || violated[r.id] {
			continue
		}
		for _, p := range r.files {
			if n, ok := added[p]; ok {
				parts[i] = append(parts[i], verify.Sized{Path: p, Bytes: n})
				inPart[p] = true
			}
		}
	}
	var fixed []verify.Sized
	for _, p := range rest {
		if !inPart[p] {
			fixed = append(fixed, verify.Sized{Path: p, Bytes: added[p]})
		}
	}
	return verify.Bound(fixed, parts, w.Bounds)
}

// overBoundsBySize is overBounds for a change too large to read line by
// line: each file of the staged change since head counts by how much it
// grew (its size after less its size before, a floor of what it adds),
// and what no fixer changed counts but is never undone.
func (w *GitWorkspace) overBoundsBySize(ctx context.Context, head string, runs []fixerRun, violated map[string]bool) (map[int]verify.Violation, error) {
	names, err := w.worktree.Run(ctx, "diff", "--cached", "--name-only", "-z", "--no-renames", head, "--")
	if err != nil {
		return nil, fmt.Errorf("verify: %w", err)
	}
	var paths []string
	for p := range strings.SplitSeq(names, "\x00") {
		if p != "" {
			paths = append(paths, p)
		}
	}
	tree, err := w.worktree.Run(ctx, "write-tree")
	if err != nil {
		return nil, fmt.Errorf("verify: %w", err)
	}
	now, err := w.treeSizes(ctx, strings.TrimSpace(tree), paths)
	if err != nil {
		return nil, err
	}
	was, err := w.treeSizes(ctx, head, paths)
	if err != nil {
		return nil, err
	}
	added := map[string]int64{}
	for _, p := range paths {
		added[p] = max(0, now[p]-was[p])
	}
	return w.bound(runs, violated, added, paths), nil
}

// binarySizes are the sizes, as staged, of the binary files change
// adds or changes: a diff carries none of their bytes.
func (w *GitWorkspace) binarySizes(ctx context.Context, change []verify.FileDiff) (map[string]int64, error) {
	var paths []string
	for _, d := range change {
		if d.Binary && !d.Deleted() {
			paths = append(paths, d.Path())
		}
	}
	if len(paths) == 0 {
		return nil, nil
	}
	tree, err := w.worktree.Run(ctx, "write-tree")
	if err != nil {
		return nil, fmt.Errorf("verify: %w", err)
	}
	return w.treeSizes(ctx, strings.TrimSpace(tree), paths)
}

// treeSizes are the sizes of the blobs at paths in tree (a tree or a
// commit); a path tree lacks has none.
func (w *GitWorkspace) treeSizes(ctx context.Context, tree string, paths []string) (map[string]int64, error) {
	if len(paths) == 0 {
		return nil, nil
	}
	out, err := w.worktree.Run(ctx, append([]string{"ls-tree", "-r", "-l", "-z", "--full-tree", tree, "--"}, paths...)...)
	if err != nil {
		return nil, fmt.Errorf("verify: %w", err)
	}
	sizes := map[string]int64{}
	for rec := range strings.SplitSeq(out, "\x00") {
		// "<mode> <type> <object> <size>\t<path>"
		meta, p, ok := strings.Cut(rec, "\t")
		if !ok {
			continue
		}
		f := strings.Fields(meta)
		if len(f) != 4 {
			continue
		}
		if n, err := strconv.ParseInt(f[3], 10, 64); err == nil {
			sizes[p] = n
		}
	}
	return sizes, nil
}

// changedByRun reports whether an applied run of runs changed d's file.
func changedByRun(runs []fixerRun, d verify.FileDiff) bool {
	for _, r := range runs {
		if r.applied && (slices.Contains(r.files, d.OldPath) || slices.Contains(r.files, d.NewPath)) {
			return true
		}
	}
	return false
}

// prove is PR-V1(a) for one finding: its lines on the head, followed
// from the comment's commit when the forge has no current position for
// an outdated thread, then through mapped to the change's base.
func (w *GitWorkspace) prove(ctx context.Context, pr *forge.PullRequest, f prloop.Finding, change []verify.FileDiff, mapped [][]verify.FileDiff, explained map[string]string) (verify.Proof, verify.Finding) {
	vf := verify.Finding{ID: f.ID, Path: f.Path, Start: f.StartLine, End: f.EndLine, Body: f.Summary}
	if f.Path != "" && f.EndLine <= 0 && f.Outdated && f.OrigEnd > 0 && f.OriginalCommit != "" {
		since, err := w.diffOf(ctx, f.OriginalCommit, pr.HeadSHA, "--", f.Path)
		if err != nil {
			return verify.Proof{Why: "the finding's lines could not be followed from the comment's commit to the head: " + text.OneLine(err.Error())}, vf
		}
		r, ok := verify.MapForward(verify.Range{Path: f.Path, Start: f.OrigStart, End: f.OrigEnd}, since)
		if !ok {
			return verify.Proof{Why: "the finding's file is gone from the head"}, vf
		}
		vf.Path, vf.Start, vf.End = r.Path, r.Start, r.End
	}
	if vf.Path != "" && vf.End > 0 && len(mapped) > 0 {
		r, ok := verify.MapForward(verify.Range{Path: vf.Path, Start: vf.Start, End: vf.End}, mapped...)
		if !ok {
			return verify.Proof{Why: "the finding's file was deleted"}, vf
		}
		vf.Path, vf.Start, vf.End = r.Path, r.Start, r.End
	}
	return verify.Touched(vf, change, explained), vf
}

// askVerifier is PR-V1(b): the verifier judge is given the comment, the
// lines of its file around it before the change (at from) and after it
// (in the worktree), and the change to the file. Fail closed: an agent
// that cannot run or answers outside the schema is no confirmation.
func (w *GitWorkspace) askVerifier(ctx context.Context, f prloop.Finding, vf verify.Finding, from string, change []verify.FileDiff) verify.Verdict {
	return w.askVerifierWith(ctx, w.Verifier, f, vf, from, change)
}

// askVerifierWith asks agent v whether the change addresses f: a task of
// its own, so a fresh context whatever agent it is.
func (w *GitWorkspace) askVerifierWith(ctx context.Context, v agent.Agent, f prloop.Finding, vf verify.Finding, from string, change []verify.FileDiff) verify.Verdict {
	q := verify.Question{Finding: vf, Author: f.Author}
	if vf.Path != "" {
		lo, hi := vf.Start, vf.End
		if lo <= 0 {
			lo = hi
		}
		if old, err := w.worktree.Run(ctx, "cat-file", "blob", from+":"+vf.Path); err == nil {
			q.Before = numbered(vf.Path, old, lo, hi)
		} else {
			q.Before = fmt.Sprintf("File %s does not exist before the change.", vf.Path)
		}
		if hi > 0 {
			if r, ok := verify.MapForward(verify.Range{Path: vf.Path, Start: lo, End: hi}, change); ok {
				lo, hi = r.Start, r.End
			}
		}
		if now, err := os.ReadFile(filepath.Join(w.worktree.Dir, filepath.FromSlash(vf.Path))); err == nil {
			q.After = numbered(vf.Path, string(now), lo, hi)
		} else {
			q.After = fmt.Sprintf("File %s does not exist after the change.", vf.Path)
		}
		if d, err := w.worktree.Run(ctx, "diff", "--cached", "--no-color", "--no-ext-diff", from, "--", ":(literal)"+vf.Path); err == nil {
			q.Diff = text.Clip(d, contextMaxBytes)
		}
	} else if d, err := w.worktree.Run(ctx, "diff", "--cached", "--no-color", "--no-ext-diff", from, "--"); err == nil {
		q.Diff = text.Clip(d, contextMaxBytes)
	}
	t := agent.Task{
		Kind: verify.TaskKind, RunID: w.RunID, Workdir: w.worktree.Dir, Budget: w.Budget, Env: w.AgentEnv,
		Findings: []agent.Finding{{ID: f.ID, ThreadID: f.ThreadID, Path: vf.Path, StartLine: vf.Start, EndLine: vf.End, Body: f.Summary, Author: f.Author, Source: f.Source}},
		Diff:     q.Diff,
	}
	t.Prompt = verify.Prompt(q)
	res, err := v.Run(ctx, t)
	w.usage.AddRun(res.Usage)
	if err != nil {
		return verify.Verdict{Why: "the verifier could not run: " + text.Clip(text.OneLine(err.Error()), 200)}
	}
	verdict := verify.ParseVerdict(res.Output)
	if verdict.Valid && res.Record.Status != agent.StatusComplete {
		return verify.Verdict{Why: fmt.Sprintf("the verifier's run ended %s: %s", res.Record.Status, text.Clip(text.OneLine(res.Record.Summary), 200))}
	}
	return verdict
}

// diffOf is git diff args, zero-context and without rename detection,
// parsed. A diff converge cannot read is an error: no proof on half a
// diff.
func (w *GitWorkspace) diffOf(ctx context.Context, args ...string) ([]verify.FileDiff, error) {
	out, err := w.worktree.Run(ctx, append([]string{"diff", "--unified=0", "--no-renames", "--no-color", "--no-ext-diff",
		"--src-prefix=a/", "--dst-prefix=b/"}, args...)...)
	if err != nil {
		return nil, err
	}
	return verify.ParseDiff(out)
}

// stagedDiff is everything in the worktree, staged, against rev.
func (w *GitWorkspace) stagedDiff(ctx context.Context, rev string) ([]verify.FileDiff, error) {
	if _, err := w.worktree.Run(ctx, "add", "-A", "--", "."); err != nil {
		return nil, fmt.Errorf("verify: %w", err)
	}
	d, err := w.diffOf(ctx, "--cached", rev, "--")
	if err != nil {
		return nil, fmt.Errorf("verify: %w", err)
	}
	return d, nil
}

// restorePaths puts paths back as rev has them, in the index and the
// tree: a file rev lacks is removed.
func (w *GitWorkspace) restorePaths(ctx context.Context, rev string, paths map[string]bool) error {
	for _, p := range sortedKeys(paths) {
		spec := ":(literal)" + p
		if _, err := w.worktree.Run(ctx, "cat-file", "-e", rev+":"+p); err == nil {
			if _, err := w.worktree.Run(ctx, "checkout", "--quiet", rev, "--", spec); err != nil {
				return fmt.Errorf("verify: undo %s: %w", p, err)
			}
			continue
		}
		if _, err := w.worktree.Run(ctx, "rm", "-r", "-q", "-f", "--cached", "--ignore-unmatch", "--", spec); err != nil {
			return fmt.Errorf("verify: undo %s: %w", p, err)
		}
		if err := os.RemoveAll(filepath.Join(w.worktree.Dir, filepath.FromSlash(p))); err != nil {
			return fmt.Errorf("verify: undo %s: %w", p, err)
		}
	}
	return nil
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// checkpoint records the staged change as a commit on HEAD that no ref
// names and moves HEAD (detached) to it, so a re-dispatch starts from a
// clean tree holding what was verified; the caller moves HEAD back.
func (w *GitWorkspace) checkpoint(ctx context.Context) (string, error) {
	if _, err := w.worktree.Run(ctx, "add", "-A", "--", "."); err != nil {
		return "", fmt.Errorf("verify: %w", err)
	}
	tree, err := w.worktree.Run(ctx, "write-tree")
	if err != nil {
		return "", fmt.Errorf("verify: %w", err)
	}
	g := &repo.Git{Dir: w.worktree.Dir, Env: append(slices.Clone(w.worktree.Env),
		"GIT_AUTHOR_NAME="+repo.DefaultAuthorName, "GIT_AUTHOR_EMAIL="+repo.DefaultAuthorEmail,
		"GIT_COMMITTER_NAME="+repo.DefaultAuthorName, "GIT_COMMITTER_EMAIL="+repo.DefaultAuthorEmail)}
	sha, err := g.Run(ctx, "commit-tree", strings.TrimSpace(tree), "-p", "HEAD", "-m", "converge: the verified part of a round")
	if err != nil {
		return "", fmt.Errorf("verify: %w", err)
	}
	sha = strings.TrimSpace(sha)
	if _, err := w.worktree.Run(ctx, "update-ref", "--no-deref", "HEAD", sha); err != nil {
		return "", fmt.Errorf("verify: %w", err)
	}
	return sha, nil
}

// gitState is what a fixer may not change in its worktree (PR-V2): where
// HEAD is, the refs (but the remote-tracking ones, which fetches of
// other runs on the same clone move), the stash (a ref too) and the
// index.
type gitState struct {
	head   string
	symref string            // the branch HEAD names; "" detached
	refs   map[string]string // ref → object
	index  string            // the index's tree; "" when it has unmerged entries
	// files are the repository's own files a fixer could use to run a
	// program inside converge's later git commands, which carry the
	// forge's credentials (a hook, core.fsmonitor, a filter or alias in
	// the config): path → content, absent ones "".
	files map[string]string
}

// safeGit prefixes args with what keeps a git command from running a
// program a fixer planted in the repository's config or hooks: the
// commands that read and undo its changes run before they are undone.
func safeGit(args ...string) []string {
	return append([]string{"-c", "core.fsmonitor=false", "-c", "core.hooksPath=" + os.DevNull}, args...)
}

// maxGitFile bounds what readGitState reads of one config or hook file.
const maxGitFile = 1 << 20

func readGitState(ctx context.Context, g *repo.Git) (gitState, error) {
	var s gitState
	// One git for the common and the git directory, HEAD's commit and
	// the ref HEAD names (as symbolic-ref would name it; "HEAD" when it is
	// detached): the options print a line each, then each revision. After
	// "--" a revision that does not resolve fails the whole command, never
	// read as a file's name. Anything but those five lines is an error
	// too, never a guess.
	out, err := g.Run(ctx, safeGit("rev-parse", "--git-common-dir", "--git-dir", "HEAD", "--symbolic-full-name", "HEAD", "--")...)
	if err != nil {
		return s, fmt.Errorf("read git state: %w", err)
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != 5 || lines[4] != "--" {
		return s, fmt.Errorf("read git state: git rev-parse printed %d lines, not 5", len(lines))
	}
	s.head = strings.TrimSpace(lines[2])
	if sym := strings.TrimSpace(lines[3]); sym != "HEAD" {
		s.symref = sym
	}
	refs, err := g.Run(ctx, safeGit("for-each-ref", "--format=%(refname) %(objectname)")...)
	if err != nil {
		return s, fmt.Errorf("read git state: %w", err)
	}
	s.refs = map[string]string{}
	for l := range strings.SplitSeq(refs, "\n") {
		name, obj, ok := strings.Cut(strings.TrimSpace(l), " ")
		if !ok || strings.HasPrefix(name, "refs/remotes/") {
			continue
		}
		s.refs[name] = obj
	}
	if tree, err := g.Run(ctx, safeGit("write-tree")...); err == nil {
		s.index = strings.TrimSpace(tree)
	}
	s.files = map[string]string{}
	var dirs []string
	for _, p := range lines[:2] {
		if p = strings.TrimSpace(p); !filepath.IsAbs(p) {
			p = filepath.Join(g.Dir, p)
		}
		dirs = append(dirs, p)
	}
	// Not --git-path: under safeGit it would name core.hooksPath's
	// override, not the repository's hooks.
	paths := []string{filepath.Join(dirs[0], "config"), filepath.Join(dirs[1], "config.worktree"), filepath.Join(dirs[0], "hooks")}
	hooks := paths[2]
	if entries, err := os.ReadDir(hooks); err == nil {
		for _, e := range entries {
			paths = append(paths, filepath.Join(hooks, e.Name()))
		}
	}
	for _, p := range paths[:2] {
		s.files[p] = readCapped(p)
	}
	for _, p := range paths[3:] {
		s.files[p] = readCapped(p)
	}
	return s, nil
}

// readCapped is the file at p ("" when it is absent or not a regular
// file), read up to maxGitFile bytes, with its mode so a hook made
// executable is a change.
func readCapped(p string) string {
	fi, err := os.Lstat(p)
	if err != nil || !fi.Mode().IsRegular() {
		if err == nil {
			return "not a regular file: " + fi.Mode().String()
		}
		return ""
	}
	f, err := os.Open(p)
	if err != nil {
		return ""
	}
	defer f.Close()
	b := make([]byte, maxGitFile)
	n, _ := io.ReadFull(f, b)
	return fi.Mode().String() + "\n" + string(b[:n])
}

// changes says, in words, how after differs from s; nil when it does not.
func (s gitState) changes(after gitState) []string {
	var out []string
	switch {
	case after.symref != s.symref && after.symref != "":
		out = append(out, "checked out "+strings.TrimPrefix(after.symref, "refs/heads/"))
	case after.head != s.head:
		out = append(out, fmt.Sprintf("moved HEAD from %s to %s (a commit, reset, rebase or checkout)", text.ShortSHA(s.head), text.ShortSHA(after.head)))
	}
	for _, name := range sortedRefs(s.refs, after.refs) {
		was, had := s.refs[name]
		now, has := after.refs[name]
		switch {
		case name == "refs/stash" && was != now:
			out = append(out, "stashed")
		case !had:
			out = append(out, "created "+name)
		case !has:
			out = append(out, "deleted "+name)
		case was != now:
			out = append(out, "moved "+name)
		}
	}
	for _, p := range sortedRefs(s.files, after.files) {
		if s.files[p] != after.files[p] {
			out = append(out, "changed the repository's "+filepath.Base(p))
		}
	}
	if after.index != s.index && len(out) == 0 {
		if after.index == "" {
			out = append(out, "left the index with unmerged entries")
		} else {
			out = append(out, "changed the index")
		}
	}
	return out
}

func sortedRefs(a, b map[string]string) []string {
	seen := map[string]bool{}
	for k := range a {
		seen[k] = true
	}
	for k := range b {
		seen[k] = true
	}
	return sortedKeys(seen)
}

// restoreFile puts back a file readCapped read as was: removed when it
// was absent, else rewritten with its mode.
func restoreFile(p, was string) error {
	if was == "" || strings.HasPrefix(was, "not a regular file") {
		if was == "" {
			return os.RemoveAll(p)
		}
		return nil
	}
	mode, content, _ := strings.Cut(was, "\n")
	perm := os.FileMode(0o644)
	if strings.Contains(mode, "x") {
		perm = 0o755
	}
	if err := os.RemoveAll(p); err != nil {
		return err
	}
	return os.WriteFile(p, []byte(content), perm)
}

// undoHistory is PR-V2 after a fixer ran in g: whatever it did to HEAD,
// the refs and the stash is detected, logged, noted and put back, so its
// commits are unreachable and only its tree counts (the pool takes the
// tree's difference from the round's base). An operation it left half
// done (a rebase, a merge, a cherry-pick) is forgotten.
func (w *GitWorkspace) undoHistory(ctx context.Context, id string, g *repo.Git, before gitState) error {
	ctx = context.WithoutCancel(ctx)
	after, err := readGitState(ctx, g)
	if err != nil {
		return err
	}
	what := before.changes(after)
	if len(what) == 0 {
		return nil
	}
	msg := fmt.Sprintf("fixer of %s %s; converge discarded that and takes only its tree's difference from the round's base (PR-V2)", id, strings.Join(what, ", "))
	w.logf("%s", msg)
	w.vs.note(msg)
	// The config and hooks first: the git commands below must not run
	// what a fixer planted there.
	for _, p := range sortedRefs(before.files, after.files) {
		was := before.files[p]
		if was == after.files[p] {
			continue
		}
		if err := restoreFile(p, was); err != nil {
			return fmt.Errorf("undo the fixer's history: %w", err)
		}
	}
	for _, state := range []string{"rebase-merge", "rebase-apply", "MERGE_HEAD", "CHERRY_PICK_HEAD", "REVERT_HEAD", "BISECT_LOG"} {
		if p, err := g.Run(ctx, safeGit("rev-parse", "--git-path", state)...); err == nil {
			p = strings.TrimSpace(p)
			if !filepath.IsAbs(p) {
				p = filepath.Join(g.Dir, p)
			}
			_ = os.RemoveAll(p)
		}
	}
	if _, err := g.Run(ctx, safeGit("update-ref", "--no-deref", "HEAD", before.head)...); err != nil {
		return fmt.Errorf("undo the fixer's history: %w", err)
	}
	if before.symref != "" {
		if _, err := g.Run(ctx, safeGit("symbolic-ref", "HEAD", before.symref)...); err != nil {
			return fmt.Errorf("undo the fixer's history: %w", err)
		}
	}
	for _, name := range sortedRefs(before.refs, after.refs) {
		was, had := before.refs[name]
		now := after.refs[name]
		switch {
		case !had:
			_, err = g.Run(ctx, safeGit("update-ref", "-d", name)...)
		case was != now:
			_, err = g.Run(ctx, safeGit("update-ref", name, was)...)
		}
		if err != nil {
			return fmt.Errorf("undo the fixer's history: %w", err)
		}
	}
	return nil
}
