package prloop

import (
	"fmt"
	"hash/fnv"
	"slices"

	"github.com/convergeloop/converge/internal/classify"
	"github.com/convergeloop/converge/internal/forge"
	"github.com/convergeloop/converge/internal/text"
)

// ClassRecord is the judge's verdict on one borderline comment (PR-S5),
// as the state keeps it: structural, minor or unclear, with the reason.
type ClassRecord struct {
	Key     string `json:"key"` // classKey: the finding and the text judged
	Round   int    `json:"round"`
	Verdict string `json:"verdict"`
	Reason  string `json:"reason,omitempty"`
	Agent   string `json:"agent,omitempty"`
}

// ClassifyResult is what an ActClassify brings back: the judge's answer
// about the comments named by Keys, in the same order.
type ClassifyResult struct {
	Keys   []string        `json:"keys"`
	Answer classify.Answer `json:"answer"`
}

// classKey names a comment the judge classified: the finding and the text
// it judged, so an edited comment is judged again.
func classKey(f Finding) string {
	h := fnv.New64a()
	h.Write([]byte(f.Summary))
	return fmt.Sprintf("%s|%x", f.ID, h.Sum64())
}

// classRecord is the judge's verdict on f that still holds in round: a
// structural or minor verdict holds for good; an unclear one only for the
// round it was given in, so the next round asks again.
func (s State) classRecord(f Finding, round int) *ClassRecord {
	k := classKey(f)
	for i := len(s.Classified) - 1; i >= 0; i-- {
		r := &s.Classified[i]
		if r.Key != k {
			continue
		}
		if r.Verdict == string(classify.Unclear) && r.Round != round {
			return nil
		}
		return r
	}
	return nil
}

// judgeBorderline applies the judge's verdicts to the borderline
// findings (PR-S5) and returns the borderline ones it has no verdict on
// yet. With no judge configured nothing is pending: a borderline finding
// stays structural, fail-closed. An unclear verdict is structural too,
// and marks the finding Unclear (PR-G4).
func (d *step) judgeBorderline(fs []Finding) (pending []Finding) {
	for i := range fs {
		f := &fs[i]
		if !f.Borderline {
			continue
		}
		rec := d.s.classRecord(*f, d.s.Round)
		if rec == nil {
			if d.c.ClassifyJudge {
				pending = append(pending, *f)
			}
			continue
		}
		f.Verdict, f.Unclear = VerdictStructural, false
		switch rec.Verdict {
		case string(classify.Minor):
			f.Verdict = VerdictMinor
		case string(classify.Structural):
		default:
			f.Unclear = true
		}
		f.Class = fmt.Sprintf("judge: %s (%s)", rec.Verdict, text.Clip(rec.Reason, 200))
	}
	return pending
}

func (d *step) classifyAction(fs []Finding) Action {
	return Action{Kind: ActClassify, Key: roundKey(d.s.Round, "classify"), Round: d.s.Round, SHA: d.head, Findings: fs,
		Reason: fmt.Sprintf("%d borderline comment(s)", len(fs))}
}

// recordClassified keeps the judge's answer: a verdict per comment, every
// one unclear when the answer was not valid (PR-S5).
func (d *step) recordClassified(cr ClassifyResult) {
	s := &d.s
	d.round().Usage.Add(cr.Answer.Usage)
	for i, k := range cr.Keys {
		rec := ClassRecord{Key: k, Round: s.Round, Verdict: string(classify.Unclear), Reason: cr.Answer.Why, Agent: cr.Answer.Agent}
		if cr.Answer.Valid && i < len(cr.Answer.Verdicts) {
			v := cr.Answer.Verdicts[i]
			rec.Reason = v.Reason
			switch v.Verdict {
			case classify.Structural, classify.Minor:
				rec.Verdict = string(v.Verdict)
			}
		}
		if rec.Reason == "" {
			rec.Reason = "no reason given"
		}
		s.Classified = slices.DeleteFunc(s.Classified, func(r ClassRecord) bool { return r.Key == k })
		s.Classified = append(s.Classified, rec)
	}
}

// firstHunks are the diff hunks of the threads' first comments, by thread.
func firstHunks(pr *forge.PullRequest) map[string]string {
	out := map[string]string{}
	if pr == nil {
		return out
	}
	for _, t := range pr.Threads {
		if len(t.Comments) > 0 && t.Comments[0].DiffHunk != "" {
			out[t.ID] = t.Comments[0].DiffHunk
		}
	}
	return out
}

// unclearRounds counts the rounds with an unclear classification among
// the last n.
func (d *step) unclearRounds(n int) int {
	c := 0
	for i := len(d.s.Rounds) - 1; i >= 0 && i >= len(d.s.Rounds)-n; i-- {
		if d.s.Rounds[i].Unclear {
			c++
		}
	}
	return c
}
