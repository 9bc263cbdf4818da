// Package claude is the Claude Code agent backend (SPEC AG-B1). It runs the
// `claude` CLI non-interactively:
//
//	claude -p --output-format stream-json --verbose --include-partial-messages
//	       --permission-mode acceptEdits
//	       --tools T --allowedTools T --max-turns N [--model M]
//	       [extra args…]
//
// with the task's prompt (agent.RenderTaskPrompt) on stdin, in the task's
// worktree, under the task's time-box (agent.RunWithBudget: own process
// group, SIGTERM at the budget, SIGKILL after the grace period), with the
// task's scrubbed environment plus only the model credentials named in
// Options.PassEnv (SEC-2). Root cannot use --dangerously-skip-permissions,
// so edits are accepted by the permission mode and every other tool the run
// may use is both the only tool available (--tools) and pre-approved
// (--allowedTools): nothing ever waits for a permission prompt.
//
// The CLI prints one JSON event per line (see stream.go); the last is
// {"type":"result","subtype":"success","result":TEXT,"usage":{…},
// "total_cost_usd":X,"num_turns":N,"is_error":false,…}. TEXT is the
// agent's final message: for a fix task its last line must be the status
// record (IF-5), read fail-closed by agent.ParseStatus (AG-T3); for a
// review or judge task (agent.ReadOnly) it holds the findings array or the
// verdict, returned in Result.Output, and the run has ReviewTools. A
// run without a result event (stopped at its budget, crashed) falls back
// to the text of the last assistant message, still fail-closed.
//
// The events are also read as they come (watcher): a refused credential
// ends the run in seconds with the CLI's words, a failing model endpoint
// once the CLI has retried it for Options.RetryBound, both as an
// *agent.CLIError; and every model message's usage is counted as it
// streams (--include-partial-messages carries each message's final
// output_tokens), so a run stopped at its budget still counts its tokens.
//
// A fix run stopped at its budget without a record is told to summarize
// (AG-T1, agent.RunCLI): its session (the session_id of its events) is
// resumed for one turn with -p --resume ID, only the read-only tools and
// SummaryMaxTurns, asking for the status record. Review and judge runs
// run with --no-session-persistence and are not asked.
package claude

import (
	"context"
	"slices"
	"strconv"
	"strings"

	"github.com/convergeloop/converge/internal/agent"
)

// BinaryEnv names the environment variable that gives the claude program.
const BinaryEnv = "CONVERGE_CLAUDE_BIN"

// DefaultMaxTurns bounds the agent loop of one run (--max-turns).
const DefaultMaxTurns = 50

// DefaultTools are the tools a fix run has, all pre-approved: read, search,
// edit, and a shell to build and test.
var DefaultTools = []string{"Read", "Glob", "Grep", "Edit", "Write", "Bash"}

// ReviewTools are the tools of a review or judge run: it reads, never
// edits.
var ReviewTools = []string{"Read", "Glob", "Grep"}

// quietEnv keeps a non-interactive run from reaching anything but its
// model: no update checks, telemetry or other background traffic; and
// has a failure to start (a bad setting, a refused flag) reported as an
// error result on stdout (Stream.Failure), not on stderr alone.
var quietEnv = []string{
	"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
	"CLAUDE_CODE_STARTUP_FAILURE_RESULTS=1",
	"DISABLE_AUTOUPDATER=1",
	"DISABLE_TELEMETRY=1",
	"DISABLE_ERROR_REPORTING=1",
}

// Options configure the backend. The zero value runs `claude` from
// CONVERGE_CLAUDE_BIN or PATH with the CLI's default model. Model (a
// Task.Model, the rung of its escalation ladder, replaces it) is
// passed as --model; ExtraArgs are appended to the command line; Env
// entries (e.g. ANTHROPIC_BASE_URL) come after PassEnv, whose default is
// DefaultPassEnv.
type Options struct {
	agent.CLIOptions
	// Tools are the tools of a fix run; nil means DefaultTools. Review
	// runs get ReviewTools.
	Tools []string
	// MaxTurns is --max-turns; zero means DefaultMaxTurns.
	MaxTurns int
	// PermissionMode is --permission-mode; default "acceptEdits".
	PermissionMode string
}

// Agent runs Claude Code.
type Agent struct {
	bin  string
	opts Options
}

var _ agent.Agent = (*Agent)(nil)

// New resolves the claude program (a missing one is an error here, before
// anything runs: AG-T4 pre-flight) and returns the backend.
func New(opts Options) (*Agent, error) {
	if opts.PermissionMode == "" {
		opts.PermissionMode = "acceptEdits"
	}
	if opts.MaxTurns <= 0 {
		opts.MaxTurns = DefaultMaxTurns
	}
	if opts.Tools == nil {
		opts.Tools = DefaultTools
	}
	bin, err := opts.Resolve("claude", BinaryEnv, DefaultPassEnv)
	if err != nil {
		return nil, err
	}
	return &Agent{bin: bin, opts: opts}, nil
}

func (a *Agent) Name() string { return a.opts.Name }

// Binary is the resolved program.
func (a *Agent) Binary() string { return a.bin }

// SummaryMaxTurns is --max-turns of the summary turn at the budget
// (agent.RunCLI): an answer, perhaps after a look at a file.
const SummaryMaxTurns = 3

// Args is the command line of a run of t, program first. A fix run's
// session is kept (Claude Code saves it where it keeps its sessions) so
// that a stop at the budget can ask it for its record; a review or judge
// run's is not.
func (a *Agent) Args(t agent.Task) []string {
	if agent.ReadOnly(t.Kind) {
		return a.args(t, ReviewTools, a.opts.MaxTurns, "--no-session-persistence")
	}
	return a.args(t, a.opts.Tools, a.opts.MaxTurns)
}

// ResumeArgs is the command line of the summary turn of a run of t that
// was stopped at its budget (agent.CLIRun.Resume): the run's session
// resumed with the read-only tools of a review, not saved again. A
// resumed session offers the model its run's tools whatever --tools
// says, so the others are also --disallowedTools.
func (a *Agent) ResumeArgs(t agent.Task, session string) []string {
	var deny []string
	for _, tool := range a.opts.Tools {
		if !slices.Contains(ReviewTools, tool) {
			deny = append(deny, tool)
		}
	}
	return a.args(t, ReviewTools, SummaryMaxTurns, "--no-session-persistence", "--disallowedTools", strings.Join(deny, ","), "--resume", session)
}

func (a *Agent) args(t agent.Task, tools []string, maxTurns int, session ...string) []string {
	list := strings.Join(tools, ",")
	argv := []string{a.bin,
		"-p", "--output-format", "stream-json", "--verbose", "--include-partial-messages",
		"--permission-mode", a.opts.PermissionMode,
		"--tools", list, "--allowedTools", list,
		"--max-turns", strconv.Itoa(maxTurns),
	}
	argv = append(argv, session...)
	if m := a.opts.ModelFor(t); m != "" {
		argv = append(argv, "--model", m)
	}
	return append(argv, a.opts.ExtraArgs...)
}

// Env is the environment of a run of t: the task's, the variables
// PassEnv and AgentEnv name (a name ending in '*' passes every variable
// it prefixes; never a forge token's), quietEnv, then Options.Env.
func (a *Agent) Env(t agent.Task) []string {
	extra := append([]string{}, quietEnv...)
	for _, kv := range a.opts.Environ() {
		name, _, ok := strings.Cut(kv, "=")
		if ok && slices.ContainsFunc(a.passNames(), func(p string) bool { return strings.HasSuffix(p, "*") && matchPass(p, name) }) {
			extra = append(extra, kv)
		}
	}
	extra = append(extra, a.opts.Env...)
	return agent.CLIEnv(t.Env, a.opts.Environ(), a.passNames(), extra)
}

func (a *Agent) passNames() []string { return a.opts.PassNames() }

// matchPass says whether a PassEnv name (a prefix when it ends in '*')
// passes the variable name; a forge token's never passes.
func matchPass(pattern, name string) bool {
	if slices.Contains(agent.ForgeTokenNames, name) {
		return false
	}
	if p, ok := strings.CutSuffix(pattern, "*"); ok {
		return strings.HasPrefix(name, p)
	}
	return pattern == name
}

// Run runs Claude Code once on t. See the package comment for what is
// read; agent.RunWithBudget's rules apply to the record (a stop at the
// budget without a record is partial/budget-exceeded, a non-zero exit
// keeps a valid record with a concern). The CLI's own errors end the run
// early (see watcher) or afterwards (Stream.Failure): Run then returns
// the *agent.CLIError, for every kind of task.
func (a *Agent) Run(ctx context.Context, t agent.Task) (agent.Result, error) {
	env := a.Env(t)
	endpoint := envOf(env).endpoint()
	cred, _ := envOf(env).credential()
	w := newWatcher(endpoint, cred)
	return agent.RunCLI(ctx, t, agent.CLIRun{
		Backend: "claude", Name: a.opts.Name,
		Argv: a.Args(t), Env: env,
		Home:  agent.HomePaths(env, []string{envOf(env).configDir()}, []string{".claude.json"}),
		Grace: a.opts.Grace, Secrets: a.opts.Secrets, SummaryBudget: a.opts.SummaryBudget,
		Watch: w.line, RetryBound: a.opts.RetryBound,
		Record: func(stdout string) agent.StatusRecord { return ParseStream(stdout).Record() },
		Read: func(stdout string) agent.CLIOutput {
			stream := ParseStream(stdout)
			o := agent.CLIOutput{Final: stream.Final, Usage: stream.usage(w.tokensOf(stdout, stream.Tokens))}
			o.Failure = stream.Failure(endpoint)
			if r := stream.Result; o.Failure == nil && r != nil && r.IsError {
				o.ReviewFailure = "claude ended with " + r.Subtype
				if msg := strings.TrimSpace(r.Result); msg != "" {
					o.ReviewFailure += ": " + msg
				}
			}
			return o
		},
		Session: func(stdout string) string { return ParseStream(stdout).SessionID },
		Resume: func(session string) ([]string, []string) {
			return a.ResumeArgs(t, session), a.Env(t)
		},
	})
}
