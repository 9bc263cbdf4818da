package agent

import (
	"slices"
	"strings"
	"testing"
	"time"
)

const validLine = `{"status":"complete","next_action":"","needs_extension_minutes":0,"summary":"fixed","files_changed":["a.go"]}`

func TestIF5_ParseStatus(t *testing.T) {
	tests := []struct {
		name     string
		output   string
		want     Status
		reason   string
		concerns int
		files    []string
	}{
		{name: "valid record", output: "working...\n" + validLine + "\n", want: StatusComplete, files: []string{"a.go"}},
		{name: "valid record with trailing blank lines and CRLF", output: "log\r\n" + validLine + "\r\n\r\n  \n", want: StatusComplete, files: []string{"a.go"}},
		{name: "valid partial with optional fields",
			output: `{"status":"partial","next_action":"run tests","needs_extension_minutes":4,"summary":"half","files_changed":[],"concerns":["slow"],"reason":"time"}`,
			want:   StatusPartial, reason: "time", concerns: 1, files: []string{}},
		{name: "unknown extra property is allowed",
			output: `{"status":"blocked","next_action":"","needs_extension_minutes":0,"summary":"","files_changed":[],"reason":"no access","cost_usd":0.1}`,
			want:   StatusBlocked, reason: "no access", files: []string{}},
		{name: "last record wins over an earlier one",
			output: validLine + "\n" + `{"status":"blocked","next_action":"","needs_extension_minutes":0,"summary":"","files_changed":[],"reason":"later"}`,
			want:   StatusBlocked, reason: "later", files: []string{}},
		{name: "implementer DONE_WITH_CONCERNS agrees", want: StatusComplete, files: []string{},
			output: `{"status":"complete","next_action":"","needs_extension_minutes":0,"summary":"","files_changed":[],"implementer_status":"DONE_WITH_CONCERNS","concerns":["x"]}`, concerns: 1},
		{name: "implementer NEEDS_CONTEXT overrides complete", want: StatusBlocked, files: []string{}, concerns: 1,
			output: `{"status":"complete","next_action":"","needs_extension_minutes":0,"summary":"","files_changed":[],"implementer_status":"NEEDS_CONTEXT"}`},
		{name: "implementer BLOCKED overrides partial", want: StatusBlocked, files: []string{}, concerns: 1,
			output: `{"status":"partial","next_action":"x","needs_extension_minutes":1,"summary":"","files_changed":[],"implementer_status":"BLOCKED"}`},
		{name: "implementer DONE overrides blocked", want: StatusComplete, files: []string{}, concerns: 1,
			output: `{"status":"blocked","next_action":"","needs_extension_minutes":0,"summary":"","files_changed":[],"implementer_status":"DONE"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ParseStatus(tt.output)
			if got.Status != tt.want || got.Reason != tt.reason || len(got.Concerns) != tt.concerns {
				t.Fatalf("ParseStatus = %+v; want status %q reason %q %d concerns", got, tt.want, tt.reason, tt.concerns)
			}
			if !slices.Equal(got.FilesChanged, tt.files) || got.FilesChanged == nil {
				t.Errorf("files_changed = %#v, want %#v", got.FilesChanged, tt.files)
			}
		})
	}
}

func TestAG_T3_UnparseableIsBlocked(t *testing.T) {
	rec := func(mut string) string { return strings.Replace(validLine, `"status":"complete"`, mut, 1) }
	tests := []struct{ name, output string }{
		{"empty", ""},
		{"only blank lines", "\n  \n\r\n"},
		{"garbage", "I fixed everything, trust me!\n"},
		{"trailing text on a later line", validLine + "\nAll done.\n"},
		{"trailing text on the same line", validLine + " done\n"},
		{"leading text on the same line", "result: " + validLine},
		{"json array line", `[` + validLine + `]`},
		{"array after a valid record", validLine + "\n[1,2]\n"},
		{"json string line", `"complete"`},
		{"truncated object", validLine[:len(validLine)-1]},
		{"two objects on one line", validLine + validLine},
		{"invalid status enum", rec(`"status":"done"`)},
		{"status wrong case", rec(`"status":"Complete"`)},
		{"invalid implementer_status", strings.Replace(validLine, `}`, `,"implementer_status":"FINISHED"}`, 1)},
		{"missing status", rec(`"x":1`)},
		{"missing files_changed", strings.Replace(validLine, `,"files_changed":["a.go"]`, "", 1)},
		{"missing summary", strings.Replace(validLine, `"summary":"fixed",`, "", 1)},
		{"missing next_action", strings.Replace(validLine, `"next_action":"",`, "", 1)},
		{"missing needs_extension_minutes", strings.Replace(validLine, `"needs_extension_minutes":0,`, "", 1)},
		{"negative extension", strings.Replace(validLine, `"needs_extension_minutes":0`, `"needs_extension_minutes":-1`, 1)},
		{"fractional extension", strings.Replace(validLine, `"needs_extension_minutes":0`, `"needs_extension_minutes":1.5`, 1)},
		{"extension as string", strings.Replace(validLine, `"needs_extension_minutes":0`, `"needs_extension_minutes":"5"`, 1)},
		{"files_changed not strings", strings.Replace(validLine, `["a.go"]`, `[1]`, 1)},
		{"concerns not an array", strings.Replace(validLine, `}`, `,"concerns":"x"}`, 1)},
		{"null record", "null"},
		{"prompt echoed up to its example record", promptUpToExample(t)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ParseStatus(tt.output)
			if got.Status != StatusBlocked || got.Reason != ReasonUnparseable {
				t.Fatalf("ParseStatus(%q) = %+v; want blocked/unparseable", tt.output, got)
			}
			if got.Summary == "" || got.FilesChanged == nil {
				t.Errorf("record lacks detail: %+v", got)
			}
		})
	}
}

func TestAG_T1_Extend(t *testing.T) {
	partial := func(next string, need int) StatusRecord {
		return StatusRecord{Status: StatusPartial, NextAction: next, NeedsExtensionMinutes: need}
	}
	tests := []struct {
		name string
		rec  StatusRecord
		used int
		min  int
		ok   bool
	}{
		{"partial with next action", partial("run the tests", 4), 0, 4, true},
		{"capped at ten minutes", partial("refactor", 45), 0, 10, true},
		{"second extension", partial("refactor", 3), 1, 3, true},
		{"no third extension", partial("refactor", 3), 2, 0, false},
		{"blank next action", partial("  ", 3), 0, 0, false},
		{"no minutes asked", partial("refactor", 0), 0, 0, false},
		{"complete never extended", StatusRecord{Status: StatusComplete, NextAction: "x", NeedsExtensionMinutes: 5}, 0, 0, false},
		{"blocked never extended", StatusRecord{Status: StatusBlocked, NextAction: "x", NeedsExtensionMinutes: 5}, 0, 0, false},
		{"budget-exceeded without next action", StatusRecord{Status: StatusPartial, Reason: ReasonBudgetExceeded}, 0, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, ok := Extend(tt.rec, tt.used)
			if m != tt.min || ok != tt.ok {
				t.Errorf("Extend = (%d, %v), want (%d, %v)", m, ok, tt.min, tt.ok)
			}
		})
	}
}

// TestAG_T1_TaskExtended: the extending run is the same task with the
// granted minutes as its budget, counted in Extension, at most twice.
func TestAG_T1_TaskExtended(t *testing.T) {
	rec := StatusRecord{Status: StatusPartial, NextAction: "finish the parser", NeedsExtensionMinutes: 25}
	task := Task{Kind: TaskKindFix, Budget: 5 * time.Minute, Findings: []Finding{{ID: "C1"}}}
	next, ok := task.Extended(rec)
	if !ok || next.Budget != 10*time.Minute || next.Extension != 1 || len(next.Findings) != 1 {
		t.Fatalf("first extension = %+v, %v", next, ok)
	}
	// A fresh run on the tree the stopped one left: its prompt quotes
	// what the stopped run said remained, as data.
	p := RenderTaskPrompt(next)
	if !strings.Contains(p, "extension 1") || !strings.Contains(p, nextOpen) || !strings.Contains(p, dataPrefix+"finish the parser\n") {
		t.Errorf("extension prompt lacks the earlier run's next action:\n%s", p)
	}
	if next, ok = next.Extended(rec); !ok || next.Extension != 2 {
		t.Fatalf("second extension = %+v, %v", next, ok)
	}
	if _, ok = next.Extended(rec); ok {
		t.Error("a third extension was granted")
	}
	if _, ok = task.Extended(StatusRecord{Status: StatusComplete}); ok {
		t.Error("a complete run was extended")
	}
	if p := RenderTaskPrompt(next); !strings.Contains(p, "This run is extension 2 of an earlier run") || !strings.Contains(p, "You have 10m0s") {
		t.Errorf("the prompt of an extension does not say so:\n%s", p)
	}
	if p := RenderTaskPrompt(task); strings.Contains(p, "extension 0") || strings.Contains(p, "This run is extension") {
		t.Error("a first run's prompt speaks of an extension")
	}
}

// promptUpToExample is an agent that echoes its prompt and stops at the
// example record: that must not read as a finished run.
func promptUpToExample(t *testing.T) string {
	p := RenderTaskPrompt(Task{Findings: []Finding{{ID: "C1", Body: "fix"}}})
	i := strings.Index(p, `{"status"`)
	if i < 0 {
		t.Fatal("prompt has no example record")
	}
	j := strings.IndexByte(p[i:], '\n')
	return p[:i+j]
}
