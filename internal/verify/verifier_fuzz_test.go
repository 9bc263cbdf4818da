package verify

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzPR_V1_VerifierAnswer: whatever a verifier prints, only a valid
// answer can say addressed, every verdict says why in one bounded line,
// and a valid verdict written back as a line reads back as itself.
func FuzzPR_V1_VerifierAnswer(f *testing.F) {
	for _, s := range []string{
		okAnswer, "thinking...\n" + okAnswer + "\n\n", strings.Replace(okAnswer, `"addressed"`, `"not-addressed"`, 1),
		"", "looks addressed to me", okAnswer + "\nok", strings.Replace(okAnswer, `"addressed"`, `"yes"`, 1),
		strings.Replace(okAnswer, `"why":"the bound is now <="`, `"why":"  two\nlines "`, 1),
		strings.TrimSuffix(strings.Replace(okAnswer, `"addressed"`, `"not-addressed"`, 1), "}") + `,"VERDICT":"addressed"}`,
		`{"verdict":"addressed"}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, out string) {
		v := ParseVerdict(out)
		if v.Addressed && !v.Valid {
			t.Fatalf("addressed without a valid answer: %+v", v)
		}
		if v.Why == "" && !v.Valid || strings.ContainsAny(v.Why, "\r\n") || utf8.RuneCountInString(v.Why) > 500 {
			t.Fatalf("verdict of %q has why %q", out, v.Why)
		}
		if !v.Valid {
			return
		}
		verdict, why := "not-addressed", v.Why
		if v.Addressed {
			verdict = "addressed"
		}
		if why == "" {
			why = "-" // the schema wants one; a blank why flattens to ""
		}
		line, _ := json.Marshal(map[string]any{"status": "complete", "next_action": "", "needs_extension_minutes": 0,
			"summary": "s", "files_changed": []string{}, "verdict": verdict, "why": why})
		back := ParseVerdict(string(line))
		if back.Why == "-" && v.Why == "" {
			back.Why = ""
		}
		if back != v {
			t.Fatalf("verdict of %q does not read back as itself: %+v → %+v", out, v, back)
		}
	})
}

// TestPR_V1_AKeyInOtherCaseIsRefused: encoding/json matches keys
// ignoring case; an answer the schema read as not-addressed must not
// decode as the "VERDICT": "addressed" after it.
func TestPR_V1_AKeyInOtherCaseIsRefused(t *testing.T) {
	line := strings.TrimSuffix(strings.Replace(okAnswer, `"addressed"`, `"not-addressed"`, 1), "}") + `,"VERDICT":"addressed"}`
	if v := ParseVerdict(line); v.Valid || v.Addressed {
		t.Fatalf("ParseVerdict(%s) = %+v, want no answer", line, v)
	}
}
