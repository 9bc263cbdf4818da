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
	// ReRaise makes Copilot as stubborn as GitHub's: in every later
	// review it raises again each finding of its earlier reviews whose
	// lines are unchanged since — the same body on the same line, as a
	// new thread — whether or not the loop answered or resolved it.
	ReRaise bool
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
	if h.closed {
		p.copilotBusy = false
		return
	}
	delay := h.opts.CopilotDelay
	if round.Delay != 0 {
		delay = round.Delay
	}
	// Deadlines are taken now, by the hub's clock, so a clock moved on
	// right after the request or the start counts.
	if start := h.opts.CopilotStartDelay; start > 0 {
		// Requested but not started yet, as on github.com for half a
		// minute: no copilot_work_started, the bot still requested.
		startAt := h.clockNow().Add(start)
		h.Go(func(ctx context.Context) {
			if !h.sleepUntil(ctx, startAt) {
				h.mu.Lock()
				p.copilotBusy = false
				h.mu.Unlock()
				return
			}
			h.mu.Lock()
			if p.state != "OPEN" || !containsUser(p.requested, h.copilot()) {
				// The PR closed or the request was withdrawn first.
				p.copilotBusy = false
				h.mu.Unlock()
				return
			}
			due := h.copilotStartedLocked(p, delay)
			h.mu.Unlock()
			h.runCopilot(p, round, due)
		})
		return
	}
	due := h.copilotStartedLocked(p, delay)
	h.Go(func(context.Context) {
		h.runCopilot(p, round, due)
	})
}

// copilotStartedLocked records that Copilot started its review, and
// returns when, by the hub's clock, the review is due: delay later.
func (h *Hub) copilotStartedLocked(p *pr, delay time.Duration) time.Time {
	due := h.clockNow().Add(max(delay, 0))
	cp := h.copilot()
	h.addEventLocked(p, &issueEvent{event: "copilot_work_started", actor: cp})
	h.publishLocked(Event{Kind: "copilot_started", Owner: p.repo.owner, Repo: p.repo.name, Number: p.number, Actor: cp.surfaceLogin()})
	return due
}

// runCopilot posts the review when it is due: by the hub's clock
// (sleepUntil), so a test's AdvanceClock hurries it.
func (h *Hub) runCopilot(p *pr, round CopilotRound, due time.Time) {
	ctx := h.Context()
	if !h.sleepUntil(ctx, due) {
		h.mu.Lock()
		h.finishCopilotLocked(p)
		h.mu.Unlock()
		return
	}
	h.mu.RLock()
	head, base, dir := p.headSHA, p.baseSHA, p.repo.dir
	var earlier []earlierComment
	script := p.copilotScript
	if script == nil {
		script = p.repo.copilotScript
	}
	if script != nil && script.ReRaise {
		earlier = h.copilotThreadsLocked(p)
	}
	h.mu.RUnlock()

	files := h.changedFiles(ctx, dir, base, head)
	readable := readableFiles(ctx, dir, base, head)
	var body string
	var comments []NewComment
	// With no file to read Copilot reviews nothing, so it comments on
	// nothing either (unless the round dictates its body).
	if (!round.Error || round.Body != nil) && (readable > 0 || round.Body != nil) {
		comments = copilotComments(ctx, dir, head, round.Findings)
		comments = append(comments, h.reRaise(ctx, dir, base, head, earlier, comments)...)
	}
	switch {
	case round.Body != nil:
		body = *round.Body
	case round.Error:
		body = CopilotErrorBody
	case readable == 0:
		// GitHub's Copilot on a PR whose diff is empty (head tree = base
		// tree) or holds no file it can read: not a clean review (PR-O3).
		body = CopilotNoFilesBody
	default:
		body = copilotBody(readable, files, len(comments))
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

func copilotBody(reviewed, files, comments int) string {
	var tail string
	switch comments {
	case 0:
		tail = "generated no new comments."
	case 1:
		tail = "generated 1 comment."
	default:
		tail = fmt.Sprintf("generated %d comments.", comments)
	}
	return fmt.Sprintf("## Pull Request Overview\n\nThis pull request was reviewed by the scripted Copilot of fakehub.\n\n### Reviewed Changes\n\nCopilot reviewed %d out of %d changed files in this pull request and %s", reviewed, files, tail)
}

// earlierComment is an earlier Copilot comment: where it sat (on Commit)
// and what it said.
type earlierComment struct {
	NewComment
	Commit string
}

// copilotThreadsLocked lists the threads Copilot opened on p, oldest
// first.
func (h *Hub) copilotThreadsLocked(p *pr) []earlierComment {
	cp := h.copilot()
	var out []earlierComment
	for _, t := range p.threads {
		if len(t.comments) == 0 || t.comments[0].author != cp {
			continue
		}
		out = append(out, earlierComment{NewComment: NewComment{Path: t.path, Line: t.line, StartLine: t.startLine, Side: "RIGHT", Body: t.comments[0].body}, Commit: t.commitSHA})
	}
	return out
}

// reRaise is the earlier comments to raise again on head: those whose
// lines read the same on head as where they were made, not already
// raised in this review, each once.
func (h *Hub) reRaise(ctx context.Context, dir, base, head string, earlier []earlierComment, now []NewComment) []NewComment {
	type key struct {
		path string
		line int
		body string
	}
	seen := map[key]bool{}
	for _, c := range now {
		seen[key{c.Path, c.Line, c.Body}] = true
	}
	var out []NewComment
	for _, e := range earlier {
		k := key{e.Path, e.Line, e.Body}
		if seen[k] {
			continue
		}
		before, ok1 := fileAt(ctx, dir, e.Commit, e.Path)
		after, ok2 := fileAt(ctx, dir, head, e.Path)
		if !ok1 || !ok2 || !sameLines(before, after, max(e.StartLine, 1), e.Line) {
			continue
		}
		if _, err := h.commentHunk(ctx, dir, base, head, e.Path, "RIGHT", e.Line); err != nil {
			continue // no longer in the diff: GitHub would refuse the comment
		}
		seen[k] = true
		out = append(out, e.NewComment)
	}
	return out
}

// sameLines reports whether lines from..to (1-based) exist in both texts
// and read the same.
func sameLines(a, b string, from, to int) bool {
	la, lb := strings.Split(a, "\n"), strings.Split(b, "\n")
	if from < 1 || to < from || to > len(la) || to > len(lb) {
		return false
	}
	for i := from - 1; i < to; i++ {
		if la[i] != lb[i] {
			return false
		}
	}
	return true
}

// readableFiles counts the changed files Copilot can read: not binary.
// A diff it cannot compute has none.
func readableFiles(ctx context.Context, dir, base, head string) int {
	out, err := runGit(ctx, dir, nil, nil, "diff", "--numstat", base+"..."+head)
	if err != nil {
		return 0
	}
	n := 0
	for _, l := range strings.Split(out, "\n") {
		if l != "" && !strings.HasPrefix(l, "-\t-\t") {
			n++
		}
	}
	return n
}

// AnchorLines is the 1-based line range of a finding's anchor in content;
// 0, 0 when absent (the demo's offline reviewer reads a head with it).
func AnchorLines(content string, f Finding) (int, int) {
	return anchorLines(content, f.Anchor, f.AnchorEnd)
}
