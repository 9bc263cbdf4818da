package prloop

import (
	"strings"
	"testing"

	"github.com/convergeloop/converge/internal/forge"
)

// ownOutdated is a thread converge's identity opened on a line that has
// changed since.
func ownOutdated(id string) forge.Thread {
	th := thread(id, self, "note to self: check the bound")
	th.IsOutdated = true
	return th
}

func TestPR_S13_CleanupResolvesOutdatedThreadsOnceAfterSuccess(t *testing.T) {
	success := []string{"add-label " + LabelReady, "set-status success h1"}
	withMarker := func(th forge.Thread, head string) forge.Thread {
		th.Comments = append(th.Comments, forge.Comment{Author: self, Body: "Outdated.\n\n" + Marker(th.ID, head, DispOutdated)})
		return th
	}
	tests := []struct {
		name     string
		threads  []forge.Thread
		mutate   func(pr *forge.PullRequest)
		terminal Reason
		acts     []string
		body     bool // the cleanup replies before it resolves
	}{
		{"converge's own outdated thread is replied to and resolved after the verdict",
			[]forge.Thread{ownOutdated("T9")}, nil, ReasonTwoStable, append(success, "cleanup cleanup/T9"), true},
		{"not outdated: left open",
			[]forge.Thread{thread("T9", self, "note to self")}, nil, ReasonTwoStable, success, false},
		{"an untrusted outdated thread is never acted on (SEC-1)",
			[]forge.Thread{func() forge.Thread {
				th := thread("T8", "mallory", "please add my feature")
				th.IsOutdated = true
				return th
			}()}, nil, ReasonTwoStable, success, false},
		{"already resolved: nothing",
			[]forge.Thread{func() forge.Thread {
				th := withMarker(ownOutdated("T9"), "h1")
				th.IsResolved = true
				return th
			}()}, nil, ReasonTwoStable, success, false},
		{"replied on this head, the resolve never landed: resolve only",
			[]forge.Thread{withMarker(ownOutdated("T9"), "h1")}, nil, ReasonTwoStable, append(success, "cleanup cleanup/T9"), false},
		{"cleaned on an earlier head and open again: a human reopened it",
			[]forge.Thread{withMarker(ownOutdated("T9"), "h0")}, nil, ReasonTwoStable, success, false},
		{"no success, no cleanup",
			[]forge.Thread{ownOutdated("T9")}, func(pr *forge.PullRequest) { pr.Checks = ciWith("COMPLETED", "FAILURE") }, "",
			[]string{"set-status pending h1", "fix round-1/fix"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pr := newPR("h1")
			pr.Reviews = []forge.Review{okReview("R1", "h1", at(-30))}
			pr.Threads = tt.threads
			if tt.mutate != nil {
				tt.mutate(pr)
			}
			s, acts, term := Decide(State{}, obs(at(0), pr), cfg())
			wantTerminal(t, term, tt.terminal)
			wantActs(t, acts, tt.acts...)
			a := findAct(acts, ActCleanup, "T9")
			if a == nil {
				return
			}
			if got := a.Body != ""; got != tt.body {
				t.Fatalf("cleanup replies: %v, want %v (body %q)", got, tt.body, a.Body)
			}
			if tt.body && (!strings.Contains(a.Body, Marker("T9", "h1", DispOutdated)) || !strings.Contains(a.Body, "Outdated")) {
				t.Fatalf("the reply must say why and carry its marker: %q", a.Body)
			}
			// A write a fault interrupted is finished by the done state.
			_, again, _ := Decide(s, obs(at(1), pr), cfg())
			if findAct(again, ActCleanup, "T9") == nil {
				t.Fatalf("the done state does not finish the cleanup: %q", sig(again))
			}
			// Once the forge shows it, a second run writes nothing.
			after := forgeApply(pr, acts, at(1))
			after.Checks = withConvergeStatus(after.Checks, "SUCCESS")
			_, rerun, term := Decide(State{}, obs(at(2), after), cfg())
			wantTerminal(t, term, ReasonTwoStable)
			wantActs(t, rerun)
		})
	}
}

// The cleanup runs at the success a round reaches too, not only at a
// start that finds the PR already two-stable.
func TestPR_S13_CleanupAfterARoundEndsTwoStable(t *testing.T) {
	s := verifying("h1", 1)
	pr := newPR("h1")
	pr.Reviews = []forge.Review{okReview("R1", "h1", at(1))}
	pr.Threads = []forge.Thread{ownOutdated("T9")}
	_, acts, term := Decide(s, obs(at(2), pr), cfg())
	wantTerminal(t, term, ReasonTwoStable)
	wantActs(t, acts, "add-label "+LabelReady, "set-status success h1", "cleanup cleanup/T9")
}
