// Package codex is the Codex CLI agent backend (SPEC AG-B1). It runs
//
//	codex exec --json -s workspace-write -C WORKDIR --skip-git-repo-check
//	           --color never [-m MODEL]
//	           [-c model_provider=ID -c model_providers.ID={…}] [-c K=V…]
//	           [extra args…] -
//
// with the task's prompt (agent.RenderTaskPrompt) on stdin, which is then
// at its end: Codex reads the prompt and nothing else from it. It runs in
// the task's worktree under the task's time-box (agent.RunWithBudget: own
// process group, SIGTERM at the budget, SIGKILL after the grace period),
// with the task's scrubbed environment plus only the model credentials
// named in Options.PassEnv and the provider's env_key (SEC-2). Review and
// judge tasks (agent.ReadOnly) run with -s read-only.
//
// Options.Provider configures a custom model provider through -c overrides
// (Codex's model_providers table: name, base_url, wire_api, env_key), e.g.
// an OpenAI-compatible gateway, or fakemodel in tests.
//
// Codex prints one JSON event per line (codex-rs exec src/exec_events.rs):
// thread.started, turn.started, item.started/updated/completed (items of
// type agent_message, reasoning, command_execution, file_change, error, …),
// turn.completed {usage}, turn.failed {error} and error. The final message
// is the text of the last completed agent_message item: for a fix task its
// last line must be the status record (IF-5, read fail-closed by
// agent.ParseStatus, AG-T3); for a review or judge task it holds the
// findings array or the verdict, returned in Result.Output. Usage is the
// sum of the turn.completed usage; Codex reports no price.
//
// A fix run stopped at its budget without a record is told to summarize
// (AG-T1, agent.RunCLI): the session of its thread.started event is
// resumed for one read-only turn (ResumeArgs) asking for the status
// record. Review and judge runs are --ephemeral and are not asked.
package codex

import (
	"context"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/convergeloop/converge/internal/agent"
	"github.com/convergeloop/converge/internal/text"
)

// BinaryEnv names the environment variable that gives the codex program.
const BinaryEnv = "CONVERGE_CODEX_BIN"

// DefaultPassEnv are the variables of converge's environment a codex run
// gets besides the scrubbed task environment: its API keys and its home.
// No forge token is among them.
var DefaultPassEnv = []string{"OPENAI_API_KEY", "CODEX_API_KEY", "OPENAI_BASE_URL", "CODEX_HOME"}

// Provider is a custom model provider (Codex's [model_providers.ID]).
type Provider struct {
	// ID names the provider in Codex's config; default "converge".
	ID string
	// Name is its display name; default ID.
	Name string
	// BaseURL is where requests go; Codex appends /responses.
	BaseURL string
	// EnvKey names the variable holding the API key; it is passed from
	// converge's environment (or Options.Env) to the run.
	EnvKey string
	// WireAPI is the API Codex speaks to it; default "responses".
	WireAPI string
}

// Options configure the backend. The zero value runs `codex` from
// CONVERGE_CODEX_BIN or PATH with its configured model and provider.
// Model (a Task.Model replaces it, AG-E1) is passed as -m; ExtraArgs are
// added before the prompt argument;
// Env entries (e.g. CODEX_HOME, the provider's key) come after PassEnv,
// whose default is DefaultPassEnv. The provider's EnvKey is always passed.
type Options struct {
	agent.CLIOptions
	// Sandbox is -s for fix tasks; default "workspace-write". Review and
	// judge tasks always run read-only.
	Sandbox string
	// Provider, when set, is selected as the model provider.
	Provider *Provider
	// Config are extra -c KEY=VALUE overrides (VALUE is TOML).
	Config []string
}

// Agent runs Codex.
type Agent struct {
	bin  string
	opts Options
}

var _ agent.Agent = (*Agent)(nil)

// New resolves the codex program (a missing one is an error here, before
// anything runs: AG-T4 pre-flight) and returns the backend.
func New(opts Options) (*Agent, error) {
	if opts.Sandbox == "" {
		opts.Sandbox = "workspace-write"
	}
	if p := opts.Provider; p != nil {
		cp := *p
		if cp.ID == "" {
			cp.ID = "converge"
		}
		if cp.Name == "" {
			cp.Name = cp.ID
		}
		if cp.WireAPI == "" {
			cp.WireAPI = "responses"
		}
		if cp.BaseURL == "" {
			return nil, fmt.Errorf("codex agent: provider %s has no base URL", cp.ID)
		}
		if !bareKey(cp.ID) {
			return nil, fmt.Errorf("codex agent: provider id %q must be letters, digits, '-' or '_'", cp.ID)
		}
		opts.Provider = &cp
	}
	bin, err := opts.Resolve("codex", BinaryEnv, DefaultPassEnv)
	if err != nil {
		return nil, err
	}
	return &Agent{bin: bin, opts: opts}, nil
}

func (a *Agent) Name() string { return a.opts.Name }

// Binary is the resolved program.
func (a *Agent) Binary() string { return a.bin }

// Args is the command line of a run of t, program first. A fix run's
// session is kept (in CODEX_HOME's sessions) so that a stop at the budget
// can ask it for its record; a review or judge run is --ephemeral.
func (a *Agent) Args(t agent.Task) []string {
	sandbox, keep := a.opts.Sandbox, []string{}
	if agent.ReadOnly(t.Kind) {
		sandbox, keep = "read-only", []string{"--ephemeral"}
	}
	argv := []string{a.bin, "exec", "--json", "-s", sandbox}
	if t.Workdir != "" {
		argv = append(argv, "-C", t.Workdir)
	}
	argv = append(argv, "--skip-git-repo-check")
	argv = append(argv, keep...)
	argv = append(argv, "--color", "never")
	argv = append(a.config(argv, t), a.opts.ExtraArgs...)
	// "-": the prompt is read from stdin (no argv length limit, not in
	// /proc/PID/cmdline).
	return append(argv, "-")
}

// ResumeArgs is the command line of the summary turn of a run of t that
// was stopped at its budget (agent.CLIRun.Resume): codex exec resume of
// the run's session, read-only (the sandbox as a -c override, as resume
// has no -s), not saved again, in the run's directory (resume has no -C;
// the process starts there). ExtraArgs are left out: they are exec's
// flags, which resume may not take.
func (a *Agent) ResumeArgs(t agent.Task, session string) []string {
	argv := []string{a.bin, "exec", "resume", "--json", "--skip-git-repo-check", "--ephemeral"}
	argv = a.config(argv, t)
	return append(argv, "-c", `sandbox_mode="read-only"`, session, "-")
}

// config adds the model and the configuration overrides of a run of t.
func (a *Agent) config(argv []string, t agent.Task) []string {
	if m := a.opts.ModelFor(t); m != "" {
		argv = append(argv, "-m", m)
	}
	if p := a.opts.Provider; p != nil {
		table := fmt.Sprintf("{name=%s,base_url=%s,wire_api=%s", tomlString(p.Name), tomlString(p.BaseURL), tomlString(p.WireAPI))
		if p.EnvKey != "" {
			table += ",env_key=" + tomlString(p.EnvKey)
		}
		table += "}"
		argv = append(argv, "-c", "model_provider="+tomlString(p.ID), "-c", "model_providers."+p.ID+"="+table)
	}
	for _, kv := range a.opts.Config {
		argv = append(argv, "-c", kv)
	}
	return argv
}

// Env is the environment of a run of t.
func (a *Agent) Env(t agent.Task) []string {
	pass := a.opts.PassNames()
	if p := a.opts.Provider; p != nil && p.EnvKey != "" {
		pass = append(append([]string{}, pass...), p.EnvKey)
	}
	return agent.CLIEnv(t.Env, a.opts.Environ(), pass, a.opts.Env)
}

// Run runs Codex once on t. See the package comment for what is read;
// agent.RunWithBudget's rules apply to the record (a stop at the budget
// without a record is partial/budget-exceeded, a non-zero exit keeps a
// valid record with a concern).
func (a *Agent) Run(ctx context.Context, t agent.Task) (agent.Result, error) {
	return agent.RunCLI(ctx, t, agent.CLIRun{
		Backend: "codex", Name: a.opts.Name,
		Argv: a.Args(t), Env: a.Env(t),
		Grace: a.opts.Grace, Secrets: a.opts.Secrets, SummaryBudget: a.opts.SummaryBudget,
		Record: func(stdout string) agent.StatusRecord { return ParseEvents(stdout).Record() },
		Read: func(stdout string) agent.CLIOutput {
			events := ParseEvents(stdout)
			o := agent.CLIOutput{Final: events.Final, Usage: events.Usage}
			if events.TurnFailed != "" {
				o.ReviewFailure = "codex: turn failed: " + events.TurnFailed
			}
			return o
		},
		Session: func(stdout string) string { return ParseEvents(stdout).ThreadID },
		Resume: func(session string) ([]string, []string) {
			return a.ResumeArgs(t, session), a.Env(t)
		},
	})
}

// Events is what a run's JSONL output says.
type Events struct {
	// Final is the text of the last completed agent_message item.
	Final string
	// Usage sums the turn.completed usage.
	Usage agent.Usage
	// Completed counts turn.completed events.
	Completed int
	// Failure is the message of the last turn.failed or error event;
	// TurnFailed that of the last turn.failed (the turn's answer is not
	// whole).
	Failure, TurnFailed string
	// Commands are the command lines of completed command_execution items.
	Commands []string
	// ThreadID is the session of thread.started, the run's first event,
	// for exec resume: gone when the run printed more than agent.OutputTail,
	// as only the tail of the output is kept.
	ThreadID string
}

// event is the part of an output line ParseEvents reads.
type event struct {
	Type     string `json:"type"`
	ThreadID string `json:"thread_id"`
	Item     struct {
		Type    string `json:"type"`
		Text    string `json:"text"`
		Command string `json:"command"`
	} `json:"item"`
	Usage struct {
		InputTokens           int64 `json:"input_tokens"`
		CachedInputTokens     int64 `json:"cached_input_tokens"`
		CacheWriteInputTokens int64 `json:"cache_write_input_tokens"`
		OutputTokens          int64 `json:"output_tokens"`
		ReasoningOutputTokens int64 `json:"reasoning_output_tokens"`
	} `json:"usage"`
	Error struct {
		Message string `json:"message"`
	} `json:"error"`
	Message string `json:"message"`
}

// ParseEvents reads codex exec --json output. Lines that are not JSON
// objects (a tail cut mid-line, stray text) are skipped.
func ParseEvents(stdout string) Events {
	var e Events
	agent.EachJSONLine(stdout, func(ev *event, _ string) {
		switch ev.Type {
		case "thread.started":
			e.ThreadID = ev.ThreadID
		case "item.completed":
			switch ev.Item.Type {
			case "agent_message":
				e.Final = ev.Item.Text
			case "command_execution":
				e.Commands = append(e.Commands, ev.Item.Command)
			}
		case "turn.completed":
			u := ev.Usage
			e.Completed++
			e.Usage.Add(agent.Usage{
				// Codex counts cached (and cache-write) input inside
				// input_tokens; agent.Usage keeps them apart.
				InputTokens:      max(0, u.InputTokens-u.CachedInputTokens-u.CacheWriteInputTokens),
				CacheReadTokens:  u.CachedInputTokens,
				CacheWriteTokens: u.CacheWriteInputTokens,
				OutputTokens:     u.OutputTokens,
				ReasoningTokens:  u.ReasoningOutputTokens,
			})
		case "turn.failed":
			e.TurnFailed = ev.Error.Message
			e.Failure = "turn failed: " + ev.Error.Message
		case "error":
			e.Failure = ev.Message
		}
	})
	return e
}

// Record is the status record of the final message (IF-5, fail-closed).
func (e Events) Record() agent.StatusRecord {
	rec := agent.ParseStatus(e.Final)
	if rec.Reason == agent.ReasonUnparseable && e.Failure != "" {
		rec.Summary += " (codex: " + text.OneLine(e.Failure) + ")"
	}
	return rec
}

// bareKey reports whether s can be a bare TOML key (and so a dotted-path
// segment of a -c override).
func bareKey(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
			return false
		}
	}
	return true
}

// tomlString quotes s as a TOML basic string.
func tomlString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"':
			b.WriteString(`\"`)
		case r == '\\':
			b.WriteString(`\\`)
		case r == utf8.RuneError:
			b.WriteString(`\uFFFD`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\u%04X`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}
