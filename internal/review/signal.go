package review

import "strings"

// Signal is what one review by a review bot says, read fail-closed
// (PR-O2, PR-O3). The loop decides on it; a bot's package reads it.
type Signal int

const (
	// NoSignal: not a review of the diff — an error or quota body, an
	// unknown wording, an empty body. Never classified, never terminal.
	NoSignal Signal = iota
	// Unsettled: the review's own counts and its visible comments
	// disagree; the forge may still be catching up, so observe again.
	Unsettled
	// Clean: no comments anywhere and a recognized no-findings line.
	Clean
	// Findings: the stated count matches the visible comments.
	Findings
)

func (s Signal) String() string {
	switch s {
	case Unsettled:
		return "unsettled"
	case Clean:
		return "clean"
	case Findings:
		return "findings"
	}
	return "no signal"
}

// OwnText is a review bot's body in its own words, lower case: the lines
// of fenced blocks and `>` quotes are dropped, since they may carry
// another review's text (PR-O4), so neither an error phrase nor a count
// inside them counts. Every bot reads its bodies through it.
func OwnText(body string) string {
	var out []string
	fence := ""
	for _, line := range strings.Split(strings.ReplaceAll(body, "\r\n", "\n"), "\n") {
		t := strings.TrimSpace(line)
		if fence != "" {
			if strings.HasPrefix(t, fence) {
				fence = ""
			}
			continue
		}
		if strings.HasPrefix(t, "```") || strings.HasPrefix(t, "~~~") {
			fence = t[:3]
			continue
		}
		if strings.HasPrefix(t, ">") {
			continue
		}
		out = append(out, line)
	}
	return strings.ToLower(strings.Join(out, "\n"))
}
