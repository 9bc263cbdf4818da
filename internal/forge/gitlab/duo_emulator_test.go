package gitlab_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/convergeloop/converge/internal/emulator/fakelab"
	"github.com/convergeloop/converge/internal/forge"
	"github.com/convergeloop/converge/internal/forge/gitlab"
	"github.com/convergeloop/converge/internal/review"
	"github.com/convergeloop/converge/internal/review/duo"
	"github.com/convergeloop/converge/internal/testutil/labtest"
)

// The backend's names for Duo are the bot's.
func TestDuoNamesAgreeWithTheBot(t *testing.T) {
	if gitlab.DuoStartedEvent != duo.StartedEvent || gitlab.DuoUsername != duo.RequestLogin {
		t.Errorf("backend %q/%q, bot %q/%q", gitlab.DuoStartedEvent, gitlab.DuoUsername, duo.StartedEvent, duo.RequestLogin)
	}
}

// duoMR is one MR on the emulator driven through the backend, as
// converge's loop drives it: request Duo, prove its start by a new
// duo_review_started event, observe, and read Duo's latest review with
// the Duo bot.
type duoMR struct {
	t      *testing.T
	lab    *fakelab.Lab
	c      *gitlab.Client
	path   string
	iid    int
	ref    forge.PRRef
	events <-chan fakelab.Event
	mark   int64 // the newest duo_review_started event seen
}

func newDuoMR(t *testing.T, opts fakelab.Options, rounds ...fakelab.DuoRound) *duoMR {
	t.Helper()
	opts.DuoDelay = 20 * time.Millisecond
	lab := labtest.StartWith(t, opts)
	const path = "acme/duo/widget"
	if _, err := lab.CreateProject(path, map[string]string{"main.go": contractBase}, fakelab.ProjectOptions{}); err != nil {
		t.Fatal(err)
	}
	iid, err := lab.CreateMR(path, fakelab.NewMR{Source: "feature/bye", Title: "Say bye", Files: map[string]string{"main.go": contractHead}})
	if err != nil {
		t.Fatal(err)
	}
	if err := lab.SetDuoScript(path, iid, fakelab.DuoScript{Rounds: rounds}); err != nil {
		t.Fatal(err)
	}
	ref, err := forge.ParsePRURL(lab.MRURL(path, iid))
	if err != nil {
		t.Fatal(err)
	}
	events, stop := lab.Subscribe()
	t.Cleanup(stop)
	return &duoMR{t: t, lab: lab, c: labClient(t, lab, lab.Tokens().Author), path: path, iid: iid, ref: ref, events: events}
}

func (d *duoMR) observe() *forge.PullRequest {
	d.t.Helper()
	pr, err := d.c.Observe(context.Background(), d.ref)
	if err != nil {
		d.t.Fatal(err)
	}
	return pr
}

// started lists the duo_review_started events newer than the mark and
// moves the mark past them.
func (d *duoMR) started() []forge.Event {
	d.t.Helper()
	evs, err := d.c.IssueEvents(context.Background(), d.ref)
	if err != nil {
		d.t.Fatal(err)
	}
	var out []forge.Event
	for _, e := range evs {
		if e.Event == duo.StartedEvent && e.ID > d.mark {
			out = append(out, e)
		}
	}
	for _, e := range out {
		d.mark = max(d.mark, e.ID)
	}
	return out
}

// request asks Duo through the backend, as the loop does; with wait it
// returns once the emulator's Duo finished a review.
func (d *duoMR) request(wait bool) {
	d.t.Helper()
	if err := d.c.RequestReviews(context.Background(), d.observe(), nil, []string{duo.New().RequestLogin()}); err != nil {
		d.t.Fatal(err)
	}
	if !wait {
		return
	}
	timer := time.NewTimer(20 * time.Second)
	defer timer.Stop()
	for {
		select {
		case ev := <-d.events:
			if ev.Kind == "duo_finished" && ev.IID == d.iid {
				return
			}
		case <-timer.C:
			d.t.Fatal("Duo did not finish its review")
		}
	}
}

// read is the bot's reading of Duo's latest review, latest by submission,
// ties to the one on the head (as the loop picks it).
func (d *duoMR) read(pr *forge.PullRequest) (*forge.Review, review.Signal, string) {
	bot := duo.New()
	var latest *forge.Review
	for i := range pr.Reviews {
		r := &pr.Reviews[i]
		if !bot.Is(r.Author) {
			continue
		}
		if latest == nil || r.SubmittedAt.After(latest.SubmittedAt) || (r.SubmittedAt.Equal(latest.SubmittedAt) && r.CommitSHA == pr.HeadSHA) {
			latest = r
		}
	}
	if latest == nil {
		return nil, review.NoSignal, "no review by Duo"
	}
	sig, why := bot.Read(*latest, pr)
	return latest, sig, why
}

// cleanOnHead reports whether any Duo review reads clean for the head.
func cleanOnHead(pr *forge.PullRequest) bool {
	for _, r := range pr.Reviews {
		if sig, _ := duo.New().Read(r, pr); sig == review.Clean && r.CommitSHA == pr.HeadSHA {
			return true
		}
	}
	return false
}

func (d *duoMR) push(content string) string {
	d.t.Helper()
	sha, err := d.lab.PushFiles(d.path, "feature/bye", fakelab.UserAuthor, map[string]string{"main.go": content}, "fix")
	if err != nil {
		d.t.Fatal(err)
	}
	return sha
}

// TestPR_O3_DuoOnTheEmulatorReadsAsTheBotSays: today's Duo (approving a
// clean review, requesting changes on findings) requested and observed
// through the backend reads as the Duo bot says: findings with their
// count on the head they were made on, a clean review clean for its head
// after a re-request on a new head, and a Duo that starts and never
// finishes, or never starts, never clean.
func TestPR_O3_DuoOnTheEmulatorReadsAsTheBotSays(t *testing.T) {
	d := newDuoMR(t, fakelab.Options{},
		fakelab.DuoRound{Findings: []fakelab.Finding{
			{Path: "main.go", Anchor: `println("bye")`, Body: "Say goodbye properly."},
			{Path: "main.go", Anchor: `println("hello")`, Body: "Greet by name."},
		}},
		fakelab.DuoRound{},
		fakelab.DuoRound{Silent: true},
		fakelab.DuoRound{NoStart: true},
	)
	head1 := d.observe().HeadSHA

	// Round 1: findings.
	d.request(true)
	if evs := d.started(); len(evs) == 0 {
		t.Fatal("round 1: no duo_review_started event after the request")
	}
	pr := d.observe()
	r, sig, why := d.read(pr)
	if sig != review.Findings || r.CommitSHA != head1 || r.State != forge.ReviewChangesRequested {
		t.Fatalf("round 1: %s (%s) from %+v; want findings on %s from Duo's change request", sig, why, r, head1)
	}
	var group *forge.Review
	for i := range pr.Reviews {
		if pr.Reviews[i].State == forge.ReviewCommented && duo.New().Is(pr.Reviews[i].Author) && pr.Reviews[i].CommitSHA == head1 {
			group = &pr.Reviews[i]
		}
	}
	if group == nil || group.CommentCount != 2 {
		t.Fatalf("round 1: Duo's comment review %+v, want 2 comments", group)
	}
	if slices.Contains(pr.RequestedReviewers, duo.RequestLogin) {
		t.Errorf("round 1: Duo still requested after its review: %v", pr.RequestedReviewers)
	}

	// Round 2: a push, then a second request on the new head really asks
	// again, and a clean review reads clean for that head.
	head2 := d.push("package main\n\nfunc main() {\n\tprintln(\"hello, world\")\n\tprintln(\"goodbye\")\n}\n")
	d.request(true)
	if evs := d.started(); len(evs) == 0 {
		t.Fatal("round 2: the re-request started no review (no new duo_review_started event)")
	}
	pr = d.observe()
	r, sig, why = d.read(pr)
	if pr.HeadSHA != head2 || sig != review.Clean || r.CommitSHA != head2 || r.State != forge.ReviewApproved {
		t.Fatalf("round 2: %s (%s) from %+v on head %s; want clean from Duo's approval of %s", sig, why, r, pr.HeadSHA, head2)
	}

	// Round 3: a new head, and Duo starts and never finishes. It withdrew
	// its approval on starting; nothing reads clean for the new head, and
	// Duo is still a requested reviewer.
	head3 := d.push("package main\n\nfunc main() {\n\tprintln(\"hello, world\")\n\tprintln(\"goodbye!\")\n}\n")
	d.request(false)
	if evs := d.started(); len(evs) == 0 {
		t.Fatal("round 3: no duo_review_started event for a started review")
	}
	pr = d.observe()
	if pr.HeadSHA != head3 || cleanOnHead(pr) {
		t.Fatalf("round 3: a silent Duo reads clean on %s: %+v", pr.HeadSHA, pr.Reviews)
	}
	if r, sig, _ := d.read(pr); sig == review.Clean || r.State != forge.ReviewDismissed {
		t.Errorf("round 3: latest Duo review %+v reads %s; want the withdrawn approval, no signal", r, sig)
	}
	if !slices.Contains(pr.RequestedReviewers, duo.RequestLogin) {
		t.Errorf("round 3: Duo reviewing but not requested: %v", pr.RequestedReviewers)
	}
}

// A Duo that accepts the request and never starts shows no start event
// and never reads clean; the older Duo (no approvals, before
// gitlab-org/gitlab!254981) never reads clean either: the bot reads a
// clean review only from an approval.
func TestPR_O3_DuoThatNeverApprovesOrStartsNeverReadsClean(t *testing.T) {
	t.Run("never starts", func(t *testing.T) {
		d := newDuoMR(t, fakelab.Options{}, fakelab.DuoRound{NoStart: true})
		d.request(false)
		if evs := d.started(); len(evs) != 0 {
			t.Fatalf("start events %+v for a Duo that never started", evs)
		}
		pr := d.observe()
		if cleanOnHead(pr) || !slices.Contains(pr.RequestedReviewers, duo.RequestLogin) {
			t.Fatalf("reviews %+v, requested %v", pr.Reviews, pr.RequestedReviewers)
		}
	})
	t.Run("older Duo", func(t *testing.T) {
		d := newDuoMR(t, fakelab.Options{DuoNeverApproves: true}, fakelab.DuoRound{})
		d.request(true)
		if evs := d.started(); len(evs) == 0 {
			t.Fatal("no duo_review_started event")
		}
		pr := d.observe()
		if cleanOnHead(pr) {
			t.Fatalf("an older Duo's review reads clean: %+v", pr.Reviews)
		}
		if _, sig, _ := d.read(pr); sig == review.Clean {
			t.Fatal("latest review reads clean")
		}
	})
}
