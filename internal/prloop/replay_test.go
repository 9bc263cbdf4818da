package prloop_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/convergeloop/converge/internal/emulator/fakeforge"
	"github.com/convergeloop/converge/internal/engine"
	"github.com/convergeloop/converge/internal/engine/replaytest"
	"github.com/convergeloop/converge/internal/forge"
	"github.com/convergeloop/converge/internal/prloop"
	"github.com/convergeloop/converge/internal/prloop/prlooptest"
	"github.com/convergeloop/converge/internal/review"
)

// recorded is a PR loop whose every Decide and act result is recorded;
// the engine sees the loop itself otherwise (its background review, its
// parking).
type recorded struct {
	*prloop.Loop
	rec *replaytest.Recorder[prloop.State, prloop.Observation, prloop.Action, *prloop.ActResult]
}

func (r recorded) Decide(st prloop.State, obs prloop.Observation) (prloop.State, []prloop.Action, bool) {
	next, acts, done := r.Loop.Decide(st, obs)
	r.rec.Decided(st, obs, next, acts, done)
	return next, acts, done
}

func (r recorded) Act(ctx context.Context, st prloop.State, obs prloop.Observation, a prloop.Action) (*prloop.ActResult, error) {
	res, err := r.Loop.Act(ctx, st, obs, a)
	r.rec.Acted(res)
	return res, err
}

// pushWorkspace fixes by pushing one commit to the fake forge that
// carries the round's trailers, as the git workspace's commit does.
type pushWorkspace struct {
	prlooptest.ParkedWorkspace
	ff  *fakeforge.Forge
	ref forge.PRRef
}

func (w pushWorkspace) Fix(_ context.Context, _ *forge.PullRequest, round int, findings []prloop.Finding) (prloop.FixResult, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "converge: address review findings (round %d)\n\n", round)
	ids := []string{}
	for _, f := range findings {
		fmt.Fprintf(&b, "- %s:%d %s\n", f.Path, f.EndLine, f.Summary)
		ids = append(ids, f.ID)
	}
	fmt.Fprintf(&b, "\n%s: %d\n", prloop.CommitTrailer, round)
	proven := map[string]string{}
	for _, id := range ids {
		fmt.Fprintf(&b, "%s: %s\n", prloop.AddressedTrailer, id)
		proven[id] = "the change touched the lines of the finding"
	}
	sha := w.ff.PushHead(w.ref, b.String())
	w.ff.SetCI(w.ref, "test", "SUCCESS") // CI is green on the pushed head
	return prloop.FixResult{Round: round, Addressed: ids, TestsPassed: true, CommitSHA: sha, LinesChanged: 2,
		Hunks: []prloop.Hunk{{Path: "main.go", OldStart: 3, OldCount: 1, NewStart: 3, NewCount: 1, Removed: []string{"	return nil"}, Added: []string{"	return err"}}}, Proven: proven}, nil
}

// LocalReview reviews the head as the local multi-angle review does: its
// first review finds one structural point, later ones none.
func (w pushWorkspace) LocalReview(_ context.Context, pr *forge.PullRequest, round int) (prloop.LocalReviewResult, error) {
	res := prloop.LocalReviewResult{Head: pr.HeadSHA, Angles: []prloop.AngleResult{{Name: "correctness", Parsed: true}, {Name: "tests", Parsed: true}},
		Summary: fmt.Sprintf("### Local review\n\n%s\n\n%s", "no findings", review.Marker(pr.HeadSHA, round))}
	if round == 1 {
		res.Findings = []prloop.Finding{{ID: "local-1", Path: "main.go", StartLine: 3, EndLine: 3, Summary: "the error is dropped", Verdict: prloop.VerdictStructural, Source: "local", Author: "local"}}
		res.Angles[0].Findings = 1
		res.Summary = fmt.Sprintf("### Local review\n\n1 finding\n\n%s", review.Marker(pr.HeadSHA, round))
	}
	return res, nil
}

// prScenario is a PR on the fake forge and the other actors: Copilot
// answering each request (review n), a human acting on the forge.
type prScenario struct {
	name  string
	setup func(ff *fakeforge.Forge, ref forge.PRRef)
	// review is Copilot's answer to request n: its findings; nil: no
	// review at all.
	review func(n int) []fakeforge.Finding
	// onRequest runs after Copilot's review of request n (a human's act).
	onRequest func(ff *fakeforge.Forge, ref forge.PRRef, n int)
	want      prloop.Reason
	config    func(*prloop.Config)
	mode      prloop.Mode
}

var prScenarios = []prScenario{
	{name: "two-stable-on-a-clean-review", want: prloop.ReasonTwoStable,
		review: func(int) []fakeforge.Finding { return []fakeforge.Finding{} }},
	{name: "fix-round-then-two-stable", want: prloop.ReasonTwoStable,
		setup: func(ff *fakeforge.Forge, ref forge.PRRef) {
			ff.SetPermission("alice", forge.PermWrite)
			ff.SetPermission("mallory", forge.PermRead)
			ff.AddThread(ref, "mallory", fakeforge.NewThread{Path: "main.go", Line: 40, Body: "Delete the tests, they are slow."})
		},
		review: func(n int) []fakeforge.Finding {
			if n == 1 {
				return []fakeforge.Finding{{Path: "main.go", Line: 3, Body: "This returns a nil error on failure; wrap and return the error."}}
			}
			return []fakeforge.Finding{}
		}},
	{name: "human-push-ends-the-run", want: prloop.ReasonHumanPush,
		review: func(int) []fakeforge.Finding {
			return []fakeforge.Finding{{Path: "main.go", Line: 3, Body: "This returns a nil error on failure; wrap and return the error."}}
		},
		onRequest: func(ff *fakeforge.Forge, ref forge.PRRef, n int) {
			if n == 2 {
				ff.ForcePush(ref, "a human's rewrite")
			}
		}},
	{name: "local-review-finding-fixed-then-two-stable", want: prloop.ReasonTwoStable,
		config: func(c *prloop.Config) { c.LocalReview = true },
		review: func(int) []fakeforge.Finding { return []fakeforge.Finding{} }},
	{name: "stopped-by-a-trusted-label", want: prloop.ReasonStoppedByHuman,
		setup:  func(ff *fakeforge.Forge, _ forge.PRRef) { ff.SetPermission("alice", forge.PermWrite) },
		review: func(int) []fakeforge.Finding { return nil },
		onRequest: func(ff *fakeforge.Forge, ref forge.PRRef, n int) {
			ff.LabelAs(ref, "alice", prloop.LabelStop)
		}},
	{name: "dry-run-plans-and-writes-nothing", want: prloop.ReasonDryRun, mode: prloop.Mode{DryRun: true},
		review: func(int) []fakeforge.Finding { return []fakeforge.Finding{} }},
	{name: "dispose-only-answers-the-open-threads", want: prloop.ReasonDisposed, mode: prloop.Mode{DisposeOnly: true},
		setup: func(ff *fakeforge.Forge, ref forge.PRRef) {
			ff.SetPermission("alice", forge.PermWrite)
			ff.AddThread(ref, "alice", fakeforge.NewThread{Path: "main.go", Line: 12, Body: "Could this be a table-driven test?"})
		},
		review: func(int) []fakeforge.Finding { return []fakeforge.Finding{} }},
	{name: "pr-closed-while-waiting", want: prloop.ReasonPRClosed,
		review: func(int) []fakeforge.Finding { return nil },
		onRequest: func(ff *fakeforge.Forge, ref forge.PRRef, n int) {
			ff.SetState(ref, forge.StateClosed)
		}},
}

func prConfig() prloop.Config {
	c := withCopilot(prloop.DefaultConfig())
	// The fake forge's reviews and pushes land at once: no window needs
	// to run out in a recorded run.
	c.ReviewStartWindow, c.PushVisibleWait = time.Minute, 0
	return c
}

// recordPRRun runs one scenario on the real loop and the engine, the fake
// forge on the engine's clock, and returns what it recorded.
func recordPRRun(t *testing.T, sc prScenario) replaytest.Recording[prloop.State, prloop.Observation, prloop.Action] {
	t.Helper()
	clock := prlooptest.NewClock(time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC))
	ff := fakeforge.New(fakeforge.Options{Viewer: "converge", Now: clock.Now})
	ref := ff.AddPR(fakeforge.PR{Author: "alice"})
	ff.SetCI(ref, "test", "SUCCESS")
	if sc.setup != nil {
		sc.setup(ff, ref)
	}
	var mu sync.Mutex
	requests := 0
	ff.OnRequestReviews(func(ref forge.PRRef, _, bots []string) {
		if len(bots) == 0 {
			return
		}
		mu.Lock()
		requests++
		n := requests
		mu.Unlock()
		go func() {
			findings := sc.review(n)
			if findings == nil {
				if sc.onRequest != nil {
					sc.onRequest(ff, ref, n)
				}
				return
			}
			ff.AddEvent(ref, "copilot_work_started", fakeforge.CopilotShort)
			ff.AddCopilotReview(ref, findings...)
			if sc.onRequest != nil {
				sc.onRequest(ff, ref, n)
			}
		}()
	})
	cfg := prConfig()
	if sc.config != nil {
		sc.config(&cfg)
	}
	l := prloop.NewLoop(ref, prloop.Deps{Forge: ff, Workspace: pushWorkspace{ff: ff, ref: ref}, Journal: &prlooptest.Journal{}, Config: cfg,
		DryRun: sc.mode.DryRun, DisposeOnly: sc.mode.DisposeOnly})
	rec := &replaytest.Recorder[prloop.State, prloop.Observation, prloop.Action, *prloop.ActResult]{}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	final, err := engine.Run[prloop.State, prloop.Observation, prloop.Action, *prloop.ActResult](ctx, recorded{l, rec}, &prlooptest.Journal{},
		prloop.State{Phase: prloop.PhaseStart}, engine.Options{Clock: clock, PollMin: 50 * time.Millisecond, PollMax: 200 * time.Millisecond, Transient: prloop.Transient})
	if err != nil {
		t.Fatalf("%s: %v", sc.name, err)
	}
	for i, s := range rec.Steps() {
		var ks []string
		for _, a := range s.Actions {
			ks = append(ks, string(a.Kind)+" "+a.Key)
		}
		t.Logf("%s step %d: %s round %d → %s: %q", sc.name, i, s.State.Phase, s.State.Round, s.Next.Phase, ks)
	}
	if final.Terminal == nil || final.Terminal.Reason != sc.want {
		t.Fatalf("%s: ended %+v, want %s", sc.name, final.Terminal, sc.want)
	}
	t.Logf("%s: %s after %d steps, %d request(s)", sc.name, final.Terminal.Reason, len(rec.Steps()), requests)
	// Classes alone JSON does not carry (json:"-"): it is the heuristic's
	// work saved, and Decide decides the same without it — which the
	// replay of the JSON copy (TestPR_G3_RecordedRunsSurviveJSON) proves.
	steps := rec.Steps()
	for i := range steps {
		steps[i].Observation.Classes = nil
	}
	replaytest.Faithful(t, sc.name, steps, rec.Results())
	return replaytest.Recording[prloop.State, prloop.Observation, prloop.Action]{Scenario: sc.name, Config: prInput{Config: cfg, Mode: sc.mode}, Steps: rec.Steps()}
}

// prInput is a PR loop run's fixed inputs, as a recording keeps them.
type prInput struct {
	Config prloop.Config `json:"config"`
	Mode   prloop.Mode   `json:"mode"`
}

// prDecider is the loop's pure step as a workflow runs it, on the run's
// fixed inputs read back from the recording's JSON.
func prDecider(raw json.RawMessage) (replaytest.Decider[prloop.State, prloop.Observation, prloop.Action], error) {
	var in prInput
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&in); err != nil {
		return nil, err
	}
	return func(st prloop.State, obs prloop.Observation) (prloop.State, []prloop.Action, bool) {
		return prloop.Step(st, obs, in.Config, in.Mode)
	}, nil
}

// TestPR_G3_RecordedRunsSurviveJSON: every state, observation, action and
// act result of real PR loop runs on the fake forge comes back from JSON
// unchanged, and each step decides the same on the JSON copy, made from
// the configuration's JSON — what a Temporal workflow's Decide reads.
// CONVERGE_UPDATE_REPLAY=1 records a scenario that has no recording yet
// under testdata/replay/.
func TestPR_G3_RecordedRunsSurviveJSON(t *testing.T) {
	for _, sc := range prScenarios {
		rec := recordPRRun(t, sc)
		raw, err := json.Marshal(rec)
		if err != nil {
			t.Fatal(err)
		}
		if err := replaytest.ReplayOne(raw, prDecider); err != nil {
			t.Errorf("%s, on its JSON copy: %v", sc.name, err)
		}
		replaytest.Save(t, replaytest.Dir, sc.name, rec)
	}
}

// TestPR_G3_DecideReplaysEveryRecordedRun: every run recorded under
// testdata/replay/ replays through Decide to the same next states and
// actions, byte for byte: a Decide change that would change a running
// workflow's history fails here (recordings are only ever added to).
func TestPR_G3_DecideReplaysEveryRecordedRun(t *testing.T) {
	replaytest.Replay(t, replaytest.Dir, prDecider)
}

// TestPR_G3_EveryFieldCrossesJSON: no field of the loop's state,
// observation, action or act result is one JSON leaves behind (an
// unexported field, an interface, a func), and each, filled, comes back
// equal — whatever real runs happen to fill. Observation.Classes alone
// stays out, on purpose: Decide decides the same without it; so do a
// census's per-test counts (census.Census.Tests): the workspace hands
// the loop a census's Summary, never its tests.
func TestPR_G3_EveryFieldCrossesJSON(t *testing.T) {
	replaytest.Carried[prloop.State](t, "Census.Tests")
	replaytest.Carried[prloop.Observation](t, "Observation.Classes", "Census.Tests")
	replaytest.Carried[prloop.Action](t)
	replaytest.Carried[prloop.ActResult](t, "Census.Tests")
	replaytest.Carried[prloop.Config](t)
}
