package backends

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/convergeloop/converge/internal/agent"
	"github.com/convergeloop/converge/internal/agent/claude"
	"github.com/convergeloop/converge/internal/agent/opencode"
	"github.com/convergeloop/converge/internal/checkloop"
	"github.com/convergeloop/converge/internal/classify"
	"github.com/convergeloop/converge/internal/recap"
)

// judgeKinds are the task kinds the judges send, as their packages name
// them: a package that renamed its kind would lose the read-only run.
var judgeKinds = []string{recap.TaskKind, classify.TaskKind, checkloop.TaskKindJudge}

func TestAG_B1_JudgeKindsAreTheJudgesOwn(t *testing.T) {
	for _, kind := range judgeKinds {
		if !agent.IsJudge(kind) || !agent.ReadOnly(kind) {
			t.Errorf("the judges' task kind %q is not a read-only judge kind", kind)
		}
	}
}

// TestAG_B1_JudgeRunsReadOnlyOnEveryBackend: `--judge-agent NAME` builds
// the backend as a judge, and its command line for a judge's task can
// read but not edit or run commands — as a review angle's, unlike a
// fix's.
func TestAG_B1_JudgeRunsReadOnlyOnEveryBackend(t *testing.T) {
	type cli interface {
		agent.Agent
		Args(agent.Task) []string
	}
	// what each backend's command line says about writing, for a task.
	perms := map[string]func(a cli, task agent.Task) string{
		"claude": func(a cli, task agent.Task) string {
			argv := a.Args(task)
			return flagValue(argv, "--permission-mode") + " tools=" + flagValue(argv, "--tools") + " allowed=" + flagValue(argv, "--allowedTools")
		},
		"codex":  func(a cli, task agent.Task) string { return "sandbox=" + flagValue(a.Args(task), "-s") },
		"gemini": func(a cli, task agent.Task) string { return "approval=" + flagValue(a.Args(task), "--approval-mode") },
		"opencode": func(a cli, task agent.Task) string {
			var cfg struct {
				Permission map[string]string `json:"permission"`
			}
			if err := json.Unmarshal([]byte(a.(*opencode.Agent).ConfigContent(task)), &cfg); err != nil {
				return "config: " + err.Error()
			}
			return "edit=" + cfg.Permission["edit"] + " bash=" + cfg.Permission["bash"] + " webfetch=" + cfg.Permission["webfetch"]
		},
	}
	readOnly := map[string]string{
		"claude":   "acceptEdits tools=" + strings.Join(claude.ReviewTools, ",") + " allowed=" + strings.Join(claude.ReviewTools, ","),
		"codex":    "sandbox=read-only",
		"gemini":   "approval=plan",
		"opencode": "edit=deny bash=deny webfetch=deny",
	}
	for _, name := range Names() {
		t.Run(name, func(t *testing.T) {
			a, err := New(Config{Name: name, Role: RoleJudge, Getenv: env(map[string]string{
				"CONVERGE_" + strings.ToUpper(name) + "_BIN": "/bin/sh"})})
			if err != nil {
				t.Fatal(err)
			}
			if a.Name() != "judge-"+name {
				t.Errorf("Name = %q, want judge-%s", a.Name(), name)
			}
			perm, want := perms[name], readOnly[name]
			if perm == nil || want == "" {
				t.Fatalf("no permission check for backend %s", name)
			}
			c := a.(cli)
			for _, kind := range append([]string{agent.TaskKindReview}, judgeKinds...) {
				if got := perm(c, agent.Task{Kind: kind, Workdir: "/w", Prompt: "judge"}); got != want {
					t.Errorf("%s task: %s, want %s", kind, got, want)
				}
			}
			if got := perm(c, agent.Task{Kind: agent.TaskKindFix, Workdir: "/w"}); got == want {
				t.Errorf("a fix task runs read-only too (%s): the check cannot tell", got)
			}
		})
	}
}

// flagValue is the argument after flag in argv, "" when there is none.
func flagValue(argv []string, flag string) string {
	i := slices.Index(argv, flag)
	if i < 0 || i+1 >= len(argv) {
		return ""
	}
	return argv[i+1]
}
