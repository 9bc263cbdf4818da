package review

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// FuzzPR_S4_ParseAnswer: whatever a review angle prints, a parsed answer
// holds only findings with a summary, a known verdict, an ordered line
// range and a file without "./", and written back as an array line it
// reads back as itself; an answer not parsed holds no findings and says
// why.
func FuzzPR_S4_ParseAnswer(f *testing.F) {
	const one = `[{"file":"a.go","line_range":[3,4],"summary":"leaks the file handle","verdict":"structural"}]`
	for _, s := range []string{
		"thinking...\n[]\n", "\n  [ ]  \n\n", "reviewed\n" + one + "\n", one + "\nThat's all.\n", "```json\n" + one + "\n```\n",
		"", "Looks good to me, no issues found.\n", "\x00\x01 %%% }{", `[{"file":"a.go","line_range":[3,4],"summ`,
		`{"findings":[]}`, "null", `[{"file":"a.go","line_range":[1,1],"summary":"x","verdict":"major"}]`,
		`[{"file":"a.go","summary":"x"}]`, `[{"file":"a.go","summary":"  ","verdict":"minor"}]`, `["a.go: bad"]`,
		`[{"file":"a.go","line_range":[-1,2],"summary":"x","verdict":"minor"}]`, `[{"file":"a.go","line_range":[1.5,2],"summary":"x","verdict":"minor"}]`,
		`[{"file":null,"line_range":null,"summary":"no tests at all","verdict":"structural"}]`, `[{"summary":"x","verdict":"Minor"}]`,
		`[{"file":"./b.go","line_range":[9,2],"summary":"reversed","verdict":"minor"}]`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, out string) {
		ar := ParseAnswer("logic", out)
		if ar.Angle != "logic" {
			t.Fatalf("angle of %q is %q", out, ar.Angle)
		}
		if !ar.Parsed {
			if len(ar.Findings) > 0 || ar.Why == "" {
				t.Fatalf("unparsed answer of %q is %+v", out, ar)
			}
			return
		}
		elems := make([]map[string]any, 0, len(ar.Findings))
		for _, fd := range ar.Findings {
			if fd.Angle != "logic" || fd.Summary == "" || fd.Summary != strings.TrimSpace(fd.Summary) ||
				!slices.Contains([]string{VerdictStructural, VerdictMinor}, fd.Verdict) ||
				fd.StartLine < 0 || fd.StartLine > fd.EndLine || strings.HasPrefix(fd.File, "./") || fd.File != strings.TrimSpace(fd.File) {
				t.Fatalf("answer %q holds finding %+v", out, fd)
			}
			el := map[string]any{"summary": fd.Summary, "verdict": fd.Verdict}
			if fd.File != "" {
				el["file"] = fd.File
			}
			if fd.StartLine != 0 || fd.EndLine != 0 {
				el["line_range"] = []int{fd.StartLine, fd.EndLine}
			}
			elems = append(elems, el)
		}
		line, _ := json.Marshal(elems)
		back := ParseAnswer("logic", "prose\n"+string(line))
		if !back.Parsed || !reflect.DeepEqual(ar.Findings, back.Findings) {
			t.Fatalf("answer %q does not read back as itself:\n got %+v\nback %+v", out, ar, back)
		}
	})
}

// FuzzPR_S4_SummaryMarker: a summary comment's marker is read only from
// its last non-empty line; a marker that reads gives back a marker that
// reads the same, and text after it hides it.
func FuzzPR_S4_SummaryMarker(f *testing.F) {
	for _, s := range []string{
		"## Local review\n\nclean\n\n" + Marker("abc123", 2) + "\n", Marker("0123456789abcdef0123456789abcdef01234567", 1),
		"> " + Marker("abc", 1), Marker("abc", 1) + "\nmore", "<!-- converge:local-review head=x round=999999999 -->",
		"<!-- converge:local-review head= round=1 -->", "",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		head, round, ok := ParseSummaryMarker(body)
		if !ok {
			if head != "" || round != 0 {
				t.Fatalf("%q: no marker, yet head %q round %d", body, head, round)
			}
			return
		}
		if head == "" || round < 0 {
			t.Fatalf("%q: marker with head %q round %d", body, head, round)
		}
		h2, r2, ok2 := ParseSummaryMarker("text\n" + Marker(head, round) + "\n")
		if !ok2 || h2 != head || r2 != round {
			t.Fatalf("%q: Marker(%q, %d) reads as %q %d %v", body, head, round, h2, r2, ok2)
		}
		if _, _, ok := ParseSummaryMarker(body + "\nan answer below"); ok {
			t.Fatalf("%q: a marker followed by text still reads", body)
		}
	})
}
