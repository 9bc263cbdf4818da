package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/convergeloop/converge/internal/exitcode"
	"github.com/convergeloop/converge/internal/proc"
	"github.com/convergeloop/converge/internal/store"
)

type startPRIn struct {
	PRs            []string `json:"prs" jsonschema:"the pull request URLs; several run as several loops in one converge"`
	Agent          string   `json:"agent,omitempty" jsonschema:"the fixer: suggest (built in), command, claude, codex, gemini or opencode (default: converge's)"`
	AgentCmd       string   `json:"agent_cmd,omitempty" jsonschema:"with agent command: the fixer program"`
	ReviewAgent    string   `json:"review_agent,omitempty" jsonschema:"the local reviewer: suggest, command, claude, codex, gemini or opencode"`
	ReviewAgentCmd string   `json:"review_agent_cmd,omitempty" jsonschema:"with review_agent command: the reviewer program"`
	MaxIterations  int      `json:"max_iterations,omitempty" jsonschema:"at most this many rounds (default: the configuration's)"`
	Args           []string `json:"args,omitempty" jsonschema:"further converge pr flags, one word each (e.g. --test-cmd, go test ./...)"`
}

type startLoopIn struct {
	Workdir       string   `json:"workdir,omitempty" jsonschema:"the git repository to work in (default: the server's working directory); relative paths in the other fields are relative to it"`
	Goal          string   `json:"goal" jsonschema:"the goal, verbatim (frozen for the run)"`
	Check         string   `json:"check,omitempty" jsonschema:"mechanical done-check: a command converge runs with sh -c; exit 0 means done (give check or judge)"`
	Judge         string   `json:"judge,omitempty" jsonschema:"judged done-check: the judge agent (command)"`
	JudgeCmd      string   `json:"judge_cmd,omitempty" jsonschema:"with judge command: the judge program"`
	Agent         string   `json:"agent,omitempty" jsonschema:"the body agent: command (default), claude, codex, gemini or opencode"`
	AgentCmd      string   `json:"agent_cmd,omitempty" jsonschema:"with agent command: the program run each iteration"`
	MaxIterations int      `json:"max_iterations" jsonschema:"at most this many iterations (required: a loop has a bound)"`
	Args          []string `json:"args,omitempty" jsonschema:"further converge loop flags, one word each (e.g. --max-wall-clock, 30m)"`
}

type startPlanIn struct {
	Workdir        string   `json:"workdir,omitempty" jsonschema:"the git repository to work in (default: the server's working directory); relative paths in the other fields are relative to it"`
	Plan           string   `json:"plan" jsonschema:"the plan file (YAML)"`
	Agent          string   `json:"agent,omitempty" jsonschema:"the implementer: command (default), claude, codex, gemini or opencode"`
	AgentCmd       string   `json:"agent_cmd,omitempty" jsonschema:"with agent command: the implementer program"`
	ReviewAgent    string   `json:"review_agent,omitempty" jsonschema:"the reviewer (default: the agent's backend)"`
	ReviewAgentCmd string   `json:"review_agent_cmd,omitempty" jsonschema:"with review_agent command: the reviewer program"`
	Args           []string `json:"args,omitempty" jsonschema:"further converge plan run flags, one word each (e.g. --parallel, 2)"`
}

type startOut struct {
	Runs   []Run  `json:"runs" jsonschema:"the runs the started converge recorded, as list_runs shows them"`
	PID    int    `json:"pid" jsonschema:"the started converge's process id"`
	Output string `json:"output" jsonschema:"the file the started converge writes its progress to"`
	// ExitCode is set when the started converge already ended.
	ExitCode *exitcode.Code `json:"exit_code,omitempty" jsonschema:"set when the started converge already ended: its exit code (IF-1)"`
	Note     string         `json:"note,omitempty"`
}

func (s *server) addStartTools(srv *mcp.Server) {
	starts := &mcp.ToolAnnotations{DestructiveHint: new(false)}
	mcp.AddTool(srv, &mcp.Tool{
		Name: "start_pr",
		Description: "Start converge pr on pull requests in the background: it fixes what trusted reviewers found, runs the tests, pushes, answers and resolves threads, and ends only at a proven two-stable finish (or hands off). " +
			"Returns once the run is recorded, with its run id; the run goes on after this session. An unfinished run of the same PR is resumed.",
		Annotations: starts,
	}, s.startPR)
	mcp.AddTool(srv, &mcp.Tool{
		Name: "start_loop",
		Description: "Start converge loop in the background: iterate an agent on a git repository until a done-check that converge runs itself passes (SPEC §2); each accepted iteration is committed on the current branch. " +
			"Returns once the run is recorded, with its run id; the run goes on after this session.",
		Annotations: starts,
	}, s.startLoop)
	mcp.AddTool(srv, &mcp.Tool{
		Name: "start_plan",
		Description: "Start converge plan run in the background: execute a plan of tasks with implementer and reviewer agents on a git repository (SPEC §3), each task committed on the current branch. " +
			"Returns once the run is recorded, with its run id; the run goes on after this session.",
		Annotations: starts,
	}, s.startPlan)
}

// flag appends --name value when value is set.
func flag(args []string, name, value string) []string {
	if value == "" {
		return args
	}
	return append(args, "--"+name, value)
}

// checkArgs refuses extra words that name another state store or engine:
// a run started here keeps its state in the server's store. (The
// server's --state, given last, would win silently; --engine temporal
// would take the run out of the store.)
func checkArgs(args []string) error {
	for _, a := range args {
		name, _, _ := strings.Cut(a, "=")
		switch name {
		case "--state", "--engine":
			return fmt.Errorf("args may not set %s: a run started here keeps its state in the server's store (converge mcp --state DIR)", name)
		}
	}
	return nil
}

func (s *server) startPR(ctx context.Context, _ *mcp.CallToolRequest, in startPRIn) (*mcp.CallToolResult, startOut, error) {
	if len(in.PRs) == 0 {
		return nil, startOut{}, errors.New("start_pr needs at least one pull request URL in prs")
	}
	args := append([]string{"pr"}, in.PRs...)
	args = flag(args, "agent", in.Agent)
	args = flag(args, "agent-cmd", in.AgentCmd)
	args = flag(args, "review-agent", in.ReviewAgent)
	args = flag(args, "review-agent-cmd", in.ReviewAgentCmd)
	if in.MaxIterations != 0 {
		args = flag(args, "max-iterations", strconv.Itoa(in.MaxIterations))
	}
	out, err := s.start(ctx, "pr", "", append(args, in.Args...), len(in.PRs))
	return nil, out, err
}

func (s *server) startLoop(ctx context.Context, _ *mcp.CallToolRequest, in startLoopIn) (*mcp.CallToolResult, startOut, error) {
	args := []string{"loop", "--goal", in.Goal, "--max-iterations", strconv.Itoa(in.MaxIterations)}
	args = flag(args, "check", in.Check)
	args = flag(args, "judge", in.Judge)
	args = flag(args, "judge-cmd", in.JudgeCmd)
	args = flag(args, "agent", in.Agent)
	args = flag(args, "agent-cmd", in.AgentCmd)
	out, err := s.start(ctx, "loop", in.Workdir, append(args, in.Args...), 1)
	return nil, out, err
}

func (s *server) startPlan(ctx context.Context, _ *mcp.CallToolRequest, in startPlanIn) (*mcp.CallToolResult, startOut, error) {
	if in.Plan == "" || strings.HasPrefix(in.Plan, "-") {
		return nil, startOut{}, fmt.Errorf("plan %q: give the plan file's path", in.Plan)
	}
	args := []string{"plan", "run", in.Plan}
	args = flag(args, "agent", in.Agent)
	args = flag(args, "agent-cmd", in.AgentCmd)
	args = flag(args, "review-agent", in.ReviewAgent)
	args = flag(args, "review-agent-cmd", in.ReviewAgentCmd)
	out, err := s.start(ctx, "plan", in.Workdir, append(args, in.Args...), 1)
	return nil, out, err
}

// start starts converge with args (its command first) in dir as a
// detached child and returns once it holds want runs in the store, or
// ended. The child keeps the server's state directory, and its output goes
// to a file under it, since it outlives this session.
func (s *server) start(ctx context.Context, kind, dir string, args []string, want int) (startOut, error) {
	if err := checkArgs(args); err != nil {
		return startOut{}, err
	}
	if dir == "" {
		dir = "."
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return startOut{}, fmt.Errorf("workdir %s: %w", dir, err)
	}
	if fi, err := os.Stat(abs); err != nil || !fi.IsDir() {
		return startOut{}, fmt.Errorf("workdir %s: not a directory; give the path of the git repository to work in", dir)
	}
	logDir := filepath.Join(s.cfg.StateDir, "mcp")
	if err := os.MkdirAll(logDir, 0o700); err != nil {
		return startOut{}, fmt.Errorf("state directory %s: %w", s.cfg.StateDir, err)
	}
	f, err := os.CreateTemp(logDir, kind+"-"+time.Now().UTC().Format("20060102T150405")+"-*.log")
	if err != nil {
		return startOut{}, fmt.Errorf("output file for the run: %w", err)
	}
	defer f.Close()
	// Not internal/proc: its processes die with converge, and this one
	// must outlive the MCP session that started it.
	cmd := exec.Command(s.cfg.Executable, append(args, "--state", s.cfg.StateDir)...)
	cmd.Dir = abs
	cmd.Env = s.cfg.Env
	cmd.Stdout, cmd.Stderr = f, f
	detach(cmd)
	began := time.Now()
	if err := cmd.Start(); err != nil {
		return startOut{}, fmt.Errorf("start converge %s: %w", kind, err)
	}
	ended := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(ended)
	}()
	out := startOut{PID: cmd.Process.Pid, Output: f.Name()}
	ids, err := s.awaitRuns(ctx, cmd.Process.Pid, want, ended)
	if err != nil {
		return out, fmt.Errorf("%w (converge %s runs as pid %d, its output in %s)", err, kind, out.PID, out.Output)
	}
	select {
	case <-ended:
		code := exitcode.Code(cmd.ProcessState.ExitCode())
		out.ExitCode = &code
		if len(ids) == 0 && code != exitcode.Usage {
			ids = s.endedRuns(ctx, out.Output, began)
		}
		if len(ids) == 0 {
			return out, &commandError{cmd: kind, code: code, msg: errorLine(readTail(out.Output), "")}
		}
	default:
	}
	if out.Runs, err = s.find(ctx, ids...); err != nil {
		return out, err
	}
	if len(out.Runs) < want {
		out.Note = fmt.Sprintf("%d of %d runs recorded when this answered; the output file says what became of the rest", len(out.Runs), want)
	}
	return out, nil
}

// awaitRuns waits until the process pid holds want runs in the store,
// or ends, or the start wait runs out, and returns the runs it holds.
// It polls the store: another process writes it.
func (s *server) awaitRuns(ctx context.Context, pid, want int, ended <-chan struct{}) ([]string, error) {
	tick := time.NewTicker(25 * time.Millisecond)
	defer tick.Stop()
	deadline := time.NewTimer(s.cfg.StartWait)
	defer deadline.Stop()
	var db *store.Store
	defer func() {
		if db != nil {
			db.Close()
		}
	}()
	var ids []string
	look := func() error {
		if db == nil {
			// The child creates the store; opening it first would too.
			if _, err := os.Stat(s.storePath()); errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			var err error
			if db, err = s.cfg.OpenStore(ctx); err != nil {
				return err
			}
		}
		var err error
		ids, err = db.RunsHeldBy(ctx, pid)
		return err
	}
	for {
		if err := look(); err != nil {
			return nil, err
		}
		if len(ids) >= want {
			return ids, nil
		}
		select {
		case <-ended:
			// A run that ended, or crashed, since the last look.
			return ids, look()
		case <-tick.C:
		case <-deadline.C:
			if len(ids) > 0 {
				return ids, nil
			}
			return nil, fmt.Errorf("no run recorded within %s", s.cfg.StartWait)
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// runID is how converge names a run in what it prints.
var runID = regexp.MustCompile(`\br-\d{8}-[0-9a-f]{6}\b`)

// endedRuns are the runs a converge that already ended recorded: the run
// ids its output names that the store holds, updated since it began. (A
// run over before its lock was seen holds none.)
func (s *server) endedRuns(ctx context.Context, output string, began time.Time) []string {
	b, err := os.ReadFile(output)
	if err != nil {
		return nil
	}
	if _, err := os.Stat(s.storePath()); err != nil {
		return nil // it recorded nothing
	}
	db, err := s.cfg.OpenStore(ctx)
	if err != nil {
		return nil
	}
	defer db.Close()
	var ids []string
	seen := map[string]bool{}
	for _, id := range runID.FindAllString(string(b), -1) {
		if seen[id] {
			continue
		}
		seen[id] = true
		if r, err := db.GetRun(ctx, id); err == nil && !r.UpdatedAt.Before(began.Add(-time.Second)) {
			ids = append(ids, id)
		}
	}
	return ids
}

// readTail is the end of a file, for a start that failed.
func readTail(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	if len(b) > 64<<10 {
		b = b[len(b)-64<<10:]
	}
	return string(b)
}

func (s *server) disposeThreads(ctx context.Context, _ *mcp.CallToolRequest, in disposeIn) (*mcp.CallToolResult, disposeOut, error) {
	if in.PR == "" || strings.HasPrefix(in.PR, "-") {
		return nil, disposeOut{}, fmt.Errorf("pr %q: give the pull request's URL", in.PR)
	}
	if err := checkArgs(in.Args); err != nil {
		return nil, disposeOut{}, err
	}
	argv := append([]string{s.cfg.Executable, "pr", in.PR, "--dispose-only", "--state", s.cfg.StateDir}, in.Args...)
	// A disposal is short: it runs as converge's own subprocess, and a
	// cancelled call stops it as Ctrl-C would (its replies are
	// idempotent, REL-2).
	// converge's own binary: supervised, not contained (SEC-7).
	res, err := proc.Run(ctx, proc.Spec{Argv: argv, Env: s.cfg.Env, MaxOutput: -1, Trusted: true})
	if err != nil {
		return nil, disposeOut{}, fmt.Errorf("start converge pr --dispose-only: %w", err)
	}
	if res.ExitCode != 0 {
		return nil, disposeOut{}, &commandError{cmd: "pr --dispose-only", code: exitcode.Code(res.ExitCode), msg: errorLine(res.Stderr, res.Stdout)}
	}
	var out disposeOut
	if err := json.Unmarshal([]byte(strings.TrimSpace(res.Stdout)), &out); err != nil {
		return nil, disposeOut{}, fmt.Errorf("read the disposal's envelope: %w", err)
	}
	return nil, out, nil
}
