package prloop

import (
	"fmt"
	"strings"

	"github.com/convergeloop/converge/internal/forge"
	"github.com/convergeloop/converge/internal/text"
)

// CI states as the loop reads them from the head's rollup.
const (
	ciSuccess = "success"
	ciPending = "pending"
	ciFailure = "failure"
	ciNone    = "none" // no check or status other than converge's own
)

// ciState reads CI on the head from its contexts, not from the rollup's
// State: the rollup includes converge's own `converge` status, which is
// pending for as long as the loop runs and would never let CI settle
// (PR-T1(2) excludes it).
func ciState(ch forge.CheckRollup) string {
	seen, pending, failed := false, false, false
	for _, cx := range ch.Contexts {
		if strings.EqualFold(cx.Name, StatusContext) {
			continue
		}
		seen = true
		switch contextState(cx) {
		case ciPending:
			pending = true
		case ciFailure:
			failed = true
		}
	}
	switch {
	case failed:
		return ciFailure
	case pending:
		return ciPending
	case seen:
		return ciSuccess
	}
	return ciNone
}

// contextState maps one check run or commit status to success, pending or
// failure. Anything not known to pass is a failure, fail-closed.
func contextState(cx forge.CheckContext) string {
	if cx.IsStatus {
		switch strings.ToUpper(string(cx.Conclusion)) {
		case "SUCCESS":
			return ciSuccess
		case "PENDING", "EXPECTED", "":
			return ciPending
		}
		return ciFailure
	}
	switch strings.ToUpper(string(cx.Status)) {
	case "COMPLETED", "":
	default: // QUEUED, IN_PROGRESS, PENDING, WAITING, REQUESTED
		return ciPending
	}
	switch strings.ToUpper(string(cx.Conclusion)) {
	case "SUCCESS", "NEUTRAL", "SKIPPED":
		return ciSuccess
	case "":
		return ciPending
	}
	return ciFailure
}

// convergeStatus is the state converge's own verdict shows on the head
// (pending, success, failure, error, or "" when absent), so a verdict the
// forge already shows is not posted again.
func convergeStatus(ch forge.CheckRollup) forge.CommitStatusState {
	for _, cx := range ch.Contexts {
		if !strings.EqualFold(cx.Name, StatusContext) {
			continue
		}
		if !cx.IsStatus {
			switch strings.ToUpper(string(cx.Status)) {
			case "QUEUED", "IN_PROGRESS", "PENDING", "WAITING", "REQUESTED":
				return forge.StatusPending
			}
			return conclusionState(string(cx.Conclusion))
		}
		return forge.CommitStatusState(strings.ToLower(string(cx.Conclusion)))
	}
	return ""
}

// ciKeyPrefix keys a finding made of a failing check on one head (PR-V5):
// "ci:<head>:<name>". Like a top-level comment it has no thread; it is
// answered in the round's CI summary comment.
const ciKeyPrefix = "ci:"

func ciKey(head, name string) string {
	return ciKeyPrefix + head[:min(12, len(head))] + ":" + name
}

func isCIKey(id string) bool { return strings.HasPrefix(id, ciKeyPrefix) }

// ciFailing are the check runs and statuses on the head that failed,
// converge's own verdict excluded.
func ciFailing(ch forge.CheckRollup) []forge.CheckContext {
	var out []forge.CheckContext
	for _, cx := range ch.Contexts {
		if !strings.EqualFold(cx.Name, StatusContext) && contextState(cx) == ciFailure {
			out = append(out, cx)
		}
	}
	return out
}

// ciFindings is PR-V5: each failing check on the head that converge has
// not answered yet is a structural finding carrying its name, conclusion
// and the last lines of what it said.
func ciFindings(pr *forge.PullRequest, c Config) []Finding {
	answered := answeredKeys(pr, c)
	var out []Finding
	for _, cx := range ciFailing(pr.Checks) {
		key := ciKey(pr.HeadSHA, cx.Name)
		if len(answered[markerField(key)]) > 0 {
			continue
		}
		out = append(out, Finding{ID: key, CommentID: key, Summary: ciText(pr.HeadSHA, cx), Verdict: VerdictStructural,
			Class: "ci: a failing check on the head", Source: "ci", Author: cx.Name})
	}
	return out
}

// ciTailLines bounds the output a CI finding carries: its last lines are
// where a build or test says what failed.
const ciTailLines = 30

// ciText is what a failing check said: its name and conclusion, its
// title, the tail of its output and its first annotations.
func ciText(head string, cx forge.CheckContext) string {
	var b strings.Builder
	kind := "check run"
	if cx.IsStatus {
		kind = "commit status"
	}
	fmt.Fprintf(&b, "CI %s `%s` concluded %s on %s.", kind, cx.Name, cx.Conclusion, text.ShortSHA(head))
	for _, l := range []string{cx.Title, cx.Description} {
		if strings.TrimSpace(l) != "" {
			b.WriteString(" " + strings.TrimSpace(l))
		}
	}
	out := strings.TrimSpace(strings.TrimSpace(cx.Summary) + "\n" + strings.TrimSpace(cx.Text))
	if out != "" {
		lines := strings.Split(out, "\n")
		if len(lines) > ciTailLines {
			lines = lines[len(lines)-ciTailLines:]
		}
		b.WriteString("\n\nLast lines of its output:\n" + strings.Join(lines, "\n"))
	}
	if len(cx.Annotations) > 0 {
		b.WriteString("\n\nAnnotations:")
		for _, a := range cx.Annotations {
			fmt.Fprintf(&b, "\n- %s:%d", a.Path, a.StartLine)
			if a.EndLine > a.StartLine {
				fmt.Fprintf(&b, "-%d", a.EndLine)
			}
			fmt.Fprintf(&b, " %s", strings.ToLower(a.Level))
			if a.Title != "" {
				b.WriteString(" " + a.Title + ":")
			}
			b.WriteString(" " + text.OneLine(a.Message))
		}
	}
	if cx.URL != "" {
		b.WriteString("\n\nDetails: " + cx.URL)
	}
	return text.Clip(b.String(), 4000)
}

// ciRed names the failing checks on the head ("" when none): what every
// terminal but two-stable says when red CI is on the head (PR-V5).
func ciRed(pr *forge.PullRequest, c Config) string {
	failing := ciFailing(pr.Checks)
	if len(failing) == 0 {
		return ""
	}
	names := make([]string, 0, len(failing))
	for _, cx := range failing {
		names = append(names, fmt.Sprintf("`%s` %s", cx.Name, cx.Conclusion))
	}
	return fmt.Sprintf("CI is red on %s: %s", text.ShortSHA(pr.HeadSHA), strings.Join(names, ", "))
}

// ciHandedOff reports that every failing check on the head was handed to
// a human by converge on this head (escalated or deferred), as its
// answers on the forge or this run's records show.
func (d *step) ciHandedOff() bool {
	failing := ciFailing(d.pr.Checks)
	if len(failing) == 0 {
		return false
	}
	answered := answeredKeys(d.pr, d.c)
	for _, cx := range failing {
		key := ciKey(d.head, cx.Name)
		handed := false
		for _, m := range answered[markerField(key)] {
			handed = handed || m.Disposition == DispEscalated || m.Disposition == DispDeferred
		}
		for _, r := range d.s.Threads {
			handed = handed || (r.ThreadID == key && (r.Disposition == DispEscalated || r.Disposition == DispDeferred))
		}
		if !handed {
			return false
		}
	}
	return true
}

// ciAnswer is the round's CI summary comment (PR-V5): each failing check
// the round took up, what it said, and what converge did about it, with
// a hidden marker per check so it is answered once.
func ciAnswer(round int, recs []ThreadRecord, kept []Finding, pr *forge.PullRequest) string {
	var b strings.Builder
	fmt.Fprintf(&b, "**converge, round %d: CI on the head**\n\n", round)
	for _, rec := range recs {
		name, summary := rec.ThreadID, ""
		for _, f := range kept {
			if f.ID == rec.ThreadID {
				name, summary = f.Author, f.Summary
			}
		}
		fmt.Fprintf(&b, "- check `%s`: ", defang(name))
		switch rec.Disposition {
		case DispAddressed:
			fmt.Fprintf(&b, "addressed in %s (CI runs again on it).", commitLink(pr.URL, rec.HeadSHA))
		case DispDeferred:
			fmt.Fprintf(&b, "deferred to a human: %s.", defang(rec.Reason))
		default:
			fmt.Fprintf(&b, "handed to a human: %s.", defang(rec.Reason))
		}
		if summary != "" {
			b.WriteString("\n\n")
			for _, l := range strings.Split(defang(summary), "\n") {
				b.WriteString("  > " + l + "\n")
			}
		}
		b.WriteString("\n")
	}
	b.WriteString("— converge")
	if pr.Author != "" {
		fmt.Fprintf(&b, ", on behalf of @%s", pr.Author)
	}
	b.WriteString("\n\n")
	for _, rec := range recs {
		b.WriteString(Marker(rec.ThreadID, rec.HeadSHA, rec.Disposition) + "\n")
	}
	return b.String()
}
