package kinds_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/convergeloop/converge/internal/emulator/fakeforge"
	"github.com/convergeloop/converge/internal/engine"
	"github.com/convergeloop/converge/internal/exitcode"
	"github.com/convergeloop/converge/internal/forge"
	"github.com/convergeloop/converge/internal/prloop"
	"github.com/convergeloop/converge/internal/prloop/prlooptest"
	"github.com/convergeloop/converge/internal/recap"
	"github.com/convergeloop/converge/internal/review/copilot"
	"github.com/convergeloop/converge/internal/temporal"
	"github.com/convergeloop/converge/internal/temporal/kinds"
	"github.com/convergeloop/converge/internal/text"
)

// One scenario table, two engines (issue 19, item 5): each row is a PR
// loop's world — a fake forge, the actors on it, a fake workspace — built
// by the same function for the local engine (engine.Run on a clock that
// jumps its waits) and for the Temporal workflow (the SDK's test
// environment, time skipping) — once in one run, once continuing as new
// after every step on a new worker each time, so everything the workflow
// must carry between steps is carried. Each row must end with the same
// terminal, exit code and proof on every engine, having made the same
// writes at its forge.
//
// Compared: the whole terminal — reason, exit code, message, proof,
// usage — as JSON, with each id the forge made (commit SHAs, short or
// whole, review, thread and comment ids) renamed by its place at the
// forge, and without the proof's reviewed_at: that is the forge's clock
// when the reviewer answered, which is each engine's own clock (the
// Temporal test environment moves on a lost activity's retry back-off).
// The writes are counted at the fake forge: its write calls by kind,
// each thread's replies by converge and resolution, the labels, converge's
// comments, the commits, converge's verdict on the head, the PR's state,
// and when converge made each write, in the forge's order, to the minute
// of the engine's clock (both engines wait alike). Not compared: how
// often the forge was read — the Temporal act activity holds a local
// review until it ends, where the local engine polls beside it.
//
// The actors are synchronous: the reviewer answers inside the review
// request, the fixer pushes inside the fix, a crash happens inside a forge
// call. Nothing races either engine's clock, so each row runs the same
// way every time on each engine.

// t0 is where both engines' clocks start.
var t0 = time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)

// The findings the rows' reviewers raise: each names a defect, so each is
// structural and the round fixes it.
var (
	finding1 = fakeforge.Finding{Path: "main.go", Line: 12, Body: "This can panic on a nil map; check the lookup before use."}
	finding2 = fakeforge.Finding{Path: "store.go", Line: 40, Body: "This drops the error returned by Close; the write can be lost."}
)

// scenario is one row of the table.
type scenario struct {
	id   string        // the SPEC id it proves, and what happens
	want prloop.Reason // its terminal on both engines
	// world adds the row's actors to a new world (before the run).
	world func(w *world)
	// check asserts what the row is about at its forge, once per engine.
	check func(t *testing.T, w *world)
	// The run's modes (PR-M1, PR-M2), part of its setup on Temporal.
	dryRun, disposeOnly bool
	// localReview turns on the local multi-angle review (PR-S4), which
	// runs beside the forge poll: background work on both engines.
	localReview bool
	// config changes the row's settings from the defaults.
	config func(c *prloop.Config)
}

// world is one row's forge, actors and workspace, for one engine.
type world struct {
	ff  *fakeforge.Forge
	ref forge.PRRef
	// reviews[i] answers the (i+1)th review request; a request past the
	// script gets a clean review.
	reviews  []func(w *world)
	requests int
	// silent: a request past the script gets no review at all.
	silent bool
	// blocked are the findings (by body) the fixer cannot address.
	blocked map[string]string
	// crashOn is a forge operation whose crashAt'th call (default the
	// first) dies before it writes (a panic: the process, or on Temporal
	// the activity's worker, is lost); "fix" dies right after the fix's
	// push, "request" right after the review request landed and the
	// reviewer answered.
	crashOn string
	crashAt int
	crashes map[string]int
	crashed bool
	// lagOn is a forge operation whose first call the next observation
	// does not show yet: it reads the PR as it was before the call (a
	// read that lags a write, as GitHub's can).
	lagOn  string
	stale  *forge.PullRequest
	lagged bool
	// batch makes the forge a forge.ThreadBatcher, as GitHub is: a
	// step's replies go in one request, its resolves in one more.
	batch          bool
	replyBatches   int
	resolveBatches int
	// outage is how many observations, from the (outageAfter+1)th on,
	// the forge is unreachable for (REL-1).
	outage, outageAfter int
	observes            int
	// fixErr fails every fix with it.
	fixErr error
	fixes  int
	recaps int
	// reviewed are the heads the local review ran on.
	reviewed []string
}

// crash is the panic a crashing forge call raises.
type crash struct{ op string }

func (c crash) String() string { return "crash in " + c.op }

// newWorld builds a row's world on an engine's clock: the same function
// for both engines.
func newWorld(row scenario, now func() time.Time) *world {
	var mu sync.Mutex
	var last time.Time
	ff := fakeforge.New(fakeforge.Options{Viewer: "converge", Now: func() time.Time {
		// The engine's time, strictly increasing: two writes in one step
		// are still ordered at the forge.
		mu.Lock()
		defer mu.Unlock()
		t := now()
		if !t.After(last) {
			t = last.Add(time.Millisecond)
		}
		last = t
		return t
	}})
	w := &world{ff: ff, blocked: map[string]string{}, crashes: map[string]int{}}
	w.ref = ff.AddPR(fakeforge.PR{Author: "alice", Title: "Add the cache", Body: "A cache in front of the store."})
	ff.SetPermission("alice", forge.PermWrite)
	ff.SetCI(w.ref, "test", "SUCCESS")
	ff.OnRequestReviews(func(ref forge.PRRef, _, bots []string) {
		if len(bots) == 0 {
			return
		}
		w.requests++
		defer w.crash("request")
		if i := w.requests - 1; i < len(w.reviews) {
			w.reviews[i](w)
			return
		}
		if !w.silent {
			w.review()
		}
	})
	ff.SetFault(func(op string) error {
		if op == w.lagOn && !w.lagged {
			w.lagged, w.stale = true, w.ff.PR(w.ref)
		}
		if op == "observe pr" {
			w.observes++
			if w.observes > w.outageAfter && w.observes <= w.outageAfter+w.outage {
				return &forge.Error{Kind: forge.KindUnreachable, Op: op, Msg: "502 Bad Gateway"}
			}
		}
		w.crash(op)
		return nil
	})
	if row.world != nil {
		row.world(w)
	}
	return w
}

// crash dies at the row's crash point, once.
func (w *world) crash(op string) {
	if op != w.crashOn || w.crashed {
		return
	}
	w.crashes[op]++
	if w.crashes[op] == max(w.crashAt, 1) {
		w.crashed = true
		panic(crash{op})
	}
}

// lagging is the row's forge as its loop sees it: the fake forge, whose
// next observation after a lagOn write shows the PR from before it.
type lagging struct {
	*fakeforge.Forge
	w *world
}

func (f lagging) Observe(ctx context.Context, ref forge.PRRef) (*forge.PullRequest, error) {
	pr, err := f.Forge.Observe(ctx, ref)
	if err != nil || f.w.stale == nil {
		return pr, err
	}
	stale := f.w.stale
	f.w.stale = nil
	stale.ObservedAt, stale.Requests = pr.ObservedAt, pr.Requests
	return stale, nil
}

// forge is the row's forge for a loop.
func (w *world) forge() forge.Forge {
	if w.batch {
		return batching{lagging{Forge: w.ff, w: w}}
	}
	return lagging{Forge: w.ff, w: w}
}

// batching is a forge that batches thread writes (forge.ThreadBatcher):
// each batch is counted, and its items are the fake forge's own calls.
type batching struct{ lagging }

func (f batching) ReplyToThreads(ctx context.Context, ref forge.PRRef, replies []forge.ThreadReply) []forge.ThreadReplyResult {
	f.w.replyBatches++
	out := make([]forge.ThreadReplyResult, len(replies))
	for i, r := range replies {
		out[i].Comment, out[i].Err = f.ReplyToThread(ctx, ref, r.ThreadID, r.Body)
	}
	return out
}

func (f batching) ResolveThreads(ctx context.Context, ref forge.PRRef, ids []string) []error {
	f.w.resolveBatches++
	out := make([]error, len(ids))
	for i, id := range ids {
		out[i] = f.ResolveThread(ctx, ref, id)
	}
	return out
}

// review is Copilot starting and submitting its review of the head with
// the findings (none: a clean review).
func (w *world) review(findings ...fakeforge.Finding) {
	w.ff.AddEvent(w.ref, "copilot_work_started", fakeforge.CopilotShort)
	w.ff.AddCopilotReview(w.ref, findings...)
}

// reviewWith is a review script's step.
func reviewWith(findings ...fakeforge.Finding) func(w *world) {
	return func(w *world) { w.review(findings...) }
}

// thread is the thread whose first comment is body; the zero Thread
// when the forge has none.
func (w *world) thread(body string) forge.Thread {
	for _, th := range w.ff.PR(w.ref).Threads {
		if len(th.Comments) > 0 && th.Comments[0].Body == body {
			return th
		}
	}
	return forge.Thread{}
}

// converges counts converge's comments in a thread.
func (w *world) converges(th forge.Thread) int {
	n := 0
	for _, c := range th.Comments {
		if c.Author == "converge" {
			n++
		}
	}
	return n
}

// workspace is the fake workspace both engines' loops share in a row: a
// fix pushes one commit with the loop's trailers and turns CI green on
// it; the recap judge says CONTINUE.
type workspace struct {
	prlooptest.ParkedWorkspace
	w *world
}

func (ws workspace) Fix(_ context.Context, pr *forge.PullRequest, round int, findings []prloop.Finding) (prloop.FixResult, error) {
	w := ws.w
	w.fixes++
	if w.fixErr != nil {
		return prloop.FixResult{}, w.fixErr
	}
	res := prloop.FixResult{Round: round, TestsPassed: true}
	var trailers []string
	for _, f := range findings {
		if why, ok := w.blocked[f.Summary]; ok {
			res.Blocked = append(res.Blocked, prloop.BlockedFinding{ID: f.ID, Reason: why})
			continue
		}
		res.Addressed = append(res.Addressed, f.ID)
		trailers = append(trailers, prloop.AddressedTrailer+": "+f.ID)
	}
	if len(res.Addressed) == 0 {
		return res, nil
	}
	msg := fmt.Sprintf("converge: address review findings (round %d)\n\n%s: %d\n%s\n", round, prloop.CommitTrailer, round, strings.Join(trailers, "\n"))
	res.CommitSHA = w.ff.PushHead(pr.Ref, msg)
	res.LinesChanged = 4 * len(res.Addressed)
	w.ff.SetCI(pr.Ref, "test", "SUCCESS")
	w.crash("fix")
	return res, nil
}

func (ws workspace) LocalReview(_ context.Context, pr *forge.PullRequest, round int) (prloop.LocalReviewResult, error) {
	ws.w.reviewed = append(ws.w.reviewed, pr.HeadSHA)
	return prloop.LocalReviewResult{
		Head:    pr.HeadSHA,
		Angles:  []prloop.AngleResult{{Name: "correctness", Parsed: true}, {Name: "tests", Parsed: true}},
		Summary: fmt.Sprintf("### Local review\n\nNo findings.\n\n<!-- converge:local-review head=%s round=%d -->", pr.HeadSHA, round),
	}, nil
}

func (ws workspace) Recap(context.Context, recap.Input) (recap.Verdict, error) {
	ws.w.recaps++
	return recap.Verdict{Decision: recap.Continue, Reason: "every round kept to the PR's scope", Valid: true}, nil
}

func (workspace) Revert(context.Context, *forge.PullRequest, int, []string, []int) (prloop.FixResult, error) {
	return prloop.FixResult{}, errors.New("no revert expected")
}

var _ prloop.Recapper = workspace{}

func scenarioConfig(row scenario) prloop.Config {
	c := prloop.DefaultConfig()
	c.Bot = copilot.New()
	c.LocalReview = row.localReview
	if row.config != nil {
		row.config(&c)
	}
	return c
}

// The engines' knobs, the same on both.
const (
	pollMin     = time.Minute
	pollMax     = 10 * time.Minute
	faultBudget = 10 * time.Minute
)

var scenarios = []scenario{
	{
		id: "PR-T1_two-stable", want: prloop.ReasonTwoStable,
		world: func(w *world) { w.reviews = []func(*world){reviewWith(finding1)} },
		check: func(t *testing.T, w *world) {
			th := w.thread(finding1.Body)
			if !th.IsResolved || w.converges(th) != 1 {
				t.Errorf("the finding's thread: resolved %v, %d replies; want resolved with one reply", th.IsResolved, w.converges(th))
			}
		},
	},
	{
		// A human pushes while round 2's review is asked for: yield.
		id: "PR-T4_human-push", want: prloop.ReasonHumanPush,
		world: func(w *world) {
			w.reviews = []func(*world){reviewWith(finding1), func(w *world) {
				w.ff.PushHead(w.ref, "tweak the cache size")
			}}
		},
	},
	{
		// Alice answers in the thread converge resolved: the thread is
		// taken up again and answered once more (PR-V6, PR-S12).
		id: "PR-V6_reopened-thread", want: prloop.ReasonTwoStable,
		world: func(w *world) {
			w.reviews = []func(*world){reviewWith(finding1), func(w *world) {
				th := w.thread(finding1.Body)
				if th.ID == "" {
					return // no thread to answer in: the row fails on its terminal
				}
				w.ff.AddReply(th.ID, "alice", "This still panics when the map is empty; please handle that too.")
				w.review()
			}}
		},
		check: func(t *testing.T, w *world) {
			th := w.thread(finding1.Body)
			if w.converges(th) != 2 || !th.IsResolved || w.ff.Calls("unresolve thread") != 1 {
				t.Errorf("the reopened thread: %d replies by converge, resolved %v, reopened by converge %d time(s); want 2 replies, resolved, reopened once",
					w.converges(th), th.IsResolved, w.ff.Calls("unresolve thread"))
			}
		},
	},
	{
		id: "PR-T7_pr-closed", want: prloop.ReasonPRClosed,
		world: func(w *world) {
			w.reviews = []func(*world){reviewWith(finding1), func(w *world) {
				w.ff.SetState(w.ref, forge.StateClosed)
			}}
		},
	},
	{
		id: "PR-T7_base-moved", want: prloop.ReasonBaseMoved,
		world: func(w *world) {
			w.reviews = []func(*world){reviewWith(finding1), func(w *world) {
				w.ff.SetMergeState(w.ref, forge.MergeableConflicting, forge.MergeDirty)
				w.review()
			}}
		},
	},
	{
		// The fixer cannot address one of two findings: escalated, open.
		id: "PR-T11_hand-off", want: prloop.ReasonHandedOff,
		world: func(w *world) {
			w.reviews = []func(*world){reviewWith(finding1, finding2)}
			w.blocked[finding2.Body] = "the fix needs a decision on the store's API"
		},
		check: func(t *testing.T, w *world) {
			if th := w.thread(finding2.Body); th.IsResolved || w.converges(th) != 1 {
				t.Errorf("the escalated thread: resolved %v, %d replies; want open with one reply", th.IsResolved, w.converges(th))
			}
		},
	},
	{
		// The run dies after the reply landed, before the resolve: on
		// resume (locally) or on the act's retry (Temporal) the world is
		// observed again, and the reply is not made twice.
		id: "REL-2_crash-between-reply-and-resolve", want: prloop.ReasonTwoStable,
		world: func(w *world) {
			w.reviews = []func(*world){reviewWith(finding1)}
			w.crashOn = "resolve thread"
		},
		check: func(t *testing.T, w *world) {
			th := w.thread(finding1.Body)
			if !w.crashed || !th.IsResolved || w.converges(th) != 1 {
				t.Errorf("crashed %v; the thread: resolved %v, %d replies; want resolved with one reply", w.crashed, th.IsResolved, w.converges(th))
			}
		},
	},
	{
		// The run dies after the fix was pushed, before its result
		// reached the loop: the next observation finds the loop's commit
		// with its Converge-Addressed trailers, and the threads are
		// answered "addressed" without a second fix.
		id: "REL-2_crash-between-push-and-reply", want: prloop.ReasonTwoStable,
		world: func(w *world) {
			w.reviews = []func(*world){reviewWith(finding1)}
			w.crashOn = "fix"
		},
		check: func(t *testing.T, w *world) {
			th := w.thread(finding1.Body)
			if !w.crashed || w.fixes != 1 || !th.IsResolved || w.converges(th) != 1 {
				t.Errorf("crashed %v; %d fixes; the thread: resolved %v, %d replies; want one fix, resolved with one reply", w.crashed, w.fixes, th.IsResolved, w.converges(th))
			}
		},
	},
	{
		// The run dies after round 2's review request landed and the
		// reviewer answered: the request is not made twice.
		id: "REL-2_crash-after-review-request", want: prloop.ReasonTwoStable,
		world: func(w *world) {
			w.reviews = []func(*world){reviewWith(finding1)}
			w.crashOn, w.crashAt = "request", 2
		},
		check: func(t *testing.T, w *world) {
			if !w.crashed || w.requests != 2 {
				t.Errorf("crashed %v; %d review requests, want 2", w.crashed, w.requests)
			}
		},
	},
	{
		// The run dies in its two-stable terminal's writes, after the
		// label, before converge's verdict on the head: the verdict is
		// written once, the label not again.
		id: "REL-2_crash-in-the-terminal-writes", want: prloop.ReasonTwoStable,
		world: func(w *world) {
			w.reviews = []func(*world){reviewWith(finding1)}
			w.crashOn, w.crashAt = "set commit status", 3
		},
		check: func(t *testing.T, w *world) {
			if !w.crashed || w.ff.Calls("add labels") != 1 {
				t.Errorf("crashed %v; %d label calls, want 1", w.crashed, w.ff.Calls("add labels"))
			}
		},
	},
	{
		// The observation after the replies does not show them yet:
		// Decide asks again for what it cannot see, with the same keys,
		// and the run's journal (on Temporal: the workflow's) refuses
		// the finished ones, so nothing is written twice.
		id: "REL-2_reply-not-visible-yet", want: prloop.ReasonTwoStable,
		world: func(w *world) {
			w.reviews = []func(*world){reviewWith(finding1)}
			w.lagOn = "reply to thread"
		},
		check: func(t *testing.T, w *world) {
			th := w.thread(finding1.Body)
			if !w.lagged || !th.IsResolved || w.converges(th) != 1 {
				t.Errorf("lagged %v; the thread: resolved %v, %d replies; want resolved with one reply", w.lagged, th.IsResolved, w.converges(th))
			}
		},
	},
	{
		// Round 2's review never comes: the run waits, backing off on
		// each engine's clock, until its idle period has passed.
		id: "PR-T3_idle-timeout", want: prloop.ReasonIdleTimeout,
		world: func(w *world) {
			w.reviews = []func(*world){reviewWith(finding1)}
			w.silent = true
		},
	},
	{
		// The fix cannot be pushed: the run ends errored, and tells the
		// PR so while the forge answers (PR-T8).
		id: "PR-T8_errored", want: prloop.ReasonErrored,
		world: func(w *world) {
			w.reviews = []func(*world){reviewWith(finding1)}
			w.fixErr = errors.New("push refused: the branch is protected")
		},
	},
	{
		// The forge is down for three observations after round 1's
		// request: ridden out within the fault budget (REL-1).
		id: "REL-1_outage-ridden-out", want: prloop.ReasonTwoStable,
		world: func(w *world) {
			w.reviews = []func(*world){reviewWith(finding1)}
			w.outageAfter, w.outage = 2, 3
		},
		check: func(t *testing.T, w *world) {
			if w.observes <= w.outageAfter+w.outage {
				t.Errorf("%d observations: the outage did not happen", w.observes)
			}
		},
	},
	{
		// Alice puts the stop label on while round 2's review is asked
		// for (PR-G5).
		id: "PR-G5_stop-label", want: prloop.ReasonStoppedByHuman,
		world: func(w *world) {
			w.reviews = []func(*world){reviewWith(finding1), func(w *world) {
				w.ff.LabelAs(w.ref, "alice", prloop.LabelStop)
			}}
		},
	},
	{
		// A dry run reads, and ends at the first step that would write,
		// having written nothing (PR-M1).
		id: "PR-M1_dry-run", want: prloop.ReasonDryRun, dryRun: true,
		check: func(t *testing.T, w *world) {
			for _, op := range writeOps {
				if n := w.ff.Calls(op); n > 0 {
					t.Errorf("a dry run made %d %q call(s)", n, op)
				}
			}
		},
	},
	{
		// --dispose-only replies to and resolves the open threads once,
		// fixing nothing (PR-M2).
		id: "PR-M2_dispose-only", want: prloop.ReasonDisposed, disposeOnly: true,
		world: func(w *world) {
			w.review(finding1)
			w.ff.AddThread(w.ref, "alice", fakeforge.NewThread{Path: "cache.go", Line: 7, Body: "Should the cache size be configurable?"})
		},
		check: func(t *testing.T, w *world) {
			if w.fixes != 0 {
				t.Errorf("%d fixes in a dispose-only run", w.fixes)
			}
			if th := w.thread(finding1.Body); w.converges(th) != 1 {
				t.Errorf("the finding's thread has %d replies by converge, want 1", w.converges(th))
			}
		},
	},
	{
		// The local review runs beside the forge poll on each head
		// (PR-S4): background work the local engine's wait and the
		// Temporal act activity each wait for; its summary is posted once
		// per head.
		id: "PR-S4_local-review", want: prloop.ReasonTwoStable, localReview: true,
		world: func(w *world) { w.reviews = []func(*world){reviewWith(finding1)} },
		check: func(t *testing.T, w *world) {
			if len(w.reviewed) == 0 {
				t.Error("the local review never ran")
			}
		},
	},
	{
		// On a forge that batches thread writes (GitHub), a step's two
		// replies go in one request and its two resolves in one more
		// (PR-S12, issue 18). On Temporal this needs the worker's loop to
		// know the step's plan (prloop.Loop.Planned): the workflow ran
		// Decide on a loop of its own.
		id: "PR-S12_batched-replies-and-resolves", want: prloop.ReasonTwoStable,
		world: func(w *world) {
			w.reviews = []func(*world){reviewWith(finding1, finding2)}
			w.batch = true
		},
		check: func(t *testing.T, w *world) {
			if w.replyBatches != 1 || w.resolveBatches != 1 {
				t.Errorf("%d reply and %d resolve batches, want one each", w.replyBatches, w.resolveBatches)
			}
		},
	},
	{
		// Round 2's review finds something new, but one round is all the
		// run may start (PR-T5).
		id: "PR-T5_cap-exhausted", want: prloop.ReasonCapExhausted,
		config: func(c *prloop.Config) { c.MaxIterations = 1 },
		world: func(w *world) {
			w.reviews = []func(*world){reviewWith(finding1), reviewWith(finding2)}
		},
	},
	{
		// Copilot answers every request with an error and there is no
		// local review: nothing independent can prove the head (PR-O3).
		id: "PR-O3_blocked-no-independent-review", want: prloop.ReasonNoIndependentReview,
		world: func(w *world) {
			failed := func(w *world) {
				w.ff.AddEvent(w.ref, "copilot_work_started", fakeforge.CopilotShort)
				w.ff.AddReview(w.ref, fakeforge.Review{Author: fakeforge.CopilotLogin, CommitSHA: w.ff.PR(w.ref).HeadSHA,
					Body: "Copilot encountered an error and was unable to review this pull request."})
			}
			w.reviews = []func(*world){failed, failed, failed, failed, failed}
			w.silent = true
		},
		check: func(t *testing.T, w *world) {
			if w.requests != 3 {
				t.Errorf("%d review requests, want the first and two re-requests (no_signal_retries)", w.requests)
			}
		},
	},
	{
		// Two findings on overlapping lines ask for changes that exclude
		// each other: both go to a human before any fix (PR-S7).
		id: "PR-S7_all-conflicting", want: prloop.ReasonAllConflicting,
		world: func(w *world) {
			w.reviews = []func(*world){reviewWith(
				fakeforge.Finding{Path: "main.go", StartLine: 10, Line: 12, Body: "use a switch here"},
				fakeforge.Finding{Path: "main.go", StartLine: 12, Line: 14, Body: "return early instead"},
			)}
		},
		check: func(t *testing.T, w *world) {
			if n := w.ff.Calls("resolve thread"); n != 0 {
				t.Errorf("%d threads resolved; conflicting findings stay open for a human", n)
			}
		},
	},
	{
		// The loop's own changes outgrow the PR many times over: not
		// converging (PR-T6).
		id: "PR-T6_convergence-failure", want: prloop.ReasonConvergenceFailure,
		config: func(c *prloop.Config) { c.DiffMultiplier = 0.01 },
		world: func(w *world) {
			w.reviews = []func(*world){reviewWith(finding1), reviewWith(finding2)}
		},
	},
	{
		// Nine Copilot reviews of earlier commits on the forge: round 1's
		// is the tenth, so the recap gate holds before round 2 (counted
		// from the forge), the judge says CONTINUE, and the run goes on.
		id: "PR-G2_recap", want: prloop.ReasonTwoStable,
		world: func(w *world) {
			old := w.ff.PR(w.ref).HeadSHA
			w.ff.PushHead(w.ref, "extend the cache")
			for range 9 {
				w.ff.AddEvent(w.ref, "copilot_work_started", fakeforge.CopilotShort)
				w.ff.AddReview(w.ref, fakeforge.Review{Author: fakeforge.CopilotLogin, Body: fakeforge.CopilotBody(0), CommitSHA: old})
			}
			w.ff.SetCI(w.ref, "test", "SUCCESS")
			w.reviews = []func(*world){reviewWith(finding1)}
		},
		check: func(t *testing.T, w *world) {
			if w.recaps != 1 {
				t.Errorf("%d recaps, want 1", w.recaps)
			}
			n := 0
			for _, c := range w.ff.PR(w.ref).IssueComments {
				if c.Author == "converge" && strings.Contains(c.Body, "CONTINUE") {
					n++
				}
			}
			if n != 1 {
				t.Errorf("%d recap comments on the PR, want 1", n)
			}
		},
	},
}

// outcome is how a row ended on one engine, in the terms compared.
type outcome struct {
	reason prloop.Reason
	code   exitcode.Code
	// terminal is the terminal and its proof as JSON, ids renamed by
	// their place at the forge and the review's time left out.
	terminal string
	// writes are the writes at the forge.
	writes string
}

func TestPR_T1_ScenarioTableOnBothEngines(t *testing.T) {
	for _, row := range scenarios {
		t.Run(row.id, func(t *testing.T) {
			lw, local := runLocal(t, row)
			engines := []struct {
				name string
				w    *world
				o    outcome
			}{{"local", lw, local}}
			tw, tmp := runTemporal(t, row, 0)
			engines = append(engines, struct {
				name string
				w    *world
				o    outcome
			}{"temporal", tw, tmp})
			// The same on Temporal continuing as new after every step,
			// each run on a new worker (LOOP-1, REL-2).
			cw, can := runTemporal(t, row, 1)
			engines = append(engines, struct {
				name string
				w    *world
				o    outcome
			}{"temporal-continued-as-new", cw, can})
			for _, e := range engines {
				if e.o.reason != row.want || e.o.code != prloop.ExitCode(row.want) {
					t.Errorf("%s engine: %s (exit %d), want %s (exit %d)\n%s", e.name, e.o.reason, e.o.code, row.want, prloop.ExitCode(row.want), e.o.terminal)
				}
				if row.check != nil {
					t.Run(e.name, func(t *testing.T) { row.check(t, e.w) })
				}
				if e.name == "local" {
					continue
				}
				if local.terminal != e.o.terminal {
					t.Errorf("the terminals differ:\nlocal:    %s\n%s: %s", local.terminal, e.name, e.o.terminal)
				}
				if local.writes != e.o.writes {
					t.Errorf("the writes at the forge differ:\nlocal:\n%s\n%s:\n%s", local.writes, e.name, e.o.writes)
				}
			}
		})
	}
}

// instantClock is the local engine's clock for the table: a wait passes
// at once, moving the clock by its length (the Temporal test environment
// skips time the same way). While the loop's background work (the local
// review) runs, a wait does not pass at all: it ends when the work does,
// as the Temporal act activity waits for it before the workflow's next
// timer, so neither engine's clock moves on while it runs.
type instantClock struct {
	mu  sync.Mutex
	now time.Time
	// busy is the loop's background work (engine.Background's Wake): nil
	// when none runs. It is read on the engine's goroutine, as the loop
	// expects.
	busy func() <-chan struct{}
}

func (c *instantClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *instantClock) After(d time.Duration) <-chan time.Time {
	if c.busy != nil && c.busy() != nil {
		return nil // the engine's wait ends on the work's Wake
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	ch := make(chan time.Time, 1)
	ch <- c.now
	return ch
}

// runLocal runs the row on the local engine; a crash ends the process's
// run, and a new process resumes from the journal, as `converge pr` does.
func runLocal(t *testing.T, row scenario) (*world, outcome) {
	t.Helper()
	clk := &instantClock{now: t0}
	w := newWorld(row, clk.Now)
	j := &prlooptest.Journal{}
	st := prloop.State{Phase: prloop.PhaseStart}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for run := 1; ; run++ {
		if run > 3 {
			t.Fatal("local engine: crashed three times")
		}
		l := prloop.NewLoop(w.ref, prloop.Deps{Forge: w.forge(), Workspace: workspace{w: w}, Journal: j, Config: scenarioConfig(row),
			DryRun: row.dryRun, DisposeOnly: row.disposeOnly})
		clk.busy = l.Wake
		term, err, crashed := runOnce(ctx, l, st, clk)
		if crashed {
			st = j.Last()
			continue
		}
		if err != nil {
			// An errored run returns its cause; its terminal is the
			// state it persisted first (PR-T8).
			term = j.Last().Terminal
			if term == nil || term.Reason != prloop.ReasonErrored {
				t.Fatalf("local engine: %v", err)
			}
		}
		return w, w.outcome(t, term)
	}
}

func runOnce(ctx context.Context, l *prloop.Loop, st prloop.State, clk engine.Clock) (term *prloop.Terminal, err error, crashed bool) {
	defer func() {
		if r := recover(); r != nil {
			if _, ok := r.(crash); !ok {
				panic(r)
			}
			crashed = true
		}
	}()
	term, err = l.Run(ctx, st, engine.Options{Clock: clk, PollMin: pollMin, PollMax: pollMax, FaultBudget: faultBudget})
	return term, err, false
}

// runTemporal runs the row as the PR kind's workflow in the SDK's test
// environment; the worker binds the loop over the row's forge and
// workspace with the workflow's journal and reporter. With stepsPerRun
// set the workflow continues as new that often, and each run goes to a
// new environment with a new worker: nothing a worker held survives, only
// what the workflow carries.
func runTemporal(t *testing.T, row scenario, stepsPerRun int) (*world, outcome) {
	t.Helper()
	var env *testsuite.TestWorkflowEnvironment
	start := t0
	w := newWorld(row, func() time.Time {
		if env == nil {
			return start // the world's making, before the first run
		}
		return env.Now()
	})
	bind := func(_ context.Context, b temporal.Binding[kinds.PRParams, kinds.PRSetup]) (*kinds.PRBound, error) {
		setup := kinds.PRSetup{Ref: w.ref, Config: scenarioConfig(row), DryRun: row.dryRun, DisposeOnly: row.disposeOnly}
		if b.Setup != nil {
			setup = *b.Setup
		}
		l := prloop.NewLoop(setup.Ref, prloop.Deps{
			Forge: w.forge(), Workspace: workspace{w: w}, Config: setup.Config,
			DryRun: setup.DryRun, DisposeOnly: setup.DisposeOnly,
			Journal: temporal.StateJournal[prloop.State]{Journal: b.Journal}, Reporter: b.Reporter,
		})
		return &kinds.PRBound{Loop: l, Setup: setup}, nil
	}
	in := temporal.Input[kinds.PRParams, kinds.PRSetup, prloop.State, *prloop.ActResult]{
		Params:  kinds.PRParams{URL: w.ref.String()},
		Options: temporal.Options{PollMin: pollMin, PollMax: pollMax, FaultBudget: faultBudget, StepsPerRun: stepsPerRun},
	}
	runs := 1
	for ; ; runs++ {
		if runs > 50 {
			t.Fatal("temporal engine: 50 runs and no end")
		}
		var s testsuite.WorkflowTestSuite
		s.SetLogger(log.NewStructuredLogger(slog.New(slog.DiscardHandler)))
		env = s.NewTestWorkflowEnvironment()
		env.SetStartTime(start)
		env.SetTestTimeout(time.Minute)
		k := kinds.PR(bind)
		k.Register(env, &temporal.Activities[kinds.PRParams, kinds.PRSetup, prloop.State, prloop.Observation, prloop.Action, *prloop.ActResult]{})
		env.ExecuteWorkflow(k.WorkflowType(), in)
		if !env.IsWorkflowCompleted() {
			t.Fatal("temporal engine: the workflow did not complete")
		}
		err := env.GetWorkflowError()
		var can *workflow.ContinueAsNewError
		if errors.As(err, &can) {
			in = temporal.Input[kinds.PRParams, kinds.PRSetup, prloop.State, *prloop.ActResult]{}
			if err := converter.GetDefaultDataConverter().FromPayloads(can.Input, &in); err != nil {
				t.Fatal(err)
			}
			start = env.Now()
			continue
		}
		if err != nil {
			t.Fatalf("temporal engine: %v", err)
		}
		break
	}
	var r temporal.Result[prloop.State]
	if err := env.GetWorkflowResult(&r); err != nil {
		t.Fatal(err)
	}
	if stepsPerRun > 0 && runs < (r.Steps+stepsPerRun-1)/stepsPerRun {
		t.Fatalf("temporal engine: %d steps in %d run(s), not continuing as new every %d", r.Steps, runs, stepsPerRun)
	}
	term := r.State.Terminal
	if term == nil {
		t.Fatalf("temporal engine: no terminal in the result: %+v", r.Terminal)
	}
	if r.Terminal.Status != string(term.Reason) || r.Terminal.Code != term.ExitCode {
		t.Errorf("temporal engine: the result's terminal %+v is not the state's %s (exit %d)", r.Terminal, term.Reason, term.ExitCode)
	}
	return w, w.outcome(t, term)
}

// timeline is when converge wrote what at the forge, in the forge's
// order, each write at the minute of the engine's clock it was made in:
// both engines wait alike, so their writes fall in the same minutes (a
// lost activity's retry back-off, seconds, does not move a write to the
// next minute).
func (w *world) timeline(t *testing.T, pr *forge.PullRequest) []string {
	t.Helper()
	type write struct {
		at   time.Time
		what string
	}
	var ws []write
	evs, err := w.ff.IssueEvents(context.Background(), w.ref)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range evs {
		if e.Actor == "converge" {
			ws = append(ws, write{e.CreatedAt, strings.TrimSpace(e.Event + " " + e.Label)})
		}
	}
	for i, th := range pr.Threads {
		for _, c := range th.Comments {
			if c.Author == "converge" {
				ws = append(ws, write{c.CreatedAt, fmt.Sprintf("reply in thread-%d", i+1)})
			}
		}
	}
	for _, c := range pr.IssueComments {
		if c.Author == "converge" {
			ws = append(ws, write{c.CreatedAt, "comment"})
		}
	}
	for i, c := range pr.Commits {
		if strings.HasPrefix(c.Message, "converge:") {
			ws = append(ws, write{c.CommittedAt, fmt.Sprintf("commit-%d", i+1)})
		}
	}
	sort.SliceStable(ws, func(i, j int) bool { return ws[i].at.Before(ws[j].at) })
	out := make([]string, len(ws))
	for i, x := range ws {
		out[i] = fmt.Sprintf("minute %d: %s", int(x.at.Sub(t0)/time.Minute), x.what)
	}
	return out
}

// writeOps are the forge's write operations, by the fake forge's names.
var writeOps = []string{
	"request reviews", "reply to thread", "resolve thread", "unresolve thread", "add labels", "remove label",
	"create issue comment", "set commit status", "create check run",
}

// outcome reads the run's end and the world's writes, with every id the
// forge made renamed by its place (commit-2, review-10, thread-1): ids
// come from the world's counter, which the same writes in the same order
// move alike, but a place says what a reader of the proof checks.
func (w *world) outcome(t *testing.T, term *prloop.Terminal) outcome {
	t.Helper()
	if term == nil {
		t.Fatal("no terminal")
	}
	pr := w.ff.PR(w.ref)
	var ids []string
	names := map[string]string{}
	name := func(id, as string) {
		if id != "" {
			if _, ok := names[id]; !ok {
				ids = append(ids, id)
				names[id] = as
			}
		}
	}
	name(pr.BaseSHA, "base")
	for i, c := range pr.Commits {
		name(c.SHA, fmt.Sprintf("commit-%d", i+1))
		name(text.ShortSHA(c.SHA), fmt.Sprintf("commit-%d", i+1))
	}
	for i, r := range pr.Reviews {
		name(r.ID, fmt.Sprintf("review-%d", i+1))
	}
	for i, th := range pr.Threads {
		name(th.ID, fmt.Sprintf("thread-%d", i+1))
		for j, c := range th.Comments {
			name(c.ID, fmt.Sprintf("thread-%d-comment-%d", i+1, j+1))
		}
	}
	// Longest first: no id is renamed inside a longer one.
	sort.Slice(ids, func(i, j int) bool { return len(ids[i]) > len(ids[j]) })
	rename := func(s string) string {
		for _, id := range ids {
			s = strings.ReplaceAll(s, id, names[id])
		}
		return s
	}

	tt := *term
	if tt.Proof != nil {
		p := *tt.Proof
		// The review's time is the forge's clock when the reviewer
		// answered: each engine's own, which a lost activity's retry
		// moves on Temporal (its back-off is workflow time).
		p.ReviewedAt = time.Time{}
		// So is the observation's: workflow time on Temporal.
		p.ObservedAt = time.Time{}
		tt.Proof = &p
	}
	b, err := json.Marshal(tt)
	if err != nil {
		t.Fatal(err)
	}

	var wr strings.Builder
	for _, op := range writeOps {
		if n := w.ff.Calls(op); n > 0 {
			fmt.Fprintf(&wr, "%s: %d\n", op, n)
		}
	}
	for i, th := range pr.Threads {
		fmt.Fprintf(&wr, "thread-%d: resolved %v, converge replied %d\n", i+1, th.IsResolved, w.converges(th))
	}
	labels := slices.Clone(pr.Labels)
	slices.Sort(labels)
	fmt.Fprintf(&wr, "labels: %v\n", labels)
	for _, c := range pr.IssueComments {
		if c.Author == "converge" {
			first, _, _ := strings.Cut(c.Body, "\n")
			fmt.Fprintf(&wr, "comment: %s\n", first)
		}
	}
	for i, c := range pr.Commits {
		first, _, _ := strings.Cut(c.Message, "\n")
		fmt.Fprintf(&wr, "commit-%d: %s\n", i+1, first)
	}
	for _, c := range pr.Checks.Contexts {
		if c.Name == prloop.StatusContext {
			fmt.Fprintf(&wr, "converge verdict on the head: %s %s\n", c.Status, c.Conclusion)
		}
	}
	for _, e := range w.timeline(t, pr) {
		fmt.Fprintf(&wr, "%s\n", e)
	}
	if w.batch {
		fmt.Fprintf(&wr, "batched requests: %d of replies, %d of resolves\n", w.replyBatches, w.resolveBatches)
	}
	fmt.Fprintf(&wr, "state: %s, head %s\n", pr.State, pr.HeadSHA)
	return outcome{reason: term.Reason, code: term.ExitCode, terminal: rename(string(b)), writes: rename(wr.String())}
}
