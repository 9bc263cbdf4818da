package prloop_test

import (
	"bufio"
	"encoding/json"
	"os"
	"testing"

	"github.com/convergeloop/converge/internal/prloop"
	"github.com/convergeloop/converge/internal/prloop/prlooptest"
)

// TestPR_S5_ObservedClassesChangeNoDecision: a round over real review
// comments (the classifier's data sets: every kind of file, suggestion
// blocks, diff hunks, Copilot's and people's) decides byte for byte the
// same whether its observation carries the comments' classes or Decide
// works them out.
func TestPR_S5_ObservedClassesChangeNoDecision(t *testing.T) {
	var real []struct {
		Path      string `json:"path"`
		Line      int    `json:"line"`
		StartLine int    `json:"start_line"`
		DiffHunk  string `json:"diff_hunk"`
		Body      string `json:"body"`
	}
	for _, file := range []string{"real_comments.jsonl", "real_heldout.jsonl", "real_heldout2.jsonl", "comments.jsonl"} {
		f, err := os.Open("../classify/testdata/" + file)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			real = append(real, struct {
				Path      string `json:"path"`
				Line      int    `json:"line"`
				StartLine int    `json:"start_line"`
				DiffHunk  string `json:"diff_hunk"`
				Body      string `json:"body"`
			}{})
			if err := json.Unmarshal(sc.Bytes(), &real[len(real)-1]); err != nil {
				t.Fatal(err)
			}
		}
		f.Close()
	}
	for _, n := range []int{len(real), 60} {
		s, o, c := prlooptest.ReviewedRound(n)
		for i := range o.PR.Threads {
			th := &o.PR.Threads[i]
			r := real[i%len(real)]
			th.Path, th.Line, th.StartLine, th.OrigLine, th.OrigStart = r.Path, r.Line, r.StartLine, r.Line, r.StartLine
			cm := &th.Comments[0]
			cm.Body, cm.Path, cm.DiffHunk = r.Body, r.Path, r.DiffHunk
			if i%3 == 1 {
				cm.Author = "alice" // a person with write access
			}
		}
		o.Classes = prloop.ClassifyObserved(s, o, c, nil)
		if len(o.Classes) < n/2 {
			t.Fatalf("%d classes for %d new threads", len(o.Classes), n)
		}
		withClasses := decided(t, s, o, c)
		o.Classes = nil
		if without := decided(t, s, o, c); withClasses != without {
			t.Fatalf("%d threads: Decide differs with the observed classes:\n%s\n%s", n, withClasses, without)
		}
	}
	// And the benchmark's fixture, as it is.
	s, o, c := prlooptest.ReviewedRound(40)
	withClasses := decided(t, s, o, c)
	o.Classes = nil
	if without := decided(t, s, o, c); withClasses != without {
		t.Fatal("the reviewed round decides differently with its observed classes")
	}
}

func decided(t *testing.T, s prloop.State, o prloop.Observation, c prloop.Config) string {
	t.Helper()
	next, acts, term := prloop.Decide(s, o, c)
	b, err := json.Marshal(struct {
		S prloop.State
		A []prloop.Action
		T any
	}{next, acts, term})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
