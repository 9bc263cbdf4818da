package plan

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzPLAN_1_ReviewAnswer: whatever a task reviewer prints, an answer
// read without error has issues of known severity with one-line,
// bounded summaries, and written back as a line reads back as itself;
// an answer that fails is never an approval.
func FuzzPLAN_1_ReviewAnswer(f *testing.F) {
	ok := `{"status":"complete","next_action":"","needs_extension_minutes":0,"summary":"fine","files_changed":[],"approved":false,"issues":[{"severity":"minor","summary":"naming"}]}`
	for _, s := range []string{
		ok,
		strings.Replace(ok, `"approved":false`, `"approved":true`, 1),
		strings.Replace(ok, `"approved":false,`, "", 1),
		strings.Replace(ok, `"severity":"minor"`, `"severity":"critical","file":"a.go","line":3`, 1),
		strings.Replace(ok, `"approved":false`, `"approved":false,"Approved":true`, 1),
		strings.Replace(ok, `"summary":"naming"`, `"summary":"  two\nlines "`, 1),
		"notes\n" + ok + "\n\n", ok + "\nok", "", "{", `{"approved":true}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, out string) {
		r, err := ParseReview(out)
		if err != nil {
			if r.Valid || r.Approved {
				t.Fatalf("ParseReview(%q) failed (%v) but is %+v", out, err, r)
			}
			return
		}
		if !r.Valid || r.Issues == nil || strings.ContainsAny(r.Summary, "\r\n") {
			t.Fatalf("ParseReview(%q) = %+v", out, r)
		}
		for _, i := range r.Issues {
			if !slices.Contains([]string{"critical", "important", "minor"}, i.Severity) ||
				strings.ContainsAny(i.Summary, "\r\n") || utf8.RuneCountInString(i.Summary) > 1000 || i.Line < 0 {
				t.Fatalf("ParseReview(%q) holds issue %+v", out, i)
			}
		}
		issues := make([]map[string]any, 0, len(r.Issues))
		for _, i := range r.Issues {
			m := map[string]any{"severity": i.Severity, "summary": i.Summary}
			if m["summary"] == "" {
				m["summary"] = "-"
			}
			if i.File != "" {
				m["file"] = i.File
			}
			if i.Line != 0 {
				m["line"] = i.Line
			}
			issues = append(issues, m)
		}
		line, _ := json.Marshal(map[string]any{"status": "complete", "next_action": "", "needs_extension_minutes": 0,
			"summary": r.Summary, "files_changed": []string{}, "approved": r.Approved, "issues": issues})
		back, err := ParseReview(string(line))
		for i := range back.Issues {
			if r.Issues[i].Summary == "" && back.Issues[i].Summary == "-" {
				back.Issues[i].Summary = ""
			}
		}
		if err != nil || !reflect.DeepEqual(r, back) {
			t.Fatalf("review of %q does not read back as itself:\n got %+v\nback %+v (%v)", out, r, back, err)
		}
	})
}

// TestPLAN_1_AKeyInOtherCaseIsRefused: encoding/json matches keys
// ignoring case; a review the schema read as not approved must not
// decode as the "Approved": true after it.
func TestPLAN_1_AKeyInOtherCaseIsRefused(t *testing.T) {
	line := `{"status":"complete","next_action":"","needs_extension_minutes":0,"summary":"fine","files_changed":[],"approved":false,"issues":[],"Approved":true}`
	if r, err := ParseReview(line); err == nil {
		t.Fatalf("ParseReview(%s) = %+v, want an error", line, r)
	}
}
