package prloop

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/convergeloop/converge/internal/forge"
	"github.com/convergeloop/converge/internal/text"
)

// publishVerdict is PR-T10's write: through the forge's own verdict
// (a check run, forge.VerdictPublisher) when it has one, else a commit
// status named StatusContext.
func (l *Loop) publishVerdict(ctx context.Context, st State, pr *forge.PullRequest, a Action) error {
	if vp, ok := l.Forge.(forge.VerdictPublisher); ok {
		return vp.PublishVerdict(ctx, pr.Ref, verdictOf(st, pr, a))
	}
	return l.Forge.SetCommitStatus(ctx, pr.Ref, a.SHA, forge.CommitStatus{
		State: a.State, Context: StatusContext, Description: text.Clip(a.Reason, 140),
	})
}

// checkConclusion is a verdict state as a finished check run. Every
// unproven end is one branch protection blocks on: failure for a bound or
// a failure to converge, action_required for a hand-off or an error (a
// human must look). Never neutral: GitHub lets a required neutral check
// pass, and a run that proved nothing must not.
func checkConclusion(s forge.CommitStatusState) string {
	switch s {
	case forge.StatusPending:
		return ""
	case forge.StatusSuccess:
		return "success"
	case forge.StatusFailure:
		return "failure"
	}
	return "action_required"
}

// conclusionState reads a `converge` check run's conclusion back as the
// verdict state checkConclusion made it from, so a verdict the head shows
// is not published again; an unknown one reads as error, fail-closed.
func conclusionState(conclusion string) forge.CommitStatusState {
	switch strings.ToLower(conclusion) {
	case "success":
		return forge.StatusSuccess
	case "failure", "timed_out", "cancelled":
		return forge.StatusFailure
	case "":
		return forge.StatusPending
	}
	return forge.StatusError
}

// verdictOf is the verdict a set-status action publishes: its state, its
// conclusion, the action's reason as the title, and as the summary the
// terminal with its proof, and the rounds so far.
func verdictOf(st State, pr *forge.PullRequest, a Action) forge.Verdict {
	v := forge.Verdict{
		Name: StatusContext, SHA: a.SHA, State: a.State, Conclusion: checkConclusion(a.State),
		Title: text.Clip(a.Reason, 140), DetailsURL: pr.URL,
	}
	var b strings.Builder
	if t := st.Terminal; t != nil && a.State != forge.StatusPending {
		fmt.Fprintf(&b, "**%s** (exit %d): %s\n", t.Reason, t.ExitCode, oneLine(t.Message))
		if p := t.Proof; p != nil {
			writeProof(&b, p)
		}
	} else {
		fmt.Fprintf(&b, "converge is working on %s: %s\n", text.ShortSHA(a.SHA), oneLine(a.Reason))
	}
	writeRounds(&b, st.Rounds)
	v.Summary = b.String()
	return v
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// writeProof is the proof (PR-T9) as a markdown table.
func writeProof(b *strings.Builder, p *Proof) {
	rows := [][2]string{
		{"pr", p.PR},
		{"head", p.HeadSHA},
		{"reviewed commit", fmt.Sprintf("%s (%s at %s)", p.ReviewedCommit, p.Review(), p.ReviewedAt.UTC().Format(time.RFC3339))},
		{"ci", p.CIState},
		{"merge state", string(p.MergeState)},
		{"open threads awaiting reply", fmt.Sprint(p.OpenThreadsAwaitingReply)},
		{"escalated threads", list(p.EscalatedThreads)},
		{"hand-offs", list(p.HandOffs)},
		{"untrusted threads", list(p.UntrustedThreads)},
		{"rounds run", fmt.Sprint(p.RoundsRun)},
	}
	if p.TestCensus != nil {
		rows = append(rows, [2]string{"test census", fmt.Sprint(p.TestCensus.Census)})
	}
	if len(p.RevertedRounds) > 0 {
		rows = append(rows, [2]string{"reverted rounds", fmt.Sprint(p.RevertedRounds)})
	}
	for _, n := range p.Notes {
		rows = append(rows, [2]string{"note", n})
	}
	b.WriteString("\n### Proof\n\n| | |\n| --- | --- |\n")
	for _, r := range rows {
		fmt.Fprintf(b, "| %s | %s |\n", r[0], cell(r[1]))
	}
}

// writeRounds is one line per round: its head, findings, commit.
func writeRounds(b *strings.Builder, rounds []RoundRecord) {
	if len(rounds) == 0 {
		return
	}
	b.WriteString("\n### Rounds\n\n| round | head | findings | structural | commit |\n| --- | --- | --- | --- | --- |\n")
	for _, r := range rounds {
		commit := "none"
		if r.CommitSHA != "" {
			commit = text.ShortSHA(r.CommitSHA)
		}
		structural := "no"
		if r.Structural {
			structural = "yes"
		}
		fmt.Fprintf(b, "| %d | %s | %d | %s | %s |\n", r.N, text.ShortSHA(r.HeadSHA), len(r.Findings), structural, commit)
	}
}
