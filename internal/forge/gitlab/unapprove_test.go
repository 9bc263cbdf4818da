package gitlab

import (
	"testing"
	"time"

	"github.com/convergeloop/converge/internal/forge"
)

// TestPR_O3_UnapprovalIsNoReviewOfItsOwn: GitLab's "unapproved this merge
// request" turns the author's approval before it DISMISSED and adds no
// review. Duo withdraws its approval as each new review starts; read as a
// review of its own, that withdrawal was the bot's answer to the request
// that started it, and every re-request of Duo ended with no signal.
func TestPR_O3_UnapprovalIsNoReviewOfItsOwn(t *testing.T) {
	t0 := time.Date(2026, 12, 2, 9, 0, 0, 0, time.UTC)
	duo := &user{Username: "GitLabDuo"}
	sys := func(id int64, body string, at time.Duration) note {
		return note{ID: id, Body: body, Author: duo, System: true, CreatedAt: t0.Add(at)}
	}
	versions := []version{{ID: 2, HeadCommitSHA: "b2", CreatedAt: t0.Add(2 * time.Minute)}, {ID: 1, HeadCommitSHA: "a1", CreatedAt: t0}}
	approvedNow := func(names ...string) approvals {
		var a approvals
		for _, n := range names {
			a.ApprovedBy = append(a.ApprovedBy, struct {
				User user `json:"user"`
			}{User: user{Username: n}})
		}
		return a
	}

	// Approved a1, withdrawn as a new review of b2 starts: one review,
	// the approval, dismissed; nothing new for the loop to read as Duo's
	// answer to its request.
	notes := []note{sys(1, sysApproved, time.Minute), sys(2, sysUnapproved, 3*time.Minute)}
	got := synthesizeReviews(notes, nil, versions, approvedNow())
	if len(got) != 1 || got[0].State != forge.ReviewDismissed || got[0].CommitSHA != "a1" {
		t.Fatalf("approval then withdrawal = %+v, want one DISMISSED review of a1", got)
	}

	// The new review approves b2: the old approval stays dismissed and
	// the new one stands, of b2.
	notes = append(notes, sys(3, sysApproved, 4*time.Minute))
	got = synthesizeReviews(notes, nil, versions, approvedNow("GitLabDuo"))
	if len(got) != 2 || got[0].State != forge.ReviewDismissed || got[1].State != forge.ReviewApproved || got[1].CommitSHA != "b2" {
		t.Fatalf("approval, withdrawal, approval = %+v, want DISMISSED a1 then APPROVED b2", got)
	}

	// Fail-closed still: an approval GitLab no longer lists reads
	// DISMISSED even without a withdrawal note.
	got = synthesizeReviews([]note{sys(1, sysApproved, time.Minute)}, nil, versions, approvedNow())
	if len(got) != 1 || got[0].State != forge.ReviewDismissed {
		t.Fatalf("an approval not in approved_by = %+v, want DISMISSED", got)
	}
}
