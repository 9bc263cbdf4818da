package fakelab

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/convergeloop/converge/internal/emulator/fakegit"
)

// What GitLab Duo Code Review writes, verbatim from GitLab's review
// service: a progress note when it starts, edited in place into a summary
// when it ends (or the no-comments or error text), or one note when the
// diff holds nothing to review. Its reviewer state goes review_started,
// then reviewed.
//
// Since gitlab-org/gitlab!254981 (2026) Duo also approves the merge
// request when a review finds nothing and requests changes when it leaves
// comments, and a new review first withdraws its earlier approval; its
// reviewer state then ends approved or requested_changes. An error or a
// diff with nothing to review does neither. Options.DuoNeverApproves
// plays the older Duo, which never approved nor requested changes.
const (
	DuoStartNote     = "Hey :wave: I'm starting to review your merge request and I will let you know when I'm finished."
	DuoCleanNote     = "I finished my review and found nothing to comment on. Nice work! :tada:"
	DuoErrorNote     = "I have encountered some problems while I was reviewing. Please try again later."
	DuoNothingToNote = ":wave: There's nothing for me to review."
)

// Finding is one scripted Duo diff comment.
type Finding struct {
	Path string
	// Anchor is text that must appear in the head's file; the comment sits
	// on the first line containing it. A finding whose anchor is gone is
	// skipped: it was fixed.
	Anchor string
	// AnchorEnd, when set, makes the finding cover the lines from the
	// anchor to the first line at or after it containing AnchorEnd: Duo
	// comments on the first and its suggestion spans them all
	// (```suggestion:-0+N, GitLab's multi-line suggestion).
	AnchorEnd string
	Body      string
	// Suggestion, when set, is rendered as a ```suggestion block.
	Suggestion string
}

// DuoRound is one review Duo gives when requested.
type DuoRound struct {
	Findings []Finding
	// Error ends the review with DuoErrorNote, posting no comments.
	Error bool
	// Summary, when set, replaces the summary Duo edits its progress note
	// into (even "", an odd empty summary); the findings are still posted.
	Summary *string
	// Delay overrides Options.DuoDelay for this round (negative: at once).
	Delay time.Duration
	// NoStart accepts the request but never starts: no state change, no
	// note. The next request plays the next round.
	NoStart bool
	// Silent starts (state review_started, the progress note) and never
	// finishes.
	Silent bool
}

// DuoScript is the ordered reviews Duo gives on an MR; once they run out
// it finds nothing.
type DuoScript struct {
	Rounds []DuoRound
}

// Text returns a pointer to s, for DuoRound.Summary.
func Text(s string) *string { return &s }

// SetDuoScript scripts Duo on one MR, or on every MR of the project
// without its own script when iid is 0.
func (l *Lab) SetDuoScript(path string, iid int, s DuoScript) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	p := l.projectLocked(path)
	if p == nil {
		return fmt.Errorf("set duo script: no project %s", path)
	}
	if iid == 0 {
		p.duoScript = &s
		return nil
	}
	m := p.mr(iid)
	if m == nil {
		return fmt.Errorf("set duo script: no merge request %s!%d", path, iid)
	}
	m.duoScript, m.duoRound = &s, 0
	return nil
}

// SetDuoAvailable turns Duo Code Review on or off for a project.
func (l *Lab) SetDuoAvailable(path string, ok bool) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	p := l.projectLocked(path)
	if p == nil {
		return fmt.Errorf("set duo available: no project %s", path)
	}
	p.noDuo = !ok
	return nil
}

// startDuoLocked plays the next round for a request of GitLabDuo.
func (l *Lab) startDuoLocked(m *mr, by *user) {
	if m.proj.noDuo {
		return
	}
	script := m.duoScript
	if script == nil {
		script = m.proj.duoScript
	}
	var round DuoRound
	if script != nil && m.duoRound < len(script.Rounds) {
		round = script.Rounds[m.duoRound]
	}
	m.duoRound++
	if round.NoStart || l.closed {
		return
	}
	duo := l.userLocked(UserDuo)
	if !l.opts.DuoNeverApproves && m.approved(duo) {
		// A new review withdraws the approval of the last one first.
		l.duoUnapproveLocked(m, duo)
	}
	l.setReviewerStateLocked(m, duo, "review_started")
	ctx := l.Context()
	changed, _ := fakegit.Run(ctx, m.proj.dir, nil, nil, "diff", "--name-only", m.version().base, m.headSHA)
	if strings.TrimSpace(changed) == "" {
		l.topNoteLocked(m, duo, DuoNothingToNote)
		l.setReviewerStateLocked(m, duo, "reviewed")
		l.publishLocked(Event{Kind: "duo_finished", Project: m.proj.path, IID: m.iid, Actor: UserDuo})
		return
	}
	progress, _ := l.topNoteLocked(m, duo, DuoStartNote)
	l.publishLocked(Event{Kind: "duo_started", Project: m.proj.path, IID: m.iid, Actor: UserDuo})
	if round.Silent {
		return
	}
	delay := l.opts.DuoDelay
	if round.Delay != 0 {
		delay = round.Delay
	}
	l.Go(func(context.Context) {
		if delay > 0 {
			t := time.NewTimer(delay)
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
		}
		l.mu.Lock()
		defer l.mu.Unlock()
		l.finishDuoLocked(ctx, m, duo, progress, round)
	})
}

func (l *Lab) finishDuoLocked(ctx context.Context, m *mr, duo *user, progress *note, round DuoRound) {
	verdict := ""
	defer func() {
		l.setReviewerStateLocked(m, duo, "reviewed")
		switch {
		case l.opts.DuoNeverApproves:
		case verdict == "approve":
			l.duoApproveLocked(m, duo)
		case verdict == "request_changes":
			l.duoRequestChangesLocked(m, duo)
		}
		l.publishLocked(Event{Kind: "duo_finished", Project: m.proj.path, IID: m.iid, Actor: UserDuo})
	}()
	edit := func(body string) {
		progress.body, progress.updatedAt = body, l.now()
	}
	if round.Error {
		edit(DuoErrorNote)
		return
	}
	v := m.version()
	posted := 0
	for _, f := range round.Findings {
		content, ok := fakegit.FileAt(ctx, m.proj.dir, v.head, f.Path)
		if !ok {
			continue
		}
		line, end := anchorLines(content, f.Anchor, f.AnchorEnd)
		if line == 0 {
			continue
		}
		pos := &Position{BaseSHA: v.base, StartSHA: v.start, HeadSHA: v.head, OldPath: f.Path, NewPath: f.Path, NewLine: line}
		pos.OldLine = l.oldLineFor(ctx, m.proj.dir, v.base, v.head, f.Path, line)
		if l.duoAlreadySaid(m, duo, pos) {
			continue
		}
		if _, err := l.createDiscussionLocked(m, duo, findingBody(f, end-line), pos); err == nil {
			posted++
		}
	}
	// Today's Duo judges by what it posted: nothing is an approval, any
	// comment a change request (its summary text does not matter).
	verdict = "approve"
	if posted > 0 {
		verdict = "request_changes"
	}
	switch {
	case round.Summary != nil:
		edit(*round.Summary)
	case posted == 0:
		edit(DuoCleanNote)
	default:
		edit(fmt.Sprintf("I've reviewed the changes in this merge request and left %d %s with suggestions.",
			posted, map[bool]string{true: "comment", false: "comments"}[posted == 1]))
	}
}

// duoApproveLocked approves as Duo. Duo is GitLab's internal bot, not a
// project member, so the members' access check does not apply to it.
func (l *Lab) duoApproveLocked(m *mr, duo *user) {
	if m.approved(duo) {
		return
	}
	m.approvedBy = append(m.approvedBy, duo)
	l.setReviewerStateLocked(m, duo, "approved")
	l.systemNoteLocked(m, duo, "approved this merge request")
	l.publishLocked(Event{Kind: "approval", Project: m.proj.path, IID: m.iid, Actor: duo.username, Detail: "approved"})
}

// duoUnapproveLocked withdraws Duo's approval.
func (l *Lab) duoUnapproveLocked(m *mr, duo *user) {
	if err := l.unapproveLocked(m, duo); err != nil {
		l.log.Error("fakelab duo unapprove", "err", err)
	}
}

// duoRequestChangesLocked requests changes as Duo.
func (l *Lab) duoRequestChangesLocked(m *mr, duo *user) {
	for i, a := range m.approvedBy {
		if a == duo {
			m.approvedBy = append(m.approvedBy[:i], m.approvedBy[i+1:]...)
			break
		}
	}
	l.setReviewerStateLocked(m, duo, "requested_changes")
	l.systemNoteLocked(m, duo, "requested changes")
	l.publishLocked(Event{Kind: "approval", Project: m.proj.path, IID: m.iid, Actor: duo.username, Detail: "requested_changes"})
}

// duoAlreadySaid skips a comment at a position Duo already commented on,
// as GitLab's review service does.
func (l *Lab) duoAlreadySaid(m *mr, duo *user, pos *Position) bool {
	for _, d := range m.discussions {
		f := d.first()
		if f.author == duo && f.position != nil && *f.position == *pos {
			return true
		}
	}
	return false
}

func findingBody(f Finding, below int) string {
	if f.Suggestion == "" {
		return f.Body
	}
	return fmt.Sprintf("%s\n\n```suggestion:-0+%d\n%s\n```", f.Body, below, strings.TrimSuffix(f.Suggestion, "\n"))
}

// anchorLines finds the 1-based line range of a finding; 0 when absent.
func anchorLines(content, anchor, anchorEnd string) (int, int) {
	if anchor == "" {
		return 0, 0
	}
	lines := strings.Split(content, "\n")
	for i, ln := range lines {
		if !strings.Contains(ln, anchor) {
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

var hunkRE = regexp.MustCompile(`^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@`)

// oldLineFor maps a line of the new file back to the old file: 0 when the
// line was added (GitLab's old_line null).
func (l *Lab) oldLineFor(ctx context.Context, dir, base, head, path string, newLine int) int {
	out, err := fakegit.Run(ctx, dir, nil, nil, "diff", "-U0", "--no-color", "--no-ext-diff", base, head, "--", path)
	if err != nil {
		return 0
	}
	if _, ok := fakegit.FileAt(ctx, dir, base, path); !ok {
		return 0
	}
	shift := 0
	for _, ln := range strings.Split(out, "\n") {
		mm := hunkRE.FindStringSubmatch(ln)
		if mm == nil {
			continue
		}
		atoi := func(s string, def int) int {
			if s == "" {
				return def
			}
			n, _ := strconv.Atoi(s)
			return n
		}
		oldLen, newStart, newLen := atoi(mm[2], 1), atoi(mm[3], 0), atoi(mm[4], 1)
		if newLen > 0 && newLine >= newStart && newLine < newStart+newLen {
			return 0
		}
		switch {
		case newLen == 0 && newLine > newStart:
			shift += oldLen
		case newLen > 0 && newLine >= newStart+newLen:
			shift += oldLen - newLen
		}
	}
	return newLine + shift
}
