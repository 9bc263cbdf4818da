package prloop

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/convergeloop/converge/internal/forge"
	"github.com/convergeloop/converge/internal/recap"
	"github.com/convergeloop/converge/internal/store"
)

// afterFix is round 2 on head h2, the commit of round 1, which changed
// lines 20-22 of main.go (a replaced line and two added) and removed line
// 40 (lines 39-40 of h2 around the gap), with threads landed on h2.
func afterFix(threads ...forge.Thread) (State, *forge.PullRequest, Observation) {
	s, pr, o := reviewed("h2", 2, threads...)
	s.Rounds[0] = RoundRecord{N: 1, HeadSHA: "h1", CommitSHA: "h2", StartedAt: at(0), Structural: true,
		Findings: []Finding{{ID: "T1", ThreadID: "T1", Path: "main.go", EndLine: 20, Verdict: VerdictStructural, Summary: "return the error"}},
		Hunks: []Hunk{
			{Path: "main.go", OldStart: 20, OldCount: 1, NewStart: 20, NewCount: 3, Removed: []string{"\treturn nil"}, Added: []string{"\tif err != nil {", "\t\treturn err", "\t}"}},
			{Path: "main.go", OldStart: 40, OldCount: 1, NewStart: 41, NewCount: 0, Removed: []string{"\t// TODO"}},
		}}
	s.Rounds[1].HeadSHA = "h2"
	s.LastLoopSHA = "h2"
	pr.Commits = append(pr.Commits, loopCommit("h2", "h1", 1))
	return s, pr, o
}

// TestPR_G2_FixCausedFindingIsTagged: a new finding on lines the previous
// round's commit changed is tagged fix-caused with that round: in the
// round's ledger, in its reply (with the commit), and in the decision
// log. A finding beside those lines, in another file, file-level, a thread
// converge answered before, or any finding when the head is not that
// commit, is not.
func TestPR_G2_FixCausedFindingIsTagged(t *testing.T) {
	answered := declinedThread("T9", "bob", 21, "keep this", DispDeferred, "a human decides")
	answered.Path = "main.go"
	for _, tt := range []struct {
		name   string
		thread forge.Thread
		head   string
		tagged bool
	}{
		{"on a line it added", threadAt("T5", "main.go", 0, 21, "wrapping the error would help the caller"), "h2", true},
		{"a range reaching into its lines", threadAt("T5", "main.go", 15, 20, "this block is hard to read"), "h2", true},
		{"beside the lines it removed", threadAt("T5", "main.go", 0, 42, "the TODO is still needed"), "h2", true},
		{"the line after its lines", threadAt("T5", "main.go", 0, 23, "name this variable"), "h2", false},
		{"another file", threadAt("T5", "util.go", 0, 21, "name this variable"), "h2", false},
		{"file-level", threadAt("T5", "main.go", 0, 0, "split this file"), "h2", false},
		{"a thread converge answered before", answered, "h2", false},
		{"the head is not the previous round's commit", threadAt("T5", "main.go", 0, 21, "wrapping the error would help the caller"), "h3", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s, pr, o := afterFix(tt.thread)
			if tt.head != "h2" {
				pr.HeadSHA, s.LastLoopSHA, s.HeadSeen = tt.head, tt.head, tt.head
				pr.Commits = append(pr.Commits, loopCommit(tt.head, "h2", 1))
				s.Request.Head, pr.Reviews[0].CommitSHA = tt.head, tt.head
			}
			if tt.thread.ID == "T9" {
				// A hand-off answered again by its reviewer is a finding
				// of this round, not a new one.
				tt.thread.Comments = append(tt.thread.Comments, forge.Comment{ID: "T9-c2", Author: "bob", Body: "now please fix it", CreatedAt: at(2)})
				pr.Threads = []forge.Thread{tt.thread}
			}
			s, acts, term := Decide(s, o, cfg())
			wantTerminal(t, term, "")
			if findAct(acts, ActFix, "") == nil {
				t.Fatalf("no fix: %v", sig(acts))
			}
			f := s.Rounds[1].Findings[0]
			if (f.FixCaused == 1) != tt.tagged || (tt.tagged && f.FixCausedCommit != "h2") || (!tt.tagged && f.FixCaused != 0) {
				t.Fatalf("fix-caused %d %q, want tagged %v", f.FixCaused, f.FixCausedCommit, tt.tagged)
			}
			if !tt.tagged {
				return
			}
			// The fix lands; the reply carries the tag and the commit.
			pr.HeadSHA = "h3"
			pr.Commits = append(pr.Commits, loopCommit("h3", "h2", 2))
			o = obs(at(5), pr)
			o.Result = &ActResult{Fix: &FixResult{Round: 2, Addressed: []string{"T5"}, CommitSHA: "h3"}}
			s, acts, _ = Decide(s, o, cfg())
			r := findAct(acts, ActReply, "T5")
			if r == nil || !strings.HasPrefix(r.Body, "`fix-caused`: this point is on lines round 1's commit [h2](https://github.com/o/r/pull/7/commits/h2) changed.\n\nAddressed in") {
				t.Fatalf("reply: %+v", r)
			}
			// The decision log shows the tag on the finding and the round.
			log := decisionLog(t, s)
			for _, want := range []string{"| addressed; fix-caused: round 1 (`h2`) |", "- fix-caused: T5 on lines round 1's commit changed"} {
				if !strings.Contains(log, want) {
					t.Errorf("log lacks %q:\n%s", want, log)
				}
			}
		})
	}
}

// decisionLog renders s as the store would hold it.
func decisionLog(t *testing.T, s State) string {
	t.Helper()
	raw, _ := json.Marshal(s)
	var rounds []store.Round
	var fs []store.Finding
	disp := map[string]string{}
	for _, r := range s.Threads {
		disp[fmt.Sprintf("%d/%s", r.Round, r.ThreadID)] = string(r.Disposition)
	}
	for _, r := range s.Rounds {
		sum, _ := json.Marshal(r)
		rounds = append(rounds, store.Round{N: r.N, HeadSHA: r.HeadSHA, CommitSHA: r.CommitSHA, Structural: r.Structural, Summary: sum})
		for _, f := range r.Findings {
			fs = append(fs, store.Finding{ID: f.ID, Round: r.N, ThreadID: f.ThreadID, Path: f.Path, EndLine: f.EndLine, Summary: f.Summary,
				Verdict: string(f.Verdict), Source: f.Source, Author: f.Author, Disposition: disp[fmt.Sprintf("%d/%s", r.N, f.ThreadID)]})
		}
	}
	var b bytes.Buffer
	if err := WriteDecisionLog(&b, RunRecord{Run: store.Run{ID: "r-1", Kind: "pr", State: raw}, Rounds: rounds, Findings: fs}); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// fixCausedRounds is a run at the top of round len(tagged)+1 whose rounds
// each committed, round i's findings fix-caused by round i-1 when
// tagged[i-1], with as many review-bot reviews on the forge as rounds.
func fixCausedRounds(tagged ...bool) (State, *forge.PullRequest, Config) {
	s, pr, c := atTopOfRound(len(tagged), len(tagged))
	for i, tg := range tagged {
		if tg {
			s.Rounds[i].Findings[0].FixCaused = i
			s.Rounds[i].Findings[0].FixCausedCommit = fmt.Sprintf("c%d", i)
		}
	}
	return s, pr, c
}

// TestPR_G2_TwoFixCausedRoundsHoldTheRecapEarly: two rounds in a row with
// fix-caused findings are drift: the recap gate holds before the next
// round although the cadence is not due, once per chain; its input tags
// the findings and carries a fix-caused signal naming the rounds.
func TestPR_G2_TwoFixCausedRoundsHoldTheRecapEarly(t *testing.T) {
	for _, tt := range []struct {
		name     string
		tagged   []bool
		interval int
		due      bool
	}{
		{"rounds 2 and 3 fix-caused", []bool{false, true, true}, 10, true},
		{"only the last round", []bool{false, false, true}, 10, false},
		{"not in a row", []bool{false, true, false, true}, 10, false},
		{"the chain grows: it held when it reached two", []bool{false, true, true, true}, 10, false},
		{"a second chain holds again", []bool{false, true, true, false, true, true}, 10, true},
		{"recaps switched off", []bool{false, true, true}, 0, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s, pr, c := fixCausedRounds(tt.tagged...)
			c.RecapInterval = tt.interval
			s2, acts, term := Decide(s, obs(at(1), pr), c)
			wantTerminal(t, term, "")
			a := findAct(acts, ActRecap, "")
			if (a != nil) != tt.due {
				t.Fatalf("recap %v, want %v: %v", a != nil, tt.due, sig(acts))
			}
			if !tt.due {
				if findAct(acts, ActRequestReview, "") == nil {
					t.Fatalf("the round did not start: %v", sig(acts))
				}
				return
			}
			if s2.Round != s.Round {
				t.Fatalf("a round started before the recap")
			}
			n := len(tt.tagged)
			var sg *recap.Signal
			for i := range a.Recap.Signals {
				if a.Recap.Signals[i].Kind == "fix-caused" {
					sg = &a.Recap.Signals[i]
				}
			}
			if sg == nil || !reflect.DeepEqual(sg.Rounds[len(sg.Rounds)-2:], []int{n - 1, n}) || !strings.Contains(sg.Detail, "two fix-caused rounds in a row") {
				t.Fatalf("signals %+v", a.Recap.Signals)
			}
			if got := a.Recap.Rounds[n-1].Findings[0].Summary; got != fmt.Sprintf("[fix-caused by round %d] fix it", n-1) {
				t.Fatalf("ledger summary %q", got)
			}
			// The verdict comes: CONTINUE starts the round.
			o := obs(at(2), pr)
			o.Result = &ActResult{Recap: &RecapResult{Count: n, Input: *a.Recap, Verdict: recap.Verdict{Decision: recap.Continue, Reason: "in scope", Valid: true}}}
			_, acts, _ = Decide(s2, o, c)
			if findAct(acts, ActRequestReview, "") == nil || !strings.Contains(findAct(acts, ActComment, "").Body, "**fix-caused**: new findings on lines the round before had just changed") {
				t.Fatalf("after CONTINUE: %v\n%s", sig(acts), findAct(acts, ActComment, "").Body)
			}
		})
	}
}
