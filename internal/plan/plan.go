// Package plan is the plan executor (`converge plan run`, SPEC §3): it
// runs a plan's tasks with implementer agents on a local git repository,
// acts on the four implementer statuses (AG-T2), escalates the model
// (AG-E1), respects parallel groups, barriers, depends_on and file sets
// (AG-P1), has every DONE task reviewed once, spec and quality together,
// against its diff (PLAN-1), and writes a tracking report.
//
// It is a loop kind on internal/engine, as checkloop is: State,
// Observation, Action and ActResult are its types, Decide is the pure
// step (decide.go), and Loop's Observe and Act are the activities
// (loop.go), with their dependencies in Deps.
//
// Where the SPEC lives:
//
//	PLAN-1 plan, review, report     plan.go (Parse), decide.go (review), review.go, report.go
//	AG-T2 implementer statuses      decide.go (applyReport), loop.go (commit if the agent did not)
//	AG-E1 model escalation          decide.go (retry), Task.Models
//	AG-P1 groups, barriers, files   decide.go (startReady, ready), Intersect
package plan

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path"
	"regexp"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Plan is a parsed, valid plan file. Its tasks are kept in file order;
// every task belongs to exactly one group.
type Plan struct {
	// Context is background every task may need; it is handed to a task
	// re-dispatched for more context (AG-T2 NEEDS_CONTEXT).
	Context string `json:"context,omitempty"`
	// Models is the escalation ladder (AG-E1): the first model, then
	// stronger ones. Empty: the agent's default model only.
	Models []string `json:"models,omitempty"`
	Groups []Group  `json:"groups"`
	Tasks  []Task   `json:"tasks"`
	// Digest identifies the plan file's content.
	Digest string `json:"digest"`
}

// Group is a set of tasks with an execution order (AG-P1).
type Group struct {
	Name string `json:"name"`
	// Parallel: its tasks may run at once (when their files and
	// dependencies allow); otherwise one at a time, in listed order.
	Parallel bool `json:"parallel"`
	// Barrier: later groups start only once every task here has ended.
	Barrier bool     `json:"barrier"`
	Tasks   []string `json:"tasks"`
}

// Task is one task of a plan.
type Task struct {
	ID        string   `json:"id"`
	Group     int      `json:"group"` // index into Plan.Groups
	Prompt    string   `json:"prompt"`
	Files     []string `json:"files"`
	DependsOn []string `json:"depends_on,omitempty"`
	// Agent and Model override the run's agent and the ladder's first
	// model for this task.
	Agent   string `json:"agent,omitempty"`
	Model   string `json:"model,omitempty"`
	Context string `json:"context,omitempty"`
	// Line is where the task starts in the plan file, for messages.
	Line int `json:"line"`
	// AgentLine is the line of its agent key, 0 without one.
	AgentLine int `json:"agent_line,omitempty"`
	// SplitFrom names the task this one is a part of: a task split at
	// run time because its implementer found it too large. A part is
	// never split again.
	SplitFrom string `json:"split_from,omitempty"`
}

// Task returns the task with id, or nil.
func (p *Plan) Task(id string) *Task {
	for i := range p.Tasks {
		if p.Tasks[i].ID == id {
			return &p.Tasks[i]
		}
	}
	return nil
}

// Ladder is the task's model escalation ladder (AG-E1): the plan's
// models, with the task's own model as the first rung. It always has one
// rung; "" means the agent's default model.
func (p *Plan) Ladder(t *Task) []string {
	ladder := slices.Clone(p.Models)
	if len(ladder) == 0 {
		ladder = []string{""}
	}
	if t.Model != "" {
		ladder[0] = t.Model
	}
	return ladder
}

var idPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$`)

// Parse reads a plan file strictly: unknown keys, values of the wrong
// kind, duplicate ids, unknown or cyclic dependencies and dependencies
// no order can satisfy are errors naming the file and the line (REL-3).
func Parse(name string, data []byte) (*Plan, error) {
	sum := sha256.Sum256(data)
	p := &Plan{Digest: hex.EncodeToString(sum[:])}
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, fmt.Errorf("%s: the plan is empty; it needs groups of tasks (see converge plan run --help)", name)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("%s: %s", name, strings.TrimPrefix(err.Error(), "yaml: "))
	}
	if len(doc.Content) == 0 {
		return nil, fmt.Errorf("%s: the plan is empty; it needs groups of tasks (see converge plan run --help)", name)
	}
	r := reader{file: name}
	root := doc.Content[0]
	var groupsNode *yaml.Node
	err := r.mapping(root, "the plan", []string{"context", "models", "groups"}, func(key string, v *yaml.Node) error {
		var err error
		switch key {
		case "context":
			p.Context, err = r.str(v, key)
		case "models":
			p.Models, err = r.strs(v, key)
		case "groups":
			groupsNode = v
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	if groupsNode == nil {
		return nil, fmt.Errorf("%s:%d: the plan needs groups: a list of groups, each with tasks", name, root.Line)
	}
	if err := r.groups(p, groupsNode); err != nil {
		return nil, err
	}
	for _, m := range p.Models {
		if strings.TrimSpace(m) == "" {
			return nil, fmt.Errorf("%s: models: a model name is empty", name)
		}
	}
	if err := validate(name, p); err != nil {
		return nil, err
	}
	return p, nil
}

// reader walks the YAML tree with the file's name for messages.
type reader struct{ file string }

func (r reader) errf(n *yaml.Node, format string, args ...any) error {
	return fmt.Errorf("%s:%d: %s", r.file, n.Line, fmt.Sprintf(format, args...))
}

// mapping calls f for each key of n, which must be a mapping of known
// keys, each given once.
func (r reader) mapping(n *yaml.Node, what string, known []string, f func(key string, v *yaml.Node) error) error {
	if n.Kind != yaml.MappingNode {
		return r.errf(n, "%s must be a mapping (key: value) with the keys %s", what, strings.Join(known, ", "))
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if !slices.Contains(known, k.Value) {
			return r.errf(k, "unknown key %q in %s; known keys: %s", k.Value, what, strings.Join(known, ", "))
		}
		if seen[k.Value] {
			return r.errf(k, "%s is set twice in %s", k.Value, what)
		}
		seen[k.Value] = true
		if err := f(k.Value, v); err != nil {
			return err
		}
	}
	return nil
}

func (r reader) str(n *yaml.Node, key string) (string, error) {
	if n.Kind != yaml.ScalarNode || n.Tag == "!!null" {
		return "", r.errf(n, "%s must be a string", key)
	}
	return n.Value, nil
}

func (r reader) boolean(n *yaml.Node, key string) (bool, error) {
	if n.Kind != yaml.ScalarNode || n.Tag != "!!bool" {
		return false, r.errf(n, "%s must be true or false, not %q", key, n.Value)
	}
	return n.Value == "true", nil
}

func (r reader) strs(n *yaml.Node, key string) ([]string, error) {
	if n.Kind != yaml.SequenceNode {
		return nil, r.errf(n, "%s must be a list, e.g. [a, b]", key)
	}
	out := []string{}
	for _, it := range n.Content {
		if it.Kind != yaml.ScalarNode || it.Tag == "!!null" {
			return nil, r.errf(it, "%s: each item must be a string", key)
		}
		out = append(out, it.Value)
	}
	return out, nil
}

var groupKeys = []string{"name", "parallel", "barrier", "tasks"}
var taskKeys = []string{"id", "prompt", "files", "depends_on", "agent", "model", "context"}

func (r reader) groups(p *Plan, n *yaml.Node) error {
	if n.Kind != yaml.SequenceNode || len(n.Content) == 0 {
		return r.errf(n, "groups must be a non-empty list of groups")
	}
	lines := map[string]int{}
	for gi, gn := range n.Content {
		g := Group{Name: fmt.Sprintf("group-%d", gi+1), Barrier: true, Tasks: []string{}}
		what := fmt.Sprintf("group %d", gi+1)
		var tasksNode *yaml.Node
		err := r.mapping(gn, what, groupKeys, func(key string, v *yaml.Node) error {
			var err error
			switch key {
			case "name":
				g.Name, err = r.str(v, key)
			case "parallel":
				g.Parallel, err = r.boolean(v, key)
			case "barrier":
				g.Barrier, err = r.boolean(v, key)
			case "tasks":
				tasksNode = v
			}
			return err
		})
		if err != nil {
			return err
		}
		if tasksNode == nil || tasksNode.Kind != yaml.SequenceNode || len(tasksNode.Content) == 0 {
			return r.errf(gn, "%s (%s) needs tasks: a non-empty list of tasks", what, g.Name)
		}
		for _, tn := range tasksNode.Content {
			t, err := r.task(tn, gi)
			if err != nil {
				return err
			}
			if l, dup := lines[t.ID]; dup {
				return r.errf(tn, "task id %q is used twice (first on line %d); ids must be unique", t.ID, l)
			}
			lines[t.ID] = t.Line
			g.Tasks = append(g.Tasks, t.ID)
			p.Tasks = append(p.Tasks, t)
		}
		p.Groups = append(p.Groups, g)
	}
	return nil
}

func (r reader) task(n *yaml.Node, group int) (Task, error) {
	t := Task{Group: group, Line: n.Line, Files: []string{}}
	err := r.mapping(n, "a task", taskKeys, func(key string, v *yaml.Node) error {
		var err error
		switch key {
		case "id":
			t.ID, err = r.str(v, key)
		case "prompt":
			t.Prompt, err = r.str(v, key)
		case "files":
			t.Files, err = r.strs(v, key)
		case "depends_on":
			t.DependsOn, err = r.strs(v, key)
		case "agent":
			t.Agent, err = r.str(v, key)
			t.AgentLine = v.Line
		case "model":
			t.Model, err = r.str(v, key)
		case "context":
			t.Context, err = r.str(v, key)
		}
		return err
	})
	if err != nil {
		return Task{}, err
	}
	switch {
	case t.ID == "":
		return Task{}, r.errf(n, "a task needs an id")
	case !idPattern.MatchString(t.ID):
		return Task{}, r.errf(n, "task id %q: use letters, digits, - and _ (at most 64), starting with a letter or digit", t.ID)
	case strings.TrimSpace(t.Prompt) == "":
		return Task{}, r.errf(n, "task %s needs a prompt: what the implementer is to do", t.ID)
	}
	for i, f := range t.Files {
		clean, err := cleanFile(f)
		if err != nil {
			return Task{}, r.errf(n, "task %s: files: %v", t.ID, err)
		}
		t.Files[i] = clean
	}
	return t, nil
}

// cleanFile checks a task's file entry: a path relative to the
// repository's top, or a directory ending in "/" for everything under it.
func cleanFile(f string) (string, error) {
	dir := strings.HasSuffix(f, "/")
	c := path.Clean(strings.TrimSpace(f))
	switch {
	case strings.TrimSpace(f) == "":
		return "", fmt.Errorf("an entry is empty")
	case path.IsAbs(c) || c == ".." || strings.HasPrefix(c, "../"):
		return "", fmt.Errorf("%q must be a path inside the repository, relative to its top", f)
	case c == ".":
		return "", fmt.Errorf("%q names the whole repository; leave files out instead (the task then runs alone)", f)
	}
	if dir {
		c += "/"
	}
	return c, nil
}

// validate checks the dependencies: known, not the task itself, no
// cycle, and satisfiable in the group order.
func validate(name string, p *Plan) error {
	index := map[string]int{}
	for i, t := range p.Tasks {
		index[t.ID] = i
	}
	for _, t := range p.Tasks {
		seen := map[string]bool{}
		for _, d := range t.DependsOn {
			j, ok := index[d]
			switch {
			case !ok:
				return fmt.Errorf("%s:%d: task %s depends on %q, which is not a task of the plan", name, t.Line, t.ID, d)
			case d == t.ID:
				return fmt.Errorf("%s:%d: task %s depends on itself", name, t.Line, t.ID)
			case seen[d]:
				return fmt.Errorf("%s:%d: task %s names %s twice in depends_on", name, t.Line, t.ID, d)
			}
			seen[d] = true
			dep := p.Tasks[j]
			if dep.Group > t.Group && p.waits(t.Group, dep.Group) {
				return fmt.Errorf("%s:%d: task %s depends on %s of the later group %s, which waits for %s's group behind a barrier: no order can run them", name, t.Line, t.ID, d, p.Groups[dep.Group].Name, t.ID)
			}
			if dep.Group == t.Group && !p.Groups[t.Group].Parallel && j > index[t.ID] {
				return fmt.Errorf("%s:%d: task %s depends on %s, listed after it in the sequential group %s; list %s first", name, t.Line, t.ID, d, p.Groups[t.Group].Name, d)
			}
		}
	}
	if cycle := findCycle(p, index); len(cycle) > 0 {
		t := p.Tasks[index[cycle[0]]]
		return fmt.Errorf("%s:%d: depends_on has a cycle: %s", name, t.Line, strings.Join(cycle, " -> "))
	}
	return nil
}

// waits reports whether group later cannot start before group earlier
// has ended: a barrier between them.
func (p *Plan) waits(earlier, later int) bool {
	for g := earlier; g < later; g++ {
		if p.Groups[g].Barrier {
			return true
		}
	}
	return false
}

// findCycle returns a dependency cycle as ids (first repeated last), or
// nil. Tasks are visited in file order, so the answer is deterministic.
func findCycle(p *Plan, index map[string]int) []string {
	const (
		unseen = iota
		onPath
		finished
	)
	mark := make([]int, len(p.Tasks))
	var stack []string
	var visit func(i int) []string
	visit = func(i int) []string {
		mark[i] = onPath
		stack = append(stack, p.Tasks[i].ID)
		for _, d := range p.Tasks[i].DependsOn {
			j := index[d]
			switch mark[j] {
			case onPath:
				k := slices.Index(stack, d)
				return append(slices.Clone(stack[k:]), d)
			case unseen:
				if c := visit(j); c != nil {
					return c
				}
			}
		}
		stack = stack[:len(stack)-1]
		mark[i] = finished
		return nil
	}
	for i := range p.Tasks {
		if mark[i] == unseen {
			if c := visit(i); c != nil {
				return c
			}
		}
	}
	return nil
}

// Intersect reports whether two tasks' file sets overlap: the same path,
// or a directory entry ("dir/") containing the other. A task without
// files may touch anything, so it intersects every task (fail closed).
func Intersect(a, b []string) bool {
	if len(a) == 0 || len(b) == 0 {
		return true
	}
	for _, x := range a {
		for _, y := range b {
			if x == y || (strings.HasSuffix(x, "/") && strings.HasPrefix(y, x)) || (strings.HasSuffix(y, "/") && strings.HasPrefix(x, y)) {
				return true
			}
		}
	}
	return false
}
