package classify

import "context"

// Who decided a comment's verdict.
const (
	ByHeuristic = "heuristic"
	ByJudge     = "judge"
	// ByNoJudge: the heuristic left the comment borderline and no judge is
	// configured; it is structural, as every finding is where no
	// classifier runs (PR-S5, fail-closed).
	ByNoJudge = "no-judge"
)

// Decision is the classification of one comment in a round.
type Decision struct {
	ID string `json:"id"`
	// Verdict is Structural, Minor or Unclear; the loop treats Unclear as
	// Structural (see IsStructural).
	Verdict   Verdict `json:"verdict"`
	By        string  `json:"by"` // ByHeuristic, ByJudge or ByNoJudge
	Heuristic Result  `json:"heuristic"`
	Judge     *Judged `json:"judge,omitempty"` // the judge's verdict, when asked
}

// IsStructural: the loop must act on the comment as structural — it is
// anything but minor.
func (d Decision) IsStructural() bool { return d.Verdict != Minor }

// Round is the classification of one round's comments.
type Round struct {
	Decisions []Decision `json:"decisions"` // in the order of the comments
	// Judge is the judge's answer, nil when no comment was borderline or
	// no judge is configured.
	Judge *Answer `json:"judge,omitempty"`
}

// Unclear reports whether some comment's classification was unclear this
// round: such a round counts as a structural round for PR-T6 (PR-G4).
func (r Round) Unclear() bool {
	for _, d := range r.Decisions {
		if d.Verdict == Unclear {
			return true
		}
	}
	return false
}

// Structural reports whether the round has a comment to act on as
// structural (an unclear one included).
func (r Round) Structural() bool {
	for _, d := range r.Decisions {
		if d.IsStructural() {
			return true
		}
	}
	return false
}

// Classify classifies one round's comments: the heuristic decides what it
// can, and the comments it leaves borderline go to j in one run. A nil j
// (or one without an agent) makes them structural (ByNoJudge). A judge
// without a valid answer makes them Unclear. The error is non-nil only
// when ctx ended during the judge's run; the Round is then incomplete and
// must not be recorded.
func Classify(ctx context.Context, j *Judge, runID string, round int, cs []Comment) (Round, error) {
	r := Round{Decisions: make([]Decision, 0, len(cs))}
	var borderline []Comment
	for _, c := range cs {
		h := Heuristic(c)
		d := Decision{ID: c.ID, Verdict: h.Verdict, By: ByHeuristic, Heuristic: h}
		if h.Verdict == Borderline {
			borderline = append(borderline, c)
		}
		r.Decisions = append(r.Decisions, d)
	}
	if len(borderline) == 0 {
		return r, nil
	}
	if j == nil || j.Agent == nil {
		for i := range r.Decisions {
			if r.Decisions[i].Verdict == Borderline {
				r.Decisions[i].Verdict, r.Decisions[i].By = Structural, ByNoJudge
			}
		}
		return r, nil
	}
	a, err := j.Run(ctx, Request{RunID: runID, Round: round, Comments: borderline})
	if err != nil {
		return r, err
	}
	r.Judge = &a
	// Run answers in request order; an id repeated among the comments
	// makes the whole answer invalid, so by position is by comment.
	k := 0
	for i := range r.Decisions {
		if r.Decisions[i].Verdict != Borderline {
			continue
		}
		v := Judged{ID: r.Decisions[i].ID, Verdict: Unclear, Reason: "no verdict for this comment"}
		if k < len(a.Verdicts) && a.Verdicts[k].ID == v.ID {
			v = a.Verdicts[k]
		}
		k++
		r.Decisions[i].Verdict, r.Decisions[i].By, r.Decisions[i].Judge = v.Verdict, ByJudge, &v
		if v.Verdict != Structural && v.Verdict != Minor {
			r.Decisions[i].Verdict = Unclear
		}
	}
	return r, nil
}
