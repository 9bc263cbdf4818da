package classify

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzPR_S5_JudgeAnswer: whatever a judge prints, the answer names each
// asked comment once, in order; an invalid answer leaves every comment
// Unclear; a valid one holds only known verdicts and one-line reasons;
// and a valid answer written back as a line reads back as itself.
func FuzzPR_S5_JudgeAnswer(f *testing.F) {
	for _, s := range []string{
		answer("c1", "structural", "c2", "minor"),
		answer("c2", "minor", "c1", "unclear"),
		answer("c1", "structural"),
		answer("c1", "structural", "c2", "minor", "c3", "minor"),
		answer("c1", "structural", "c1", "minor"),
		"thinking\n" + answer("c1", "structural", "c2", "minor") + "\n\n",
		answer("c1", "structural", "c2", "minor") + "\nok",
		strings.Replace(answer("c1", "structural", "c2", "minor"), `"reason":"because"`, `"reason":"  two\nlines "`, 1),
		strings.Replace(answer("c1", "structural", "c2", "minor"), `"verdicts"`, `"Verdicts":[],"verdicts"`, 1),
		"", "{", `{"verdicts":[]}`,
	} {
		f.Add(s)
	}
	ids := []string{"c1", "c2"}
	f.Fuzz(func(t *testing.T, out string) {
		a := ParseAnswer(out, ids)
		if len(a.Verdicts) != len(ids) {
			t.Fatalf("answer to %q has %d verdicts for %d comments", out, len(a.Verdicts), len(ids))
		}
		for i, v := range a.Verdicts {
			if v.ID != ids[i] {
				t.Fatalf("verdict %d of %q is about %q, want %q", i, out, v.ID, ids[i])
			}
			if !slices.Contains([]Verdict{Structural, Minor, Unclear}, v.Verdict) {
				t.Fatalf("answer to %q holds verdict %q", out, v.Verdict)
			}
			if !a.Valid && v.Verdict != Unclear {
				t.Fatalf("invalid answer to %q still decides %s", out, v.Verdict)
			}
			if strings.ContainsAny(v.Reason, "\n\r") || utf8.RuneCountInString(v.Reason) > 500 {
				t.Fatalf("reason %q is not one bounded line", v.Reason)
			}
		}
		if !a.Valid {
			if a.Why == "" {
				t.Fatalf("invalid answer to %q says no why", out)
			}
			return
		}
		vs := make([]map[string]string, 0, len(a.Verdicts))
		for _, v := range a.Verdicts {
			reason := v.Reason
			if reason == "" {
				reason = "-" // the schema wants one; a blank reason flattens to ""
			}
			vs = append(vs, map[string]string{"id": v.ID, "verdict": string(v.Verdict), "reason": reason})
		}
		line, _ := json.Marshal(map[string]any{"status": "complete", "next_action": "", "needs_extension_minutes": 0,
			"summary": a.Summary, "files_changed": []string{}, "verdicts": vs})
		back := ParseAnswer(string(line), ids)
		for i := range back.Verdicts {
			if a.Verdicts[i].Reason == "" && back.Verdicts[i].Reason == "-" {
				back.Verdicts[i].Reason = ""
			}
		}
		if !back.Valid || !reflect.DeepEqual(a.Verdicts, back.Verdicts) || a.Summary != back.Summary {
			t.Fatalf("answer to %q does not read back as itself:\n got %+v\nback %+v", out, a, back)
		}
	})
}

// TestPR_S5_AKeyInOtherCaseIsRefused: encoding/json matches keys
// ignoring case; a line the schema read one way must not decode another.
func TestPR_S5_AKeyInOtherCaseIsRefused(t *testing.T) {
	line := strings.TrimSuffix(answer("c1", "structural"), "}") + `,"VERDICTS":[{"id":"c1","verdict":"minor","reason":"x"}]}`
	if a := ParseAnswer(line, []string{"c1"}); a.Valid {
		t.Fatalf("ParseAnswer(%s) = %+v, want invalid", line, a)
	}
}
