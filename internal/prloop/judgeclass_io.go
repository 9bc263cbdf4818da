package prloop

import (
	"context"
	"fmt"

	"github.com/convergeloop/converge/internal/classify"
	"github.com/convergeloop/converge/internal/engine"
	"github.com/convergeloop/converge/internal/forge"
)

// classify performs ActClassify: the judge's run on the borderline
// comments. It writes nothing, so a dry run runs it too (PR-M1). The
// error is non-nil only when the run is stopping; a judge that cannot
// answer makes every comment unclear.
//
// The judge sees each forge comment's diff hunk, as the heuristic did,
// from the observation the action was decided on (pr).
func (l *Loop) classify(ctx context.Context, pr *forge.PullRequest, round int, a Action) (*ActResult, error) {
	req := classify.Request{RunID: l.Ref.String(), Round: round}
	keys := make([]string, 0, len(a.Findings))
	hunks := firstHunks(pr)
	for _, f := range a.Findings {
		src := classify.SourceHuman
		if f.Source == "bot" || (l.Config.Bot != nil && f.Source == l.Config.Bot.Name()) {
			src = classify.SourceCopilot
		}
		hunk := hunks[f.ThreadID]
		start, end := hunkRange(hunk, f.StartLine, f.EndLine, f.OrigStart, f.OrigEnd)
		req.Comments = append(req.Comments, classify.Comment{ID: f.ID, Source: src, Author: f.Author, Path: f.Path,
			StartLine: start, Line: end, DiffHunk: hunk, Body: f.Summary})
		keys = append(keys, classKey(f))
	}
	var (
		ans classify.Answer
		err error
	)
	if cw, ok := l.Workspace.(Classifier); ok {
		ans, err = cw.ClassifyBorderline(ctx, pr, l.ClassifyJudge, req)
	} else {
		ans, err = l.ClassifyJudge.Run(ctx, req)
	}
	if err != nil {
		return nil, err
	}
	msg := fmt.Sprintf("judge classified %d borderline comment(s)", len(keys))
	if !ans.Valid {
		msg = fmt.Sprintf("judge gave no valid answer on %d borderline comment(s): unclear, treated as structural: %s", len(keys), ans.Why)
	} else {
		for _, v := range ans.Verdicts {
			msg += fmt.Sprintf("; %s %s", v.ID, v.Verdict)
		}
	}
	l.report(engine.Event{Kind: "classify", Round: round, Message: msg, Data: ans})
	return &ActResult{Classify: &ClassifyResult{Keys: keys, Answer: ans}}, nil
}

// Classifier is a workspace that runs the classifier's judge where its
// agents run (PR-S5): in its worktree, with their scrubbed environment
// and budget.
type Classifier interface {
	ClassifyBorderline(ctx context.Context, pr *forge.PullRequest, j *classify.Judge, req classify.Request) (classify.Answer, error)
}
