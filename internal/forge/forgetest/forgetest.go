package forgetest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/convergeloop/converge/internal/forge"
)

// Run runs the contract against the backend newHarness builds; each test
// gets a fresh harness (a fixture may hand out the same PR every time, as a
// real forge's does, so tests look only at what they wrote themselves).
func Run(t *testing.T, newHarness func(t *testing.T) Harness) {
	t.Helper()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			if h.Forge == nil || h.Fixture == nil {
				t.Fatal("forgetest: harness without Forge or Fixture")
			}
			tc.run(t, h)
		})
	}
}

// Names carry the SPEC ID a test proves, where it proves one.
var tests = []struct {
	name string
	run  func(*testing.T, Harness)
}{
	{"PR_O1_ObserveReadsTheWholePR", testObserveWholePR},
	{"PR_O2_ReviewsCarryCountsAndThreads", testReviewsAndThreads},
	{"PR_O1_ThreadCarriesItsDiffHunk", testDiffHunk},
	{"PR_O5_RequestReviewsKeepsPendingReviewers", testRequestReviewsUnion},
	{"ReplyResolveUnresolveThread", testThreadWrites},
	{"MissingThreadIsNotFound", testMissingThread},
	{"PR_O1_IssueEventsOldestFirstAndFresh", testIssueEvents},
	{"LabelsAddAndRemove", testLabels},
	{"PR_T13_IssueComments", testIssueComments},
	{"PR_G6_LongBodiesAreTruncated", testLongBodies},
	{"PR_T10_CommitStatusInRollup", testCommitStatus},
	{"PR_T10_CheckRunsInRollup", testCheckRuns},
	{"ViewerIsTheActingIdentity", testViewer},
	{"PermissionLevels", testPermission},
	{"IF1_MissingPRIsNotFound", testMissingPR},
	{"IF1_RejectedCredentialIsAuth", testRejected},
	{"PR_T12_PushMovesHeadKeepsOriginalCommit", testPush},
	{"PR_T1_ForcePushBackIsOnTheTimeline", testForcePushBack},
	{"PR_V5_FailingCheckRunCarriesItsOutput", testCheckRunOutput},
	{"PR_V5_FailingStatusCarriesItsDescription", testStatusDescription},
}

// Helpers.

func ctxFor(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// uniq makes names that do not collide across runs on a shared real PR.
func uniq() string {
	b := make([]byte, 4)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return hex.EncodeToString(b)
}

func facts(t *testing.T, h Harness) Facts {
	t.Helper()
	f, err := h.Fixture.Facts(ctxFor(t))
	if err != nil {
		t.Fatalf("fixture facts: %v", err)
	}
	if f.PR.Number == 0 || f.HeadSHA == "" || f.Viewer == "" {
		t.Fatalf("fixture facts incomplete: %+v", f)
	}
	return f
}

// observeUntil observes the PR until ok finds no problem, for at most
// h.Settle, and fails the test with the last problem otherwise.
func observeUntil(t *testing.T, h Harness, ref forge.PRRef, ok func(*forge.PullRequest) error) *forge.PullRequest {
	t.Helper()
	var pr *forge.PullRequest
	eventually(t, h, func() error {
		var err error
		pr, err = h.Forge.Observe(ctxFor(t), ref)
		if err != nil {
			return fmt.Errorf("observe: %w", err)
		}
		if ok == nil {
			return nil
		}
		return ok(pr)
	})
	return pr
}

// eventually runs check until it returns nil, retrying for h.Settle.
func eventually(t *testing.T, h Harness, check func() error) {
	t.Helper()
	deadline := time.Now().Add(h.Settle)
	wait := 250 * time.Millisecond
	for {
		err := check()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			if h.Settle > 0 {
				t.Fatalf("after %s: %v", h.Settle, err)
			}
			t.Fatal(err)
		}
		time.Sleep(wait)
		wait = min(2*wait, 5*time.Second)
	}
}

func wantKind(t *testing.T, what string, err error, kind forge.ErrorKind) {
	t.Helper()
	if err == nil {
		t.Errorf("%s: no error, want a %s error", what, kind)
		return
	}
	if got := forge.KindOf(err); got != kind {
		t.Errorf("%s: %v (kind %s), want kind %s", what, err, got, kind)
	}
}

func review(t *testing.T, h Harness, r Review) string {
	t.Helper()
	id, err := h.Fixture.Review(ctxFor(t), r)
	if err != nil {
		t.Fatalf("fixture review: %v", err)
	}
	if id == "" {
		t.Fatal("fixture review returned no id")
	}
	return id
}

func findReview(pr *forge.PullRequest, id string) (int, *forge.Review) {
	for i := range pr.Reviews {
		if pr.Reviews[i].ID == id {
			return i, &pr.Reviews[i]
		}
	}
	return -1, nil
}

// threadsOf returns the threads whose first comment came with review id.
func threadsOf(pr *forge.PullRequest, id string) []forge.Thread {
	var out []forge.Thread
	for _, th := range pr.Threads {
		if len(th.Comments) > 0 && th.Comments[0].ReviewID == id {
			out = append(out, th)
		}
	}
	return out
}

func findThread(pr *forge.PullRequest, id string) *forge.Thread {
	for i := range pr.Threads {
		if pr.Threads[i].ID == id {
			return &pr.Threads[i]
		}
	}
	return nil
}

// settledReview is the PR-O2 settle condition: the review is visible with
// its own count and exactly that many threads.
func settledReview(id string, comments int) func(*forge.PullRequest) error {
	return func(pr *forge.PullRequest) error {
		_, rv := findReview(pr, id)
		if rv == nil {
			return fmt.Errorf("review %s not among %d reviews", id, len(pr.Reviews))
		}
		if rv.CommentCount != comments || len(threadsOf(pr, id)) != comments {
			return fmt.Errorf("review %s: count %d, %d threads; want %d of each", id, rv.CommentCount, len(threadsOf(pr, id)), comments)
		}
		return nil
	}
}

// oneThread submits a one-comment review and returns its thread.
func oneThread(t *testing.T, h Harness, f Facts, body string) (string, forge.Thread) {
	t.Helper()
	id := review(t, h, Review{Body: Marker + ": review " + uniq(), Comments: []Comment{{Path: f.Path, Line: f.Line, Body: body}}})
	pr := observeUntil(t, h, f.PR, settledReview(id, 1))
	return id, threadsOf(pr, id)[0]
}

var (
	mergeables  = []forge.MergeableState{forge.MergeableYes, forge.MergeableConflicting, forge.MergeableUnknown}
	mergeStates = []forge.MergeState{forge.MergeClean, forge.MergeDirty, forge.MergeBehind, forge.MergeBlocked,
		forge.MergeUnstable, forge.MergeUnknown, forge.MergeHasHooks, forge.MergeDraft}
	writers = []forge.Permission{forge.PermAdmin, forge.PermMaintain, forge.PermWrite}
)

// The contract.

// testObserveWholePR: one observation carries the PR's identity, state,
// refs, merge state, commits (head last, complete when the PR is small)
// and clone URL, as the fixture knows them (PR-O1).
func testObserveWholePR(t *testing.T, h Harness) {
	f := facts(t, h)
	pr := observeUntil(t, h, f.PR, func(pr *forge.PullRequest) error {
		if pr.HeadSHA != f.HeadSHA {
			return fmt.Errorf("head %s, want %s", pr.HeadSHA, f.HeadSHA)
		}
		return nil
	})
	if pr.Ref != f.PR || pr.Number != f.PR.Number {
		t.Errorf("ref %+v number %d, want %+v", pr.Ref, pr.Number, f.PR)
	}
	if pr.ID == "" || pr.URL == "" {
		t.Errorf("id %q url %q: both must be set", pr.ID, pr.URL)
	}
	if pr.State != forge.StateOpen {
		t.Errorf("state %q, want OPEN", pr.State)
	}
	if pr.Author != f.Author || pr.HeadRef != f.HeadRef || pr.BaseRef != f.BaseRef {
		t.Errorf("author/head/base = %q %q %q, want %q %q %q", pr.Author, pr.HeadRef, pr.BaseRef, f.Author, f.HeadRef, f.BaseRef)
	}
	if len(pr.BaseSHA) < 7 || pr.BaseSHA == pr.HeadSHA {
		t.Errorf("base SHA %q", pr.BaseSHA)
	}
	if !slices.Contains(mergeables, pr.Mergeable) {
		t.Errorf("mergeable %q not one of %v", pr.Mergeable, mergeables)
	}
	if !slices.Contains(mergeStates, pr.MergeState) || (f.MergeState != "" && pr.MergeState != f.MergeState) {
		t.Errorf("merge state %q (want %q, one of %v)", pr.MergeState, f.MergeState, mergeStates)
	}
	if f.CloneURL != "" && pr.CloneURL != f.CloneURL {
		t.Errorf("clone URL %q, want %q", pr.CloneURL, f.CloneURL)
	}
	if pr.CloneURL == "" {
		t.Error("no clone URL")
	}
	if pr.ObservedAt.IsZero() || pr.Requests < 1 {
		t.Errorf("observed at %v with %d requests", pr.ObservedAt, pr.Requests)
	}

	n := len(pr.Commits)
	if n == 0 || pr.Commits[n-1].SHA != f.HeadSHA {
		t.Fatalf("commits %+v: the head must be last", pr.Commits)
	}
	seen := map[string]bool{}
	for _, c := range pr.Commits {
		if c.SHA == "" || seen[c.SHA] || c.CommittedAt.IsZero() || len(c.Parents) == 0 {
			t.Errorf("commit %+v: want a unique SHA, a time and a parent", c)
		}
		seen[c.SHA] = true
	}
	if n >= 2 && !slices.Contains(pr.Commits[n-1].Parents, pr.Commits[n-2].SHA) {
		t.Errorf("head's parents %v lack the commit before it %s (oldest first)", pr.Commits[n-1].Parents, pr.Commits[n-2].SHA)
	}
	if f.Commits > 0 {
		// Every backend lists at least a PR's latest 100 commits (the
		// GitHub client's page), and says whether it listed them all.
		if n > f.Commits || (f.Commits <= 100 && n != f.Commits) {
			t.Errorf("%d commits listed of %d", n, f.Commits)
		}
		if pr.CommitsComplete != (n == f.Commits) {
			t.Errorf("CommitsComplete = %v with %d of %d commits listed (PR-T12)", pr.CommitsComplete, n, f.Commits)
		}
	}
	for i, l := range pr.Labels {
		if slices.Contains(pr.Labels[:i], l) {
			t.Errorf("label %q listed twice", l)
		}
	}
}

// testReviewsAndThreads: a review shows with its author, state, commit,
// body and its own comment count; each comment opens a thread at the
// line it was made on, linked to its review and original commit (PR-O2);
// reviews are oldest first (PR-O4). On a forge without review objects
// (Harness.CommentOnlyReviews) the review has no body and no comment-less
// second review is submitted.
func testReviewsAndThreads(t *testing.T, h Harness) {
	f := facts(t, h)
	u := uniq()
	body := Marker + ": two findings " + u
	c1, c2 := Marker+": finding A "+u, Marker+": finding B "+u
	id := review(t, h, Review{Body: body, Comments: []Comment{{f.Path, f.Line, c1}, {f.Path, f.Line, c2}}})
	// A forge without review objects has no comment-less review, nor a
	// review body (Harness.CommentOnlyReviews).
	wantBody := body
	if h.CommentOnlyReviews {
		wantBody = ""
	}
	body2 := Marker + ": looks fine otherwise " + u
	id2 := ""
	if !h.CommentOnlyReviews {
		id2 = review(t, h, Review{Body: body2})
	}

	pr := observeUntil(t, h, f.PR, func(pr *forge.PullRequest) error {
		if err := settledReview(id, 2)(pr); err != nil {
			return err
		}
		if id2 == "" {
			return nil
		}
		return settledReview(id2, 0)(pr)
	})
	i, rv := findReview(pr, id)
	if rv.Author != f.Reviewer || rv.State != forge.ReviewCommented || rv.CommitSHA != f.HeadSHA || rv.Body != wantBody {
		t.Errorf("review = author %q state %q commit %q body %q; want %q COMMENTED %q %q", rv.Author, rv.State, rv.CommitSHA, rv.Body, f.Reviewer, f.HeadSHA, wantBody)
	}
	if rv.DatabaseID == 0 || rv.SubmittedAt.IsZero() {
		t.Errorf("review database id %d, submitted at %v", rv.DatabaseID, rv.SubmittedAt)
	}
	if id2 != "" {
		i2, rv2 := findReview(pr, id2)
		if rv2.Body != body2 || rv2.CommentCount != 0 {
			t.Errorf("second review: %+v", rv2)
		}
		if i2 < i || rv2.SubmittedAt.Before(rv.SubmittedAt) {
			t.Errorf("reviews out of order: %s at %d (%v), then %s at %d (%v)", id, i, rv.SubmittedAt, id2, i2, rv2.SubmittedAt)
		}
	}
	for k := 1; k < len(pr.Reviews); k++ {
		if pr.Reviews[k].SubmittedAt.Before(pr.Reviews[k-1].SubmittedAt) {
			t.Errorf("reviews not oldest first at %d: %v before %v", k, pr.Reviews[k].SubmittedAt, pr.Reviews[k-1].SubmittedAt)
		}
	}

	var bodies []string
	for _, th := range threadsOf(pr, id) {
		if th.ID == "" || th.Path != f.Path || th.Line != f.Line || th.OrigLine != f.Line || th.StartLine != 0 {
			t.Errorf("thread %s at %s:%d (orig %d, start %d), want %s:%d", th.ID, th.Path, th.Line, th.OrigLine, th.StartLine, f.Path, f.Line)
		}
		if th.IsResolved || th.IsOutdated {
			t.Errorf("new thread %s: resolved %v outdated %v", th.ID, th.IsResolved, th.IsOutdated)
		}
		if len(th.Comments) != 1 {
			t.Errorf("thread %s has %d comments, want 1", th.ID, len(th.Comments))
			continue
		}
		c := th.Comments[0]
		bodies = append(bodies, c.Body)
		if c.ID == "" || c.DatabaseID == 0 || c.URL == "" || c.CreatedAt.IsZero() {
			t.Errorf("comment ids/url/time: %+v", c)
		}
		if c.Author != f.Reviewer || c.Path != f.Path || c.ReviewID != id || c.OriginalCommit != f.HeadSHA {
			t.Errorf("comment author %q path %q review %q original commit %q; want %q %q %q %q", c.Author, c.Path, c.ReviewID, c.OriginalCommit, f.Reviewer, f.Path, id, f.HeadSHA)
		}
	}
	slices.Sort(bodies)
	if !slices.Equal(bodies, []string{c1, c2}) {
		t.Errorf("thread bodies %q, want %q and %q", bodies, c1, c2)
	}
}

// testDiffHunk: the first comment of a thread carries the diff hunk it
// was written on (PR-O1), which the classifier compares a suggestion with
// (PR-S5): a hunk header, then diff lines that, counted from the header's
// new-side start, end on the commented line of the head with its text,
// bounded as forge.ClipDiffHunk bounds a hunk.
func testDiffHunk(t *testing.T, h Harness) {
	f := facts(t, h)
	_, th := oneThread(t, h, f, Marker+": hunk "+uniq())
	hunk := th.Comments[0].DiffHunk
	if err := hunkEndsAt(hunk, f.Line, f.LineText); err != nil {
		t.Errorf("diff hunk of a comment on %s:%d: %v\n%s", f.Path, f.Line, err, hunk)
	}
	if n := strings.Count(hunk, "\n"); n > forge.DiffHunkLines || len(hunk) > forge.MaxDiffHunkBytes {
		t.Errorf("diff hunk of %d lines, %d bytes: not bounded", n, len(hunk))
	}
}

var hunkHeader = regexp.MustCompile(`^@@ -\d+(?:,\d+)? \+(\d+)(?:,\d+)? @@`)

// hunkEndsAt checks that hunk's last line is line of the new file, with
// text when it is known.
func hunkEndsAt(hunk string, line int, text string) error {
	lines := strings.Split(hunk, "\n")
	m := hunkHeader.FindStringSubmatch(lines[0])
	if m == nil {
		return fmt.Errorf("no hunk header: %q", lines[0])
	}
	if len(lines) < 2 {
		return errors.New("no diff line after the header")
	}
	n, _ := strconv.Atoi(m[1])
	at := 0
	for _, l := range lines[1:] {
		switch {
		case l == "", strings.HasPrefix(l, " "), strings.HasPrefix(l, "+"):
			at, n = n, n+1
		case strings.HasPrefix(l, "-"), strings.HasPrefix(l, `\`):
			at = 0
		default:
			return fmt.Errorf("not a diff line: %q", l)
		}
	}
	last := lines[len(lines)-1]
	switch {
	case at != line:
		return fmt.Errorf("the last line %q is not new line %d", last, line)
	case text != "" && (last == "" || last[1:] != text):
		return fmt.Errorf("the last line %q is not %q", last, text)
	}
	return nil
}

// testRequestReviewsUnion: a request keeps reviewers already requested
// (union), a repeated request lists nobody twice, each request is an issue
// event, and a PR id that resolves to nothing is KindNotFound (PR-O5,
// PR-S1).
func testRequestReviewsUnion(t *testing.T, h Harness) {
	f := facts(t, h)
	if len(f.Requestable) < 2 {
		t.Skipf("fixture names %d requestable reviewers; the union test needs two", len(f.Requestable))
	}
	ctx := ctxFor(t)
	a, b := f.Requestable[0], f.Requestable[1]
	pr := observeUntil(t, h, f.PR, nil)
	request := func(r Reviewer) {
		t.Helper()
		var users, bots []string
		if r.Bot {
			bots = []string{r.Login}
		} else {
			users = []string{r.Login}
		}
		if err := h.Forge.RequestReviews(ctx, pr, users, bots); err != nil {
			t.Fatalf("request %s: %v", r.Login, err)
		}
	}
	requested := func(want ...Reviewer) func(*forge.PullRequest) error {
		return func(pr *forge.PullRequest) error {
			for _, r := range want {
				if n := count(pr.RequestedReviewers, r.shown()); n != 1 {
					return fmt.Errorf("%s listed %d times in requested reviewers %v, want once", r.shown(), n, pr.RequestedReviewers)
				}
			}
			return nil
		}
	}
	// Each request is an issue event where the forge lists them.
	ev, events := h.Forge.(forge.IssueEventer)
	var before []forge.Event
	if events {
		var err error
		if before, err = ev.IssueEvents(ctx, f.PR); err != nil {
			t.Fatal(err)
		}
	}
	request(a)
	observeUntil(t, h, f.PR, requested(a))
	request(b)
	observeUntil(t, h, f.PR, requested(a, b))
	request(a)
	observeUntil(t, h, f.PR, requested(a, b))

	if err := h.Forge.RequestReviews(ctx, pr, nil, nil); err != nil {
		t.Errorf("requesting nobody: %v", err)
	}
	eventually(t, h, func() error {
		if !events {
			return nil
		}
		evs, err := ev.IssueEvents(ctx, f.PR)
		if err != nil {
			return err
		}
		n := 0
		for _, e := range evs {
			if e.Event == "review_requested" && !slices.Contains(ids(before), e.ID) {
				n++
			}
		}
		// A repeated request may or may not be an event of its own.
		if n < 2 {
			return fmt.Errorf("%d new review_requested events after requesting two reviewers", n)
		}
		return nil
	})
	missing := f.PR
	missing.Number = 999999
	err := h.Forge.RequestReviews(ctx, &forge.PullRequest{Ref: missing, Number: missing.Number, ID: "PR_kwDO" + Marker + "Missing0"}, []string{a.Login}, nil)
	wantKind(t, "request reviews on a PR id that resolves to nothing", err, forge.KindNotFound)
}

func count(xs []string, x string) int {
	n := 0
	for _, s := range xs {
		if s == x {
			n++
		}
	}
	return n
}

// testThreadWrites: a reply lands last in its thread as the viewer;
// resolve and unresolve flip the thread and repeat harmlessly; a blank
// reply is refused as invalid.
func testThreadWrites(t *testing.T, h Harness) {
	f := facts(t, h)
	ctx := ctxFor(t)
	_, th := oneThread(t, h, f, Marker+": please rename "+uniq())

	body := Marker + ": done, thanks " + uniq()
	c, err := h.Forge.ReplyToThread(ctx, f.PR, th.ID, body)
	if err != nil {
		t.Fatalf("reply: %v", err)
	}
	if c.ID == "" || c.Author != f.Viewer || c.Body != body || c.CreatedAt.IsZero() {
		t.Errorf("reply = %+v, want id, author %q, body %q, time", c, f.Viewer, body)
	}
	observeUntil(t, h, f.PR, func(pr *forge.PullRequest) error {
		got := findThread(pr, th.ID)
		if got == nil || len(got.Comments) != 2 {
			return fmt.Errorf("thread after reply: %+v", got)
		}
		if last := got.Comments[1]; last.ID != c.ID || last.Author != f.Viewer || last.Body != body {
			return fmt.Errorf("last comment %+v, want the reply %+v", last, c)
		}
		if got.Comments[0].ID != th.Comments[0].ID {
			return fmt.Errorf("first comment changed: %+v", got.Comments[0])
		}
		return nil
	})

	resolved := func(want bool) func(*forge.PullRequest) error {
		return func(pr *forge.PullRequest) error {
			if got := findThread(pr, th.ID); got == nil || got.IsResolved != want {
				return fmt.Errorf("thread %s resolved: want %v, got %+v", th.ID, want, got)
			}
			return nil
		}
	}
	for range 2 {
		if err := h.Forge.ResolveThread(ctx, f.PR, th.ID); err != nil {
			t.Fatalf("resolve: %v", err)
		}
		observeUntil(t, h, f.PR, resolved(true))
	}
	for range 2 {
		if err := h.Forge.UnresolveThread(ctx, f.PR, th.ID); err != nil {
			t.Fatalf("unresolve: %v", err)
		}
		observeUntil(t, h, f.PR, resolved(false))
	}
	_, err = h.Forge.ReplyToThread(ctx, f.PR, th.ID, "  ")
	wantKind(t, "blank reply", err, forge.KindInvalid)
}

// testMissingThread: thread writes naming no thread are KindNotFound.
func testMissingThread(t *testing.T, h Harness) {
	f := facts(t, h)
	ctx := ctxFor(t)
	const missing = "PRRT_kwDO" + Marker + "Missing0"
	_, err := h.Forge.ReplyToThread(ctx, f.PR, missing, Marker+": hello")
	wantKind(t, "reply to a missing thread", err, forge.KindNotFound)
	wantKind(t, "resolve a missing thread", h.Forge.ResolveThread(ctx, f.PR, missing), forge.KindNotFound)
	wantKind(t, "unresolve a missing thread", h.Forge.UnresolveThread(ctx, f.PR, missing), forge.KindNotFound)
}

// testIssueEvents: events come oldest first with unique ids; a label
// change by the viewer shows as a new event even right after a read that
// may have been cached (PR-O1's conditional requests).
func testIssueEvents(t *testing.T, h Harness) {
	ev, ok := h.Forge.(forge.IssueEventer)
	if !ok {
		t.Skip("the forge lists no issue events (no forge.IssueEventer)")
	}
	f := facts(t, h)
	ctx := ctxFor(t)
	label := Marker + ":events-" + uniq()
	t.Cleanup(func() { _ = h.Forge.RemoveLabel(context.Background(), f.PR, label) })

	before, err := ev.IssueEvents(ctx, f.PR)
	if err != nil {
		t.Fatal(err)
	}
	checkEvents(t, before)
	again, err := ev.IssueEvents(ctx, f.PR)
	if err != nil {
		t.Fatal(err)
	}
	if len(again) < len(before) || !slices.EqualFunc(again[:len(before)], before, func(a, b forge.Event) bool { return a.ID == b.ID }) {
		t.Errorf("a second read lost or reordered events: %v then %v", ids(before), ids(again))
	}

	for _, step := range []struct {
		event string
		do    func() error
	}{
		{"labeled", func() error { return h.Forge.AddLabels(ctx, f.PR, label) }},
		{"unlabeled", func() error { return h.Forge.RemoveLabel(ctx, f.PR, label) }},
	} {
		prev, err := ev.IssueEvents(ctx, f.PR)
		if err != nil {
			t.Fatal(err)
		}
		if err := step.do(); err != nil {
			t.Fatalf("%s: %v", step.event, err)
		}
		eventually(t, h, func() error {
			evs, err := ev.IssueEvents(ctx, f.PR)
			if err != nil {
				return err
			}
			for _, e := range evs {
				if e.Event == step.event && !slices.Contains(ids(prev), e.ID) {
					if e.Actor != f.Viewer {
						return fmt.Errorf("%s event by %q, want %q", e.Event, e.Actor, f.Viewer)
					}
					checkEvents(t, evs)
					return nil
				}
			}
			return fmt.Errorf("no new %s event among %d events", step.event, len(evs))
		})
	}
}

func ids(evs []forge.Event) []int64 {
	out := make([]int64, len(evs))
	for i, e := range evs {
		out[i] = e.ID
	}
	return out
}

func checkEvents(t *testing.T, evs []forge.Event) {
	t.Helper()
	seen := map[int64]bool{}
	for i, e := range evs {
		if e.ID == 0 || seen[e.ID] || e.Event == "" || e.CreatedAt.IsZero() {
			t.Errorf("event %d: %+v: want a unique id, a name and a time", i, e)
		}
		seen[e.ID] = true
		if i > 0 && e.CreatedAt.Before(evs[i-1].CreatedAt) {
			t.Errorf("events not oldest first at %d: %v before %v", i, e.CreatedAt, evs[i-1].CreatedAt)
		}
	}
}

// testLabels: adding keeps labels already there and never lists one twice;
// names may hold spaces, colons and slashes; removing a label that is not
// there is nil, as the GitHub client makes of GitHub's 404 "Label does not
// exist" — removal is idempotent.
func testLabels(t *testing.T, h Harness) {
	f := facts(t, h)
	ctx := ctxFor(t)
	u := uniq()
	a, b := Marker+":a-"+u, Marker+": needs attention/"+u
	t.Cleanup(func() {
		_ = h.Forge.RemoveLabel(context.Background(), f.PR, a)
		_ = h.Forge.RemoveLabel(context.Background(), f.PR, b)
	})
	labels := func(has, lacks []string) func(*forge.PullRequest) error {
		return func(pr *forge.PullRequest) error {
			for _, l := range has {
				if count(pr.Labels, l) != 1 {
					return fmt.Errorf("labels %q: want %q once", pr.Labels, l)
				}
			}
			for _, l := range lacks {
				if slices.Contains(pr.Labels, l) {
					return fmt.Errorf("labels %q: want no %q", pr.Labels, l)
				}
			}
			return nil
		}
	}
	if err := h.Forge.AddLabels(ctx, f.PR, a, b); err != nil {
		t.Fatal(err)
	}
	observeUntil(t, h, f.PR, labels([]string{a, b}, nil))
	if err := h.Forge.AddLabels(ctx, f.PR, a); err != nil {
		t.Fatalf("adding a label already there: %v", err)
	}
	if err := h.Forge.AddLabels(ctx, f.PR); err != nil {
		t.Fatalf("adding no labels: %v", err)
	}
	observeUntil(t, h, f.PR, labels([]string{a, b}, nil))
	if err := h.Forge.RemoveLabel(ctx, f.PR, a); err != nil {
		t.Fatal(err)
	}
	observeUntil(t, h, f.PR, labels([]string{b}, []string{a}))
	if err := h.Forge.RemoveLabel(ctx, f.PR, a); err != nil {
		t.Errorf("removing a label that is not there: %v, want nil", err)
	}
	if err := h.Forge.RemoveLabel(ctx, f.PR, b); err != nil {
		t.Fatal(err)
	}
	observeUntil(t, h, f.PR, labels(nil, []string{a, b}))
}

// testIssueComments: a conversation comment comes back with both its ids,
// the viewer as author and its body, and shows the same in the list and
// in the observation, after the reviewer's earlier one (PR-T13, PR-S4).
func testIssueComments(t *testing.T, h Harness) {
	f := facts(t, h)
	ctx := ctxFor(t)
	u := uniq()
	theirs := Marker + ": please also update the changelog " + u
	if err := h.Fixture.Comment(ctx, theirs); err != nil {
		t.Fatalf("fixture comment: %v", err)
	}
	body := Marker + ": summary " + u
	ic, err := h.Forge.CreateIssueComment(ctx, f.PR, body)
	if err != nil {
		t.Fatal(err)
	}
	if ic.ID == 0 || ic.NodeID == "" || ic.Author != f.Viewer || ic.Body != body || ic.CreatedAt.IsZero() {
		t.Errorf("created %+v, want both ids, author %q, body %q, time", ic, f.Viewer, body)
	}
	check := func(where string, list []forge.IssueComment) error {
		mine, their := -1, -1
		for i, c := range list {
			if i > 0 && c.CreatedAt.Before(list[i-1].CreatedAt) {
				return fmt.Errorf("%s: not oldest first at %d", where, i)
			}
			switch {
			case c.ID == ic.ID:
				mine = i
				if c.NodeID != ic.NodeID || c.Author != ic.Author || c.Body != ic.Body {
					return fmt.Errorf("%s: %+v differs from the created %+v", where, c, ic)
				}
			case c.Body == theirs:
				their = i
				if c.Author != f.Reviewer || c.ID == 0 || c.NodeID == "" {
					return fmt.Errorf("%s: reviewer's comment %+v, want author %q and both ids", where, c, f.Reviewer)
				}
			}
		}
		if mine < 0 || their < 0 || their > mine {
			return fmt.Errorf("%s: reviewer's comment at %d, ours at %d; want both, theirs first", where, their, mine)
		}
		return nil
	}
	eventually(t, h, func() error {
		list, err := h.Forge.ListIssueComments(ctx, f.PR)
		if err != nil {
			return err
		}
		return check("list", list)
	})
	observeUntil(t, h, f.PR, func(pr *forge.PullRequest) error { return check("observe", pr.IssueComments) })

	_, err = h.Forge.CreateIssueComment(ctx, f.PR, "")
	wantKind(t, "empty issue comment", err, forge.KindInvalid)
}

// maxBody is GitHub's comment limit in characters (PR-G6).
const maxBody = 65536

// testLongBodies: bodies past the forge's limit are cut to fit, keeping
// their start, rather than refused (PR-G6).
func testLongBodies(t *testing.T, h Harness) {
	f := facts(t, h)
	ctx := ctxFor(t)
	head := Marker + ": long " + uniq() + " "
	long := head + strings.Repeat("é", maxBody+100)
	fits := func(what, got string) {
		t.Helper()
		if n := utf8.RuneCountInString(got); n > maxBody || !strings.HasPrefix(got, head+"éééé") {
			t.Errorf("%s: %d characters starting %.40q; want at most %d, starting %.40q", what, n, got, maxBody, head)
		}
	}
	ic, err := h.Forge.CreateIssueComment(ctx, f.PR, long)
	if err != nil {
		t.Fatalf("long issue comment: %v", err)
	}
	fits("issue comment", ic.Body)
	_, th := oneThread(t, h, f, Marker+": nit "+uniq())
	c, err := h.Forge.ReplyToThread(ctx, f.PR, th.ID, long)
	if err != nil {
		t.Fatalf("long reply: %v", err)
	}
	fits("reply", c.Body)
}

// rollupFits checks the rollup's state against its contexts: any failure
// fails it, else anything unfinished keeps it pending, else it succeeds.
func rollupFits(ch forge.CheckRollup) error {
	failing, pending := false, false
	for _, c := range ch.Contexts {
		switch {
		case c.IsStatus && (c.Conclusion == "PENDING" || c.Conclusion == "EXPECTED"):
			pending = true
		case c.IsStatus && (c.Conclusion == "FAILURE" || c.Conclusion == "ERROR"):
			failing = true
		case !c.IsStatus && c.Status != "COMPLETED":
			pending = true
		case !c.IsStatus && !slices.Contains([]forge.CheckConclusion{"SUCCESS", "NEUTRAL", "SKIPPED"}, c.Conclusion):
			failing = true
		}
	}
	var want []forge.CIState
	switch {
	case len(ch.Contexts) == 0:
		want = []forge.CIState{""}
	case failing:
		want = []forge.CIState{forge.CIFailure, forge.CIError}
	case pending:
		want = []forge.CIState{forge.CIPending}
	default:
		want = []forge.CIState{forge.CISuccess}
	}
	if !slices.Contains(want, ch.State) {
		return fmt.Errorf("rollup state %q, want %v for contexts %+v", ch.State, want, ch.Contexts)
	}
	return nil
}

func findContext(ch forge.CheckRollup, name string, status bool) []forge.CheckContext {
	var out []forge.CheckContext
	for _, c := range ch.Contexts {
		if c.Name == name && c.IsStatus == status {
			out = append(out, c)
		}
	}
	return out
}

// testCommitStatus: a commit status on the head shows in the head's
// rollup, the newest per context, and moves the rollup's state; a state
// the forge does not know and a commit it does not have are invalid; a
// description past GitHub's limit is cut, not refused (PR-T10).
func testCommitStatus(t *testing.T, h Harness) {
	f := facts(t, h)
	ctx := ctxFor(t)
	name := Marker + "/" + uniq()
	for _, st := range []forge.CommitStatusState{forge.StatusPending, forge.StatusFailure, forge.StatusSuccess} {
		err := h.Forge.SetCommitStatus(ctx, f.PR, f.HeadSHA, forge.CommitStatus{
			State: st, Context: name, Description: Marker + " " + string(st) + " " + strings.Repeat("d", 150), TargetURL: "https://example.com/" + Marker,
		})
		if err != nil {
			t.Fatalf("status %s: %v", st, err)
		}
		observeUntil(t, h, f.PR, func(pr *forge.PullRequest) error {
			got := findContext(pr.Checks, name, true)
			if len(got) != 1 || string(got[0].Conclusion) != strings.ToUpper(string(st)) {
				return fmt.Errorf("after %s: contexts named %s: %+v", st, name, got)
			}
			return rollupFits(pr.Checks)
		})
	}
	err := h.Forge.SetCommitStatus(ctx, f.PR, f.HeadSHA, forge.CommitStatus{State: "bogus", Context: name})
	wantKind(t, "status with an unknown state", err, forge.KindInvalid)
	err = h.Forge.SetCommitStatus(ctx, f.PR, strings.Repeat("0", 40), forge.CommitStatus{State: forge.StatusSuccess, Context: name})
	wantKind(t, "status on a commit the forge does not have", err, forge.KindInvalid)
}

// testCheckRuns: Forge either creates check runs or reports them
// unsupported; with a credential that may, a run shows in the head's
// rollup with its status and conclusion (PR-T10).
func testCheckRuns(t *testing.T, h Harness) {
	f := facts(t, h)
	ctx := ctxFor(t)
	u := uniq()
	cr, ok := h.Forge.(forge.CheckRunner)
	if !ok {
		t.Skip("the forge has no check runs (no forge.CheckRunner)")
	}
	_, err := cr.CreateCheckRun(ctx, f.PR, forge.CheckRun{Name: Marker + "-plain-" + u, HeadSHA: f.HeadSHA, Status: "completed", Conclusion: "success"})
	if err != nil && !Unsupported(err) {
		t.Errorf("check run from Forge: %v (kind %s), want success or unsupported", err, forge.KindOf(err))
	}
	if h.CheckRuns == nil {
		t.Skip("no credential that may create check runs")
	}
	running, done := Marker+"-running-"+u, Marker+"-done-"+u
	id, err := h.CheckRuns.CreateCheckRun(ctx, f.PR, forge.CheckRun{Name: running, HeadSHA: f.HeadSHA, Status: "in_progress", Title: "running", Summary: Marker})
	if err != nil || id == 0 {
		t.Fatalf("in-progress check run: id %d, %v", id, err)
	}
	observeUntil(t, h, f.PR, func(pr *forge.PullRequest) error {
		got := findContext(pr.Checks, running, false)
		if len(got) != 1 || got[0].Status != "IN_PROGRESS" || got[0].Conclusion != "" {
			return fmt.Errorf("check runs named %s: %+v", running, got)
		}
		return rollupFits(pr.Checks)
	})
	id2, err := h.CheckRuns.CreateCheckRun(ctx, f.PR, forge.CheckRun{Name: done, HeadSHA: f.HeadSHA, Status: "completed", Conclusion: "failure", Title: "failed", Summary: Marker})
	if err != nil || id2 == 0 || id2 == id {
		t.Fatalf("completed check run: id %d (first %d), %v", id2, id, err)
	}
	observeUntil(t, h, f.PR, func(pr *forge.PullRequest) error {
		got := findContext(pr.Checks, done, false)
		if len(got) != 1 || got[0].Status != "COMPLETED" || got[0].Conclusion != "FAILURE" {
			return fmt.Errorf("check runs named %s: %+v", done, got)
		}
		if pr.Checks.State != "FAILURE" && pr.Checks.State != "ERROR" {
			return fmt.Errorf("a failed check run leaves the rollup %q", pr.Checks.State)
		}
		return rollupFits(pr.Checks)
	})
	_, err = h.CheckRuns.CreateCheckRun(ctx, f.PR, forge.CheckRun{Name: done, HeadSHA: strings.Repeat("0", 40), Status: "completed", Conclusion: "success"})
	wantKind(t, "check run on a commit the forge does not have", err, forge.KindInvalid)
}

// testViewer: Viewer names the identity Forge acts as, every time.
func testViewer(t *testing.T, h Harness) {
	f := facts(t, h)
	for range 2 {
		v, err := h.Forge.Viewer(ctxFor(t))
		if err != nil || v != f.Viewer {
			t.Errorf("Viewer = %q, %v; want %q", v, err, f.Viewer)
		}
	}
}

// testPermission: the viewer may write; known logins have their level;
// a login that is nobody on the forge has none.
func testPermission(t *testing.T, h Harness) {
	f := facts(t, h)
	ctx := ctxFor(t)
	p, err := h.Forge.Permission(ctx, f.PR, f.Viewer)
	if err != nil || !slices.Contains(writers, p) {
		t.Errorf("viewer's permission %q, %v; want one of %v", p, err, writers)
	}
	for login, want := range f.Permissions {
		if got, err := h.Forge.Permission(ctx, f.PR, login); err != nil || got != want {
			t.Errorf("Permission(%s) = %q, %v; want %q", login, got, err, want)
		}
	}
	nobody := Marker + "-nobody-" + uniq()
	if got, err := h.Forge.Permission(ctx, f.PR, nobody); err != nil || got != forge.PermNone {
		t.Errorf("Permission(%s) = %q, %v; want none", nobody, got, err)
	}
}

// testMissingPR: reading or writing a PR or repository that does not
// exist is KindNotFound (IF-1 tells it from auth and reachability).
func testMissingPR(t *testing.T, h Harness) {
	f := facts(t, h)
	ctx := ctxFor(t)
	noPR := f.PR
	noPR.Number = 999999
	noRepo := f.PR
	noRepo.Repo += "-" + Marker + "-missing-" + uniq()
	for _, ref := range []forge.PRRef{noPR, noRepo} {
		_, err := h.Forge.Observe(ctx, ref)
		wantKind(t, "observe "+ref.String(), err, forge.KindNotFound)
		if ev, ok := h.Forge.(forge.IssueEventer); ok {
			_, err = ev.IssueEvents(ctx, ref)
			wantKind(t, "issue events of "+ref.String(), err, forge.KindNotFound)
		}
		_, err = h.Forge.ListIssueComments(ctx, ref)
		wantKind(t, "issue comments of "+ref.String(), err, forge.KindNotFound)
		wantKind(t, "label "+ref.String(), h.Forge.AddLabels(ctx, ref, Marker), forge.KindNotFound)
		_, err = h.Forge.CreateIssueComment(ctx, ref, Marker+": nobody reads this")
		wantKind(t, "comment on "+ref.String(), err, forge.KindNotFound)
	}
}

// testRejected: a credential the forge refuses is KindAuth on reads and
// writes alike, never not-found or unreachable (IF-1: exit 6).
func testRejected(t *testing.T, h Harness) {
	if h.Rejected == nil {
		t.Skip("harness has no rejected credential")
	}
	f := facts(t, h)
	ctx := ctxFor(t)
	_, err := h.Rejected.Observe(ctx, f.PR)
	wantKind(t, "observe with a rejected credential", err, forge.KindAuth)
	_, err = h.Rejected.Viewer(ctx)
	wantKind(t, "viewer with a rejected credential", err, forge.KindAuth)
	if ev, ok := h.Rejected.(forge.IssueEventer); ok {
		_, err = ev.IssueEvents(ctx, f.PR)
		wantKind(t, "issue events with a rejected credential", err, forge.KindAuth)
	}
	wantKind(t, "label with a rejected credential", h.Rejected.AddLabels(ctx, f.PR, Marker), forge.KindAuth)
	err = h.Rejected.SetCommitStatus(ctx, f.PR, f.HeadSHA, forge.CommitStatus{State: forge.StatusSuccess, Context: Marker})
	wantKind(t, "status with a rejected credential", err, forge.KindAuth)
}

// testPush: a push moves the head; the new head is last in the commits
// with the old one its parent; the rollup is the new head's; reviews and
// comments keep the commit they were made on, and a thread on a line the
// push did not touch stays current (PR-T12, issue 6 case 8).
func testPush(t *testing.T, h Harness) {
	f := facts(t, h)
	ctx := ctxFor(t)
	id, th := oneThread(t, h, f, Marker+": before the push "+uniq())
	name := Marker + "/old-head-" + uniq()
	if err := h.Forge.SetCommitStatus(ctx, f.PR, f.HeadSHA, forge.CommitStatus{State: forge.StatusSuccess, Context: name}); err != nil {
		t.Fatal(err)
	}
	sha, err := h.Fixture.Push(ctx)
	if errors.Is(err, errors.ErrUnsupported) {
		t.Skipf("fixture cannot push: %v", err)
	}
	if err != nil || sha == "" || sha == f.HeadSHA {
		t.Fatalf("push: %q, %v", sha, err)
	}
	if g := facts(t, h); g.HeadSHA != sha {
		t.Errorf("fixture's head after the push %s, want %s", g.HeadSHA, sha)
	}
	pr := observeUntil(t, h, f.PR, func(pr *forge.PullRequest) error {
		if pr.HeadSHA != sha {
			return fmt.Errorf("head %s, want the pushed %s", pr.HeadSHA, sha)
		}
		return nil
	})
	n := len(pr.Commits)
	if n < 2 || pr.Commits[n-1].SHA != sha || !slices.Contains(pr.Commits[n-1].Parents, f.HeadSHA) || pr.Commits[n-2].SHA != f.HeadSHA {
		t.Errorf("commits after the push: %+v; want ..., %s, %s (its child)", pr.Commits, f.HeadSHA, sha)
	}
	if f.Commits > 0 && n < 100 && !pr.CommitsComplete {
		t.Errorf("CommitsComplete false with %d commits", n)
	}
	if got := findContext(pr.Checks, name, true); len(got) != 0 {
		t.Errorf("the old head's status %s shows in the new head's rollup: %+v", name, pr.Checks)
	}
	if err := rollupFits(pr.Checks); err != nil {
		t.Error(err)
	}
	if _, rv := findReview(pr, id); rv == nil || rv.CommitSHA != f.HeadSHA {
		t.Errorf("review after the push: %+v, want commit %s", rv, f.HeadSHA)
	}
	got := findThread(pr, th.ID)
	if got == nil {
		t.Fatalf("thread %s gone after the push", th.ID)
	}
	if got.Comments[0].OriginalCommit != f.HeadSHA {
		t.Errorf("comment's original commit %s, want the commit it was made on %s", got.Comments[0].OriginalCommit, f.HeadSHA)
	}
	if got.IsOutdated || got.Line != f.Line || got.Path != f.Path {
		t.Errorf("thread on an untouched line after the push: %s:%d outdated %v; want %s:%d current", got.Path, got.Line, got.IsOutdated, f.Path, f.Line)
	}
}

// testForcePushBack: a push, then a force-push back to the old head, shows
// on the timeline after the push, so a review of the old head submitted
// before it is known to predate the last push (PR-T1(4)).
func testForcePushBack(t *testing.T, h Harness) {
	f := facts(t, h)
	ctx := ctxFor(t)
	rs, ok := h.Fixture.(HeadResetter)
	if !ok {
		t.Skip("the fixture cannot force-push (no forgetest.HeadResetter)")
	}
	before := observeUntil(t, h, f.PR, func(*forge.PullRequest) error { return nil })
	sha, err := h.Fixture.Push(ctx)
	if errors.Is(err, errors.ErrUnsupported) {
		t.Skipf("fixture cannot push: %v", err)
	}
	if err != nil {
		t.Fatalf("push: %v", err)
	}
	observeUntil(t, h, f.PR, func(pr *forge.PullRequest) error {
		if pr.HeadSHA != sha {
			return fmt.Errorf("head %s, want the pushed %s", pr.HeadSHA, sha)
		}
		if n := len(pr.ForcePushes); n != len(before.ForcePushes) {
			return fmt.Errorf("a plain push shows as a force-push: %+v", pr.ForcePushes)
		}
		return nil
	})
	if err := rs.ResetHead(ctx, f.HeadSHA); errors.Is(err, errors.ErrUnsupported) {
		t.Skipf("fixture cannot force-push: %v", err)
	} else if err != nil {
		t.Fatalf("force-push back to %s: %v", f.HeadSHA, err)
	}
	pr := observeUntil(t, h, f.PR, func(pr *forge.PullRequest) error {
		if pr.HeadSHA != f.HeadSHA {
			return fmt.Errorf("head %s, want %s again after the force-push", pr.HeadSHA, f.HeadSHA)
		}
		if len(pr.ForcePushes) != len(before.ForcePushes)+1 {
			return fmt.Errorf("force-pushes %+v, want one more than %d", pr.ForcePushes, len(before.ForcePushes))
		}
		return nil
	})
	last := pr.ForcePushes[len(pr.ForcePushes)-1]
	if last.After != f.HeadSHA || (last.Before != "" && last.Before != sha) {
		t.Errorf("force-push %+v, want %s → %s", last, sha, f.HeadSHA)
	}
	if last.At.IsZero() || pr.LastForcePush() != last.At {
		t.Errorf("force-push time %v, last force-push %v", last.At, pr.LastForcePush())
	}
	if !before.ObservedAt.IsZero() && last.At.Before(before.ObservedAt.Add(-time.Minute)) {
		t.Errorf("force-push at %v, before the observation at %v that preceded it", last.At, before.ObservedAt)
	}
}

// testCheckRunOutput: a failing check run's output reaches the
// observation, so a red check can be handed to a fixer with what it said
// (PR-V5).
func testCheckRunOutput(t *testing.T, h Harness) {
	f := facts(t, h)
	ctx := ctxFor(t)
	if h.CheckRuns == nil {
		t.Skip("no credential that may create check runs")
	}
	name := Marker + "-lint-" + uniq()
	cr := forge.CheckRun{Name: name, HeadSHA: f.HeadSHA, Status: "completed", Conclusion: "failure",
		Title: "2 lint errors", Summary: Marker + ": lint failed", Text: "main.go:5: exported func lacks a comment"}
	if _, err := h.CheckRuns.CreateCheckRun(ctx, f.PR, cr); err != nil {
		t.Fatalf("check run: %v", err)
	}
	observeUntil(t, h, f.PR, func(pr *forge.PullRequest) error {
		got := findContext(pr.Checks, name, false)
		if len(got) != 1 {
			return fmt.Errorf("check runs named %s: %+v", name, got)
		}
		g := got[0]
		if g.Conclusion != "FAILURE" || g.Title != cr.Title || g.Summary != cr.Summary || g.Text != cr.Text {
			return fmt.Errorf("check run %+v, want conclusion FAILURE, title %q, summary %q, text %q", g, cr.Title, cr.Summary, cr.Text)
		}
		return nil
	})
}

// testStatusDescription: a failing commit status's description and target
// URL reach the observation (PR-V5).
func testStatusDescription(t *testing.T, h Harness) {
	f := facts(t, h)
	ctx := ctxFor(t)
	name := Marker + "/deploy-" + uniq()
	st := forge.CommitStatus{State: forge.StatusFailure, Context: name, Description: "preview deploy failed: exit 2", TargetURL: "https://ci.example.com/runs/7"}
	if err := h.Forge.SetCommitStatus(ctx, f.PR, f.HeadSHA, st); err != nil {
		t.Fatal(err)
	}
	observeUntil(t, h, f.PR, func(pr *forge.PullRequest) error {
		got := findContext(pr.Checks, name, true)
		if len(got) != 1 || got[0].Conclusion != "FAILURE" || got[0].Description != st.Description || got[0].URL != st.TargetURL {
			return fmt.Errorf("statuses named %s: %+v, want FAILURE %q %q", name, got, st.Description, st.TargetURL)
		}
		return nil
	})
}
