package agent

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/convergeloop/converge/internal/proc"
	"github.com/convergeloop/converge/internal/text"
)

// FailKind says why an agent CLI could not do a run, as the CLI's own
// output says it.
type FailKind string

const (
	// FailAuth: the CLI's credentials are missing or were rejected (a
	// 401 or 403, "Not logged in", no API key). Trying again does not
	// help; the converge run ends with exit 6.
	FailAuth FailKind = "auth"
	// FailEndpoint: the model endpoint was unreachable or kept failing
	// (connection refused, a 5xx) for longer than the retry bound.
	FailEndpoint FailKind = "endpoint"
	// FailCLI: another error the CLI reported about the run (an unknown
	// model, a quota, a malformed request).
	FailCLI FailKind = "cli"
)

// DefaultRetryBound is how long a CLI may keep retrying a model request
// that failed before converge stops the run (Cmd.RetryBound).
const DefaultRetryBound = 30 * time.Second

// CLIError is an agent CLI's own report that it could not do a run: the
// error every backend returns from Run when its CLI said so, in the CLI's
// words, in seconds rather than at the time-box.
type CLIError struct {
	Agent string // the backend's Name()
	Kind  FailKind
	// Message is what the CLI said, one line, redacted (SEC-3).
	Message string
	// Endpoint is the model endpoint the CLI failed to use, when known.
	Endpoint string
}

func (e *CLIError) Error() string {
	who := "agent " + e.Agent
	if e.Agent == "" {
		who = "agent"
	}
	switch e.Kind {
	case FailAuth:
		return fmt.Sprintf("%s: authentication failed: %s; check its credentials with converge doctor --check", who, e.quoted())
	case FailEndpoint:
		at := "its model endpoint"
		if e.Endpoint != "" {
			at = "model endpoint " + e.Endpoint
		}
		return fmt.Sprintf("%s: %s unreachable or failing: %s", who, at, e.quoted())
	}
	return fmt.Sprintf("%s reported an error: %s", who, e.quoted())
}

func (e *CLIError) quoted() string {
	if e.Message == "" {
		return "(no message)"
	}
	return fmt.Sprintf("%q", e.Message)
}

// Signal is what one line of an agent CLI's output says about its model
// connection, as a backend's watcher (CLIRun.Watch) reads it while the
// run goes on. The zero Signal says nothing.
type Signal struct {
	// Progress: the model answered, so a retry bound that was running
	// is off.
	Progress bool
	// Retry is a failed model request the CLI will try again. The first
	// starts the retry bound; when it runs out before Progress, the run
	// is stopped with the last Retry as its error (FailEndpoint unless it
	// says otherwise).
	Retry *CLIError
	// Fail stops the run at once with this error (an authentication
	// failure).
	Fail *CLIError
}

// watch turns a backend's line watcher into proc's OnLine and Abort: a
// Fail aborts at once, a Retry not followed by Progress within bound
// aborts when the bound runs out. failure reports the error that stopped
// the run, nil when none did; done ends the bound's timer.
type watch struct {
	fn    func(stderr bool, line string) Signal
	bound time.Duration
	clock interface {
		NewTimer(d time.Duration) (<-chan time.Time, func() bool)
	}
	abort   chan struct{}
	done    chan struct{}
	fail    *CLIError
	pending *CLIError
	timer   func() bool
	gen     int
	// mu serializes line calls with the bound's timer goroutine.
	mu sync.Mutex
}

func newWatch(fn func(bool, string) Signal, bound time.Duration, clock interface {
	NewTimer(d time.Duration) (<-chan time.Time, func() bool)
}) *watch {
	if bound <= 0 {
		bound = DefaultRetryBound
	}
	return &watch{fn: fn, bound: bound, clock: clock, abort: make(chan struct{}), done: make(chan struct{})}
}

// line is proc's OnLine; proc calls it one line at a time.
func (w *watch) line(stderr bool, line string) {
	sig := w.fn(stderr, line)
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.fail != nil {
		return
	}
	switch {
	case sig.Fail != nil:
		w.stop(sig.Fail)
	case sig.Retry != nil:
		w.pending = sig.Retry
		if w.timer == nil {
			w.start()
		}
	case sig.Progress:
		if w.timer != nil {
			w.timer()
			w.timer, w.pending = nil, nil
			w.gen++
		}
	}
}

func (w *watch) start() {
	c, stop := w.clock.NewTimer(w.bound)
	w.timer = stop
	gen := w.gen
	go func() {
		select {
		case <-c:
		case <-w.done:
			return
		}
		w.mu.Lock()
		defer w.mu.Unlock()
		if w.fail == nil && w.gen == gen && w.pending != nil {
			f := *w.pending
			if f.Kind == "" {
				f.Kind = FailEndpoint
			}
			f.Message = strings.TrimSpace(f.Message + fmt.Sprintf(" (still failing after %s of retries)", w.bound))
			w.stop(&f)
		}
	}()
}

func (w *watch) stop(f *CLIError) {
	w.fail = f
	close(w.abort)
}

// finish ends the timer and reports the error that stopped the run.
func (w *watch) finish() *CLIError {
	w.mu.Lock()
	defer w.mu.Unlock()
	select {
	case <-w.done:
	default:
		close(w.done)
	}
	if w.timer != nil {
		w.timer()
	}
	return w.fail
}

// KindOf is the FailKind of the agent CLI error err wraps, "" when it
// wraps none.
func KindOf(err error) FailKind {
	var ce *CLIError
	if errors.As(err, &ce) {
		return ce.Kind
	}
	return ""
}

// TaskKindCheck is a pre-flight check of an agent (its model answers a
// minimal read-only request): see Check.
const TaskKindCheck = "check"

// CheckPrompt is the whole prompt of a check run.
const CheckPrompt = "This is a connectivity check. Do not use any tool. Reply with the single word OK."

// DefaultCheckBudget is the time-box of a check run: a CLI takes seconds
// to start, and its model one short answer.
const DefaultCheckBudget = 90 * time.Second

// CheckResult is what a check run showed.
type CheckResult struct {
	// Usable: the CLI ran and its model answered.
	Usable bool
	// Answer is the model's answer, clipped, when it gave one.
	Answer   string
	Duration time.Duration
	Usage    Usage
}

// Check proves a can reach its model (the pre-flight of AG-T4, and
// converge doctor --check): one minimal read-only run in an empty
// directory under budget (zero means DefaultCheckBudget). The error is
// the CLI's own (a *CLIError where the backend read one) or a
// *RunFailure; nil means the model answered.
func Check(ctx context.Context, a Agent, env []string, budget time.Duration) (CheckResult, error) {
	if budget <= 0 {
		budget = DefaultCheckBudget
	}
	dir, err := os.MkdirTemp("", "converge-agent-check-")
	if err != nil {
		return CheckResult{}, fmt.Errorf("agent check: %w", err)
	}
	defer os.RemoveAll(dir)
	res, err := a.Run(ctx, Task{Kind: TaskKindCheck, Workdir: dir, Prompt: CheckPrompt, Budget: budget, Env: env})
	out := CheckResult{Answer: text.Clip(strings.TrimSpace(res.Output), 200), Duration: res.Duration, Usage: res.Usage}
	if err != nil {
		var ce *CLIError
		if errors.As(err, &ce) {
			return out, ce
		}
		return out, &RunFailure{Agent: a.Name(), What: text.OneLine(err.Error()), Stderr: Redact(tailLines(res.Stderr, 20))}
	}
	if res.Record.Status != StatusComplete || out.Answer == "" {
		what := "its model gave no answer"
		if res.Record.Summary != "" && res.Record.Status != StatusComplete {
			what += " (" + res.Record.Summary + ")"
		}
		return out, &RunFailure{Agent: a.Name(), What: what, Stderr: Redact(tailLines(res.Stderr, 20))}
	}
	out.Usable = true
	return out, nil
}

// Description is what converge doctor says of an agent backend; no field
// ever holds a credential's value.
type Description struct {
	// Version is the CLI's answer to --version, "" when it gave none.
	Version string `json:"version,omitempty"`
	// Model is the model a run would use, and ModelFrom where that comes
	// from ("--model", "CONVERGE_CLAUDE_MODEL", "~/.codex/config.toml",
	// "the CLI's default").
	Model     string `json:"model,omitempty"`
	ModelFrom string `json:"model_from,omitempty"`
	// Credential says where the CLI's credential would come from (a
	// variable's name, a login file's path), "" when none was found.
	Credential string `json:"credential,omitempty"`
	// PassEnv are the variables of converge's environment a run gets
	// beyond the scrubbed basics, those that are set.
	PassEnv []string `json:"pass_env,omitempty"`
	// Problem is what would stop a run, "" when nothing found would.
	Problem string `json:"problem,omitempty"`
}

// Describer is a backend that can describe itself for converge doctor.
type Describer interface {
	Describe(ctx context.Context) Description
}

// CLIVersion is the first line bin prints for --version, "" when it
// prints none within a minute or fails. The bound is for a hung CLI, not a
// slow one: a node CLI's start on a loaded machine took over 20 s, and
// doctor then called a working CLI broken.
func CLIVersion(ctx context.Context, bin string, env []string) string {
	// A version is a line: a CLI that floods is stopped at once.
	res, err := proc.Run(ctx, proc.Spec{Argv: []string{bin, "--version"}, Env: env, Budget: time.Minute, Grace: time.Second, MaxOutput: 4 << 10, MaxRead: 1 << 20})
	if err != nil || res.TimedOut || res.Flooded || res.ExitCode != 0 {
		return ""
	}
	line, _, _ := strings.Cut(strings.TrimSpace(res.Stdout), "\n")
	return text.Clip(strings.TrimSpace(line), 120)
}
