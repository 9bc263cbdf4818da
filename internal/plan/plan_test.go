package plan

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestPLAN_1_ParseReadsThePlan(t *testing.T) {
	p := mustPlan(t, `
context: the repo is a calculator
models: [small, large]
groups:
  - name: base
    parallel: true
    tasks:
      - id: lexer
        prompt: |
          Write the lexer.
        files: [lex/, lex.go]
      - id: parser
        prompt: Write the parser.
        files: [./parse.go]
        model: medium
  - name: after
    barrier: false
    tasks:
      - id: docs
        prompt: Document it.
        depends_on: [lexer, parser]
        agent: claude
`)
	if len(p.Groups) != 2 || !p.Groups[0].Parallel || !p.Groups[0].Barrier || p.Groups[1].Parallel || p.Groups[1].Barrier {
		t.Errorf("groups = %+v", p.Groups)
	}
	if got := p.Task("parser"); got.Files[0] != "parse.go" || got.Group != 0 || got.Line != 12 {
		t.Errorf("parser = %+v", got)
	}
	if got := p.Task("lexer").Files; got[0] != "lex/" {
		t.Errorf("a directory entry keeps its slash: %v", got)
	}
	if l := p.Ladder(p.Task("parser")); strings.Join(l, ",") != "medium,large" {
		t.Errorf("ladder = %v", l)
	}
	if d := p.Task("docs"); d.Agent != "claude" || d.AgentLine != 22 || len(d.DependsOn) != 2 {
		t.Errorf("docs = %+v", d)
	}
	if p.Digest == "" || p.Context == "" {
		t.Errorf("plan = %+v", p)
	}
}

func TestPLAN_1_ParseRejectsBadPlans(t *testing.T) {
	cases := []struct{ name, src, want string }{
		{"empty", "# nothing\n", "plan.yaml: the plan is empty"},
		{"not yaml", "groups: [\n", "plan.yaml: line"},
		{"unknown top key", "group:\n  - tasks: []\n", "plan.yaml:1: unknown key \"group\" in the plan"},
		{"no groups", "context: x\n", "plan.yaml:1: the plan needs groups"},
		{"unknown task key", "groups:\n  - tasks:\n      - id: a\n        prompt: p\n        filez: [a]\n", "plan.yaml:5: unknown key \"filez\" in a task; known keys: id, prompt, files"},
		{"bad bool", "groups:\n  - parallel: yes please\n    tasks:\n      - {id: a, prompt: p}\n", "plan.yaml:2: parallel must be true or false"},
		{"files not a list", "groups:\n  - tasks:\n      - {id: a, prompt: p, files: a.go}\n", "plan.yaml:3: files must be a list"},
		{"empty group", "groups:\n  - name: g\n", "plan.yaml:2: group 1 (g) needs tasks"},
		{"duplicate id", "groups:\n  - tasks:\n      - {id: a, prompt: p}\n      - {id: a, prompt: q}\n", "plan.yaml:4: task id \"a\" is used twice (first on line 3)"},
		{"bad id", "groups:\n  - tasks:\n      - {id: 'a b', prompt: p}\n", "plan.yaml:3: task id \"a b\""},
		{"no prompt", "groups:\n  - tasks:\n      - {id: a}\n", "plan.yaml:3: task a needs a prompt"},
		{"unknown dependency", "groups:\n  - tasks:\n      - {id: a, prompt: p, depends_on: [b]}\n", "plan.yaml:3: task a depends on \"b\", which is not a task of the plan"},
		{"self dependency", "groups:\n  - tasks:\n      - {id: a, prompt: p, depends_on: [a]}\n", "plan.yaml:3: task a depends on itself"},
		{"cycle", "groups:\n  - parallel: true\n    tasks:\n      - {id: a, prompt: p, depends_on: [c]}\n      - {id: b, prompt: p, depends_on: [a]}\n      - {id: c, prompt: p, depends_on: [b]}\n", "plan.yaml:4: depends_on has a cycle: a -> c -> b -> a"},
		{"dependency behind a barrier", "groups:\n  - tasks:\n      - {id: a, prompt: p, depends_on: [b]}\n  - tasks:\n      - {id: b, prompt: p}\n", "task a depends on b of the later group group-2"},
		{"dependency later in a sequence", "groups:\n  - tasks:\n      - {id: a, prompt: p, depends_on: [b]}\n      - {id: b, prompt: p}\n", "listed after it in the sequential group"},
		{"file outside the repository", "groups:\n  - tasks:\n      - {id: a, prompt: p, files: [../x]}\n", "plan.yaml:3: task a: files: \"../x\" must be a path inside the repository"},
		{"empty model", "models: ['']\ngroups:\n  - tasks:\n      - {id: a, prompt: p}\n", "models: a model name is empty"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse("plan.yaml", []byte(c.src))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want %q", err, c.want)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("the error is not one line: %q", err)
			}
		})
	}
}

func TestAG_P1_Intersect(t *testing.T) {
	cases := []struct {
		a, b []string
		want bool
	}{
		{[]string{"a.go"}, []string{"b.go"}, false},
		{[]string{"a.go", "x.go"}, []string{"b.go", "x.go"}, true},
		{[]string{"lex/"}, []string{"lex/scan.go"}, true},
		{[]string{"lex/"}, []string{"lexer.go"}, false},
		{nil, []string{"b.go"}, true},
	}
	for _, c := range cases {
		if got := Intersect(c.a, c.b); got != c.want || Intersect(c.b, c.a) != c.want {
			t.Errorf("Intersect(%v, %v) = %v, want %v", c.a, c.b, got, c.want)
		}
	}
}

func TestPLAN_1_ParseReview(t *testing.T) {
	ok := `{"status":"complete","next_action":"","needs_extension_minutes":0,"summary":"fine","files_changed":[],"approved":false,"issues":[{"severity":"minor","summary":"naming"}]}`
	r, err := ParseReview("thinking…\n" + ok + "\n\n")
	if err != nil || !r.Valid || r.Approved || len(r.Issues) != 1 || !r.Passed() {
		t.Fatalf("r = %+v, err %v", r, err)
	}
	for name, out := range map[string]string{
		"empty":          "",
		"prose":          "looks good to me",
		"text after":     ok + "\ntrailing",
		"bad severity":   strings.Replace(ok, `"minor"`, `"nit"`, 1),
		"no approved":    strings.Replace(ok, `"approved":false,`, "", 1),
		"changed files":  strings.Replace(ok, `"files_changed":[]`, `"files_changed":["a.go"]`, 1),
		"blocked status": strings.Replace(ok, `"complete"`, `"blocked"`, 1),
		"empty summary":  strings.Replace(ok, `"summary":"naming"`, `"summary":""`, 1),
	} {
		if r, err := ParseReview(out); err == nil || r.Valid || r.Passed() {
			t.Errorf("%s: read as %+v", name, r)
		}
	}
}

// TestPLAN_1_DocsExampleParses: the plan docs/plan.md shows is a valid
// plan, with the groups and fields it explains.
func TestPLAN_1_DocsExampleParses(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "plan.md"))
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	i := strings.Index(s, "# `converge plan`")
	if i < 0 {
		t.Fatal("docs/plan.md has no converge plan heading")
	}
	start := strings.Index(s[i:], "```yaml\n")
	if start < 0 {
		t.Fatal("docs/plan.md has no yaml example")
	}
	body := s[i+start+len("```yaml\n"):]
	body = body[:strings.Index(body, "```")]
	p, err := Parse("docs/plan.md", []byte(body))
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Groups) != 2 || !p.Groups[0].Parallel || p.Task("repl") == nil || p.Task("repl").Agent != "claude" || len(p.Models) != 2 {
		t.Errorf("docs/plan.md plan = %+v", p)
	}
}
