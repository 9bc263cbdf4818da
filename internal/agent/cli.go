package agent

import (
	"bufio"
	"cmp"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/convergeloop/converge/internal/text"
)

// What the coding-agent CLI backends (claude, codex, …) share: finding the
// program, building its environment, running it and reading its JSON event
// stream.

// ResolveBinary finds an agent CLI's program (AG-B1, AG-T4 pre-flight):
// configured (a backend's Options.Binary) when set, else the value of
// envVar (CONVERGE_CLAUDE_BIN, …) when set, else name looked up in PATH. A
// value with a slash is a path and must be an executable file; any other
// is looked up in PATH. The result is absolute, as the agent runs in
// another directory. The error is one line naming the program, where it
// was looked for and how to fix it.
func ResolveBinary(configured, envVar, name string, getenv func(string) string) (string, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	prog, from := configured, "the configured binary"
	if prog == "" && envVar != "" {
		prog, from = getenv(envVar), envVar
	}
	if prog == "" {
		prog, from = name, "PATH"
	}
	if !strings.Contains(prog, "/") {
		p, err := exec.LookPath(prog)
		if err != nil {
			hint := ""
			if envVar != "" {
				hint = " or set " + envVar + " to its path"
			}
			return "", fmt.Errorf("agent CLI %q not found in PATH (from %s); install it%s", prog, from, hint)
		}
		prog = p
	}
	abs, err := filepath.Abs(prog)
	if err != nil {
		return "", fmt.Errorf("agent CLI %q (from %s): %v", prog, from, err)
	}
	info, err := os.Stat(abs)
	switch {
	case err != nil:
		return "", fmt.Errorf("agent CLI %q (from %s) cannot be used: %v; check the path", prog, from, err)
	case info.IsDir():
		return "", fmt.Errorf("agent CLI %q (from %s) is a directory; name the program inside it", prog, from)
	case info.Mode().Perm()&0o111 == 0:
		return "", fmt.Errorf("agent CLI %q (from %s) is not executable; run chmod +x on it", prog, from)
	}
	return abs, nil
}

// CLIEnv is the environment of an agent CLI run (AG-B1, SEC-2): base — the
// task's scrubbed environment, or ScrubEnv(environ) when the task has none
// — then the variables named in pass taken from environ as they are (a
// model API key, a config directory: exact names only, credentials
// included, so only what a backend or the user names; never one whose
// value is that of a forge token variable of environ), then extra
// KEY=VALUE entries. A later entry replaces an earlier one of the same
// name; order is otherwise kept.
func CLIEnv(base, environ, pass, extra []string) []string {
	if base == nil {
		base = ScrubEnv(environ)
	}
	tokens := forgeTokens(environ)
	base = WithoutValues(base, tokens)
	out := make([]string, 0, len(base)+len(pass)+len(extra))
	at := map[string]int{}
	set := func(kv string) {
		name, _, ok := strings.Cut(kv, "=")
		if !ok || name == "" {
			return
		}
		if i, seen := at[name]; seen {
			out[i] = kv
			return
		}
		at[name] = len(out)
		out = append(out, kv)
	}
	for _, kv := range base {
		set(kv)
	}
	if len(pass) > 0 {
		want := map[string]bool{}
		for _, p := range pass {
			want[p] = true
		}
		// A forge token copied into a variable of another name does not
		// pass under that name either (SEC-2).
		for _, kv := range WithoutValues(environ, tokens) {
			if name, _, ok := strings.Cut(kv, "="); ok && want[name] {
				set(kv)
			}
		}
	}
	for _, kv := range extra {
		set(kv)
	}
	return out
}

// CLIRun is one run of an agent CLI backend, for RunCLI: what the backend
// built (command line, environment) and how it reads the CLI's output.
type CLIRun struct {
	// Backend ("claude", …) and Name (the backend's configured name) name
	// the run in an error.
	Backend, Name string
	// Argv and Env are the backend's Args and Env of the task.
	Argv, Env []string
	// Grace is the time between SIGTERM and SIGKILL at the budget; zero
	// means DefaultGrace.
	Grace time.Duration
	// Secrets are redacted from what is kept (SEC-3).
	Secrets []string
	// Record is the status record of a fix run's stdout (IF-5,
	// fail-closed: see Cmd.Parse).
	Record func(stdout string) StatusRecord
	// Read is what any run's stdout says.
	Read func(stdout string) CLIOutput
	// Session is the id of the CLI's session that a run's stdout names,
	// "" when it names none. Resume is the command line and environment
	// of one more turn in that session, its prompt on stdin, with the
	// permissions of a review run (no edits) where the CLI has them. With
	// both set, a fix run stopped at its budget without a record is asked
	// for one in its own session (AG-T1, see RunCLI); a nil Resume means
	// the CLI cannot resume a session non-interactively.
	Session func(stdout string) string
	Resume  func(session string) (argv, env []string)
	// SummaryBudget is the summary turn's time-box; zero means
	// SummaryBudget of the task's budget.
	SummaryBudget time.Duration
	// Watch reads the run's output as it comes (Cmd.Watch): the CLI's
	// authentication failure stops the run at once, a failing model
	// endpoint after RetryBound (zero means DefaultRetryBound).
	Watch      func(stderr bool, line string) Signal
	RetryBound time.Duration
	// Home are where the CLI keeps its configuration, login and sessions
	// (HomePaths): the only places outside the worktree its contained run
	// writes (SEC-7), so that a login it refreshes stays refreshed and a
	// session the summary turn resumes is still there.
	Home []string
}

// HomePaths are the paths of a CLI's own state: dirs (made when missing,
// so that what the CLI writes there outlives its contained run) and files,
// each absolute or relative to env's HOME.
func HomePaths(env []string, dirs, files []string) []string {
	home := EnvValue(env, "HOME")
	abs := func(p string) string {
		if p == "" || filepath.IsAbs(p) || home == "" {
			return p
		}
		return filepath.Join(home, p)
	}
	var out []string
	for _, d := range dirs {
		if d = abs(d); filepath.IsAbs(d) && os.MkdirAll(d, 0o700) == nil {
			out = append(out, d)
		}
	}
	for _, f := range files {
		if f = abs(f); filepath.IsAbs(f) {
			out = append(out, f)
		}
	}
	return out
}

// CLIOutput is what an agent CLI's output says, as RunCLI needs it.
type CLIOutput struct {
	// Final is the agent's final message, kept as Result.Output.
	Final string
	// Usage is what the run consumed.
	Usage Usage
	// ReviewFailure, when set, is the summary of a failure the CLI
	// reported that makes an otherwise complete review or judge run
	// blocked (reason cli-error): its answer is not whole.
	ReviewFailure string
	// Failure is the CLI's own report, read from its whole output, that
	// it could not do the run at all (not logged in, its model endpoint
	// down): Run returns it as the error of any kind of run.
	Failure *CLIError
}

// RunCLI runs an agent CLI once on t (AG-B1): r.Argv in t's worktree with
// the task's prompt (RenderTaskPrompt) on stdin, under the task's time-box
// (RunWithBudget, whose rules apply to the record). A fix run's record is
// r.Record of its stdout; a review answers with an array and a judge with
// a verdict (ReadOnly), each read by the caller, so its record only says
// how the process ended (ProcessRecord), blocked when the CLI reported a
// failure. Secrets are redacted from the record, the final message and
// stderr.
//
// A fix run stopped at its budget without a record is then told to
// summarize (AG-T1): when the CLI can resume a session and the stopped
// run named one, one more turn in that session (r.Resume: no edits, under
// SummaryBudget) asks for the record with SummaryPrompt. Its final
// message, read fail-closed by r.Record, is the run's record, with the
// concern "stopped at the budget; summary requested"; the run's output,
// usage and stderr include the turn's. A turn that gives no valid record
// in its time leaves the stopped run's partial/budget-exceeded.
func RunCLI(ctx context.Context, t Task, r CLIRun) (Result, error) {
	budget := t.EffectiveBudget()
	review := ReadOnly(t.Kind)
	parse := func(stdout string) StatusRecord {
		if review {
			return StatusRecord{Status: StatusComplete}
		}
		return r.Record(stdout)
	}
	res, err := RunWithBudget(ctx, Cmd{
		Argv:   r.Argv,
		Dir:    t.Workdir,
		Env:    r.Env,
		Stdin:  []byte(RenderTaskPrompt(t)),
		Budget: budget,
		Grace:  r.Grace,
		Parse:  parse,
		// A CLI names its session first; a long run's tail has lost it.
		StdoutHead: sessionHead,
		Watch:      r.Watch,
		RetryBound: r.RetryBound,
		Writable:   r.Home,
		ReadOnly:   review,
	})
	o := r.Read(res.Stdout)
	if fail := cmp.Or(res.Failure, o.Failure); fail != nil && err == nil {
		return cliFailure(t, r, res, o, fail)
	}
	stderr := res.Stderr
	if !review && err == nil && res.TimedOut && res.Record.Reason == ReasonBudgetExceeded {
		named := res.Stdout
		if res.StdoutHead != "" {
			// The line cut at the head's end is no JSON object, and
			// EachJSONLine skips it.
			named = res.StdoutHead + "\n" + res.Stdout
		}
		sum, so, asked := summarize(ctx, t, r, named)
		switch {
		case !asked:
		case sum.Record.Reason == ReasonUnparseable || sum.Record.Reason == ReasonBudgetExceeded || sum.TimedOut:
			res.Record.Summary += "; summary requested, no status record came: " + sum.Record.Summary
		default:
			res.Record = sum.Record
			res.Record.Concerns = append(res.Record.Concerns, SummaryConcern)
			o.Final = so.Final
		}
		if asked {
			// The run's price is known only when the stopped run and its
			// summary turn both reported one: a summary's price alone is
			// not the run's.
			priced := o.Usage.CostReported && so.Usage.CostReported
			o.Usage.Add(so.Usage)
			o.Usage.CostReported = priced
			res.Duration += sum.Duration
			stderr = strings.TrimRight(stderr, "\n") + "\n" + sum.Stderr
		}
	}
	if review {
		res.Record = ProcessRecord(res, budget)
		if res.Record.Status == StatusComplete && o.ReviewFailure != "" {
			res.Record = StatusRecord{Status: StatusBlocked, Reason: "cli-error",
				Summary: o.ReviewFailure, FilesChanged: []string{}}
		}
	}
	out := Result{
		Record:   RedactRecord(res.Record, r.Secrets),
		Output:   Redact(o.Final, r.Secrets...),
		Stderr:   Redact(stderr, r.Secrets...),
		Duration: res.Duration,
		Usage:    o.Usage,
	}
	out.Outcomes = OutcomesFor(t.Findings, out.Record)
	if err != nil {
		return out, fmt.Errorf("%s agent %s: %w", r.Backend, r.Name, err)
	}
	return out, nil
}

// cliFailure is the Result and error of a run the CLI itself said it
// could not do (see CLIError): the record blocked with reason cli-error,
// the error the CLI's words, redacted, naming the agent.
func cliFailure(t Task, r CLIRun, res CmdResult, o CLIOutput, fail *CLIError) (Result, error) {
	f := *fail
	f.Agent = r.Name
	f.Message = text.Clip(text.OneLine(Redact(f.Message, r.Secrets...)), 500)
	f.Endpoint = Redact(f.Endpoint, r.Secrets...)
	rec := StatusRecord{Status: StatusBlocked, Reason: ReasonCLIError, Summary: f.Error(), FilesChanged: []string{}}
	out := Result{
		Record:   rec,
		Output:   Redact(o.Final, r.Secrets...),
		Stderr:   Redact(res.Stderr, r.Secrets...),
		Duration: res.Duration,
		Usage:    o.Usage,
	}
	out.Outcomes = OutcomesFor(t.Findings, rec)
	return out, &f
}

// sessionHead is how much of the start of a CLI's stdout a run keeps
// beside the tail, for the session id its first events name.
const sessionHead = 64 << 10

// SummaryConcern is the concern of a record that came from the summary
// turn of a run stopped at its budget (AG-T1, see RunCLI).
const SummaryConcern = "stopped at the budget; summary requested"

// SummaryBudget is the time-box of the summary turn of a run whose budget
// was budget: a fifth of it, at least 30 s (a CLI takes seconds to start
// and load its session) and at most 60 s — a short answer, not more work.
func SummaryBudget(budget time.Duration) time.Duration {
	return min(max(budget/5, 30*time.Second), 60*time.Second)
}

// NewSessionID is a random UUID (version 4), for a CLI that is given the
// id of the session it starts.
func NewSessionID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b) // crypto/rand.Read never fails
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}

// summarize runs the summary turn of a fix run of t that was stopped at
// its budget with stdout (see RunCLI). asked is false when there was none
// to run: the CLI cannot resume, the run named no session, or ctx ended.
func summarize(ctx context.Context, t Task, r CLIRun, stdout string) (res CmdResult, o CLIOutput, asked bool) {
	if r.Session == nil || r.Resume == nil || ctx.Err() != nil {
		return CmdResult{}, CLIOutput{}, false
	}
	session := r.Session(stdout)
	if session == "" {
		return CmdResult{}, CLIOutput{}, false
	}
	argv, env := r.Resume(session)
	res, err := RunWithBudget(ctx, Cmd{
		Argv:   argv,
		Dir:    t.Workdir,
		Env:    env,
		Stdin:  []byte(SummaryPrompt()),
		Budget: cmp.Or(r.SummaryBudget, SummaryBudget(t.EffectiveBudget())),
		Grace:  r.Grace,
		Parse:  r.Record,
		// The summary turn edits nothing.
		Writable: r.Home, ReadOnly: true,
	})
	if err != nil {
		// Not started, or ctx ended it: no record came.
		res.Record = unparseable("summary turn: " + text.OneLine(err.Error()))
	}
	return res, r.Read(res.Stdout), true
}

// EachJSONLine calls fn for each line of an agent CLI's JSON event stream
// (one JSON object a line) with the line decoded into a new E, and the
// line. Lines that are not JSON objects (a tail cut mid-line, stray text)
// are skipped.
func EachJSONLine[E any](stdout string, fn func(ev *E, line string)) {
	sc := bufio.NewScanner(strings.NewReader(stdout))
	sc.Buffer(make([]byte, 0, 64<<10), len(stdout)+1)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if !strings.HasPrefix(line, "{") {
			continue
		}
		var ev E
		if json.Unmarshal([]byte(line), &ev) != nil {
			continue
		}
		fn(&ev, line)
	}
}

// CLIOptions are the options every agent CLI backend has; each backend's
// Options embed them and add what is its own. The backend's Options say
// which flag Model and where ExtraArgs go.
type CLIOptions struct {
	// Name is reported by Name(); default the backend's name ("claude", …).
	Name string
	// Binary is the program; default the value of the backend's BinaryEnv
	// (CONVERGE_CLAUDE_BIN, …), else the backend's name in PATH.
	Binary string
	// Model is passed to the CLI (its model flag) when set.
	Model string
	// ExtraArgs are added to the command line.
	ExtraArgs []string
	// Env are KEY=VALUE entries added to the run's environment (e.g. a
	// model's base URL), after PassEnv.
	Env []string
	// PassEnv names variables passed from converge's environment as they
	// are; nil means the backend's DefaultPassEnv.
	PassEnv []string
	// Grace is the time between SIGTERM and SIGKILL at the budget; zero
	// means DefaultGrace.
	Grace time.Duration
	// SummaryBudget is the time-box of the summary turn of a run stopped
	// at its budget (CLIRun.SummaryBudget); zero means SummaryBudget of
	// the run's budget.
	SummaryBudget time.Duration
	// Secrets are redacted from captured output (SEC-3).
	Secrets []string
	// RetryBound is how long the CLI may keep retrying a failing model
	// request before converge stops the run (CLIRun.RetryBound); zero
	// means DefaultRetryBound.
	RetryBound time.Duration
	// AgentEnv names more variables of converge's environment to pass
	// as they are (the user's agent_env / --agent-env), after PassEnv;
	// see PassNames.
	AgentEnv []string
	// Getenv reads converge's environment (the backend's BinaryEnv); nil
	// means os.Getenv. Environ lists it for PassEnv; nil means os.Environ.
	Getenv  func(string) string
	Environ func() []string
}

// ModelFor is the model of a run of t: the task's (a rung of its
// escalation ladder, AG-E1), else the configured Model; "" leaves the
// CLI's default.
func (o CLIOptions) ModelFor(t Task) string {
	return cmp.Or(t.Model, o.Model)
}

// Resolve sets o's defaults for the backend name (Name, PassEnv from
// passEnv, Environ) and resolves its program from o.Binary, binaryEnv or
// name in PATH (ResolveBinary: a missing one is an error before anything
// runs, AG-T4 pre-flight).
func (o *CLIOptions) Resolve(name, binaryEnv string, passEnv []string) (string, error) {
	if o.Name == "" {
		o.Name = name
	}
	if o.PassEnv == nil {
		o.PassEnv = passEnv
	}
	if o.Environ == nil {
		o.Environ = os.Environ
	}
	return ResolveBinary(o.Binary, binaryEnv, name, o.Getenv)
}

// ForgeTokenNames are the variables that hold a forge token (IF-2): they
// never reach an agent, whatever PassEnv or AgentEnv name (SEC-2).
var ForgeTokenNames = []string{"GH_TOKEN", "GITHUB_TOKEN", "GH_ENTERPRISE_TOKEN", "GITHUB_ENTERPRISE_TOKEN", "CONVERGE_TOKEN"}

// PassNames is what a run passes from converge's environment: PassEnv
// then AgentEnv, without the forge token's variables.
func (o CLIOptions) PassNames() []string {
	var out []string
	for _, n := range append(slices.Clone(o.PassEnv), o.AgentEnv...) {
		if !slices.Contains(ForgeTokenNames, n) && !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}
