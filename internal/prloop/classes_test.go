package prloop

import (
	"context"
	"reflect"
	"testing"

	"github.com/convergeloop/converge/internal/classify"
	"github.com/convergeloop/converge/internal/engine"
	"github.com/convergeloop/converge/internal/forge"
)

// TestPR_S5_DecideReadsObservedClasses: Decide takes a comment's class
// from the observation when it is there (so the classification is not
// done again on every step), and works it out when it is not.
func TestPR_S5_DecideReadsObservedClasses(t *testing.T) {
	build := func() (State, Observation) {
		s := awaiting("h1", 1, "R0")
		pr := newPR("h1")
		th := thread("T1", "alice", "Typo in this comment: \"recieve\" should be \"receive\".")
		pr.Threads = []forge.Thread{th}
		pr.Reviews = []forge.Review{okReview("R0", "h0", at(-5)), okReview("R1", "h1", at(3))}
		return s, obs(at(3), pr)
	}
	s, o := build()
	_, plain, _ := Decide(s, o, cfg())
	o.Classes = ClassifyObserved(s, o, cfg(), nil)
	if len(o.Classes) != 1 {
		t.Fatalf("%d classes, want the one new comment's", len(o.Classes))
	}
	_, memo, _ := Decide(s, o, cfg())
	if !reflect.DeepEqual(plain, memo) {
		t.Fatalf("Decide differs with the observed classes:\n%v\n%v", plain, memo)
	}
	// An observed class is believed: planted, it shows in the finding.
	for k := range o.Classes {
		o.Classes[k] = class{verdict: classify.Structural, text: "planted"}
	}
	_, planted, _ := Decide(s, o, cfg())
	if reflect.DeepEqual(plain, planted) {
		t.Fatal("Decide ignored the observation's classes: it classifies every comment on every step")
	}
}

// TestPR_S5_ObserveClassifiesNewCommentsOnce: the loop's observation
// carries the classes of the comments triage may read; a comment seen by
// the previous observation keeps the class it got then (it is not
// classified again), and a comment no longer observed leaves the memo.
func TestPR_S5_ObserveClassifiesNewCommentsOnce(t *testing.T) {
	ff, ref, _ := threadsPR(t, 2)
	ff.SetPermission("bob", forge.PermWrite) // the threads' author: trusted (SEC-1)
	l := NewLoop(ref, Deps{Forge: ff, Journal: &memJournal{done: map[string]bool{}}, Config: cfg()})
	head := ff.PR(ref).HeadSHA
	ctx := context.Background()
	st := awaiting(head, 1)
	o, err := l.Observe(ctx, st, engine.Input[*ActResult]{Now: at(0)})
	if err != nil {
		t.Fatal(err)
	}
	if len(o.Classes) != 2 {
		t.Fatalf("%d classes after the first observation, want the 2 threads'", len(o.Classes))
	}
	for in, got := range o.Classes {
		if want := classOf(in); got != want {
			t.Fatalf("class of %q: %+v, want the heuristic's %+v", in.Body, got, want)
		}
	}
	// Mark what the first observation classified, and leave an entry
	// for a comment the forge no longer shows.
	gone := classify.Comment{ID: "gone", Body: "gone"}
	for in := range l.classes {
		l.classes[in] = class{verdict: classify.Minor, text: "seen"}
	}
	l.classes[gone] = class{text: "gone"}
	o, err = l.Observe(ctx, st, engine.Input[*ActResult]{Now: at(1)})
	if err != nil {
		t.Fatal(err)
	}
	if len(o.Classes) != 2 {
		t.Fatalf("%d classes after the second observation, want 2", len(o.Classes))
	}
	for in, got := range o.Classes {
		if got.text != "seen" {
			t.Fatalf("comment %q classified again: %+v", in.Body, got)
		}
	}
	if _, ok := o.Classes[gone]; ok {
		t.Fatal("a comment no longer observed stays in the classes")
	}
}
