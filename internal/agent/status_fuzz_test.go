package agent

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// FuzzIF_5_ParseStatus: whatever an agent prints, the record read is
// valid (a known status, files_changed never nil, implementer_status and
// status agreeing), trailing blank lines change nothing, and the record
// written back as one line reads back as itself (the parse is a fixed
// point, so nothing converge stores can read differently later).
func FuzzIF_5_ParseStatus(f *testing.F) {
	for _, s := range []string{
		validLine,
		`{"status":"partial","next_action":"run tests","needs_extension_minutes":4,"summary":"half","files_changed":[],"concerns":["slow"],"reason":"time"}`,
		`{"status":"blocked","next_action":"","needs_extension_minutes":0,"summary":"","files_changed":[],"reason":"no access","cost_usd":0.1}`,
		validLine + "\n" + `{"status":"blocked","next_action":"","needs_extension_minutes":0,"summary":"","files_changed":[],"reason":"later"}`,
		`{"status":"complete","next_action":"","needs_extension_minutes":0,"summary":"","files_changed":[],"implementer_status":"DONE_WITH_CONCERNS","concerns":["x"]}`,
		`{"status":"complete","next_action":"","needs_extension_minutes":0,"summary":"","files_changed":[],"implementer_status":"BLOCKED"}`,
		`{"status":"complete","next_action":"","needs_extension_minutes":1.0,"summary":"","files_changed":null}`,
		"prose\n" + validLine + "\n\n  \n",
		validLine + " trailing",
		"", "\n\n", "{", `{"status":"done"}`, "\xff" + validLine,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, out string) {
		rec := ParseStatus(out)
		checkRecord(t, out, rec)
		if again := ParseStatus(out + "\n \t\n\n"); !sameRecord(rec, again) {
			t.Fatalf("trailing blank lines changed the record of %q: %+v → %+v", out, rec, again)
		}
		line, err := json.Marshal(rec)
		if err != nil {
			t.Fatalf("record %+v does not encode: %v", rec, err)
		}
		if strings.Contains(string(line), "\n") {
			t.Fatalf("encoded record %q spans lines", line)
		}
		back := ParseStatus("noise\n" + string(line))
		checkRecord(t, string(line), back)
		if !sameRecord(rec, back) {
			t.Fatalf("record of %q does not read back as itself:\n got %+v\nback %+v", out, rec, back)
		}
	})
}

func checkRecord(t *testing.T, out string, rec StatusRecord) {
	t.Helper()
	if !slices.Contains([]Status{StatusComplete, StatusPartial, StatusBlocked}, rec.Status) {
		t.Fatalf("record of %q has status %q", out, rec.Status)
	}
	if rec.FilesChanged == nil {
		t.Fatalf("record of %q has nil files_changed", out)
	}
	if rec.NeedsExtensionMinutes < 0 {
		t.Fatalf("record of %q asks for %d minutes", out, rec.NeedsExtensionMinutes)
	}
	if implied, ok := impliedStatus(rec.ImplementerStatus); ok && implied != rec.Status {
		t.Fatalf("record of %q: implementer_status %s with status %s", out, rec.ImplementerStatus, rec.Status)
	}
	if strings.TrimSpace(out) == "" && rec.Reason != ReasonUnparseable {
		t.Fatalf("no output read as %+v", rec)
	}
}

// sameRecord compares records with an empty list equal to a missing one
// (omitempty drops an empty concerns list). Two unparseable records need
// not have the same cause text: the schema library lists a line's
// violations in no fixed order.
func sameRecord(a, b StatusRecord) bool {
	if a.Reason == ReasonUnparseable && b.Reason == ReasonUnparseable &&
		strings.HasPrefix(a.Summary, "no valid status record: ") && strings.HasPrefix(b.Summary, "no valid status record: ") {
		a.Summary, b.Summary = "", ""
	}
	if len(a.Concerns) == 0 && len(b.Concerns) == 0 {
		a.Concerns, b.Concerns = nil, nil
	}
	return reflect.DeepEqual(a, b)
}

// TestIF_5_AKeyInOtherCaseIsRefused: encoding/json matches keys ignoring
// case, so a record the schema reads as blocked must not decode as the
// "STATUS": "complete" beside it (found by FuzzIF_5_ParseStatus).
func TestIF_5_AKeyInOtherCaseIsRefused(t *testing.T) {
	for _, line := range []string{
		`{"status":"blocked","next_action":"","needs_extension_minutes":0,"summary":"","files_changed":[],"STATUS":"complete"}`,
		`{"status":"complete","next_action":"","needs_extension_minutes":0,"summary":"","files_changed":[],"Implementer_Status":"BLOCKED"}`,
	} {
		if rec := ParseStatus(line); rec.Reason != ReasonUnparseable || rec.Status != StatusBlocked {
			t.Errorf("ParseStatus(%s) = %+v, want unparseable", line, rec)
		}
	}
}
