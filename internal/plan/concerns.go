package plan

import (
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/convergeloop/converge/internal/agent"
	"github.com/convergeloop/converge/internal/text"
)

// The orchestrator's verdicts on a concern an implementer reported with
// DONE_WITH_CONCERNS (the source's status protocol): an observation (file
// bloat, an atypical pattern) and a justified concern about correctness or
// scope are recorded and the task goes on to its review; a critical one
// stops the task BLOCKED.
const (
	VerdictObservation = "observation"
	VerdictJustified   = "justified"
	VerdictCritical    = "critical"
)

// ConcernVerdict is the orchestrator's judgment of one concern.
type ConcernVerdict struct {
	Concern string `json:"concern"`
	Verdict string `json:"verdict"`
	Reason  string `json:"reason,omitempty"`
	// By is who judged: "judge <agent>", or "rule" (RuleVerdict).
	By string `json:"by"`
}

// JudgeDone is a judgment an act ran: the verdicts on the concerns it
// was asked about, in their order.
type JudgeDone struct {
	Task     string           `json:"task"`
	N        int              `json:"n"`
	Verdicts []ConcernVerdict `json:"verdicts"`
	// Note says why the rule judged what the judge did not.
	Note    string      `json:"note,omitempty"`
	CostUSD float64     `json:"cost_usd,omitempty"`
	Usage   agent.Usage `json:"usage,omitzero"`
}

// Words of a concern that make it an observation (the source's "file
// bloating, atypical pattern"), and words that make it a concern about
// correctness or scope, which the rule never waves through.
var (
	observationWords = regexp.MustCompile(`(?i)\b(long|longer|large file|big file|bloat\w*|grow\w*|size|style|styling|naming|names?|renam\w*|pattern|atypical|unusual|idiomatic|convention\w*|format\w*|readab\w*|duplicat\w*|refactor\w*|clean ?up|cosmetic|verbose|nit|comments?|docs?|documentation|todo)\b`)
	riskWords        = regexp.MustCompile(`(?i)\b(wrong\w*|incorrect\w*|bugs?|buggy|break\w*|broke\w*|fail\w*|errors?|data|los[es]|lost|delet\w*|drop\w*|overwrit\w*|secur\w*|vulnerab\w*|unsafe|inject\w*|secrets?|tokens?|passwords?|credential\w*|race\w*|deadlock\w*|crash\w*|panic\w*|leak\w*|corrupt\w*|regress\w*|scope|outside|missing|untested|not tested|no tests?|skipp\w*|incomplete|partial\w*|half|guess\w*|unsure|not sure|unclear|may not|might not|assum\w*|unverified|could not|cannot|can't|hack\w*|workaround\w*|disabled?)\b`)
)

// RuleVerdict is the fail-closed rule that judges a concern when no
// judge did: only a concern that reads as an observation and names no
// risk to correctness or scope is an observation; any other is critical,
// as no one evaluated it and converge cannot prove it harmless.
func RuleVerdict(concern string) ConcernVerdict {
	v := ConcernVerdict{Concern: concern, By: "rule"}
	switch risk := riskWords.FindString(concern); {
	case risk != "":
		v.Verdict = VerdictCritical
		v.Reason = fmt.Sprintf("no judge evaluated it and it names a risk to correctness or scope (%q): fail closed", strings.ToLower(risk))
	case observationWords.MatchString(concern):
		v.Verdict = VerdictObservation
		v.Reason = "an observation (size, style, pattern): recorded"
	default:
		v.Verdict = VerdictCritical
		v.Reason = "no judge evaluated it and it does not read as an observation: fail closed"
	}
	return v
}

// ruleVerdicts judges every concern by RuleVerdict.
func ruleVerdicts(concerns []string) []ConcernVerdict {
	out := make([]ConcernVerdict, 0, len(concerns))
	for _, c := range concerns {
		out = append(out, RuleVerdict(c))
	}
	return out
}

//go:embed concerns.schema.json
var concernsSchemaJSON []byte

// ConcernsSchema returns the JSON Schema of a judge's answer on concerns.
func ConcernsSchema() []byte { return append([]byte(nil), concernsSchemaJSON...) }

var concernsSchema = agent.EmbeddedSchema("plan-concerns.json", concernsSchemaJSON)

type verdictLine struct {
	N       int    `json:"n"`
	Verdict string `json:"verdict"`
	Reason  string `json:"reason"`
}

type concernsLine struct {
	Summary  string        `json:"summary"`
	Verdicts []verdictLine `json:"verdicts"`
}

// ParseConcernJudgment reads a judge's verdicts on concerns, fail-closed:
// the last non-empty line must be valid by ConcernsSchema and give
// exactly one verdict to each of the concerns (by their number, 1..len).
// Anything else is an error, and the caller judges by the rule instead.
func ParseConcernJudgment(output string, concerns []string, by string) ([]ConcernVerdict, error) {
	var cl concernsLine
	if err := readAnswer(output, concernsSchema, &cl); err != nil {
		return nil, err
	}
	got := make([]*verdictLine, len(concerns))
	for i := range cl.Verdicts {
		v := &cl.Verdicts[i]
		switch {
		case v.N < 1 || v.N > len(concerns):
			return nil, fmt.Errorf("the judge gave a verdict on concern %d of %d", v.N, len(concerns))
		case got[v.N-1] != nil:
			return nil, fmt.Errorf("the judge gave concern %d two verdicts", v.N)
		}
		got[v.N-1] = v
	}
	out := make([]ConcernVerdict, 0, len(concerns))
	for i, v := range got {
		if v == nil {
			return nil, fmt.Errorf("the judge gave no verdict on concern %d", i+1)
		}
		out = append(out, ConcernVerdict{Concern: concerns[i], Verdict: v.Verdict, Reason: text.Clip(text.OneLine(v.Reason), 500), By: by})
	}
	return out, nil
}

// readAnswer reads an agent's answer from the last non-empty line of its
// output into v, which must be valid by schema; an earlier line is never
// taken instead, as it may be an echoed example.
func readAnswer(output string, schema func() *jsonschema.Schema, v any) error {
	rest := strings.TrimRight(output, " \t\r\n")
	line := strings.TrimSpace(rest[strings.LastIndexByte(rest, '\n')+1:])
	switch {
	case line == "":
		return errors.New("the judge printed nothing")
	case !strings.HasPrefix(line, "{"):
		return fmt.Errorf("the judge's last line is not a JSON object: %s", text.Clip(line, 120))
	}
	inst, err := jsonschema.UnmarshalJSON(strings.NewReader(line))
	if err != nil {
		return fmt.Errorf("the judge's last line is not JSON: %s", text.OneLine(err.Error()))
	}
	if err := schema().Validate(inst); err != nil {
		return fmt.Errorf("the judge's answer fails its schema: %s", text.Clip(text.OneLine(err.Error()), 300))
	}
	if err := agent.ExactKeys(inst, v); err != nil {
		return fmt.Errorf("the judge's answer: %s", err)
	}
	if err := json.Unmarshal([]byte(line), v); err != nil {
		return fmt.Errorf("the judge's answer: %s", text.OneLine(err.Error()))
	}
	return nil
}

// ConcernInput is what a judge of concerns is given: the task, its diff,
// and the concerns its implementer reported, as data.
type ConcernInput struct {
	TaskID   string
	Prompt   string
	Files    []string
	Base     string
	Head     string
	Diff     string
	Workdir  string
	Concerns []string
}

// RenderConcernPrompt is the prompt of the judge of an implementer's
// concerns (the source: the orchestrator reads each concern and evaluates
// it before the review).
func RenderConcernPrompt(t agent.Task, in ConcernInput) string {
	q := newQuoter(append([]string{in.Diff}, in.Concerns...)...)
	q.w("You judge the concerns the implementer of task %s of a converge plan reported with its change, in the git repository %s, checked out at the task's head %s. ", in.TaskID, in.Workdir, in.Head)
	q.w("The implementer says the task is done but has doubts. Judge each concern against the code, not against the implementer's word: you get the task, the diff from its base %s to its head %s, and the concerns; you may read any file of the repository. ", in.Base, in.Head)
	q.w("Do not edit, commit, push or change branches. A review of the change follows your judgment.\n")
	q.w("\n## Task %s\n%s\n", in.TaskID, strings.TrimSpace(in.Prompt))
	if len(in.Files) > 0 {
		q.w("Its files: %s\n", strings.Join(in.Files, ", "))
	}
	q.w("\n")
	q.rules()
	q.w("\n## Concerns\n")
	for i, c := range in.Concerns {
		q.data("CONCERN", fmt.Sprintf(" n=%d", i+1), c)
	}
	q.w("\n## Diff\n")
	if strings.TrimSpace(in.Diff) == "" {
		q.w("The diff is empty: the task's commit changes nothing.\n")
	}
	q.data("DIFF", fmt.Sprintf(" base=%q head=%q", in.Base, in.Head), in.Diff)
	q.w("\n## Time-box\nYou have %s. When you receive SIGTERM, print your answer at once.\n", t.EffectiveBudget().Round(1e9))
	q.w("\n## Final line: your verdicts\nEnd your output with exactly one line holding a single JSON object and nothing after it, with one verdict for each concern, by its n:\n")
	q.w(`{"status": "complete", "next_action": "", "needs_extension_minutes": 0, "summary": "<one sentence>", "files_changed": [], "verdicts": [{"n": <n>, "verdict": "observation|justified|critical", "reason": "<why, from the code>"}]}`)
	q.w("\nobservation: about the code's shape (a file growing long, an atypical pattern), not its correctness; it is recorded. ")
	q.w("justified: a real doubt about correctness or scope that the change can still be accepted with, pending its review; it is recorded. ")
	q.w("critical: the change must not be accepted as it is (it loses data, breaks security or the build, or does something the task does not ask); the task stops BLOCKED. ")
	q.w("Anything else as the last line, or a concern without a verdict, counts as no judgment: converge then judges each concern by a rule that stops the task on any concern about correctness or scope.\n")
	return q.b.String()
}
