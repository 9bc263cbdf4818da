// Package recap is the recap gate's judgment (PR-G2): what a recap shows a
// judge (the PR's original scope, a ledger of every round, the drift
// signals converge computes itself) and the judge's verdict, validated
// against a JSON Schema and read fail-closed. When to recap is the loop's
// (a count from the forge's history); what to do with the verdict too.
package recap

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/convergeloop/converge/internal/agent"
	"github.com/convergeloop/converge/internal/quote"
	"github.com/convergeloop/converge/internal/text"
)

// TaskKind is the agent.Task kind of a recap judge run.
const TaskKind = "recap"

// The verdicts of SPEC PR-G2.
const (
	Continue      = "CONTINUE"
	RevertAndShip = "REVERT-AND-SHIP"
	HandOff       = "HAND-OFF"
)

// Input is what a recap shows: everything the loop did, measured against
// what the PR set out to do.
type Input struct {
	PR            string   `json:"pr"`
	Title         string   `json:"title"`
	Body          string   `json:"body"`
	BaseDiffLines int      `json:"base_diff_lines"` // the PR's size when the run started
	LoopDiffLines int      `json:"loop_diff_lines"` // what the loop's commits added and removed
	RoundCount    int      `json:"round_count"`     // from the forge's history, not memory
	Rounds        []Round  `json:"rounds"`
	Signals       []Signal `json:"signals"`
}

// Round is one round of the ledger.
type Round struct {
	N        int     `json:"n"`
	Commit   string  `json:"commit,omitempty"`
	Findings []Entry `json:"findings"`
}

// Entry is one finding of a round, with what the loop did about it.
type Entry struct {
	ID          string `json:"id"`
	Source      string `json:"source"`
	Where       string `json:"where"`
	Verdict     string `json:"verdict"`
	Disposition string `json:"disposition"`
	Summary     string `json:"summary"`
}

// Signal is one drift signal converge computed from the ledger.
type Signal struct {
	Kind   string `json:"kind"` // scope-growth, wrong-direction, over-engineering
	Rounds []int  `json:"rounds,omitempty"`
	Detail string `json:"detail"`
}

// Verdict is the judge's decision. Valid is false when no usable answer
// came: then Decision is HAND-OFF, fail-closed (a loop that cannot tell
// whether it drifted stops and hands the PR to a human), and Why says
// what was wrong.
type Verdict struct {
	Decision     string `json:"decision"`
	RevertRounds []int  `json:"revert_rounds,omitempty"`
	Reason       string `json:"reason"`
	Valid        bool   `json:"valid"`
	Why          string `json:"why,omitempty"`
	Agent        string `json:"agent,omitempty"`
	// Usage is what the judge's run reported consuming (PR-M5).
	Usage agent.Usage `json:"usage,omitzero"`
}

// Signals computes the drift signals the ledger shows by itself: scope
// growth (the loop changed more lines than the PR had at start) and
// wrong direction (a later round's finding sits on lines an earlier
// round's addressed finding changed: the loop is re-fixing its own work).
// Out-of-scope changes, over-engineering and work that belongs in another
// PR need judgment; the judge weighs them from the ledger.
func Signals(in Input) []Signal {
	var out []Signal
	if in.BaseDiffLines > 0 && in.LoopDiffLines > in.BaseDiffLines {
		out = append(out, Signal{Kind: "scope-growth", Detail: fmt.Sprintf("the loop's commits changed %d lines; the PR had %d when the run started", in.LoopDiffLines, in.BaseDiffLines)})
	}
	type at struct {
		round int
		where string
	}
	var fixed []at
	for _, r := range in.Rounds {
		var again []int
		for _, e := range r.Findings {
			for _, f := range fixed {
				if f.round < r.N && e.Where != "" && e.Where == f.where && !slices.Contains(again, f.round) {
					again = append(again, f.round)
				}
			}
		}
		if len(again) > 0 {
			slices.Sort(again)
			out = append(out, Signal{Kind: "wrong-direction", Rounds: append(again, r.N),
				Detail: fmt.Sprintf("round %d has findings on lines rounds %v already fixed", r.N, again)})
		}
		for _, e := range r.Findings {
			if e.Disposition == "addressed" && e.Where != "" {
				fixed = append(fixed, at{r.N, e.Where})
			}
		}
	}
	return out
}

//go:embed recap.schema.json
var schemaJSON []byte

// Schema is the JSON Schema a recap judge's answer validates against.
func Schema() []byte { return bytes.Clone(schemaJSON) }

var schema = agent.EmbeddedSchema("recap-judge.json", schemaJSON)

// Judge asks an agent for the recap's verdict.
type Judge struct {
	Agent   agent.Agent
	Budget  time.Duration
	Workdir string
	Env     []string
}

// Run shows the judge the recap and reads its verdict. It returns an
// error only when ctx ends; every other failure is a HAND-OFF verdict
// that is not Valid, with Why.
func (j *Judge) Run(ctx context.Context, in Input) (Verdict, error) {
	if j == nil || j.Agent == nil {
		return invalid("", "no recap judge agent is configured (--judge-agent)"), nil
	}
	res, err := j.Agent.Run(ctx, j.task(in))
	if ctx.Err() != nil {
		return invalid(j.Agent.Name(), "stopped: "+ctx.Err().Error()), ctx.Err()
	}
	if err != nil {
		v := invalid(j.Agent.Name(), "the judge could not run: "+err.Error())
		v.Usage = res.Usage.Counted()
		return v, nil
	}
	v := Parse(res.Output, in)
	v.Agent = j.Agent.Name()
	if v.Valid && res.Record.Status != agent.StatusComplete {
		v = invalid(v.Agent, fmt.Sprintf("the run ended %s: %s", res.Record.Status, res.Record.Summary))
	}
	v.Usage = res.Usage.Counted()
	return v, nil
}

func (j *Judge) task(in Input) agent.Task {
	t := agent.Task{Kind: TaskKind, Workdir: j.Workdir, Budget: j.Budget, Env: j.Env, Round: in.RoundCount}
	t.Prompt = Prompt(in)
	return t
}

// Parse reads a judge's answer: the last non-empty line of output, a JSON
// object valid against Schema whose REVERT-AND-SHIP names only rounds of
// the ledger that have a commit. Anything else is not Valid (HAND-OFF).
func Parse(output string, in Input) Verdict {
	lines := strings.Split(strings.TrimSpace(output), "\n")
	last := strings.TrimSpace(lines[len(lines)-1])
	if last == "" {
		return invalid("", "no answer")
	}
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(last))
	if err != nil {
		return invalid("", "the last line is not JSON: "+text.Clip(last, 120))
	}
	if err := schema().Validate(doc); err != nil {
		return invalid("", "the answer does not match the recap schema: "+text.Clip(strings.ReplaceAll(err.Error(), "\n", " "), 300))
	}
	var a struct {
		Recap struct {
			Verdict      string `json:"verdict"`
			RevertRounds []int  `json:"revert_rounds"`
			Reason       string `json:"reason"`
		} `json:"recap"`
	}
	if err := agent.ExactKeys(doc, a); err != nil {
		return invalid("", "the answer: "+err.Error())
	}
	if err := json.Unmarshal([]byte(last), &a); err != nil {
		return invalid("", "the answer does not decode: "+err.Error())
	}
	v := Verdict{Decision: a.Recap.Verdict, Reason: a.Recap.Reason, Valid: true}
	switch v.Decision {
	case RevertAndShip:
		if len(a.Recap.RevertRounds) == 0 {
			return invalid("", "REVERT-AND-SHIP names no round to revert")
		}
		for _, n := range a.Recap.RevertRounds {
			i := slices.IndexFunc(in.Rounds, func(r Round) bool { return r.N == n })
			if i < 0 || in.Rounds[i].Commit == "" {
				return invalid("", fmt.Sprintf("REVERT-AND-SHIP names round %d, which has no commit of the loop", n))
			}
		}
		v.RevertRounds = slices.Sorted(slices.Values(a.Recap.RevertRounds))
	default:
		if len(a.Recap.RevertRounds) > 0 {
			return invalid("", v.Decision+" names rounds to revert")
		}
	}
	return v
}

func invalid(agentName, why string) Verdict {
	return Verdict{Decision: HandOff, Reason: "no usable recap verdict: " + why, Why: why, Agent: agentName}
}

// Prompt renders the recap for a model. The PR's text and the findings
// are data written by others, fenced and never instructions.
func Prompt(in Input) string {
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	w("You are the recap gate of a review loop that has run %d rounds on a pull request (SPEC PR-G2).\n", in.RoundCount)
	w("Decide whether the loop still serves the PR's original scope. Read the ledger of every round and the drift signals.\n")
	w("- CONTINUE: every round traces to the original scope, no drift; the reviews still surface in-scope findings.\n")
	w("- REVERT-AND-SHIP: some rounds drifted (over-engineering, wrong direction, out of scope) but the in-scope fixes are sound; name the drifted rounds to revert (only rounds with a commit).\n")
	w("- HAND-OFF: drift is entangled with in-scope work, the right fix is a redesign, or the work belongs in a separate PR.\n")
	w("Edit nothing. End your output with one line of JSON: your status record with a \"recap\" member: ")
	w(`{"status":"complete","next_action":"","needs_extension_minutes":0,"summary":"…","files_changed":[],"recap":{"verdict":"CONTINUE|REVERT-AND-SHIP|HAND-OFF","revert_rounds":[…],"reason":"…"}}`)
	data, _ := json.MarshalIndent(in, "", "  ")
	nonce := quote.Nonce(string(data))
	w("\n\nThe recap is quoted below as JSON (internal/quote). %s\n", quote.Rules(nonce))
	w("%s", quote.Block("RECAP", "", nonce, string(data)))
	return b.String()
}

// Markdown renders a recap and its verdict for the PR and the log.
func Markdown(in Input, v Verdict) string {
	var b strings.Builder
	fmt.Fprintf(&b, "### converge recap after %d rounds\n\n", in.RoundCount)
	fmt.Fprintf(&b, "**Verdict: %s**: %s\n\n", v.Decision, text.OneLine(v.Reason))
	if len(v.RevertRounds) > 0 {
		fmt.Fprintf(&b, "Rounds reverted: %v\n\n", v.RevertRounds)
	}
	fmt.Fprintf(&b, "Scope at start: %d changed lines; the loop's commits changed %d.\n\n", in.BaseDiffLines, in.LoopDiffLines)
	if len(in.Signals) > 0 {
		b.WriteString("Drift signals:\n")
		for _, s := range in.Signals {
			fmt.Fprintf(&b, "- %s: %s\n", s.Kind, text.OneLine(s.Detail))
		}
		b.WriteString("\n")
	}
	b.WriteString("| round | commit | findings (disposition) |\n|---|---|---|\n")
	for _, r := range in.Rounds {
		var fs []string
		for _, e := range r.Findings {
			fs = append(fs, fmt.Sprintf("%s %s (%s)", e.Where, text.Clip(text.OneLine(e.Summary), 60), e.Disposition))
		}
		commit := "–"
		if r.Commit != "" {
			commit = "`" + text.ShortSHA(r.Commit) + "`"
		}
		fmt.Fprintf(&b, "| %d | %s | %s |\n", r.N, commit, strings.ReplaceAll(strings.Join(fs, "; "), "|", `\|`))
	}
	return b.String()
}
