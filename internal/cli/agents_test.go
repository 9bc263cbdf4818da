package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/convergeloop/converge/internal/agent"
	"github.com/convergeloop/converge/internal/agent/backends"
	"github.com/convergeloop/converge/internal/cmdutil"
	"github.com/convergeloop/converge/internal/config"
	"github.com/convergeloop/converge/internal/exitcode"
	"github.com/convergeloop/converge/internal/store"
)

// The agent CLIs as the commands build them, replaced by Go doubles
// (cmdutil.IOStreams.Backend): what a backend returns when its CLI said it could
// not run (*agent.CLIError), for the pre-flight check (AG-T4) and for a
// run that fails mid-way, end to end through converge pr, loop and plan.

// doubles builds double backends and remembers what each was built with
// and how often each kind of task ran.
type doubles struct {
	// check is what a pre-flight check gets (nil: the model answers).
	check error
	// fail is what a run of a kind in failKinds gets; every other run
	// answers as a clean review would.
	fail      error
	failKinds []string

	mu      sync.Mutex
	configs []backends.Config
	runs    map[string]int
}

func (d *doubles) build(cfg backends.Config) (agent.Agent, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.configs = append(d.configs, cfg)
	name := cfg.Name
	if cfg.Role != "" && cfg.Role != backends.RoleFix {
		name = cfg.Role + "-" + cfg.Name
	}
	return &double{d: d, name: name}, nil
}

func (d *doubles) count(kind string) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.runs[kind]
}

type double struct {
	d    *doubles
	name string
}

func (a *double) Name() string { return a.name }

func (a *double) Run(_ context.Context, t agent.Task) (agent.Result, error) {
	d := a.d
	d.mu.Lock()
	if d.runs == nil {
		d.runs = map[string]int{}
	}
	d.runs[t.Kind]++
	d.mu.Unlock()
	blocked := agent.Result{Record: agent.StatusRecord{Status: agent.StatusBlocked, Reason: agent.ReasonCLIError, FilesChanged: []string{}}}
	switch {
	case t.Kind == agent.TaskKindCheck && d.check != nil:
		return blocked, d.check
	case t.Kind == agent.TaskKindCheck:
		return agent.Result{Output: "OK", Record: agent.StatusRecord{Status: agent.StatusComplete, FilesChanged: []string{}}}, nil
	case d.fail != nil && slices.Contains(d.failKinds, t.Kind):
		return blocked, d.fail
	}
	return agent.Result{Output: "[]", Record: agent.StatusRecord{Status: agent.StatusComplete, FilesChanged: []string{}}}, nil
}

var (
	notLoggedIn = &agent.CLIError{Agent: "claude", Kind: agent.FailAuth, Message: "Not logged in · Please run /login"}
	endpoint    = &agent.CLIError{Agent: "claude", Kind: agent.FailEndpoint, Message: "API Error: Connection refused", Endpoint: "http://127.0.0.1:9/v1/messages"}
)

// noRuns fails the test when the state directory holds a recorded run.
func noRuns(t *testing.T, state string) {
	t.Helper()
	path := filepath.Join(state, "converge.db")
	if _, err := os.Stat(path); os.IsNotExist(err) {
		return
	}
	db, err := store.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	runs, err := db.ListRuns(context.Background(), store.ListOptions{})
	if err != nil || len(runs) != 0 {
		t.Errorf("the store holds %d run(s) (%v); a failed pre-flight records nothing", len(runs), err)
	}
}

// lastRun is the newest run of the state directory.
func lastRun(t *testing.T, state string) store.Run {
	t.Helper()
	db, err := store.Open(context.Background(), filepath.Join(state, "converge.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	runs, err := db.ListRuns(context.Background(), store.ListOptions{})
	if err != nil || len(runs) == 0 {
		t.Fatalf("no run recorded (%v)", err)
	}
	return runs[0]
}

// statusWhy is what `converge status --json` says of the newest run.
func statusWhy(t *testing.T, state string) (status string, code exitcode.Code, why string) {
	t.Helper()
	ios, out, _ := testIO(nil)
	if c := Run(context.Background(), []string{"status", "--json", "--state", state}, ios); c != 0 {
		t.Fatalf("status exit %d", c)
	}
	var views []struct {
		Status   string         `json:"status"`
		ExitCode *exitcode.Code `json:"exit_code"`
		Why      string         `json:"why"`
	}
	if err := json.Unmarshal([]byte(out.String()), &views); err != nil || len(views) == 0 || views[0].ExitCode == nil {
		t.Fatalf("status --json: %v\n%s", err, out)
	}
	return views[0].Status, *views[0].ExitCode, views[0].Why
}

// TestAG_T4_PRAgentPreflightWritesNothing: before anything is written to
// the forge or recorded, each CLI agent of `converge pr` proves it reaches
// its model, once per backend identity (fixer and reviewer, both claude,
// are one). A CLI that says its credentials failed ends the command with
// exit 6 and the CLI's own words in one line; any other failure exit 2.
// The emulator saw no write and the store holds no run. The agents are
// built with the settings: agent_env and agent_retry_bound from the
// config file, the forge token among the secrets no variable may carry.
func TestAG_T4_PRAgentPreflightWritesNothing(t *testing.T) {
	hub, demo := startHub(t, 50*time.Millisecond)
	env := map[string]string{"CONVERGE_TOKEN": hub.Tokens().Author}
	cfg := filepath.Join(t.TempDir(), "converge.yaml")
	if err := os.WriteFile(cfg, []byte("agent_env: [AWS_PROFILE, CLOUD_ML_REGION]\nagent_retry_bound: 12s\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		check error
		code  exitcode.Code
		want  string
	}{
		{notLoggedIn, exitcode.Auth, `authentication failed: "Not logged in · Please run /login"`},
		{endpoint, exitcode.Usage, `model endpoint http://127.0.0.1:9/v1/messages unreachable or failing: "API Error: Connection refused"`},
		{&agent.CLIError{Agent: "claude", Kind: agent.FailCLI, Message: "model not found: claude-nope"}, exitcode.Usage, `model not found: claude-nope`},
	} {
		state := t.TempDir()
		d := &doubles{check: tc.check}
		ios, out, errOut := testIO(env)
		ios.Backend = d.build
		before := len(hub.Writes())
		code := Run(context.Background(), append(prArgs(hub, demo, state), "--agent", "claude", "--config", cfg), ios)
		if code != tc.code || strings.Count(errOut.String(), "\n") != 1 || !strings.Contains(errOut.String(), tc.want) || !strings.Contains(errOut.String(), "--no-agent-check") {
			t.Errorf("%v: exit %d, want %d and one line with %q\nstdout:\n%s\nstderr:\n%s", tc.check, code, tc.code, tc.want, out, errOut)
		}
		if w := hub.Writes()[before:]; len(w) != 0 {
			t.Errorf("%v: the forge saw writes before the agents were checked: %+v", tc.check, w)
		}
		noRuns(t, state)
		if n := d.count(agent.TaskKindCheck); n != 1 {
			t.Errorf("%v: %d checks, want 1 (claude as fixer and reviewer is one backend)", tc.check, n)
		}
		if n := len(d.runs) - 1; n != 0 {
			t.Errorf("%v: agents ran %v before the check passed", tc.check, d.runs)
		}
	}
	// The agents as the PR's settings build them.
	d := &doubles{check: notLoggedIn}
	ios, _, _ := testIO(env)
	ios.Backend = d.build
	Run(context.Background(), append(prArgs(hub, demo, t.TempDir()), "--agent", "claude", "--config", cfg), ios)
	last := d.configs[len(d.configs)-1]
	if !slices.Equal(last.AgentEnv, []string{"AWS_PROFILE", "CLOUD_ML_REGION"}) || last.RetryBound != 12*time.Second || !slices.Contains(last.Secrets, hub.Tokens().Author) {
		t.Errorf("the agents were built with %+v; want the file's agent_env and agent_retry_bound, and the forge token as a secret", last)
	}
}

// TestAG_T4_PRAuthFailureMidRunExits6: a fixer whose CLI says its
// credentials failed mid-run is not retried; the run ends errored, exit
// 6, and converge status and log say the CLI's words. An endpoint that
// stayed down ends it errored, exit 1, naming the endpoint.
// --no-agent-check skips the pre-flight check.
func TestAG_T4_PRAuthFailureMidRunExits6(t *testing.T) {
	for _, tc := range []struct {
		fail *agent.CLIError
		code exitcode.Code
		want string
	}{
		{notLoggedIn, exitcode.Auth, "Not logged in · Please run /login"},
		{endpoint, exitcode.Error, "model endpoint http://127.0.0.1:9/v1/messages unreachable or failing"},
	} {
		hub, demo := startHub(t, 50*time.Millisecond)
		state := t.TempDir()
		d := &doubles{check: notLoggedIn, fail: tc.fail, failKinds: []string{agent.TaskKindFix}}
		ios, out, errOut := testIO(map[string]string{"CONVERGE_TOKEN": hub.Tokens().Author})
		ios.Backend = d.build
		code := Run(context.Background(), append(prArgs(hub, demo, state), "--agent", "claude", "--no-agent-check"), ios)
		if code != tc.code || !strings.Contains(errOut.String(), tc.want) {
			t.Fatalf("%s: exit %d, want %d with %q\nstdout:\n%s\nstderr:\n%s", tc.fail.Kind, code, tc.code, tc.want, out, errOut)
		}
		if n := d.count(agent.TaskKindCheck); n != 0 {
			t.Errorf("%s: --no-agent-check ran %d checks", tc.fail.Kind, n)
		}
		if n := d.count(agent.TaskKindFix); n != 1 {
			t.Errorf("%s: the fixer ran %d times; a CLI's %s failure is not retried", tc.fail.Kind, n, tc.fail.Kind)
		}
		status, ec, why := statusWhy(t, state)
		if status != "errored" || ec != tc.code || !strings.Contains(why, tc.want) {
			t.Errorf("%s: status says %s exit %d why %q", tc.fail.Kind, status, ec, why)
		}
		logSays(t, state, tc.want)
	}
}

// gitRepoT makes a repository with one commit in a new directory.
func gitRepoT(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, args := range [][]string{{"init", "-q"}, {"commit", "-q", "--allow-empty", "-m", "start"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	return dir
}

// TestAG_T4_LoopAgentFailures: converge loop checks its CLI body agent
// before the run is recorded (exit 6 on an auth failure, nothing in the
// store); a body whose CLI's credentials fail mid-run is not retried and
// ends the run errored with exit 6 and the CLI's words in converge
// status; an endpoint that stayed down, exit 1 naming it. The agent
// settings come from --agent-env and --agent-retry-bound.
func TestAG_T4_LoopAgentFailures(t *testing.T) {
	run := func(d *doubles, state string, extra ...string) (exitcode.Code, string) {
		ios, out, errOut := testIO(nil)
		ios.Backend = d.build
		args := append([]string{"loop", "--goal", "make done.txt", "--check", "test -f done.txt", "--agent", "claude",
			"--max-iterations", "3", "--workdir", gitRepoT(t), "--state", state}, extra...)
		code := Run(context.Background(), args, ios)
		return code, out.String() + errOut.String()
	}
	state := t.TempDir()
	d := &doubles{check: notLoggedIn}
	if code, out := run(d, state, "--agent-env", "AWS_PROFILE", "--agent-env", "VERTEX_X", "--agent-retry-bound", "45s"); code != exitcode.Auth || !strings.Contains(out, "Not logged in") {
		t.Errorf("pre-flight: exit %d, want 6:\n%s", code, out)
	}
	noRuns(t, state)
	if c := d.configs[0]; !slices.Equal(c.AgentEnv, []string{"AWS_PROFILE", "VERTEX_X"}) || c.RetryBound != 45*time.Second {
		t.Errorf("the body was built with %+v", c)
	}
	if n := d.count(checkloopIterate); n != 0 {
		t.Errorf("the body ran %d iterations before its check passed", n)
	}

	for _, tc := range []struct {
		fail *agent.CLIError
		code exitcode.Code
		want string
	}{
		{notLoggedIn, exitcode.Auth, "Not logged in · Please run /login"},
		{endpoint, exitcode.Error, "model endpoint http://127.0.0.1:9/v1/messages unreachable"},
	} {
		state := t.TempDir()
		d := &doubles{fail: tc.fail, failKinds: []string{checkloopIterate}}
		code, out := run(d, state)
		if code != tc.code || !strings.Contains(out, tc.want) {
			t.Errorf("%s: exit %d, want %d with %q:\n%s", tc.fail.Kind, code, tc.code, tc.want, out)
		}
		if n := d.count(checkloopIterate); n != 1 {
			t.Errorf("%s: the body ran %d times; not retried", tc.fail.Kind, n)
		}
		if n := d.count(agent.TaskKindCheck); n != 1 {
			t.Errorf("%s: %d pre-flight checks, want 1", tc.fail.Kind, n)
		}
		if status, ec, why := statusWhy(t, state); status != "failed" || ec != tc.code || !strings.Contains(why, tc.want) {
			t.Errorf("%s: status says %s exit %d why %q", tc.fail.Kind, status, ec, why)
		}
		logSays(t, state, tc.want)
	}
	if code, out := run(&doubles{}, t.TempDir(), "--agent-env", "AWS_PROFILE=dev"); code != exitcode.Usage || strings.Count(out, "\n") != 1 || !strings.Contains(out, `"AWS_PROFILE=dev" is not a variable name`) {
		t.Errorf("--agent-env NAME=VALUE: exit %d:\n%s", code, out)
	}
	if code, out := run(&doubles{}, t.TempDir(), "--agent-env", ""); code != exitcode.Usage || strings.Count(out, "\n") != 1 || !strings.Contains(out, "empty variable name") {
		t.Errorf("--agent-env '': exit %d:\n%s", code, out)
	}
}

const checkloopIterate = "iterate"

// TestAG_T4_PlanAgentFailures: converge plan run checks its implementer
// and reviewer (one backend: checked once) before the run is recorded;
// an implementer whose CLI's credentials fail mid-run is not retried and
// ends the run errored, exit 6; an endpoint that stayed down, exit 1
// naming it. Each failed check is one line.
func TestAG_T4_PlanAgentFailures(t *testing.T) {
	planFile := filepath.Join(t.TempDir(), "plan.yaml")
	if err := os.WriteFile(planFile, []byte("groups:\n  - tasks:\n      - {id: a, prompt: do a}\n      - {id: b, prompt: do b}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	run := func(d *doubles, state string, extra ...string) (exitcode.Code, string, string) {
		ios, out, errOut := testIO(nil)
		ios.Backend = d.build
		args := append([]string{"plan", "run", planFile, "--agent", "claude", "--parallel", "1", "--workdir", gitRepoT(t), "--state", state}, extra...)
		code := Run(context.Background(), args, ios)
		return code, out.String(), errOut.String()
	}
	for _, check := range []error{notLoggedIn, endpoint} {
		state := t.TempDir()
		d := &doubles{check: check}
		code, out, errOut := run(d, state)
		want := exitcode.Usage
		if check == notLoggedIn {
			want = exitcode.Auth
		}
		if code != want || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, "pre-flight check of the agents") {
			t.Errorf("pre-flight %v: exit %d, want %d in one line:\n%s%s", check, code, want, out, errOut)
		}
		if n := d.count(agent.TaskKindCheck); n != 1 {
			t.Errorf("%d checks, want 1 (implementer and reviewer are one backend)", n)
		}
		noRuns(t, state)
	}
	for _, tc := range []struct {
		fail *agent.CLIError
		code exitcode.Code
		want string
	}{
		{notLoggedIn, exitcode.Auth, "Not logged in · Please run /login"},
		{endpoint, exitcode.Error, "model endpoint http://127.0.0.1:9/v1/messages unreachable"},
	} {
		state := t.TempDir()
		d := &doubles{fail: tc.fail, failKinds: []string{"plan-task"}}
		code, out, errOut := run(d, state)
		if code != tc.code || !strings.Contains(out+errOut, tc.want) {
			t.Errorf("%s: exit %d, want %d with %q:\n%s%s", tc.fail.Kind, code, tc.code, tc.want, out, errOut)
		}
		if n := d.count("plan-task"); n != 1 {
			t.Errorf("%s: the implementer ran %d times; not retried, and no other task dispatched", tc.fail.Kind, n)
		}
		if n := d.count(agent.TaskKindCheck); n != 1 {
			t.Errorf("%s: %d checks that passed, want 1 (implementer and reviewer are one backend)", tc.fail.Kind, n)
		}
		if status, ec, why := statusWhy(t, state); status != "failed" || ec != tc.code || !strings.Contains(why, tc.want) {
			t.Errorf("%s: status says %s exit %d why %q", tc.fail.Kind, status, ec, why)
		}
		logSays(t, state, tc.want)
	}
}

// logSays fails the test unless converge log of the newest run holds want.
func logSays(t *testing.T, state, want string) {
	t.Helper()
	ios, out, _ := testIO(nil)
	if c := Run(context.Background(), []string{"log", lastRun(t, state).ID, "--state", state}, ios); c != 0 || !strings.Contains(out.String(), want) {
		t.Errorf("converge log (exit %d) does not quote the CLI (%q):\n%s", c, want, out)
	}
}

// describedDouble is a double backend that describes itself for doctor
// (agent.Describer), as the CLI backends do.
type describedDouble struct {
	*double
}

func (describedDouble) Describe(context.Context) agent.Description {
	return agent.Description{Version: "2.1.328 (Claude Code)", Model: "claude-opus", ModelFrom: "~/.claude/settings.json",
		Credential: "ANTHROPIC_API_KEY", PassEnv: []string{"ANTHROPIC_API_KEY", "AWS_PROFILE"}}
}

// TestAG_T4_DoctorCheckExitsWithTheWorstProblem: converge doctor shows
// what a backend says of itself (agent.Describer: version, model and
// where from, credential source, variables passed), and --check asks
// each backend a run would use for one answer: a CLI whose credentials
// are refused is not usable and doctor exits 6, quoting the CLI; one that
// answers is usable, exit 0. Backends no run would use are not checked.
func TestAG_T4_DoctorCheckExitsWithTheWorstProblem(t *testing.T) {
	dir := gitRepoT(t)
	run := func(d *doubles, args ...string) (exitcode.Code, string, string) {
		// A token resolves: only the agents decide the exit code here.
		ios, out, errOut := testIO(map[string]string{"CONVERGE_TOKEN": "t0ken"})
		ios.Backend = func(cfg backends.Config) (agent.Agent, error) {
			a, _ := d.build(cfg)
			return describedDouble{a.(*double)}, nil
		}
		code := Run(context.Background(), append([]string{"doctor", "--workdir", dir}, args...), ios)
		return code, out.String(), errOut.String()
	}
	d := &doubles{check: notLoggedIn}
	code, out, errOut := run(d, "--agent", "claude", "--check")
	if code != exitcode.Auth || !regexp.MustCompile(`(?m)^agent claude +not usable +agent claude: authentication failed: "Not logged in · Please run /login"`).MatchString(out) ||
		!strings.Contains(errOut, "agent claude would stop a run") || strings.Count(errOut, "\n") != 1 {
		t.Errorf("auth failure: exit %d, want 6:\n%s%s", code, out, errOut)
	}
	for _, want := range []string{`(?m)^  version +2\.1\.328 \(Claude Code\)$`, `(?m)^  model +claude-opus \(from ~/\.claude/settings\.json\)$`,
		`(?m)^  credential +ANTHROPIC_API_KEY$`, `(?m)^  passes +ANTHROPIC_API_KEY, AWS_PROFILE$`} {
		if !regexp.MustCompile(want).MatchString(out) {
			t.Errorf("doctor does not show the backend's own description %q:\n%s", want, out)
		}
	}
	if n := d.count(agent.TaskKindCheck); n != 1 {
		t.Errorf("%d checks; only the backend a run would use (--agent claude) is checked", n)
	}

	d = &doubles{}
	if code, out, errOut := run(d, "--agent", "claude", "--check"); code != 0 || !regexp.MustCompile(`(?m)^  check +usable: the model answered "OK"`).MatchString(out) {
		t.Errorf("a backend that answers: exit %d:\n%s%s", code, out, errOut)
	}
	d = &doubles{check: endpoint}
	if code, out, errOut := run(d, "--agent", "claude", "--check", "--json"); code != exitcode.Usage || !strings.Contains(out, `"usable":false,"check":"agent claude: model endpoint http://127.0.0.1:9/v1/messages unreachable`) || !strings.Contains(out, `"exit_code":2}`) {
		t.Errorf("a dead endpoint: exit %d:\n%s%s", code, out, errOut)
	}
}

// TestSEC_2_RepositoryFileCannotPassCredentialsToAgents: a repository's
// .converge.yaml is not the user: its agent_env passes ordinary
// variables, but a name that looks like a credential only when the user
// names it (SEC-2); the file's is dropped with a warning that says how.
func TestSEC_2_RepositoryFileCannotPassCredentialsToAgents(t *testing.T) {
	f, err := config.ParseFile(config.AgentFields(), ".converge.yaml (main on o/r)", []byte("agent_env: [AWS_PROFILE, AWS_SECRET_ACCESS_KEY, MYCO_API_KEY]\n"))
	if err != nil {
		t.Fatal(err)
	}
	var errOut bytes.Buffer
	ios := &cmdutil.IOStreams{ErrOut: &errOut, Getenv: func(string) string { return "" }}
	ac, err := cmdutil.AgentSettings(ios, nil, f)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(ac.Env, " ") != "AWS_PROFILE" {
		t.Errorf("agent env from the file = %q, want only AWS_PROFILE", ac.Env)
	}
	for _, want := range []string{"AWS_SECRET_ACCESS_KEY", "MYCO_API_KEY", "--agent-env"} {
		if !strings.Contains(errOut.String(), want) {
			t.Errorf("warning lacks %q: %s", want, errOut.String())
		}
	}
	// The user's own flag passes what the user names.
	errOut.Reset()
	ac, err = cmdutil.AgentSettings(ios, map[string]string{"agent_env": "AWS_SECRET_ACCESS_KEY"}, f)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(ac.Env, " ") != "AWS_SECRET_ACCESS_KEY" || errOut.Len() != 0 {
		t.Errorf("agent env from the flag = %q (warning %q)", ac.Env, errOut.String())
	}
}
