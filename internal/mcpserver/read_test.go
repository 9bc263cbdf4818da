package mcpserver_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/convergeloop/converge/internal/mcpserver"
	"github.com/convergeloop/converge/internal/store"
)

// TestUX_2_MCPReadsRunsFromTheStore: list_runs, run_status, run_log and
// run_proof answer from a real state store as converge status, log and
// proof do: every seeded run with its kind, status and exit code, an
// unfinished run no converge holds as not alive, why a run ended
// non-zero, a PR run's decision log with its finding, the proof of a
// two-stable run, and why a limited run has none. An unknown run is a
// tool error naming it.
func TestUX_2_MCPReadsRunsFromTheStore(t *testing.T) {
	t.Parallel()
	state := t.TempDir()
	s := seed(t, state)
	cs := session(t, state, nil, "")

	var list struct {
		Runs []mcpserver.Run `json:"runs"`
		Note string          `json:"note"`
	}
	call(t, cs, "list_runs", nil, &list)
	if len(list.Runs) != 3 || list.Runs[0].ID != s.orphan || list.Runs[1].ID != s.limited || list.Runs[2].ID != s.proven {
		t.Fatalf("list_runs: want the three runs newest first, got %+v", list.Runs)
	}
	call(t, cs, "list_runs", map[string]any{"limit": 2}, &list)
	if len(list.Runs) != 2 || !strings.Contains(list.Note, "there are more") {
		t.Fatalf("list_runs limit 2: want 2 runs and a note that there are more, got %+v", list)
	}

	var r mcpserver.Run
	call(t, cs, "run_status", map[string]any{"run": s.proven}, &r)
	if r.Kind != "pr" || r.Status != "two-stable" || r.ExitCode == nil || *r.ExitCode != 0 || r.EndedAt == "" {
		t.Errorf("run_status of the proven run: %+v", r)
	}
	r = mcpserver.Run{}
	call(t, cs, "run_status", map[string]any{"run": s.limited}, &r)
	if r.Kind != "loop" || r.Status != "limited" || r.ExitCode == nil || *r.ExitCode != 4 || !strings.Contains(r.Why, "max-iterations 2 reached") {
		t.Errorf("run_status of the limited run: %+v", r)
	}
	r = mcpserver.Run{}
	call(t, cs, "run_status", map[string]any{"run": s.orphan}, &r)
	if r.Status != "running" || r.ExitCode != nil || r.Alive == nil || *r.Alive {
		t.Errorf("run_status of the orphan: want running, not alive, got %+v", r)
	}

	var lg struct{ Run, Log string }
	res := call(t, cs, "run_log", map[string]any{"run": s.proven}, &lg)
	for _, want := range []string{"# converge run " + s.proven, "### Round 1", "### Round 2", "Mean divides by zero", "addressed", "two-stable (exit 0)"} {
		if !strings.Contains(lg.Log, want) {
			t.Errorf("run_log lacks %q:\n%s", want, lg.Log)
		}
	}
	if textOf(res) != lg.Log {
		t.Errorf("run_log: the text content is not the markdown log")
	}
	call(t, cs, "run_log", map[string]any{"run": s.limited}, &lg)
	if !strings.Contains(lg.Log, "limited") || !strings.Contains(lg.Log, "go test ./...") {
		t.Errorf("run_log of the loop run:\n%s", lg.Log)
	}

	var pf struct {
		Run   mcpserver.Run  `json:"run"`
		Proof map[string]any `json:"proof"`
		Text  string         `json:"text"`
	}
	call(t, cs, "run_proof", map[string]any{"run": s.proven}, &pf)
	if pf.Run.ID != s.proven || pf.Proof["head_sha"] != strings.Repeat("c", 40) || pf.Proof["ci_state"] != "SUCCESS" || pf.Proof["rounds_run"] != 2.0 {
		t.Errorf("run_proof: %+v", pf)
	}
	if !strings.Contains(pf.Text, "cccccccccccc") || !strings.Contains(pf.Text, "PRR_9") {
		t.Errorf("run_proof text lacks the head and the review:\n%s", pf.Text)
	}
	pf.Proof, pf.Text = nil, ""
	call(t, cs, "run_proof", map[string]any{"run": s.limited}, &pf)
	if pf.Proof != nil || !strings.Contains(pf.Text, "no proof") || !strings.Contains(pf.Text, "max-iterations 2 reached") {
		t.Errorf("run_proof of the limited run: want no proof and why, got %+v", pf)
	}

	for _, tool := range []string{"run_status", "run_log", "run_proof", "stop_run"} {
		if msg := toolError(t, callRaw(t, cs, tool, map[string]any{"run": "r-20990101-ffffff"}), tool); !strings.Contains(msg, `no run "r-20990101-ffffff"`) {
			t.Errorf("%s of an unknown run: %s", tool, msg)
		}
		if msg := toolError(t, callRaw(t, cs, tool, map[string]any{"run": "--json"}), tool); !strings.Contains(msg, "not a run id") {
			t.Errorf("%s of a flag: %s", tool, msg)
		}
	}
}

// TestPR_G5_MCPStopRunAsksTheRunToStop: stop_run is converge stop: the
// store records the stop request the running loop reads at its next
// step; a run that already ended cannot be stopped, and says how it
// ended. (TestPR_G5_MCPStopEndsAPlanRun stops a live one.)
func TestPR_G5_MCPStopRunAsksTheRunToStop(t *testing.T) {
	t.Parallel()
	state := t.TempDir()
	s := seed(t, state)
	cs := session(t, state, nil, "")

	var out struct{ Run, Message string }
	call(t, cs, "stop_run", map[string]any{"run": s.orphan}, &out)
	if out.Run != s.orphan || !strings.Contains(out.Message, "stop requested for run "+s.orphan) {
		t.Errorf("stop_run: %+v", out)
	}
	db, err := store.Open(context.Background(), filepath.Join(state, "converge.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if stop, err := db.StopRequested(context.Background(), s.orphan); err != nil || !stop {
		t.Errorf("the store holds no stop request for %s (%v)", s.orphan, err)
	}
	if stop, err := db.StopRequested(context.Background(), s.limited); err != nil || stop {
		t.Errorf("the store holds a stop request for %s, which was not stopped (%v)", s.limited, err)
	}
	if msg := toolError(t, callRaw(t, cs, "stop_run", map[string]any{"run": s.proven}), "stop_run"); !strings.Contains(msg, "already ended two-stable") || !strings.Contains(msg, "exit 2") {
		t.Errorf("stop_run of an ended run: %s", msg)
	}
}
