package replaytest

import (
	"encoding/json"
	"strings"
	"testing"
)

type inner struct {
	List   []string `json:"list,omitempty"`
	hidden int
}

// fakeT records failures instead of failing.
type fakeT struct {
	testing.TB
	failed []string
}

func (f *fakeT) Helper()                        {}
func (f *fakeT) Errorf(format string, a ...any) { f.failed = append(f.failed, format) }
func (f *fakeT) Fatalf(format string, a ...any) { f.failed = append(f.failed, format) }

// TestRoundTripNamesWhatJSONLoses: an empty list JSON omits, or an
// unexported field, is a difference the workflow's Decide would see.
func TestRoundTripNamesWhatJSONLoses(t *testing.T) {
	for name, v := range map[string]inner{"an empty list omitted": {List: []string{}}, "an unexported field": {hidden: 1}} {
		ft := &fakeT{TB: t}
		RoundTrip(ft, name, v)
		if len(ft.failed) == 0 {
			t.Errorf("%s: not reported", name)
		}
	}
	ft := &fakeT{TB: t}
	RoundTrip(ft, "faithful", inner{List: []string{"a"}})
	if len(ft.failed) != 0 {
		t.Errorf("a faithful value reported: %v", ft.failed)
	}
}

// TestReplayOneFailsOnAChangedDecision: a step whose decision differs
// from the recording, in state, actions or done, fails the replay.
func TestReplayOneFailsOnAChangedDecision(t *testing.T) {
	rec := Recording[int, int, string]{Scenario: "s", Steps: []Step[int, int, string]{{State: 1, Observation: 2, Next: 3, Actions: []string{"a"}}}}
	raw, _ := json.Marshal(rec)
	decider := func(d Decider[int, int, string]) func(json.RawMessage) (Decider[int, int, string], error) {
		return func(json.RawMessage) (Decider[int, int, string], error) { return d, nil }
	}
	if err := ReplayOne(raw, decider(func(s, o int) (int, []string, bool) { return s + o, []string{"a"}, false })); err != nil {
		t.Fatalf("the same decision failed: %v", err)
	}
	for name, d := range map[string]Decider[int, int, string]{
		"next state": func(s, o int) (int, []string, bool) { return s * o, []string{"a"}, false },
		"actions":    func(s, o int) (int, []string, bool) { return s + o, []string{"b"}, false },
		"done":       func(s, o int) (int, []string, bool) { return s + o, []string{"a"}, true },
	} {
		if err := ReplayOne(raw, decider(d)); err == nil || !strings.Contains(err.Error(), "s step 0") {
			t.Errorf("a changed %s replayed: %v", name, err)
		}
	}
}

type leaky struct {
	Name    string
	Any     any
	Do      func()
	Skip    string `json:"-"`
	private int
	Inner   *inner
}

var _ = leaky{private: 0} // the field is what the test is about

// TestCarriedNamesFieldsJSONLeavesBehind: every field JSON would leave
// behind is named, down the type's tree, unless allowed.
func TestCarriedNamesFieldsJSONLeavesBehind(t *testing.T) {
	ft := &fakeT{TB: t}
	Carried[leaky](ft)
	if len(ft.failed) != 5 { // Any, Do, Skip, private, inner.hidden
		t.Errorf("%d fields reported, want 5", len(ft.failed))
	}
	ft = &fakeT{TB: t}
	Carried[leaky](ft, "leaky.Any", "leaky.Do", "leaky.Skip", "leaky.private", "inner.hidden")
	if len(ft.failed) != 0 {
		t.Errorf("allowed fields reported: %d", len(ft.failed))
	}
}
