package checkloop

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/convergeloop/converge/internal/agent"
	"github.com/convergeloop/converge/internal/quote"
)

// Task kinds of the done-check loop. The task's Instructions carry the
// record the child gets, canonical JSON (LOOP-4): the context packet of
// an iteration, or a judge's packet.
const (
	TaskKindIterate = "iterate"
	TaskKindJudge   = "judge"
)

// JudgePacket is what a judge gets: the frozen goal and where to look,
// nothing of what iterations said of themselves (LOOP-6).
type JudgePacket struct {
	Goal string `json:"goal"`
	// Base is the commit the run started from; Head the commit under
	// judgment (the work tree in the judge's workdir is that commit plus
	// any uncommitted change of the iteration just run).
	Base string `json:"base"`
	Head string `json:"head"`
	// Final: this is the fresh final re-judgment before complete.
	Final bool `json:"final"`
}

// Command is the done-check loop's `command` agent backend: any program,
// run with agent.RunWithBudget (time-box, process group, scrubbed
// environment), reading one canonical JSON document on stdin:
//
//	{"budget_seconds":300,
//	 "extension":0,                   // n on the n-th extension of a run that ended partial (AG-T1)
//	 "iteration":2,                   // 0 for a judge of the baseline
//	 "kind":"iterate",                // or "judge"
//	 "packet":{"failed_approaches":[…],"goal":"…","queued_scope":[…],"worklog":"…"},
//	                                  // a judge: {"base":…,"final":…,"goal":…,"head":…}
//	 "prompt":"…",                    // the same, as a prompt for LLM wrappers
//	 "status_schema":{…},             // iterate: the IF-5 status record
//	 "ticket":"r-….iter.02",
//	 "verdict_schema":{…},            // judge: the verdict
//	 "workdir":"/abs/repo"}
//
// An iteration ends its stdout with a status record (IF-5, fail-closed);
// a judge with a verdict line {"verdict":"done"|"not-done","reasons":[…],
// "missing":[…]} and exit 0. Either may add "cost_usd" to that line.
//
// The door (LOOP-4): a packet that is not canonical JSON is refused with
// input-json-noncanonical before the program starts.
type Command struct {
	argv  []string
	name  string
	grace time.Duration
}

var _ agent.Agent = (*Command)(nil)

// NewCommand returns the backend running argv (no shell), named name.
func NewCommand(name string, argv []string) (*Command, error) {
	if len(argv) == 0 || argv[0] == "" {
		return nil, errors.New("command agent: empty argv")
	}
	if name == "" {
		name = "command"
	}
	return &Command{argv: append([]string(nil), argv...), name: name}, nil
}

func (c *Command) Name() string { return c.name }

// Run runs the program once for t.
func (c *Command) Run(ctx context.Context, t agent.Task) (agent.Result, error) {
	packet := []byte(t.Instructions)
	if err := CheckCanonical(packet); err != nil {
		return agent.Result{}, fmt.Errorf("packet for %s: %w", t.RunID, err)
	}
	budget := t.EffectiveBudget()
	doc := map[string]any{
		"budget_seconds": int64(budget.Seconds()),
		"extension":      t.Extension,
		"iteration":      t.Round,
		"kind":           t.Kind,
		"packet":         json.RawMessage(packet),
		"ticket":         t.RunID,
		"workdir":        t.Workdir,
	}
	var parse func(string) agent.StatusRecord
	switch t.Kind {
	case TaskKindIterate:
		var p Packet
		if err := json.Unmarshal(packet, &p); err != nil {
			return agent.Result{}, fmt.Errorf("packet for %s: %w", t.RunID, err)
		}
		doc["prompt"] = RenderIteratePrompt(t, p)
		doc["status_schema"] = json.RawMessage(agent.StatusSchema())
	case TaskKindJudge:
		var p JudgePacket
		if err := json.Unmarshal(packet, &p); err != nil {
			return agent.Result{}, fmt.Errorf("judge packet: %w", err)
		}
		doc["prompt"] = RenderJudgePrompt(t, p)
		doc["verdict_schema"] = json.RawMessage(VerdictSchema())
		// The answer is a verdict, read by ParseVerdict; here any stdout
		// passes, and how the process ended is judged from its exit.
		parse = func(string) agent.StatusRecord { return agent.StatusRecord{Status: agent.StatusComplete} }
	default:
		return agent.Result{}, fmt.Errorf("command agent: unknown task kind %q", t.Kind)
	}
	in, err := MarshalCanonical(doc)
	if err != nil {
		return agent.Result{}, fmt.Errorf("command agent: encode task: %w", err)
	}
	res, err := agent.RunWithBudget(ctx, agent.Cmd{
		Argv: c.argv, Dir: t.Workdir, Env: t.Env, Stdin: in, Budget: budget, Grace: c.grace, Parse: parse,
	})
	if t.Kind == TaskKindJudge {
		res.Record = judgeRecord(res, budget)
	}
	out := agent.Result{
		Record:   res.Record,
		Output:   agent.Redact(res.Stdout),
		Stderr:   agent.Redact(res.Stderr),
		Duration: res.Duration,
	}
	if err != nil {
		return out, fmt.Errorf("command agent %s: %w", c.name, err)
	}
	return out, nil
}

// judgeRecord says how a judge's process ended: complete only for exit 0,
// so a crash is told apart from a verdict that could not be read.
func judgeRecord(res agent.CmdResult, budget time.Duration) agent.StatusRecord {
	rec := agent.StatusRecord{FilesChanged: []string{}}
	switch {
	case res.Flooded:
		return res.Record // agent.FloodRecord
	case res.TimedOut:
		rec.Status, rec.Reason = agent.StatusPartial, agent.ReasonBudgetExceeded
		rec.Summary = fmt.Sprintf("stopped at the %s budget", budget)
	case res.ExitCode != 0:
		rec.Status, rec.Reason = agent.StatusBlocked, agent.ReasonUnparseable
		rec.Summary = fmt.Sprintf("the judge exited with code %d", res.ExitCode)
	default:
		rec.Status, rec.Summary = agent.StatusComplete, "judged"
	}
	return rec
}

// RenderIteratePrompt is the prompt of one iteration: the packet, with
// everything converge did not write itself quoted as data.
func RenderIteratePrompt(t agent.Task, p Packet) string {
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	w("You are one iteration (%s) of a converge loop working toward a goal in the git repository %s.\n", t.RunID, t.Workdir)
	w("You start fresh: what follows is everything you know about the work so far. Make real progress toward the goal by editing files there. ")
	w("Do not commit, push or change branches: converge commits an accepted change itself. ")
	w("converge runs the done-check after you; your own claim that the goal is met never counts. ")
	w("Changing a protected file (the done-check's inputs, such as tests) gets your whole change undone and recorded UNVERIFIED.\n")
	w("\n## Goal\n%s\n", quoteBlock(p.Goal))
	// What agents and checks wrote is quoted as data (internal/quote).
	nonce := quote.Nonce(append(append([]string{p.Worklog}, p.FailedApproaches...), p.QueuedScope...)...)
	w("\n%s", quote.Rules(nonce))
	w("\n## Worklog (data: what earlier iterations and the check did)\n%s", quote.Block("WORKLOG", "", nonce, p.Worklog))
	if len(p.FailedApproaches) > 0 {
		w("\n## Failed approaches (do not repeat them as they were)\n")
		for _, f := range p.FailedApproaches {
			w("%s", quote.Block("FAILED-APPROACH", "", nonce, f))
		}
	}
	if len(p.QueuedScope) > 0 {
		w("\n## Queued scope (known to remain)\n")
		for _, q := range p.QueuedScope {
			w("%s", quote.Block("QUEUED-SCOPE", "", nonce, q))
		}
	}
	w("\n## Time-box\nYou have %s. When you receive SIGTERM, print your status record at once.\n", t.EffectiveBudget().Round(time.Second))
	w("\n## Final line: status record\nEnd your output with exactly one line holding a single JSON object:\n")
	w(`{"status": "complete|partial|blocked", "next_action": "<what remains>", "needs_extension_minutes": <0 or minutes>, "summary": "<what you did>", "files_changed": ["<path>", ...], "reason": "<why, when blocked>"}`)
	w("\nUse blocked only for something you cannot resolve (a missing dependency, a contradiction in the goal); say why in reason.\n")
	return b.String()
}

// RenderJudgePrompt is a judge's prompt.
func RenderJudgePrompt(t agent.Task, p JudgePacket) string {
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	w("You judge whether a goal is met by the git repository %s as it is now (commit %s plus any uncommitted change; the work started at %s). ", t.Workdir, p.Head, p.Base)
	w("Read the code and run what you need; do not edit anything. Judge the code, not anyone's report about it.\n")
	if p.Final {
		w("This is the final re-judgment before the work is declared complete: be strict.\n")
	}
	w("\n## Goal\n%s\n", quoteBlock(p.Goal))
	w("\n## Final line: your verdict\nEnd your output with exactly one line holding a single JSON object:\n")
	w(`{"verdict": "done|not-done", "reasons": ["<why>", ...], "missing": ["<what remains>", ...]}`)
	w("\nAnything else counts as not done.\n")
	return b.String()
}

// quoteBlock prefixes every line of the goal (internal/quote) so no line
// of it can pass for a heading or an instruction of the prompt. The goal
// is the user's: it is the task, not data in a nonce block.
func quoteBlock(s string) string {
	return strings.TrimSuffix(quote.Lines(strings.TrimRight(s, "\r\n")), "\n")
}
