package classify

import (
	"regexp"
	"regexp/syntax"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"
)

// Most rules find nothing in most comments, and Go's regexp engine spends
// tens of microseconds proving that for a long alternation of words. A
// fastRegexp answers "no match" first, without running the engine, when
// its input holds none of the literals that every match of its pattern
// must contain (derived from the pattern itself by requiredLiterals, so
// a rule edited later stays right); otherwise it runs the regexp as
// written. Its answers are the regexp's answers, only sooner
// (TestPR_S5_PrefilterIsExact).
//
// The pattern is compiled and its literals derived on first use, not
// while the package initialises: every converge process links this
// package, and most (a supervisor, `converge status`, the start that
// re-execs itself to hide a token) never classify a comment.
type fastRegexp struct {
	pattern string
	once    sync.Once
	re      *regexp.Regexp
	// lits: every match contains one of them. nil when the pattern gives
	// no such set (it can match the empty string, or a class too wide):
	// then the regexp always runs.
	lits []string
	// byFirst holds lits by their first byte, for one pass over the
	// input when there are many.
	byFirst *[256][]string
}

// compiled is every fastRegexp of the package, for the tests that hold
// each to its regexp and compile each; written only while the package
// initialises.
var compiled []*fastRegexp

func mustCompile(pattern string) *fastRegexp {
	r := &fastRegexp{pattern: pattern}
	compiled = append(compiled, r)
	return r
}

// regexp is the compiled pattern; a pattern that does not compile
// panics here, and TestPR_S5_PrefilterIsExact compiles every one.
func (r *fastRegexp) regexp() *regexp.Regexp {
	r.once.Do(r.compile)
	return r.re
}

func (r *fastRegexp) compile() {
	re := regexp.MustCompile(r.pattern)
	parsed, err := syntax.Parse(r.pattern, syntax.Perl)
	if err != nil {
		panic(err) // MustCompile above accepted it
	}
	lits, ok := requiredLiterals(parsed.Simplify())
	if !ok {
		lits = nil
	}
	r.re, r.lits = re, lits
	if len(lits) > manyLiterals {
		r.byFirst = new([256][]string)
		for _, l := range lits {
			r.byFirst[l[0]] = append(r.byFirst[l[0]], l)
		}
	}
}

// String is the pattern, as regexp.Regexp's.
func (r *fastRegexp) String() string { return r.pattern }

// manyLiterals: above it, one pass over the input beats a search per
// literal.
const manyLiterals = 4

// mayMatch is false only when s cannot hold a match.
func (r *fastRegexp) mayMatch(s string) bool {
	r.once.Do(r.compile)
	if r.lits == nil {
		return true
	}
	if r.byFirst != nil {
		for i := 0; i < len(s); i++ {
			for _, l := range r.byFirst[s[i]] {
				if len(s)-i >= len(l) && s[i:i+len(l)] == l {
					return true
				}
			}
		}
		return false
	}
	for _, l := range r.lits {
		if strings.Contains(s, l) {
			return true
		}
	}
	return false
}

func (r *fastRegexp) FindString(s string) string {
	if !r.mayMatch(s) {
		return ""
	}
	return r.re.FindString(s)
}

func (r *fastRegexp) MatchString(s string) bool {
	return r.mayMatch(s) && r.re.MatchString(s)
}

func (r *fastRegexp) FindAllString(s string, n int) []string {
	if !r.mayMatch(s) {
		return nil
	}
	return r.re.FindAllString(s, n)
}

func (r *fastRegexp) FindAllStringSubmatch(s string, n int) [][]string {
	if !r.mayMatch(s) {
		return nil
	}
	return r.re.FindAllStringSubmatch(s, n)
}

func (r *fastRegexp) ReplaceAllString(src, repl string) string {
	if !r.mayMatch(src) {
		return src
	}
	return r.re.ReplaceAllString(src, repl)
}

// maxClassRunes bounds a character class turned into single-rune literals;
// maxLiterals bounds a set of prefixes (a product of sets grows fast), and
// maxRequired a set of required literals (a long alternation of words
// needs one per word; scanning for them is still cheap, see mayMatch).
const (
	maxClassRunes = 10
	maxLiterals   = 64
	maxRequired   = 512
)

// requiredLiterals returns a set of strings such that every match of re
// contains at least one of them; ok is false when re gives none (it can
// match the empty string, or only through what a literal cannot name: a
// wide class, any character, a case-folded literal). Of the sets it can
// prove, it keeps the most selective (see better).
func requiredLiterals(re *syntax.Regexp) (lits []string, ok bool) {
	consider := func(l []string, ok bool) {
		if ok && len(l) > 0 && len(l) <= maxRequired && !slices.Contains(l, "") && (lits == nil || better(l, lits)) {
			lits = l
		}
	}
	if ps, _ := prefixes(re); len(ps) > 0 {
		consider(minimalSet(ps), true)
	}
	switch re.Op {
	case syntax.OpCapture, syntax.OpPlus:
		consider(requiredLiterals(re.Sub[0]))
	case syntax.OpRepeat:
		if re.Min >= 1 {
			consider(requiredLiterals(re.Sub[0]))
		}
	case syntax.OpAlternate:
		// A match is a match of one branch: every branch must name one.
		var all []string
		for _, sub := range re.Sub {
			l, ok := requiredLiterals(sub)
			if !ok {
				all = nil
				break
			}
			all = append(all, l...)
		}
		consider(minimalSet(all), all != nil)
	case syntax.OpConcat:
		// A match contains a match of every part, and of every run of
		// parts: each gives a set.
		for j, sub := range re.Sub {
			consider(requiredLiterals(sub))
			if ps, _ := prefixes(&syntax.Regexp{Op: syntax.OpConcat, Sub: re.Sub[j:]}); len(ps) > 0 {
				consider(minimalSet(ps), true)
			}
		}
	}
	return lits, lits != nil
}

// prefixes returns a set of strings every match of re starts with (at
// worst {""}); exact says every match is one of them.
func prefixes(re *syntax.Regexp) (set []string, exact bool) {
	switch re.Op {
	case syntax.OpLiteral:
		if re.Flags&syntax.FoldCase != 0 || slices.Contains(re.Rune, utf8.RuneError) {
			return []string{""}, false
		}
		return []string{string(re.Rune)}, true
	case syntax.OpCharClass:
		n := 0
		for i := 0; i+1 < len(re.Rune); i += 2 {
			n += int(re.Rune[i+1]-re.Rune[i]) + 1
			if n > maxClassRunes {
				return []string{""}, false
			}
		}
		for i := 0; i+1 < len(re.Rune); i += 2 {
			for r := re.Rune[i]; r <= re.Rune[i+1]; r++ {
				if r == utf8.RuneError {
					return []string{""}, false
				}
				set = append(set, string(r))
			}
		}
		if len(set) == 0 {
			return []string{""}, false
		}
		return set, true
	case syntax.OpEmptyMatch, syntax.OpBeginLine, syntax.OpEndLine, syntax.OpBeginText, syntax.OpEndText,
		syntax.OpWordBoundary, syntax.OpNoWordBoundary:
		// Assertions match no text.
		return []string{""}, true
	case syntax.OpCapture:
		return prefixes(re.Sub[0])
	case syntax.OpPlus:
		set, _ = prefixes(re.Sub[0])
		return set, false
	case syntax.OpRepeat:
		if re.Min >= 1 {
			set, _ = prefixes(re.Sub[0])
			return set, false
		}
	case syntax.OpQuest:
		set, exact = prefixes(re.Sub[0])
		return append(slices.Clone(set), ""), exact
	case syntax.OpAlternate:
		exact = true
		for _, sub := range re.Sub {
			ps, ex := prefixes(sub)
			set, exact = append(set, ps...), exact && ex
		}
		if len(set) > maxLiterals {
			return []string{""}, false
		}
		return set, exact
	case syntax.OpConcat:
		set = []string{""}
		for _, sub := range re.Sub {
			ps, ex := prefixes(sub)
			if len(set)*len(ps) > maxLiterals {
				return set, false
			}
			next := make([]string, 0, len(set)*len(ps))
			for _, a := range set {
				for _, b := range ps {
					next = append(next, a+b)
				}
			}
			set = next
			if !ex {
				return set, false
			}
		}
		return set, true
	}
	return []string{""}, false
}

// better: the set whose shortest literal is longer, then the smaller.
func better(a, b []string) bool {
	if sa, sb := shortest(a), shortest(b); sa != sb {
		return sa > sb
	}
	return len(a) < len(b)
}

func shortest(ls []string) int {
	n := -1
	for _, l := range ls {
		if n < 0 || len(l) < n {
			n = len(l)
		}
	}
	return n
}

// minimalSet drops duplicates and every literal that contains another:
// the set is as necessary, and cheaper to test.
func minimalSet(ls []string) []string {
	ls = slices.Clone(ls)
	slices.SortFunc(ls, func(a, b string) int {
		if len(a) != len(b) {
			return len(a) - len(b)
		}
		return strings.Compare(a, b)
	})
	var out []string
	for _, l := range ls {
		if !slices.ContainsFunc(out, func(o string) bool { return strings.Contains(l, o) }) {
			out = append(out, l)
		}
	}
	return out
}
