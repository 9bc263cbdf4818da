package review

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/convergeloop/converge/internal/text"
)

// MaxCommentChars is GitHub's limit on a comment body.
const MaxCommentChars = 65536

// summaryBudget leaves room under MaxCommentChars whatever the forge counts
// (bytes, runes or UTF-16 units): bytes are never fewer than either.
const summaryBudget = MaxCommentChars - 4096

// maxFindingText bounds one finding's text in the comment, so that one
// verbose angle cannot crowd out every other finding.
const maxFindingText = 1500

// Marker is the hidden last line of a summary comment: which head and
// round it reports, for a later run to find without trusting the text.
func Marker(head string, round int) string {
	return fmt.Sprintf("<!-- converge:local-review head=%s round=%d -->", head, round)
}

var markerRE = regexp.MustCompile(`^<!-- converge:local-review head=([0-9A-Za-z]{1,64}) round=([0-9]{1,9}) -->$`)

// ParseSummaryMarker reads the marker from a comment body. Only the last
// non-empty line counts: agent text inside the body has '<' escaped and
// cannot forge it, and a body quoting another summary does not match.
func ParseSummaryMarker(body string) (head string, round int, ok bool) {
	lines := strings.Split(strings.TrimRight(body, " \t\r\n"), "\n")
	m := markerRE.FindStringSubmatch(strings.TrimSpace(lines[len(lines)-1]))
	if m == nil {
		return "", 0, false
	}
	n, err := strconv.Atoi(m[2])
	if err != nil {
		return "", 0, false
	}
	return m[1], n, true
}

// Summary renders the one comment a round posts about its local review
// (PR-S4), clean or not: a verdict line, the findings grouped by severity
// (structural first), each angle and whether its answer was parsed, and
// the marker as the last line. Agent text is flattened to one line per
// finding and escaped so that it cannot open HTML, forge the marker or
// mention anyone. The body stays under GitHub's comment limit; findings
// that do not fit are counted in a note.
func Summary(res Result, round int) string {
	var structural, minor []Finding
	for _, f := range res.Findings {
		if f.Verdict == VerdictMinor {
			minor = append(minor, f)
		} else {
			structural = append(structural, f)
		}
	}
	unparsed := 0
	for _, a := range res.Angles {
		if !a.Parsed {
			unparsed++
		}
	}

	var top strings.Builder
	fmt.Fprintf(&top, "### converge local review · round %d · head %s\n\n", round, inline(text.ShortSHA(res.Head), 12))
	switch {
	case len(res.Angles) == 0:
		top.WriteString("**No review:** no angle ran, so nothing about this head is known.\n")
	case unparsed > 0:
		fmt.Fprintf(&top, "**Not a usable review:** %d of %d angles gave no answer that could be parsed, so this review does not count as the independent review of this head. ",
			unparsed, len(res.Angles))
		fmt.Fprintf(&top, "%s.\n", counts(len(structural), len(minor)))
	case res.Clean():
		fmt.Fprintf(&top, "**Clean:** all %d angles reviewed the diff of this head and found nothing.\n", len(res.Angles))
	default:
		fmt.Fprintf(&top, "**%s** from %d angles.\n", counts(len(structural), len(minor)), len(res.Angles))
	}
	if res.Escalated > 0 {
		// PR-S4: the rounds before found structural items.
		fmt.Fprintf(&top, "\n_Escalated review (level %d): the review of the round(s) before found structural items, so every angle worked at its highest effort", res.Escalated)
		if res.Model != "" {
			fmt.Fprintf(&top, ", on model %s", inline(res.Model, 64))
		}
		top.WriteString("._\n")
	}
	if res.Cached {
		top.WriteString("\n_Reused from an earlier review of the same head._\n")
	}

	var angles strings.Builder
	angles.WriteString("\n#### Angles\n\n| Angle | Answer | Findings |\n|---|---|---|\n")
	for _, a := range res.Angles {
		if a.Parsed {
			fmt.Fprintf(&angles, "| %s | parsed | %d |\n", cell(a.Angle), len(a.Findings))
			continue
		}
		why := "not parsed"
		if a.Why != "" {
			why += ": " + a.Why
		}
		fmt.Fprintf(&angles, "| %s | **%s** | – |\n", cell(a.Angle), cell(why))
	}
	marker := "\n" + Marker(res.Head, round) + "\n"

	room := summaryBudget - top.Len() - angles.Len() - len(marker)
	var body strings.Builder
	omitted := 0
	for _, group := range []struct {
		title string
		fs    []Finding
	}{{"Structural", structural}, {"Minor", minor}} {
		if len(group.fs) == 0 {
			continue
		}
		heading := fmt.Sprintf("\n#### %s (%d)\n\n", group.title, len(group.fs))
		if body.Len()+len(heading) > room {
			omitted += len(group.fs)
			continue
		}
		body.WriteString(heading)
		for _, f := range group.fs {
			line := findingLine(f)
			if body.Len()+len(line) > room {
				omitted++
				continue
			}
			body.WriteString(line)
		}
	}
	if omitted > 0 {
		fmt.Fprintf(&body, "\n_… %d more findings not shown: this comment would exceed GitHub's size limit. The run's record keeps them all._\n", omitted)
	}
	return top.String() + body.String() + angles.String() + marker
}

func findingLine(f Finding) string {
	var b strings.Builder
	fmt.Fprintf(&b, "- **%s**", inline(f.Angle, 64))
	if f.File != "" {
		loc := strings.NewReplacer("`", "'", "\n", " ", "\r", " ").Replace(f.File)
		switch {
		case f.EndLine > 0 && f.StartLine > 0 && f.StartLine != f.EndLine:
			loc += fmt.Sprintf(":%d-%d", f.StartLine, f.EndLine)
		case f.EndLine > 0:
			loc += ":" + strconv.Itoa(f.EndLine)
		}
		fmt.Fprintf(&b, " `%s`", text.Clip(loc, 300))
	}
	fmt.Fprintf(&b, " %s\n", inline(f.Summary, maxFindingText))
	return b.String()
}

func counts(structural, minor int) string {
	return fmt.Sprintf("%d structural, %d minor", structural, minor)
}

// inline makes agent text safe for one markdown line: whitespace folded,
// '<' and '&' escaped (no HTML, no hidden comment, no forged marker), and
// '@' kept from notifying anyone; past limit characters it is cut with "…".
func inline(s string, limit int) string {
	s = text.Clip(strings.Join(strings.Fields(s), " "), limit+1)
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", "@", "@\u200b").Replace(s)
}

func cell(s string) string { return strings.ReplaceAll(inline(s, 300), "|", `\|`) }

// Merged is a local finding the loop found to be one with a finding that
// has a place on the forge (PR-S6): a review thread or a top-level comment,
// which answers for both.
type Merged struct {
	Angle     string
	File      string
	StartLine int
	EndLine   int
	// Into names where it is answered, e.g. "review thread PRRT_x (copilot)".
	Into string
}

// maxMergedText bounds the section WithMerged adds, so that the summary
// stays under GitHub's comment limit (Summary leaves more room than this).
const maxMergedText = 3000

// WithMerged adds to a round's summary the local findings that are one
// with a forge finding: each is handled in that thread, once, not as a
// finding of its own. The marker stays the last line; Into is escaped like
// agent text. Without merged findings the summary is returned as it is.
func WithMerged(summary string, ms []Merged) string {
	if len(ms) == 0 {
		return summary
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\n#### Same as a review thread (%d)\n\n", len(ms))
	omitted := 0
	for _, m := range ms {
		line := findingLine(Finding{Angle: m.Angle, File: m.File, StartLine: m.StartLine, EndLine: m.EndLine,
			Summary: "is one finding with " + m.Into + ": converge answers it there, not separately."})
		if b.Len()+len(line) > maxMergedText {
			omitted++
			continue
		}
		b.WriteString(line)
	}
	if omitted > 0 {
		fmt.Fprintf(&b, "\n_… %d more not shown._\n", omitted)
	}
	// The marker is the summary's last line; agent text in the body has
	// '<' escaped, so the last "\n<!--" is the marker's.
	at := strings.LastIndex(summary, "\n<!-- converge:local-review ")
	if at < 0 {
		return summary + b.String()
	}
	return summary[:at] + b.String() + summary[at:]
}
