package classify

import (
	"regexp/syntax"
	"slices"
	"strings"
	"testing"
)

// TestPR_S5_PrefilterIsExact: every rule's prefilter answers as its
// regexp does, on every labelled comment (body, prose, lower-cased, the
// code spans blanked, path and hunk) and on a sample match of every
// branch of every pattern set in other text: a prefilter that ruled out
// a match would change a verdict.
func TestPR_S5_PrefilterIsExact(t *testing.T) {
	var inputs []string
	add := func(c Comment) {
		p := newProse(c.Body)
		inputs = append(inputs, c.Body, p.lower, c.Path, c.DiffHunk)
	}
	for _, l := range loadDataSet(t) {
		add(l.Comment)
	}
	for _, r := range loadAllReal(t) {
		add(r.Comment)
	}
	if len(compiled) < 40 {
		t.Fatalf("%d patterns registered: mustCompile no longer records them", len(compiled))
	}
	samples := 0
	for _, r := range compiled {
		re, err := syntax.Parse(r.String(), syntax.Perl)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range sampleMatches(re.Simplify(), 400) {
			for _, s := range []string{m, " " + m + " ", "x. " + m + "\n", "`" + m + "`"} {
				if r.regexp().MatchString(s) {
					samples++
				}
				checkRuledOut(t, r, s)
			}
		}
		for _, s := range inputs {
			checkRuledOut(t, r, s)
		}
	}
	if samples < 1000 {
		t.Fatalf("only %d sample matches: the generator no longer reaches the patterns", samples)
	}
	// The methods answer from the prefilter only when it rules a match
	// out, and otherwise are the regexp's.
	for _, r := range compiled {
		for _, s := range inputs[:40] {
			checkExact(t, r, s)
		}
	}
}

// checkRuledOut: the prefilter rules out only text the regexp does not
// match (the property the methods rely on).
func checkRuledOut(t *testing.T, r *fastRegexp, s string) {
	t.Helper()
	if !r.mayMatch(s) && r.regexp().MatchString(s) {
		t.Fatalf("%s on %q: the prefilter (%q) rules out a match %q", r, s, r.lits, r.regexp().FindString(s))
	}
}

// FuzzPR_S5_PrefilterIsExact: the same on any text.
func FuzzPR_S5_PrefilterIsExact(f *testing.F) {
	for _, s := range []string{"nit: typo", "This can panic on a nil map", "chmod 0644 secrets", "```suggestion\nx := 1\n```", "LGTM 👍"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, r := range compiled {
			checkExact(t, r, s)
			checkExact(t, r, strings.ToLower(s))
		}
	})
}

func checkExact(t *testing.T, r *fastRegexp, s string) {
	t.Helper()
	if got, want := r.FindString(s), r.regexp().FindString(s); got != want {
		t.Fatalf("%s on %q: FindString %q, regexp %q", r, s, got, want)
	}
	if got, want := r.MatchString(s), r.regexp().MatchString(s); got != want {
		t.Fatalf("%s on %q: MatchString %v, regexp %v", r, s, got, want)
	}
	if got, want := r.FindAllString(s, -1), r.regexp().FindAllString(s, -1); !slices.Equal(got, want) {
		t.Fatalf("%s on %q: FindAllString %q, regexp %q", r, s, got, want)
	}
	if got, want := r.ReplaceAllString(s, "_"), r.regexp().ReplaceAllString(s, "_"); got != want {
		t.Fatalf("%s on %q: ReplaceAllString %q, regexp %q", r, s, got, want)
	}
	got, want := r.FindAllStringSubmatch(s, -1), r.regexp().FindAllStringSubmatch(s, -1)
	if len(got) != len(want) {
		t.Fatalf("%s on %q: FindAllStringSubmatch %q, regexp %q", r, s, got, want)
	}
}

// sampleMatches spells out up to limit strings re may match: each branch
// of an alternation, a class's first and last rune, a repetition zero,
// one and two times. Assertions are left to the callers' padding.
func sampleMatches(re *syntax.Regexp, limit int) []string {
	out := samples(re, limit)
	return out[:min(len(out), limit)]
}

func samples(re *syntax.Regexp, limit int) []string {
	switch re.Op {
	case syntax.OpLiteral:
		return []string{string(re.Rune)}
	case syntax.OpCharClass:
		if len(re.Rune) == 0 {
			return nil
		}
		out := []string{string(re.Rune[0]), string(re.Rune[len(re.Rune)-1])}
		for i := 0; i+1 < len(re.Rune) && len(out) < 12; i += 2 {
			out = append(out, string(re.Rune[i]))
		}
		return out
	case syntax.OpAnyChar, syntax.OpAnyCharNotNL:
		return []string{"a"}
	case syntax.OpCapture:
		return sampleMatches(re.Sub[0], limit)
	case syntax.OpStar, syntax.OpQuest, syntax.OpPlus, syntax.OpRepeat:
		sub := sampleMatches(re.Sub[0], limit)
		var out []string
		if re.Op == syntax.OpStar || re.Op == syntax.OpQuest || re.Op == syntax.OpRepeat && re.Min == 0 {
			out = append(out, "")
		}
		for _, s := range sub {
			out = append(out, s)
			if re.Op != syntax.OpQuest {
				out = append(out, s+s)
			}
		}
		return out
	case syntax.OpAlternate:
		var out []string
		for _, sub := range re.Sub {
			out = append(out, sampleMatches(sub, limit)...)
		}
		return out
	case syntax.OpConcat:
		out := []string{""}
		for _, sub := range re.Sub {
			var next []string
			bs := sampleMatches(sub, limit)
			for _, a := range out {
				for _, b := range bs {
					if len(next) < limit {
						next = append(next, a+b)
					}
				}
			}
			out = next
		}
		return out
	}
	return []string{""}
}

// TestPR_S5_RequiredLiterals: the sets the prefilter derives, on patterns
// of the shapes the rules use.
func TestPR_S5_RequiredLiterals(t *testing.T) {
	for _, tc := range []struct {
		pattern string
		want    []string // nil: no set, the regexp always runs
	}{
		{`\b(?:nit|nits|typos?)\b`, []string{"nit", "typo"}},
		{`\b(?:panic(?:s|ked)?|nil (?:pointer|map))\b`, []string{"panic", "nil map", "nil pointer"}},
		{`a?b`, []string{"b"}},
		{`x*`, nil},
		{`(?:foo|)`, nil},
		{`(?:foo|\w+)`, nil},
		{`0o?[0-7]?[67][0-7][4-7]`, nil}, // checked below
		{`(?i)abc`, nil},
		{`[67]x`, []string{"6x", "7x"}},
		{`\bfront[- ]?matter\b`, []string{"frontmatter", "front matter", "front-matter"}},
		{`\w+\.(?:go|py)\b`, []string{".go", ".py"}},
		{"`[^`\n]+`", []string{"`"}},
		{`^\s*(?:lgtm|looks good)`, []string{"lgtm", "looks good"}},
	} {
		re, err := syntax.Parse(tc.pattern, syntax.Perl)
		if err != nil {
			t.Fatal(err)
		}
		got, ok := requiredLiterals(re.Simplify())
		if tc.pattern == `0o?[0-7]?[67][0-7][4-7]` {
			// The set must hold for every mode it matches.
			for _, s := range []string{"0644", "0o777", "00666", "0o1755"} {
				if ok && !slices.ContainsFunc(got, func(l string) bool { return strings.Contains(s, l) }) {
					t.Errorf("%s: set %q misses %q", tc.pattern, got, s)
				}
			}
			continue
		}
		if tc.want == nil {
			if ok {
				t.Errorf("%s: set %q, want none", tc.pattern, got)
			}
			continue
		}
		slices.Sort(got)
		slices.Sort(tc.want)
		if !ok || !slices.Equal(got, tc.want) {
			t.Errorf("%s: set %q (%v), want %q", tc.pattern, got, ok, tc.want)
		}
	}
}
