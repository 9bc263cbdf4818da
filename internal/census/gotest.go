package census

import (
	"encoding/json"
	"strings"
)

// goEvent is one line of `go test -json` (cmd/test2json).
type goEvent struct {
	Action  string
	Package string
	Test    string
	Output  *string
}

// maxHuman bounds the human-readable text ParseGoTestJSON rebuilds.
const maxHuman = 4 << 20

// ParseGoTestJSON reads the output of `go test -json` — its event stream,
// with whatever the go command printed that is not an event (build errors,
// "go: downloading") in between — and returns the census and the output a
// reader of plain `go test` expects: the packages' verdicts ("ok pkg",
// "FAIL pkg"), and the output of failing tests ("--- FAIL: TestX" and its
// log lines), which is what a hand-off quotes. The output of passing and
// skipped tests is dropped, as plain `go test` drops it.
//
// A stream with no event at all is not a census: the command did not run
// `go test -json` as expected.
func ParseGoTestJSON(out string) (human string, c Census) {
	t := newTally(Go)
	var b strings.Builder
	emit := func(s string) {
		if b.Len()+len(s) <= maxHuman {
			b.WriteString(s)
		}
	}
	// pending is each running test's output, flushed if it fails.
	pending := map[string]*strings.Builder{}
	pendingBytes := 0
	events := 0
	for _, line := range strings.SplitAfter(out, "\n") {
		if line == "" {
			continue
		}
		var e goEvent
		trim := strings.TrimSpace(line)
		if !strings.HasPrefix(trim, "{") || json.Unmarshal([]byte(trim), &e) != nil || e.Action == "" {
			emit(line)
			continue
		}
		events++
		if e.Test == "" {
			// The package's own events: its verdict line and build
			// output are always shown.
			if e.Output != nil {
				emit(*e.Output)
			}
			continue
		}
		key := e.Package + "\x00" + e.Test
		switch e.Action {
		case "output":
			if e.Output == nil || isProgress(*e.Output) {
				continue
			}
			p := pending[key]
			if p == nil {
				p = &strings.Builder{}
				pending[key] = p
			}
			if pendingBytes+len(*e.Output) <= maxHuman {
				p.WriteString(*e.Output)
				pendingBytes += len(*e.Output)
			}
		case "pass", "fail", "skip":
			id := e.Test
			if e.Package != "" {
				id = e.Package + "." + e.Test
			}
			t.add(id, e.Action[0])
			if p := pending[key]; p != nil {
				if e.Action == "fail" {
					emit(p.String())
				}
				pendingBytes -= p.Len()
				delete(pending, key)
			}
		}
	}
	// Tests still running when the stream ended (a panic, a time-out, a
	// killed run): what they printed explains it.
	for _, p := range pending {
		emit(p.String())
	}
	if events == 0 {
		return out, unknown(Go, "go test printed no -json events")
	}
	return b.String(), t.census()
}

// isProgress is a line of test2json's verbose framing that plain go test
// does not print.
func isProgress(s string) bool {
	s = strings.TrimLeft(s, " ")
	for _, p := range []string{"=== RUN", "=== PAUSE", "=== CONT", "=== NAME", "--- PASS:", "--- SKIP:"} {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}
