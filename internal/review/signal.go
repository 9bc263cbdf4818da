package review

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
