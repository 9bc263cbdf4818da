package prwork

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/convergeloop/converge/internal/agent"
	"github.com/convergeloop/converge/internal/forge"
	"github.com/convergeloop/converge/internal/pool"
	"github.com/convergeloop/converge/internal/prloop"
	"github.com/convergeloop/converge/internal/repo"
	"github.com/convergeloop/converge/internal/text"
)

// The fixers of a round run in parallel, one per file (AG-P1), each by
// the status protocol and the model ladder (AG-T2, AG-E1).

// errNothingAddressed discards the change of a fixer that addressed none
// of its findings: half a fix is not pushed under a round that says it
// fixed something else.
var errNothingAddressed = errors.New("the fixer addressed none of its findings")

// fixerTask is the findings one fixer gets.
type fixerTask struct {
	path     string // "" for the findings about no file
	findings []prloop.Finding
}

// fixerTasks splits a round's findings into the pool's tasks: the
// findings on one file go to one fixer (PR-S7 keeps findings on
// intersecting lines out of one round), in the order given; the findings
// about no file go to one fixer that names no file, so it runs alone.
func fixerTasks(fs []prloop.Finding) ([]pool.Task, map[string]fixerTask) {
	var tasks []pool.Task
	byID := map[string]fixerTask{}
	for _, f := range fs {
		id := "file " + f.Path
		if f.Path == "" {
			id = "findings without a file"
		}
		ft, seen := byID[id]
		if !seen {
			t := pool.Task{ID: id}
			if f.Path != "" {
				t.Files = []string{f.Path}
			}
			tasks = append(tasks, t)
			ft.path = f.Path
		}
		ft.findings = append(ft.findings, f)
		byID[id] = ft
	}
	return tasks, byID
}

// fixerRun is what one fixer of a round did, for the round's
// verification (PR-V1, PR-V3): its findings, the files its change
// touched in the combined tree, and the files its record explains.
type fixerRun struct {
	id        string
	findings  []prloop.Finding
	files     []string
	explained map[string]string
	applied   bool
}

// applyFixers runs the round's fixers on fs from the clean head, at most
// MaxFixers at once, each in its own worktree, and combines their changes
// in the run's worktree (AG-P1). Each fixer is dispatched by the status
// protocol (agent.Runner.Dispatch): extended as AG-T1 allows, retried when
// it could not run (AG-T4), given more context once after NEEDS_CONTEXT,
// escalated along Models. Every finding gets an outcome with a reason a
// human can act on; a fixer that could not run, even on its retry, is the
// run's *agent.RunFailure.
func (w *GitWorkspace) applyFixers(ctx context.Context, pr *forge.PullRequest, round int, fs []prloop.Finding) (map[string]agent.FindingOutcome, []fixerRun, error) {
	tasks, byID := fixerTasks(fs)
	dir, err := filepath.Abs(filepath.Join(w.Root, "worktrees", w.RunID+".fixers"))
	if err != nil {
		return nil, nil, err
	}
	// The run holds its PR's lock, so fixer worktrees already in its
	// directory are a killed process's: gone before new ones are made.
	unlock := lockClone(w.clone.Dir)
	var swept []string
	if mayHoldFixers(w.clone.Dir, dir) {
		swept, err = pool.Sweep(ctx, w.worktree, dir)
	}
	unlock()
	if err != nil {
		return nil, nil, err
	}
	if len(swept) > 0 {
		w.logf("removed %d fixer worktree(s) a killed run left", len(swept))
	}
	results, err := pool.Run(ctx, w.worktree, tasks, func(ctx context.Context, pt pool.Task, tree *pool.Tree) (agent.Dispatched, error) {
		return w.dispatch(ctx, pr, round, pt.ID, byID[pt.ID].findings, tree)
	}, pool.Options{
		Max:  w.MaxFixers,
		Dir:  dir,
		Lock: func() func() { return lockClone(w.clone.Dir) },
		Logf: w.logf,
	})
	if err != nil {
		return nil, nil, err
	}
	out := map[string]agent.FindingOutcome{}
	var runs []fixerRun
	for _, r := range results {
		w.usage.Add(r.Value.Usage)
	}
	for _, r := range results {
		var fail *agent.RunFailure
		if errors.As(r.Err, &fail) {
			return nil, nil, fail
		}
		d := r.Value
		runs = append(runs, fixerRun{id: r.Task.ID, findings: byID[r.Task.ID].findings, files: r.Files,
			explained: d.Result.Record.FileReasons, applied: r.Applied && r.Err == nil})
		if len(d.Concerns) > 0 {
			w.logf("fixer of %s reported %s with concerns: %s", r.Task.ID, d.Status, text.Clip(strings.Join(d.Concerns, "; "), 400))
			w.notes = append(w.notes, fmt.Sprintf("fixer of %s: %s with concerns: %s", r.Task.ID, d.Status, text.Clip(strings.Join(d.Concerns, "; "), 400)))
		}
		if d.Retries() > 0 {
			w.notes = append(w.notes, fmt.Sprintf("fixer of %s: %s after %s", r.Task.ID, cmp.Or(d.Status, "no status"), attemptsLine(d.Attempts)))
		}
		for _, o := range d.Result.Outcomes {
			out[o.FindingID] = o
		}
		for _, f := range byID[r.Task.ID].findings {
			o, ok := out[f.ID]
			if !ok {
				o = agent.FindingOutcome{FindingID: f.ID, Status: d.Result.Record.Status, Reason: d.Result.Record.Reason}
			}
			if o.Status == agent.StatusComplete && !r.Applied {
				o = agent.FindingOutcome{FindingID: f.ID, Status: agent.StatusBlocked,
					Reason: "the fix could not be combined with the round's other fixes: " + text.OneLine(fmt.Sprint(r.Err))}
			}
			if o.Status != agent.StatusComplete && strings.TrimSpace(o.Reason) == "" {
				o.Reason = agent.NotDoneReason(d.Result.Record)
			}
			out[f.ID] = o
		}
	}
	return out, runs, nil
}

// mayHoldFixers reports whether the fixers' directory dir of a run may
// hold what a killed run left for pool.Sweep: the directory itself, or
// git's record of a worktree in it. Without either a sweep finds nothing
// (and costs a git): every run ends by removing both.
func mayHoldFixers(clone, dir string) bool {
	if _, err := os.Lstat(dir); !errors.Is(err, fs.ErrNotExist) {
		return true
	}
	return repo.MayHaveWorktreesUnder(gitDirOf(clone), dir)
}

// dispatch runs one fixer on fs in tree. Its change is kept only when it
// addressed at least one finding.
func (w *GitWorkspace) dispatch(ctx context.Context, pr *forge.PullRequest, round int, id string, fs []prloop.Finding, tree *pool.Tree) (agent.Dispatched, error) {
	before, err := readGitState(ctx, tree.Git)
	if err != nil {
		return agent.Dispatched{}, err
	}
	r := agent.Runner{
		Agent: w.Agent,
		// What a run did to git is undone before its retry's reset runs
		// git in the tree (PR-V2).
		Reset: func(ctx context.Context) error {
			if err := w.undoHistory(ctx, id, tree.Git, before); err != nil {
				return err
			}
			return tree.Reset(ctx)
		},
		Logf: func(format string, args ...any) {
			w.logf("fixer of %s: "+format, append([]any{id}, args...)...)
		},
	}
	t := w.task(round, tree.Dir, fs)
	t.Rejected = w.rejectedFor(fs)
	d, err := r.Dispatch(ctx, t, w.Models, func(agent.StatusRecord) string {
		return moreContext(ctx, tree, pr, fs)
	})
	if gerr := w.undoHistory(ctx, id, tree.Git, before); gerr != nil && err == nil {
		return d, gerr
	}
	if err != nil {
		return d, err
	}
	if d.Retries() > 0 {
		w.logf("fixer of %s ended %s after %d attempts", id, d.Status, len(d.Attempts))
	}
	for _, o := range d.Result.Outcomes {
		if o.Status == agent.StatusComplete {
			return d, nil
		}
	}
	if len(d.Result.Outcomes) == 0 && d.Done() {
		return d, nil
	}
	return d, errNothingAddressed
}

// Bounds of the context a fixer gets after NEEDS_CONTEXT.
const (
	contextLinesAround = 60
	contextMaxBytes    = 24 << 10
)

// moreContext is what a fixer that answered NEEDS_CONTEXT gets once
// (AG-T2): for each file of its findings, the file as it is now — whole,
// or the lines around the findings with their numbers — and what the
// pull request changed in it (git diff base...head). The forge gives a
// finding's first comment only, so the thread's replies are not here.
func moreContext(ctx context.Context, tree *pool.Tree, pr *forge.PullRequest, fs []prloop.Finding) string {
	var b strings.Builder
	seen := map[string]bool{}
	for _, f := range fs {
		if f.Path == "" || seen[f.Path] {
			continue
		}
		seen[f.Path] = true
		lo, hi := 0, 0 // 0: the whole file
		for _, g := range fs {
			if g.Path != f.Path {
				continue
			}
			if g.EndLine <= 0 {
				lo, hi = 0, 0
				break
			}
			start := g.StartLine
			if start <= 0 {
				start = g.EndLine
			}
			if lo == 0 || start < lo {
				lo = start
			}
			hi = max(hi, g.EndLine)
		}
		if content, err := os.ReadFile(filepath.Join(tree.Dir, filepath.FromSlash(f.Path))); err == nil {
			b.WriteString(numbered(f.Path, string(content), lo, hi))
		} else {
			fmt.Fprintf(&b, "File %s does not exist in the tree now.\n", f.Path)
		}
		diff, err := tree.Git.Run(ctx, "diff", "--no-color", "--no-ext-diff", "origin/"+pr.BaseRef+"..."+pr.HeadSHA, "--", f.Path)
		if err == nil && strings.TrimSpace(diff) != "" {
			fmt.Fprintf(&b, "\nWhat this pull request changed in %s:\n%s\n", f.Path, text.Clip(diff, contextMaxBytes))
		}
	}
	return b.String()
}

// numbered renders content's lines lo..hi widened by contextLinesAround
// (all of them when lo is 0), each with its number, clipped.
func numbered(path, content string, lo, hi int) string {
	lines := strings.Split(strings.TrimSuffix(content, "\n"), "\n")
	first, last := 1, len(lines)
	if lo > 0 {
		first, last = max(1, lo-contextLinesAround), min(len(lines), hi+contextLinesAround)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "File %s as it is now, lines %d-%d of %d:\n", path, first, last, len(lines))
	for i := first; i <= last && i <= len(lines); i++ {
		fmt.Fprintf(&b, "%d: %s\n", i, lines[i-1])
	}
	return text.Clip(b.String(), contextMaxBytes)
}

// attemptsLine says how a dispatch went, attempt by attempt: the model
// (when the ladder named one), whether it had more context, and how the
// attempt ended.
func attemptsLine(as []agent.Attempt) string {
	parts := make([]string, 0, len(as))
	for i, a := range as {
		p := fmt.Sprintf("attempt %d", i+1)
		if a.Model != "" {
			p += " on " + a.Model
		}
		if a.Context {
			p += " with more context"
		}
		p += ": " + cmp.Or(a.Status, "no status")
		if a.Reason != "" {
			p += " (" + text.Clip(text.OneLine(a.Reason), 120) + ")"
		}
		parts = append(parts, p)
	}
	return strings.Join(parts, "; ")
}
