// Package gemini is the Gemini CLI agent backend (SPEC AG-B1). It runs
//
//	gemini -o stream-json --approval-mode yolo --skip-trust
//	       [--session-id ID] [-m MODEL] [extra args…] -p "…"
//
// with the task's prompt (agent.RenderTaskPrompt) on stdin — -p, which
// makes the run non-interactive, only adds a closing line to it — in the
// task's worktree, under the task's time-box (agent.RunWithBudget: own
// process group, SIGTERM at the budget, SIGKILL after the grace period),
// with the task's scrubbed environment plus only the model credentials
// named in Options.PassEnv (SEC-2). A fix run approves every tool (yolo:
// nothing waits for a prompt; Gemini CLI's own sandbox needs a container
// runtime and is left to ExtraArgs); a review run is in plan mode, which
// reads and never edits.
//
// Gemini CLI prints one JSON event per line: init, message (the user's,
// then the assistant's text in deltas), tool_use {tool_name, tool_id,
// parameters}, tool_result {tool_id, status}, error, and result {status,
// stats}. The final message is the assistant text after the last tool
// call: for a fix task its last line must be the status record (IF-5, read
// fail-closed by agent.ParseStatus, AG-T3); for a review or judge task
// (agent.ReadOnly, run in plan mode) it holds the findings array or the
// verdict, returned in Result.Output. Usage is the result's stats (every
// request the CLI made, its router's included); a run stopped before its
// result event is counted from its session file (session.go). Gemini CLI
// reports no price.
//
// Every run starts a session converge names (--session-id). A fix run
// stopped at its budget without a record is told to summarize (AG-T1,
// agent.RunCLI): the session is resumed (--resume ID) for one turn in
// plan mode asking for the status record.
//
// The CLI's own errors (watch.go) end a run in seconds with a
// *agent.CLIError in its words: a rejected or missing credential at
// once, a model endpoint it keeps retrying after Options.RetryBound
// (agent.CLIRun.Watch), a fatal error in its result event afterwards.
package gemini

import (
	"context"
	"path/filepath"
	"strings"

	"github.com/convergeloop/converge/internal/agent"
)

// BinaryEnv names the environment variable that gives the gemini program.
const BinaryEnv = "CONVERGE_GEMINI_BIN"

// DefaultPassEnv are the variables of converge's environment a gemini run
// gets besides the scrubbed task environment: how Gemini CLI reaches and
// authenticates to its model. No forge token is among them.
// The Vertex AI ones are as Gemini CLI reads them (see provider.go):
// GOOGLE_GENAI_USE_VERTEXAI=true, GOOGLE_CLOUD_PROJECT (or
// GOOGLE_CLOUD_PROJECT_ID) and GOOGLE_CLOUD_LOCATION with Google
// credentials (GOOGLE_APPLICATION_CREDENTIALS, gcloud's login under
// CLOUDSDK_CONFIG or HOME), or GOOGLE_API_KEY alone (express mode);
// GOOGLE_VERTEX_BASE_URL replaces Vertex AI's endpoint as
// GOOGLE_GEMINI_BASE_URL does the Gemini API's.
var DefaultPassEnv = []string{
	"GEMINI_API_KEY", "GOOGLE_API_KEY", "GOOGLE_GEMINI_BASE_URL", "GOOGLE_VERTEX_BASE_URL",
	"GOOGLE_GENAI_USE_VERTEXAI", "GOOGLE_GENAI_USE_GCA", "GOOGLE_CLOUD_PROJECT", "GOOGLE_CLOUD_PROJECT_ID", "GOOGLE_CLOUD_LOCATION",
	"GOOGLE_APPLICATION_CREDENTIALS", "CLOUDSDK_CONFIG", "GOOGLE_CLOUD_QUOTA_PROJECT", "GEMINI_CLI_USE_COMPUTE_ADC",
	"GEMINI_MODEL", "GEMINI_CLI_HOME", "GEMINI_CLI_SYSTEM_SETTINGS_PATH", "GEMINI_CLI_SYSTEM_DEFAULTS_PATH",
	"GEMINI_FORCE_ENCRYPTED_FILE_STORAGE", "GEMINI_FORCE_FILE_STORAGE",
}

// prompt is -p: it only makes the run non-interactive; the task is on
// stdin, and this line is appended to it.
const prompt = "Do the task above. The last line of your final message must be what the task asks for."

// Options configure the backend. Model (a Task.Model replaces it, AG-E1)
// is passed as -m; ExtraArgs are
// added before -p; PassEnv's default is DefaultPassEnv.
type Options struct {
	agent.CLIOptions
	// ApprovalMode is --approval-mode of a fix run; default "yolo". Review
	// and judge runs use "plan".
	ApprovalMode string
}

// Agent runs Gemini CLI.
type Agent struct {
	bin  string
	opts Options
}

var _ agent.Agent = (*Agent)(nil)

// New resolves the gemini program (AG-T4 pre-flight) and returns the
// backend.
func New(opts Options) (*Agent, error) {
	if opts.ApprovalMode == "" {
		opts.ApprovalMode = "yolo"
	}
	bin, err := opts.Resolve("gemini", BinaryEnv, DefaultPassEnv)
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
	mode := a.opts.ApprovalMode
	if agent.ReadOnly(t.Kind) {
		mode = "plan"
	}
	return a.args(t, mode)
}

// SessionArgs is the command line of a run of t that starts the session
// id: for the summary turn at its budget (ResumeArgs), and for the usage
// of a run stopped before its result event (session.go).
func (a *Agent) SessionArgs(t agent.Task, id string) []string {
	mode := a.opts.ApprovalMode
	if agent.ReadOnly(t.Kind) {
		mode = "plan"
	}
	return a.args(t, mode, "--session-id", id)
}

// ResumeArgs is the command line of the summary turn of a run of t that
// was stopped at its budget (agent.CLIRun.Resume): its session resumed in
// plan mode, which reads and never edits.
func (a *Agent) ResumeArgs(t agent.Task, session string) []string {
	return a.args(t, "plan", "--resume", session)
}

func (a *Agent) args(t agent.Task, mode string, session ...string) []string {
	argv := []string{a.bin, "-o", "stream-json", "--approval-mode", mode, "--skip-trust"}
	argv = append(argv, session...)
	if m := a.opts.ModelFor(t); m != "" {
		argv = append(argv, "-m", m)
	}
	argv = append(argv, a.opts.ExtraArgs...)
	return append(argv, "-p", prompt)
}

// Env is the environment of a run of t.
func (a *Agent) Env(t agent.Task) []string {
	// No self-relaunch with a bigger heap: the run stays one process tree
	// under converge's time-box either way, but simpler.
	extra := append([]string{"GEMINI_CLI_NO_RELAUNCH=true"}, a.opts.Env...)
	return agent.CLIEnv(t.Env, a.opts.Environ(), a.opts.PassNames(), extra)
}

// Run runs Gemini CLI once on t; agent.RunWithBudget's rules apply to the
// record.
func (a *Agent) Run(ctx context.Context, t agent.Task) (agent.Result, error) {
	// The init event names the session, but only the output's tail is
	// kept: converge names it.
	session := agent.NewSessionID()
	env := a.Env(t)
	endpoint := providerOf(env, t.Workdir).Endpoint
	home := cliHome(env)
	// The session's answers already counted: the summary turn resumes the
	// session, whose file then holds the stopped run's answers too.
	counted := map[string]bool{}
	readOnly := agent.ReadOnly(t.Kind)
	return agent.RunCLI(ctx, t, agent.CLIRun{
		Backend: "gemini", Name: a.opts.Name,
		Argv: a.SessionArgs(t, session), Env: env,
		Home:  agent.HomePaths(env, []string{filepath.Join(home, ".gemini")}, []string{filepath.Join(home, ".env")}),
		Grace: a.opts.Grace, Secrets: a.opts.Secrets, SummaryBudget: a.opts.SummaryBudget,
		Watch: watcher(endpoint), RetryBound: a.opts.RetryBound,
		Record: func(stdout string) agent.StatusRecord { return ParseEvents(stdout).Record() },
		Read: func(stdout string) agent.CLIOutput {
			events := ParseEvents(stdout)
			o := agent.CLIOutput{Final: events.Final, Usage: events.Usage}
			if !events.Result {
				// Stopped before its result event: what its session
				// recorded.
				o.Usage, _ = sessionUsage(home, session, counted)
			}
			if events.Status != "" && events.Status != "success" {
				o.ReviewFailure = "gemini ended with status " + events.Status + ": " + events.Failure
			}
			o.Failure = events.CLIFailure(readOnly, endpoint)
			return o
		},
		Session: func(string) string { return session },
		Resume: func(session string) ([]string, []string) {
			return a.ResumeArgs(t, session), a.Env(t)
		},
	})
}

// Events is what a run's stream-json output says.
type Events struct {
	// Final is the assistant text after the last tool call.
	Final string
	// Usage is the result event's stats; Result says there was one.
	Usage  agent.Usage
	Result bool
	// Tools are the tools called, in order.
	Tools []string
	// Status is the result event's status ("success", "error"); empty
	// without one.
	Status string
	// Failure is the message of the last error, or of an error result.
	Failure string
	// Fatal is the message of an error result: the CLI could not go on
	// (an API error after its retries, a credential, a fatal tool error).
	Fatal string
}

// event is the part of an output line ParseEvents reads.
type event struct {
	Type     string `json:"type"`
	Role     string `json:"role"`
	Content  string `json:"content"`
	Delta    bool   `json:"delta"`
	ToolName string `json:"tool_name"`
	Status   string `json:"status"`
	Message  string `json:"message"`
	Error    struct {
		Message string `json:"message"`
	} `json:"error"`
	Stats struct {
		TotalTokens  int64 `json:"total_tokens"`
		InputTokens  int64 `json:"input_tokens"`
		OutputTokens int64 `json:"output_tokens"`
		Cached       int64 `json:"cached"`
	} `json:"stats"`
}

// ParseEvents reads gemini -o stream-json output. Lines that are not JSON
// objects are skipped.
func ParseEvents(stdout string) Events {
	var e Events
	var text strings.Builder
	agent.EachJSONLine(stdout, func(ev *event, _ string) {
		switch ev.Type {
		case "message":
			if ev.Role != "assistant" {
				return
			}
			if !ev.Delta {
				text.Reset()
			}
			text.WriteString(ev.Content)
		case "tool_use":
			e.Tools = append(e.Tools, ev.ToolName)
			text.Reset()
		case "error":
			e.Failure = ev.Message
		case "result":
			e.Status, e.Result = ev.Status, true
			if ev.Status != "success" && ev.Error.Message != "" {
				e.Failure, e.Fatal = ev.Error.Message, ev.Error.Message
			}
			st := ev.Stats
			total := st.TotalTokens
			if total == 0 {
				total = st.InputTokens + st.OutputTokens
			}
			e.Usage = tokenUsage(st.InputTokens, st.OutputTokens, st.Cached, total)
		}
	})
	e.Final = text.String()
	return e
}

// Record is the status record of the final message (IF-5, fail-closed),
// with a concern when Gemini CLI reported the run as failed.
func (e Events) Record() agent.StatusRecord {
	rec := agent.ParseStatus(e.Final)
	switch {
	case rec.Reason == agent.ReasonUnparseable && e.Failure != "":
		rec.Summary += " (gemini: " + strings.Join(strings.Fields(e.Failure), " ") + ")"
	case rec.Reason != agent.ReasonUnparseable && e.Status != "" && e.Status != "success":
		rec.Concerns = append(rec.Concerns, "gemini reported status "+e.Status)
	}
	return rec
}

// CLIFailure is the CLI's own report that it could not do the run, read
// from its result event: an error result of a review, judge or check run
// (readOnly), or of a fix run that left no valid record (a record the
// agent printed before the failure stands, with a concern); nil
// otherwise. endpoint is named when the model endpoint failed.
func (e Events) CLIFailure(readOnly bool, endpoint string) *agent.CLIError {
	if e.Fatal == "" || (!readOnly && e.Record().Reason != agent.ReasonUnparseable) {
		return nil
	}
	f := &agent.CLIError{Kind: failKind(e.Fatal), Message: cleanLine(e.Fatal)}
	if f.Kind == agent.FailEndpoint {
		f.Endpoint = endpoint
	}
	return f
}
