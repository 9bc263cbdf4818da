package mcpserver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/convergeloop/converge/internal/checkloop"
	"github.com/convergeloop/converge/internal/cli"
	"github.com/convergeloop/converge/internal/cmdutil"
	"github.com/convergeloop/converge/internal/mcpserver"
	"github.com/convergeloop/converge/internal/prloop"
	"github.com/convergeloop/converge/internal/proc"
	"github.com/convergeloop/converge/internal/store"
	"github.com/convergeloop/converge/internal/testutil/gobuild"
)

func TestMain(m *testing.M) {
	// The disposal runs converge as a supervised subprocess (AG-K1), as
	// the binary does; a re-executed test binary becomes the supervisor.
	proc.Supervise()
	gobuild.ShareCache()
	// The runs the server starts have scripted agents that write their
	// logs in the tests' temporary directories: contained (SEC-7), they
	// may, as the cli tests' do.
	_ = os.Setenv("CONVERGE_SANDBOX_WRITABLE", os.TempDir())
	code := m.Run()
	if built.dir != "" {
		os.RemoveAll(built.dir)
	}
	os.Exit(code)
}

// built is the one converge binary buildConverge makes.
var built struct {
	once     sync.Once
	dir, bin string
	out      []byte
	err      error
}

// buildConverge builds the converge binary once for the package: the runs
// the server starts, and converge mcp itself, are the real binary.
func buildConverge(t *testing.T) string {
	t.Helper()
	built.once.Do(func() {
		if built.dir, built.err = os.MkdirTemp("", "converge-mcp-bin-"); built.err != nil {
			return
		}
		built.bin = filepath.Join(built.dir, "converge")
		built.out, built.err = exec.Command("go", "build", "-o", built.bin, "github.com/convergeloop/converge/cmd/converge").CombinedOutput()
	})
	if built.err != nil {
		t.Fatalf("go build: %v\n%s", built.err, built.out)
	}
	return built.bin
}

// session serves converge mcp's server on the state directory state over
// an in-memory transport, with env as the environment of the runs it
// starts and of its in-process commands, and returns the client's
// session. Runs it starts run exe (buildConverge's binary; "": none
// started).
func session(t *testing.T, state string, env []string, exe string) *mcp.ClientSession {
	t.Helper()
	ios := &cmdutil.IOStreams{In: strings.NewReader(""), Out: &bytes.Buffer{}, ErrOut: &bytes.Buffer{}, Getenv: getenv(env)}
	if env != nil {
		ios.Environ = func() []string { return env }
	}
	cfg, err := cli.MCPConfig(ios, state)
	if err != nil {
		t.Fatal(err)
	}
	if exe == "" {
		exe = "/nonexistent/converge"
	}
	cfg.Executable = exe
	return connect(t, mcpserver.New(cfg))
}

// getenv looks env up, after the process's environment (nil: the
// process's only).
func getenv(env []string) func(string) string {
	return func(k string) string {
		v := os.Getenv(k)
		for _, kv := range env {
			if name, val, _ := strings.Cut(kv, "="); name == k {
				v = val
			}
		}
		return v
	}
}

func connect(t *testing.T, srv *mcp.Server) *mcp.ClientSession {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	st, ct := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cs.Close()
		ss.Wait()
		cancel()
	})
	return cs
}

// call calls tool with args and decodes its structured content into out
// (nil: none); a tool error fails the test.
func call(t *testing.T, cs *mcp.ClientSession, tool string, args map[string]any, out any) *mcp.CallToolResult {
	t.Helper()
	res := callRaw(t, cs, tool, args)
	if res.IsError {
		t.Fatalf("%s: tool error: %s", tool, textOf(res))
	}
	if out != nil {
		b, err := json.Marshal(res.StructuredContent)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("%s: %v in %s", tool, err, b)
		}
	}
	return res
}

// callRaw calls tool; only a protocol error fails the test.
func callRaw(t *testing.T, cs *mcp.ClientSession, tool string, args map[string]any) *mcp.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	return res
}

// toolError is the text of a tool error; a result that is none fails the
// test.
func toolError(t *testing.T, res *mcp.CallToolResult, tool string) string {
	t.Helper()
	if !res.IsError {
		t.Fatalf("%s: want a tool error, got %s", tool, textOf(res))
	}
	return textOf(res)
}

func textOf(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// waitFor waits until cond holds; the bound only keeps a broken run
// from hanging the test.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(3 * time.Minute)
	for !cond() {
		select {
		case <-tick.C:
		case <-deadline:
			t.Fatalf("%s: not within 3 minutes", what)
		}
	}
}

// seeded are the runs seed records.
type seeded struct {
	proven, limited, orphan string
}

// seed records three runs in the store of the state directory state, as
// the loops record them: a PR run proven two-stable after 2 rounds, a
// loop run that ended limited, and a PR run left unfinished by a
// converge that is gone.
func seed(t *testing.T, state string) seeded {
	t.Helper()
	ctx := context.Background()
	db, err := store.Open(ctx, filepath.Join(state, "converge.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	day := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	s := seeded{proven: "r-20261130-aaaaaa", limited: "r-20261130-bbbbbb", orphan: "r-20261130-cccccc"}
	pr := "https://github.example/acme/widget/pull/7"
	head := strings.Repeat("c", 40)
	proof := prloop.Proof{PR: pr, HeadSHA: head, ReviewedCommit: head, ReviewID: "PRR_9", ReviewSource: "copilot",
		ReviewedAt: day.Add(40 * time.Minute), CIState: "SUCCESS", RoundsRun: 2, MergeState: "CLEAN",
		EscalatedThreads: []string{}, HandOffs: []string{}, UntrustedThreads: []string{}, RevertedRounds: []int{}}
	proofJSON := mustJSON(t, proof)
	st := prloop.State{Phase: prloop.PhaseStart, Round: 2, InitialHead: strings.Repeat("a", 40),
		Terminal: &prloop.Terminal{Reason: prloop.ReasonTwoStable, Message: "two-stable", Proof: &proof}}
	must(t, db.CreateRun(ctx, store.Run{ID: s.proven, Kind: "pr", Target: pr, State: mustJSON(t, st), StartedAt: day}))
	// Round 1 pushed a fix, round 2 found the head clean.
	must(t, db.AddRound(ctx, store.Round{RunID: s.proven, N: 1, HeadSHA: strings.Repeat("a", 40), StartedAt: day, CommitSHA: head}))
	must(t, db.AddRound(ctx, store.Round{RunID: s.proven, N: 2, HeadSHA: head, StartedAt: day.Add(10 * time.Minute)}))
	must(t, db.AddFindings(ctx, s.proven, 1, []store.Finding{{ID: "f1", ThreadID: "PRRT_1", Path: "summary.go", StartLine: 16, EndLine: 16,
		Summary: "Mean divides by zero on an empty slice", Verdict: "structural", Source: "copilot", Author: "copilot", Disposition: "addressed"}}))
	must(t, db.AppendEvent(ctx, s.proven, store.Event{Time: day, Kind: "start", Message: "run " + s.proven + " on " + pr}))
	must(t, db.FinishRun(ctx, s.proven, "two-stable", 0, proofJSON))

	lst := checkloop.NewState(s.limited, checkloop.Config{Goal: "make the tests pass", MaxIterations: 2,
		Oracle: checkloop.Oracle{Class: checkloop.Mechanical, Command: "go test ./..."}})
	lst.Terminal = &checkloop.Terminal{Status: checkloop.StatusLimited, ExitCode: 4, Message: "max-iterations 2 reached and the done-check still fails; a limit is not a success"}
	must(t, db.CreateRun(ctx, store.Run{ID: s.limited, Kind: checkloop.Kind, Target: "loop:/src/calc", State: mustJSON(t, lst), StartedAt: day.Add(time.Hour)}))
	must(t, db.FinishRun(ctx, s.limited, "limited", 4, nil))

	must(t, db.CreateRun(ctx, store.Run{ID: s.orphan, Kind: "pr", Target: "https://github.example/acme/widget/pull/8",
		State: mustJSON(t, prloop.State{Phase: prloop.PhaseStart}), StartedAt: day.Add(2 * time.Hour)}))
	return s
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// stopOnCleanup ends the converge the test started as pid, if a failed
// test left it running: SIGTERM is its stop, and it ends its agents.
// Only a process that still runs the test's binary is signalled.
func stopOnCleanup(t *testing.T, pid int) {
	t.Cleanup(func() {
		b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cmdline"))
		if err != nil || built.bin == "" || !bytes.HasPrefix(b, []byte(built.bin)) {
			return
		}
		if p, err := os.FindProcess(pid); err == nil {
			_ = p.Signal(syscall.SIGTERM)
		}
	})
}
