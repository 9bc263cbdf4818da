package suggest

import (
	"strconv"
	"strings"
)

// ParseSuggestion extracts the one suggestion block of a comment body, as
// lines without endings; an empty, non-nil slice means "delete the lines".
// Fences follow CommonMark as GitHub renders them: three or more backticks
// or tildes, indented at most three spaces, info string "suggestion",
// closed by a run of the same character at least as long. Other fenced
// blocks are skipped whole, so a suggestion quoted inside one does not
// count. reason is non-empty when there is not exactly one complete block.
func ParseSuggestion(body string) (lines []string, reason string) {
	s, reason := parseSuggestion(body)
	if reason == "" && (s.above != 0 || s.below != 0) {
		return nil, ReasonRelativeRange
	}
	return s.lines, reason
}

// ParseSuggestionRange is ParseSuggestion that also returns GitLab's
// relative range (```suggestion:-A+B): the block replaces the above lines
// before the commented line, that line and the below lines after it.
func ParseSuggestionRange(body string) (lines []string, above, below int, reason string) {
	s, reason := parseSuggestion(body)
	return s.lines, s.above, s.below, reason
}

// suggestion is one parsed suggestion block: its lines, and the lines
// above and below the commented line it replaces too, as GitLab's
// ```suggestion:-A+B fence says (both 0 for ```suggestion).
type suggestion struct {
	lines        []string
	above, below int
}

// parseSuggestion is ParseSuggestion that also reads GitLab's relative
// range, ```suggestion:-A+B: the block replaces the A lines above the
// commented line, that line and the B lines below it.
func parseSuggestion(body string) (sg suggestion, reason string) {
	body = strings.ReplaceAll(body, "\r\n", "\n")
	src := strings.Split(body, "\n")
	found := 0
	for i := 0; i < len(src); i++ {
		indent, ch, n, info, ok := openingFence(src[i])
		if !ok {
			continue
		}
		word := firstWord(info)
		isSuggestion := word == "suggestion" || strings.HasPrefix(word, "suggestion:")
		var content []string
		closed := false
		for i++; i < len(src); i++ {
			if closingFence(src[i], ch, n) {
				closed = true
				break
			}
			content = append(content, trimIndent(src[i], indent))
		}
		if !isSuggestion {
			continue
		}
		if !closed {
			return suggestion{}, ReasonUnterminated
		}
		found++
		if content == nil {
			content = []string{}
		}
		sg.lines = content
		if sg.above, sg.below, ok = relativeRange(word); !ok {
			return suggestion{}, ReasonBadRange
		}
	}
	switch {
	case found == 0:
		return suggestion{}, ReasonNoSuggestion
	case found > 1:
		return suggestion{}, ReasonMultipleSuggestions
	}
	return sg, ""
}

// maxRelative bounds a relative range: GitLab allows 100 lines each way.
const maxRelative = 100

// relativeRange reads the -A+B of a suggestion fence's info word
// ("suggestion" alone is 0, 0); ok is false for any other shape.
func relativeRange(word string) (above, below int, ok bool) {
	rest, found := strings.CutPrefix(word, "suggestion:")
	if !found {
		return 0, 0, word == "suggestion"
	}
	a, b, found := strings.Cut(strings.TrimPrefix(rest, "-"), "+")
	if !found || !strings.HasPrefix(rest, "-") {
		return 0, 0, false
	}
	above, err1 := strconv.Atoi(a)
	below, err2 := strconv.Atoi(b)
	if err1 != nil || err2 != nil || above < 0 || below < 0 || above > maxRelative || below > maxRelative || a == "" || b == "" || strings.ContainsAny(a+b, "+-") {
		return 0, 0, false
	}
	return above, below, true
}

func openingFence(line string) (indent int, ch byte, n int, info string, ok bool) {
	indent = leadingSpaces(line)
	if indent > 3 {
		return 0, 0, 0, "", false
	}
	rest := line[indent:]
	if rest == "" || (rest[0] != '`' && rest[0] != '~') {
		return 0, 0, 0, "", false
	}
	ch = rest[0]
	for n < len(rest) && rest[n] == ch {
		n++
	}
	if n < 3 {
		return 0, 0, 0, "", false
	}
	info = strings.TrimSpace(rest[n:])
	if ch == '`' && strings.Contains(info, "`") {
		return 0, 0, 0, "", false
	}
	return indent, ch, n, info, true
}

func closingFence(line string, ch byte, n int) bool {
	indent := leadingSpaces(line)
	if indent > 3 {
		return false
	}
	rest := line[indent:]
	k := 0
	for k < len(rest) && rest[k] == ch {
		k++
	}
	return k >= n && strings.TrimRight(rest[k:], " \t") == ""
}

func leadingSpaces(s string) int {
	n := 0
	for n < len(s) && s[n] == ' ' {
		n++
	}
	return n
}

func trimIndent(s string, indent int) string {
	return s[min(indent, leadingSpaces(s)):]
}

func firstWord(s string) string {
	if f := strings.Fields(s); len(f) > 0 {
		return f[0]
	}
	return ""
}
