// Package suggest is the built-in agent that applies GitHub suggested
// changes (```suggestion blocks) exactly as written, without an LLM
// (SPEC PR-S9). What it cannot apply cleanly it reports blocked, so the
// caller can hand those findings to an LLM backend.
package suggest

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/convergeloop/converge/internal/agent"
)

// Name is the backend's name in configuration and reports.
const Name = "suggest"

// Reasons a finding is not applied. They are quoted in the hand-off reply
// a human reads, so they are worded for one.
const (
	ReasonNoSuggestion        = "the comment has no ```suggestion block, and the built-in suggest agent applies only those"
	ReasonMultipleSuggestions = "the comment has more than one ```suggestion block"
	ReasonUnterminated        = "the ```suggestion block is not closed"
	ReasonNoLines             = "the comment names no line range to replace"
	ReasonBadPath             = "the comment's file path is not inside the repository"
	ReasonFileMissing         = "the file the comment is on does not exist on the head"
	ReasonUnreadable          = "the file the comment is on cannot be read"
	ReasonOutOfRange          = "the comment's lines are past the end of the file"
	ReasonOverlap             = "the suggestion overlaps another finding's lines"
	// ReasonStale: the lines the reviewer saw are not, unchanged, at the
	// thread's current position, so the suggestion is not written (case
	// 8 of issue 6: applied at stale line numbers it corrupts the file).
	// Worded for the hand-off reply, as it is what a human reads.
	ReasonStale = "the suggestion no longer matches the code"
	// ReasonNoChange: the suggestion equals the lines it replaces; that is
	// never reported as addressed.
	ReasonNoChange = "the suggestion changes nothing"
)

// Agent applies suggestion blocks. The zero value is ready to use.
type Agent struct{}

var _ agent.Agent = (*Agent)(nil)

// New returns the suggestion applier.
func New() *Agent { return &Agent{} }

func (*Agent) Name() string { return Name }

// ErrCannotReview is Run's answer to a review task (PR-S4).
var ErrCannotReview = errors.New("suggest: the suggest backend only applies ```suggestion blocks and cannot review; use a command agent as the review agent")

// CanReview is false: applying suggestions takes no judgement, so this
// backend can never be the independent review of a head, and an empty
// answer from it must not read as a clean one.
func (*Agent) CanReview() bool { return false }

// Run applies the suggestion of each finding to t.Workdir: the block's
// content replaces lines StartLine..EndLine (1-based, inclusive; StartLine
// 0 means the single line EndLine) of Path, an empty block deletes them.
// It does so only when those lines are the ones the suggestion was written
// against: OrigStart..OrigEnd of Path at OriginalCommit, read from the
// workdir's git history, unchanged (when OriginalCommit is empty the
// current lines are taken as seen, unless the thread is Outdated). A
// suggestion that no longer matches, or that would change nothing, is
// blocked, never written.
// Within a file edits go bottom-up whatever the input order, so that no
// edit shifts the lines of another; findings on intersecting lines of one
// file are not both applied. The file's line endings and its final newline
// (or lack of one) are kept. Paths are resolved inside t.Workdir only,
// symlinks included.
//
// The record is complete when every finding applied, partial when some
// did, blocked when none did; Outcomes say which and why.
func (a *Agent) Run(ctx context.Context, t agent.Task) (agent.Result, error) {
	start := time.Now()
	if t.Kind == agent.TaskKindReview {
		return agent.Result{}, ErrCannotReview
	}
	if t.Kind != "" && t.Kind != agent.TaskKindFix {
		return agent.Result{}, fmt.Errorf("suggest: unsupported task kind %q", t.Kind)
	}
	root, err := os.OpenRoot(t.Workdir)
	if err != nil {
		return agent.Result{}, fmt.Errorf("suggest: open workdir: %w", err)
	}
	defer root.Close()

	outcomes := make([]agent.FindingOutcome, len(t.Findings))
	byFile := map[string][]edit{}
	for i, f := range t.Findings {
		outcomes[i] = agent.FindingOutcome{FindingID: f.ID, Status: agent.StatusBlocked}
		e, reason := prepare(i, f, t.Workdir, t.Env)
		if reason != "" {
			outcomes[i].Reason = reason
			continue
		}
		byFile[e.path] = append(byFile[e.path], e)
	}

	var changed []string
	for _, path := range slices.Sorted(maps.Keys(byFile)) {
		if err := ctx.Err(); err != nil {
			return agent.Result{}, fmt.Errorf("suggest: %w", err)
		}
		wrote, err := applyFile(ctx, root, path, byFile[path], outcomes)
		if err != nil {
			return agent.Result{}, fmt.Errorf("suggest: %s: %w", path, err)
		}
		if wrote {
			// Forge paths are slash-separated; keep reports in that form.
			changed = append(changed, filepath.ToSlash(path))
		}
	}

	return agent.Result{
		Record:   record(t.Findings, outcomes, changed),
		Outcomes: outcomes,
		Duration: time.Since(start),
		// No model runs: the price is known, and it is zero.
		Usage: agent.Usage{CostReported: true},
	}, nil
}

// edit is one finding ready to apply.
type edit struct {
	idx        int // index into the task's findings
	path       string
	start, end int
	lines      []string // replacement, without line endings
	// seen is what the reviewer saw: lines origStart..origEnd of path at
	// commit; a nil seen means the current lines are taken as seen.
	seen *seenLines
}

type seenLines struct {
	workdir            string
	env                []string
	commit             string
	origStart, origEnd int
}

func prepare(idx int, f agent.Finding, workdir string, env []string) (edit, string) {
	lines, above, below, reason := ParseSuggestionSpan(f.Body)
	if reason != "" {
		return edit{}, reason
	}
	if f.EndLine <= 0 {
		if f.Outdated || f.OriginalCommit != "" {
			return edit{}, ReasonStale + ": the thread has no current position in the file"
		}
		return edit{}, ReasonNoLines
	}
	start := f.StartLine
	if start <= 0 {
		start = f.EndLine
	}
	// A GitLab suggestion names its lines around the commented one (the
	// thread's line, EndLine): they are the lines it replaces, now and as
	// the reviewer saw them.
	if above > 0 || below > 0 {
		if f.EndLine-above < 1 {
			return edit{}, fmt.Sprintf("%s: the suggestion starts %d line(s) above line %d", ReasonOutOfRange, above, f.EndLine)
		}
		start = f.EndLine - above
		f.EndLine += below
		if f.OrigEnd > 0 {
			f.OrigStart, f.OrigEnd = max(f.OrigEnd-above, 1), f.OrigEnd+below
		}
	}
	if start > f.EndLine {
		return edit{}, fmt.Sprintf("%s: start line %d after end line %d", ReasonOutOfRange, start, f.EndLine)
	}
	p := filepath.FromSlash(f.Path)
	if f.Path == "" || !filepath.IsLocal(p) {
		return edit{}, fmt.Sprintf("%s: %q", ReasonBadPath, f.Path)
	}
	e := edit{idx: idx, path: filepath.Clean(p), start: start, end: f.EndLine, lines: lines}
	switch {
	case f.OriginalCommit != "":
		if !isCommitID(f.OriginalCommit) {
			return edit{}, fmt.Sprintf("%s: the reviewed commit %q is not a commit id", ReasonStale, f.OriginalCommit)
		}
		s := &seenLines{workdir: workdir, env: env, commit: f.OriginalCommit, origStart: f.OrigStart, origEnd: f.OrigEnd}
		if s.origEnd <= 0 {
			// The forge gave no original position: the thread did not move.
			s.origStart, s.origEnd = start, f.EndLine
		} else if s.origStart <= 0 {
			s.origStart = s.origEnd
		}
		if s.origStart > s.origEnd {
			return edit{}, fmt.Sprintf("%s: reviewed start line %d after end line %d", ReasonOutOfRange, s.origStart, s.origEnd)
		}
		e.seen = s
	case f.Outdated:
		return edit{}, ReasonStale + ": the code changed since the review and the reviewed commit is unknown"
	}
	return e, ""
}

// applyFile applies edits to one file and writes it once. Per-finding
// failures land in outcomes; the error is for IO that should stop the run.
func applyFile(ctx context.Context, root *os.Root, path string, edits []edit, outcomes []agent.FindingOutcome) (bool, error) {
	data, err := root.ReadFile(path)
	if err != nil {
		reason := ReasonFileMissing
		if !errors.Is(err, fs.ErrNotExist) {
			// Includes a symlink leading out of the workdir.
			reason = fmt.Sprintf("%s: %v", ReasonUnreadable, err)
		}
		for _, e := range edits {
			outcomes[e.idx].Reason = reason
		}
		return false, nil
	}
	f := splitFile(string(data))

	// Bottom-up, so an applied edit never moves the lines of the next one.
	// Ties keep input order (stable) and then collide as overlaps.
	slices.SortStableFunc(edits, func(a, b edit) int {
		return cmp.Or(cmp.Compare(b.end, a.end), cmp.Compare(b.start, a.start))
	})
	applied := 0
	floor := len(f.lines) + 1 // lowest line touched so far
	var floorID string
	originals := map[string]originalFile{} // by commit
	for _, e := range edits {
		switch {
		case e.end > len(f.lines):
			outcomes[e.idx].Reason = fmt.Sprintf("%s: lines %d-%d, file has %d", ReasonOutOfRange, e.start, e.end, len(f.lines))
			continue
		case e.end >= floor:
			outcomes[e.idx].Reason = fmt.Sprintf("%s: %s", ReasonOverlap, floorID)
			continue
		}
		// Edits go bottom-up and never overlap, so these are still the
		// lines of the file as it was before any edit.
		current := f.lines[e.start-1 : e.end]
		if e.seen != nil {
			orig, ok := originals[e.seen.commit]
			if !ok {
				orig = readOriginal(ctx, e.seen, path)
				originals[e.seen.commit] = orig
			}
			if why := e.seen.mismatch(orig, current, path, e.start, e.end); why != "" {
				outcomes[e.idx].Reason = ReasonStale + ": " + why
				continue
			}
		}
		if slices.Equal(current, e.lines) {
			outcomes[e.idx].Reason = fmt.Sprintf("%s: lines %d-%d already read as suggested", ReasonNoChange, e.start, e.end)
			continue
		}
		f.replace(e.start, e.end, e.lines)
		floor, floorID = e.start, outcomes[e.idx].FindingID
		outcomes[e.idx].Status = agent.StatusComplete
		applied++
	}
	if applied == 0 {
		return false, nil
	}
	out := f.String()
	if out == string(data) {
		return false, nil
	}
	// WriteFile truncates in place, so the file keeps its mode and inode.
	if err := root.WriteFile(path, []byte(out), 0o644); err != nil {
		return false, fmt.Errorf("write: %w", err)
	}
	return true, nil
}

func record(findings []agent.Finding, outcomes []agent.FindingOutcome, changed []string) agent.StatusRecord {
	var applied int
	var concerns, pending []string
	for _, o := range outcomes {
		if o.Status == agent.StatusComplete {
			applied++
			continue
		}
		concerns = append(concerns, fmt.Sprintf("%s: %s", o.FindingID, o.Reason))
		pending = append(pending, o.FindingID)
	}
	rec := agent.StatusRecord{
		Summary:      fmt.Sprintf("applied %d of %d suggestions", applied, len(findings)),
		FilesChanged: changed,
		Concerns:     concerns,
	}
	if rec.FilesChanged == nil {
		rec.FilesChanged = []string{}
	}
	switch {
	case applied == len(findings):
		rec.Status = agent.StatusComplete
	case applied > 0:
		rec.Status = agent.StatusPartial
		// No extension is requested: more time cannot help a suggestion
		// that does not apply; another backend can.
		rec.NextAction = "fix with an LLM agent: " + strings.Join(pending, ", ")
	default:
		rec.Status = agent.StatusBlocked
		rec.Reason = "no suggestion applied"
		rec.NextAction = "fix with an LLM agent: " + strings.Join(pending, ", ")
	}
	return rec
}
