package classify

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// ruleFigures is how often each deciding rule decided and how often it
// was wrong, on some labelled comments. A rule "decides" a comment when
// the verdict is the rule's lean: a structural rule on a structural
// verdict, a minor rule on a minor verdict (no doubt, no structural rule).
type ruleFigures struct {
	decided, wrong map[string]int
	errs           map[string][]string
}

func figuresOf(set []labelled) ruleFigures {
	f := ruleFigures{decided: map[string]int{}, wrong: map[string]int{}, errs: map[string][]string{}}
	for _, l := range set {
		r := Heuristic(l.Comment)
		var lean Lean
		switch r.Verdict {
		case Structural:
			lean = LeanStructural
		case Minor:
			lean = LeanMinor
		default:
			continue
		}
		seen := map[string]bool{}
		for _, h := range r.Hits {
			if h.Lean != lean || seen[h.Rule] {
				continue
			}
			seen[h.Rule] = true
			f.decided[h.Rule]++
			if r.Verdict != l.Label {
				f.wrong[h.Rule]++
				f.errs[h.Rule] = append(f.errs[h.Rule], l.ID)
			}
		}
	}
	return f
}

func (f ruleFigures) String() string {
	names := make([]string, 0, len(f.decided))
	for n := range f.decided {
		names = append(names, n)
	}
	slices.Sort(names)
	var b strings.Builder
	for _, n := range names {
		fmt.Fprintf(&b, "  %-26s decided %3d  wrong %2d  %v\n", n, f.decided[n], f.wrong[n], f.errs[n])
	}
	return b.String()
}

// TestPR_S5_RulePrecision prints, for every rule that decides, how many
// comments it decided and how many of those it got wrong, on the real
// comments already seen (both splits of real_comments.jsonl and
// real_heldout.jsonl) and on the written set. A deciding rule must earn
// its decisions: the test fails when one errs on a seen real comment.
//
//	go test ./internal/classify -run TestPR_S5_RulePrecision -v
func TestPR_S5_RulePrecision(t *testing.T) {
	var seen []labelled
	seen = append(seen, labelledOf(loadRealSet(t))...)
	seen = append(seen, labelledOf(loadHeldOut(t))...)
	real := figuresOf(seen)
	t.Logf("real comments seen (%d):\n%s", len(seen), real)
	t.Logf("written set:\n%s", figuresOf(loadDataSet(t)))
	// Held-out 2 is printed, never gated: no rule is tuned on it.
	t.Logf("held-out 2 (not seen when the rules were set):\n%s", figuresOf(labelledOf(loadHeldOut2(t))))
	t.Logf("held-out 3 (issue 36; not seen when the rules were set):\n%s", figuresOf(labelledOf(loadHeldOut3(t))))
	for n, w := range real.wrong {
		if w > 0 {
			t.Errorf("rule %s errs on %d seen real comments: %v", n, w, real.errs[n])
		}
	}
}
