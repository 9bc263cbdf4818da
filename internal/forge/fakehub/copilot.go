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
}

// CopilotScript is the ordered reviews Copilot gives on a PR; once they run
// out it finds nothing new.
type CopilotScript struct {
	Rounds []CopilotRound
}

// CopilotErrorBody is what Copilot says when its review failed.
const CopilotErrorBody = "Copilot encountered an error and was unable to review this pull request. You can try again by re-requesting a review."

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

// startCopilotLocked records the start of a review and schedules it.
func (h *Hub) startCopilotLocked(p *pr) {
	p.copilotBusy = true
	cp := h.copilot()
	h.addEventLocked(p, &issueEvent{event: "copilot_work_started", actor: cp})
	h.publishLocked(Event{Kind: "copilot_started", Owner: p.repo.owner, Repo: p.repo.name, Number: p.number, Actor: cp.surfaceLogin()})
	if h.closed {
		p.copilotBusy = false
		return
	}
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		h.runCopilot(p)
	}()
}

func (h *Hub) runCopilot(p *pr) {
	ctx := h.bgCtx()
	defer func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		p.copilotBusy = false
		cp := h.copilot()
		removeRequestedLocked(p, cp)
		h.addEventLocked(p, &issueEvent{event: "copilot_work_finished", actor: cp})
		h.publishLocked(Event{Kind: "copilot_finished", Owner: p.repo.owner, Repo: p.repo.name, Number: p.number, Actor: cp.surfaceLogin()})
	}()
	if d := h.opts.CopilotDelay; d > 0 {
		t := time.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
	h.mu.Lock()
	head, base, dir := p.headSHA, p.baseSHA, p.repo.dir
	script := p.copilotScript
	if script == nil {
		script = p.repo.copilotScript
	}
	var round CopilotRound
	if script != nil && p.copilotRound < len(script.Rounds) {
		round = script.Rounds[p.copilotRound]
	}
	p.copilotRound++
	h.mu.Unlock()

	files := h.changedFiles(ctx, dir, base, head)
	var body string
	var comments []NewComment
	if round.Error {
		body = CopilotErrorBody
	} else {
		comments = copilotComments(ctx, dir, head, round.Findings)
		body = copilotBody(files, len(comments))
	}
	if _, err := h.createReview(ctx, h.copilot(), p, "COMMENT", body, head, comments); err != nil {
		h.log.Error("fakehub copilot review", "pr", p.number, "err", err)
	}
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
