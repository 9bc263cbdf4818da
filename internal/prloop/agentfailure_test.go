package prloop

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/convergeloop/converge/internal/agent"
	"github.com/convergeloop/converge/internal/forge"
)

// TestAG_T4_AgentThatCouldNotRunIsNamedInOneComment: a run that ended
// errored because an agent could not run gets, beside needs-attention and
// the error status, one PR comment naming the agent and quoting its
// CLI's message with no secret in it; never a reply on a thread. The
// comment carries a marker, so the same Decide after a crash, or a rerun
// that fails the same way, does not post it again. A forge that refuses
// the token, or an error that is not an agent's, gets no comment.
func TestAG_T4_AgentThatCouldNotRunIsNamedInOneComment(t *testing.T) {
	const ghTok = "ghp_abcdefghijklmnopqrstuvwxyz0123456789"
	const key = "sk-ant-api03-ABCDEFGHIJKLMNOPQRSTUV"
	pr := newPR("h1")
	pr.Threads = []forge.Thread{copilotThread("T1", "nil deref")}
	cause := fmt.Errorf("fix: %w", &agent.RunFailure{Agent: "claude", What: "authentication failed", CLI: &agent.CLIError{
		Agent: "claude", Kind: agent.FailAuth, Message: "Invalid API key " + key + " (token " + ghTok + ") · Please run /login"}})
	l := &Loop{Deps: Deps{Config: cfg()}}
	s, acts := l.Fail(verifying("h1", 1), obs(at(1), pr), cause)
	wantActs(t, acts, "add-label "+LabelNeedsAttention, "set-status error h1", "comment terminal/agent-failure/h1/claude")
	body := acts[2].Body
	for _, want := range []string{"agent `claude` could not run", "credentials failed", "Invalid API key [REDACTED]", "Please run /login", agentFailureMarker("h1", "claude")} {
		if !strings.Contains(body, want) {
			t.Errorf("comment lacks %q:\n%s", want, body)
		}
	}
	for _, a := range acts {
		if strings.Contains(a.Body+a.Reason, ghTok) || strings.Contains(a.Body+a.Reason, key) {
			t.Errorf("%s carries a secret: %q %q", a.Kind, a.Body, a.Reason)
		}
	}
	f := s.Terminal.AgentFailure
	if f == nil || f.Agent != "claude" || f.Kind != "auth" || strings.Contains(f.Message+s.Terminal.Message, "sk-ant") || strings.Contains(f.Message+s.Terminal.Message, ghTok) {
		t.Fatalf("terminal %+v, failure %+v", s.Terminal, f)
	}
	if s.Terminal.ExitCode != 6 {
		t.Errorf("stored exit code %d, want 6: the agent's credentials were refused (IF-1)", s.Terminal.ExitCode)
	}

	// The forge shows the label, the status and the comment: the same
	// terminal again writes nothing, nor does a rerun failing the same way.
	done := forgeApply(pr, acts, at(2))
	done.Checks = withConvergeStatus(done.Checks, "ERROR")
	done.IssueComments = []forge.IssueComment{{ID: 9, Author: self, Body: body}}
	_, again, _ := Decide(s, obs(at(3), done), cfg())
	wantActs(t, again)
	_, rerun := l.Fail(verifying("h1", 1), obs(at(4), done), cause)
	wantActs(t, rerun)
	// A marker someone else wrote proves nothing.
	forged := *done
	forged.IssueComments = []forge.IssueComment{{ID: 9, Author: "mallory", Body: body}}
	_, rerun = l.Fail(verifying("h1", 1), obs(at(4), &forged), cause)
	wantActs(t, rerun, "comment terminal/agent-failure/h1/claude")

	// Output without a record, after its retry: named too, with its
	// last line; and no reply anywhere (AG-T4).
	garbage := &agent.RunFailure{Agent: "codex", What: "no valid status record; its last line: \"I refuse\""}
	_, acts = l.Fail(verifying("h1", 1), obs(at(1), pr), fmt.Errorf("fix: %w", garbage))
	if c := findAct(acts, ActComment, ""); c == nil || !strings.Contains(c.Body, "agent `codex` could not run") || !strings.Contains(c.Body, "I refuse") {
		t.Fatalf("garbage: %q", sig(acts))
	}
	for _, a := range acts {
		if a.Kind == ActReply || a.ThreadID != "" {
			t.Fatalf("an agent failure answered a thread: %q", sig(acts))
		}
	}

	// No comment: the forge refuses the token (nothing is written), or
	// the error is not an agent's.
	if _, a := l.Fail(verifying("h1", 1), obs(at(1), pr), errors.Join(cause, &forge.Error{Kind: forge.KindAuth, Msg: "bad credentials"})); len(a) != 0 {
		t.Fatalf("a forge that refuses the token is written to: %q", sig(a))
	}
	if _, a := l.Fail(verifying("h1", 1), obs(at(1), pr), errors.New("disk full")); findAct(a, ActComment, "") != nil {
		t.Fatalf("an error that is not an agent's got a comment: %q", sig(a))
	}
}
