package review

import (
	"strings"
	"testing"
)

// TestPR_S4_ParseIsFailClosed: only a valid array is an answer, and only an
// empty one is clean; everything else leaves the angle not parsed.
func TestPR_S4_ParseIsFailClosed(t *testing.T) {
	const one = `[{"file":"a.go","line_range":[3,4],"summary":"leaks the file handle","verdict":"structural"}]`
	cases := []struct {
		name     string
		out      string
		parsed   bool
		findings int
	}{
		{"literal empty array is clean", "thinking...\n[]\n", true, 0},
		{"empty array with blanks around", "\n  [ ]  \n\n", true, 0},
		{"one finding", "reviewed\n" + one + "\n", true, 1},
		{"prose after the array is tolerated", one + "\nThat's all.\n", true, 1},
		{"inside a code fence", "```json\n" + one + "\n```\n", true, 1},
		{"no output", "", false, 0},
		{"only prose", "Looks good to me, no issues found.\n", false, 0},
		{"garbage", "\x00\x01 %%% }{", false, 0},
		{"half JSON", `[{"file":"a.go","line_range":[3,4],"summ`, false, 0},
		{"object instead of array", `{"findings":[]}`, false, 0},
		{"null", "null", false, 0},
		{"wrong verdict", `[{"file":"a.go","line_range":[1,1],"summary":"x","verdict":"major"}]`, false, 0},
		{"echoed placeholder verdict", `[{"file":"a.go","line_range":[1,1],"summary":"x","verdict":"structural|minor"}]`, false, 0},
		{"missing verdict", `[{"file":"a.go","summary":"x"}]`, false, 0},
		{"missing summary", `[{"file":"a.go","line_range":[1,2],"verdict":"minor"}]`, false, 0},
		{"blank summary", `[{"file":"a.go","summary":"  ","verdict":"minor"}]`, false, 0},
		{"element not an object", `["a.go: bad"]`, false, 0},
		{"summary not a string", `[{"summary":3,"verdict":"minor"}]`, false, 0},
		{"line_range of one number", `[{"file":"a.go","line_range":[3],"summary":"x","verdict":"minor"}]`, false, 0},
		{"line_range negative", `[{"file":"a.go","line_range":[-1,2],"summary":"x","verdict":"minor"}]`, false, 0},
		{"line_range fractional", `[{"file":"a.go","line_range":[1.5,2],"summary":"x","verdict":"minor"}]`, false, 0},
		{"no file: about the whole change", `[{"file":null,"line_range":null,"summary":"no tests at all","verdict":"structural"}]`, true, 1},
		{"verdict case is not a contract breach", `[{"summary":"x","verdict":"Minor"}]`, true, 1},
		// The answer is the last array line: an earlier draft never counts.
		{"last array line wins over an earlier finding", one + "\nOn reflection that was wrong.\n[]\n", true, 0},
		{"a broken last array is not rescued by an earlier clean one", "[]\n" + `[{"file":"a.go","summary":"x","verdict":"bogus"}]`, false, 0},
		{"a truncated last array is not rescued by an earlier one", "[]\n[{\"file\":", false, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ar := ParseAnswer("edge-cases", c.out)
			if ar.Parsed != c.parsed || len(ar.Findings) != c.findings {
				t.Fatalf("ParseAnswer(%q) = parsed %v, %d findings (why %q); want parsed %v, %d findings",
					c.out, ar.Parsed, len(ar.Findings), ar.Why, c.parsed, c.findings)
			}
			if !ar.Parsed && ar.Why == "" {
				t.Error("an unparsed answer must say why")
			}
			if ar.Angle != "edge-cases" {
				t.Errorf("angle = %q", ar.Angle)
			}
		})
	}
}

func TestPR_S4_ParseReadsTheFields(t *testing.T) {
	ar := ParseAnswer("a", `[{"file":"./pkg/x.go","line_range":[9,4],"summary":" wrong sign ","verdict":"structural","extra":1}]`)
	if !ar.Parsed || len(ar.Findings) != 1 {
		t.Fatalf("%+v", ar)
	}
	f := ar.Findings[0]
	want := Finding{Angle: "a", File: "pkg/x.go", StartLine: 4, EndLine: 9, Summary: "wrong sign", Verdict: VerdictStructural}
	if f != want {
		t.Errorf("finding = %+v, want %+v", f, want)
	}
}

// TestPR_S4_UnparsedAngleIsStructural: an angle without an answer adds one
// structural finding without a file and degrades the review.
func TestPR_S4_UnparsedAngleIsStructural(t *testing.T) {
	res := assemble("abc", "x", []AngleResult{
		ParseAnswer("correctness-leak", "[]"),
		ParseAnswer("edge-cases", "I could not decide."),
		ParseAnswer("test-quality", `[{"file":"a_test.go","line_range":[1,1],"summary":"asserts nothing","verdict":"minor"}]`),
	})
	if !res.Degraded || res.Clean() {
		t.Fatalf("degraded %v clean %v, want a degraded, unclean review", res.Degraded, res.Clean())
	}
	if len(res.Findings) != 2 || res.Structural() != 1 {
		t.Fatalf("findings %+v", res.Findings)
	}
	u := res.Findings[0]
	if u.Verdict != VerdictStructural || u.File != "" || u.Summary != "review could not be parsed (angle edge-cases)" {
		t.Errorf("unparsed finding = %+v", u)
	}
	if clean := assemble("abc", "x", []AngleResult{ParseAnswer("a", "[]"), ParseAnswer("b", "[]")}); !clean.Clean() {
		t.Errorf("all-[] review = %+v, want clean", clean)
	}
}

func TestPR_S4_ParseAngles(t *testing.T) {
	as, err := ParseAngles(" correctness-leak, security ")
	if err != nil {
		t.Fatal(err)
	}
	if len(as) != 2 || as[0] != DefaultAngles()[0] || as[1].Name != "security" || !strings.Contains(as[1].Focus, "security") {
		t.Errorf("angles = %+v", as)
	}
	if as, err := ParseAngles(DefaultAngleNames()); err != nil || len(as) != 3 {
		t.Errorf("defaults: %v %v", as, err)
	}
	for _, bad := range []string{"", "a,,b", "a,a", "bad name", strings.Repeat("x", 65), "a/b"} {
		if _, err := ParseAngles(bad); err == nil {
			t.Errorf("ParseAngles(%q) accepted", bad)
		}
	}
}
