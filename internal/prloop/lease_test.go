package prloop

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/convergeloop/converge/internal/forge"
)

// withLease shows a pending `converge` status on the head carrying run's
// lease until until.
func withLease(ch forge.CheckRollup, run string, until time.Time) forge.CheckRollup {
	ch = withConvergeStatus(ch, string(forge.StatusPending))
	ch.Contexts[len(ch.Contexts)-1].Description = "converge: round 1 running " + leaseText(run, 7, until)
	return ch
}

// TestPR_T14_ARunsPendingVerdictCarriesItsLease: the pending verdict a
// run writes on the head names the run and when its hold lapses, by the
// forge's clock; it is written again as the lapse nears, and not while
// it is fresh.
func TestPR_T14_ARunsPendingVerdictCarriesItsLease(t *testing.T) {
	pr := newPR("h1")
	pr.ObservedAt = at(0)
	_, acts, _ := Decide(State{RunID: "r-me"}, obs(at(0), pr), cfg())
	var lease string
	for _, a := range acts {
		if a.Kind == ActSetStatus && a.State == forge.StatusPending {
			lease = a.Reason
		}
	}
	want := leaseText("r-me", 7, at(0).Add(LeaseTTL))
	if !strings.Contains(lease, want) {
		t.Fatalf("pending verdict %q does not carry %q: %q", lease, want, sig(acts))
	}
	s := awaiting("h1", 1)
	s.RunID = "r-me"
	pr.Checks = withLease(green(), "r-me", at(0).Add(LeaseTTL))
	pr.ObservedAt = at(5)
	_, acts, _ = Decide(s, obs(at(5), pr), cfg())
	for _, a := range acts {
		if a.Kind == ActSetStatus {
			t.Fatalf("a fresh lease written again: %q", sig(acts))
		}
	}
	pr.ObservedAt = at(15) // 15 of 30 minutes left
	_, acts, _ = Decide(s, obs(at(15), pr), cfg())
	refreshed := false
	for _, a := range acts {
		refreshed = refreshed || (a.Kind == ActSetStatus && a.State == forge.StatusPending && strings.Contains(a.Reason, leaseText("r-me", 7, at(15).Add(LeaseTTL))))
	}
	if !refreshed {
		t.Fatalf("a lease 15 minutes from lapsing is not refreshed: %q", sig(acts))
	}
}

// TestPR_T14_ARunTakenOverYieldsAndWritesNothing: another converge's live
// lease appears on the head after this run started: the run ends
// taken-over (exit 3) and writes nothing — no label, no status, no
// comment. A lease that lapsed, or the one the head showed when this run
// started (its own take-over), is no such sign.
func TestPR_T14_ARunTakenOverYieldsAndWritesNothing(t *testing.T) {
	s := awaiting("h1", 1)
	s.RunID = "r-me"
	pr := newPR("h1")
	pr.ObservedAt = at(5)
	pr.Checks = withLease(green(), "r-other", at(5).Add(LeaseTTL))
	_, acts, term := Decide(s, obs(at(5), pr), cfg())
	wantTerminal(t, term, ReasonTakenOver)
	if term.ExitCode != 3 || !strings.Contains(term.Message, "r-other") {
		t.Errorf("terminal %+v, want exit 3 naming r-other", term)
	}
	if len(acts) != 0 {
		t.Fatalf("a taken-over run wrote: %q", sig(acts))
	}
	// Lapsed: no hold.
	pr.Checks = withLease(green(), "r-other", at(4))
	if _, _, term := Decide(s, obs(at(5), pr), cfg()); term != nil && term.Reason == ReasonTakenOver {
		t.Fatalf("a lapsed lease took the PR over: %+v", term)
	}
	// Seen at this run's start: this run is the take-over.
	pr.Checks = withLease(green(), "r-other", at(5).Add(LeaseTTL))
	first, _, term := Decide(State{RunID: "r-me"}, obs(at(0), pr), cfg())
	if term != nil && term.Reason == ReasonTakenOver {
		t.Fatalf("the take-over yielded to the lease it took over: %+v", term)
	}
	if first.LeaseAtStart != "r-other" {
		t.Fatalf("lease at start %q, want r-other", first.LeaseAtStart)
	}
}

// TestPR_T14_AnotherPRsLeaseOnTheSameHeadIsNotATakeOver: two PRs may share
// a head commit, and a commit status is the commit's: the lease of a run
// on PR 8 showing on this PR's head takes nothing over.
func TestPR_T14_AnotherPRsLeaseOnTheSameHeadIsNotATakeOver(t *testing.T) {
	s := awaiting("h1", 1)
	s.RunID = "r-me"
	pr := newPR("h1")
	pr.ObservedAt = at(5)
	pr.Checks = withConvergeStatus(green(), string(forge.StatusPending))
	pr.Checks.Contexts[len(pr.Checks.Contexts)-1].Description = "converge: round 1 running " + leaseText("r-other", 8, at(5).Add(LeaseTTL))
	if _, _, term := Decide(s, obs(at(5), pr), cfg()); term != nil && term.Reason == ReasonTakenOver {
		t.Fatalf("PR 8's lease took PR 7 over: %+v", term)
	}
	if _, ok := HeadLease(pr); ok {
		t.Fatal("PR 8's lease read as PR 7's")
	}
}

// guardedWorkspace records the push guard the loop gives it.
type guardedWorkspace struct {
	Workspace
	guard func(ctx context.Context, pr *forge.PullRequest) error
}

// Fix pushes nothing: what the test reads is the guard it was given.
func (g *guardedWorkspace) Fix(context.Context, *forge.PullRequest, int, []Finding) (FixResult, error) {
	return FixResult{}, nil
}

func (g *guardedWorkspace) GuardPush(f func(ctx context.Context, pr *forge.PullRequest) error) {
	g.guard = f
}

// TestPR_T14_APushWaitsOnNoTakeOver: a fix takes minutes; the push at its
// end first reads the PR, and a live lease another converge wrote on the
// head meanwhile (--take-over) withholds it (ErrTakenOver, answered by
// observing again, which ends the run taken-over). The run's own lease,
// the one it started over, and a lapsed one do not.
func TestPR_T14_APushWaitsOnNoTakeOver(t *testing.T) {
	ff, ref, _ := threadsPR(t, 0)
	ws := &guardedWorkspace{}
	l := NewLoop(ref, Deps{Forge: ff, Workspace: ws, Journal: &memJournal{done: map[string]bool{}}, Config: cfg()})
	st := State{RunID: "r-me", LeaseAtStart: "r-before", Round: 1}
	ctx := context.Background()
	head := ff.PR(ref).HeadSHA
	for _, c := range []struct {
		holder string
		until  time.Duration
		held   bool
	}{
		{"r-me", time.Hour, false},
		{"r-before", time.Hour, false},
		{"r-taker", -time.Minute, false},
		{"r-taker", time.Hour, true},
	} {
		desc := "converge: round 1 running " + leaseText(c.holder, ref.Number, time.Now().Add(c.until))
		if err := ff.SetCommitStatus(ctx, ref, head, forge.CommitStatus{State: forge.StatusPending, Context: StatusContext, Description: desc}); err != nil {
			t.Fatal(err)
		}
		ws.guard = nil
		if _, err := l.Act(ctx, st, Observation{PR: ff.PR(ref)}, Action{Kind: ActFix, Key: fmt.Sprintf("fix-%s-%s", c.holder, c.until), Round: 1}); err != nil {
			t.Fatal(err)
		}
		if ws.guard == nil {
			t.Fatal("the fix's workspace was given no push guard")
		}
		err := ws.guard(ctx, ff.PR(ref))
		var taken *ErrTakenOver
		if got := errors.As(err, &taken); got != c.held || (got && (taken.Lease.Run != c.holder || !headMoved(err))) {
			t.Errorf("lease of %s (lapses in %s): push guard said %v, want held=%v and observe-now", c.holder, c.until, err, c.held)
		}
	}
}
