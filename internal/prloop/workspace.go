package prloop

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/convergeloop/converge/internal/agent"
	"github.com/convergeloop/converge/internal/forge"
	"github.com/convergeloop/converge/internal/repo"
	localreview "github.com/convergeloop/converge/internal/review"
)

// GitWorkspace is the Workspace on a real git clone under the state
// directory, with a worktree per run (IF-4).
type GitWorkspace struct {
	Root     string   // <state>/work: clones and worktrees live here
	RunID    string   // names the run's worktree
	CloneURL string   // the repository's git URL
	GitEnv   []string // credentials and CAs, via the environment only (IF-2)
	Agent    agent.Agent
	// Reviewer runs the local multi-angle review (PR-S4); nil when no
	// agent that can review is configured.
	Reviewer *localreview.Reviewer
	AgentEnv []string      // scrubbed environment for agents (AG-B1)
	Budget   time.Duration // per agent run (AG-T1)
	TestCmd  []string      // overrides discovery (REPO-C1) when set
	Author   string        // commit author name
	Email    string        // commit author email
	Logf     func(format string, args ...any)

	clone    *repo.Git
	worktree *repo.Git
}

var _ Workspace = (*GitWorkspace)(nil)

func (w *GitWorkspace) logf(format string, args ...any) {
	if w.Logf != nil {
		w.Logf(format, args...)
	}
}

// Prepare clones (once) and fetches the repository, makes the run's
// worktree, and measures the PR's size at start (PR-T6).
func (w *GitWorkspace) Prepare(ctx context.Context, pr *forge.PullRequest) (int, error) {
	cloneDir := filepath.Join(w.Root, "clones", sanitize(pr.Ref.Host), pr.Ref.Owner, pr.Ref.Repo)
	if _, err := os.Stat(filepath.Join(cloneDir, ".git")); err != nil {
		if err := os.MkdirAll(filepath.Dir(cloneDir), 0o755); err != nil {
			return 0, fmt.Errorf("make clone dir: %w", err)
		}
		if _, err := repo.Clone(ctx, w.CloneURL, cloneDir, w.GitEnv); err != nil {
			return 0, err
		}
	}
	w.clone = &repo.Git{Dir: cloneDir, Env: w.GitEnv}
	if err := w.fetch(ctx, pr); err != nil {
		return 0, err
	}
	wt := filepath.Join(w.Root, "worktrees", w.RunID)
	if _, err := os.Stat(wt); err != nil {
		if _, err := w.clone.Run(ctx, "worktree", "add", "--detach", wt, pr.HeadSHA); err != nil {
			return 0, fmt.Errorf("add worktree: %w", err)
		}
	}
	w.worktree = &repo.Git{Dir: wt, Env: w.GitEnv}
	add, del, err := w.clone.DiffLines(ctx, "origin/"+pr.BaseRef, pr.HeadSHA)
	if err != nil {
		return 0, err
	}
	return add + del, nil
}

func (w *GitWorkspace) fetch(ctx context.Context, pr *forge.PullRequest) error {
	if _, err := w.clone.Run(ctx, "fetch", "--quiet", "origin",
		"+refs/heads/"+pr.BaseRef+":refs/remotes/origin/"+pr.BaseRef,
		"+refs/heads/"+pr.HeadRef+":refs/remotes/origin/"+pr.HeadRef); err != nil {
		return fmt.Errorf("fetch: %w", err)
	}
	return nil
}

// Cleanup removes the run's worktree (PR-G6); the clone is kept as a cache.
func (w *GitWorkspace) Cleanup(ctx context.Context) error {
	if w.clone == nil || w.worktree == nil {
		return nil
	}
	_, err := w.clone.Run(ctx, "worktree", "remove", "--force", w.worktree.Dir)
	return err
}

// Fix applies the round's findings on the PR's current head, keeps only
// changes that leave the build green (PR-S10), and commits and pushes at
// most one commit carrying the round trailer (PR-S11). Never force-pushes.
func (w *GitWorkspace) Fix(ctx context.Context, pr *forge.PullRequest, round int, findings []Finding) (FixResult, error) {
	res := FixResult{Round: round}
	if w.worktree == nil {
		if _, err := w.Prepare(ctx, pr); err != nil {
			return res, err
		}
	}
	if err := w.fetch(ctx, pr); err != nil {
		return res, err
	}
	if err := w.reset(ctx, pr.HeadSHA); err != nil {
		return res, err
	}
	ordered := bottomUp(findings)

	outcomes, err := w.apply(ctx, pr, round, ordered)
	if err != nil {
		return res, err
	}
	applied := appliedIDs(outcomes)
	test := w.testCommand()
	if len(applied) > 0 && len(test) > 0 {
		ok, out, err := w.runTests(ctx, test)
		if err != nil {
			return res, err
		}
		if !ok {
			// A red build: keep only the fixes that are green one by one.
			w.logf("tests failed with all fixes; trying them one at a time: %s", lastLine(out))
			outcomes, err = w.applyEach(ctx, pr, round, ordered, test)
			if err != nil {
				return res, err
			}
			applied = appliedIDs(outcomes)
		}
	}
	res.TestsPassed = true
	for _, f := range ordered {
		o := outcomes[f.ID]
		if o.Status == agent.StatusComplete {
			res.Addressed = append(res.Addressed, f.ID)
		} else {
			reason := o.Reason
			if reason == "" {
				reason = "the fixer could not address it"
			}
			res.Blocked = append(res.Blocked, BlockedFinding{ID: f.ID, Reason: reason})
		}
	}
	if len(applied) == 0 {
		return res, nil
	}
	msg := commitMessage(round, ordered, res.Addressed)
	sha, err := w.worktree.Commit(ctx, repo.CommitOptions{
		Message:     msg,
		AuthorName:  w.Author,
		AuthorEmail: w.Email,
	})
	if errors.Is(err, repo.ErrNothingToCommit) {
		// Fixers reported success but changed nothing: nothing was addressed.
		for _, id := range res.Addressed {
			res.Blocked = append(res.Blocked, BlockedFinding{ID: id, Reason: "the fix changed nothing"})
		}
		res.Addressed = nil
		return res, nil
	}
	if err != nil {
		return res, err
	}
	if err := w.worktree.Push(ctx, "origin", "HEAD", pr.HeadRef); err != nil {
		return res, err
	}
	add, del, err := w.worktree.DiffLines(ctx, sha+"~1", sha)
	if err != nil {
		return res, err
	}
	res.CommitSHA = sha
	res.LinesChanged = add + del
	return res, nil
}

func (w *GitWorkspace) reset(ctx context.Context, sha string) error {
	for _, args := range [][]string{
		{"checkout", "--quiet", "--force", "--detach", sha},
		{"reset", "--quiet", "--hard", sha},
		{"clean", "-fdq"},
	} {
		if _, err := w.worktree.Run(ctx, args...); err != nil {
			return fmt.Errorf("reset worktree: %w", err)
		}
	}
	return nil
}

func (w *GitWorkspace) task(round int, fs []Finding) agent.Task {
	t := agent.Task{Kind: "fix", RunID: w.RunID, Round: round, Workdir: w.worktree.Dir, Budget: w.Budget, Env: w.AgentEnv}
	for _, f := range fs {
		t.Findings = append(t.Findings, agent.Finding{
			ID: f.ID, ThreadID: f.ThreadID, Path: f.Path, StartLine: f.StartLine, EndLine: f.EndLine,
			Body: f.Summary, Author: f.Author, Source: f.Source,
		})
	}
	return t
}

func (w *GitWorkspace) apply(ctx context.Context, _ *forge.PullRequest, round int, fs []Finding) (map[string]agent.FindingOutcome, error) {
	r, err := w.Agent.Run(ctx, w.task(round, fs))
	if err != nil {
		return nil, fmt.Errorf("agent %s: %w", w.Agent.Name(), err)
	}
	out := map[string]agent.FindingOutcome{}
	for _, o := range r.Outcomes {
		out[o.FindingID] = o
	}
	for _, f := range fs {
		if _, ok := out[f.ID]; !ok {
			out[f.ID] = agent.FindingOutcome{FindingID: f.ID, Status: r.Record.Status, Reason: r.Record.Reason}
		}
	}
	return out, nil
}

// applyEach applies fixes one at a time from a clean head, keeping each
// whose tests stay green; the kept ones are then re-applied together.
func (w *GitWorkspace) applyEach(ctx context.Context, pr *forge.PullRequest, round int, fs []Finding, test []string) (map[string]agent.FindingOutcome, error) {
	out := map[string]agent.FindingOutcome{}
	var keep []Finding
	for _, f := range fs {
		if err := w.reset(ctx, pr.HeadSHA); err != nil {
			return nil, err
		}
		outs, err := w.apply(ctx, pr, round, []Finding{f})
		if err != nil {
			return nil, err
		}
		o := outs[f.ID]
		if o.Status == agent.StatusComplete {
			ok, tail, err := w.runTests(ctx, test)
			if err != nil {
				return nil, err
			}
			if !ok {
				o = agent.FindingOutcome{FindingID: f.ID, Status: agent.StatusBlocked, Reason: "tests fail with this fix: " + lastLine(tail)}
			} else {
				keep = append(keep, f)
			}
		}
		out[f.ID] = o
	}
	if err := w.reset(ctx, pr.HeadSHA); err != nil {
		return nil, err
	}
	if len(keep) == 0 {
		return out, nil
	}
	again, err := w.apply(ctx, pr, round, keep)
	if err != nil {
		return nil, err
	}
	for id, o := range again {
		out[id] = o
	}
	if ok, tail, err := w.runTests(ctx, test); err != nil {
		return nil, err
	} else if !ok {
		// Green alone, red together: push nothing this round.
		if err := w.reset(ctx, pr.HeadSHA); err != nil {
			return nil, err
		}
		for _, f := range keep {
			out[f.ID] = agent.FindingOutcome{FindingID: f.ID, Status: agent.StatusBlocked, Reason: "fixes conflict in tests: " + lastLine(tail)}
		}
	}
	return out, nil
}

func (w *GitWorkspace) testCommand() []string {
	if len(w.TestCmd) > 0 {
		return w.TestCmd
	}
	return repo.Discover(w.worktree.Dir).Test
}

func (w *GitWorkspace) runTests(ctx context.Context, argv []string) (bool, string, error) {
	out, code, err := repo.RunCommand(ctx, w.worktree.Dir, argv, w.AgentEnv, 64<<10)
	if err != nil && code < 0 {
		return false, out, fmt.Errorf("run tests %s: %w", strings.Join(argv, " "), err)
	}
	return code == 0, out, nil
}

func appliedIDs(m map[string]agent.FindingOutcome) []string {
	var ids []string
	for id, o := range m {
		if o.Status == agent.StatusComplete {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	return ids
}

// bottomUp orders findings by file, then by descending line, so that an
// edit never shifts the lines of a later one in the same file.
func bottomUp(fs []Finding) []Finding {
	out := append([]Finding(nil), fs...)
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Path != out[j].Path {
			return out[i].Path < out[j].Path
		}
		return out[i].EndLine > out[j].EndLine
	})
	return out
}

func commitMessage(round int, fs []Finding, addressed []string) string {
	done := map[string]bool{}
	for _, id := range addressed {
		done[id] = true
	}
	var b strings.Builder
	fmt.Fprintf(&b, "converge: address review findings (round %d)\n\n", round)
	var threads []string
	for _, f := range fs {
		if !done[f.ID] {
			continue
		}
		fmt.Fprintf(&b, "- %s:%d %s\n", f.Path, f.EndLine, firstLine(f.Summary))
		if f.ThreadID != "" {
			threads = append(threads, f.ThreadID)
		}
	}
	fmt.Fprintf(&b, "\n%s: %s\n", CommitTrailer, strconv.Itoa(round))
	for _, id := range threads {
		fmt.Fprintf(&b, "%s: %s\n", AddressedTrailer, id)
	}
	return b.String()
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return truncate(s, 72)
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return truncate(strings.TrimSpace(lines[len(lines)-1]), 200)
}

func sanitize(host string) string { return strings.NewReplacer(":", "_", "/", "_").Replace(host) }
