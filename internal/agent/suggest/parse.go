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
	lines, _, _, reason = ParseSuggestionSpan(body)
	return lines, reason
}

// ParseSuggestionSpan is ParseSuggestion that also reads GitLab's
// multi-line suggestion, info string "suggestion:-A+B": the block
// replaces the commented line with A lines above it and B below
// (https://docs.gitlab.com/user/project/merge_requests/reviews/suggestions/).
// A GitHub block ("suggestion") has both 0: its lines are the comment's
// own line range.
func ParseSuggestionSpan(body string) (lines []string, above, below int, reason string) {
	body = strings.ReplaceAll(body, "\r\n", "\n")
	src := strings.Split(body, "\n")
	found := 0
	for i := 0; i < len(src); i++ {
		indent, ch, n, info, ok := openingFence(src[i])
		if !ok {
			continue
		}
		a, b, isSuggestion := suggestionInfo(firstWord(info))
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
			return nil, 0, 0, ReasonUnterminated
		}
		found++
		if content == nil {
			content = []string{}
		}
		lines, above, below = content, a, b
	}
	switch {
	case found == 0:
		return nil, 0, 0, ReasonNoSuggestion
	case found > 1:
		return nil, 0, 0, ReasonMultipleSuggestions
	}
	return lines, above, below, ""
}

// maxSpan bounds the lines a GitLab suggestion may reach above or below
// its line, as GitLab does (100 each way).
const maxSpan = 100

// suggestionInfo reads a fence's first word: "suggestion" (GitHub's and
// GitLab's single line) or GitLab's "suggestion:-A+B".
func suggestionInfo(word string) (above, below int, ok bool) {
	if word == "suggestion" {
		return 0, 0, true
	}
	rest, found := strings.CutPrefix(word, "suggestion:-")
	if !found {
		return 0, 0, false
	}
	a, b, found := strings.Cut(rest, "+")
	if !found {
		return 0, 0, false
	}
	above, errA := strconv.Atoi(a)
	below, errB := strconv.Atoi(b)
	if errA != nil || errB != nil || above < 0 || below < 0 || above > maxSpan || below > maxSpan ||
		strings.HasPrefix(a, "+") || strings.HasPrefix(b, "+") || strings.HasPrefix(b, "-") {
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
