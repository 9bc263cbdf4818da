package engine_test

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/convergeloop/converge/internal/emulator/fakehub"
	"github.com/convergeloop/converge/internal/engine"
	"github.com/convergeloop/converge/internal/forge"
	"github.com/convergeloop/converge/internal/server"
	"github.com/convergeloop/converge/internal/store"
	"github.com/convergeloop/converge/internal/testutil/hubtest"
)

// TestPR_S2_FleetPollsAreChargedThePointsTheForgeCounted: a fleet budget
// counted in forge points charges each poll what the forge said it cost,
// to the point what the emulator counted by GitHub's arithmetic: polls of
// unchanged PRs (a probe answered 304) cost nothing, so idle loops poll
// at their own pace on any budget; polls of PRs that keep changing (a
// probe answered 200, then a whole GraphQL read) draw the budget down and
// are held to its rate.
func TestPR_S2_FleetPollsAreChargedThePointsTheForgeCounted(t *testing.T) {
	const loops, perHour, burst = 3, 360, 20 // a point every ten seconds; a whole read of each PR at once
	ctx := t.Context()
	hub := hubtest.Start(t, time.Hour)
	files := map[string]string{"main.go": "package main\n\nfunc main() {}\n"}
	if err := hub.CreateRepo("acme", "widget", files, fakehub.RepoOptions{NoCopilot: true}); err != nil {
		t.Fatal(err)
	}
	client := hubtest.Client(t, hub, hub.Tokens().Author)
	reviewer := hubtest.Client(t, hub, hub.Tokens().Reviewer)
	db, err := store.Open(ctx, filepath.Join(t.TempDir(), "converge.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	clock := newTickClock()
	budget, err := server.NewPointBudget(perHour, burst, 0, clock)
	if err != nil {
		t.Fatal(err)
	}
	var _ engine.PollCharger = budget
	m := engine.NewManager(engine.Config{Store: db, Clock: clock, Polls: budget})
	var refs []forge.PRRef
	for i := 1; i <= loops; i++ {
		num, err := hub.CreatePR("acme", "widget", fakehub.NewPR{Head: fmt.Sprintf("b%d", i), Title: "t",
			Files: map[string]string{"main.go": fmt.Sprintf("package main\n\nfunc main() { println(%d) }\n", i)}})
		if err != nil {
			t.Fatal(err)
		}
		settleCI(t, hub, num)
		ref, err := forge.ParsePRURL(hub.PRURL("acme", "widget", num))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := m.Add(ctx, engine.NewSpec[watchState](&watchJob{db: db, loop: &watchLoop{f: client, ref: ref}})); err != nil {
			t.Fatal(err)
		}
		refs = append(refs, ref)
	}
	t.Cleanup(func() { _ = m.Drain(t.Context()) })
	hub.AdvanceClock(time.Minute)
	clock.settle(t, loops)
	tick := func(n int) {
		for range n {
			clock.Advance(time.Second)
			clock.settle(t, loops)
		}
	}
	tick(20) // every loop's probe took its ETag, with a whole read
	// The estimate of a poll falls as polls cost nothing: loops queued
	// behind the whole reads' permits come through.
	tick(60)

	// Idle: every poll a 304, nothing charged, and none held back.
	before, spent := hub.CountsFor(fakehub.LoginAuthor), budget.Spent()
	tick(120)
	idle := hub.CountsFor(fakehub.LoginAuthor).Sub(before)
	if idle.PrimaryPoints() != 0 || budget.Spent() != spent {
		t.Fatalf("idle polls: %+v at the forge, %v points charged: want none", idle, budget.Spent()-spent)
	}
	if idle.NotModified < loops*12 {
		t.Fatalf("idle polls: %d in two minutes, want every loop's 12: a free poll was held back (%+v)", idle.NotModified, idle)
	}

	// Busy: a label on every PR before every tick, so every poll reads whole.
	const secs = 120
	before, spent = hub.CountsFor(fakehub.LoginAuthor), budget.Spent()
	for i := range secs {
		for _, ref := range refs {
			if err := reviewer.AddLabels(ctx, ref, fmt.Sprintf("l%d", i)); err != nil {
				t.Fatal(err)
			}
		}
		hub.AdvanceClock(3 * time.Second)
		tick(1)
	}
	busy := hub.CountsFor(fakehub.LoginAuthor).Sub(before)
	charged := budget.Spent() - spent
	if float64(busy.PrimaryPoints()) != charged || charged == 0 {
		t.Fatalf("busy polls: the forge counted %d points (%+v), the budget charged %v: want the same, known", busy.PrimaryPoints(), busy, charged)
	}
	// One poll may overdraw by what it cost beyond its estimate.
	if limit := float64(burst + perHour*secs/3600 + 4); charged > limit {
		t.Fatalf("busy polls charged %v points in %d s, over the budget's %v", charged, secs, limit)
	}
	t.Logf("idle: %d polls, 0 points; busy: %d GraphQL reads, %d points in %d s under %d points an hour (burst %d)",
		idle.NotModified, busy.GraphQLQuery, busy.PrimaryPoints(), secs, perHour, burst)
}
