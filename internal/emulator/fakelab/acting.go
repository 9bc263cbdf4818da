package fakelab

import (
	"fmt"
	"time"
)

// The test-facing API: people acting on a merge request without going
// through HTTP. Each call is one change under the lab's lock.

// NewDiscussion is a reviewer's thread: on a line of the MR's current
// diff when Path is set (a DiffNote positioned with the current
// diff_refs), else a plain resolvable thread.
type NewDiscussion struct {
	Body    string
	Path    string
	NewLine int // line in the head's file; 0 with OldLine for a removed line
	OldLine int // line in the base's file; 0 for an added line
}

func (l *Lab) act(path string, iid int, username string, f func(m *mr, u *user) error) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	p := l.projectLocked(path)
	if p == nil {
		return fmt.Errorf("no project %s", path)
	}
	m := p.mr(iid)
	if m == nil {
		return fmt.Errorf("no merge request %s!%d", path, iid)
	}
	u := l.userLocked(username)
	if u == nil {
		return fmt.Errorf("no user %s", username)
	}
	return f(m, u)
}

// OpenDiscussion starts a thread by username and returns its id and its
// first note's id.
func (l *Lab) OpenDiscussion(path string, iid int, username string, nd NewDiscussion) (string, int, error) {
	var did string
	var nid int
	err := l.act(path, iid, username, func(m *mr, u *user) error {
		var pos *Position
		if nd.Path != "" {
			pos = &Position{OldPath: nd.Path, NewPath: nd.Path, NewLine: nd.NewLine, OldLine: nd.OldLine}
			if nd.OldLine == 0 && nd.NewLine > 0 {
				v := m.version()
				pos.OldLine = l.oldLineFor(l.Context(), m.proj.dir, v.base, v.head, nd.Path, nd.NewLine)
			}
		}
		d, err := l.createDiscussionLocked(m, u, nd.Body, pos)
		if err != nil {
			return err
		}
		did, nid = d.id, d.first().id
		return nil
	})
	return did, nid, err
}

// Reply adds a note to a thread and returns its id.
func (l *Lab) Reply(path string, iid int, username, discussionID, body string) (int, error) {
	var id int
	err := l.act(path, iid, username, func(m *mr, u *user) error {
		d := l.findDiscussion(m, discussionID)
		if d == nil {
			return fmt.Errorf("no discussion %s", discussionID)
		}
		n, err := l.replyLocked(m, u, d, body)
		if err == nil {
			id = n.id
		}
		return err
	})
	return id, err
}

// Resolve resolves (or reopens) a thread as username.
func (l *Lab) Resolve(path string, iid int, username, discussionID string, resolved bool) error {
	return l.act(path, iid, username, func(m *mr, u *user) error {
		d := l.findDiscussion(m, discussionID)
		if d == nil {
			return fmt.Errorf("no discussion %s", discussionID)
		}
		return l.resolveLocked(m, u, d, resolved)
	})
}

// Comment adds a top-level note as username.
func (l *Lab) Comment(path string, iid int, username, body string) (int, error) {
	var id int
	err := l.act(path, iid, username, func(m *mr, u *user) error {
		n, err := l.topNoteLocked(m, u, body)
		if err == nil {
			id = n.id
		}
		return err
	})
	return id, err
}

// Approve approves as username ("approved this merge request").
func (l *Lab) Approve(path string, iid int, username string) error {
	return l.act(path, iid, username, func(m *mr, u *user) error { return l.approveLocked(m, u) })
}

// Unapprove withdraws username's approval.
func (l *Lab) Unapprove(path string, iid int, username string) error {
	return l.act(path, iid, username, func(m *mr, u *user) error { return l.unapproveLocked(m, u) })
}

// RequestChanges submits a review requesting changes as username, as
// GitLab's "Submit review" does: the review's summary body (when not
// empty) as a note, then the "requested changes" system note and the
// reviewer state requested_changes.
func (l *Lab) RequestChanges(path string, iid int, username, body string) error {
	return l.act(path, iid, username, func(m *mr, u *user) error {
		if m.proj.access(u) < AccessDeveloper {
			return errForbidden
		}
		if body != "" {
			if _, err := l.topNoteLocked(m, u, body); err != nil {
				return err
			}
		}
		return l.requestChangesLocked(m, u)
	})
}

// AddReviewer requests a review of username, by the MR's author; adding
// GitLabDuo starts its review.
func (l *Lab) AddReviewer(path string, iid int, username string) error {
	return l.act(path, iid, username, func(m *mr, u *user) error {
		ids := []int{}
		for _, r := range m.reviewers {
			ids = append(ids, r.u.id)
		}
		return l.setReviewersLocked(m, m.author, append(ids, u.id))
	})
}

// CloseMR closes the MR as username.
func (l *Lab) CloseMR(path string, iid int, username string) error {
	return l.act(path, iid, username, func(m *mr, u *user) error { return l.setStateLocked(m, u, "close") })
}

// ReopenMR reopens the MR as username.
func (l *Lab) ReopenMR(path string, iid int, username string) error {
	return l.act(path, iid, username, func(m *mr, u *user) error { return l.setStateLocked(m, u, "reopen") })
}

// SetDraft marks the MR draft or ready as username.
func (l *Lab) SetDraft(path string, iid int, username string, draft bool) error {
	return l.act(path, iid, username, func(m *mr, u *user) error { l.setDraftLocked(m, u, draft); return nil })
}

// MRState is a snapshot of a merge request for tests.
type MRState struct {
	ID, IID        int
	State          string
	HeadSHA        string
	BaseSHA        string // diff_refs.base_sha
	StartSHA       string // diff_refs.start_sha
	Versions       int
	Labels         []string
	Reviewers      map[string]string // username -> state
	ApprovedBy     []string
	Discussions    []DiscussionState
	SystemNotes    []string
	DetailedStatus string
	HeadPipeline   string // status, "" when none
}

// DiscussionState is one thread of an MRState.
type DiscussionState struct {
	ID         string
	Author     string
	Resolvable bool
	Resolved   bool
	Position   *Position
	Notes      []string // bodies
	UpdatedAt  time.Time
}

// MR returns a snapshot of a merge request.
func (l *Lab) MR(path string, iid int) (MRState, error) {
	var st MRState
	err := l.act(path, iid, UserOwner, func(m *mr, _ *user) error {
		v := m.version()
		st = MRState{ID: m.id, IID: m.iid, State: m.state, HeadSHA: m.headSHA, BaseSHA: v.base, StartSHA: v.start,
			Versions: len(m.versions), Labels: append([]string(nil), m.labels...), Reviewers: map[string]string{}}
		for _, r := range m.reviewers {
			st.Reviewers[r.u.username] = r.state
		}
		for _, a := range m.approvedBy {
			st.ApprovedBy = append(st.ApprovedBy, a.username)
		}
		for _, d := range m.discussions {
			f := d.first()
			if f.system {
				st.SystemNotes = append(st.SystemNotes, f.body)
				continue
			}
			ds := DiscussionState{ID: d.id, Author: f.author.username, Resolvable: d.resolvable(), Resolved: d.resolved(), UpdatedAt: f.updatedAt}
			if f.position != nil {
				p := *f.position
				ds.Position = &p
			}
			for _, n := range d.notes {
				ds.Notes = append(ds.Notes, n.body)
			}
			st.Discussions = append(st.Discussions, ds)
		}
		st.DetailedStatus, _ = l.detailedStatusLocked(m)
		if pl := headPipelineLocked(m); pl != nil {
			st.HeadPipeline = pl.status
		}
		return nil
	})
	return st, err
}
