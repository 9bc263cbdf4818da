package prloop

import "github.com/convergeloop/converge/internal/classify"

// Classes holds the heuristic's verdict (PR-S5) on thread comments, keyed
// by the whole input the heuristic reads, so an entry can only stand for
// the comment it was worked out on. The heuristic is pure: Decide's
// output is the same with or without an entry, and is identical to
// classifying in Decide; the entry only saves the work. A comment is
// classified once, when an observation first shows it (ClassifyObserved),
// not again on every step that reads the thread (a round of 500 new
// threads classified on every wake-up and every probe).
type Classes map[classify.Comment]class

// class is what a finding keeps of the heuristic's result.
type class struct {
	verdict classify.Verdict
	text    string // classify.Result.String(), for the decision log
}

func classOf(in classify.Comment) class {
	r := classify.Heuristic(in)
	return class{verdict: r.Verdict, text: r.String()}
}

// heuristic is the heuristic's class of in, from k when there.
func (k Classes) heuristic(in classify.Comment) class {
	if r, ok := k[in]; ok {
		return r
	}
	return classOf(in)
}

// ClassifyObserved classifies the comment of every thread of o that
// triage on s could make a finding of, reusing prev's entries (the
// previous observation's) and classifying only what is new. The result
// holds this observation's comments only, so it stays as large as the
// PR's open threads.
func ClassifyObserved(s State, o Observation, c Config, prev Classes) Classes {
	c = c.observed(o)
	if o.PR == nil {
		return nil
	}
	out := make(Classes, len(o.PR.Threads))
	for _, v := range classifyThreads(s, o, c) {
		if v.Kind != thFinding && v.Kind != thDropped || len(v.T.Comments) == 0 {
			continue
		}
		in := classInput(v, c)
		if _, ok := out[in]; !ok {
			out[in] = prev.heuristic(in)
		}
	}
	return out
}
