package suggest

import (
	"slices"
	"strings"
)

// textFile is a file as lines that remember their own line endings, so an
// edit touches nothing but the lines it replaces.
type textFile struct {
	lines []string // content without terminator
	terms []string // "\n", "\r\n" or "" (only for a last line without newline)
	eol   string   // ending for new lines: the file's first one, "\n" if none
}

func splitFile(s string) *textFile {
	f := &textFile{eol: "\n"}
	first := true
	for s != "" {
		i := strings.IndexByte(s, '\n')
		if i < 0 {
			f.lines = append(f.lines, s)
			f.terms = append(f.terms, "")
			break
		}
		line, term := s[:i], "\n"
		if strings.HasSuffix(line, "\r") {
			line, term = line[:len(line)-1], "\r\n"
		}
		if first {
			f.eol, first = term, false
		}
		f.lines = append(f.lines, line)
		f.terms = append(f.terms, term)
		s = s[i+1:]
	}
	return f
}

// replace puts repl in place of lines start..end (1-based, inclusive).
// New lines take the ending of the line they replace where there is one,
// else the file's; the last line of the file keeps its lack of a newline.
func (f *textFile) replace(start, end int, repl []string) {
	lastTerm := f.terms[end-1]
	terms := make([]string, len(repl))
	for i := range repl {
		switch {
		case i == len(repl)-1:
			terms[i] = lastTerm
		case start-1+i <= end-1 && f.terms[start-1+i] != "":
			terms[i] = f.terms[start-1+i]
		default:
			terms[i] = f.eol
		}
	}
	atEOF := end == len(f.lines)
	f.lines = slices.Replace(f.lines, start-1, end, repl...)
	f.terms = slices.Replace(f.terms, start-1, end, terms...)
	// Deleting the last lines of a file without a final newline must not
	// give it one.
	if len(repl) == 0 && atEOF && lastTerm == "" && len(f.terms) > 0 {
		f.terms[len(f.terms)-1] = ""
	}
}

func (f *textFile) String() string {
	var b strings.Builder
	for i, l := range f.lines {
		b.WriteString(l)
		b.WriteString(f.terms[i])
	}
	return b.String()
}
