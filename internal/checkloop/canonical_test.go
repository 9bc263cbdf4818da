package checkloop

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/convergeloop/converge/internal/agent"
)

// TestLOOP_4_CanonicalJSON: sorted keys, no insignificant whitespace, no
// duplicate keys, one spelling per string and number; anything else is
// refused at the door with input-json-noncanonical.
func TestLOOP_4_CanonicalJSON(t *testing.T) {
	for _, tc := range []struct {
		in string
		ok bool
	}{
		{`{"a":1,"b":[true,false,null],"c":{"d":"e"}}`, true},
		{`{}`, true},
		{`[]`, true},
		{`"<tag> & ünïcode \" \\ \n \u001f"`, true},
		{`-12`, true},
		{`1.5`, true},
		{`1e+21`, true},
		{`{"b":1,"a":2}`, false},                 // unsorted keys
		{`{"a":1, "b":2}`, false},                // whitespace
		{"{\"a\":1}\n", false},                   // a trailing newline
		{`{"a":1,"a":2}`, false},                 // duplicate key
		{`"\u0041"`, false},                      // an escape where a letter will do
		{`"\u003c"`, false},                      // HTML escaping is not canonical
		{`-0`, false},                            // a signed zero
		{`1.0`, false},                           // an integer with a fraction
		{`1E3`, false},                           // an exponent for an integer
		{`{"a":1}{"b":2}`, false},                // two values
		{`{"a":}`, false},                        // not JSON
		{"\"\xff\"", false},                      // invalid UTF-8
		{`{"z":{"y":1,"x":2},"a":0}`, false},     // nested unsorted
		{`{"a":0,"z":{"x":2,"y":1}}`, true},      // nested sorted
		{`{"\u00e9":1,"e":2}`, false},            // an escaped key
		{`{"e":2,"é":1}`, true},                  // byte order: "e" < "é"
		{`["a","b"]`, true},                      // arrays keep their order
		{`12345678901234567890`, false},          // beyond int64: written as a float
		{`123456789012345678`, true},             // within int64
		{`0.1`, true},                            // as encoding/json writes a float64
		{`1e400`, false},                         // out of range
		{`{"a":[{"c":1,"b":2}]}`, false},         // an unsorted object in an array
		{`{"a":"\t"}`, true},                     // a tab, escaped as encoding/json does
		{"{\"a\":\"\t\"}", false},                // a raw tab is not JSON
		{`{"a":"\\t"}`, true},                    // an escaped backslash
		{`{"a":"\u2028"}`, true},                 // U+2028 stays escaped
		{"{\"a\":\"\u2028\"}", false},            // raw U+2028 is written escaped
		{`{"a":"x\/y"}`, false},                  // an escaped slash
		{`{"goal":"make it pass"}`, true},        // a packet-like record
		{`{"goal": "make it pass"}`, false},      // pretty-printed
		{"{\n  \"goal\": \"make it\"\n}", false}, // indented
	} {
		err := CheckCanonical([]byte(tc.in))
		if (err == nil) != tc.ok {
			t.Errorf("CheckCanonical(%q) = %v, want ok=%v", tc.in, err, tc.ok)
		}
		var nc *NoncanonicalError
		if err != nil && (!errors.As(err, &nc) || nc.Code() != CodeNoncanonical) {
			t.Errorf("CheckCanonical(%q): %v is not an %s refusal", tc.in, err, CodeNoncanonical)
		}
	}
	// MarshalCanonical writes what CheckCanonical accepts, for any value.
	b, err := MarshalCanonical(Packet{Goal: "a <b> & c", Worklog: "x\ny", FailedApproaches: []string{"é"}, QueuedScope: []string{}})
	if err != nil || CheckCanonical(b) != nil {
		t.Fatalf("MarshalCanonical: %s, %v", b, err)
	}
	if want := `{"failed_approaches":["é"],"goal":"a <b> & c","queued_scope":[],"worklog":"x\ny"}`; string(b) != want {
		t.Fatalf("MarshalCanonical = %s, want %s", b, want)
	}
	var p Packet
	if err := DecodeRecord([]byte(`{"worklog":"","goal":"g","queued_scope":[],"failed_approaches":[]}`), &p); err == nil {
		t.Fatal("DecodeRecord took an unsorted record")
	}
}

// FuzzLOOP_4_CanonicalRoundTrip: for any input, the canonical form is a
// fixed point, means the same as the input, and the input is accepted
// exactly when it is its own canonical form (byte for byte).
func FuzzLOOP_4_CanonicalRoundTrip(f *testing.F) {
	for _, s := range []string{
		`{"a":1,"b":[true,false,null],"c":{"d":"e"}}`, `{"b":1,"a":2}`, `{"a":1,"a":2}`, `"\u0041"`, `-0`, `1.0`,
		`[1e3, 2.50, -0.0]`, "\"\xff\xfe\"", `{"x":"\u2028<>&"}`, ` [ ] `, `{"goal":"g","worklog":"w"}`, `123456789012345678901234567890`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		c, err := Canonicalize(in)
		if err != nil {
			if CheckCanonical(in) == nil {
				t.Fatalf("%q cannot be canonicalized but was accepted", in)
			}
			return
		}
		if !json.Valid(c) {
			t.Fatalf("canonical form %q of %q is not JSON", c, in)
		}
		c2, err := Canonicalize(c)
		if err != nil || !bytes.Equal(c, c2) {
			t.Fatalf("canonical form is not a fixed point: %q → %q (%v)", c, c2, err)
		}
		if err := CheckCanonical(c); err != nil {
			t.Fatalf("the canonical form %q is refused: %v", c, err)
		}
		if accepted := CheckCanonical(in) == nil; accepted != bytes.Equal(in, c) {
			t.Fatalf("%q accepted=%v but its canonical form is %q", in, accepted, c)
		}
		var a, b any
		if json.Unmarshal(in, &a) == nil {
			if err := json.Unmarshal(c, &b); err != nil || !reflect.DeepEqual(a, b) {
				t.Fatalf("%q and its canonical form %q differ in meaning: %v vs %v", in, c, a, b)
			}
		}
	})
}

// TestLOOP_4_TheCommandDoorRefusesNoncanonicalRecords: the command
// backend refuses a packet that does not round-trip before the child
// starts, and hands a canonical one over as one canonical document.
func TestLOOP_4_TheCommandDoorRefusesNoncanonicalRecords(t *testing.T) {
	dir := t.TempDir()
	ran := filepath.Join(dir, "ran")
	got := filepath.Join(dir, "stdin.json")
	c, err := NewCommand("command", []string{"sh", "-c", `touch "$0"; cat > "$1"; echo '{"status":"complete","next_action":"","needs_extension_minutes":0,"summary":"s","files_changed":[]}'`, ran, got})
	if err != nil {
		t.Fatal(err)
	}
	task := agent.Task{Kind: TaskKindIterate, RunID: "r1.iter.01", Round: 1, Workdir: dir, Env: []string{"PATH=" + os.Getenv("PATH")}}
	task.Instructions = `{"goal": "g", "worklog": "", "failed_approaches": [], "queued_scope": []}`
	_, err = c.Run(context.Background(), task)
	var nc *NoncanonicalError
	if !errors.As(err, &nc) || nc.Code() != "input-json-noncanonical" {
		t.Fatalf("a pretty-printed packet: %v, want input-json-noncanonical", err)
	}
	if _, err := os.Stat(ran); err == nil {
		t.Fatal("the child started on a refused packet")
	}
	pk, _ := MarshalCanonical(Packet{Goal: "g", Worklog: "w", FailedApproaches: []string{}, QueuedScope: []string{}})
	task.Instructions = string(pk)
	res, err := c.Run(context.Background(), task)
	if err != nil || res.Record.Status != agent.StatusComplete {
		t.Fatalf("a canonical packet: %+v, %v", res.Record, err)
	}
	in, err := os.ReadFile(got)
	if err != nil {
		t.Fatal(err)
	}
	if err := CheckCanonical(in); err != nil {
		t.Fatalf("the child's stdin is not canonical: %v\n%s", err, in)
	}
	var doc struct {
		Kind   string          `json:"kind"`
		Ticket string          `json:"ticket"`
		Packet json.RawMessage `json:"packet"`
		Schema json.RawMessage `json:"status_schema"`
		Prompt string          `json:"prompt"`
	}
	if err := json.Unmarshal(in, &doc); err != nil || doc.Kind != TaskKindIterate || doc.Ticket != "r1.iter.01" || string(doc.Packet) != string(pk) || len(doc.Schema) == 0 || doc.Prompt == "" {
		t.Fatalf("stdin %s", in)
	}
}
