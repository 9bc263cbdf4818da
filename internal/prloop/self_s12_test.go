package prloop

import (
	"testing"

	"github.com/convergeloop/converge/internal/forge"
)

// TestPR_S12_OwnLoginComesFromTheObservation: which comments are
// converge's own — whose markers are believed, and which are never
// findings — Decide reads from the observation (Observation.Self), never
// from the worker's Config.Self. A replayed observation then decides the
// same on any worker, whatever that worker's configuration says (REL-2,
// the Temporal engine's replay).
func TestPR_S12_OwnLoginComesFromTheObservation(t *testing.T) {
	world := func() *forge.PullRequest {
		pr := newPR("h2")
		pr.Reviews = []forge.Review{okReview("R3", "h2", at(-10))}
		th := thread("T1", author, "this needs a redesign")
		th.Comments = append(th.Comments, forge.Comment{Author: self, Body: "Escalated to a human.\n" + Marker("T1", "h2", DispEscalated), CreatedAt: at(-5)})
		pr.Threads = []forge.Thread{th}
		return pr
	}
	// touches reports whether the step writes to, or fixes, T1.
	touches := func(acts []Action) bool {
		for _, a := range acts {
			if a.ThreadID == "T1" || a.Kind == ActFix {
				return true
			}
		}
		return false
	}
	for _, tc := range []struct {
		name         string
		config, seen string
		touched      bool
	}{
		{"the observation names converge, the config someone else", "someone-else", self, false},
		{"the observation names converge, the config no one", "", self, false},
		{"the config names converge, the observation someone else", self, "someone-else", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := cfg()
			c.Self, c.self = tc.config, ""
			o := obs(at(0), world())
			o.Self = tc.seen
			_, acts, _ := Decide(started("h2"), o, c)
			if got := touches(acts); got != tc.touched {
				t.Fatalf("Config.Self %q, Observation.Self %q: acts on T1 %v, want %v: %q", tc.config, tc.seen, got, tc.touched, sig(acts))
			}
		})
	}
}
