package prloop

import (
	"errors"
	"fmt"
	"strings"

	"github.com/convergeloop/converge/internal/agent"
	"github.com/convergeloop/converge/internal/forge"
	"github.com/convergeloop/converge/internal/text"
)

// agentFailureReason marks the comment an errored run posts about the
// agent that could not run.
const agentFailureReason = "agent-failure"

// agentFailureMaxChars bounds the quoted message: the CLI's one line and
// the last lines of its stderr fit; a whole log does not belong on a PR.
const agentFailureMaxChars = 1200

// AgentFailureOf is the agent that could not run behind cause (an
// *agent.RunFailure, or a CLI's own *agent.CLIError), nil for any other
// error. Its message is redacted again: it is posted on the PR (SEC-3).
func AgentFailureOf(cause error) *AgentFailure {
	var rf *agent.RunFailure
	var ce *agent.CLIError
	switch {
	case errors.As(cause, &rf):
		f := &AgentFailure{Agent: rf.Agent, Message: rf.Error()}
		if rf.CLI != nil {
			f.Kind = string(rf.CLI.Kind)
			if f.Agent == "" {
				f.Agent = rf.CLI.Agent
			}
		}
		return f.redacted()
	case errors.As(cause, &ce):
		return (&AgentFailure{Agent: ce.Agent, Kind: string(ce.Kind), Message: ce.Error()}).redacted()
	}
	return nil
}

func (f *AgentFailure) redacted() *AgentFailure {
	if f.Agent == "" {
		f.Agent = "agent"
	}
	f.Message = text.Clip(redactKeys(text.OneLine(f.Message)), agentFailureMaxChars)
	return f
}

// redactKeys removes the forge's and model providers' key shapes a
// CLI's error may echo.
func redactKeys(s string) string {
	return agent.Redact(s)
}

// agentFailureMarker marks the comment, once per head and agent: a rerun
// that fails the same way does not post it again.
func agentFailureMarker(head, agentName string) string {
	return fmt.Sprintf("<!-- converge:agent-failure head=%s agent=%s -->", markerField(head), markerField(agentName))
}

func agentFailurePosted(pr *forge.PullRequest, f *AgentFailure, c Config) bool {
	m := agentFailureMarker(pr.HeadSHA, f.Agent)
	for _, ic := range pr.IssueComments {
		if selfComment(ic.Author, c) && strings.Contains(ic.Body, m) {
			return true
		}
	}
	return false
}

// agentFailureBody says which agent could not run and why, in its CLI's
// words, and what to do; never a reply on a thread (AG-T4).
func agentFailureBody(f *AgentFailure, head string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "**converge stopped: agent `%s` could not run** on %s, so this pull request needs attention.\n\n", markerField(f.Agent), text.ShortSHA(head))
	switch f.Kind {
	case string(agent.FailAuth):
		b.WriteString("Its CLI says its credentials failed:\n\n")
	case string(agent.FailEndpoint):
		b.WriteString("Its CLI could not reach its model:\n\n")
	default:
		b.WriteString("What it said:\n\n")
	}
	fmt.Fprintf(&b, "> %s\n\n", defang(f.Message))
	b.WriteString("Fix the agent's setup (`converge doctor --check` shows what it uses) and run converge again; no finding was answered on its behalf.\n\n")
	b.WriteString(agentFailureMarker(head, f.Agent))
	return b.String()
}
