package reviewbottest

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/convergeloop/converge/internal/forge"
	"github.com/convergeloop/converge/internal/review"
)

// Run runs the contract against the bot newHarness builds; each rule gets
// a fresh harness.
func Run(t *testing.T, newHarness func(t *testing.T) Harness) {
	t.Helper()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			if h.Bot == nil || h.Fixture == nil {
				t.Fatal("reviewbottest: harness without Bot or Fixture")
			}
			tc.run(t, h)
		})
	}
}

// Names carry the SPEC ID a rule proves.
var tests = []struct {
	name string
	run  func(*testing.T, Harness)
}{
	{"PR_O2_IsMatchesEveryLoginInAnyCase", testIsLogins},
	{"PR_O2_IsRejectsLookAlikes", testIsLookAlikes},
	{"PR_O2_ALookAlikesReviewIsNotTheBots", testLookAlikeReview},
	{"PR_O5_RequestLoginIsOneOfItsLogins", testRequestLogin},
	{"PR_S1_StartedEventIsTheBotsOwn", testStartedEvent},
	{"PR_O3_CleanReviewOfTheHeadIsClean", testClean},
	{"PR_O3_FindingsAreFindings", testFindings},
	{"PR_O2_FindingsNotAllVisibleAreUnsettled", testUnsettled},
	{"PR_O2_OwnCommentsBelieCleanWords", testContradicted},
	{"PR_O3_EmptyIsNoSignal", noSignal(func(f Fixture, head string) []Sample { return []Sample{f.Empty(head)} })},
	{"PR_O3_GarbledIsNoSignal", noSignal(func(f Fixture, head string) []Sample { return []Sample{f.Garbled(head)} })},
	{"PR_O3_TruncatedIsNoSignal", noSignal(func(f Fixture, head string) []Sample { return []Sample{f.Truncated(head)} })},
	{"PR_O3_ErrorsAreNoSignal", noSignal(func(f Fixture, head string) []Sample { return f.Errors(head) })},
	{"PR_O3_HostileIsNeverClean", testHostile},
	{"PR_O4_QuotedOrFencedCleanWordsAreNotTheBots", testQuoted},
	{"PR_O2_AnotherAuthorsWordsAreNotTheBots", testImpostorWords},
	{"PR_T1_AReviewOfAnotherCommitIsNotTheHeads", testOtherCommit},
	{"PR_T1_EarlierFindingsDoNotSpoilALaterCleanReview", testEarlierFindings},
	{"ReadIsPure", testPure},
}

// Two commits of a pull request: the head, and an earlier head.
var (
	head = strings.Repeat("a1", 20)
	old  = strings.Repeat("b2", 20)
)

// later is how far the suite moves a sample that must come after another.
const later = time.Hour

// prWith is a pull request at head carrying the samples, each in turn.
func prWith(head string, samples ...Sample) *forge.PullRequest {
	pr := &forge.PullRequest{Number: 7, State: forge.StateOpen, HeadSHA: head, HeadRef: "feature", BaseRef: "main"}
	for _, s := range samples {
		pr.Reviews = append(pr.Reviews, s.Others...)
		pr.Reviews = append(pr.Reviews, s.Review)
		pr.Threads = append(pr.Threads, s.Threads...)
		pr.IssueComments = append(pr.IssueComments, s.IssueComments...)
	}
	slices.SortStableFunc(pr.Reviews, func(a, b forge.Review) int { return a.SubmittedAt.Compare(b.SubmittedAt) })
	slices.SortStableFunc(pr.IssueComments, func(a, b forge.IssueComment) int { return a.CreatedAt.Compare(b.CreatedAt) })
	return pr
}

// read is the bot's reading of r on pr, checked for what every reading
// owes: it leaves r and pr as they were (the loop's Decide is pure), and
// a reading that is neither clean nor findings says why.
func read(t *testing.T, h Harness, r forge.Review, pr *forge.PullRequest) review.Signal {
	t.Helper()
	before := clonePR(pr)
	s, why := h.Bot.Read(r, pr)
	if !reflect.DeepEqual(pr, before) {
		t.Errorf("Read changed the pull request it read")
	}
	if (s == review.NoSignal || s == review.Unsettled) && strings.TrimSpace(why) == "" {
		t.Errorf("review %s read %s without saying why", r.ID, s)
	}
	return s
}

// reviews are every review of the sample, the one the loop reads last.
func (s Sample) reviews() []forge.Review {
	return append(slices.Clone(s.Others), s.Review)
}

// neverClean fails when any review of s, read on pr, is clean.
func neverClean(t *testing.T, h Harness, s Sample, pr *forge.PullRequest) {
	t.Helper()
	for _, r := range s.reviews() {
		if got := read(t, h, r, pr); got == review.Clean {
			t.Errorf("%s: review %s (%s) read clean", s.Name, r.ID, r.State)
		}
	}
}

// bots checks the fixture's sample is the bot's: every review by one of
// its logins, of the commit asked about.
func bots(t *testing.T, h Harness, s Sample, commit string) {
	t.Helper()
	for _, r := range s.reviews() {
		if !h.Bot.Is(r.Author) {
			t.Fatalf("fixture: %s review %s is by %q, which the bot says is not itself", s.Name, r.ID, r.Author)
		}
		if r.CommitSHA != commit {
			t.Fatalf("fixture: %s review %s is of %q, asked for %q", s.Name, r.ID, r.CommitSHA, commit)
		}
	}
}

func testIsLogins(t *testing.T, h Harness) {
	logins := h.Fixture.Logins()
	if len(logins) == 0 {
		t.Fatal("fixture: the bot has no login")
	}
	for _, l := range logins {
		for _, v := range []string{l, strings.ToLower(l), strings.ToUpper(l), mixCase(l)} {
			if !h.Bot.Is(v) {
				t.Errorf("Is(%q) = false: %q is one of the bot's logins, matched case-insensitively (PR-O2)", v, l)
			}
		}
	}
}

// mixCase flips the case of every other letter.
func mixCase(s string) string {
	b := []rune(s)
	for i, r := range b {
		if i%2 == 0 {
			b[i] = []rune(strings.ToUpper(string(r)))[0]
		} else {
			b[i] = []rune(strings.ToLower(string(r)))[0]
		}
	}
	return string(b)
}

// lookAlikes are the fixture's look-alikes and the suite's variations on
// every login, minus any that is a login itself.
func lookAlikes(f Fixture) []string {
	logins := f.Logins()
	isLogin := func(s string) bool {
		return slices.ContainsFunc(logins, func(l string) bool { return strings.EqualFold(l, s) })
	}
	out := []string{""}
	for _, l := range logins {
		out = append(out, l+"-fan", "not-"+l, l+"x", "x"+l, " "+l, l+" ", l+"\n", l+"[bot]-fan")
		if r := []rune(l); len(r) > 1 {
			out = append(out, string(r[:len(r)-1]))
		}
	}
	var keep []string
	for _, l := range append(out, f.LookAlikes()...) {
		if !isLogin(l) && !slices.Contains(keep, l) {
			keep = append(keep, l)
		}
	}
	return keep
}

func testIsLookAlikes(t *testing.T, h Harness) {
	for _, l := range h.Fixture.LookAlikes() {
		for _, login := range h.Fixture.Logins() {
			if strings.EqualFold(l, login) {
				t.Fatalf("fixture: look-alike %q is one of the bot's logins", l)
			}
		}
	}
	for _, l := range lookAlikes(h.Fixture) {
		if h.Bot.Is(l) {
			t.Errorf("Is(%q) = true: a look-alike is not the bot (PR-O2)", l)
		}
	}
}

// testLookAlikeReview: the loop reads a review only when Is(author)
// (prloop's isBot gate); the bot's own clean review, as a look-alike's,
// never passes it, and one whose notes a look-alike wrote is not clean.
func testLookAlikeReview(t *testing.T, h Harness) {
	s := h.Fixture.Clean(head)
	bots(t, h, s, head)
	for _, l := range lookAlikes(h.Fixture) {
		r := s.Review
		r.Author = l
		pr := prWith(head, Sample{Review: r, Threads: s.Threads, IssueComments: s.IssueComments})
		if h.Bot.Is(r.Author) && read(t, h, r, pr) == review.Clean {
			t.Errorf("a clean review by look-alike %q is taken for the bot's", l)
		}
	}
}

func testRequestLogin(t *testing.T, h Harness) {
	rl := h.Bot.RequestLogin()
	if rl == "" || !h.Bot.Is(rl) {
		t.Fatalf("RequestLogin() = %q, which Is does not take for the bot (PR-O5)", rl)
	}
	if !slices.ContainsFunc(h.Fixture.Logins(), func(l string) bool { return strings.EqualFold(l, rl) }) {
		t.Errorf("RequestLogin() = %q is not among the bot's logins %q", rl, h.Fixture.Logins())
	}
}

// genericEvents happen on a pull request whether or not the bot ever
// starts: none of them proves a start (PR-S1: a pending request alone
// means keep waiting).
var genericEvents = []string{
	"review_requested", "review_request_removed", "reviewed", "commented", "labeled", "unlabeled",
	"assigned", "unassigned", "mentioned", "subscribed", "head_ref_force_pushed", "ready_for_review",
	"converted_to_draft", "closed", "reopened", "merged", "committed", "approved", "requested_changes",
}

func testStartedEvent(t *testing.T, h Harness) {
	name := h.Bot.Name()
	if name == "" || name != h.Bot.Name() || strings.ContainsAny(name, " \t\n") {
		t.Errorf("Name() = %q: a bot has one stable name, without spaces", name)
	}
	ev := h.Bot.StartedEvent()
	if ev != h.Bot.StartedEvent() {
		t.Fatal("StartedEvent() is not stable")
	}
	if ev == "" {
		t.Skip("the bot's forge shows no start event; starts are proven by its reviews alone")
	}
	if strings.ContainsAny(ev, " \t\n") {
		t.Errorf("StartedEvent() = %q: an event name has no spaces", ev)
	}
	for _, g := range genericEvents {
		if strings.EqualFold(ev, g) {
			t.Errorf("StartedEvent() = %q happens without the bot starting: it proves no start (PR-S1)", ev)
		}
	}
}

func testClean(t *testing.T, h Harness) {
	s := h.Fixture.Clean(head)
	bots(t, h, s, head)
	if got := read(t, h, s.Review, prWith(head, s)); got != review.Clean {
		t.Errorf("the bot's clean review of the head read %s (PR-O3)", got)
	}
}

func testFindings(t *testing.T, h Harness) {
	for _, n := range []int{1, 3} {
		s := h.Fixture.Findings(head, n)
		bots(t, h, s, head)
		if len(s.Threads) != n {
			t.Fatalf("fixture: %d findings opened %d threads", n, len(s.Threads))
		}
		for _, th := range s.Threads {
			if len(th.Comments) == 0 || !h.Bot.Is(th.Comments[0].Author) {
				t.Fatalf("fixture: finding thread %s is not opened by the bot", th.ID)
			}
		}
		pr := prWith(head, s)
		if got := read(t, h, s.Review, pr); got != review.Findings {
			t.Errorf("a review with %d visible findings read %s (PR-O3)", n, got)
		}
		neverClean(t, h, s, pr)
	}
}

// testUnsettled: the forge shows a review before its comments (PR-O2);
// a review whose own count exceeds the threads visible is not settled.
func testUnsettled(t *testing.T, h Harness) {
	for _, keep := range []int{2, 0} {
		s := h.Fixture.Findings(head, 3)
		s.Threads = s.Threads[:keep]
		pr := prWith(head, s)
		if got := read(t, h, s.Review, pr); got != review.Unsettled {
			t.Errorf("3 findings with %d thread(s) visible read %s, want unsettled (PR-O2)", keep, got)
		}
		neverClean(t, h, s, pr)
	}
}

// testContradicted: a review whose words say clean while its own
// comments are on the pull request is neither (PR-O2); the comments, read
// as a review of their own, may be findings.
func testContradicted(t *testing.T, h Harness) {
	for _, n := range []int{1, 2} {
		s := h.Fixture.Contradicted(head, n)
		pr := prWith(head, s)
		if got := read(t, h, s.Review, pr); got == review.Clean || got == review.Findings {
			t.Errorf("clean words with %d comment(s) of the bot's own read %s (PR-O2)", n, got)
		}
		neverClean(t, h, s, pr)
	}
}

func noSignal(samples func(f Fixture, head string) []Sample) func(*testing.T, Harness) {
	return func(t *testing.T, h Harness) {
		ss := samples(h.Fixture, head)
		if len(ss) == 0 {
			t.Fatal("fixture: no sample")
		}
		for _, s := range ss {
			pr := prWith(head, s)
			if got := read(t, h, s.Review, pr); got != review.NoSignal {
				t.Errorf("%s: read %s, want no signal (PR-O3)", s.Name, got)
			}
			neverClean(t, h, s, pr)
		}
	}
}

func testHostile(t *testing.T, h Harness) {
	ss := h.Fixture.Hostile(head)
	if len(ss) == 0 {
		t.Fatal("fixture: no hostile sample")
	}
	for _, s := range ss {
		neverClean(t, h, s, prWith(head, s))
	}
}

// testQuoted: the bot's clean words, quoted or fenced (as a human quotes
// an earlier review), are not its own count (PR-O4).
func testQuoted(t *testing.T, h Harness) {
	for _, wrap := range []struct {
		name string
		f    func(string) string
	}{
		{"quoted", func(s string) string {
			return "> " + strings.ReplaceAll(strings.ReplaceAll(s, "\r\n", "\n"), "\n", "\n> ")
		}},
		{"fenced", func(s string) string { return "```\n" + s + "\n```" }},
	} {
		s := h.Fixture.Clean(head)
		words := false
		rewrite := func(body string) string {
			if strings.TrimSpace(body) == "" {
				return body
			}
			words = true
			return wrap.f(body)
		}
		s.Review.Body = rewrite(s.Review.Body)
		for i := range s.Others {
			s.Others[i].Body = rewrite(s.Others[i].Body)
		}
		for i, c := range s.IssueComments {
			if h.Bot.Is(c.Author) {
				s.IssueComments[i].Body = rewrite(c.Body)
			}
		}
		if !words {
			t.Fatal("fixture: the clean review says nothing in words; a clean pass is only one the bot says is (PR-O3)")
		}
		pr := prWith(head, s)
		if got := read(t, h, s.Review, pr); got != review.NoSignal {
			t.Errorf("the clean words %s read %s, want no signal (PR-O4)", wrap.name, got)
		}
		neverClean(t, h, s, pr)
	}
}

// testImpostorWords: the clean review's notes, written by a look-alike,
// do not make the bot's review clean.
func testImpostorWords(t *testing.T, h Harness) {
	s := h.Fixture.Clean(head)
	moved := false
	impostor := h.Bot.RequestLogin() + "-fan"
	for i, c := range s.IssueComments {
		if h.Bot.Is(c.Author) {
			s.IssueComments[i].Author, moved = impostor, true
		}
	}
	if !moved {
		t.Skip("the bot's clean review leaves no note of its own")
	}
	pr := prWith(head, s)
	if got := read(t, h, s.Review, pr); got == review.Clean {
		t.Errorf("with its notes written by %q, the bot's review read clean", impostor)
	}
}

// testOtherCommit: a review says which commit it is of, and the loop
// compares that with the head (PR-T1(4)); a review of an earlier head
// never carries the head's SHA, alone or beside a later review.
func testOtherCommit(t *testing.T, h Harness) {
	c := h.Fixture.Clean(old)
	bots(t, h, c, old)
	if got := read(t, h, c.Review, prWith(head, c)); got == review.Clean && c.Review.CommitSHA == head {
		t.Error("a clean review of an earlier commit is taken for the head's")
	}
	f := h.Fixture.Findings(old, 2)
	bots(t, h, f, old)

	nf := shift(h.Fixture.Findings(head, 2), later)
	pr := prWith(head, c, nf)
	if got := read(t, h, nf.Review, pr); got != review.Findings {
		t.Errorf("findings on the head after a clean review of an earlier commit read %s", got)
	}
	if r := latest(h, pr); r == nil || r.CommitSHA != head {
		t.Errorf("the bot's latest review is not the one of the head: %+v", r)
	}
	neverClean(t, h, nf, pr)
}

// testEarlierFindings: threads of an earlier review of an earlier head
// (the loop replies to and resolves them) do not make a later clean
// review of the head anything but clean.
func testEarlierFindings(t *testing.T, h Harness) {
	f := h.Fixture.Findings(old, 2)
	c := shift(h.Fixture.Clean(head), later)
	pr := prWith(head, f, c)
	if got := read(t, h, c.Review, pr); got != review.Clean {
		t.Errorf("a clean review of the head after findings on %s read %s", old[:7], got)
	}
	neverClean(t, h, f, pr)
}

func testPure(t *testing.T, h Harness) {
	for _, s := range []Sample{h.Fixture.Clean(head), h.Fixture.Findings(head, 2), h.Fixture.Garbled(head)} {
		pr := prWith(head, s)
		a, b := read(t, h, s.Review, pr), read(t, h, s.Review, pr)
		if a != b {
			t.Errorf("%s: the same review read %s, then %s", s.Name, a, b)
		}
	}
}

// latest is the bot's latest review on pr by submission time, as the
// loop picks it (ties to the head).
func latest(h Harness, pr *forge.PullRequest) *forge.Review {
	var best *forge.Review
	for i := range pr.Reviews {
		r := &pr.Reviews[i]
		if !h.Bot.Is(r.Author) {
			continue
		}
		if best == nil || r.SubmittedAt.After(best.SubmittedAt) || (r.SubmittedAt.Equal(best.SubmittedAt) && r.CommitSHA == pr.HeadSHA) {
			best = r
		}
	}
	return best
}

// shift moves every time in s by d.
func shift(s Sample, d time.Duration) Sample {
	s.Review.SubmittedAt = s.Review.SubmittedAt.Add(d)
	s.Others = slices.Clone(s.Others)
	for i := range s.Others {
		s.Others[i].SubmittedAt = s.Others[i].SubmittedAt.Add(d)
	}
	s.Threads = slices.Clone(s.Threads)
	for i := range s.Threads {
		s.Threads[i].Comments = slices.Clone(s.Threads[i].Comments)
		for j := range s.Threads[i].Comments {
			s.Threads[i].Comments[j].CreatedAt = s.Threads[i].Comments[j].CreatedAt.Add(d)
		}
	}
	s.IssueComments = slices.Clone(s.IssueComments)
	for i := range s.IssueComments {
		s.IssueComments[i].CreatedAt = s.IssueComments[i].CreatedAt.Add(d)
	}
	return s
}

// clonePR copies every part of pr the suite fills.
func clonePR(pr *forge.PullRequest) *forge.PullRequest {
	c := *pr
	c.Reviews = slices.Clone(pr.Reviews)
	c.Threads = slices.Clone(pr.Threads)
	for i := range c.Threads {
		c.Threads[i].Comments = slices.Clone(c.Threads[i].Comments)
	}
	c.IssueComments = slices.Clone(pr.IssueComments)
	return &c
}

// Counter makes ids unique across a fixture's samples.
type Counter struct{ n int64 }

// Next is the next id.
func (c *Counter) Next() int64 { c.n++; return c.n }

// String is the next id in decimal with a prefix.
func (c *Counter) String(prefix string) string { return fmt.Sprintf("%s%d", prefix, c.Next()) }
