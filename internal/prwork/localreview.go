package prwork

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/convergeloop/converge/internal/forge"
	"github.com/convergeloop/converge/internal/prloop"
	localreview "github.com/convergeloop/converge/internal/review"
	"github.com/convergeloop/converge/internal/text"
)

// ReviewInstructionsFile is the repo's shared review instructions, read by
// Copilot and by the local angles alike (PR-S4).
const ReviewInstructionsFile = ".github/review-instructions.md"

// maxInstructions bounds what the instructions file adds to every angle's
// prompt; a larger file is cut, with a note the agents can see.
const maxInstructions = 64 << 10

var _ prloop.EffortReviewer = (*GitWorkspace)(nil)

// LocalReview runs the multi-angle review of the PR's head (PR-S4) in the
// run's worktree, reset to the head before and after: agents are told not
// to edit, and one that did must not leak its edits into the next fix. It
// must not run while Fix does, as both use the worktree.
func (w *GitWorkspace) LocalReview(ctx context.Context, pr *forge.PullRequest, round int) (prloop.LocalReviewResult, error) {
	return w.LocalReviewAt(ctx, pr, round, 0)
}

// LocalReviewAt is LocalReview at an effort: after effort local reviews in
// a row that found structural items, the review looks harder as the
// reviewer's Escalation says (PR-S4).
func (w *GitWorkspace) LocalReviewAt(ctx context.Context, pr *forge.PullRequest, round, effort int) (prloop.LocalReviewResult, error) {
	if w.Reviewer == nil {
		return prloop.LocalReviewResult{}, errors.New("local review: no review agent is configured (--review-agent command with --review-agent-cmd)")
	}
	if err := w.atHead(ctx, pr); err != nil {
		return prloop.LocalReviewResult{}, err
	}
	// The base's instructions, as the classifier's judge and the config
	// file (PR-M4) are read: the review is an independent check of the
	// PR, so the PR does not get to rewrite what it is checked against.
	instructions := w.baseInstructions(ctx, pr)

	rv := w.Reviewer.Escalate(effort)
	if effort > 0 && !rv.Escalation.Off {
		w.logf("local review of %s escalated (level %d): %d angle(s)%s", text.ShortSHA(pr.HeadSHA), effort, len(rv.Angles), onModel(rv.Model))
	}
	if rv.Budget <= 0 {
		rv.Budget = w.Budget
	}
	if rv.Env == nil {
		rv.Env = w.AgentEnv
	}
	if rv.CacheDir == "" {
		rv.CacheDir = filepath.Join(w.Root, "review-cache")
	}
	res, err := rv.Review(ctx, localreview.Input{
		Workdir:      w.worktree.Dir,
		BaseRef:      "origin/" + pr.BaseRef,
		Head:         pr.HeadSHA,
		Instructions: instructions,
		Round:        round,
		RunID:        w.RunID,
		GitEnv:       w.GitEnv,
	})
	if rerr := w.reset(ctx, pr.HeadSHA); rerr != nil && err == nil {
		err = rerr
	}
	if err != nil {
		return prloop.LocalReviewResult{}, err
	}
	if res.Cached {
		w.logf("local review of %s: reused the cached review of this head", text.ShortSHA(pr.HeadSHA))
	}
	return toLocalReviewResult(res, round), nil
}

// toLocalReviewResult turns a review into the loop's findings. Ids are
// deterministic, so the same point on the same head is the same finding
// in every run and in the cache.
func toLocalReviewResult(res localreview.Result, round int) prloop.LocalReviewResult {
	out := prloop.LocalReviewResult{
		Head:     res.Head,
		Degraded: res.Degraded,
		Cached:   res.Cached,
		Usage:    res.Usage,
		Summary:  localreview.Summary(res, round),
		Angles:   []prloop.AngleResult{},
	}
	for _, a := range res.Angles {
		out.Angles = append(out.Angles, prloop.AngleResult{Name: a.Angle, Parsed: a.Parsed, Findings: len(a.Findings)})
	}
	seen := map[string]bool{}
	for _, f := range res.Findings {
		id := LocalFindingID(f)
		if seen[id] {
			continue // the same point twice from one angle is one finding
		}
		seen[id] = true
		out.Findings = append(out.Findings, prloop.Finding{
			ID:        id,
			Path:      f.File,
			StartLine: f.StartLine,
			EndLine:   f.EndLine,
			Summary:   f.Summary,
			Verdict:   prloop.Verdict(f.Verdict),
			Source:    "local",
			Author:    "local-review/" + f.Angle,
		})
	}
	return out
}

// LocalFindingID is "local:<angle>:<file>:<start>-<end>:<hash of summary>".
func LocalFindingID(f localreview.Finding) string {
	h := sha256.Sum256([]byte(f.Summary))
	return fmt.Sprintf("local:%s:%s:%d-%d:%s", f.Angle, f.File, f.StartLine, f.EndLine, hex.EncodeToString(h[:6]))
}

func onModel(m string) string {
	if m == "" {
		return ""
	}
	return " on model " + m
}
