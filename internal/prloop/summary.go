package prloop

import (
	"strings"

	"github.com/convergeloop/converge/internal/text"
)

// FirstLine is a finding's summary as one line of a commit message, the
// decision log or the recap: its first line, clipped.
func FirstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return text.Clip(s, 72)
}
