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
// named in Options.PassEnv and AgentEnv and the variable the run's model
// provider reads its key from (SEC-2; never a forge token's). Review,
// judge and check tasks (agent.ReadOnly) run with -s read-only.
//
// The provider is configured as Codex's users configure it (config.go):
// $CODEX_HOME/config.toml (model, model_provider, openai_base_url,
// [model_providers.ID] with base_url and env_key) and -c overrides;
// Options.Provider adds one through -c overrides (Codex's model_providers
// table: name, base_url, wire_api, env_key), e.g. an OpenAI-compatible
// gateway, or fakemodel in tests. The provider's env_key is passed to
// the run, and its base URL names the endpoint in an error.
//
// Codex prints one JSON event per line (codex-rs exec src/exec_events.rs):
// thread.started, turn.started, item.started/updated/completed (items of
// type agent_message, reasoning, command_execution, file_change, error, …),
// turn.completed {usage}, turn.failed {error} and error. The final message
// is the text of the last completed agent_message item: for a fix task its
// last line must be the status record (IF-5, read fail-closed by
// agent.ParseStatus, AG-T3); for a review or judge task it holds the
// findings array or the verdict, returned in Result.Output.
//
// Errors come in the CLI's words, in seconds (Watch): an error event
// about a rejected or missing key (401, 403, "Missing environment
// variable") stops the run at once as agent.FailAuth; Codex's retries
// ("Reconnecting... 2/5 (…)", "Reconnecting... waiting for network")
// start the retry bound (Options.RetryBound), after which the run stops
// as agent.FailEndpoint naming the provider's base URL, unless the model
// answers first. A turn.failed that ends a run is its error afterwards
// (auth, endpoint or cli), whatever kind of run it was.
//
// Usage: turn.completed carries the thread's token count so far, so the
// last one is the run's. A run stopped before its turn completed printed
// none; its thread's rollout ($CODEX_HOME/sessions/…/rollout-…-ID.jsonl,
// kept for fix runs) has a token_count event after every model response,
// the last of which is read instead. Codex reports no price.
//
// A fix run stopped at its budget without a record is told to summarize
// (AG-T1, agent.RunCLI): the session of its thread.started event is
// resumed for one read-only turn (ResumeArgs) asking for the status
// record; that turn's usage is what it added to the thread's. Review,
// judge and check runs are --ephemeral and are not asked.
package codex

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/convergeloop/converge/internal/agent"
	"github.com/convergeloop/converge/internal/text"
)

// BinaryEnv names the environment variable that gives the codex program.
const BinaryEnv = "CONVERGE_CODEX_BIN"

// DefaultPassEnv are the variables of converge's environment a codex run
// gets besides the scrubbed task environment: its API keys and its home.
// No forge token is among them. (Codex 0.169 itself reads CODEX_API_KEY
// and CODEX_HOME; OPENAI_API_KEY serves a provider whose env_key names
// it, OPENAI_BASE_URL older versions.)
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
// whose default is DefaultPassEnv. The run's provider's env_key (this
// Provider's EnvKey, or config.toml's) is always passed, unless it names
// a forge token's variable.
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

var (
	_ agent.Agent     = (*Agent)(nil)
	_ agent.Describer = (*Agent)(nil)
)

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

// Env is the environment of a run of t: the task's scrubbed environment,
// the variables PassNames names, the variables the run's model provider
// reads (its env_key, its env_http_headers' variables) as config.toml and
// the -c overrides set it, never a forge token's, then Options.Env.
func (a *Agent) Env(t agent.Task) []string {
	env, _ := a.envAndSetup(t)
	return env
}

func (a *Agent) envAndSetup(t agent.Task) ([]string, setup) {
	pass := a.opts.PassNames()
	s := a.setup(t, agent.CLIEnv(t.Env, a.opts.Environ(), pass, a.opts.Env))
	for _, n := range s.providerEnv() {
		if !slices.Contains(pass, n) {
			pass = append(pass, n)
		}
	}
	return agent.CLIEnv(t.Env, a.opts.Environ(), pass, a.opts.Env), s
}

// setup is what Codex's configuration says of a run of t in env.
func (a *Agent) setup(t agent.Task, env []string) setup {
	argv := append(a.config(nil, t), a.opts.ExtraArgs...)
	return resolve(env, argv, a.opts.ModelFor(t), a.modelFrom(t))
}

// modelFrom says where the model converge passes comes from.
func (a *Agent) modelFrom(t agent.Task) string {
	switch {
	case t.Model != "":
		return "the task"
	case a.opts.Model == "":
		return ""
	}
	getenv := a.opts.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	if getenv("CONVERGE_CODEX_MODEL") == a.opts.Model {
		return "CONVERGE_CODEX_MODEL"
	}
	return "the agent's model option"
}

// providerEnv are the variables the provider reads that a run may get:
// not a forge token's, whatever config.toml names (SEC-2).
func (s setup) providerEnv() []string {
	var out []string
	for _, n := range append([]string{s.EnvKey}, s.HeaderEnv...) {
		if n != "" && !slices.Contains(agent.ForgeTokenNames, n) && !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}

// Run runs Codex once on t. See the package comment for what is read;
// agent.RunWithBudget's rules apply to the record (a stop at the budget
// without a record is partial/budget-exceeded, a non-zero exit keeps a
// valid record with a concern). The error is a *agent.CLIError when Codex
// said it could not do the run (Watch, Failure).
func (a *Agent) Run(ctx context.Context, t agent.Task) (agent.Result, error) {
	env, s := a.envAndSetup(t)
	w := &watcher{endpoint: s.BaseURL}
	// The summary turn's thread total includes the stopped run's.
	var (
		mu      sync.Mutex
		resumed bool
		ran     agent.Usage
	)
	return agent.RunCLI(ctx, t, agent.CLIRun{
		Backend: "codex", Name: a.opts.Name,
		Argv: a.Args(t), Env: env,
		Home:  agent.HomePaths(env, []string{codexHome(env)}, nil),
		Grace: a.opts.Grace, Secrets: a.opts.Secrets, SummaryBudget: a.opts.SummaryBudget,
		Watch: w.line, RetryBound: a.opts.RetryBound,
		Record: func(stdout string) agent.StatusRecord { return ParseEvents(stdout).Record() },
		Read: func(stdout string) agent.CLIOutput {
			events := ParseEvents(stdout)
			o := agent.CLIOutput{Final: events.Final, Usage: events.Usage}
			mu.Lock()
			defer mu.Unlock()
			if resumed {
				o.Usage = less(events.Usage, ran)
				return o
			}
			// Without a completed turn Codex printed no usage: the
			// rollout has the responses that did complete.
			if events.Completed == 0 {
				if u, ok := RolloutUsage(s.Home, cmp.Or(events.ThreadID, w.thread())); ok {
					o.Usage = u
				}
			}
			ran = o.Usage
			o.Failure = events.failure(s.BaseURL)
			return o
		},
		Session: func(stdout string) string { return cmp.Or(ParseEvents(stdout).ThreadID, w.thread()) },
		Resume: func(session string) ([]string, []string) {
			mu.Lock()
			resumed = true
			mu.Unlock()
			return a.ResumeArgs(t, session), env
		},
	})
}

// less is u without o, field by field, none below zero.
func less(u, o agent.Usage) agent.Usage {
	return agent.Usage{
		InputTokens:      max(0, u.InputTokens-o.InputTokens),
		OutputTokens:     max(0, u.OutputTokens-o.OutputTokens),
		CacheReadTokens:  max(0, u.CacheReadTokens-o.CacheReadTokens),
		CacheWriteTokens: max(0, u.CacheWriteTokens-o.CacheWriteTokens),
		ReasoningTokens:  max(0, u.ReasoningTokens-o.ReasoningTokens),
	}
}

// Events is what a run's JSONL output says.
type Events struct {
	// Final is the text of the last completed agent_message item.
	Final string
	// Usage is the last turn.completed's: Codex reports the thread's
	// total so far.
	Usage agent.Usage
	// Completed counts turn.completed events.
	Completed int
	// Failure is the message of the last turn.failed or error event;
	// TurnFailed that of a turn.failed no turn.completed followed (the
	// run's turn failed).
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
	Usage tokenUsage `json:"usage"`
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
			e.Completed++
			e.Usage = ev.Usage.usage()
			e.TurnFailed = ""
		case "turn.failed":
			e.TurnFailed = ev.Error.Message
			e.Failure = "turn failed: " + ev.Error.Message
		case "error":
			e.Failure = ev.Message
		}
	})
	return e
}

// tokenUsage is a Codex token count (turn.completed usage, a rollout's
// token_count totals).
type tokenUsage struct {
	InputTokens           int64 `json:"input_tokens"`
	CachedInputTokens     int64 `json:"cached_input_tokens"`
	CacheWriteInputTokens int64 `json:"cache_write_input_tokens"`
	OutputTokens          int64 `json:"output_tokens"`
	ReasoningOutputTokens int64 `json:"reasoning_output_tokens"`
}

func (u tokenUsage) usage() agent.Usage {
	return agent.Usage{
		// Codex counts cached (and cache-write) input inside
		// input_tokens; agent.Usage keeps them apart.
		InputTokens:      max(0, u.InputTokens-u.CachedInputTokens-u.CacheWriteInputTokens),
		CacheReadTokens:  u.CachedInputTokens,
		CacheWriteTokens: u.CacheWriteInputTokens,
		OutputTokens:     u.OutputTokens,
		ReasoningTokens:  u.ReasoningOutputTokens,
	}
}

// failure is the CLI's own report that the run's turn failed, as a
// *agent.CLIError (see classify), nil when it did not; endpoint is the
// provider's base URL.
func (e Events) failure(endpoint string) *agent.CLIError {
	if e.TurnFailed == "" {
		return nil
	}
	return classify(e.TurnFailed, endpoint)
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
