package prloop

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// MaxBodyChars bounds every body converge posts. It is below GitHub's
// 65,536-character comment limit, leaving room for a forge that counts
// differently, so no forge ever truncates a body itself: a forge cuts the
// end, and the end is where converge's marker is, which the next
// observation needs to see the reply exists (PR-G6, PR-S12).
const MaxBodyChars = 60000

// fitBody cuts a body longer than limit characters in the middle, with a
// note, keeping its start and its last paragraph (the signature and the
// marker) whole.
func fitBody(body string, limit int) string {
	n := utf8.RuneCountInString(body)
	if n <= limit {
		return body
	}
	tail := ""
	if i := strings.LastIndex(body, "\n\n"); i >= 0 && utf8.RuneCountInString(body[i:]) < limit/4 {
		body, tail = body[:i], body[i:]
	}
	note := func(omitted int) string {
		return fmt.Sprintf("\n\n…\n\n_(%d characters cut by converge to fit the forge's comment limit)_", omitted)
	}
	room := limit - utf8.RuneCountInString(tail)
	total := utf8.RuneCountInString(body)
	keep := room - utf8.RuneCountInString(note(total))
	keep = room - utf8.RuneCountInString(note(total-keep))
	if keep < 0 {
		keep = 0
	}
	i, r := 0, 0
	for i = range body {
		if r == keep {
			break
		}
		r++
	}
	return body[:i] + note(total-keep) + tail
}
