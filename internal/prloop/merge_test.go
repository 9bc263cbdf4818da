package prloop

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/convergeloop/converge/internal/forge"
)

// Unit tests of the pure functions of merge.go.

func TestPR_S6_SimilarityIsWordSetJaccardAtLeastHalf(t *testing.T) {
	for _, tt := range []struct {
		name string
		a, b string
		want bool
	}{
		{"identical", "nil pointer dereference", "nil pointer dereference", true},
		{"exactly 1/2: 2 shared of 4", "alpha beta gamma", "alpha beta delta", true},
		{"2/5 is below", "alpha beta gamma", "alpha beta delta epsilon", false},
		{"1/3 is below", "alpha beta", "alpha gamma", false},
		{"case, punctuation and stop words do not count", "The nil-pointer: dereference!", "nil pointer dereference of a", true},
		{"not is a word", "cfg can be nil", "cfg can not be nil", true}, // {cfg,can,nil} vs {cfg,can,not,nil}: 3/4
		{"code in a suggestion block is not prose", "Missing nil check.\n\n```suggestion\nif cfg == nil { return errNoConfig }\n```", "missing nil check", true},
		{"a summary that is only code keeps it", "```suggestion\nreturn err\n```", "return err", true},
		{"hidden markers do not count", "missing nil check <!-- converge:reply thread=T1 head=h disposition=addressed -->", "missing nil check", true},
		{"two empty summaries are not similar", "", "  ", false},
	} {
		if got := similar(tt.a, tt.b); got != tt.want {
			t.Errorf("%s: similar(%q, %q) = %v, want %v (words %v / %v)", tt.name, tt.a, tt.b, got, tt.want, words(tt.a), words(tt.b))
		}
		if got := similar(tt.b, tt.a); got != tt.want {
			t.Errorf("%s: not symmetric", tt.name)
		}
	}
}

func at2(path string, start, end int) Finding {
	return Finding{ID: "x", Path: path, StartLine: start, EndLine: end}
}

func TestPR_S6_NearIsThreeLinesApartInclusive(t *testing.T) {
	for _, tt := range []struct {
		name      string
		a, b      Finding
		near, hit bool // PR-S6 near, PR-S7 intersects
	}{
		{"same line", at2("a.go", 10, 10), at2("a.go", 10, 10), true, true},
		{"ranges share one line", at2("a.go", 10, 12), at2("a.go", 12, 14), true, true},
		{"adjacent lines: near, not intersecting", at2("a.go", 10, 12), at2("a.go", 13, 13), true, false},
		{"3 lines apart: near", at2("a.go", 10, 12), at2("a.go", 15, 15), true, false},
		{"4 lines apart: not near", at2("a.go", 10, 12), at2("a.go", 16, 16), false, false},
		{"3 apart the other way", at2("a.go", 20, 20), at2("a.go", 14, 17), true, false},
		{"4 apart the other way", at2("a.go", 20, 20), at2("a.go", 14, 16), false, false},
		{"start 0 is the single end line", at2("a.go", 0, 12), at2("a.go", 15, 15), true, false},
		{"file-level is near everything in its file", at2("a.go", 0, 0), at2("a.go", 900, 910), true, true},
		{"file-level on both", at2("a.go", 0, 0), at2("a.go", 0, 0), true, true},
		{"another file never", at2("a.go", 10, 10), at2("b.go", 10, 10), false, false},
		{"file-level of another file never", at2("a.go", 0, 0), at2("b.go", 10, 10), false, false},
		{"no path: no position", at2("", 0, 0), at2("", 0, 0), false, false},
		{"an outdated thread that lost its line", Finding{Path: "a.go", OrigStart: 9, OrigEnd: 10, Outdated: true}, at2("a.go", 10, 10), false, false},
	} {
		if got := near(spanOf(tt.a), spanOf(tt.b)); got != tt.near {
			t.Errorf("%s: near = %v, want %v", tt.name, got, tt.near)
		}
		if got := near(spanOf(tt.b), spanOf(tt.a)); got != tt.near {
			t.Errorf("%s: near not symmetric", tt.name)
		}
		if got := intersects(spanOf(tt.a), spanOf(tt.b)); got != tt.hit {
			t.Errorf("%s: intersects = %v, want %v", tt.name, got, tt.hit)
		}
	}
}

func TestPR_S6_MergeFindings(t *testing.T) {
	th := func(id, path string, line int, body string) Finding {
		return Finding{ID: id, ThreadID: id, Path: path, StartLine: line, EndLine: line, Summary: body, Verdict: VerdictStructural, Source: "copilot"}
	}
	local := func(id, path string, line int, body string, v Verdict) Finding {
		return Finding{ID: id, Path: path, StartLine: line, EndLine: line, Summary: body, Verdict: v, Source: "local"}
	}
	comment := Finding{ID: "comment:1", CommentID: "comment:1", Summary: "nil pointer dereference", Verdict: VerdictStructural, Source: "human"}
	for _, tt := range []struct {
		name   string
		in     []Finding
		ids    []string
		merged map[string][]string
	}{
		{"the thread wins over the local finding listed before it",
			[]Finding{local("L1", "a.go", 12, "nil pointer dereference", VerdictStructural), th("T1", "a.go", 10, "Nil pointer dereference here")},
			[]string{"T1"}, map[string][]string{"T1": {"L1"}}},
		{"different files are never merged",
			[]Finding{th("T1", "a.go", 10, "nil pointer dereference"), local("L1", "b.go", 10, "nil pointer dereference", VerdictStructural)},
			[]string{"T1", "L1"}, nil},
		{"4 lines apart are not merged",
			[]Finding{th("T1", "a.go", 10, "nil pointer dereference"), local("L1", "a.go", 14, "nil pointer dereference", VerdictStructural)},
			[]string{"T1", "L1"}, nil},
		{"dissimilar summaries are not merged",
			[]Finding{th("T1", "a.go", 10, "nil pointer dereference"), local("L1", "a.go", 10, "off by one in the loop bound", VerdictStructural)},
			[]string{"T1", "L1"}, nil},
		{"a file-level local finding merges into a thread of its file",
			[]Finding{th("T1", "a.go", 10, "nil pointer dereference"), local("L1", "a.go", 0, "nil pointer dereference", VerdictStructural)},
			[]string{"T1"}, map[string][]string{"T1": {"L1"}}},
		{"two threads: the first wins",
			[]Finding{th("T2", "a.go", 10, "nil pointer dereference"), th("T1", "a.go", 11, "nil pointer dereference")},
			[]string{"T2"}, map[string][]string{"T2": {"T1"}}},
		{"a top-level comment has no position: never merged",
			[]Finding{th("T1", "a.go", 10, "nil pointer dereference"), comment},
			[]string{"T1", "comment:1"}, nil},
		{"two local findings merge; all into one thread",
			[]Finding{local("L1", "a.go", 10, "nil pointer dereference", VerdictStructural), local("L2", "a.go", 11, "nil pointer dereference", VerdictStructural), th("T1", "a.go", 12, "nil pointer dereference")},
			[]string{"T1"}, map[string][]string{"T1": {"L1", "L2"}}},
		{"compared with survivors only: no chain",
			// L2 is near L1's survivor T1? T1 at 10, L2 at 14: 4 apart, not
			// merged, although L1 at 12 is near both.
			[]Finding{th("T1", "a.go", 10, "nil pointer dereference"), local("L1", "a.go", 12, "nil pointer dereference", VerdictStructural), local("L2", "a.go", 14, "nil pointer dereference", VerdictStructural)},
			[]string{"T1", "L2"}, map[string][]string{"T1": {"L1"}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			in := slices.Clone(tt.in)
			out := mergeFindings(tt.in)
			if !reflect.DeepEqual(in, tt.in) {
				t.Fatal("mergeFindings wrote into its input")
			}
			var ids []string
			merged := map[string][]string{}
			for _, f := range out {
				ids = append(ids, f.ID)
				if len(f.MergedFrom) > 0 {
					merged[f.ID] = f.MergedFrom
				}
			}
			if tt.merged == nil {
				tt.merged = map[string][]string{}
			}
			if !reflect.DeepEqual(ids, tt.ids) || !reflect.DeepEqual(merged, tt.merged) {
				t.Fatalf("got %v merged %v, want %v merged %v", ids, merged, tt.ids, tt.merged)
			}
		})
	}
	// A structural twin makes the survivor structural (fail-closed).
	out := mergeFindings([]Finding{
		{ID: "T1", ThreadID: "T1", Path: "a.go", EndLine: 10, Summary: "nil pointer dereference", Verdict: VerdictMinor},
		local("L1", "a.go", 10, "nil pointer dereference", VerdictStructural),
	})
	if len(out) != 1 || out[0].Verdict != VerdictStructural {
		t.Fatalf("verdict: %+v", out)
	}
	b, _ := json.Marshal(out[0])
	if !strings.Contains(string(b), `"merged_from":["L1"]`) {
		t.Fatalf("json: %s", b)
	}
}

func TestPR_S7_ConflictsAreIntersectingStructuralThreads(t *testing.T) {
	th := func(id string, start, end int) Finding {
		return Finding{ID: id, ThreadID: id, Path: "a.go", StartLine: start, EndLine: end, Verdict: VerdictStructural}
	}
	minor := th("M", 11, 11)
	minor.Verdict = VerdictMinor
	localF := Finding{ID: "L", Path: "a.go", StartLine: 11, EndLine: 11, Verdict: VerdictStructural}
	other := th("O", 11, 11)
	other.Path = "b.go"
	got := conflicts([]Finding{th("A", 10, 12), th("B", 12, 14), th("C", 15, 15), th("F", 0, 0), minor, localF, other})
	want := map[string][]string{
		"A": {"B", "F"}, "B": {"A", "F"}, "C": {"F"}, "F": {"A", "B", "C"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	if got := conflicts([]Finding{th("A", 10, 12), th("B", 13, 14)}); len(got) != 0 {
		t.Fatalf("adjacent ranges conflict: %v", got)
	}
}

const sampleDiff = `diff --git a/main.go b/main.go
index 1111111..2222222 100644
--- a/main.go
+++ b/main.go
@@ -5,0 +6,2 @@ func main() {
+	log.Printf("debug")
+	log.Printf("more")
@@ -20 +22 @@ func run() error {
-	return nil
+	return err
@@ -30,2 +31,0 @@ func tidy() {
-	a := 1
-	b := 2
diff --git a/new.go b/new.go
new file mode 100644
index 0000000..3333333
--- /dev/null
+++ b/new.go
@@ -0,0 +1 @@
+package main
diff --git a/old.go b/old.go
deleted file mode 100644
index 4444444..0000000
--- a/old.go
+++ /dev/null
@@ -1 +0,0 @@
-package old
diff --git "a/sp ace\t.go" "b/sp ace\t.go"
--- "a/sp ace\t.go"
+++ "b/sp ace\t.go"
@@ -1 +1 @@
-x
+y
Binary files a/img.png and b/img.png differ
`

func TestPR_S8_ParseHunks(t *testing.T) {
	want := []Hunk{
		{Path: "main.go", OldStart: 5, OldCount: 0, NewStart: 6, NewCount: 2, Added: []string{"\tlog.Printf(\"debug\")", "\tlog.Printf(\"more\")"}},
		{Path: "main.go", OldStart: 20, OldCount: 1, NewStart: 22, NewCount: 1, Removed: []string{"\treturn nil"}, Added: []string{"\treturn err"}},
		{Path: "main.go", OldStart: 30, OldCount: 2, NewStart: 31, NewCount: 0, Removed: []string{"\ta := 1", "\tb := 2"}},
		{Path: "new.go", OldStart: 0, OldCount: 0, NewStart: 1, NewCount: 1, Added: []string{"package main"}},
		{Path: "old.go", OldStart: 1, OldCount: 1, NewStart: 0, NewCount: 0, Removed: []string{"package old"}},
		{Path: "sp ace\t.go", OldStart: 1, OldCount: 1, NewStart: 1, NewCount: 1, Removed: []string{"x"}, Added: []string{"y"}},
	}
	if got := ParseHunks(sampleDiff); !reflect.DeepEqual(got, want) {
		t.Fatalf("got  %+v\nwant %+v", got, want)
	}
}

func TestPR_S8_MapLineThroughLaterHunks(t *testing.T) {
	hs := ParseHunks(sampleDiff)
	for _, tt := range []struct {
		in, out int
		ok      bool
	}{
		{5, 5, true},   // at the insertion point: before it
		{6, 8, true},   // after 2 inserted lines
		{19, 21, true}, // before the rewritten line
		{20, 0, false}, // rewritten
		{21, 23, true},
		{29, 31, true},
		{30, 0, false}, // deleted
		{31, 0, false},
		{32, 32, true}, // +2 -1 +0 -2 → 0... +2, 0, -2
	} {
		got, ok := mapLine(hs, "main.go", tt.in)
		if got != tt.out || ok != tt.ok {
			t.Errorf("line %d: got %d %v, want %d %v", tt.in, got, ok, tt.out, tt.ok)
		}
	}
}

func TestPR_S8_PlaceHunks(t *testing.T) {
	r1 := RoundRecord{N: 1, CommitSHA: "c1", Hunks: []Hunk{{Path: "main.go", OldStart: 20, OldCount: 1, NewStart: 20, NewCount: 1, Removed: []string{"return nil"}, Added: []string{"return err"}}}}
	shift := RoundRecord{N: 2, CommitSHA: "c2", Hunks: []Hunk{{Path: "main.go", OldStart: 5, OldCount: 0, NewStart: 6, NewCount: 3, Added: []string{"a", "b", "c"}}}}
	rewrite := RoundRecord{N: 2, CommitSHA: "c2", Hunks: []Hunk{{Path: "main.go", OldStart: 20, OldCount: 1, NewStart: 20, NewCount: 1, Removed: []string{"return err"}, Added: []string{"return wrap(err)"}}}}
	gap := RoundRecord{N: 2, CommitSHA: "c2"}
	noCommit := RoundRecord{N: 2}
	where := func(ps []placed) []string {
		var out []string
		for _, p := range ps {
			out = append(out, hunkWhere(p)+"@"+p.Commit)
		}
		return out
	}
	for _, tt := range []struct {
		name   string
		rounds []RoundRecord
		round  int
		want   []string
	}{
		{"as committed", []RoundRecord{r1}, 2, []string{"main.go:20-20@c1"}},
		{"not the current round's own", []RoundRecord{r1}, 1, nil},
		{"shifted by a later insertion above", []RoundRecord{r1, shift}, 3, []string{"main.go:6-8@c2", "main.go:23-23@c1"}},
		{"rewritten by a later round: only the later one", []RoundRecord{r1, rewrite}, 3, []string{"main.go:20-20@c2"}},
		{"a gap hides the rounds before it", []RoundRecord{r1, gap}, 3, nil},
		{"a round without a commit is no gap", []RoundRecord{r1, noCommit}, 3, []string{"main.go:20-20@c1"}},
	} {
		if got := where(placeHunks(tt.rounds, tt.round)); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s: got %v, want %v", tt.name, got, tt.want)
		}
	}
}

// moved0 is r with its hunk's line 19 added too (unchanged text), so a
// two-line suggestion over 19-20 reads what the round wrote.
func moved0(r RoundRecord) RoundRecord {
	h := r.Hunks[0]
	h.OldStart, h.OldCount, h.NewStart, h.NewCount = 19, 2, 19, 2
	h.Removed = append([]string{"\tx := 1"}, h.Removed...)
	h.Added = append([]string{"\tx := 1"}, h.Added...)
	r.Hunks = []Hunk{h}
	return r
}

func TestPR_S8_SuggestionUndoes(t *testing.T) {
	modify := RoundRecord{N: 1, CommitSHA: "c1", Hunks: []Hunk{{Path: "main.go", OldStart: 20, OldCount: 1, NewStart: 20, NewCount: 1, Removed: []string{"\treturn nil"}, Added: []string{"\treturn err"}}}}
	insert := RoundRecord{N: 1, CommitSHA: "c1", Hunks: []Hunk{{Path: "main.go", OldStart: 20, OldCount: 0, NewStart: 21, NewCount: 1, Added: []string{"\tlog.Printf(\"debug\")"}}}}
	remove := RoundRecord{N: 1, CommitSHA: "c1", Hunks: []Hunk{{Path: "main.go", OldStart: 21, OldCount: 1, NewStart: 20, NewCount: 0, Removed: []string{"\tdefer f.Close()"}}}}
	moved := RoundRecord{N: 1, CommitSHA: "c1", Hunks: []Hunk{{Path: "main.go", OldStart: 20, OldCount: 1, NewStart: 20, NewCount: 2, Removed: []string{"\treturn nil"}, Added: []string{"\tlog.Print(x)", "\treturn nil"}}}}
	brace := RoundRecord{N: 1, CommitSHA: "c1", Hunks: []Hunk{{Path: "main.go", OldStart: 21, OldCount: 1, NewStart: 20, NewCount: 0, Removed: []string{"\t}"}}}}
	sug := func(line int, lines ...string) Finding {
		body := "Please.\n\n```suggestion\n" + strings.Join(lines, "\n")
		if len(lines) > 0 {
			body += "\n"
		}
		return Finding{ID: "T", ThreadID: "T", Path: "main.go", StartLine: line, EndLine: line, Summary: body + "```\n", Verdict: VerdictStructural}
	}
	for _, tt := range []struct {
		name  string
		round RoundRecord
		f     Finding
		want  bool
	}{
		{"restores the line it replaced", modify, sug(20, "\treturn nil"), true},
		{"restores it, whitespace aside", modify, sug(20, "return   nil"), true},
		{"a further change is not a way back", modify, sug(20, "\treturn fmt.Errorf(\"run: %w\", err)"), false},
		{"the same text on other lines", modify, sug(40, "\treturn nil"), false},
		{"keeps the line", modify, sug(20, "\treturn err"), false},
		{"deletes the line it added", insert, sug(21), true},
		{"replaces the added line with something new", insert, sug(21, "\tlog.Printf(\"run %d\", n)"), false},
		{"re-adds a deleted line around the gap", remove, sug(20, "\tx := open()", "\tdefer f.Close()"), true},
		{"keeps a line the hunk kept, adds something new", moved, func() Finding {
			f := sug(21, "\treturn nil", "\tfoo()")
			f.StartLine = 20
			return f
		}(), false},
		{"a deleted brace proves nothing", brace, sug(20, "\tx := open()", "\t}"), false},
		{"without a suggestion block: cannot tell before fixing", modify, Finding{ID: "T", ThreadID: "T", Path: "main.go", EndLine: 20, Summary: "please go back to return nil", Verdict: VerdictStructural}, false},
		{"an outdated thread", modify, func() Finding { f := sug(20, "\treturn nil"); f.Outdated = true; return f }(), false},
		// GitLab's relative range: the comment is on line 19, the
		// suggestion replaces 19-20 and so restores line 20.
		{"gitlab -0+1 around the comment restores the line", moved0(modify), func() Finding {
			f := sug(19, "\tx := 1", "\treturn nil")
			f.Summary = strings.Replace(f.Summary, "```suggestion\n", "```suggestion:-0+1\n", 1)
			return f
		}(), true},
	} {
		_, got := suggestionUndoes(tt.f, placeHunks([]RoundRecord{tt.round}, 2))
		if got != tt.want {
			t.Errorf("%s: got %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestPR_S8_CommitUndoes(t *testing.T) {
	earlier := placeHunks([]RoundRecord{{N: 1, CommitSHA: "c1", Hunks: []Hunk{
		{Path: "main.go", OldStart: 20, OldCount: 1, NewStart: 20, NewCount: 1, Removed: []string{"return nil"}, Added: []string{"return err"}},
		{Path: "main.go", OldStart: 40, OldCount: 0, NewStart: 41, NewCount: 1, Added: []string{"log.Print(x)"}},
	}}}, 2)
	for _, tt := range []struct {
		name string
		h    Hunk
		want bool
	}{
		{"reverts the rewrite", Hunk{Path: "main.go", OldStart: 20, OldCount: 1, NewStart: 20, NewCount: 1, Removed: []string{"return err"}, Added: []string{"return nil"}}, true},
		{"deletes the added line", Hunk{Path: "main.go", OldStart: 41, OldCount: 1, NewStart: 40, NewCount: 0, Removed: []string{"log.Print(x)"}}, true},
		{"changes the added line further", Hunk{Path: "main.go", OldStart: 41, OldCount: 1, NewStart: 41, NewCount: 1, Removed: []string{"log.Print(x)"}, Added: []string{"log.Printf(\"x=%v\", x)"}}, false},
		{"elsewhere", Hunk{Path: "main.go", OldStart: 60, OldCount: 1, NewStart: 60, NewCount: 1, Removed: []string{"return err"}, Added: []string{"return nil"}}, false},
		{"another file", Hunk{Path: "other.go", OldStart: 20, OldCount: 1, NewStart: 20, NewCount: 1, Removed: []string{"return err"}, Added: []string{"return nil"}}, false},
	} {
		if got := len(commitUndoes([]Hunk{tt.h}, earlier)) > 0; got != tt.want {
			t.Errorf("%s: got %v, want %v", tt.name, got, tt.want)
		}
	}
	// A line the earlier hunk removed and added again (it moved) is not
	// restored by adding it once more.
	moved := placeHunks([]RoundRecord{{N: 1, CommitSHA: "c1", Hunks: []Hunk{
		{Path: "main.go", OldStart: 20, OldCount: 1, NewStart: 20, NewCount: 2, Removed: []string{"return nil"}, Added: []string{"log.Print(x)", "return nil"}},
	}}}, 2)
	if got := commitUndoes([]Hunk{{Path: "main.go", OldStart: 21, OldCount: 0, NewStart: 22, NewCount: 1, Added: []string{"return nil"}}}, moved); len(got) != 0 {
		t.Errorf("a kept line counted as restored: %+v", got)
	}
}

// Decide tables: the rules as the loop applies them, exact action
// sequences.

// threadAt is a trusted human's thread on path, lines start..end (start 0:
// the single line end; end 0: file-level).
func threadAt(id, path string, start, end int, body string) forge.Thread {
	th := thread(id, "bob", body)
	th.Path, th.StartLine, th.Line = path, start, end
	return th
}

// reviewed is round n of head awaiting its review, which has landed on
// head with threads, CI green.
func reviewed(head string, n int, threads ...forge.Thread) (State, *forge.PullRequest, Observation) {
	s := awaiting(head, n)
	pr := newPR(head)
	pr.Reviews = []forge.Review{okReview("R1", head, at(3))}
	pr.Threads = threads
	o := obs(at(3), pr)
	o.BotStartedMax = 101
	return s, pr, o
}

func fixIDs(acts []Action) []string {
	for _, a := range acts {
		if a.Kind == ActFix {
			var ids []string
			for _, f := range a.Findings {
				ids = append(ids, f.ID)
			}
			return ids
		}
	}
	return nil
}

// TestPR_S6_DedupeAcrossSources: the same point from Copilot and the local
// review is one finding (the thread's, with merged_from in the round's
// ledger), fixed once and answered with one reply; a near-miss (another
// file, 4 lines apart, other words) stays two.
func TestPR_S6_DedupeAcrossSources(t *testing.T) {
	localAt := func(path string, line int, summary string) Finding {
		return Finding{ID: "local:edge-cases:" + path, Path: path, StartLine: line, EndLine: line, Summary: summary, Verdict: VerdictStructural, Source: "local", Author: "local-review/edge-cases"}
	}
	for _, tt := range []struct {
		name   string
		local  Finding
		fix    []string
		merged []string
	}{
		{"same file, 2 lines apart, same words", localAt("main.go", 22, "Nil pointer dereference when cfg is nil."), []string{"T1"}, []string{"local:edge-cases:main.go"}},
		{"3 lines apart", localAt("main.go", 23, "nil pointer dereference when cfg is nil"), []string{"T1"}, []string{"local:edge-cases:main.go"}},
		{"4 lines apart", localAt("main.go", 24, "nil pointer dereference when cfg is nil"), []string{"T1", "local:edge-cases:main.go"}, nil},
		{"another file", localAt("util.go", 20, "nil pointer dereference when cfg is nil"), []string{"T1", "local:edge-cases:util.go"}, nil},
		{"other words", localAt("main.go", 20, "the loop bound is off by one"), []string{"T1", "local:edge-cases:main.go"}, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := cfg()
			c.LocalReview = true
			s, pr, o := reviewed("h1", 1, threadAt("T1", "main.go", 0, 20, "nil pointer dereference: cfg is nil here"))
			s.LocalReviews = []LocalReviewRecord{{Head: "h1", Round: 1, Findings: []Finding{tt.local}}}
			s, acts, term := Decide(s, o, c)
			wantTerminal(t, term, "")
			wantActs(t, acts, "fix round-1/fix")
			if got := fixIDs(acts); !reflect.DeepEqual(got, tt.fix) {
				t.Fatalf("fix %v, want %v", got, tt.fix)
			}
			if got := acts[0].Findings[0].MergedFrom; !reflect.DeepEqual(got, tt.merged) {
				t.Fatalf("merged_from %v, want %v", got, tt.merged)
			}
			ledger, _ := json.Marshal(s.Rounds[len(s.Rounds)-1])
			if tt.merged != nil && !strings.Contains(string(ledger), `"merged_from":["local:edge-cases:main.go"]`) {
				t.Fatalf("the round ledger lacks merged_from: %s", ledger)
			}
			// One reply, to the thread.
			pr2 := *pr
			pr2.HeadSHA = "h2"
			pr2.Commits = append(slices.Clone(pr.Commits), loopCommit("h2", "h1", 1))
			o2 := obs(at(5), &pr2)
			o2.Result = &ActResult{Fix: &FixResult{Round: 1, Addressed: tt.fix, CommitSHA: "h2"}}
			_, acts, _ = Decide(s, o2, c)
			wantActs(t, acts, "reply round-1/reply/T1/addressed", "resolve round-1/resolve/T1")
		})
	}
}

// TestPR_S6_SummaryNamesTheMergedThread: the round's local review
// summary still lists the local finding, and says it is one finding with
// the Copilot thread and answered there; a local finding merged into
// nothing, or into another local one, is not named so.
func TestPR_S6_SummaryNamesTheMergedThread(t *testing.T) {
	summary := "### converge local review · round 1\n\n- **edge-cases** `main.go:22` nil pointer dereference\n\n<!-- converge:local-review head=h1 round=1 -->\n"
	for _, tt := range []struct {
		name  string
		local []Finding
		want  string // "" : the summary is posted as it is
	}{
		{"merged into the thread", []Finding{{ID: "L1", Path: "main.go", StartLine: 22, EndLine: 22, Summary: "Nil pointer dereference when cfg is nil.", Verdict: VerdictStructural, Source: "local", Author: "local-review/edge-cases"}},
			"- **edge-cases** `main.go:22` is one finding with review thread T1 (bob): converge answers it there, not separately."},
		{"other words: its own finding", []Finding{{ID: "L1", Path: "main.go", StartLine: 22, EndLine: 22, Summary: "the loop bound is off by one", Verdict: VerdictStructural, Source: "local", Author: "local-review/edge-cases"}}, ""},
		{"merged into another local finding", []Finding{
			{ID: "L1", Path: "util.go", StartLine: 5, EndLine: 5, Summary: "the loop bound is off by one", Verdict: VerdictStructural, Source: "local", Author: "local-review/edge-cases"},
			{ID: "L2", Path: "util.go", StartLine: 6, EndLine: 6, Summary: "the loop bound is off by one", Verdict: VerdictStructural, Source: "local", Author: "local-review/correctness-leak"}}, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := cfg()
			c.LocalReview = true
			s, _, o := reviewed("h1", 1, threadAt("T1", "main.go", 0, 20, "nil pointer dereference: cfg is nil here"))
			s.LocalReviews = []LocalReviewRecord{{Head: "h1", Round: 1, Findings: tt.local, Summary: summary}}
			_, acts, _ := Decide(s, o, c)
			var posted *Action
			for i := range acts {
				if acts[i].Kind == ActComment && acts[i].Reason == summaryReason {
					posted = &acts[i]
				}
			}
			if posted == nil {
				t.Fatalf("no summary posted: %q", sig(acts))
			}
			if tt.want == "" {
				if posted.Body != summary {
					t.Fatalf("summary changed:\n%s", posted.Body)
				}
				return
			}
			if !strings.Contains(posted.Body, tt.want) || !strings.HasSuffix(posted.Body, "<!-- converge:local-review head=h1 round=1 -->\n") {
				t.Fatalf("summary does not name the merged thread, or lost its marker:\n%s", posted.Body)
			}
		})
	}
}

// TestPR_S6_TwoThreadsOneFinding: Copilot and a human asking for the same
// change on the same lines are one finding, fixed once; both threads get
// the disposition.
func TestPR_S6_TwoThreadsOneFinding(t *testing.T) {
	c := cfg()
	cop := threadAt("T1", "main.go", 0, 20, "Possible nil pointer dereference: cfg may be nil.")
	cop.Comments[0].Author = "Copilot"
	s, pr, o := reviewed("h1", 1, cop, threadAt("T2", "main.go", 0, 21, "cfg may be nil: nil pointer dereference"))
	s, acts, _ := Decide(s, o, c)
	wantActs(t, acts, "fix round-1/fix")
	if got := fixIDs(acts); !reflect.DeepEqual(got, []string{"T1"}) || !reflect.DeepEqual(acts[0].Findings[0].MergedFrom, []string{"T2"}) {
		t.Fatalf("fix %v merged %v", got, acts[0].Findings[0].MergedFrom)
	}
	pr.HeadSHA = "h2"
	pr.Commits = append(pr.Commits, loopCommit("h2", "h1", 1))
	o = obs(at(5), pr)
	o.Result = &ActResult{Fix: &FixResult{Round: 1, Addressed: []string{"T1"}, CommitSHA: "h2"}}
	_, acts, _ = Decide(s, o, c)
	wantActs(t, acts, "reply round-1/reply/T1/addressed", "resolve round-1/resolve/T1", "reply round-1/reply/T2/addressed", "resolve round-1/resolve/T2")
}

// TestPR_S7_ConflictsAreDeferred: structural findings of different
// threads on intersecting lines are deferred to a human (replied,
// left open, not fixed); the others are fixed. When every structural
// finding conflicts, the run ends all-conflicting (exit 3) with note
// all-conflicting-deferred-to-human, after the deferred replies.
func TestPR_S7_ConflictsAreDeferred(t *testing.T) {
	local := Finding{ID: "local:correctness-leak:main.go", Path: "main.go", StartLine: 11, EndLine: 11, Summary: "the file handle leaks", Verdict: VerdictStructural, Source: "local"}
	for _, tt := range []struct {
		name    string
		threads []forge.Thread
		local   *Finding
		first   []string // triage's actions
		fix     []string
		then    []string // after the fix (or the replies landing)
		end     Reason
	}{
		{"two intersect, one does not",
			[]forge.Thread{threadAt("T1", "main.go", 10, 12, "use a switch here"), threadAt("T2", "main.go", 12, 14, "return early instead"), threadAt("T3", "main.go", 0, 40, "handle the error")},
			nil, []string{"fix round-1/fix"}, []string{"T3"},
			[]string{"reply round-1/reply/T1/deferred", "reply round-1/reply/T2/deferred", "reply round-1/reply/T3/addressed", "resolve round-1/resolve/T3"}, ""},
		{"all intersect: all-conflicting",
			[]forge.Thread{threadAt("T1", "main.go", 10, 12, "use a switch here"), threadAt("T2", "main.go", 12, 14, "return early instead")},
			nil, []string{"reply round-1/reply/T1/deferred", "reply round-1/reply/T2/deferred"}, nil,
			[]string{"add-label " + LabelNeedsAttention, "set-status error h1"}, ReasonAllConflicting},
		{"a file-level thread intersects all of its file",
			[]forge.Thread{threadAt("T1", "main.go", 0, 0, "split this file"), threadAt("T2", "main.go", 0, 90, "return early instead")},
			nil, []string{"reply round-1/reply/T1/deferred", "reply round-1/reply/T2/deferred"}, nil,
			[]string{"add-label " + LabelNeedsAttention, "set-status error h1"}, ReasonAllConflicting},
		{"adjacent lines do not intersect",
			[]forge.Thread{threadAt("T1", "main.go", 10, 12, "use a switch here"), threadAt("T2", "main.go", 13, 14, "return early instead")},
			nil, []string{"fix round-1/fix"}, []string{"T1", "T2"},
			[]string{"reply round-1/reply/T1/addressed", "resolve round-1/resolve/T1", "reply round-1/reply/T2/addressed", "resolve round-1/resolve/T2"}, ""},
		{"another file does not intersect",
			[]forge.Thread{threadAt("T1", "main.go", 10, 12, "use a switch here"), threadAt("T2", "util.go", 10, 12, "return early instead")},
			nil, []string{"fix round-1/fix"}, []string{"T1", "T2"},
			[]string{"reply round-1/reply/T1/addressed", "resolve round-1/resolve/T1", "reply round-1/reply/T2/addressed", "resolve round-1/resolve/T2"}, ""},
		{"a local finding is no thread: fixed, and the round is not all-conflicting",
			[]forge.Thread{threadAt("T1", "main.go", 10, 12, "use a switch here"), threadAt("T2", "main.go", 12, 14, "return early instead")},
			&local, []string{"fix round-1/fix"}, []string{local.ID},
			[]string{"reply round-1/reply/T1/deferred", "reply round-1/reply/T2/deferred"}, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := cfg()
			s, pr, o := reviewed("h1", 1, tt.threads...)
			if tt.local != nil {
				c.LocalReview = true
				s.LocalReviews = []LocalReviewRecord{{Head: "h1", Round: 1, Findings: []Finding{*tt.local}}}
			}
			s, acts, term := Decide(s, o, c)
			wantTerminal(t, term, "")
			wantActs(t, acts, tt.first...)
			if got := fixIDs(acts); !reflect.DeepEqual(got, tt.fix) {
				t.Fatalf("fix %v, want %v", got, tt.fix)
			}
			if tt.fix != nil {
				pr.HeadSHA = "h2"
				pr.Commits = append(pr.Commits, loopCommit("h2", "h1", 1))
				o = obs(at(5), pr)
				o.Result = &ActResult{Fix: &FixResult{Round: 1, Addressed: tt.fix, CommitSHA: "h2"}}
			} else {
				pr = forgeApply(pr, acts, at(4))
				o = obs(at(5), pr)
			}
			var deferred []Action
			for _, a := range acts {
				if a.Kind == ActReply {
					deferred = append(deferred, a)
				}
			}
			s, acts, term = Decide(s, o, c)
			wantTerminal(t, term, tt.end)
			wantActs(t, acts, tt.then...)
			// A deferred thread is told why and never resolved.
			all := append(deferred, acts...)
			for _, a := range all {
				if a.Kind != ActReply || a.Reason != string(DispDeferred) {
					continue
				}
				if !strings.Contains(a.Body, "Deferred to a human: it conflicts with") {
					t.Fatalf("deferred reply: %q", a.Body)
				}
				if findAct(all, ActResolve, a.ThreadID) != nil {
					t.Fatalf("deferred thread %s resolved", a.ThreadID)
				}
			}
			if term != nil {
				if term.ExitCode != 3 || term.Note != NoteAllConflicting || !strings.Contains(term.Message, "awaiting-human-review") ||
					!strings.Contains(term.Message, "T1, T2") {
					t.Fatalf("terminal %+v", term)
				}
				if !slices.Contains(s.Rounds[len(s.Rounds)-1].Notes, NoteAllConflicting) {
					t.Fatalf("round notes %v", s.Rounds[len(s.Rounds)-1].Notes)
				}
			}
		})
	}
}

// TestPR_S7_AllConflictingExitCode: the terminal's reason is the IF-1
// table's "all-conflicting", which exits 3.
func TestPR_S7_AllConflictingExitCode(t *testing.T) {
	if got := ExitCode(ReasonAllConflicting); got != 3 {
		t.Fatalf("exit %d, want 3", got)
	}
}

// TestPR_S8_OscillationIsEscalated: a finding whose suggestion would undo
// what an earlier loop commit changed on the same lines is not fixed
// again: its thread is escalated, citing both rounds, and the run ends
// handed-off once that is the only thing left. A suggestion elsewhere, a
// further change, or a free-text request is fixed.
func TestPR_S8_OscillationIsEscalated(t *testing.T) {
	round1 := RoundRecord{N: 1, HeadSHA: "h0", CommitSHA: "h1", StartedAt: at(0), Hunks: []Hunk{
		{Path: "main.go", OldStart: 20, OldCount: 1, NewStart: 20, NewCount: 1, Removed: []string{"\treturn nil"}, Added: []string{"\treturn err"}},
		{Path: "main.go", OldStart: 30, OldCount: 0, NewStart: 31, NewCount: 1, Added: []string{"\tlog.Printf(\"debug %v\", x)"}},
	}}
	insertAbove := RoundRecord{N: 2, HeadSHA: "h1", CommitSHA: "h1b", StartedAt: at(0), Hunks: []Hunk{
		{Path: "main.go", OldStart: 5, OldCount: 0, NewStart: 6, NewCount: 2, Added: []string{"// a", "// b"}},
	}}
	unknown := RoundRecord{N: 2, HeadSHA: "h1", CommitSHA: "h1b", StartedAt: at(0)}
	suggestion := func(lines ...string) string {
		return "This should be:\n\n```suggestion\n" + strings.Join(lines, "\n") + "\n```\n"
	}
	escalated := []string{"reply round-3/reply/T5/escalated"}
	fix := []string{"fix round-3/fix"}
	for _, tt := range []struct {
		name    string
		earlier []RoundRecord
		thread  forge.Thread
		acts    []string
	}{
		{"restores what round 1 removed", []RoundRecord{round1}, threadAt("T5", "main.go", 0, 20, suggestion("\treturn nil")), escalated},
		{"removes what round 1 added", []RoundRecord{round1}, threadAt("T5", "main.go", 0, 31, "Drop the debug line.\n\n```suggestion\n```\n"), escalated},
		{"the lines moved since: still found", []RoundRecord{round1, insertAbove}, threadAt("T5", "main.go", 0, 22, suggestion("\treturn nil")), escalated},
		{"the old place after the move is other lines", []RoundRecord{round1, insertAbove}, threadAt("T5", "main.go", 0, 20, suggestion("\treturn nil")), fix},
		{"a round whose hunks are unknown: not claimed", []RoundRecord{round1, unknown}, threadAt("T5", "main.go", 0, 20, suggestion("\treturn nil")), fix},
		{"a further change", []RoundRecord{round1}, threadAt("T5", "main.go", 0, 20, suggestion("\treturn fmt.Errorf(\"run: %w\", err)")), fix},
		{"other lines", []RoundRecord{round1}, threadAt("T5", "main.go", 0, 50, suggestion("\treturn nil")), fix},
		{"free text cannot be told before fixing", []RoundRecord{round1}, threadAt("T5", "main.go", 0, 20, "please go back to returning nil"), fix},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := cfg()
			s, pr, o := reviewed("h2", 3, tt.thread)
			s.Rounds = slices.Clone(tt.earlier)
			if len(s.Rounds) == 1 {
				s.Rounds = append(s.Rounds, RoundRecord{N: 2, HeadSHA: "h1", StartedAt: at(0)})
			}
			s.Rounds = append(s.Rounds, RoundRecord{N: 3, HeadSHA: "h2", StartedAt: at(0)})
			s, acts, term := Decide(s, o, c)
			wantTerminal(t, term, "")
			wantActs(t, acts, tt.acts...)
			if acts[0].Kind != ActReply {
				return
			}
			body := acts[0].Body
			if !strings.Contains(body, "Escalated to a human: oscillation") || !strings.Contains(body, "round 1 (commit h1)") || !strings.Contains(body, "round 3") {
				t.Fatalf("escalation must cite both rounds: %q", body)
			}
			if s.Rounds[len(s.Rounds)-1].Findings[0].Held != DispEscalated {
				t.Fatalf("ledger: %+v", s.Rounds[len(s.Rounds)-1].Findings)
			}
			// The reply lands: the only finding is a hand-off, the review
			// of the head stands: handed-off, nothing fixed.
			pr = forgeApply(pr, acts, at(4))
			_, acts, term = Decide(s, obs(at(5), pr), c)
			wantTerminal(t, term, ReasonHandedOff)
			wantActs(t, acts, "add-label "+LabelNeedsAttention, "set-status error h2")
		})
	}
}

// TestPR_S8_FixThatRevertsIsEscalated: the round's fix would undo what
// an earlier loop commit changed on the same lines. The check before the
// push holds it back (PushCheck; TestPR_S8_RevertingFixIsNeverPushed and
// the pr_s8_free_text_revert_never_pushed scenario prove at the forge
// that it is never pushed): the workspace pushes the round's other fixes
// alone, and Decide escalates the finding citing both rounds, addresses
// the rest, and records only the commit that was pushed. A workspace that
// cannot check first (no PushChecker) has pushed it already: Decide still
// escalates it after the fact, so the loop never flips those lines back
// on its own.
func TestPR_S8_FixThatRevertsIsEscalated(t *testing.T) {
	round1 := RoundRecord{N: 1, HeadSHA: "h0", CommitSHA: "h1", StartedAt: at(0), Hunks: []Hunk{
		{Path: "main.go", OldStart: 20, OldCount: 1, NewStart: 20, NewCount: 1, Removed: []string{"\treturn nil"}, Added: []string{"\treturn err"}},
	}}
	revert := Hunk{Path: "main.go", OldStart: 20, OldCount: 1, NewStart: 20, NewCount: 1, Removed: []string{"\treturn err"}, Added: []string{"\treturn nil"}}
	further := Hunk{Path: "main.go", OldStart: 20, OldCount: 1, NewStart: 20, NewCount: 1, Removed: []string{"\treturn err"}, Added: []string{"\treturn wrap(err)"}}
	rename := Hunk{Path: "main.go", OldStart: 80, OldCount: 1, NewStart: 80, NewCount: 1, Removed: []string{"func f() {"}, Added: []string{"func run() {"}}
	kept := []Finding{
		{ID: "local:x", Path: "main.go", EndLine: 20, Summary: "wrap the error", Verdict: VerdictStructural, Source: "local"},
		{ID: "T5", ThreadID: "T5", Path: "main.go", EndLine: 21, Summary: "return nil here", Verdict: VerdictStructural},
		{ID: "T6", ThreadID: "T6", Path: "main.go", EndLine: 80, Summary: "rename", Verdict: VerdictStructural},
	}
	all := []string{"local:x", "T5", "T6"}
	state := func() State {
		s := verifying("h1", 2)
		s.Phase = PhaseFix
		s.Rounds = []RoundRecord{round1, {N: 2, HeadSHA: "h1", StartedAt: at(0)}}
		s.Kept = slices.Clone(kept)
		return s
	}
	// What a checking workspace reports of the revert: the commit it
	// would have pushed is checked, the findings that undo round 1 are
	// handed off, the rest pushed in a commit of their own.
	held, notes := NewPushCheck(state()).Undone([]Hunk{revert, rename}, kept, all)
	if !reflect.DeepEqual(held, map[string]string{"local:x": held["local:x"], "T5": held["T5"]}) || len(held) != 2 || len(notes) != 1 {
		t.Fatalf("the check holds %v (notes %v), want local:x and T5", held, notes)
	}
	checked := &FixResult{Round: 2, Addressed: []string{"T6"}, CommitSHA: "h2", Hunks: []Hunk{rename}, Notes: notes,
		Blocked: []BlockedFinding{{ID: "local:x", Reason: held["local:x"]}, {ID: "T5", Reason: held["T5"]}}}
	for _, tt := range []struct {
		name  string
		res   *FixResult
		hunks []Hunk
		acts  []string
		cites string
	}{
		{"held back before the push", checked, []Hunk{rename},
			[]string{"reply round-2/reply/T5/escalated", "reply round-2/reply/T6/addressed", "resolve round-2/resolve/T6"},
			"round 2's fix would undo what round 1 (commit h1) changed on main.go:20-20; converge did not push it"},
		{"a further change", &FixResult{Round: 2, Addressed: all, CommitSHA: "h2", Hunks: []Hunk{further}}, []Hunk{further},
			[]string{"reply round-2/reply/T5/addressed", "resolve round-2/resolve/T5", "reply round-2/reply/T6/addressed", "resolve round-2/resolve/T6"}, ""},
		{"pushed by a workspace that cannot check first", &FixResult{Round: 2, Addressed: all, CommitSHA: "h2", Hunks: []Hunk{revert}}, []Hunk{revert},
			[]string{"reply round-2/reply/T5/escalated", "reply round-2/reply/T6/addressed", "resolve round-2/resolve/T6"},
			"round 2's fix (commit h2) undoes what round 1 (commit h1) changed on main.go:20-20"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := state()
			pr := newPR("h2")
			pr.Commits = append(pr.Commits, loopCommit("h2", "h1", 2))
			pr.Threads = []forge.Thread{threadAt("T5", "main.go", 0, 21, "return nil here"), threadAt("T6", "main.go", 0, 80, "rename")}
			o := obs(at(5), pr)
			o.Result = &ActResult{Fix: tt.res}
			s, acts, term := Decide(s, o, cfg())
			wantTerminal(t, term, "")
			wantActs(t, acts, tt.acts...)
			if got := s.Rounds[1].Hunks; !reflect.DeepEqual(got, tt.hunks) || s.Rounds[1].CommitSHA != "h2" {
				t.Fatalf("round 2 keeps %+v at %s", got, s.Rounds[1].CommitSHA)
			}
			if tt.cites == "" {
				return
			}
			if b := acts[0].Body; !strings.Contains(b, tt.cites) {
				t.Fatalf("escalation: %q", b)
			}
			if n := s.Rounds[1].Notes; len(n) != 1 || !strings.Contains(n[0], "escalated: ") || !strings.Contains(n[0], "T5") {
				t.Fatalf("round notes %v", n)
			}
		})
	}
}
