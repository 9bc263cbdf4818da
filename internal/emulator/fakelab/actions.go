package fakelab

import (
	"errors"
	"fmt"
	"strings"
)

// The writes REST, GraphQL and the test-facing API share. Each runs with
// l.mu held.

var errForbidden = errors.New("403 Forbidden")

func (l *Lab) createDiscussionLocked(m *mr, u *user, body string, pos *Position) (*discussion, error) {
	if strings.TrimSpace(body) == "" {
		return nil, errors.New("note can't be blank")
	}
	if pos != nil {
		if pos.NewPath == "" && pos.OldPath == "" || pos.NewLine == 0 && pos.OldLine == 0 {
			return nil, errors.New("position is incomplete")
		}
		if pos.NewPath == "" {
			pos.NewPath = pos.OldPath
		}
		if pos.OldPath == "" {
			pos.OldPath = pos.NewPath
		}
		v := m.version()
		if pos.HeadSHA == "" {
			pos.BaseSHA, pos.StartSHA, pos.HeadSHA = v.base, v.start, v.head
		}
	}
	now := l.now()
	d := &discussion{id: newDiscussionID(), visibleAt: m.reads + l.lagReads}
	n := &note{id: l.newIDLocked(), typ: "DiscussionNote", body: body, author: u, createdAt: now, updatedAt: now, resolvable: true, disc: d}
	if pos != nil {
		n.typ, n.position = "DiffNote", pos
	}
	d.notes = []*note{n}
	m.discussions = append(m.discussions, d)
	m.updatedAt = now
	l.publishLocked(Event{Kind: "note", Project: m.proj.path, IID: m.iid, Actor: u.username})
	return d, nil
}

func (l *Lab) replyLocked(m *mr, u *user, d *discussion, body string) (*note, error) {
	if strings.TrimSpace(body) == "" {
		return nil, errors.New("note can't be blank")
	}
	if d.individual && d.first().system {
		return nil, errors.New("discussion is not resolvable")
	}
	now := l.now()
	f := d.first()
	n := &note{id: l.newIDLocked(), typ: f.typ, body: body, author: u, createdAt: now, updatedAt: now,
		resolvable: f.resolvable, position: f.position, disc: d}
	if d.individual {
		// A reply turns an individual note into a thread, as GitLab does.
		d.individual, n.typ, f.typ = false, "DiscussionNote", "DiscussionNote"
	}
	if d.resolved() && n.resolvable {
		n.resolved, n.resolvedBy, n.resolvedAt = true, f.resolvedBy, f.resolvedAt
	}
	d.notes = append(d.notes, n)
	m.updatedAt = now
	l.publishLocked(Event{Kind: "note", Project: m.proj.path, IID: m.iid, Actor: u.username})
	return n, nil
}

func (l *Lab) topNoteLocked(m *mr, u *user, body string) (*note, error) {
	if strings.TrimSpace(body) == "" {
		return nil, errors.New("note can't be blank")
	}
	now := l.now()
	d := &discussion{id: newDiscussionID(), individual: true}
	n := &note{id: l.newIDLocked(), body: body, author: u, createdAt: now, updatedAt: now, disc: d}
	d.notes = []*note{n}
	m.discussions = append(m.discussions, d)
	m.updatedAt = now
	l.publishLocked(Event{Kind: "note", Project: m.proj.path, IID: m.iid, Actor: u.username})
	return n, nil
}

// resolveLocked resolves or reopens a thread; the developer role (or the
// MR's author, or the thread's author) may.
func (l *Lab) resolveLocked(m *mr, u *user, d *discussion, resolved bool) error {
	if !d.resolvable() {
		return errors.New("discussion is not resolvable")
	}
	if !m.proj.canWrite(u) && u != m.author && u != d.first().author {
		return errForbidden
	}
	now := l.now()
	for _, n := range d.notes {
		if !n.resolvable {
			continue
		}
		n.resolved = resolved
		if resolved {
			n.resolvedBy, n.resolvedAt = u, now
		} else {
			n.resolvedBy = nil
		}
	}
	m.updatedAt = now
	kind := "unresolved"
	if resolved {
		kind = "resolved"
		if l.allResolvedLocked(m) {
			l.systemNoteLocked(m, u, "resolved all threads")
		}
	}
	l.publishLocked(Event{Kind: kind, Project: m.proj.path, IID: m.iid, Actor: u.username, Detail: d.id})
	return nil
}

func (l *Lab) allResolvedLocked(m *mr) bool {
	for _, d := range m.discussions {
		if d.resolvable() && !d.resolved() {
			return false
		}
	}
	return true
}

func (l *Lab) approveLocked(m *mr, u *user) error {
	if m.proj.access(u) < AccessDeveloper {
		return errForbidden
	}
	if m.approved(u) {
		return errors.New("401 Unauthorized")
	}
	m.approvedBy = append(m.approvedBy, u)
	l.setReviewerStateLocked(m, u, "approved")
	l.systemNoteLocked(m, u, "approved this merge request")
	l.publishLocked(Event{Kind: "approval", Project: m.proj.path, IID: m.iid, Actor: u.username, Detail: "approved"})
	return nil
}

func (l *Lab) unapproveLocked(m *mr, u *user) error {
	for i, a := range m.approvedBy {
		if a == u {
			m.approvedBy = append(m.approvedBy[:i], m.approvedBy[i+1:]...)
			l.setReviewerStateLocked(m, u, "unapproved")
			l.systemNoteLocked(m, u, "unapproved this merge request")
			l.publishLocked(Event{Kind: "approval", Project: m.proj.path, IID: m.iid, Actor: u.username, Detail: "unapproved"})
			return nil
		}
	}
	return errors.New("404 Not found")
}

func (l *Lab) requestChangesLocked(m *mr, u *user) error {
	if m.proj.access(u) < AccessDeveloper {
		return errForbidden
	}
	// Requesting changes withdraws the reviewer's approval, as GitLab's
	// review submission does.
	for i, a := range m.approvedBy {
		if a == u {
			m.approvedBy = append(m.approvedBy[:i], m.approvedBy[i+1:]...)
		}
	}
	l.setReviewerStateLocked(m, u, "requested_changes")
	l.systemNoteLocked(m, u, "requested changes")
	l.publishLocked(Event{Kind: "approval", Project: m.proj.path, IID: m.iid, Actor: u.username, Detail: "requested_changes"})
	return nil
}

func (l *Lab) setReviewerStateLocked(m *mr, u *user, state string) {
	if r := m.reviewer(u); r != nil {
		r.state = state
	}
}

// setReviewersLocked replaces the reviewers; newly added ones are
// requested (a system note), and GitLabDuo's request starts its review.
func (l *Lab) setReviewersLocked(m *mr, by *user, ids []int) error {
	var next []*reviewer
	var added, removed []string
	for _, id := range ids {
		u := l.userByID(id)
		if u == nil {
			return fmt.Errorf("reviewer %d not found", id)
		}
		if r := m.reviewer(u); r != nil {
			next = append(next, r)
			continue
		}
		next = append(next, &reviewer{u: u, state: "unreviewed", createdAt: l.now()})
		added = append(added, "@"+u.username)
	}
	for _, r := range m.reviewers {
		keep := false
		for _, n := range next {
			keep = keep || n == r
		}
		if !keep {
			removed = append(removed, "@"+r.u.username)
		}
	}
	m.reviewers = next
	if len(added) > 0 {
		l.systemNoteLocked(m, by, "requested review from "+joinAnd(added))
	}
	if len(removed) > 0 {
		l.systemNoteLocked(m, by, "removed review request for "+joinAnd(removed))
	}
	for _, a := range added {
		l.publishLocked(Event{Kind: "reviewer", Project: m.proj.path, IID: m.iid, Actor: by.username, Detail: strings.TrimPrefix(a, "@")})
		if strings.EqualFold(a, "@"+UserDuo) {
			l.startDuoLocked(m, by)
		}
	}
	return nil
}

func joinAnd(xs []string) string {
	if len(xs) <= 1 {
		return strings.Join(xs, "")
	}
	return strings.Join(xs[:len(xs)-1], ", ") + " and " + xs[len(xs)-1]
}

func (l *Lab) setStateLocked(m *mr, by *user, event string) error {
	switch {
	case event == "close" && m.state == "opened":
		m.state = "closed"
		l.systemNoteLocked(m, by, "closed")
	case event == "reopen" && m.state == "closed":
		m.state = "opened"
		l.systemNoteLocked(m, by, "reopened")
	case event == "close" || event == "reopen":
		return nil
	default:
		return fmt.Errorf("state_event does not have a valid value")
	}
	l.publishLocked(Event{Kind: "state", Project: m.proj.path, IID: m.iid, Actor: by.username, Detail: m.state})
	return nil
}

func (l *Lab) setDraftLocked(m *mr, by *user, draft bool) {
	if m.draft == draft {
		return
	}
	m.draft = draft
	if draft {
		l.systemNoteLocked(m, by, "marked this merge request as **draft**")
	} else {
		l.systemNoteLocked(m, by, "marked this merge request as **ready**")
	}
}

func (l *Lab) setDescriptionLocked(m *mr, by *user, desc string) {
	if m.description == desc {
		return
	}
	m.description = desc
	l.systemNoteLocked(m, by, "changed the description")
}

func (l *Lab) findDiscussion(m *mr, id string) *discussion {
	for _, d := range m.discussions {
		if d.id == id {
			return d
		}
	}
	return nil
}
