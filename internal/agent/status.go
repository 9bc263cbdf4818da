package agent

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/convergeloop/converge/internal/text"
)

// statusSchemaJSON is the IF-5 contract. Unknown properties are allowed so
// that an agent adding detail is not failed for it; every field converge
// reads is typed and required where the spec requires it.
//
//go:embed status.schema.json
var statusSchemaJSON []byte

// StatusSchema returns the embedded JSON Schema of the status record, for
// backends that pass it to an agent CLI (e.g. a structured-output flag).
func StatusSchema() []byte { return bytes.Clone(statusSchemaJSON) }

var statusSchema = EmbeddedSchema("agent-status.json", statusSchemaJSON)

// EmbeddedSchema compiles, once and on first use, a JSON Schema embedded
// in the binary: the contracts of agents' answers (the status record, a
// judge's verdict). A schema that does not compile is a programming
// error, so it panics.
func EmbeddedSchema(name string, raw []byte) func() *jsonschema.Schema {
	return sync.OnceValue(func() *jsonschema.Schema {
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
		if err != nil {
			panic(fmt.Sprintf("embedded schema %s: %v", name, err))
		}
		c := jsonschema.NewCompiler()
		loc := "mem://converge/" + name
		if err := c.AddResource(loc, doc); err != nil {
			panic(fmt.Sprintf("embedded schema %s: %v", name, err))
		}
		return c.MustCompile(loc)
	})
}

// ParseStatus reads the status record from an agent's output (IF-5, AG-T3).
//
// The record is the last non-empty line of output, and that line must be a
// JSON object valid against the embedded schema. Trailing blank lines are
// skipped, nothing else is: text after the record, a record sharing its line
// with other text, or an earlier record followed by anything means the agent
// did not finish by the protocol, and an earlier line is never taken instead
// because it may be stale or an echoed example. Any failure yields
// {status: blocked, reason: unparseable} with the cause in Summary — never
// complete (fail-closed).
//
// An implementer_status (AG-T2) decides the status: DONE and
// DONE_WITH_CONCERNS mean complete, NEEDS_CONTEXT and BLOCKED mean blocked;
// a contradicting status is overridden and the override noted in Concerns.
func ParseStatus(output string) StatusRecord {
	line := lastNonEmptyLine(output)
	if line == "" {
		return unparseable("no output")
	}
	if !strings.HasPrefix(line, "{") {
		return unparseable("last line is not a JSON object")
	}
	inst, err := jsonschema.UnmarshalJSON(strings.NewReader(line))
	if err != nil {
		return unparseable("last line is not a JSON object: " + text.OneLine(err.Error()))
	}
	if err := statusSchema().Validate(inst); err != nil {
		return unparseable("status record fails schema: " + text.OneLine(err.Error()))
	}
	var rec StatusRecord
	if err := ExactKeys(inst, rec); err != nil {
		return unparseable("status record: " + err.Error())
	}
	if err := json.Unmarshal([]byte(line), &rec); err != nil {
		// The schema admits numbers encoding/json rejects for an int (1.0,
		// 1e3); rather than guess, fail closed.
		return unparseable("status record: " + text.OneLine(err.Error()))
	}
	if rec.FilesChanged == nil {
		rec.FilesChanged = []string{}
	}
	if implied, ok := impliedStatus(rec.ImplementerStatus); ok && implied != rec.Status {
		rec.Concerns = append(rec.Concerns, fmt.Sprintf(
			"status %q contradicts implementer_status %s; using %q", rec.Status, rec.ImplementerStatus, implied))
		rec.Status = implied
	}
	return rec
}

func impliedStatus(impl string) (Status, bool) {
	switch impl {
	case ImplDone, ImplDoneWithConcerns:
		return StatusComplete, true
	case ImplNeedsContext, ImplBlocked:
		return StatusBlocked, true
	}
	return "", false
}

func unparseable(why string) StatusRecord {
	return StatusRecord{
		Status:       StatusBlocked,
		Reason:       ReasonUnparseable,
		Summary:      "no valid status record: " + why,
		FilesChanged: []string{},
	}
}

func lastNonEmptyLine(s string) string {
	for s != "" {
		i := strings.LastIndexByte(s, '\n')
		line := strings.TrimSpace(s[i+1:])
		if line != "" {
			return line
		}
		if i < 0 {
			break
		}
		s = s[:i]
	}
	return ""
}

// Extension limits of AG-T1.
const (
	MaxExtensions       = 2
	MaxExtensionMinutes = 10
)

// Extend decides whether a run that ended with rec earns more time, given
// that used extensions were already granted for this step (AG-T1): only a
// partial record with a concrete next_action and a positive request, by
// min(requested, 10) minutes, at most MaxExtensions times. Steps allowed a
// longer time-box (build/test: 2×) scale the returned minutes themselves.
// When ok is false the caller narrows the input or does the step itself.
func Extend(rec StatusRecord, used int) (minutes int, ok bool) {
	if rec.Status != StatusPartial || strings.TrimSpace(rec.NextAction) == "" {
		return 0, false
	}
	if used >= MaxExtensions || rec.NeedsExtensionMinutes <= 0 {
		return 0, false
	}
	return min(rec.NeedsExtensionMinutes, MaxExtensionMinutes), true
}

// Extended is the task that extends t's run, which ended with rec
// (AG-T1): the same task with the time Extend grants as its budget, the
// next Extension number (t.Extension counting the extensions this step
// already had) and rec's next action. It is a new run on the tree the
// last one left, not a resumed session. ok is false when rec earns none.
func (t Task) Extended(rec StatusRecord) (next Task, ok bool) {
	minutes, ok := Extend(rec, t.Extension)
	if !ok {
		return t, false
	}
	t.Budget = time.Duration(minutes) * time.Minute
	t.Extension++
	t.NextAction = strings.TrimSpace(rec.NextAction)
	return t, true
}
