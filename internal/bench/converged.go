package bench

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/convergeloop/converge/internal/emulator/fakehub"
	"github.com/convergeloop/converge/internal/engine"
	"github.com/convergeloop/converge/internal/forge"
	"github.com/convergeloop/converge/internal/prloop"
	"github.com/convergeloop/converge/internal/prloop/prlooptest"
	"github.com/convergeloop/converge/internal/review/copilot"
)

// ConvergedPR is what one PR cost from its start to a converged finish,
// converge's loop and the baseline on the same scenario, counted at the
// emulator for the author's token alone (the reviewer's and CI's
// requests are the scenario's, not the loop's).
type ConvergedPR struct {
	Side
	// Scenario says what both sides drove: reviews, fix rounds, threads.
	Scenario string `json:"scenario"`
	// Polls are the observations each side made: converge's loop steps
	// (each starts with one observation), and the baseline's polls (five
	// requests each), as many as converge's unless its script needed more.
	ConvergePolls int `json:"converge_polls"`
	BaselinePolls int `json:"baseline_polls"`
	// Finish is what the emulator shows on the PR at the end of each side:
	// its labels and the `converge` commit status of its head.
	ConvergeFinish string `json:"converge_finish"`
	BaselineFinish string `json:"baseline_finish"`
}

// The scenario, the same for both sides (convergedScript): the PR of
// world (one file, 60 changed lines, CI that passes) is reviewed by the
// emulator's scripted Copilot three times: 3 findings on the first head,
// 1 on the head that fixes them, none on the next. Each finding is a
// wording nit with a suggestion; the "agent" is no model but a script
// that rewords the flagged lines and pushes one commit per round
// (rewordAgent). So a converged PR is 3 review requests, 2 fix commits,
// 4 threads answered and resolved, CI green and a clean review on the
// last head, then the finishing label and status.
const convergedScenario = "3 Copilot reviews (3 findings, 1, none), 2 fix commits, 4 threads answered and resolved, CI green, ready label and status"

func convergedScript() fakehub.CopilotScript {
	finding := func(line int) fakehub.Finding {
		return fakehub.Finding{
			Path: "notes.txt", Anchor: fmt.Sprintf("line %d, changed", line),
			Body:       fmt.Sprintf("Typo: \"changed\" should read \"reworded\" on line %d.", line),
			Suggestion: rewordedLine(line),
		}
	}
	// Copilot answers in 50 ms, not minutes: the requests counted do not
	// depend on how long a review takes, only the polls between, which
	// both sides make as many of.
	const delay = 50 * time.Millisecond
	return fakehub.CopilotScript{Rounds: []fakehub.CopilotRound{
		{Findings: []fakehub.Finding{finding(1), finding(2), finding(3)}, Delay: delay},
		{Findings: []fakehub.Finding{finding(4)}, Delay: delay},
		{Delay: delay},
	}}
}

func rewordedLine(n int) string { return fmt.Sprintf("line %d, reworded\n", n) }

// rewordAgent is the scenario's no-op agent: it rewords the lines its
// findings flag and pushes notes.txt as one commit carrying the round
// trailer. The push goes through the emulator's seeding path, as a git
// push would (git is not an API request on either side).
type rewordAgent struct {
	hub         *fakehub.Hub
	owner, repo string
	branch      string

	mu    sync.Mutex
	fixed map[int]bool
}

func (a *rewordAgent) content() string {
	var b strings.Builder
	for i := 1; i <= worldLines; i++ {
		if a.fixed[i] {
			b.WriteString(rewordedLine(i))
		} else {
			fmt.Fprintf(&b, "line %d, changed\n", i)
		}
	}
	return b.String()
}

// fix rewords lines and pushes them as round's commit.
func (a *rewordAgent) fix(round int, lines []int) (string, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.fixed == nil {
		a.fixed = map[int]bool{}
	}
	for _, l := range lines {
		a.fixed[l] = true
	}
	msg := fmt.Sprintf("Reword %d line(s)\n\n%s: %d\n", len(lines), prloop.CommitTrailer, round)
	return a.hub.PushFiles(a.owner, a.repo, a.branch, map[string]string{"notes.txt": a.content()}, msg)
}

// benchWorkspace is converge's Workspace for the scenario: no clone, the
// rewordAgent as its fixer.
type benchWorkspace struct{ agent *rewordAgent }

func (benchWorkspace) Prepare(context.Context, *forge.PullRequest) (int, error) {
	return 2 * worldLines, nil
}

func (w benchWorkspace) Fix(_ context.Context, _ *forge.PullRequest, round int, fs []prloop.Finding) (prloop.FixResult, error) {
	var lines []int
	var ids []string
	for _, f := range fs {
		lines = append(lines, f.StartLine, f.EndLine)
		ids = append(ids, f.ID)
	}
	sha, err := w.agent.fix(round, lines)
	if err != nil {
		return prloop.FixResult{}, err
	}
	return prloop.FixResult{Round: round, Addressed: ids, TestsPassed: true, CommitSHA: sha, LinesChanged: 2 * len(fs)}, nil
}

func (benchWorkspace) LocalReview(context.Context, *forge.PullRequest, int) (prloop.LocalReviewResult, error) {
	return prloop.LocalReviewResult{}, fmt.Errorf("no local review in the benchmark")
}

// convergedPR drives the scenario to a converged finish twice, each on an
// emulator of its own: converge's PR loop with its GitHub client (the
// engine's runner, webhook-like wakes on every emulator event, the
// back-off as `converge pr`'s), then the baseline's script.
func convergedPR(ctx context.Context, dir string) (ConvergedPR, error) {
	out := ConvergedPR{Scenario: convergedScenario}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()

	w, err := newScenarioWorld(ctx, dir+"/converge")
	if err != nil {
		return out, err
	}
	defer w.close()
	c, polls, err := w.runConverge(ctx)
	if err != nil {
		return out, fmt.Errorf("converge: %w", err)
	}
	out.Converge, out.ConvergePolls = requests(c), polls
	if out.ConvergeFinish, err = w.finish(ctx); err != nil {
		return out, err
	}

	b, err := newScenarioWorld(ctx, dir+"/baseline")
	if err != nil {
		return out, err
	}
	defer b.close()
	c, bpolls, err := b.runBaseline(ctx, polls)
	if err != nil {
		return out, fmt.Errorf("baseline: %w", err)
	}
	out.Baseline, out.BaselinePolls = requests(c), bpolls
	if out.BaselineFinish, err = b.finish(ctx); err != nil {
		return out, err
	}
	return out, nil
}

type scenarioWorld struct {
	*world
	agent *rewordAgent
}

func newScenarioWorld(ctx context.Context, dir string) (*scenarioWorld, error) {
	w, err := newWorld(ctx, dir)
	if err != nil {
		return nil, err
	}
	if err := w.hub.SetCopilotScript(w.ref.Owner, w.ref.Repo, w.ref.Number, convergedScript()); err != nil {
		w.close()
		return nil, err
	}
	st, err := w.hub.PR(w.ref.Owner, w.ref.Repo, w.ref.Number)
	if err != nil {
		w.close()
		return nil, err
	}
	return &scenarioWorld{world: w, agent: &rewordAgent{hub: w.hub, owner: w.ref.Owner, repo: w.ref.Repo, branch: st.HeadRef}}, nil
}

// authorCounted runs fn and returns the requests the author's token made
// meanwhile: the loop's, not the reviewer's or CI's.
func (w *scenarioWorld) authorCounted(fn func() error) (fakehub.Counts, error) {
	before := w.hub.CountsFor(fakehub.LoginAuthor)
	err := fn()
	return w.hub.CountsFor(fakehub.LoginAuthor).Sub(before), err
}

// wakes is a wake channel the emulator signals on every event, as
// `converge serve`'s webhooks wake a loop.
func (w *scenarioWorld) wakes(ctx context.Context) <-chan struct{} {
	events, cancel := w.hub.Subscribe()
	wake := make(chan struct{}, 1)
	go func() {
		defer cancel()
		for {
			select {
			case <-ctx.Done():
				return
			case <-events:
				select {
				case wake <- struct{}{}:
				default:
				}
			}
		}
	}()
	return wake
}

// runConverge runs converge's PR loop from its start to its terminal,
// which must be two-stable.
func (w *scenarioWorld) runConverge(ctx context.Context) (fakehub.Counts, int, error) {
	var polls int
	c, err := w.authorCounted(func() error {
		self, err := w.client.Viewer(ctx)
		if err != nil {
			return err
		}
		cfg := prloop.DefaultConfig()
		cfg.Bot, cfg.Self = copilot.New(), self
		l := prloop.NewLoop(w.ref, prloop.Deps{
			Forge: w.client, Workspace: benchWorkspace{agent: w.agent}, Journal: &prlooptest.Journal{}, Config: cfg,
		})
		rctx, stop := context.WithCancel(ctx)
		defer stop()
		term, err := l.Run(rctx, prloop.State{Phase: prloop.PhaseStart}, engine.Options{
			// Woken at once by the emulator's events; the back-off is
			// only the fallback, short so a missed wake costs little.
			PollMin: 200 * time.Millisecond, PollMax: time.Second,
			Wake:   w.wakes(rctx),
			OnStep: func(any) { polls++ },
		})
		if err != nil {
			return err
		}
		if term.Reason != prloop.ReasonTwoStable {
			return fmt.Errorf("the loop ended %s, not two-stable: %s", term.Reason, term.Message)
		}
		return nil
	})
	return c, polls, err
}

// runBaseline drives the same scenario as the source documents' loop
// talks to GitHub, and returns its requests and polls. Its script:
//
//  1. poll (the PR, its line comments, its requested reviewers, its
//     events, its review threads: five requests, whatever changed);
//  2. request Copilot's review of the head (one GraphQL mutation, as
//     converge asks: GitHub ignores Copilot in a REST review request);
//  3. poll once the emulator says Copilot's review is in (as a webhook
//     would; between, it makes no request), and again at each such event
//     until Copilot is no longer requested;
//  4. no open thread: go to 6; else the same agent rewords the flagged
//     lines and pushes one commit, then each thread gets one REST reply
//     and one GraphQL resolve; back to 2;
//  5. (none)
//  6. wait for CI on the head, learnt from the emulator for free (the
//     baseline is given this, no request counted: it favours it), then
//     add the ready label (one REST request) and set the `converge`
//     status on the head (one REST request), as converge finishes;
//  7. poll until it has polled as often as converge's loop observed the
//     PR (polls): the baseline polls on every wake-up and every back-off
//     tick as converge does, so it makes as many polls over the same run;
//     when its script needed more, it keeps them.
func (w *scenarioWorld) runBaseline(ctx context.Context, polls int) (fakehub.Counts, int, error) {
	b := w.baseline
	n := 0
	events, cancel := w.hub.Subscribe()
	defer cancel()
	poll := func() (baselinePoll, error) {
		n++
		return b.poll(ctx, w.ref)
	}
	c, err := w.authorCounted(func() error {
		p, err := poll()
		if err != nil {
			return err
		}
		for round := 1; ; round++ {
			if round > 10 {
				return fmt.Errorf("no clean review after 10 rounds")
			}
			if err := b.requestCopilot(ctx, p.NodeID); err != nil {
				return err
			}
			for {
				if err := awaitReview(ctx, events); err != nil {
					return err
				}
				if p, err = poll(); err != nil {
					return err
				}
				if !p.CopilotRequested {
					break
				}
			}
			if len(p.Threads) == 0 {
				break
			}
			var lines []int
			for _, t := range p.Threads {
				lines = append(lines, p.CommentLine[t.CommentID])
			}
			if _, err := w.agent.fix(round, lines); err != nil {
				return err
			}
			if err := b.Answer(ctx, w.ref, p.Threads, "Reworded."); err != nil {
				return err
			}
			// The head moved: read it before asking for the next review.
			if p, err = poll(); err != nil {
				return err
			}
		}
		if concl, err := w.hub.WaitCI(ctx, w.ref.Owner, w.ref.Repo, p.Head); err != nil {
			return err
		} else if concl != "success" {
			return fmt.Errorf("CI on %s: %s", p.Head, concl)
		}
		if err := b.finish(ctx, w.ref, p.Head); err != nil {
			return err
		}
		for n < polls {
			if _, err := poll(); err != nil {
				return err
			}
		}
		return nil
	})
	return c, n, err
}

// awaitReview waits for the emulator's word that a review landed.
func awaitReview(ctx context.Context, events <-chan fakehub.Event) error {
	for {
		select {
		case ev := <-events:
			if ev.Kind == "review" || ev.Kind == "copilot_finished" {
				return nil
			}
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// finish reads, at the emulator, how the PR ended: converged is the ready
// label on it and a successful `converge` status on its head.
func (w *scenarioWorld) finish(ctx context.Context) (string, error) {
	st, err := w.hub.PR(w.ref.Owner, w.ref.Repo, w.ref.Number)
	if err != nil {
		return "", err
	}
	sts, err := w.hub.Statuses(w.ref.Owner, w.ref.Repo, st.HeadSHA)
	if err != nil {
		return "", err
	}
	status := "none"
	for _, s := range sts {
		if s.Context == prloop.StatusContext {
			status = s.State
		}
	}
	labels := slices.Clone(st.Labels)
	slices.Sort(labels)
	return fmt.Sprintf("labels [%s], converge status %s", strings.Join(labels, " "), status), nil
}

// converged reports whether finish describes a converged PR.
func converged(finish string) bool {
	return strings.Contains(finish, prloop.LabelReady) && strings.HasSuffix(finish, "converge status success")
}

// baselinePoll is what the baseline reads in one poll.
type baselinePoll struct {
	Head             string
	NodeID           string
	CopilotRequested bool
	Threads          []threadRef
	CommentLine      map[int64]int // a line comment's database id → its line
}

// poll is Observe, keeping what the baseline's script needs.
func (b *Baseline) poll(ctx context.Context, ref forge.PRRef) (baselinePoll, error) {
	base := fmt.Sprintf("%s/repos/%s/%s", b.APIURL, ref.Owner, ref.Repo)
	var p baselinePoll
	var pr struct {
		NodeID string `json:"node_id"`
		Head   struct {
			SHA string `json:"sha"`
		} `json:"head"`
	}
	if err := b.do(ctx, http.MethodGet, fmt.Sprintf("%s/pulls/%d", base, ref.Number), nil, &pr); err != nil {
		return p, err
	}
	p.Head, p.NodeID = pr.Head.SHA, pr.NodeID
	var comments []struct {
		ID   int64 `json:"id"`
		Line int   `json:"line"`
	}
	if err := b.do(ctx, http.MethodGet, fmt.Sprintf("%s/pulls/%d/comments?per_page=100", base, ref.Number), nil, &comments); err != nil {
		return p, err
	}
	p.CommentLine = map[int64]int{}
	for _, c := range comments {
		p.CommentLine[c.ID] = c.Line
	}
	var requested struct {
		Users []struct {
			Login string `json:"login"`
		} `json:"users"`
	}
	if err := b.do(ctx, http.MethodGet, fmt.Sprintf("%s/pulls/%d/requested_reviewers", base, ref.Number), nil, &requested); err != nil {
		return p, err
	}
	for _, u := range requested.Users {
		if strings.HasPrefix(strings.ToLower(u.Login), "copilot") {
			p.CopilotRequested = true
		}
	}
	if err := b.do(ctx, http.MethodGet, fmt.Sprintf("%s/issues/%d/events?per_page=100", base, ref.Number), nil, nil); err != nil {
		return p, err
	}
	ts, err := b.threads(ctx, ref)
	p.Threads = ts
	return p, err
}

const baselineRequestReview = `mutation Request($input: RequestReviewsByLoginInput!) { requestReviewsByLogin(input: $input) { clientMutationId } }`

// requestCopilot asks for Copilot's review of the PR with node id prID.
func (b *Baseline) requestCopilot(ctx context.Context, prID string) error {
	in := map[string]any{"pullRequestId": prID, "union": true, "botLogins": []string{fakehub.LoginCopilot}}
	return b.do(ctx, http.MethodPost, b.GQLURL, map[string]any{"query": baselineRequestReview, "variables": map[string]any{"input": in}}, nil)
}

// finish puts the ready label on the PR and a successful `converge`
// status on head: one request each.
func (b *Baseline) finish(ctx context.Context, ref forge.PRRef, head string) error {
	base := fmt.Sprintf("%s/repos/%s/%s", b.APIURL, ref.Owner, ref.Repo)
	if err := b.do(ctx, http.MethodPost, fmt.Sprintf("%s/issues/%d/labels", base, ref.Number), map[string]any{"labels": []string{prloop.LabelReady}}, nil); err != nil {
		return err
	}
	return b.do(ctx, http.MethodPost, fmt.Sprintf("%s/statuses/%s", base, head), map[string]any{"state": "success", "context": prloop.StatusContext, "description": "two-stable"}, nil)
}
