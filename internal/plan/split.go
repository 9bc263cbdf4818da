package plan

import (
	_ "embed"
	"fmt"
	"slices"
	"strings"
	"unicode"

	"github.com/convergeloop/converge/internal/agent"
	"github.com/convergeloop/converge/internal/text"
)

// TooLargePrefix starts the reason of an implementer that reports a task
// too large for one run, BLOCKED or NEEDS_CONTEXT (the source: "task too
// large → split into parts"). Its dispatch ends there, without more
// context or a stronger model, and the task is split into parts that run
// in its place.
const TooLargePrefix = "too large:"

// Parts of a split: at least two, at most MaxParts; a part is never split
// again, so one task becomes at most MaxParts tasks.
const (
	MinParts = 2
	MaxParts = 4
)

// TooLarge reports whether an implementer's reason says its task is too
// large for one run (TooLargePrefix, after spaces, in any letter case),
// and the reason after the prefix.
func TooLarge(reason string) (string, bool) {
	t := strings.TrimSpace(reason)
	if len(t) < len(TooLargePrefix) || !strings.EqualFold(t[:len(TooLargePrefix)], TooLargePrefix) {
		return "", false
	}
	return strings.TrimSpace(t[len(TooLargePrefix):]), true
}

// tooLargeRecord reports whether a status record ends a dispatch as too
// large: not done, with a reason that says so.
func tooLargeRecord(rec agent.StatusRecord) bool {
	status, reason := agent.JudgeRecord(rec)
	if status == agent.ImplDone || status == agent.ImplDoneWithConcerns {
		return false
	}
	_, ok := TooLarge(reason)
	return ok
}

// Part is one part of a split task: a smaller task of its own.
type Part struct {
	Prompt string   `json:"prompt"`
	Files  []string `json:"files,omitempty"`
}

// SplitDone is a split an act ran: the parts, in the order they run, or
// why there are none (then the task is BLOCKED: fail closed).
type SplitDone struct {
	Task    string      `json:"task"`
	Parts   []Part      `json:"parts,omitempty"`
	Note    string      `json:"note,omitempty"`
	Agent   string      `json:"agent,omitempty"`
	CostUSD float64     `json:"cost_usd,omitempty"`
	Usage   agent.Usage `json:"usage,omitzero"`
}

//go:embed split.schema.json
var splitSchemaJSON []byte

// SplitSchema returns the JSON Schema of a planner's split.
func SplitSchema() []byte { return append([]byte(nil), splitSchemaJSON...) }

var splitSchema = agent.EmbeddedSchema("plan-split.json", splitSchemaJSON)

type splitLine struct {
	Summary string `json:"summary"`
	Parts   []Part `json:"parts"`
}

// ParseSplit reads a planner's split of task, fail-closed: the last
// non-empty line must be valid by SplitSchema, with MinParts to MaxParts
// parts, each with a prompt and files inside the task's own (a part
// without files gets the task's). Anything else is an error, and the task
// is BLOCKED.
func ParseSplit(output string, task *Task) ([]Part, error) {
	var sl splitLine
	if err := readAnswer(output, splitSchema, &sl); err != nil {
		return nil, err
	}
	if n := len(sl.Parts); n < MinParts || n > MaxParts {
		return nil, fmt.Errorf("the split has %d part(s); it needs %d to %d", n, MinParts, MaxParts)
	}
	var out []Part
	for i, p := range sl.Parts {
		p.Prompt = strings.TrimSpace(printable(p.Prompt))
		if p.Prompt == "" {
			return nil, fmt.Errorf("part %d has no prompt", i+1)
		}
		if len(p.Files) == 0 {
			p.Files = slices.Clone(task.Files)
		}
		for j, f := range p.Files {
			c, err := cleanFile(f)
			if err != nil {
				return nil, fmt.Errorf("part %d: files: %v", i+1, err)
			}
			if len(task.Files) > 0 && !covered(c, task.Files) {
				return nil, fmt.Errorf("part %d: %s is not one of the task's files (%s)", i+1, c, strings.Join(task.Files, ", "))
			}
			p.Files[j] = c
		}
		out = append(out, p)
	}
	return out, nil
}

// printable drops from a model's text the characters a reader may take
// for a line break or that hide text (all control characters but
// newline and tab, and the Unicode line and paragraph separators): a
// part's prompt is written into its implementer's prompt as it is.
func printable(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r == '\n' || r == '\t':
			return r
		case unicode.IsControl(r), r == '\u2028', r == '\u2029':
			return ' '
		}
		return r
	}, s)
}

// covered reports whether the file entry f lies inside one of files: the
// same path, or under a directory entry. A part must never reach beyond
// its task, so that what ran beside the task cannot meet it.
func covered(f string, files []string) bool {
	for _, x := range files {
		if x == f || (strings.HasSuffix(x, "/") && strings.HasPrefix(f, x)) {
			return true
		}
	}
	return false
}

// SplitInput is what a planner splitting a task is given.
type SplitInput struct {
	Task        *Task
	PlanContext string
	// Reason is why the implementer found the task too large.
	Reason  string
	Workdir string
}

// RenderSplitPrompt is the prompt of the planner that splits a task its
// implementer found too large for one run (the source: "task too large
// → split into parts, if possible within the plan").
func RenderSplitPrompt(t agent.Task, in SplitInput) string {
	q := newQuoter(in.Reason, in.PlanContext, in.Task.Context)
	q.w("You plan the work of a converge plan, in the git repository %s. ", in.Workdir)
	q.w("The implementer of task %s found it too large to do in one run. Split it into %d to %d smaller tasks, each one an implementer can finish and a reviewer can check on its own. ", in.Task.ID, MinParts, MaxParts)
	q.w("The parts run one after the other, in the order you give, each on the branch the one before it left; together they must do the whole task and nothing more. ")
	q.w("You may read any file of the repository. Do not edit, commit, push or change branches.\n")
	q.w("\n## Task %s\n%s\n", in.Task.ID, strings.TrimSpace(in.Task.Prompt))
	if len(in.Task.Files) > 0 {
		q.w("Its files: %s. Each part's files must be among them (a directory entry ending in / covers what is under it).\n", strings.Join(in.Task.Files, ", "))
	}
	q.w("\n")
	q.rules()
	q.w("\n## Why the implementer found it too large\n")
	q.data("IMPLEMENTER-REASON", "", in.Reason)
	if c := strings.TrimSpace(in.PlanContext); c != "" {
		q.w("\n## The plan's context\n")
		q.data("PLAN-CONTEXT", "", c)
	}
	if c := strings.TrimSpace(in.Task.Context); c != "" {
		q.w("\n## The task's context\n")
		q.data("TASK-CONTEXT", "", c)
	}
	q.w("\n## Time-box\nYou have %s. When you receive SIGTERM, print your answer at once.\n", t.EffectiveBudget().Round(1e9))
	q.w("\n## Final line: the parts\nEnd your output with exactly one line holding a single JSON object and nothing after it:\n")
	q.w(`{"status": "complete", "next_action": "", "needs_extension_minutes": 0, "summary": "<one sentence>", "files_changed": [], "parts": [{"prompt": "<what this part does, on its own>", "files": ["<path>", ...]}, ...]}`)
	q.w("\nA part without files gets all of the task's. Anything else as the last line, fewer than %d or more than %d parts, or a file outside the task's, is no split: the task is then BLOCKED.\n", MinParts, MaxParts)
	return q.b.String()
}

// partPrompt is a part's prompt as its implementer gets it: the part,
// with the whole task it belongs to for context.
func partPrompt(parent *Task, i, n int, p Part) string {
	return fmt.Sprintf("%s\n\n(This is part %d of %d of task %s, which was split because it was too large for one run. The whole task, of which the other parts are someone else's: %s)",
		strings.TrimSpace(p.Prompt), i, n, parent.ID, text.OneLine(parent.Prompt))
}

// partID is the id of part i of task id, unused by any task of p.
func partID(p *Plan, id string, i int) string {
	base := fmt.Sprintf("%s-part%d", id, i)
	out := base
	for k := 2; p.Task(out) != nil; k++ {
		out = fmt.Sprintf("%s-%d", base, k)
	}
	return out
}

// split puts parts in the place of task id (Decide, once a split is
// read): each part a task of the same group listed right after it, the
// first with the task's dependencies, each later one depending on the one
// before, and every task that depended on id depending on the last part
// (which ends DONE only when every part did). The plan is copied first:
// Decide changes nothing of its input.
func (d *decider) split(t *TaskState, parts []Part) {
	p := d.plan
	parent := *p.Task(t.ID)
	tasks := make([]Task, 0, len(p.Tasks)+len(parts))
	var ids []string
	var added []Task
	for i, part := range parts {
		id := partID(p, t.ID, i+1)
		for slices.Contains(ids, id) {
			id += "x"
		}
		ids = append(ids, id)
		nt := Task{ID: id, Group: parent.Group, Prompt: partPrompt(&parent, i+1, len(parts), part), Files: slices.Clone(part.Files),
			DependsOn: slices.Clone(parent.DependsOn), Agent: parent.Agent, Model: parent.Model, Context: parent.Context,
			Line: parent.Line, AgentLine: parent.AgentLine, SplitFrom: t.ID}
		if nt.Files == nil {
			nt.Files = []string{}
		}
		if i > 0 {
			nt.DependsOn = []string{ids[i-1]}
		}
		added = append(added, nt)
	}
	last := ids[len(ids)-1]
	for _, x := range p.Tasks {
		x.DependsOn = slices.Clone(x.DependsOn)
		for k, dep := range x.DependsOn {
			if dep == t.ID {
				x.DependsOn[k] = last
			}
		}
		tasks = append(tasks, x)
		if x.ID == t.ID {
			tasks = append(tasks, added...)
		}
	}
	groups := slices.Clone(p.Groups)
	for g := range groups {
		groups[g].Tasks = slices.Clone(groups[g].Tasks)
		if k := slices.Index(groups[g].Tasks, t.ID); k >= 0 {
			groups[g].Tasks = slices.Insert(groups[g].Tasks, k+1, ids...)
		}
	}
	p.Tasks, p.Groups = tasks, groups
	t.Phase, t.Status, t.EndedAt, t.SplitInto = PhaseSplit, TaskSplit, d.obs.Now, ids
	d.added = append(d.added, addedTasks{after: t.ID, ids: ids})
}

// addedTasks are the task states a split adds, after the task split.
type addedTasks struct {
	after string
	ids   []string
}

// addTasks adds the pending states of the parts of this step's splits,
// after the tasks they split (outside the loop over the states, whose
// pointers an insert would move).
func (d *decider) addTasks() {
	for _, a := range d.added {
		i := slices.IndexFunc(d.st.Tasks, func(t TaskState) bool { return t.ID == a.after })
		var states []TaskState
		for _, id := range a.ids {
			states = append(states, TaskState{ID: id, Phase: PhasePending, Dispatches: []Dispatch{}, Reviews: []Review{}})
		}
		d.st.Tasks = slices.Insert(d.st.Tasks, i+1, states...)
	}
	d.added = nil
}
