package recap

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// drifting is a ledger in which each of the five drift signals shows once,
// and a round a recap reverted, which counts for none.
func drifting() Input {
	return Input{
		PR: "https://github.com/o/r/pull/7", Title: "Add stats", Body: "Adds Mean and MovingSum.",
		BaseDiffLines: 40, LoopDiffLines: 90, RoundCount: 10, BaseRef: "main", ScopeHead: "s0",
		ScopeFiles: []FileStat{{Path: "summary.go", Added: 30}, {Path: "summary_test.go", Added: 10}},
		Rounds: []Round{
			{N: 1, Commit: "c1", Files: []string{"summary.go"}, Added: 4, Deleted: 1, Findings: []Entry{
				{ID: "T1", Path: "summary.go", Where: "summary.go:10", Verdict: "structural", Disposition: "addressed", Summary: "Mean divides by zero"}}},
			{N: 2, Commit: "c2", Files: []string{"summary.go"}, Added: 3, Findings: []Entry{
				{ID: "T2", Path: "summary.go", Where: "summary.go:20", Verdict: "minor", Disposition: "addressed", Summary: "nit: document the window"}}},
			{N: 3, Commit: "c3", Files: []string{"words.go"}, Added: 2, Deleted: 1, Findings: []Entry{
				{ID: "T3", Path: "words.go", Where: "words.go:3", Verdict: "structural", Disposition: "addressed", Summary: "WordCount ignores tabs"}}},
			{N: 4, Commit: "c4", Files: []string{"summary.go"}, Added: 1, Deleted: 2, Reworks: []int{2}, Findings: []Entry{
				{ID: "T4", Path: "summary.go", Where: "summary.go:10", Verdict: "structural", Disposition: "addressed", Summary: "Mean should not special-case empty input"}}},
			{N: 5, Findings: []Entry{
				{ID: "T5", Path: "README.md", Where: "README.md:1", Verdict: "minor", Disposition: "deferred", Summary: "nit: badge"}}},
			{N: 6, Commit: "c6", Reverted: true, Files: []string{"x.go"}, Added: 9, Reworks: []int{1}, Findings: []Entry{
				{ID: "T6", Path: "x.go", Where: "x.go:1", Verdict: "minor", Disposition: "addressed", Summary: "nit"}}},
		},
	}
}

func kinds(ss []Signal) string {
	var out []string
	for _, s := range ss {
		out = append(out, fmt.Sprintf("%s%v", s.Kind, s.Rounds))
	}
	return strings.Join(out, " ")
}

// TestPR_G2_AllFiveDriftSignals: each of PR-G2's five drift signals is
// computed from the ledger and the diffs, naming its rounds: files
// outside the PR's original diff (out-of-scope), code grown for minor
// findings only (over-engineering), a re-fix where an earlier round's fix
// went and lines an earlier round added removed again (wrong-direction),
// findings on files the PR does not change (belongs-in-separate-pr), and
// the loop outgrowing the PR in lines and files (scope-growth). A round a
// recap reverted counts for none.
func TestPR_G2_AllFiveDriftSignals(t *testing.T) {
	ss := Signals(drifting())
	want := "out-of-scope[3] over-engineering[2] wrong-direction[1 2 4] belongs-in-separate-pr[3 5] scope-growth[]"
	if got := kinds(ss); got != want {
		t.Fatalf("signals\n got %s\nwant %s\n%+v", got, want, ss)
	}
	for i, sub := range []string{
		"round 3 changed words.go: files outside the PR's original diff",
		"round 2 +3 line(s)",
		"round 4 has findings where round 1 already fixed and removed lines round 2 added",
		"round 3 words.go:3 (addressed), round 5 README.md:1 (deferred)",
		"the loop's commits changed 90 lines; the PR had 40; the loop's commits touched 1 file(s) beyond the PR's 2: words.go",
	} {
		if !strings.Contains(ss[i].Detail, sub) {
			t.Errorf("%s: %q lacks %q", ss[i].Kind, ss[i].Detail, sub)
		}
	}
}

// TestPR_G2_DriftSignalsOnlyWhenTheLedgerShowsThem: each signal's rule,
// one case that fires it and the nearest that does not.
func TestPR_G2_DriftSignalsOnlyWhenTheLedgerShowsThem(t *testing.T) {
	one := func(f func(in *Input)) string {
		in := Input{BaseDiffLines: 40, LoopDiffLines: 10, ScopeFiles: []FileStat{{Path: "a.go"}, {Path: "b.go"}}}
		f(&in)
		return kinds(Signals(in))
	}
	round := func(n int, commit string, added, deleted int, files []string, es ...Entry) Round {
		return Round{N: n, Commit: commit, Added: added, Deleted: deleted, Files: files, Findings: es}
	}
	minor := Entry{ID: "m", Path: "a.go", Where: "a.go:1", Verdict: "minor", Disposition: "addressed"}
	structural := Entry{ID: "s", Path: "a.go", Where: "a.go:9", Verdict: "structural", Disposition: "addressed"}
	for _, tc := range []struct {
		name, want string
		f          func(in *Input)
	}{
		{"calm", "", func(in *Input) {
			in.Rounds = []Round{round(1, "c1", 3, 1, []string{"a.go"}, structural), round(2, "c2", 1, 1, []string{"b.go"}, minor)}
		}},
		{"a minor fix that grows the code", "over-engineering[1]", func(in *Input) {
			in.Rounds = []Round{round(1, "c1", 3, 1, []string{"a.go"}, minor)}
		}},
		{"a minor fix beside a structural one", "", func(in *Input) {
			in.Rounds = []Round{round(1, "c1", 3, 1, []string{"a.go"}, minor, structural)}
		}},
		{"a minor finding deferred", "", func(in *Input) {
			d := minor
			d.Disposition = "deferred"
			in.Rounds = []Round{round(1, "c1", 3, 1, []string{"a.go"}, d, structural)}
		}},
		{"a commit outside the scope", "out-of-scope[2] scope-growth[]", func(in *Input) {
			in.Rounds = []Round{round(1, "c1", 1, 1, []string{"a.go"}, structural), round(2, "c2", 1, 1, []string{"c.go"})}
		}},
		{"outside files, unknown scope", "", func(in *Input) {
			in.ScopeFiles = nil
			in.Rounds = []Round{round(2, "c2", 1, 1, []string{"c.go"}, Entry{Path: "c.go", Where: "c.go:1", Disposition: "addressed"})}
		}},
		{"one outside file among many", "out-of-scope[1]", func(in *Input) {
			in.ScopeFiles = []FileStat{{Path: "a.go"}, {Path: "b.go"}, {Path: "c.go"}}
			in.Rounds = []Round{round(1, "c1", 1, 1, []string{"d.go"})}
		}},
		{"a finding outside the scope, not acted on", "belongs-in-separate-pr[1]", func(in *Input) {
			in.Rounds = []Round{round(1, "", 0, 0, nil, Entry{Path: "README.md", Where: "README.md:2", Disposition: "escalated"})}
		}},
		{"a finding without a path", "", func(in *Input) {
			in.Rounds = []Round{round(1, "", 0, 0, nil, Entry{Where: "", Disposition: "escalated"})}
		}},
		{"the same place fixed twice", "wrong-direction[1 3]", func(in *Input) {
			in.Rounds = []Round{round(1, "c1", 1, 1, []string{"a.go"}, structural), round(3, "c3", 1, 1, []string{"a.go"}, structural)}
		}},
		{"the same place, the first not fixed", "", func(in *Input) {
			d := structural
			d.Disposition = "escalated"
			in.Rounds = []Round{round(1, "", 0, 0, nil, d), round(3, "c3", 1, 1, []string{"a.go"}, structural)}
		}},
		{"a commit removing what an earlier one added", "wrong-direction[2 5]", func(in *Input) {
			r := round(5, "c5", 1, 4, []string{"a.go"}, structural)
			r.Reworks = []int{2}
			in.Rounds = []Round{round(2, "c2", 4, 0, []string{"a.go"}, Entry{ID: "x", Where: "a.go:40", Verdict: "structural", Disposition: "addressed"}), r}
		}},
		{"reworking a reverted round", "", func(in *Input) {
			r := round(5, "c5", 1, 4, []string{"a.go"}, structural)
			r.Reworks = []int{2}
			two := round(2, "c2", 4, 0, []string{"a.go"})
			two.Reverted = true
			in.Rounds = []Round{two, r}
		}},
		{"the loop outgrew the PR", "scope-growth[]", func(in *Input) { in.LoopDiffLines = 41 }},
		{"the loop as large as the PR", "", func(in *Input) { in.LoopDiffLines = 40 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := one(tc.f); got != tc.want {
				t.Fatalf("signals %q, want %q", got, tc.want)
			}
		})
	}
}

// TestPR_G2_HandOffCarriesARecommendation: a HAND-OFF must recommend a
// separate PR or a redesign, and no other verdict may; the comment on the
// PR says the recommendation in words. A HAND-OFF that is not a usable
// verdict says a human decides.
func TestPR_G2_HandOffCarriesARecommendation(t *testing.T) {
	for _, tc := range []struct {
		name, out, rec string
		valid          bool
	}{
		{"separate PR", answerRec(HandOff, nil, RecommendSeparatePR, "round 3 is another feature"), RecommendSeparatePR, true},
		{"redesign", answerRec(HandOff, nil, RecommendRedesign, "the API keeps flipping"), RecommendRedesign, true},
		{"none", answerRec(HandOff, nil, "", "x"), "", false},
		{"unknown", answerRec(HandOff, nil, "rewrite", "x"), "", false},
		{"on a continue", answerRec(Continue, nil, RecommendSeparatePR, "x"), "", false},
		{"on a revert", answerRec(RevertAndShip, []int{1}, RecommendRedesign, "x"), "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := Parse(tc.out, drifting())
			if v.Valid != tc.valid || v.Recommendation != tc.rec || (!v.Valid && v.Decision != HandOff) {
				t.Fatalf("got %+v", v)
			}
			md := Markdown(drifting(), v)
			switch {
			case tc.rec == RecommendSeparatePR && !strings.Contains(md, "**Recommendation: move the drifted work to a separate PR** (`separate-pr`)"),
				tc.rec == RecommendRedesign && !strings.Contains(md, "**Recommendation: redesign the change before more review rounds** (`redesign`)"),
				!v.Valid && !strings.Contains(md, "**Recommendation: none**: the judge gave no usable verdict; a human decides"):
				t.Fatalf("the recap comment does not say the recommendation:\n%s", md)
			}
		})
	}
}

// TestPR_G2_RecapCommentShowsScopeSignalsAndLedger: the comment on the PR
// shows the original scope, every signal and one line per round with its
// findings, their dispositions and the change.
func TestPR_G2_RecapCommentShowsScopeSignalsAndLedger(t *testing.T) {
	in := drifting()
	in.Signals = Signals(in)
	in.Rounds[0].Change = ChangeLine(in.Rounds[0], []FileStat{{Path: "summary.go", Added: 4, Deleted: 1}})
	md := Markdown(in, Verdict{Decision: HandOff, Recommendation: RecommendSeparatePR, Reason: "round 3 | is another change", Valid: true})
	for _, want := range []string{
		"### converge recap after 10 rounds",
		"**Verdict: HAND-OFF**: round 3 | is another change",
		`Original scope: "Add stats", 2 file(s), 40 changed lines (main...s0); the loop's commits changed 90.`,
		"- **out-of-scope**: round 3 changed words.go",
		"- **over-engineering**:", "- **wrong-direction**:", "- **belongs-in-separate-pr**:", "- **scope-growth**:",
		"| 1 | summary.go:10 structural Mean divides by zero (addressed) | c1 summary.go +4 −1: addressed Mean divides by zero |",
		"| 5 | README.md:1 minor nit: badge (deferred) | no commit: 1 deferred |",
		"[reverted by a recap]",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("the recap comment lacks %q:\n%s", want, md)
		}
	}
	calm := Input{RoundCount: 10, Title: "t"}
	if md := Markdown(calm, Verdict{Decision: Continue, Reason: "fine", Valid: true}); !strings.Contains(md, "Drift signals: none") || strings.Contains(md, "Recommendation") {
		t.Errorf("a calm recap:\n%s", md)
	}
}

// TestPR_G2_PromptQuotesTheOriginalScope: the judge gets the PR's title,
// body and base diff each in its own quoted block, and the ledger with
// the signals as JSON; a scope that could not be read is said so.
func TestPR_G2_PromptQuotesTheOriginalScope(t *testing.T) {
	in := drifting()
	in.BaseDiff = "diff --git a/summary.go b/summary.go\n+func Mean(xs []float64) float64 {\n"
	in.Signals = Signals(in)
	p := Prompt(in)
	for _, want := range []string{
		"<<<PR-TITLE nonce=", "| Add stats\n",
		"<<<PR-BODY nonce=", "| Adds Mean and MovingSum.\n",
		`<<<BASE-DIFF base="main" head="s0" nonce=`, "| +func Mean(xs []float64) float64 {\n",
		"<<<LEDGER nonce=", `|   "base_diff_lines": 40,`, `|       "path": "summary_test.go",`, `|       "kind": "belongs-in-separate-pr",`,
		`"recommendation":"separate-pr|redesign"`,
	} {
		if !strings.Contains(p, want) {
			t.Errorf("the prompt lacks %q", want)
		}
	}
	if strings.Count(p, "Adds Mean and MovingSum.") != 1 {
		t.Errorf("the body is quoted %d times, want once (not again in the ledger)", strings.Count(p, "Adds Mean and MovingSum."))
	}
	in.ScopeFiles, in.ScopeError = nil, "fetch: no such commit"
	if p := Prompt(in); !strings.Contains(p, "| (the base diff could not be read: fetch: no such commit)") {
		t.Errorf("an unread scope is not said:\n%s", p)
	}
}

// TestPR_G2_BaseDiffClippedByFile: a base diff over the limit keeps whole
// files first, cuts a long file's part on a line with a note, and names
// the files left out; one under the limit is kept as it is.
func TestPR_G2_BaseDiffClippedByFile(t *testing.T) {
	file := func(name string, lines int) string {
		var b strings.Builder
		fmt.Fprintf(&b, "diff --git a/%s b/%s\n--- a/%s\n+++ b/%s\n@@ -0,0 +1,%d @@\n", name, name, name, name, lines)
		for i := range lines {
			fmt.Fprintf(&b, "+line %d of %s\n", i, name)
		}
		return b.String()
	}
	diff := file("a.go", 10) + file("big.go", 400) + file("c.go", 10) + file("d.go", 300)
	if got := ClipDiff(diff, len(diff), 100000); got != diff {
		t.Fatal("a diff within the limit was changed")
	}
	got := ClipDiff(diff, 6000, 3000)
	if len(got) > 6000+100 {
		t.Fatalf("clipped to %d characters, want about 6000", len(got))
	}
	for _, want := range []string{file("a.go", 10), "diff --git a/big.go", "more lines of this file's diff left out]\n", file("c.go", 10), "[… the diff of 1 more file(s) left out: d.go]\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("the clipped diff lacks %q:\n%s", want, got)
		}
	}
	for _, l := range strings.Split(got, "\n") {
		if strings.HasPrefix(l, "+line") && !slices.Contains([]string{"a.go", "big.go", "c.go"}, l[strings.LastIndex(l, " ")+1:]) {
			t.Fatalf("a line of a left-out file: %q", l)
		}
	}
}
