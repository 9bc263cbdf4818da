package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-github/v93/github"

	"github.com/convergeloop/converge/internal/emulator/fakehub"
	"github.com/convergeloop/converge/internal/exitcode"
	"github.com/convergeloop/converge/internal/forge"
	"github.com/convergeloop/converge/internal/testutil/hubtest"
)

// End-to-end proofs of issue 6: every path to an unproven two-stable is
// closed. Each test runs the real binary against the emulator, plays the
// other actors with their own tokens, and checks the outcome at the forge.

// TestPR_T1_T12_ForcePushBackToReviewedHeadIsNotTwoStable is case 2:
// converge the PR, force-push the branch back to its first head, run
// again. The old review of that head is not Copilot's latest; the threads
// resolved as "addressed" by commits no longer on the branch are reopened
// and handled again (PR-T12).
func TestPR_T1_T12_ForcePushBackToReviewedHeadIsNotTwoStable(t *testing.T) {
	t.Parallel() // each test has its own emulator and state
	hub, demo := startHub(t, 100*time.Millisecond)
	first := observe(t, hub, demo.PRURL).HeadSHA
	state := t.TempDir()
	if code, out := runBin(t, authorEnv(hub), prArgs(hub, demo, state)...); code != 0 {
		t.Fatalf("first run exit %d:\n%s", code, out)
	}
	forcePush(t, hub, demo, first)
	// Copilot re-flags what is on the branch again.
	if err := hub.SetCopilotScript(demo.Owner, demo.Repo, demo.Number, fakehub.DemoScript()); err != nil {
		t.Fatal(err)
	}
	code, out := runBin(t, authorEnv(hub), prArgs(hub, demo, state)...)
	pr := observe(t, hub, demo.PRURL)
	if strings.Contains(out, "after 0 round(s)") {
		t.Fatalf("two-stable in 0 rounds on a force-pushed head:\n%s", out)
	}
	if code == 0 {
		assertProven(t, pr, false, out)
	}
	if pr.HeadSHA == first {
		t.Fatalf("the head is still the force-pushed first head %s: nothing was fixed again (exit %d)\n%s", first, code, out)
	}
	reopened := 0
	for _, th := range pr.Threads {
		rs := convergeReplies(th)
		if len(rs) >= 2 && strings.Contains(rs[len(rs)-1], "disposition=addressed") {
			reopened++
		}
	}
	if reopened == 0 {
		t.Errorf("no thread was addressed again after the force-push dropped its commit:\n%s", out)
	}
}

// TestPR_T13_HumanChangesRequestedBlocksSuccess is case 6: a trusted
// human's CHANGES_REQUESTED review and a trusted top-level comment are
// findings, answered with a top-level comment quoting them, and the run
// cannot succeed while the change request stands. Once the reviewer
// dismisses it, a rerun can end two-stable.
func TestPR_T13_HumanChangesRequestedBlocksSuccess(t *testing.T) {
	t.Parallel() // each test has its own emulator and state
	hub, demo := startHub(t, 100*time.Millisecond)
	ctx := context.Background()
	gh := restAs(t, hub, hub.Tokens().Reviewer)
	rv, _, err := gh.PullRequests.CreateReview(ctx, demo.Owner, demo.Repo, demo.Number, &github.PullRequestReviewRequest{
		Event: new("REQUEST_CHANGES"), Body: new("Please also reject negative window sizes in MovingSum."),
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := gh.Issues.CreateComment(ctx, demo.Owner, demo.Repo, demo.Number, github.IssueCommentRequest{Body: "Describe should print the median too."}); err != nil {
		t.Fatal(err)
	}
	state := t.TempDir()
	code, out := runBin(t, authorEnv(hub), prArgs(hub, demo, state)...)
	pr := observe(t, hub, demo.PRURL)
	if code != exitcode.Human || !strings.Contains(out, "handed-off") || !strings.Contains(out, "requested changes") {
		t.Fatalf("want handed-off (exit 3) naming the change request, got exit %d:\n%s", code, out)
	}
	assertNotReady(t, pr)
	quoted := map[string]int{}
	for _, ic := range pr.IssueComments {
		for _, want := range []string{"reject negative window sizes", "print the median"} {
			if strings.Contains(ic.Body, "> "+strings.Split(want, " ")[0]) || (strings.Contains(ic.Body, want) && strings.Contains(ic.Body, "converge:reply")) {
				quoted[want]++
			}
		}
	}
	for _, want := range []string{"reject negative window sizes", "print the median"} {
		if quoted[want] != 1 {
			t.Errorf("want exactly one top-level answer quoting %q, got %d", want, quoted[want])
		}
	}

	// The reviewer dismisses the change request: a rerun may succeed,
	// and answers nothing twice.
	if _, _, err := gh.PullRequests.DismissReview(ctx, demo.Owner, demo.Repo, demo.Number, rv.GetID(), github.PullRequestDismissReviewRequest{Message: "ok"}); err != nil {
		t.Fatal(err)
	}
	before := len(pr.IssueComments)
	code, out = runBin(t, authorEnv(hub), prArgs(hub, demo, state)...)
	pr = observe(t, hub, demo.PRURL)
	if code != 0 {
		t.Fatalf("after the dismissal want two-stable, got exit %d:\n%s", code, out)
	}
	assertProven(t, pr, false, "")
	if got := len(pr.IssueComments); got != before {
		t.Errorf("the rerun answered again: %d → %d top-level comments", before, got)
	}
}

// TestPR_T11_HandOffAnsweredOnceAndEndsHandedOff is case 9: a trusted
// human's thread the fixer cannot address is escalated once, stays a
// hand-off on every later head (no fresh "Escalated" reply, no structural
// round), and the run ends handed-off, never ready-for-merge. When the
// human resolves it, a rerun ends two-stable.
func TestPR_T11_HandOffAnsweredOnceAndEndsHandedOff(t *testing.T) {
	t.Parallel() // each test has its own emulator and state
	hub, demo := startHub(t, 100*time.Millisecond)
	ctx := context.Background()
	gh := restAs(t, hub, hub.Tokens().Reviewer)
	if _, _, err := gh.PullRequests.CreateReview(ctx, demo.Owner, demo.Repo, demo.Number, &github.PullRequestReviewRequest{
		Event: new("COMMENT"),
		Comments: []*github.DraftReviewComment{{
			Path: new("summary.go"), Line: new(5), Side: new("RIGHT"),
			Body: new("Should this package depend on fmt at all? Let's discuss the API first."),
		}},
	}); err != nil {
		t.Fatal(err)
	}
	state := t.TempDir()
	code, out := runBin(t, authorEnv(hub), prArgs(hub, demo, state)...)
	pr := observe(t, hub, demo.PRURL)
	if code != exitcode.Human || !strings.Contains(out, "converge: handed-off") {
		t.Fatalf("want handed-off (exit 3), got exit %d:\n%s", code, out)
	}
	assertNotReady(t, pr)
	var human string
	for _, th := range pr.Threads {
		if strings.EqualFold(th.Comments[0].Author, fakehub.LoginReviewer) {
			human = th.ID
			rs := convergeReplies(th)
			if len(rs) != 1 || !strings.Contains(rs[0], "disposition=escalated") || th.IsResolved {
				t.Errorf("the hand-off got %d replies (want one escalation, thread open):\n%v", len(rs), rs)
			}
			continue
		}
		if !th.IsResolved {
			t.Errorf("Copilot thread %s left open", th.ID)
		}
	}
	if human == "" {
		t.Fatal("the reviewer's thread is missing")
	}
	if strings.Contains(out, "convergence-failure") {
		t.Errorf("the hand-off counted as structural rounds:\n%s", out)
	}

	// The human resolves the hand-off: a rerun ends two-stable, writing
	// no new reply.
	if err := resolveAs(t, hub, pr.Ref, human); err != nil {
		t.Fatal(err)
	}
	code, out = runBin(t, authorEnv(hub), prArgs(hub, demo, state)...)
	if code != 0 {
		t.Fatalf("after the human resolved the hand-off want two-stable, got %d:\n%s", code, out)
	}
	pr = observe(t, hub, demo.PRURL)
	assertProven(t, pr, false, "")
}

// resolveAs resolves a thread as the reviewer, through the API.
func resolveAs(t *testing.T, hub *fakehub.Hub, ref forge.PRRef, threadID string) error {
	t.Helper()
	return hubtest.Client(t, hub, hub.Tokens().Reviewer).ResolveThread(context.Background(), ref, threadID)
}

// TestAG_T4_CrashingAgentEndsErrored is case 5: an agent that crashes, or
// one that exits 0 printing garbage instead of a status record, is retried
// once, then the run ends errored naming the agent and its stderr; nothing
// on the PR says "unparseable" and nothing says ready.
func TestAG_T4_CrashingAgentEndsErrored(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, body, want string
	}{
		{"crash", "echo 'fatal: model backend exploded' >&2\nexit 3\n", "model backend exploded"},
		{"garbage", "cat >/dev/null\necho 'warning: context window nearly full' >&2\necho 'I fixed everything, trust me!'\n", "context window nearly full"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel() // each test has its own emulator and state
			hub, demo := startHub(t, 100*time.Millisecond)
			start := observe(t, hub, demo.PRURL).HeadSHA
			dir := t.TempDir()
			script := filepath.Join(dir, "agent.sh")
			if err := os.WriteFile(script, []byte("#!/bin/sh\necho attempt >> "+filepath.Join(dir, "attempts")+"\n"+tc.body), 0o755); err != nil {
				t.Fatal(err)
			}
			args := append(prArgs(hub, demo, t.TempDir()), "--agent", "command", "--agent-cmd", script, "--review-agent", "suggest")
			code, out := runBin(t, authorEnv(hub), args...)
			if code != exitcode.Error || !strings.Contains(out, tc.want) || !strings.Contains(out, "command") {
				t.Fatalf("want errored (exit 1) naming the agent and its stderr, got %d:\n%s", code, out)
			}
			if b, _ := os.ReadFile(filepath.Join(dir, "attempts")); strings.Count(string(b), "attempt") != 2 {
				t.Errorf("want exactly 2 attempts (one retry), got %q", b)
			}
			pr := observe(t, hub, demo.PRURL)
			assertNotReady(t, pr)
			if pr.HeadSHA != start {
				t.Errorf("the head moved to %s: a broken agent's change was pushed", pr.HeadSHA)
			}
			for _, th := range pr.Threads {
				for _, r := range convergeReplies(th) {
					t.Errorf("a broken agent produced a PR reply: %q", r)
				}
			}
		})
	}
}

// TestAG_T5_AlwaysRedTestsNeverReady is case 5's red test command: the
// baseline is red, every fix is judged against it, and whatever the
// outcome the PR is never ready-for-merge on a red build it cannot prove.
func TestAG_T5_AlwaysRedTestsNeverReady(t *testing.T) {
	t.Parallel() // each test has its own emulator and state
	hub, demo := startHub(t, 100*time.Millisecond)
	args := append(prArgs(hub, demo, t.TempDir()), "--test-cmd", "echo '--- FAIL: TestAlwaysRed' >&2; exit 1")
	code, out := runBin(t, authorEnv(hub), args...)
	pr := observe(t, hub, demo.PRURL)
	if code == 0 {
		assertProven(t, pr, false, out)
	}
	if !strings.Contains(out, "red") && !strings.Contains(out, "baseline") {
		t.Errorf("nothing says the tests were red before any fix:\n%s", out)
	}
	for _, th := range pr.Threads {
		for _, r := range convergeReplies(th) {
			if strings.Contains(r, "tests fail with this fix:.") || strings.Contains(r, "tests fail with this fix: .") {
				t.Errorf("a reply with an empty test reason: %q", r)
			}
		}
	}
}

// TestPR_M3_NoReviewNeverTwoStable is case 1: without an independent
// review nothing ends two-stable. --no-copilot with a fixer that cannot
// review fails pre-flight before anything is written; a refused Copilot
// request ends blocked-no-independent-review; a transient fault on the
// request is retried, never read as a refusal.
func TestPR_M3_NoReviewNeverTwoStable(t *testing.T) {
	t.Parallel() // each test has its own emulator and state
	t.Run("no-copilot without a review agent fails pre-flight", func(t *testing.T) {
		t.Parallel() // its own emulator and state
		hub, demo := startHub(t, 100*time.Millisecond)
		hub.ResetRequestCounts()
		code, out := runBin(t, authorEnv(hub), append(prArgs(hub, demo, t.TempDir()), "--no-copilot")...)
		if code != exitcode.Usage || !strings.Contains(out, "independent review") {
			t.Fatalf("want exit 2 naming the missing independent review, got %d:\n%s", code, out)
		}
		pr := observe(t, hub, demo.PRURL)
		if len(pr.Labels) != 0 || len(pr.IssueComments) != 0 {
			t.Errorf("pre-flight wrote to the forge: labels %v, %d comments", pr.Labels, len(pr.IssueComments))
		}
	})
	t.Run("a refused Copilot request ends blocked-no-independent-review", func(t *testing.T) {
		t.Parallel() // its own emulator and state
		hub, demo := startHub(t, 100*time.Millisecond)
		if err := hub.SetCopilotAvailable(demo.Owner, demo.Repo, false); err != nil {
			t.Fatal(err)
		}
		code, out := runBin(t, authorEnv(hub), prArgs(hub, demo, t.TempDir())...)
		if code != exitcode.Human || !strings.Contains(out, "blocked-no-independent-review") {
			t.Fatalf("want blocked-no-independent-review (exit 3), got %d:\n%s", code, out)
		}
		assertNotReady(t, observe(t, hub, demo.PRURL))
	})
	t.Run("a transient fault on the request is retried", func(t *testing.T) {
		t.Parallel() // its own emulator and state
		hub, demo := startHub(t, 100*time.Millisecond)
		hub.InjectGraphQLFault("requestReviewsByLogin", 502, 1)
		code, out := runBin(t, authorEnv(hub), prArgs(hub, demo, t.TempDir())...)
		if code != 0 || strings.Contains(out, "single-iteration") {
			t.Fatalf("want two-stable through Copilot after a retry, got %d:\n%s", code, out)
		}
		assertProven(t, observe(t, hub, demo.PRURL), false, "")
	})
}

// TestPR_S4_NoCopilotEndsTwoStableOnlyAfterCleanLocalReview is the
// acceptance line of issue 6: `converge pr --no-copilot` on the sandbox PR
// ends two-stable only after a local review of the final head came back
// clean. The angles are command agents that really read the head.
func TestPR_S4_NoCopilotEndsTwoStableOnlyAfterCleanLocalReview(t *testing.T) {
	t.Parallel() // each test has its own emulator and state
	hub, demo := startHub(t, 100*time.Millisecond)
	dir := t.TempDir()
	review := filepath.Join(dir, "review.sh")
	fix := filepath.Join(dir, "fix.sh")
	write := func(p, s string) {
		if err := os.WriteFile(p, []byte(s), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write(review, `#!/bin/sh
cat > /dev/null
echo "review $(git rev-parse HEAD)" >> `+filepath.Join(dir, "reviews")+`
if grep -q 'i+n < len(xs)' summary.go; then
  echo '[{"file":"summary.go","line_range":[27,27],"summary":"MovingSum drops the last window: the bound must be i+n <= len(xs)","verdict":"structural"}]'
else
  echo '[]'
fi
`)
	// The fixer proves its fix (PR-V7): a test that fails on the bound
	// as it was, and passes with the fix.
	write(fix, `#!/bin/sh
cat > /dev/null
sed -i 's/i+n < len(xs)/i+n <= len(xs)/' summary.go
printf '\nfunc TestMovingSumKeepsTheLastWindow(t *testing.T) {\n\tif got := MovingSum([]float64{1, 2, 3}, 3); len(got) != 1 || got[0] != 6 {\n\t\tt.Fatalf("MovingSum = %%v", got)\n\t}\n}\n' >> summary_test.go
echo '{"status":"complete","next_action":"","needs_extension_minutes":0,"summary":"fixed the bound","files_changed":["summary.go","summary_test.go"]}'
`)
	args := append(prArgs(hub, demo, t.TempDir()), "--no-copilot", "--agent", "command", "--agent-cmd", fix,
		"--review-agent", "command", "--review-agent-cmd", review, "--review-angles", "correctness-leak,edge-cases")
	code, out := runBin(t, authorEnv(hub), args...)
	if code != 0 {
		t.Fatalf("want two-stable, got exit %d:\n%s", code, out)
	}
	pr := observe(t, hub, demo.PRURL)
	assertProven(t, pr, true, out)
	if !strings.Contains(fileAtHead(t, hub, demo, "summary.go"), "i+n <= len(xs)") {
		t.Errorf("the local finding was not fixed on the head")
	}
	b, _ := os.ReadFile(filepath.Join(dir, "reviews"))
	if !strings.Contains(string(b), "review "+pr.HeadSHA) {
		t.Errorf("no angle reviewed the final head %s; reviews:\n%s", pr.HeadSHA, b)
	}
	summaries := 0
	for _, ic := range pr.IssueComments {
		if strings.Contains(ic.Body, "converge:local-review") {
			summaries++
		}
	}
	if summaries < 2 {
		t.Errorf("want a summary comment per round (2), got %d", summaries)
	}
}

// TestPR_O2_ReviewCommentsLagBehindTheReview is case 3: a review whose
// inline comments become visible K reads after it is never read as clean.
// The run either handles every thread or does not end two-stable.
func TestPR_O2_ReviewCommentsLagBehindTheReview(t *testing.T) {
	t.Parallel() // each test has its own emulator and state
	for _, k := range []int{3, 9} {
		t.Run(fmt.Sprintf("lag %d reads", k), func(t *testing.T) {
			t.Parallel() // its own emulator and state
			hub, demo := startHub(t, 50*time.Millisecond)
			hub.SetReviewLag(k)
			code, out := runBin(t, authorEnv(hub), prArgs(hub, demo, t.TempDir())...)
			pr := observe(t, hub, demo.PRURL)
			if code == 0 {
				assertProven(t, pr, false, out)
				if len(pr.Threads) != 3 {
					t.Fatalf("want the demo's 3 threads handled, got %d", len(pr.Threads))
				}
				return
			}
			assertNotReady(t, pr)
		})
	}
}

// TestPR_O3_UnknownReviewBodiesAreNoSignal is case 4: "wasn't able to
// review", a quota message, "temporarily unavailable" and an empty body
// never count as a clean review; a recognized error review is not terminal
// at once: converge re-requests and a good review can still come.
func TestPR_O3_UnknownReviewBodiesAreNoSignal(t *testing.T) {
	t.Parallel() // each test has its own emulator and state
	script := func(tail ...fakehub.CopilotRound) fakehub.CopilotScript {
		s := fakehub.DemoScript()
		s.Rounds = append(s.Rounds[:2:2], tail...)
		return s
	}
	t.Run("only bodies that are not reviews", func(t *testing.T) {
		t.Parallel() // its own emulator and state
		hub, demo := startHub(t, 50*time.Millisecond)
		if err := hub.SetCopilotScript(demo.Owner, demo.Repo, demo.Number, script(
			fakehub.CopilotRound{Body: fakehub.Text(fakehub.CopilotNoFilesBody)},
			fakehub.CopilotRound{Body: fakehub.Text(fakehub.CopilotQuotaBody)},
			fakehub.CopilotRound{Body: fakehub.Text(fakehub.CopilotUnavailableBody)},
			fakehub.CopilotRound{Body: fakehub.Text("")},
			fakehub.CopilotRound{Body: fakehub.Text("LGTM")},
			fakehub.CopilotRound{Body: fakehub.Text("")},
		)); err != nil {
			t.Fatal(err)
		}
		code, out := runBin(t, authorEnv(hub), prArgs(hub, demo, t.TempDir())...)
		if code == 0 {
			t.Fatalf("two-stable on reviews that said nothing:\n%s", out)
		}
		if !strings.Contains(out, "blocked-no-independent-review") {
			t.Errorf("want blocked-no-independent-review, got exit %d:\n%s", code, out)
		}
		assertNotReady(t, observe(t, hub, demo.PRURL))
	})
	t.Run("an error review, then a good one", func(t *testing.T) {
		t.Parallel() // its own emulator and state
		hub, demo := startHub(t, 50*time.Millisecond)
		if err := hub.SetCopilotScript(demo.Owner, demo.Repo, demo.Number, script(
			fakehub.CopilotRound{Error: true},
			fakehub.CopilotRound{},
		)); err != nil {
			t.Fatal(err)
		}
		code, out := runBin(t, authorEnv(hub), prArgs(hub, demo, t.TempDir())...)
		if code != 0 {
			t.Fatalf("an error review ended the run: exit %d\n%s", code, out)
		}
		assertProven(t, observe(t, hub, demo.PRURL), false, "")
	})
}

// TestREL2_CrashBetweenReplyAndResolve is case 7: the reply landed, the
// resolve did not (the forge refused it, as a SIGKILL between the two
// would leave it). The rerun resolves under the existing reply: it neither
// re-applies the fix nor escalates, and writes no second reply.
func TestREL2_CrashBetweenReplyAndResolve(t *testing.T) {
	t.Parallel() // each test has its own emulator and state
	hub, demo := startHub(t, 50*time.Millisecond)
	// A refusal, not an outage: the run cannot ride it out, so it stops
	// with the reply on the forge and the resolve not, as a SIGKILL
	// between the two would leave it.
	hub.InjectGraphQLFault("resolveReviewThread", 422, 1)
	state := t.TempDir()
	code, out := runBin(t, authorEnv(hub), prArgs(hub, demo, state)...)
	if code == 0 {
		t.Fatalf("the first run survived the failed resolve; the case is not exercised:\n%s", out)
	}
	code, out2 := runBin(t, authorEnv(hub), prArgs(hub, demo, state)...)
	if code != 0 {
		t.Fatalf("rerun exit %d\nfirst run:\n%s\nrerun:\n%s", code, out, out2)
	}
	pr := observe(t, hub, demo.PRURL)
	assertProven(t, pr, false, "")
	for _, th := range pr.Threads {
		rs := convergeReplies(th)
		if len(rs) != 1 || !strings.Contains(rs[0], "disposition=addressed") {
			t.Errorf("thread %s: want one addressed reply, got %d:\n%v", th.ID, len(rs), rs)
		}
	}
}

// TestPR_S9_ReopenedOutdatedSuggestionIsNeverWrittenBlind is case 8: a
// human reopens a thread that became outdated after the loop's own fix.
// Its suggestion no longer matches the code: it is handed off, the file is
// untouched, and nothing says "addressed".
func TestPR_S9_ReopenedOutdatedSuggestionIsNeverWrittenBlind(t *testing.T) {
	t.Parallel() // each test has its own emulator and state
	hub, demo := startHub(t, 50*time.Millisecond)
	state := t.TempDir()
	if code, out := runBin(t, authorEnv(hub), prArgs(hub, demo, state)...); code != 0 {
		t.Fatalf("first run exit %d:\n%s", code, out)
	}
	before := fileAtHead(t, hub, demo, "summary.go")
	pr := observe(t, hub, demo.PRURL)
	var reopened string
	for _, th := range pr.Threads {
		if strings.Contains(th.Comments[0].Body, "divides by zero") {
			reopened = th.ID
		}
	}
	if reopened == "" {
		t.Fatal("the Mean thread is missing")
	}
	if err := hubtest.Client(t, hub, hub.Tokens().Reviewer).UnresolveThread(context.Background(), pr.Ref, reopened); err != nil {
		t.Fatal(err)
	}
	code, out := runBin(t, authorEnv(hub), prArgs(hub, demo, state)...)
	if code == 0 {
		t.Fatalf("two-stable with a reopened thread whose suggestion no longer applies:\n%s", out)
	}
	if after := fileAtHead(t, hub, demo, "summary.go"); after != before {
		t.Fatalf("summary.go changed:\n--- before\n%s\n--- after\n%s", before, after)
	}
	pr = observe(t, hub, demo.PRURL)
	assertNotReady(t, pr)
	for _, th := range pr.Threads {
		if th.ID != reopened {
			continue
		}
		rs := convergeReplies(th)
		last := rs[len(rs)-1]
		if len(rs) != 2 || !strings.Contains(last, "disposition=escalated") || th.IsResolved {
			t.Errorf("want one new escalation on the reopened thread, open; got %d replies:\n%v", len(rs), rs)
		}
	}
}
