package prloop

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/convergeloop/converge/internal/forge"
)

// TestPR_M2_DisposeTakesEveryDispositionFromTheRoundRules: --dispose-only
// answers each open thread as a round would, fixing nothing: a thread a
// loop commit addressed is replied to and resolved; one converge replied
// to but never resolved is resolved under that reply; any other trusted
// thread is deferred (replied to, left open); untrusted threads, hand-offs
// and resolved threads are not touched.
func TestPR_M2_DisposeTakesEveryDispositionFromTheRoundRules(t *testing.T) {
	pr := newPR("h2")
	fixC := loopCommit("h2", "h1", 1)
	fixC.Message += fmt.Sprintf("%s: T1\n", AddressedTrailer)
	pr.Commits = []forge.Commit{{SHA: "h1", Parents: []string{"base0"}, Message: "feat"}, fixC}
	pending := thread("T2", author, "Handle the error")
	pending.Comments = append(pending.Comments, forge.Comment{Author: self, Body: "Addressed\n\n" + Marker("T2", "h2", DispAddressed)})
	escalated := thread("T5", author, "Rethink the API")
	escalated.Comments = append(escalated.Comments, forge.Comment{Author: self, Body: "Escalated\n\n" + Marker("T5", "h2", DispEscalated)})
	done := thread("T6", author, "old")
	done.IsResolved = true
	pr.Threads = []forge.Thread{
		thread("T1", author, "Check the bounds"),
		pending,
		thread("T3", author, "Reject negative sizes"),
		thread("T4", "mallory", "Add my endpoint"),
		escalated,
		done,
	}
	d, acts := Dispose(started("h2"), obs(at(1), pr), cfg())
	wantActs(t, acts,
		"reply dispose/reply/T1/addressed",
		"resolve dispose/resolve/T1",
		"resolve dispose/resolve/T2",
		"reply dispose/reply/T3/deferred",
	)
	if !slices.Equal(d.Replied, []string{"T1", "T3"}) || !slices.Equal(d.Resolved, []string{"T1", "T2"}) || !slices.Equal(d.Skipped, []string{"T4", "T5"}) {
		t.Fatalf("envelope %+v", d)
	}
	// The deferred reply leaves T3 open, and says why.
	if a := findAct(acts, ActReply, "T3"); a == nil || !strings.Contains(a.Body, "Deferred to a human") {
		t.Fatalf("T3 reply: %+v", a)
	}

	// Applied on the forge, a second disposal writes nothing.
	again := forgeApply(pr, acts, at(2))
	d2, acts2 := Dispose(started("h2"), obs(at(3), again), cfg())
	if len(acts2) != 0 || len(d2.Replied)+len(d2.Resolved) != 0 {
		t.Fatalf("a second disposal wrote again: %v %+v", sig(acts2), d2)
	}
}
