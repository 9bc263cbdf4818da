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
