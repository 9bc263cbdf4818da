package fakelab

// Duo's verdicts (DuoScript.Verdicts): since gitlab-org/gitlab!254981
// (2026) GitLab Duo Code Review approves the merge request when a review
// finds nothing and requests changes whenever it leaves comments; a
// standing change request stays until a clean review clears it, and a
// new review first removes Duo's earlier approval
// (https://gitlab.com/gitlab-org/gitlab/-/issues/507336). GitLab shows
// them as Duo's system notes "approved this merge request", "requested
// changes" and "unapproved this merge request", which converge's GitLab
// backend reads as Duo's reviews and internal/review/duo as its clean
// review. Duo is no project member, so these skip the access check a
// person's approval has.

// duoVerdictsLocked reports whether m's Duo script gives verdicts.
func duoVerdictsLocked(m *mr) bool {
	s := m.duoScript
	if s == nil {
		s = m.proj.duoScript
	}
	return s != nil && s.Verdicts
}

// duoWithdrawLocked is a new review's start: Duo's approval, if any, is
// withdrawn.
func (l *Lab) duoWithdrawLocked(m *mr, duo *user) {
	for i, a := range m.approvedBy {
		if a == duo {
			m.approvedBy = append(m.approvedBy[:i], m.approvedBy[i+1:]...)
			l.systemNoteLocked(m, duo, "unapproved this merge request")
			l.publishLocked(Event{Kind: "approval", Project: m.proj.path, IID: m.iid, Actor: duo.username, Detail: "unapproved"})
			return
		}
	}
}

// duoVerdictLocked ends a review that ran (not one that failed) with
// Duo's verdict: approval after no comment, a change request after some.
func (l *Lab) duoVerdictLocked(m *mr, duo *user, posted int) {
	if !duoVerdictsLocked(m) {
		return
	}
	if posted > 0 {
		l.systemNoteLocked(m, duo, "requested changes")
		l.publishLocked(Event{Kind: "approval", Project: m.proj.path, IID: m.iid, Actor: duo.username, Detail: "requested_changes"})
		return
	}
	if !m.approved(duo) {
		m.approvedBy = append(m.approvedBy, duo)
	}
	l.systemNoteLocked(m, duo, "approved this merge request")
	l.publishLocked(Event{Kind: "approval", Project: m.proj.path, IID: m.iid, Actor: duo.username, Detail: "approved"})
}
