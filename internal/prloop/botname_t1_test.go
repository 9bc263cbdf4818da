package prloop_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/convergeloop/converge/internal/emulator/fakeforge"
	"github.com/convergeloop/converge/internal/engine"
	"github.com/convergeloop/converge/internal/forge"
	"github.com/convergeloop/converge/internal/prloop"
	"github.com/convergeloop/converge/internal/prloop/prlooptest"
	"github.com/convergeloop/converge/internal/review"
	"github.com/convergeloop/converge/internal/store"
)

// duoLogin is the stub bot's user on the fake forge.
const duoLogin = "GitLabDuo"

// duoStub is a review bot that is not Copilot: GitLab Duo's name, its own
// login and started event, and a fail-closed reading of its reviews by
// their comment count. It stands for any forge's bot; the loop must name
// it by Name wherever it writes about it.
type duoStub struct{}

func (duoStub) Name() string         { return "gitlab-duo" }
func (duoStub) Is(login string) bool { return strings.EqualFold(login, duoLogin) }
func (duoStub) RequestLogin() string { return duoLogin }
func (duoStub) StartedEvent() string { return "duo_review_started" }
func (duoStub) Read(r forge.Review, pr *forge.PullRequest) (review.Signal, string) {
	shown := 0
	for _, t := range pr.Threads {
		for _, c := range t.Comments {
			if c.ReviewID == r.ID {
				shown++
			}
		}
	}
	switch {
	case shown < r.CommentCount:
		return review.Unsettled, fmt.Sprintf("the review counts %d comment(s), the threads show %d", r.CommentCount, shown)
	case r.CommentCount > 0:
		return review.Findings, ""
	case strings.Contains(r.Body, "found no issues"):
		return review.Clean, ""
	}
	return review.NoSignal, "the review says neither findings nor none"
}

// duoRun is what a PR loop run with the stub bot left: its terminal, its
// decision log as `converge log` renders it from the store, and every
// text it wrote to the forge.
type duoRun struct {
	term     *prloop.Terminal
	log      string
	events   []string // every event, the log's quiet ones (waits) too
	forgeOut []string
}

// runWithDuo runs the loop on the fake forge with the stub bot, the local
// review on, on a real state store. refuse makes the forge refuse the
// review request as invalid (the bot not enabled on the project, PR-M3).
func runWithDuo(t *testing.T, refuse bool) duoRun {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	clock := prlooptest.NewClock(time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC))
	ff := fakeforge.New(fakeforge.Options{Viewer: "converge", Now: clock.Now})
	ref := ff.AddPR(fakeforge.PR{Author: "alice"})
	ff.SetCI(ref, "test", "SUCCESS")
	if refuse {
		ff.SetFault(func(op string) error {
			if op == "request reviews" {
				return &forge.Error{Kind: forge.KindInvalid, Op: op, Msg: duoLogin + " cannot be a reviewer of this merge request"}
			}
			return nil
		})
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
			ff.AddEvent(ref, "duo_review_started", duoLogin)
			r := fakeforge.Review{Author: duoLogin, Body: "I reviewed the changes and found no issues."}
			if n == 1 {
				r.Body = "I reviewed the changes and left 1 comment."
				r.Threads = []fakeforge.NewThread{{Path: "main.go", Line: 3, Body: "This returns a nil error on failure; wrap and return the error."}}
			}
			ff.AddReview(ref, r)
		}()
	})

	db, err := store.Open(ctx, filepath.Join(t.TempDir(), "converge.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	claim, err := engine.ClaimRun(ctx, db, "pr", ref.String(), false, prloop.Resumable)
	if err != nil {
		t.Fatal(err)
	}
	defer claim.Release(ctx)
	var (
		evMu   sync.Mutex
		events []store.Event
	)
	rep := engine.ReporterFunc(func(e engine.Event) {
		evMu.Lock()
		defer evMu.Unlock()
		events = append(events, store.Event{Time: clock.Now(), Kind: e.Kind, Round: e.Round, Message: e.Message})
	})

	cfg := prloop.DefaultConfig()
	cfg.Bot, cfg.LocalReview = duoStub{}, true
	cfg.ReviewStartWindow, cfg.PushVisibleWait = time.Minute, 0
	l := prloop.NewLoop(ref, prloop.Deps{Forge: ff, Workspace: pushWorkspace{ff: ff, ref: ref}, Journal: prloop.StoreJournal(db, claim.RunID),
		Config: cfg, Reporter: rep})
	final, err := engine.Run[prloop.State, prloop.Observation, prloop.Action, *prloop.ActResult](ctx, l, prloop.StoreJournal(db, claim.RunID),
		prloop.State{Phase: prloop.PhaseStart}, engine.Options{Clock: clock, PollMin: 50 * time.Millisecond, PollMax: 200 * time.Millisecond,
			Transient: prloop.Transient, Reporter: rep})
	if err != nil {
		t.Fatal(err)
	}
	if final.Terminal == nil {
		t.Fatal("the run ended without a terminal")
	}
	var proof any
	if final.Terminal.Proof != nil {
		proof = final.Terminal.Proof
	}
	if err := claim.Finish(ctx, string(final.Terminal.Reason), final.Terminal.ExitCode, proof); err != nil {
		t.Fatal(err)
	}

	rec := prloop.RunRecord{}
	if rec.Run, err = db.GetRun(ctx, claim.RunID); err != nil {
		t.Fatal(err)
	}
	if rec.Rounds, err = db.Rounds(ctx, claim.RunID); err != nil {
		t.Fatal(err)
	}
	if rec.Findings, err = db.Findings(ctx, claim.RunID); err != nil {
		t.Fatal(err)
	}
	evMu.Lock()
	rec.Events = append([]store.Event(nil), events...)
	evMu.Unlock()
	var b bytes.Buffer
	if err := prloop.WriteDecisionLog(&b, rec); err != nil {
		t.Fatal(err)
	}

	run := duoRun{term: final.Terminal, log: b.String()}
	for _, e := range rec.Events {
		run.events = append(run.events, e.Kind+": "+e.Message)
	}
	pr := ff.PR(ref)
	for _, th := range pr.Threads {
		for _, c := range th.Comments {
			if c.Author == "converge" {
				run.forgeOut = append(run.forgeOut, c.Body)
			}
		}
	}
	for _, c := range pr.IssueComments {
		if c.Author == "converge" {
			run.forgeOut = append(run.forgeOut, c.Body)
		}
	}
	for _, ch := range pr.Checks.Contexts {
		run.forgeOut = append(run.forgeOut, ch.Description)
	}
	return run
}

// TestPR_T1_ProofNamesTheReviewBot: converge drives forges whose review
// bot is not Copilot (GitLab Duo on GitLab). A run with such a bot names
// it by its Name in the proof, the terminal, the decision log and every
// text it leaves on the forge, and never says "Copilot" — nor in the
// single-iteration reason when the forge refuses the request (PR-M3).
func TestPR_T1_ProofNamesTheReviewBot(t *testing.T) {
	neverCopilot := func(t *testing.T, what, s string) {
		t.Helper()
		if strings.Contains(strings.ToLower(s), "copilot") {
			t.Errorf("%s names Copilot though the bot is gitlab-duo:\n%s", what, s)
		}
	}

	t.Run("two-stable on the bot's review", func(t *testing.T) {
		run := runWithDuo(t, false)
		if run.term.Reason != prloop.ReasonTwoStable || run.term.Proof == nil {
			t.Fatalf("ended %+v, want two-stable with a proof", run.term)
		}
		p := run.term.Proof
		if p.ReviewSource != "gitlab-duo" || p.Review() != "gitlab-duo review "+p.ReviewID {
			t.Errorf("the proof's review is %q (source %q), want gitlab-duo's", p.Review(), p.ReviewSource)
		}
		if !strings.Contains(run.term.Message, "; gitlab-duo reviewed ") {
			t.Errorf("terminal %q does not say gitlab-duo reviewed the head", run.term.Message)
		}
		raw, _ := json.Marshal(run.term)
		neverCopilot(t, "the terminal and its proof", string(raw))
		for _, want := range []string{"review: requested gitlab-duo review", "| gitlab-duo | " + duoLogin + " |", "gitlab-duo reviewed", "gitlab-duo review"} {
			if !strings.Contains(run.log, want) {
				t.Errorf("the decision log lacks %q:\n%s", want, run.log)
			}
		}
		neverCopilot(t, "the decision log", run.log)
		all := strings.Join(run.events, "\n")
		// The bot here may answer before the loop ever waits on it (the
		// local review runs beside the poll), so a wait is not certain;
		// each one there is names the bot.
		for _, ev := range run.events {
			if strings.Contains(ev, "awaiting ") && strings.HasSuffix(ev, "'s review") && !strings.Contains(ev, "awaiting gitlab-duo's review") {
				t.Errorf("a wait names another reviewer than gitlab-duo: %s", ev)
			}
		}
		neverCopilot(t, "the run's events", all)
		if len(run.forgeOut) < 2 {
			t.Fatalf("converge left %d text(s) on the forge, want its replies, summary and status: %q", len(run.forgeOut), run.forgeOut)
		}
		for _, s := range run.forgeOut {
			neverCopilot(t, "a text on the forge", s)
		}
	})

	t.Run("the forge refuses the request", func(t *testing.T) {
		run := runWithDuo(t, true)
		want := "single iteration: the forge refused the gitlab-duo review request"
		if !strings.Contains(run.log, want) || !strings.Contains(run.log, "gitlab-duo review refused; single-iteration mode") {
			t.Errorf("the decision log does not name gitlab-duo's refusal (%q):\n%s", want, run.log)
		}
		raw, _ := json.Marshal(run.term)
		neverCopilot(t, "the terminal and its proof", string(raw))
		neverCopilot(t, "the decision log", run.log)
		for _, s := range run.forgeOut {
			neverCopilot(t, "a text on the forge", s)
		}
	})
}
