package classify

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/convergeloop/converge/internal/agent"
	"github.com/convergeloop/converge/internal/text"
)

// TaskKind is the agent.Task kind of a judge run. A judge gets the
// borderline comments as the task's Findings (id, path, lines, body,
// author, source), their diff hunks in Diff, and the repository's review
// instructions in Instructions; it edits nothing and ends its output with
// one line holding its answer: its status record (IF-5) with a verdicts
// member, valid against JudgeSchema. Prompt renders the task for a model.
const TaskKind = "classify"

// judgeSchemaJSON is the contract of a judge's answer. It is a status
// record, so a backend reading the final line by IF-5 accepts it, narrowed
// to a finished run that changed no file, plus the verdicts.
//
//go:embed judge.schema.json
var judgeSchemaJSON []byte

// JudgeSchema returns the JSON Schema a judge's answer must validate
// against, for backends that pass it to an agent CLI.
func JudgeSchema() []byte { return bytes.Clone(judgeSchemaJSON) }

var judgeSchema = agent.EmbeddedSchema("classify-judge.json", judgeSchemaJSON)

// Judge asks an agent to classify the comments the heuristic left
// borderline (PR-S5).
type Judge struct {
	Agent agent.Agent
	// Budget is the time-box of one judge run; zero means
	// agent.DefaultBudget.
	Budget time.Duration
	// Workdir is where a subprocess judge runs (it may read, never edit).
	Workdir string
	// Env is the judge's environment, already scrubbed (agent.ScrubEnv);
	// nil lets subprocess backends scrub this process's.
	Env []string
	// Instructions are the repository's review instructions, quoted to
	// the judge as data.
	Instructions string
}

// Request is one judge run: the borderline comments of a round.
type Request struct {
	RunID    string
	Round    int
	Comments []Comment
}

// Judged is the judge's verdict on one comment.
type Judged struct {
	ID      string  `json:"id"`
	Verdict Verdict `json:"verdict"` // Structural, Minor or Unclear
	Reason  string  `json:"reason,omitempty"`
}

// Answer is what one judge run produced. When Valid is false every
// comment is Unclear and Why says what was wrong; the loop treats them as
// structural and counts the round toward PR-G4.
type Answer struct {
	Valid    bool     `json:"valid"`
	Why      string   `json:"why,omitempty"`
	Verdicts []Judged `json:"verdicts"` // one per requested comment, in request order
	Agent    string   `json:"agent,omitempty"`
	Summary  string   `json:"summary,omitempty"` // the judge's own summary
	// Usage is what the judge's run reported consuming (PR-M5).
	Usage agent.Usage `json:"usage,omitzero"`
}

// maxWhy bounds the cause kept for an invalid answer: it may quote agent
// output.
const maxWhy = 300

// Run asks j.Agent about req.Comments and reads its answer fail-closed:
// an agent that is missing, cannot run, is stopped at its budget, exits
// non-zero, or prints anything but a schema-valid answer naming each
// comment exactly once leaves every comment Unclear. The error is non-nil
// only when ctx ended, so that a stopping run is not counted as an
// unclear round.
func (j *Judge) Run(ctx context.Context, req Request) (Answer, error) {
	ids := make([]string, 0, len(req.Comments))
	seen := map[string]bool{}
	for _, c := range req.Comments {
		if c.ID == "" || seen[c.ID] {
			return invalid(idsOf(req.Comments), "", fmt.Sprintf("comment id %q is empty or repeated", c.ID)), nil
		}
		seen[c.ID] = true
		ids = append(ids, c.ID)
	}
	if len(ids) == 0 {
		return Answer{Valid: true, Verdicts: []Judged{}}, nil
	}
	if j == nil || j.Agent == nil {
		return invalid(ids, "", "no judge agent"), nil
	}
	name := j.Agent.Name()
	res, err := j.Agent.Run(ctx, j.task(req))
	if ctx.Err() != nil {
		return invalid(ids, name, "stopped: "+ctx.Err().Error()), ctx.Err()
	}
	if err != nil {
		a := invalid(ids, name, "the judge could not run: "+err.Error())
		a.Usage = res.Usage.Counted()
		return a, nil
	}
	a := readAnswer(res, ids, name)
	a.Usage = res.Usage.Counted()
	return a, nil
}

// readAnswer is the judge's answer in a finished run's output and record.
func readAnswer(res agent.Result, ids []string, name string) Answer {
	a, concerns := parseAnswer(res.Output, ids)
	a.Agent = name
	// The record is how the backend saw the run end. A judge stopped at
	// its budget or exiting non-zero after printing an answer did not
	// finish by the protocol: the runner notes that as a concern the
	// answer line does not have.
	rec := res.Record
	if !a.Valid {
		if rec.Status != agent.StatusComplete && rec.Reason != agent.ReasonUnparseable {
			a.Why = text.Clip(a.Why+"; the run ended "+string(rec.Status)+": "+text.OneLine(rec.Summary), maxWhy)
		}
		return a
	}
	switch {
	case rec.Status != agent.StatusComplete:
		return invalid(ids, name, fmt.Sprintf("the run ended %s: %s", rec.Status, rec.Summary))
	case len(rec.Concerns) > concerns:
		return invalid(ids, name, "the run did not end normally: "+strings.Join(rec.Concerns[concerns:], "; "))
	}
	return a
}

func (j *Judge) task(req Request) agent.Task {
	fs := make([]agent.Finding, 0, len(req.Comments))
	var diff strings.Builder
	for _, c := range req.Comments {
		fs = append(fs, agent.Finding{
			ID: c.ID, Path: c.Path, StartLine: c.StartLine, EndLine: c.Line,
			Body: c.Body, Author: c.Author, Source: c.Source,
		})
		if c.DiffHunk != "" {
			fmt.Fprintf(&diff, "# comment %s on %s\n%s\n", c.ID, c.Path, strings.TrimSuffix(c.DiffHunk, "\n"))
		}
	}
	t := agent.Task{
		Kind:         TaskKind,
		RunID:        req.RunID,
		Round:        req.Round,
		Workdir:      j.Workdir,
		Findings:     fs,
		Diff:         diff.String(),
		Instructions: j.Instructions,
		Budget:       j.Budget,
		Env:          j.Env,
	}
	// The judge's prompt, not the fixer's: every backend hands it over.
	t.Prompt = Prompt(t)
	return t
}

// ParseAnswer reads a judge's answer about the comments ids from its
// output: the last non-empty line, a JSON object valid against
// JudgeSchema that gives each id exactly one verdict and names no other.
// Anything else — no output, prose, a truncated line, an earlier valid
// line followed by anything, a schema violation, a missing, repeated or
// unknown id — is no answer: Valid is false and every comment Unclear.
// An earlier line is never taken instead, as it may be an echoed example.
func ParseAnswer(output string, ids []string) Answer {
	a, _ := parseAnswer(output, ids)
	return a
}

// answerLine is what converge reads of a valid answer.
type answerLine struct {
	Summary  string   `json:"summary"`
	Concerns []string `json:"concerns"`
	Verdicts []Judged `json:"verdicts"`
}

// parseAnswer is ParseAnswer, also returning how many concerns the
// answer line itself holds.
func parseAnswer(output string, ids []string) (Answer, int) {
	line := lastLine(output)
	switch {
	case line == "":
		return invalid(ids, "", "no output"), 0
	case !strings.HasPrefix(line, "{"):
		return invalid(ids, "", "the last line is not a JSON object: "+line), 0
	}
	inst, err := jsonschema.UnmarshalJSON(strings.NewReader(line))
	if err != nil {
		return invalid(ids, "", "the last line is not JSON: "+err.Error()), 0
	}
	if err := judgeSchema().Validate(inst); err != nil {
		return invalid(ids, "", "the answer fails the schema: "+err.Error()), 0
	}
	var al answerLine
	if err := agent.ExactKeys(inst, al); err != nil {
		return invalid(ids, "", "the answer: "+err.Error()), 0
	}
	if err := json.Unmarshal([]byte(line), &al); err != nil {
		return invalid(ids, "", "the answer: "+err.Error()), 0
	}
	byID := make(map[string]Judged, len(al.Verdicts))
	for _, v := range al.Verdicts {
		if _, dup := byID[v.ID]; dup {
			return invalid(ids, "", fmt.Sprintf("comment %q is answered twice", v.ID)), 0
		}
		byID[v.ID] = v
	}
	out := make([]Judged, 0, len(ids))
	for _, id := range ids {
		v, ok := byID[id]
		if !ok {
			return invalid(ids, "", fmt.Sprintf("comment %q is not answered", id)), 0
		}
		delete(byID, id)
		v.Reason = text.Clip(text.OneLine(v.Reason), 500)
		out = append(out, v)
	}
	if len(byID) > 0 {
		extra := slices.Sorted(maps.Keys(byID))
		return invalid(ids, "", fmt.Sprintf("the answer names comment %q, which was not asked about", extra[0])), 0
	}
	return Answer{Valid: true, Verdicts: out, Summary: text.Clip(text.OneLine(al.Summary), 500)}, len(al.Concerns)
}

func invalid(ids []string, agentName, why string) Answer {
	a := Answer{Why: text.Clip(text.OneLine(why), maxWhy), Agent: agentName, Verdicts: make([]Judged, 0, len(ids))}
	for _, id := range ids {
		a.Verdicts = append(a.Verdicts, Judged{ID: id, Verdict: Unclear, Reason: "no valid answer from the judge"})
	}
	return a
}

func idsOf(cs []Comment) []string {
	out := make([]string, 0, len(cs))
	for _, c := range cs {
		out = append(out, c.ID)
	}
	return out
}

func lastLine(s string) string {
	lines := strings.Split(s, "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if l := strings.TrimSpace(lines[i]); l != "" {
			return l
		}
	}
	return ""
}
