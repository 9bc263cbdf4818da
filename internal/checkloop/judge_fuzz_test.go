package checkloop

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// FuzzLOOP_2_JudgeVerdict: whatever a loop judge prints, a verdict read
// without error is done or not-done with at least one non-empty reason,
// and written back as a line it reads back as itself; an error never
// comes with a done verdict.
func FuzzLOOP_2_JudgeVerdict(f *testing.F) {
	for _, s := range []string{
		`thinking...` + "\n" + `{"verdict":"done","reasons":["all tests pass"]}` + "\n\n",
		`{"verdict":"not-done","reasons":["Sub is wrong"],"missing":["fix Sub"],"cost_usd":0.12}`,
		`ALL TESTS PASS`, ``, `{"verdict":"done"}`, `{"verdict":"done","reasons":[]}`,
		`{"verdict":"yes","reasons":["ok"]}`, `{"verdict":"done","reasons":["ok"]} trailing`,
		`{"verdict":"done","reasons":["ok"]}` + "\nok", `{"verdict":"done","reasons":["ok"],"cost_usd":-1}`,
		`{"verdict":"not-done","reasons":["x"],"Verdict":"done"}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, out string) {
		v, line, err := ParseVerdict(out)
		if err != nil {
			if v.Verdict != "" {
				t.Fatalf("ParseVerdict(%q) failed (%v) but gave verdict %q", out, err, v.Verdict)
			}
			return
		}
		if !slices.Contains([]string{"done", "not-done"}, v.Verdict) || len(v.Reasons) == 0 || slices.Contains(v.Reasons, "") {
			t.Fatalf("ParseVerdict(%q) = %+v", out, v)
		}
		if strings.Contains(line, "\n") || !strings.Contains(out, line) {
			t.Fatalf("line %q read is not a line of %q", line, out)
		}
		b, _ := json.Marshal(v)
		back, _, err := ParseVerdict(string(b))
		if len(v.Missing) == 0 && len(back.Missing) == 0 {
			v.Missing, back.Missing = nil, nil // omitempty drops an empty list
		}
		if err != nil || !reflect.DeepEqual(v, back) {
			t.Fatalf("verdict of %q does not read back as itself: %+v → %+v (%v)", out, v, back, err)
		}
	})
}

// TestLOOP_2_AKeyInOtherCaseIsRefused: encoding/json matches keys
// ignoring case; a verdict the schema read as not-done must not decode
// as the "Verdict": "done" after it.
func TestLOOP_2_AKeyInOtherCaseIsRefused(t *testing.T) {
	line := `{"verdict":"not-done","reasons":["Sub is wrong"],"Verdict":"done"}`
	if v, _, err := ParseVerdict(line); err == nil {
		t.Fatalf("ParseVerdict(%s) = %+v, want an error", line, v)
	}
}
