package repo

import "strings"

// HasTrailer reports whether message carries a git trailer with key
// (case-insensitive): a "Key: value" line in the message's final trailer
// block, as git finds it, not the same text anywhere else (PR-T4). It
// follows git's rules: the title paragraph is never trailers; the last
// paragraph counts when all its lines are trailers (or continuations), or
// when it holds a git-generated trailer (Signed-off-by, cherry-picked
// from) and at least a quarter of its lines are trailers; a "---" line
// ends the message, as do trailing comment lines.
func HasTrailer(message, key string) bool {
	for _, t := range ParseTrailers(message) {
		if strings.EqualFold(t.Key, key) {
			return true
		}
	}
	return false
}

// ParseTrailers returns the trailers of message's final trailer block (see
// HasTrailer), continuation lines unfolded into their value.
func ParseTrailers(message string) []Trailer {
	lines := messageLines(message)
	start, ok := trailerBlockStart(lines)
	if !ok {
		return nil
	}
	var out []Trailer
	for _, l := range lines[start:] {
		if strings.HasPrefix(l, "#") {
			continue
		}
		if isSpace(l) {
			continue
		}
		if (l[0] == ' ' || l[0] == '\t') && len(out) > 0 {
			out[len(out)-1].Value = strings.TrimSpace(out[len(out)-1].Value + " " + strings.TrimSpace(l))
			continue
		}
		if sep := findSeparator(l); sep >= 1 {
			out = append(out, Trailer{Key: strings.TrimSpace(l[:sep]), Value: strings.TrimSpace(l[sep+1:])})
		}
	}
	return out
}

// messageLines splits message into lines, cut at a patch divider ("---"
// followed by whitespace) and without trailing blank or comment lines.
func messageLines(message string) []string {
	lines := strings.Split(strings.ReplaceAll(message, "\r\n", "\n"), "\n")
	for i, l := range lines {
		if strings.HasPrefix(l, "---") && (len(l) == 3 || l[3] == ' ' || l[3] == '\t') {
			lines = lines[:i]
			break
		}
	}
	for len(lines) > 0 {
		l := lines[len(lines)-1]
		if isSpace(l) || strings.HasPrefix(l, "#") {
			lines = lines[:len(lines)-1]
			continue
		}
		break
	}
	return lines
}

var gitGeneratedPrefixes = []string{"Signed-off-by: ", "(cherry picked from commit "}

// trailerBlockStart mirrors git's find_trailer_block_start.
func trailerBlockStart(lines []string) (int, bool) {
	endOfTitle := len(lines)
	for i, l := range lines {
		if strings.HasPrefix(l, "#") {
			continue
		}
		if isSpace(l) {
			endOfTitle = i
			break
		}
	}
	var (
		onlySpaces               = true
		recognizedPrefix         bool
		trailerLines, nonTrailer int
		possibleContinuation     int
	)
	for i := len(lines) - 1; i >= endOfTitle; i-- {
		l := lines[i]
		if strings.HasPrefix(l, "#") {
			nonTrailer += possibleContinuation
			possibleContinuation = 0
			continue
		}
		if isSpace(l) {
			if onlySpaces {
				continue
			}
			nonTrailer += possibleContinuation
			if recognizedPrefix && trailerLines*3 >= nonTrailer {
				return i + 1, true
			}
			if trailerLines > 0 && nonTrailer == 0 {
				return i + 1, true
			}
			return 0, false
		}
		onlySpaces = false
		generated := false
		for _, p := range gitGeneratedPrefixes {
			if strings.HasPrefix(l, p) {
				generated = true
			}
		}
		switch {
		case generated:
			trailerLines++
			possibleContinuation = 0
			recognizedPrefix = true
		case findSeparator(l) >= 1 && l[0] != ' ' && l[0] != '\t':
			trailerLines++
			possibleContinuation = 0
		case l[0] == ' ' || l[0] == '\t':
			possibleContinuation++
		default:
			nonTrailer += 1 + possibleContinuation
			possibleContinuation = 0
		}
	}
	return 0, false
}

// findSeparator mirrors git's find_separator for the default ":"
// separator: a token of letters, digits and '-', optional blanks, then ':'.
func findSeparator(l string) int {
	blank := false
	for i := 0; i < len(l); i++ {
		c := l[i]
		if c == ':' {
			return i
		}
		if !blank && (isAlnum(c) || c == '-') {
			continue
		}
		if i != 0 && (c == ' ' || c == '\t') {
			blank = true
			continue
		}
		break
	}
	return -1
}

func isAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

func isSpace(l string) bool { return strings.TrimSpace(l) == "" }
