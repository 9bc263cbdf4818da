package cli

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/convergeloop/converge/internal/engine"
)

// EventsSchemaPath is where the JSON Schema of the --json event lines is
// kept in the repository.
const EventsSchemaPath = "docs/events.schema.json"

// runEvent is one line of `converge pr|loop|plan run|demo --json` and
// `converge status --follow RUN --json` (UX-1): a run's event with the
// run it belongs to. docs/events.schema.json documents it.
type runEvent struct {
	engine.Event
	// Run is the run's id; RunKind its kind (pr, pr-dry-run, pr-dispose,
	// loop, plan); Target what it works on (a PR's URL, loop:DIR).
	Run     string `json:"run"`
	RunKind string `json:"run_kind,omitempty"`
	Target  string `json:"target,omitempty"`
	// PR names the run's PR when one command drives several.
	PR string `json:"pr,omitempty"`
}

// writeEvent prints e as one NDJSON line.
func writeEvent(w io.Writer, e engine.Event, run, kind, target, pr string) {
	b, err := json.Marshal(runEvent{Event: e, Run: run, RunKind: kind, Target: target, PR: pr})
	if err != nil {
		// Data that cannot be encoded loses its data, never its line.
		e.Data = nil
		b, _ = json.Marshal(runEvent{Event: e, Run: run, RunKind: kind, Target: target, PR: pr})
	}
	fmt.Fprintln(w, string(b))
}
