package fakehub

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// Finding is one scripted Copilot comment.
type Finding struct {
	Path string
	// Anchor is text that must appear in the head's file; the comment sits
	// on the first line containing it. A finding whose anchor is gone is
	// skipped: it was fixed.
	Anchor string
	// AnchorEnd, when set, makes a multi-line comment ending on the first
	// line at or after the anchor that contains it.
	AnchorEnd string
	Body      string
	// Suggestion replaces the anchored lines; rendered as a ```suggestion
	// block in the body when not empty.
	Suggestion string
}

// CopilotRound is one review Copilot gives when requested.
type CopilotRound struct {
	Findings []Finding
	// Error makes the review Copilot's "encountered an error" body (PR-O3).
	Error bool
	// Body, when set, is the review's exact body (even ""), in place of
	// the generated overview or the error body; the findings are still
	// posted, so a body can be made to disagree with them.
	Body *string
	// Delay overrides Options.CopilotDelay for this round (negative:
	// immediately).
	Delay time.Duration
	// NoStart accepts the request but never starts a review: no
	// copilot_work_started event, and Copilot stays requested. The next
	// request plays the next round.
	NoStart bool
}

// CopilotScript is the ordered reviews Copilot gives on a PR; once they run
// out it finds nothing new.
type CopilotScript struct {
	Rounds []CopilotRound
}

// Bodies Copilot is seen to write instead of a review (PR-O3): none of
// them is a clean review.
const (
	// CopilotErrorBody is what Copilot says when its review failed.
	CopilotErrorBody = "Copilot encountered an error and was unable to review this pull request. You can try again by re-requesting a review."
	// CopilotNoFilesBody is said when no file could be reviewed.
	CopilotNoFilesBody = "Copilot wasn't able to review any files in this pull request."
	// CopilotQuotaBody is said when the requester's quota is spent.
	CopilotQuotaBody = "You have reached your monthly limit of premium requests for Copilot code review. Copilot wasn't able to review this pull request."
	// CopilotUnavailableBody is said during an outage.
	CopilotUnavailableBody = "Copilot code review is temporarily unavailable. Please try again later."
)

// Text returns a pointer to s, for CopilotRound.Body.
func Text(s string) *string { return &s }

// SetCopilotScript scripts Copilot on one PR, or on every PR of the
// repository without its own script when number is 0.
func (h *Hub) SetCopilotScript(owner, repoName string, number int, script CopilotScript) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	rp := h.repoLocked(owner, repoName)
	if rp == nil {
		return fmt.Errorf("set copilot script: no repo %s/%s", owner, repoName)
	}
	s := script
	if number == 0 {
		rp.copilotScript = &s
		return nil
	}
	p := rp.pr(number)
	if p == nil {
		return fmt.Errorf("set copilot script: no pull request %s#%d", rp.fullName(), number)
	}
	p.copilotScript = &s
	p.copilotRound = 0
	return nil
}

// SetCopilotAvailable enables or disables Copilot code review on a
// repository; while disabled, requesting the bot is refused (PR-M3).
func (h *Hub) SetCopilotAvailable(owner, repoName string, ok bool) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	rp := h.repoLocked(owner, repoName)
	if rp == nil {
		return fmt.Errorf("set copilot available: no repo %s/%s", owner, repoName)
	}
	rp.noCopilot = !ok
	return nil
}

// startCopilotLocked plays the next scripted round for a request: it
// records the start of a review and schedules it, unless the round never
// starts.
func (h *Hub) startCopilotLocked(p *pr) {
	script := p.copilotScript
	if script == nil {
		script = p.repo.copilotScript
	}
	var round CopilotRound
	if script != nil && p.copilotRound < len(script.Rounds) {
		round = script.Rounds[p.copilotRound]
	}
	p.copilotRound++
	if round.NoStart {
		return
	}
	p.copilotBusy = true
	cp := h.copilot()
	h.addEventLocked(p, &issueEvent{event: "copilot_work_started", actor: cp})
	h.publishLocked(Event{Kind: "copilot_started", Owner: p.repo.owner, Repo: p.repo.name, Number: p.number, Actor: cp.surfaceLogin()})
	if h.closed {
		p.copilotBusy = false
		return
	}
	delay := h.opts.CopilotDelay
	if round.Delay != 0 {
		delay = round.Delay
	}
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		h.runCopilot(p, round, delay)
	}()
}

func (h *Hub) runCopilot(p *pr, round CopilotRound, delay time.Duration) {
	ctx := h.bgCtx()
	if delay > 0 {
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			h.mu.Lock()
			h.finishCopilotLocked(p)
			h.mu.Unlock()
			return
		case <-t.C:
		}
	}
	h.mu.RLock()
	head, base, dir := p.headSHA, p.baseSHA, p.repo.dir
	h.mu.RUnlock()

	files := h.changedFiles(ctx, dir, base, head)
	var body string
	var comments []NewComment
	if !round.Error || round.Body != nil {
		comments = copilotComments(ctx, dir, head, round.Findings)
	}
	switch {
	case round.Body != nil:
		body = *round.Body
	case round.Error:
		body = CopilotErrorBody
	default:
		body = copilotBody(files, len(comments))
	}
	cp := h.copilot()
	state, commit, hunks, err := h.checkReview(ctx, cp, p, "COMMENT", body, head, comments)
	h.mu.Lock()
	defer h.mu.Unlock()
	if err != nil {
		h.log.Error("fakehub copilot review", "pr", p.number, "err", err)
	} else {
		h.addReviewLocked(cp, p, state, body, commit, comments, hunks)
	}
	// The review, the end of the request and copilot_work_finished are one
	// change, as a reader should never see half of them.
	h.finishCopilotLocked(p)
}

func (h *Hub) finishCopilotLocked(p *pr) {
	p.copilotBusy = false
	cp := h.copilot()
	removeRequestedLocked(p, cp)
	h.addEventLocked(p, &issueEvent{event: "copilot_work_finished", actor: cp})
	h.publishLocked(Event{Kind: "copilot_finished", Owner: p.repo.owner, Repo: p.repo.name, Number: p.number, Actor: cp.surfaceLogin()})
}

// copilotComments anchors the findings still present in head.
func copilotComments(ctx context.Context, dir, head string, fs []Finding) []NewComment {
	var out []NewComment
	for _, f := range fs {
		content, ok := fileAt(ctx, dir, head, f.Path)
		if !ok {
			continue
		}
		start, end := anchorLines(content, f.Anchor, f.AnchorEnd)
		if start == 0 {
			continue
		}
		c := NewComment{Path: f.Path, Line: end, Side: "RIGHT", Body: suggestionBody(f)}
		if end != start {
			c.StartLine = start
		}
		out = append(out, c)
	}
	return out
}

// anchorLines finds the 1-based line range of a finding; 0 when absent.
func anchorLines(content, anchor, anchorEnd string) (int, int) {
	if anchor == "" {
		return 0, 0
	}
	lines := strings.Split(content, "\n")
	for i, l := range lines {
		if !strings.Contains(l, anchor) {
			continue
		}
		if anchorEnd == "" {
			return i + 1, i + 1
		}
		for j := i; j < len(lines); j++ {
			if strings.Contains(lines[j], anchorEnd) {
				return i + 1, j + 1
			}
		}
		return 0, 0
	}
	return 0, 0
}

// SuggestionBody renders a finding's comment body as Copilot writes it.
func SuggestionBody(f Finding) string { return suggestionBody(f) }

func suggestionBody(f Finding) string {
	if f.Suggestion == "" {
		return f.Body
	}
	s := f.Suggestion
	if !strings.HasSuffix(s, "\n") {
		s += "\n"
	}
	return f.Body + "\n\n```suggestion\n" + s + "```"
}

func copilotBody(files, comments int) string {
	var tail string
	switch comments {
	case 0:
		tail = "generated no new comments."
	case 1:
		tail = "generated 1 comment."
	default:
		tail = fmt.Sprintf("generated %d comments.", comments)
	}
	return fmt.Sprintf("## Pull Request Overview\n\nThis pull request was reviewed by the scripted Copilot of fakehub.\n\n### Reviewed Changes\n\nCopilot reviewed %d out of %d changed files in this pull request and %s", files, files, tail)
}
