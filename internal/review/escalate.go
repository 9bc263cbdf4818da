package review

import (
	"fmt"
	"slices"
	"strings"
)

// Escalation is how the local review looks harder after rounds whose
// review found structural items (PR-S4): the source's driver reviews at
// its highest effort after a round whose own review found structural
// items. A review at level n > 0 (n such rounds in a row) adds Angles,
// runs on the n-th model of the ladder, and tells every angle to work at
// its highest effort; level 0 is the configured review.
type Escalation struct {
	// Off: every review is the configured one, whatever the rounds before
	// it found.
	Off bool
	// Angles are added to the review's angles when it escalates; one the
	// review has already is not added twice.
	Angles []Angle
	// Models is the review agent's model ladder, the default first: a
	// review at level n runs on Models[min(n, len-1)] (AG-E1). Empty: the
	// agent's own configured model at every level.
	Models []string
}

// EscalationAngles are the angles an escalated review adds when none are
// configured: after fixes of structural findings, what the fixes broke.
func EscalationAngles() []Angle {
	return []Angle{
		{Name: "regressions", Focus: "Regressions: what the latest changes, often fixes of earlier review findings, broke — behaviour callers rely on, " +
			"error handling or checks that were dropped, a fix that undoes or contradicts an earlier one, or a new defect on the lines a fix touched."},
	}
}

// DefaultEscalationAngleNames is EscalationAngles as a flag value.
func DefaultEscalationAngleNames() string {
	var names []string
	for _, a := range EscalationAngles() {
		names = append(names, a.Name)
	}
	return strings.Join(names, ",")
}

// escalatedFocus is what every angle of an escalated review is told.
func escalatedFocus(level int) string {
	return fmt.Sprintf(" This review is escalated (level %d): the review of the previous round(s) found structural problems. "+
		"Work at your highest effort: read every changed function whole, follow its callers and the tests that cover it, "+
		"and check the lines the latest fixes touched for new defects.", level)
}

// Escalate returns the reviewer for a review at level (see Escalation):
// r itself, on the ladder's default model, at level 0 or when escalation
// is off.
func (r Reviewer) Escalate(level int) Reviewer {
	if ms := r.Escalation.Models; len(ms) > 0 {
		rung := 0
		if !r.Escalation.Off {
			rung = min(max(level, 0), len(ms)-1)
		}
		r.Model = ms[rung]
	}
	if r.Escalation.Off || level <= 0 {
		r.level = 0
		return r
	}
	r.level = level
	angles := slices.Clone(r.Angles)
	if len(angles) == 0 {
		angles = DefaultAngles()
	}
	for _, a := range r.Escalation.Angles {
		if !slices.ContainsFunc(angles, func(b Angle) bool { return b.Name == a.Name }) {
			angles = append(angles, a)
		}
	}
	for i := range angles {
		angles[i].Focus += escalatedFocus(level)
	}
	r.Angles = angles
	return r
}
