// Package opencode is the OpenCode agent backend (SPEC AG-B1). It runs
//
//	opencode run --format json --dir WORKDIR [-m PROVIDER/MODEL] [extra args…]
//
// with the task's prompt (agent.RenderTaskPrompt) on stdin, in the task's
// worktree, under the task's time-box (agent.RunWithBudget: own process
// group, SIGTERM at the budget, SIGKILL after the grace period), with the
// task's scrubbed environment plus only the model credentials named in
// Options.PassEnv (SEC-2).
//
// Its configuration comes in OPENCODE_CONFIG_CONTENT, which OpenCode
// applies over the global and the project's configuration: Options.Config
// (providers, models …) with converge's settings on top — sessions never
// shared, no self-update, and the permissions of the task: a fix run may
// edit and run commands and fetches nothing from the web; a review run may
// do neither, only read. Nothing asks for a permission.
//
// OpenCode prints one JSON event per line: step_start, text, tool_use,
// reasoning, step_finish {tokens, cost}, error. The final message is the
// text of the last step that has text: for a fix task its last line must be
// the status record (IF-5, read fail-closed by agent.ParseStatus, AG-T3);
// for a review or judge task (agent.ReadOnly: edit and bash denied) it
// holds the findings array or the verdict, returned in Result.Output.
// Usage sums the steps' tokens and cost.
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
	"maps"
	"strings"

	"github.com/convergeloop/converge/internal/agent"
)

// BinaryEnv names the environment variable that gives the opencode program.
const BinaryEnv = "CONVERGE_OPENCODE_BIN"

// DefaultPassEnv are the variables of converge's environment an opencode
// run gets besides the scrubbed task environment: the model providers'
// keys and OpenCode's own configuration. No forge token is among them.
var DefaultPassEnv = []string{
	"ANTHROPIC_API_KEY", "OPENAI_API_KEY", "OPENROUTER_API_KEY", "GOOGLE_GENERATIVE_AI_API_KEY",
	"OPENCODE_API_KEY", "OPENCODE_CONFIG", "OPENCODE_CONFIG_DIR",
}

// quietEnv keeps a run from updating itself or sharing anything.
var quietEnv = []string{"OPENCODE_DISABLE_AUTOUPDATE=1", "OPENCODE_DISABLE_SHARE=1"}

// Options configure the backend. Model (a Task.Model replaces it, AG-E1)
// is passed as -m (provider/model);
// ExtraArgs are appended to the command line; PassEnv's default is
// DefaultPassEnv.
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

var _ agent.Agent = (*Agent)(nil)

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
	argv := []string{a.bin, "run", "--format", "json"}
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
	cfg := maps.Clone(a.opts.Config)
	if cfg == nil {
		cfg = map[string]any{}
	}
	cfg["share"] = "disabled"
	cfg["autoupdate"] = false
	if readOnly {
		cfg["permission"] = map[string]any{"edit": "deny", "bash": "deny", "webfetch": "deny"}
	} else {
		cfg["permission"] = map[string]any{"edit": "allow", "bash": "allow", "webfetch": "deny"}
	}
	b, _ := json.Marshal(cfg) // New checked that Config encodes
	return string(b)
}

// Env is the environment of a run of t.
func (a *Agent) Env(t agent.Task) []string {
	return a.env(t, agent.ReadOnly(t.Kind))
}

// ResumeEnv is the environment of the summary turn of a run of t: the
// permissions of a review run, which may read and nothing else.
func (a *Agent) ResumeEnv(t agent.Task) []string {
	return a.env(t, true)
}

func (a *Agent) env(t agent.Task, readOnly bool) []string {
	extra := append(append([]string{}, quietEnv...), a.opts.Env...)
	extra = append(extra, "OPENCODE_CONFIG_CONTENT="+a.config(readOnly))
	return agent.CLIEnv(t.Env, a.opts.Environ(), a.opts.PassNames(), extra)
}

// Run runs OpenCode once on t; agent.RunWithBudget's rules apply to the
// record.
func (a *Agent) Run(ctx context.Context, t agent.Task) (agent.Result, error) {
	return agent.RunCLI(ctx, t, agent.CLIRun{
		Backend: "opencode", Name: a.opts.Name,
		Argv: a.Args(t), Env: a.Env(t),
		Grace: a.opts.Grace, Secrets: a.opts.Secrets, SummaryBudget: a.opts.SummaryBudget,
		Record: func(stdout string) agent.StatusRecord { return ParseEvents(stdout).Record() },
		Read: func(stdout string) agent.CLIOutput {
			events := ParseEvents(stdout)
			o := agent.CLIOutput{Final: events.Final, Usage: events.Usage}
			if events.Failure != "" {
				o.ReviewFailure = "opencode: " + events.Failure
			}
			return o
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
	// Failure is the message of the last error event.
	Failure string
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
			e.Failure = errorText(ev.Error)
		}
	})
	// A run stopped inside a step still has that step's text.
	if len(step) > 0 {
		e.Final = strings.Join(step, "\n")
	}
	return e
}

// errorText is the message of an error event's error (an object with a
// message, possibly under data), or its JSON.
func errorText(raw json.RawMessage) string {
	var v struct {
		Name    string `json:"name"`
		Message string `json:"message"`
		Data    struct {
			Message string `json:"message"`
		} `json:"data"`
	}
	if json.Unmarshal(raw, &v) == nil {
		for _, m := range []string{v.Data.Message, v.Message, v.Name} {
			if m != "" {
				return m
			}
		}
	}
	return string(raw)
}

// Record is the status record of the final message (IF-5, fail-closed).
func (e Events) Record() agent.StatusRecord {
	rec := agent.ParseStatus(e.Final)
	if rec.Reason == agent.ReasonUnparseable && e.Failure != "" {
		rec.Summary += " (opencode: " + strings.Join(strings.Fields(e.Failure), " ") + ")"
	}
	return rec
}
