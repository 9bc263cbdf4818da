package prwork

import (
	"github.com/convergeloop/converge/internal/census"
	"github.com/convergeloop/converge/internal/prloop"
	"github.com/convergeloop/converge/internal/verify"
)

// beginCensus starts the censuses of a Fix, with the tests its findings
// ask to remove.
func (w *GitWorkspace) beginCensus(findings []prloop.Finding) {
	w.censuses, w.mayGo = nil, nil
	if w.TestsMayGo != nil {
		w.mayGo = w.TestsMayGo(findings)
		return
	}
	// By default a test may go when a finding names it and asks for that,
	// in the words PR-V3's waiver reads.
	var vfs []verify.Finding
	for _, f := range findings {
		vfs = append(vfs, verify.Finding{ID: f.ID, Path: f.Path, Start: f.StartLine, End: f.EndLine, Body: f.Summary})
	}
	w.mayGo = verify.TestMayGo(vfs)
}

// endCensus is the censuses of the Fix on head: the last candidate run is
// the tree committed as commit, when there is one (the tested tree is the
// one committed); a commit with no run was pushed untested.
func (w *GitWorkspace) endCensus(head, commit string) []prloop.TestCensus {
	cs := w.censuses
	w.censuses, w.mayGo = nil, nil
	if len(cs) == 0 {
		cs = append(cs, prloop.TestCensus{Kind: prloop.CensusBaseline, Head: head, Census: census.Census{Why: "no test command found"}})
	}
	if commit == "" {
		return cs
	}
	if n := len(cs); cs[n-1].Kind == prloop.CensusCandidate {
		cs[n-1].Kind, cs[n-1].Head = prloop.CensusCommit, commit
		return cs
	}
	return append(cs, prloop.TestCensus{Kind: prloop.CensusCommit, Head: commit, Census: census.Census{Why: "no test command found; pushed untested (allow_untested)"}})
}

// untested hands off every finding of a Fix with no test command found
// (PR-V4): no fixer runs, nothing is pushed.
func (w *GitWorkspace) untested(res prloop.FixResult, fs []prloop.Finding) prloop.FixResult {
	w.logf("no test command found: handing the round's findings off rather than pushing untested fixes (allow_untested: true to push them)")
	for _, f := range fs {
		res.Blocked = append(res.Blocked, prloop.BlockedFinding{ID: f.ID, Reason: prloop.NoTestCommand})
	}
	return res
}
