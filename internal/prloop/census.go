package prloop

import (
	"fmt"

	"github.com/convergeloop/converge/internal/census"
	"github.com/convergeloop/converge/internal/text"
)

// TestCensus is the test census of one build/test run of a round (PR-V4):
// the PR's head before the fixes (the baseline), a candidate tree the
// fixes made, or the commit that was pushed.
type TestCensus struct {
	// Kind is CensusBaseline, CensusCandidate or CensusCommit.
	Kind string `json:"kind"`
	// Head is the commit tested: the baseline's head, or the pushed
	// commit; "" for a candidate that was not committed.
	Head string `json:"head,omitempty"`
	census.Census
}

// The kinds of TestCensus.
const (
	CensusBaseline  = "baseline"
	CensusCandidate = "candidate"
	CensusCommit    = "commit"
)

// String is one line for the decision log.
func (t TestCensus) String() string {
	at := t.Kind
	if t.Head != "" {
		at += " " + text.ShortSHA(t.Head)
	}
	return fmt.Sprintf("%s: %s", at, t.Census)
}

// NoTestCommand is the hand-off reason of a fix not pushed because the
// repository's test command could not be found (PR-V4).
const NoTestCommand = "no test command: the fix would be pushed untested; set test_cmd, or allow_untested: true to push untested fixes"

// headCensus is the census of sha from the rounds' records: the run that
// tested that exact commit, the latest first; nil when no round did.
func headCensus(rounds []RoundRecord, sha string) *TestCensus {
	for i := len(rounds) - 1; i >= 0; i-- {
		cs := rounds[i].Censuses
		for j := len(cs) - 1; j >= 0; j-- {
			if c := cs[j]; c.Head == sha && c.Kind != CensusCandidate {
				return &c
			}
		}
	}
	return nil
}

// proofCensus is the proof's census of the final head: the one a round
// took, or an unknown one saying why there is none — never a guess.
func proofCensus(s *State, head string) *TestCensus {
	if c := headCensus(s.Rounds, head); c != nil {
		return c
	}
	why := "converge ran no tests on this head (no fix round tested it)"
	return &TestCensus{Kind: CensusCommit, Head: head, Census: census.Census{Why: why}}
}

// beginCensus starts the censuses of a Fix, with the tests its findings
// ask to remove.
func (w *GitWorkspace) beginCensus(findings []Finding) {
	w.censuses, w.mayGo = nil, nil
	if w.TestsMayGo != nil {
		w.mayGo = w.TestsMayGo(findings)
	}
}

// endCensus is the censuses of the Fix on head: the last candidate run is
// the tree committed as commit, when there is one (the tested tree is the
// one committed); a commit with no run was pushed untested.
func (w *GitWorkspace) endCensus(head, commit string) []TestCensus {
	cs := w.censuses
	w.censuses, w.mayGo = nil, nil
	if len(cs) == 0 {
		cs = append(cs, TestCensus{Kind: CensusBaseline, Head: head, Census: census.Census{Why: "no test command found"}})
	}
	if commit == "" {
		return cs
	}
	if n := len(cs); cs[n-1].Kind == CensusCandidate {
		cs[n-1].Kind, cs[n-1].Head = CensusCommit, commit
		return cs
	}
	return append(cs, TestCensus{Kind: CensusCommit, Head: commit, Census: census.Census{Why: "no test command found; pushed untested (allow_untested)"}})
}

// untested hands off every finding of a Fix with no test command found
// (PR-V4): no fixer runs, nothing is pushed.
func (w *GitWorkspace) untested(res FixResult, fs []Finding) FixResult {
	w.logf("no test command found: handing the round's findings off rather than pushing untested fixes (allow_untested: true to push them)")
	for _, f := range fs {
		res.Blocked = append(res.Blocked, BlockedFinding{ID: f.ID, Reason: NoTestCommand})
	}
	return res
}
