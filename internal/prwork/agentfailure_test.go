package prwork_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/convergeloop/converge/internal/agent"
	"github.com/convergeloop/converge/internal/emulator/fakehub"
	"github.com/convergeloop/converge/internal/engine"
	"github.com/convergeloop/converge/internal/forge"
	"github.com/convergeloop/converge/internal/prloop"
	"github.com/convergeloop/converge/internal/prloop/prlooptest"
	"github.com/convergeloop/converge/internal/testutil/hubtest"
)

// loggedOut is a CLI agent whose CLI says its credentials failed, quoting
// a token, and reports the tokens its failed turn used.
type loggedOut struct{ runs int }

const leaked = "ghp_0123456789abcdefghijklmnopqrstuvwxyzAB"

func (a *loggedOut) Name() string { return "claude" }

func (a *loggedOut) Run(context.Context, agent.Task) (agent.Result, error) {
	a.runs++
	return agent.Result{Usage: agent.Usage{InputTokens: 12, OutputTokens: 3}},
		&agent.CLIError{Agent: "claude", Kind: agent.FailAuth, Message: "Not logged in · Please run /login (token " + leaked + ")"}
}

// TestAG_T4_CLIFailureCommentedOnceAtTheForge: the real loop against the
// emulator, its fixer a CLI that is not logged in. The run ends errored;
// the PR shows needs-attention and one comment naming the agent with the
// CLI's own message, the token redacted, and no reply in any thread. A
// second run that fails the same way leaves that one comment as it is.
func TestAG_T4_CLIFailureCommentedOnceAtTheForge(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	hub, demo := hubtest.Demo(t, 300*time.Millisecond)
	ref, _ := forge.ParsePRURL(demo.PRURL)
	tok := hub.Tokens().Author
	client := hubtest.Client(t, hub, tok)
	fixer := &loggedOut{}
	var terms []*prloop.Terminal
	for run := 1; run <= 2; run++ {
		ws := demoWorkspace(t, hub, demo, tok)
		ws.Agent = fixer
		l := prloop.NewLoop(ref, prloop.Deps{Forge: client, Workspace: ws, Journal: &prlooptest.Journal{}, Config: withCopilot(prloop.DefaultConfig())})
		j := l.Journal.(*prlooptest.Journal)
		_, err := l.Run(ctx, prloop.State{Phase: prloop.PhaseStart}, engine.Options{PollMin: 20 * time.Millisecond, PollMax: 200 * time.Millisecond})
		if err == nil || !strings.Contains(err.Error(), "Not logged in") {
			t.Fatalf("run %d: %v, want the CLI's error", run, err)
		}
		st := j.Last()
		if st.Terminal == nil || st.Terminal.Reason != prloop.ReasonErrored || st.Terminal.AgentFailure == nil {
			t.Fatalf("run %d: terminal %+v", run, st.Terminal)
		}
		terms = append(terms, st.Terminal)
	}
	// An auth failure is not retried (RunFailure.Retryable): one run,
	// its tokens counted.
	if u := terms[0].Usage.Total; u.InputTokens != 12 || u.AgentRuns != 1 {
		t.Errorf("the failed fix's tokens are not counted once: %+v", u)
	}
	if fixer.runs != 2 {
		t.Errorf("the fixer ran %d times in two runs; a CLI's auth failure is not retried", fixer.runs)
	}

	pr, err := client.Observe(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	if !hasLabel(pr.Labels, prloop.LabelNeedsAttention) {
		t.Errorf("labels %v, want %s", pr.Labels, prloop.LabelNeedsAttention)
	}
	n := 0
	for _, ic := range pr.IssueComments {
		if strings.Contains(ic.Body, leaked) {
			t.Errorf("a comment holds the token: %s", ic.Body)
		}
		if strings.EqualFold(ic.Author, fakehub.LoginAuthor) && strings.Contains(ic.Body, "converge:agent-failure") {
			n++
			for _, want := range []string{"agent `claude` could not run", "credentials failed", `Not logged in · Please run /login (token [REDACTED])`} {
				if !strings.Contains(ic.Body, want) {
					t.Errorf("the comment lacks %q:\n%s", want, ic.Body)
				}
			}
		}
	}
	if n != 1 {
		t.Fatalf("%d agent failure comment(s) after two runs, want 1: %+v", n, pr.IssueComments)
	}
	for _, th := range pr.Threads {
		for _, c := range th.Comments {
			if strings.EqualFold(c.Author, fakehub.LoginAuthor) {
				t.Fatalf("converge replied in thread %s: %s", th.ID, c.Body)
			}
		}
	}
}

func hasLabel(labels []string, want string) bool {
	for _, l := range labels {
		if l == want {
			return true
		}
	}
	return false
}
