package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/convergeloop/converge/internal/agent"
	"github.com/convergeloop/converge/internal/emulator/fakehub"
	"github.com/convergeloop/converge/internal/exitcode"
	"github.com/convergeloop/converge/internal/prloop"
	"github.com/convergeloop/converge/internal/store"
	"github.com/convergeloop/converge/internal/testutil/hubtest"
)

// TestPR_G6_ServePrunesTheCloneCacheOnStart: `converge serve` starts on a
// state directory whose clone cache holds what earlier runs left: the
// clone of a repository no run works on any more, with the worktree of a
// run the store never finished recording (its registration names a live
// process: a pid reused), and the clone of a repository whose run another
// live process drives. On start it removes the first clone and its
// worktree, on disk, and keeps the second.
func TestPR_G6_ServePrunesTheCloneCacheOnStart(t *testing.T) {
	hub := hubtest.Start(t, time.Hour)
	state := t.TempDir()
	work := filepath.Join(state, "work")
	src := t.TempDir()
	git := func(dir string, args ...string) {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	git(src, "init", "--quiet")
	if err := os.WriteFile(filepath.Join(src, "a.txt"), []byte("a\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	git(src, "add", ".")
	git(src, "commit", "--quiet", "-m", "a")
	host, _ := os.Hostname()
	live := strconv.Itoa(os.Getpid()) + " " + host + "\n" // this test's: alive
	cached := func(repo, run string) string {
		t.Helper()
		clone := filepath.Join(work, "clones", "example.com", "acme", repo)
		if err := os.MkdirAll(filepath.Dir(clone), 0o755); err != nil {
			t.Fatal(err)
		}
		git(src, "clone", "--bare", "--quiet", src, clone)
		if err := os.MkdirAll(filepath.Join(clone, "converge-runs"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(clone, "converge-runs", run), []byte(live), 0o644); err != nil {
			t.Fatal(err)
		}
		return clone
	}
	gone := cached("gone", "r-old")
	oldTree := filepath.Join(work, "worktrees", "r-old")
	git(gone, "worktree", "add", "--quiet", "--detach", oldTree, "HEAD")
	kept := cached("kept", "r-other")
	db, err := store.Open(context.Background(), filepath.Join(state, "converge.db"))
	if err != nil {
		t.Fatal(err)
	}
	if err := db.CreateRun(context.Background(), store.Run{ID: "r-other", Kind: "loop", Target: src}); err != nil {
		t.Fatal(err)
	}
	db.Close()

	sp := startServe(t, map[string]string{"CONVERGE_TOKEN": hub.Tokens().Author},
		"--api-url", hub.APIURL(), "--ca-file", hub.CAFile(), "--state", state)
	deadline := time.After(time.Minute)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for !strings.Contains(sp.out.String(), "pruned 1 clone(s)") {
		select {
		case <-tick.C:
		case <-sp.done:
			t.Fatalf("serve exited:\n%s", sp.out.String())
		case <-deadline:
			t.Fatalf("serve never pruned the clone cache:\n%s", sp.out.String())
		}
	}
	for _, p := range []string{gone, oldTree} {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("%s is left (%v)", p, err)
		}
	}
	if _, err := os.Stat(filepath.Join(kept, "converge-runs", "r-other")); err != nil {
		t.Errorf("the clone a live run of another process uses was pruned: %v", err)
	}
}

// TestPR_S2_ServePollBudgetRefusesNone: a budget of no poll (in points or
// in the old polls a minute), both budgets at once, and --keep (a
// worktree kept past the run), are refused before anything starts, in one
// line naming the flag; the old --poll-budget's line names --poll-points.
func TestPR_S2_ServePollBudgetRefusesNone(t *testing.T) {
	for _, args := range [][]string{{"--poll-points", "0"}, {"--poll-budget", "0"}, {"--poll-budget", "5", "--poll-points", "100"}, {"--keep"}} {
		ios, _, errOut := testIO(nil)
		code := Run(context.Background(), append([]string{"serve", "--state", t.TempDir()}, args...), ios)
		if code != exitcode.Usage || !strings.Contains(errOut.String(), strings.TrimPrefix(args[0], "--")) {
			t.Errorf("serve %v: exit %d, want 2 (usage): %s", args, code, errOut)
		}
		if args[0] == "--poll-budget" && !strings.Contains(errOut.String(), "--poll-points N") {
			t.Errorf("serve %v does not name the budget that replaces it: %s", args, errOut)
		}
	}
}

// TestPR_S2_ServePollsDrawForgePoints: serve's fallback polls draw a
// budget of forge points (--poll-points), charged what the forge said
// each poll cost, and /metrics shows it beside what each identity (here
// the token's user) spent on each of its rate limits and what is left of
// them: the run's calls are counted as they are made.
func TestPR_S2_ServePollsDrawForgePoints(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a PR loop")
	}
	hub := hubtest.Start(t, time.Hour) // Copilot's review never comes: the loop polls
	_, urls := hubtest.DemoPRs(t, hub, 1)
	sp := startServe(t, map[string]string{"CONVERGE_TOKEN": hub.Tokens().Author},
		append([]string{"--api-url", hub.APIURL(), "--ca-file", hub.CAFile(), "--state", t.TempDir(),
			"--poll-min", "1s", "--poll-max", "1s", "--poll-points", "3600"}, urls...)...)
	metric := func(name string, labels ...string) (float64, bool) {
		t.Helper()
		resp, err := http.Get("http://" + sp.addr + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
	lines:
		for line := range strings.Lines(string(b)) {
			rest, ok := strings.CutPrefix(line, name)
			if !ok || (rest[0] != ' ' && rest[0] != '{') {
				continue
			}
			for _, l := range labels {
				if !strings.Contains(rest, l) {
					continue lines
				}
			}
			f, err := strconv.ParseFloat(strings.TrimSpace(rest[strings.LastIndexByte(rest, ' '):]), 64)
			if err != nil {
				t.Fatal(err)
			}
			return f, true
		}
		return 0, false
	}
	api, err := url.Parse(hub.APIURL())
	if err != nil {
		t.Fatal(err)
	}
	user := `identity="` + api.Host + "/" + fakehub.LoginAuthor + `"`
	deadline := time.After(3 * time.Minute)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		spent, _ := metric("converge_poll_budget_spent_total")
		calls, _ := metric("converge_forge_identity_calls_total", user, `resource="graphql"`)
		left, _ := metric("converge_forge_identity_rate_limit_remaining", user, `resource="graphql"`)
		points, _ := metric("converge_forge_identity_points_total", user, `resource="graphql"`)
		if spent > 0 && calls > 0 && left > 0 && left < 5000 && points > 0 {
			if avail, ok := metric("converge_poll_budget_available"); !ok || avail > 60 {
				t.Fatalf("poll budget available %v (%v): want points, at most a minute's 60", avail, ok)
			}
			// The fleet-wide series are the identities' summed: never
			// left at zero beside them.
			if all, ok := metric("converge_forge_requests_total", `kind="graphql"`); !ok || all < calls {
				t.Fatalf("converge_forge_requests_total{kind=graphql} %v (%v) beside the identity's %v calls", all, ok, calls)
			}
			if least, ok := metric("converge_forge_rate_limit_remaining", `resource="graphql"`); !ok || least <= 0 || least >= 5000 {
				t.Fatalf("converge_forge_rate_limit_remaining{resource=graphql} %v (%v): want what the forge said was left", least, ok)
			}
			if runs, ok := metric("converge_agent_runs_total", `which="all"`); !ok || runs < 0 {
				t.Fatalf("converge_agent_runs_total %v (%v)", runs, ok)
			}
			return
		}
		select {
		case <-tick.C:
		case <-sp.done:
			t.Fatalf("serve exited:\n%s", sp.out.String())
		case <-deadline:
			t.Fatalf("no poll charged (%v points) or no spend of %s (calls %v, points %v, left %v) on /metrics:\n%s", spent, user, calls, points, left, sp.out.String())
		}
	}
}

// TestPR_S2_ServeLoopsTakeTheFleetsPollPermits: a serve loop waiting for a
// review that does not come polls through the fleet's budget: the permits
// /metrics reports fall from the budget's burst as its polls take them.
func TestPR_S2_ServeLoopsTakeTheFleetsPollPermits(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a PR loop")
	}
	hub := hubtest.Start(t, time.Hour) // Copilot's review never comes
	_, urls := hubtest.DemoPRs(t, hub, 1)
	sp := startServe(t, map[string]string{"CONVERGE_TOKEN": hub.Tokens().Author},
		append([]string{"--api-url", hub.APIURL(), "--ca-file", hub.CAFile(), "--state", t.TempDir(),
			"--poll-min", "1s", "--poll-max", "1s", "--poll-budget", "10"}, urls...)...)
	available := func() float64 {
		t.Helper()
		resp, err := http.Get("http://" + sp.addr + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		for line := range strings.Lines(string(b)) {
			if v, ok := strings.CutPrefix(line, "converge_poll_budget_available "); ok {
				f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
				if err != nil {
					t.Fatal(err)
				}
				return f
			}
		}
		t.Fatalf("no converge_poll_budget_available in /metrics:\n%s", b)
		return 0
	}
	// The old budget, in polls a minute, still works, and says what
	// replaces it.
	if !strings.Contains(sp.out.String(), "--poll-points N") {
		t.Errorf("serve --poll-budget does not name --poll-points:\n%s", sp.out.String())
	}
	// Its burst is one permit: the first poll takes it.
	deadline := time.After(3 * time.Minute)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for available() >= 1 {
		select {
		case <-tick.C:
		case <-sp.done:
			t.Fatalf("serve exited:\n%s", sp.out.String())
		case <-deadline:
			t.Fatalf("the waiting loop's polls took no permit of the fleet's budget:\n%s", sp.out.String())
		}
	}
}

// TestPR_M5_MetricsSumTheAgentsCost: serve's /metrics sums the agents'
// cost over the runs its store holds, as each run's usage report does
// (converge proof), with how many agent runs there were and how many
// reported a price: a cost no CLI reported is not shown as zero spent.
func TestPR_M5_MetricsSumTheAgentsCost(t *testing.T) {
	ctx := context.Background()
	db, err := store.Open(ctx, filepath.Join(t.TempDir(), "converge.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for i, rounds := range [][]prloop.RoundRecord{
		{{N: 1, Usage: agent.Usage{CostUSD: 0.25, CostReported: true, Runs: 1, PricedRuns: 1}}, {N: 2, Usage: agent.Usage{Runs: 1}}},
		{{N: 1, Usage: agent.Usage{CostUSD: 0.5, CostReported: true, Runs: 2, PricedRuns: 2}}},
	} {
		st, err := json.Marshal(prloop.State{Rounds: rounds})
		if err != nil {
			t.Fatal(err)
		}
		if err := db.CreateRun(ctx, store.Run{ID: fmt.Sprintf("r-%d", i), Kind: "pr", Target: fmt.Sprintf("https://github.com/o/r/pull/%d", i), State: st}); err != nil {
			t.Fatal(err)
		}
	}
	f := &fleet{db: db}
	st := f.stats()
	if st.AgentCostUSD != 0.75 || st.AgentRuns != 4 || st.AgentPricedRuns != 3 {
		t.Fatalf("stats %+v: want $0.75 over 4 agent runs, 3 of them priced", st)
	}
}
