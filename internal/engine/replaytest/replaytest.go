// Package replaytest holds a loop kind's Decide to what it decided in real
// runs. A run's steps — the state each Decide started from, the
// observation, the next state, the actions and done — are recorded as
// JSON, the form a Temporal workflow's Decide sees them in, and committed
// under the kind's testdata/replay/. Replay feeds every recorded step
// through Decide again and compares what it decides byte for byte, so a
// changed Decide that would change a running workflow's history fails.
//
// Recordings are only ever added to. CONVERGE_UPDATE_REPLAY=1 writes the
// recording of a scenario that has none yet; it never rewrites one. A
// Decide change that an old recording no longer replays is a change to
// running workflows: keep the recording and version the change
// (workflow.GetVersion). Rewriting one on purpose needs
// CONVERGE_UPDATE_REPLAY=force, and a commit message that says why;
// CONVERGE_UPDATE_REPLAY=redecide rewrites only what Decide decides from
// the recorded observations (a field added to what it reports), keeping
// the run as it was recorded — for changes that alter no action a
// workflow sends, said in the commit message.
package replaytest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

// UpdateEnv is the environment variable that records missing recordings
// ("1") or rewrites existing ones ("force").
const UpdateEnv = "CONVERGE_UPDATE_REPLAY"

// Step is one Decide of a run.
type Step[S, O, A any] struct {
	State       S    `json:"state"`
	Observation O    `json:"observation"`
	Next        S    `json:"next"`
	Actions     []A  `json:"actions"`
	Done        bool `json:"done"`
}

// Recording is one run: the scenario's name, what the loop was made with
// besides the state (nil when the state holds it all), and its steps.
type Recording[S, O, A any] struct {
	Scenario string          `json:"scenario"`
	Config   any             `json:"config,omitempty"`
	Steps    []Step[S, O, A] `json:"steps"`
}

// Recorder collects a live run's steps and act results; a loop kind's test
// wraps its loop's Decide and Act to feed it. Safe for concurrent use.
type Recorder[S, O, A, R any] struct {
	mu      sync.Mutex
	steps   []Step[S, O, A]
	results []R
}

// Decided records one Decide.
func (r *Recorder[S, O, A, R]) Decided(st S, obs O, next S, actions []A, done bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.steps = append(r.steps, Step[S, O, A]{State: st, Observation: obs, Next: next, Actions: actions, Done: done})
}

// Acted records one act's result.
func (r *Recorder[S, O, A, R]) Acted(res R) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.results = append(r.results, res)
}

// Steps are the Decides so far, in order.
func (r *Recorder[S, O, A, R]) Steps() []Step[S, O, A] {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Step[S, O, A](nil), r.steps...)
}

// Results are the act results so far, in order.
func (r *Recorder[S, O, A, R]) Results() []R {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]R(nil), r.results...)
}

// Faithful fails t unless every state, observation and action of steps,
// and every act result, comes back from JSON deeply equal: the workflow's
// Decide sees the JSON copy, so a field JSON drops or changes is an input
// the two engines disagree on. It also fails on a run without steps.
func Faithful[S, O, A, R any](t testing.TB, scenario string, steps []Step[S, O, A], results []R) {
	t.Helper()
	if len(steps) == 0 {
		t.Fatalf("%s: no step was recorded", scenario)
	}
	for i, s := range steps {
		RoundTrip(t, fmt.Sprintf("%s step %d state", scenario, i), s.State)
		RoundTrip(t, fmt.Sprintf("%s step %d observation", scenario, i), s.Observation)
		RoundTrip(t, fmt.Sprintf("%s step %d next state", scenario, i), s.Next)
		for j, a := range s.Actions {
			RoundTrip(t, fmt.Sprintf("%s step %d action %d", scenario, i, j), a)
		}
	}
	for i, r := range results {
		RoundTrip(t, fmt.Sprintf("%s act result %d", scenario, i), r)
	}
}

// RoundTrip fails t unless v comes back from JSON deeply equal, naming the
// first field that differs.
func RoundTrip[T any](t testing.TB, what string, v T) {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("%s: marshal: %v", what, err)
	}
	var back T
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatalf("%s: unmarshal: %v\n%s", what, err, b)
	}
	if !reflect.DeepEqual(v, back) {
		t.Errorf("%s does not survive JSON: %s", what, firstDiff(reflect.ValueOf(v), reflect.ValueOf(back), "$"))
	}
}

// firstDiff names the first path where a and b differ, and how.
func firstDiff(a, b reflect.Value, path string) string {
	if a.IsValid() != b.IsValid() {
		return path + ": one side is missing"
	}
	if !a.IsValid() {
		return ""
	}
	if a.Type() != b.Type() {
		return fmt.Sprintf("%s: type %s, back %s", path, a.Type(), b.Type())
	}
	switch a.Kind() {
	case reflect.Pointer, reflect.Interface:
		if a.IsNil() != b.IsNil() {
			return fmt.Sprintf("%s: nil %v, back nil %v", path, a.IsNil(), b.IsNil())
		}
		if a.IsNil() {
			return ""
		}
		return firstDiff(a.Elem(), b.Elem(), path)
	case reflect.Struct:
		for i := range a.NumField() {
			f := a.Type().Field(i)
			if d := firstDiff(a.Field(i), b.Field(i), path+"."+f.Name); d != "" {
				if !f.IsExported() {
					d += " (unexported: JSON never carries it)"
				}
				return d
			}
		}
		return ""
	case reflect.Slice, reflect.Map:
		if a.IsNil() != b.IsNil() {
			return fmt.Sprintf("%s: nil %v (len %d), back nil %v (len %d)", path, a.IsNil(), a.Len(), b.IsNil(), b.Len())
		}
		if a.Len() != b.Len() {
			return fmt.Sprintf("%s: len %d, back %d", path, a.Len(), b.Len())
		}
		if a.Kind() == reflect.Map {
			for _, k := range a.MapKeys() {
				if d := firstDiff(a.MapIndex(k), b.MapIndex(k), fmt.Sprintf("%s[%v]", path, k)); d != "" {
					return d
				}
			}
			return ""
		}
		for i := range a.Len() {
			if d := firstDiff(a.Index(i), b.Index(i), fmt.Sprintf("%s[%d]", path, i)); d != "" {
				return d
			}
		}
		return ""
	case reflect.Func:
		return path + ": a func (JSON cannot carry it)"
	}
	if a.CanInterface() && b.CanInterface() && !reflect.DeepEqual(a.Interface(), b.Interface()) {
		return fmt.Sprintf("%s: %#v, back %#v", path, a.Interface(), b.Interface())
	}
	if !a.CanInterface() && fmt.Sprint(a) != fmt.Sprint(b) {
		return fmt.Sprintf("%s: %v, back %v", path, a, b)
	}
	return ""
}

// Save writes rec to dir/NAME.json when UpdateEnv asks for it: "1" when no
// recording of that name exists, "force" always. Without UpdateEnv it
// writes nothing.
func Save[S, O, A any](t testing.TB, dir, name string, rec Recording[S, O, A]) {
	t.Helper()
	mode := os.Getenv(UpdateEnv)
	if mode == "" {
		return
	}
	path := filepath.Join(dir, name+".json")
	if _, err := os.Stat(path); err == nil && mode != "force" {
		t.Logf("%s exists: recordings are only added to (%s=force rewrites it)", path, UpdateEnv)
		return
	}
	b, err := json.MarshalIndent(rec, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("recorded %s (%d steps)", path, len(rec.Steps))
}

// Decider is a loop kind's Decide as a workflow calls it, made from a
// recording's config.
type Decider[S, O, A any] func(S, O) (S, []A, bool)

// Replay replays every recording in dir, failing t on the first step of
// each whose decision differs, and when dir holds none. decider makes the
// Decide of a recording from its config (null when it has none).
func Replay[S, O, A any](t *testing.T, dir string, decider func(config json.RawMessage) (Decider[S, O, A], error)) {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) == 0 {
		t.Fatalf("no recording in %s (%s=1 records them)", dir, UpdateEnv)
	}
	sort.Strings(paths)
	for _, p := range paths {
		raw, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if os.Getenv(UpdateEnv) == "redecide" {
			out, err := redecide(raw, decider)
			if err != nil {
				t.Fatalf("%s: %v", filepath.Base(p), err)
			}
			if !bytes.Equal(out, raw) {
				if err := os.WriteFile(p, out, 0o644); err != nil {
					t.Fatal(err)
				}
				t.Logf("decided %s again", p)
			}
			raw = out
		}
		if err := ReplayOne(raw, decider); err != nil {
			t.Errorf("%s: %v", filepath.Base(p), err)
		}
	}
}

// redecide is a recording with each step's next state, actions and done
// as Decide decides them now from the recorded observations; a step
// whose recorded state was the step before's next starts from the new
// next.
func redecide[S, O, A any](raw []byte, decider func(config json.RawMessage) (Decider[S, O, A], error)) ([]byte, error) {
	var rec rawRecording
	if err := json.Unmarshal(raw, &rec); err != nil {
		return nil, err
	}
	decide, err := decider(rec.Config)
	if err != nil {
		return nil, err
	}
	var prevRecorded, prevDecided json.RawMessage
	for i := range rec.Steps {
		s := &rec.Steps[i]
		if prevRecorded != nil && same("state", s.State, json.RawMessage(prevRecorded)) == nil {
			s.State = prevDecided
		}
		var st S
		var obs O
		if err := json.Unmarshal(s.State, &st); err != nil {
			return nil, fmt.Errorf("step %d: state: %w", i, err)
		}
		if err := json.Unmarshal(s.Observation, &obs); err != nil {
			return nil, fmt.Errorf("step %d: observation: %w", i, err)
		}
		next, actions, done := decide(st, obs)
		prevRecorded = s.Next
		if s.Next, err = json.Marshal(next); err != nil {
			return nil, err
		}
		if s.Actions, err = json.Marshal(actions); err != nil {
			return nil, err
		}
		s.Done, prevDecided = done, s.Next
	}
	b, err := json.MarshalIndent(rec, "", " ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

type rawStep struct {
	State       json.RawMessage `json:"state"`
	Observation json.RawMessage `json:"observation"`
	Next        json.RawMessage `json:"next"`
	Actions     json.RawMessage `json:"actions"`
	Done        bool            `json:"done"`
}

type rawRecording struct {
	Scenario string          `json:"scenario"`
	Config   json.RawMessage `json:"config"`
	Steps    []rawStep       `json:"steps"`
}

// replays is how often each step is decided again: a Decide that reads
// map iteration order differs between two of them.
const replays = 3

// ReplayOne replays one recording (Replay's file format, or a live run's
// Recording marshalled), reporting the first step whose decision differs.
func ReplayOne[S, O, A any](raw []byte, decider func(config json.RawMessage) (Decider[S, O, A], error)) error {
	var rec rawRecording
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&rec); err != nil {
		return fmt.Errorf("read the recording: %w", err)
	}
	if len(rec.Steps) == 0 {
		return errors.New("a recording without steps")
	}
	decide, err := decider(rec.Config)
	if err != nil {
		return fmt.Errorf("the recording's config: %w", err)
	}
	for i, s := range rec.Steps {
		for range replays {
			var st S
			var obs O
			if err := json.Unmarshal(s.State, &st); err != nil {
				return fmt.Errorf("step %d: state: %w", i, err)
			}
			if err := json.Unmarshal(s.Observation, &obs); err != nil {
				return fmt.Errorf("step %d: observation: %w", i, err)
			}
			next, actions, done := decide(st, obs)
			if err := same("next state", s.Next, next); err != nil {
				return fmt.Errorf("%s step %d: %w", rec.Scenario, i, err)
			}
			if err := same("actions", s.Actions, actions); err != nil {
				return fmt.Errorf("%s step %d: %w", rec.Scenario, i, err)
			}
			if done != s.Done {
				return fmt.Errorf("%s step %d: done %v, recorded %v", rec.Scenario, i, done, s.Done)
			}
		}
	}
	return nil
}

// same compares v's JSON with the recorded bytes, ignoring only
// insignificant whitespace.
func same(what string, recorded json.RawMessage, v any) error {
	got, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	var want bytes.Buffer
	if err := json.Compact(&want, recorded); err != nil {
		return fmt.Errorf("%s: recorded: %w", what, err)
	}
	if bytes.Equal(got, want.Bytes()) {
		return nil
	}
	return fmt.Errorf("%s differs from the recording:\n%s", what, lineDiff(indent(want.Bytes()), indent(got)))
}

func indent(b []byte) []string {
	var out bytes.Buffer
	if json.Indent(&out, b, "", " ") != nil {
		return []string{string(b)}
	}
	return strings.Split(out.String(), "\n")
}

// lineDiff shows where two indented documents part: the first differing
// line with a little context.
func lineDiff(want, got []string) string {
	i := 0
	for i < len(want) && i < len(got) && want[i] == got[i] {
		i++
	}
	from := max(0, i-3)
	var b strings.Builder
	for _, l := range want[from:min(len(want), i+4)] {
		b.WriteString("  recorded " + l + "\n")
	}
	for _, l := range got[from:min(len(got), i+4)] {
		b.WriteString("  decided  " + l + "\n")
	}
	return b.String()
}

// Dir is a loop kind's replay directory, relative to its package.
const Dir = "testdata/replay"

// Clock is an engine clock for recorded runs: it starts at a fixed time,
// moves a second on every reading and by every wait, and never really
// waits, so a recorded run's times are the same on every machine.
type Clock struct {
	mu  sync.Mutex
	now time.Time
}

// NewClock is a Clock starting at start.
func NewClock(start time.Time) *Clock { return &Clock{now: start} }

// Now is the clock's time, a second after the last reading.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(time.Second)
	return c.now
}

// After moves the clock by d and is ready at once.
func (c *Clock) After(d time.Duration) <-chan time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	ch := make(chan time.Time, 1)
	ch <- c.now
	return ch
}

// Journal keeps a run's states in memory.
type Journal[S any] struct {
	mu     sync.Mutex
	States []S
}

// SaveState keeps s.
func (j *Journal[S]) SaveState(_ context.Context, s S) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.States = append(j.States, s)
	return nil
}
