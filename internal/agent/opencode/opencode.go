// Package opencode is the OpenCode agent backend (SPEC AG-B1). It runs
//
//	opencode run --print-logs --log-level WARN --format json --dir WORKDIR [-m PROVIDER/MODEL] [extra args…]
//
// with the task's prompt (agent.RenderTaskPrompt) on stdin, in the task's
// worktree, under the task's time-box (agent.RunWithBudget: own process
// group, SIGTERM at the budget, SIGKILL after the grace period), with the
// task's scrubbed environment plus the variables of OpenCode's providers
// and of the user's own OpenCode configuration (see DefaultPassEnv and
// config.go; never a forge token, SEC-2).
//
// Its configuration comes in OPENCODE_CONFIG_CONTENT, which OpenCode
// applies over the global and the project's configuration: the user's own
// OPENCODE_CONFIG_CONTENT, Options.Config (providers, models …) over it,
// and converge's settings on top — sessions never shared, no self-update,
// and the permissions of the task: a fix run may edit and run commands
// and fetches nothing from the web; a review run may do neither, only
// read. Nothing asks for a permission.
//
// OpenCode prints one JSON event per line: step_start, text, tool_use,
// reasoning, step_finish {tokens, cost}, error. The final message is the
// text of the last step that has text: for a fix task its last line must be
// the status record (IF-5, read fail-closed by agent.ParseStatus, AG-T3);
// for a review or judge task (agent.ReadOnly: edit and bash denied) it
// holds the findings array or the verdict, returned in Result.Output.
// Usage sums the steps' tokens and cost: every step the model served,
// also of a run stopped at its budget.
//
// Its own errors reach the user in its words, in seconds (watch.go): an
// error event of a rejected or missing credential stops the run at once
// (agent.FailAuth); a model request that failed and is tried again —
// OpenCode prints nothing on stdout then, so a run logs its errors to
// stderr (--print-logs) — starts the retry bound, and a run whose model
// does not answer within it ends naming the provider's endpoint
// (agent.FailEndpoint). Any error event is the run's error afterwards.
//
// A fix run stopped at its budget without a record is told to summarize
// (AG-T1, agent.RunCLI): the session its events name (sessionID) is
// continued (--session ID) for one turn with the permissions of a review
// run, asking for the status record.
package opencode

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/convergeloop/converge/internal/agent"
)

// BinaryEnv names the environment variable that gives the opencode program.
const BinaryEnv = "CONVERGE_OPENCODE_BIN"

// ownEnv are OpenCode's own variables that say where its configuration
// and credentials are (OPENCODE_AUTH_CONTENT holds what auth.json would)
// and which models it knows.
var ownEnv = []string{
	"OPENCODE_CONFIG", "OPENCODE_CONFIG_DIR", "OPENCODE_AUTH_CONTENT",
	"OPENCODE_MODELS_PATH", "OPENCODE_MODELS_URL", "OPENCODE_DISABLE_MODELS_FETCH",
	"OPENCODE_DISABLE_PROJECT_CONFIG", "OPENCODE_ENABLE_EXPERIMENTAL_MODELS",
}

// DefaultPassEnv are the variables of converge's environment an opencode
// run gets besides the scrubbed task environment: OpenCode's own (ownEnv)
// and those of every provider it knows (knownProviders, loaderEnv: API
// keys, base URLs, cloud credentials and regions), sorted. No forge token
// is among them (heldBack, agent.ForgeTokenNames). A run also gets the
// variables the user's own OpenCode configuration names in {env:NAME}.
var DefaultPassEnv = defaultPassEnv()

func defaultPassEnv() []string {
	out := slices.Clone(ownEnv)
	for _, p := range knownProviders {
		out = append(out, p.env...)
		out = append(out, loaderEnv[p.id]...)
	}
	out = slices.DeleteFunc(out, func(n string) bool {
		return slices.Contains(heldBack, n) || slices.Contains(agent.ForgeTokenNames, n)
	})
	slices.Sort(out)
	return slices.Compact(out)
}

// quietEnv keeps a run from updating itself or sharing anything.
var quietEnv = []string{"OPENCODE_DISABLE_AUTOUPDATE=1", "OPENCODE_DISABLE_SHARE=1"}

// Options configure the backend. Model (a Task.Model replaces it, AG-E1)
// is passed as -m (provider/model); without one OpenCode chooses (its
// configuration's model, else its default). ExtraArgs are appended to the
// command line; PassEnv's default is DefaultPassEnv.
type Options struct {
	agent.CLIOptions
	// Config is OpenCode configuration (its opencode.json keys) passed in
	// OPENCODE_CONFIG_CONTENT, under converge's own settings.
	Config map[string]any
}

// Agent runs OpenCode.
type Agent struct {
	bin  string
	opts Options
}

var (
	_ agent.Agent     = (*Agent)(nil)
	_ agent.Describer = (*Agent)(nil)
)

// New resolves the opencode program (AG-T4 pre-flight) and returns the
// backend.
func New(opts Options) (*Agent, error) {
	if _, err := json.Marshal(opts.Config); err != nil {
		return nil, fmt.Errorf("opencode agent: config: %v", err)
	}
	bin, err := opts.Resolve("opencode", BinaryEnv, DefaultPassEnv)
	if err != nil {
		return nil, err
	}
	return &Agent{bin: bin, opts: opts}, nil
}

func (a *Agent) Name() string { return a.opts.Name }

// Binary is the resolved program.
func (a *Agent) Binary() string { return a.bin }

// Args is the command line of a run of t, program first.
func (a *Agent) Args(t agent.Task) []string {
	return a.args(t)
}

// ResumeArgs is the command line of the summary turn of a run of t that
// was stopped at its budget (agent.CLIRun.Resume): the run's session
// continued (--session); ResumeEnv denies it edits and commands.
func (a *Agent) ResumeArgs(t agent.Task, session string) []string {
	return a.args(t, "--session", session)
}

func (a *Agent) args(t agent.Task, session ...string) []string {
	// Its logs on stderr are the only sign of a model request that
	// failed and is being tried again (see watch.go).
	argv := []string{a.bin, "run", "--print-logs", "--log-level", "WARN", "--format", "json"}
	if t.Workdir != "" {
		argv = append(argv, "--dir", t.Workdir)
	}
	argv = append(argv, session...)
	if m := a.opts.ModelFor(t); m != "" {
		argv = append(argv, "-m", m)
	}
	return append(argv, a.opts.ExtraArgs...)
}

// ConfigContent is the OPENCODE_CONFIG_CONTENT of a run of t.
func (a *Agent) ConfigContent(t agent.Task) string {
	return a.config(agent.ReadOnly(t.Kind))
}

func (a *Agent) config(readOnly bool) string {
	cfg := map[string]any{}
	// The user's own OPENCODE_CONFIG_CONTENT stays, under converge's.
	if c := envMap(a.opts.Environ())["OPENCODE_CONFIG_CONTENT"]; c != "" {
		if user, err := parseJSONC([]byte(c)); err == nil {
			cfg = user
		}
	}
	// A deep copy: merge writes into cfg.
	var own map[string]any
	b, _ := json.Marshal(a.opts.Config) // New checked that Config encodes
	_ = json.Unmarshal(b, &own)
	cfg = merge(cfg, own)
	cfg["share"] = "disabled"
	cfg["autoupdate"] = false
	if readOnly {
		cfg["permission"] = map[string]any{"edit": "deny", "bash": "deny", "webfetch": "deny"}
	} else {
		cfg["permission"] = map[string]any{"edit": "allow", "bash": "allow", "webfetch": "deny"}
	}
	b, _ = json.Marshal(cfg)
	return string(b)
}

// Env is the environment of a run of t.
func (a *Agent) Env(t agent.Task) []string {
	return a.setup(t, agent.ReadOnly(t.Kind)).env
}

// ResumeEnv is the environment of the summary turn of a run of t: the
// permissions of a review run, which may read and nothing else.
func (a *Agent) ResumeEnv(t agent.Task) []string {
	return a.setup(t, true).env
}

// runSetup is what a run of a task is given and what naming its errors
// needs.
type runSetup struct {
	env []string
	// configs are the OpenCode configurations the run loads, lowest
	// precedence first.
	configs []configSource
	// environ is converge's environment, as a map.
	environ map[string]string
	// model is the run's provider/model, "" when OpenCode chooses.
	model string
}

// setup builds a run's environment: the task's scrubbed one, the
// variables PassNames names, and those the user's own OpenCode
// configuration references ({env:NAME}) — found in the files that the
// run's environment (its HOME, OPENCODE_CONFIG …) points OpenCode to.
func (a *Agent) setup(t agent.Task, readOnly bool) runSetup {
	environ := a.opts.Environ()
	extra := append(append([]string{}, quietEnv...), a.opts.Env...)
	extra = append(extra, "OPENCODE_CONFIG_CONTENT="+a.config(readOnly))
	first := envMap(agent.CLIEnv(t.Env, environ, a.opts.PassNames(), extra))
	s := runSetup{
		configs: append(userConfigs(first), projectConfigs(t.Workdir)...),
		environ: envMap(environ),
		model:   a.opts.ModelFor(t),
	}
	s.env = agent.CLIEnv(t.Env, environ, a.passNames(s), extra)
	if s.model == "" {
		s.model, _ = s.configured("model")
	}
	return s
}

// configured is the string at path in the run's configurations, the one
// of highest precedence (a project's over the user's, OPENCODE_CONFIG_CONTENT
// over all), and where it came from.
func (s runSetup) configured(path ...string) (value, from string) {
	// OPENCODE_CONFIG_CONTENT (userConfigs' last) wins over the project.
	order := slices.Clone(s.configs)
	for i, c := range order {
		if c.from == "OPENCODE_CONFIG_CONTENT" {
			order = append(append(order[:i:i], order[i+1:]...), c)
			break
		}
	}
	for i := len(order) - 1; i >= 0; i-- {
		if v := lookup(order[i].cfg, path...); v != "" {
			return v, order[i].from
		}
	}
	return "", ""
}

// endpoint is the base URL of provider as the run would use it: its
// configured baseURL, else the catalogue's; the provider's id when
// neither says.
func (s runSetup) endpoint(provider string) string {
	if provider == "" {
		provider, _, _ = strings.Cut(s.model, "/")
	}
	if u, _ := s.configured("provider", provider, "options", "baseURL"); u != "" {
		return expand(u, s.environ)
	}
	for _, p := range knownProviders {
		if p.id != provider {
			continue
		}
		// The SDKs' own base URL variables.
		for _, v := range loaderEnv[p.id] {
			if strings.HasSuffix(v, "_BASE_URL") && s.environ[v] != "" {
				return s.environ[v]
			}
		}
		if p.api != "" {
			return expand(p.api, s.environ)
		}
	}
	return provider
}

// Run runs OpenCode once on t; agent.RunWithBudget's rules apply to the
// record. OpenCode's own errors are the run's error (*agent.CLIError).
func (a *Agent) Run(ctx context.Context, t agent.Task) (agent.Result, error) {
	s := a.setup(t, agent.ReadOnly(t.Kind))
	w := newWatcher(s.endpoint)
	return agent.RunCLI(ctx, t, agent.CLIRun{
		Backend: "opencode", Name: a.opts.Name,
		Argv: a.Args(t), Env: s.env,
		Home:  agent.HomePaths(s.env, opencodeHome(s.env), nil),
		Grace: a.opts.Grace, Secrets: a.opts.Secrets, SummaryBudget: a.opts.SummaryBudget,
		Watch: w.line, RetryBound: a.opts.RetryBound,
		Record: func(stdout string) agent.StatusRecord { return ParseEvents(stdout).Record() },
		Read: func(stdout string) agent.CLIOutput {
			events := ParseEvents(stdout)
			return agent.CLIOutput{Final: events.Final, Usage: events.Usage, Failure: w.failure(events)}
		},
		Session: func(stdout string) string { return ParseEvents(stdout).SessionID },
		Resume: func(session string) ([]string, []string) {
			return a.ResumeArgs(t, session), a.ResumeEnv(t)
		},
	})
}

// Events is what a run's JSON output says.
type Events struct {
	// Final is the text of the last step that has text.
	Final string
	// Usage sums the step_finish tokens and cost; Turns counts steps.
	Usage agent.Usage
	// Tools are the tools called, in order.
	Tools []string
	// Failure is the message of the last error event; Error is that
	// error (nil when there was none).
	Failure string
	Error   *ErrorInfo
	// SessionID is the session the events name (each carries it), for
	// --session.
	SessionID string
}

// event is the part of an output line ParseEvents reads.
type event struct {
	Type      string `json:"type"`
	SessionID string `json:"sessionID"`
	Part      struct {
		Text   string `json:"text"`
		Tool   string `json:"tool"`
		Tokens struct {
			Input     int64 `json:"input"`
			Output    int64 `json:"output"`
			Reasoning int64 `json:"reasoning"`
			Cache     struct {
				Read  int64 `json:"read"`
				Write int64 `json:"write"`
			} `json:"cache"`
		} `json:"tokens"`
		Cost float64 `json:"cost"`
	} `json:"part"`
	Error json.RawMessage `json:"error"`
}

// ParseEvents reads opencode run --format json output. Lines that are not
// JSON objects are skipped.
func ParseEvents(stdout string) Events {
	var e Events
	var step []string
	agent.EachJSONLine(stdout, func(ev *event, _ string) {
		if ev.SessionID != "" {
			e.SessionID = ev.SessionID
		}
		switch ev.Type {
		case "step_start":
			step = nil
		case "text":
			step = append(step, ev.Part.Text)
		case "tool_use":
			e.Tools = append(e.Tools, ev.Part.Tool)
		case "step_finish":
			if len(step) > 0 {
				e.Final = strings.Join(step, "\n")
			}
			step = nil
			tk := ev.Part.Tokens
			e.Usage.Add(agent.Usage{
				InputTokens: tk.Input, OutputTokens: tk.Output, ReasoningTokens: tk.Reasoning,
				CacheReadTokens: tk.Cache.Read, CacheWriteTokens: tk.Cache.Write,
				CostUSD: ev.Part.Cost, CostReported: true, Turns: 1,
			})
		case "error":
			info := parseError(ev.Error)
			if info.Name == "MessageAbortedError" {
				// The run was stopped (at its budget): not the CLI's failure.
				return
			}
			e.Error = &info
			e.Failure = info.Message
		}
	})
	// A run stopped inside a step still has that step's text.
	if len(step) > 0 {
		e.Final = strings.Join(step, "\n")
	}
	return e
}

// Record is the status record of the final message (IF-5, fail-closed).
func (e Events) Record() agent.StatusRecord {
	rec := agent.ParseStatus(e.Final)
	if rec.Reason == agent.ReasonUnparseable && e.Failure != "" {
		rec.Summary += " (opencode: " + strings.Join(strings.Fields(e.Failure), " ") + ")"
	}
	return rec
}

// opencodeHome are OpenCode's own directories in env (XDG's, each
// defaulting under HOME): its configuration, its login and sessions, its
// state and its cache.
func opencodeHome(env []string) []string {
	dir := func(xdg, def string) string {
		if d := agent.EnvValue(env, xdg); d != "" {
			return filepath.Join(d, "opencode")
		}
		return filepath.Join(def, "opencode")
	}
	return []string{
		dir("XDG_CONFIG_HOME", ".config"),
		dir("XDG_DATA_HOME", filepath.Join(".local", "share")),
		dir("XDG_STATE_HOME", filepath.Join(".local", "state")),
		dir("XDG_CACHE_HOME", ".cache"),
	}
}
