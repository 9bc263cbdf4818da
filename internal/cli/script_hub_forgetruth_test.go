package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/go-github/v93/github"
	"github.com/rogpeppe/go-internal/testscript"

	"github.com/convergeloop/converge/internal/emulator/fakehub"
	"github.com/convergeloop/converge/internal/forge"
	ghclient "github.com/convergeloop/converge/internal/forge/github"
	"github.com/convergeloop/converge/internal/repo"
)

// Hub subcommands for what the forge says beyond its threads: the head
// ref's timeline (PR-T1(4)), replies inside resolved threads (PR-V6) and
// red CI (PR-V5). Each actor acts with its own token, on the wire.
//
//	hub push-and-force-back ACTOR      ACTOR clones the repository, pushes a commit on the PR's
//	                                   head branch, then force-pushes the branch back to the
//	                                   head before it (git push --force)
//	hub force-pushes N                 the PR's timeline shows exactly N force-pushes
//	hub ci-settled                     wait until the CI run on the head has finished
//	hub reviewed-after-force-push      Copilot's latest review is of the head and was
//	                                   submitted after the last force-push
//	hub reply-in-thread ACTOR SUBSTR BODY   ACTOR replies in the thread whose first comment
//	                                   holds SUBSTR (resolved or not; it stays as it is)
//	hub thread-open SUBSTR             that thread is not resolved (! : it is)
//	hub resolve-thread-as ACTOR SUBSTR ACTOR resolves that thread (GraphQL resolveReviewThread)
//	hub last-reply SUBSTR WORD         the thread's last comment is converge's reply, and it
//	                                   holds WORD
//	hub track-requests                 from now on, note the head each Copilot review
//	                                   request was made on
//	hub ci-fails NAME                  from now on the CI app posts a failing check run NAME,
//	                                   with output and an annotation, on the head and on
//	                                   every new head (tracks requests too)
//	hub copilot-requests-per-head MAX  at least one Copilot request was tracked, and at most
//	                                   MAX on any one head
func init() {
	hubCmds["push-and-force-back"] = hubPushAndForceBack
	hubCmds["force-pushes"] = hubForcePushes
	hubCmds["ci-settled"] = func(ts *testscript.TestScript, neg bool, h *scriptHub, args []string) {
		noNeg(ts, neg, "ci-settled")
		pr, err := h.hub.PR(h.demo.Owner, h.demo.Repo, h.demo.Number)
		ts.Check(err)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		concl, err := h.hub.WaitCI(ctx, h.demo.Owner, h.demo.Repo, pr.HeadSHA)
		ts.Check(err)
		ts.Logf("CI on %s: %s", pr.HeadSHA, concl)
	}
	hubCmds["reviewed-after-force-push"] = hubReviewedAfterForcePush
	hubCmds["reply-in-thread"] = hubReplyInThread
	hubCmds["thread-open"] = hubThreadOpen
	hubCmds["resolve-thread-as"] = hubResolveThreadAs
	hubCmds["last-reply"] = hubLastReply
	hubCmds["track-requests"] = func(ts *testscript.TestScript, neg bool, h *scriptHub, args []string) {
		noNeg(ts, neg, "track-requests")
		truthOf(ts, h).track(ts, h, "")
	}
	hubCmds["ci-fails"] = func(ts *testscript.TestScript, neg bool, h *scriptHub, args []string) {
		noNeg(ts, neg, "ci-fails")
		if len(args) != 1 {
			ts.Fatalf("usage: hub ci-fails NAME")
		}
		truthOf(ts, h).track(ts, h, args[0])
	}
	hubCmds["copilot-requests-per-head"] = hubRequestsPerHead
}

func noNeg(ts *testscript.TestScript, neg bool, cmd string) {
	if neg {
		ts.Fatalf("hub %s cannot be negated", cmd)
	}
}

// truth is what the subcommands of this file watch on one hub.
type truth struct {
	mu       sync.Mutex
	tracking bool
	head     string         // the head as the latest push event set it
	requests map[string]int // Copilot review requests per head
	failing  string         // the check run the CI app fails on every head
	posted   map[string]bool
	errs     []string
	// before is Copilot's latest review when the branch was force-pushed
	// back: a review after the push is another one.
	before string
}

var truths sync.Map // *scriptHub → *truth

func truthOf(ts *testscript.TestScript, h *scriptHub) *truth {
	v, _ := truths.LoadOrStore(h, &truth{requests: map[string]int{}, posted: map[string]bool{}})
	ts.Defer(func() { truths.Delete(h) })
	return v.(*truth)
}

// track follows the hub's events: a push sets the head, a request for
// Copilot counts on it, and with a failing check named, each new head
// gets it from the CI app.
func (tr *truth) track(ts *testscript.TestScript, h *scriptHub, failing string) {
	pr, err := h.hub.PR(h.demo.Owner, h.demo.Repo, h.demo.Number)
	ts.Check(err)
	tr.mu.Lock()
	if failing != "" {
		tr.failing = failing
	}
	start := !tr.tracking
	tr.tracking = true
	if start {
		tr.head = pr.HeadSHA
	}
	tr.mu.Unlock()
	if failing != "" {
		tr.fail(h, pr.HeadSHA)
	}
	if !start {
		return
	}
	events, unsubscribe := h.hub.Subscribe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	ts.Defer(func() {
		cancel()
		unsubscribe()
		<-done
	})
	go func() {
		defer close(done)
		for {
			var e fakehub.Event
			select {
			case <-ctx.Done():
				return
			case e = <-events:
			}
			if e.Owner != h.demo.Owner || e.Repo != h.demo.Repo || e.Number != h.demo.Number {
				continue
			}
			switch {
			case e.Kind == "push" && e.SHA != "":
				tr.mu.Lock()
				tr.head = e.SHA
				tr.mu.Unlock()
				tr.fail(h, e.SHA)
			case e.Kind == "review_requested" && strings.EqualFold(e.Detail, fakehub.LoginCopilotShort):
				tr.mu.Lock()
				tr.requests[tr.head]++
				tr.mu.Unlock()
			}
		}
	}()
}

// fail posts the failing check run on sha as the CI app would, once.
func (tr *truth) fail(h *scriptHub, sha string) {
	tr.mu.Lock()
	name := tr.failing
	if name == "" || tr.posted[sha] {
		tr.mu.Unlock()
		return
	}
	tr.posted[sha] = true
	tr.mu.Unlock()
	c, err := ghREST(h.hub, h.hub.Tokens().CI)
	if err == nil {
		_, _, err = c.Checks.CreateCheckRun(context.Background(), h.demo.Owner, h.demo.Repo, github.CreateCheckRunOptions{
			Name: name, HeadSHA: sha, Status: new("completed"), Conclusion: new("failure"),
			Output: &github.CheckRunOutput{
				Title:   new("1 problem"),
				Summary: new("golangci-lint run ./...\nsummary.go:35:1: exported: exported function Describe should have comment or be unexported (revive)"),
				Text:    new("1 issues:\n* revive: 1"),
				Annotations: []*github.CheckRunAnnotation{{
					Path: new("summary.go"), StartLine: new(35), EndLine: new(35), AnnotationLevel: new("failure"),
					Title: new("revive"), Message: new("exported function Describe should have comment or be unexported"),
				}},
			},
		})
	}
	if err != nil {
		tr.mu.Lock()
		tr.errs = append(tr.errs, fmt.Sprintf("check run %s on %s: %v", name, sha, err))
		tr.mu.Unlock()
	}
}

func hubRequestsPerHead(ts *testscript.TestScript, neg bool, h *scriptHub, args []string) {
	noNeg(ts, neg, "copilot-requests-per-head")
	if len(args) != 1 {
		ts.Fatalf("usage: hub copilot-requests-per-head MAX")
	}
	most, err := strconv.Atoi(args[0])
	ts.Check(err)
	v, ok := truths.Load(h)
	if !ok {
		ts.Fatalf("hub copilot-requests-per-head: no hub track-requests or ci-fails before")
	}
	tr := v.(*truth)
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if len(tr.errs) > 0 {
		ts.Fatalf("the CI app failed: %s", strings.Join(tr.errs, "; "))
	}
	total := 0
	for head, n := range tr.requests {
		total += n
		if n > most {
			ts.Fatalf("Copilot was requested %d times on head %s, want at most %d (all: %v)", n, head, most, tr.requests)
		}
	}
	if total == 0 {
		ts.Fatalf("no Copilot review request was tracked")
	}
	ts.Logf("Copilot requests per head: %v", tr.requests)
}

// hubPushAndForceBack is issue 15's case 4 as a human does it: a push on
// top of the head, then `git push --force` of the old head.
func hubPushAndForceBack(ts *testscript.TestScript, neg bool, h *scriptHub, args []string) {
	noNeg(ts, neg, "push-and-force-back")
	if len(args) != 1 || h.token(args[0]) == "" {
		ts.Fatalf("usage: hub push-and-force-back author|reviewer")
	}
	ctx := context.Background()
	_, id, _, _ := latestCopilot(h.observe(ts))
	tr := truthOf(ts, h)
	tr.mu.Lock()
	tr.before = id
	tr.mu.Unlock()
	pr, err := h.hub.PR(h.demo.Owner, h.demo.Repo, h.demo.Number)
	ts.Check(err)
	x, branch := pr.HeadSHA, pr.HeadRef
	h.clones++
	env := append(os.Environ(), h.hub.GitEnv(h.token(args[0]))...)
	dir := ts.MkAbs(fmt.Sprintf("hub-clone-%d", h.clones))
	g, err := repo.Clone(ctx, h.hub.GitURL(h.demo.Owner, h.demo.Repo), dir, env)
	ts.Check(err)
	_, err = g.Run(ctx, "checkout", "-q", "-B", "work", x)
	ts.Check(err)
	ts.Check(os.WriteFile(filepath.Join(dir, "EXPERIMENT.md"), []byte("trying something\n"), 0o644))
	for _, a := range [][]string{{"add", "EXPERIMENT.md"}, {"commit", "-q", "-m", "wip: try something"}, {"push", "-q", "origin", "HEAD:refs/heads/" + branch}} {
		_, err = g.Run(ctx, a...)
		ts.Check(err)
	}
	h.waitHead(ts, func(sha string) bool { return sha != x }, "the pushed commit")
	_, err = g.Run(ctx, "push", "-q", "--force", "origin", x+":refs/heads/"+branch)
	ts.Check(err)
	h.waitHead(ts, func(sha string) bool { return sha == x }, x)
}

// waitHead waits until the hub's head satisfies ok.
func (h *scriptHub) waitHead(ts *testscript.TestScript, ok func(string) bool, what string) {
	deadline := time.Now().Add(30 * time.Second)
	for {
		pr, err := h.hub.PR(h.demo.Owner, h.demo.Repo, h.demo.Number)
		ts.Check(err)
		if ok(pr.HeadSHA) {
			return
		}
		if time.Now().After(deadline) {
			ts.Fatalf("the head is %s, want %s", pr.HeadSHA, what)
		}
		h.await(ts, "push")
		h.mu.Lock()
		h.seen["push"] = 0
		h.mu.Unlock()
	}
}

func hubForcePushes(ts *testscript.TestScript, neg bool, h *scriptHub, args []string) {
	noNeg(ts, neg, "force-pushes")
	if len(args) != 1 {
		ts.Fatalf("usage: hub force-pushes N")
	}
	want, err := strconv.Atoi(args[0])
	ts.Check(err)
	if got := h.observe(ts).ForcePushes; len(got) != want {
		ts.Fatalf("the timeline shows %d force-push(es), want %d: %+v", len(got), want, got)
	}
}

func hubReviewedAfterForcePush(ts *testscript.TestScript, neg bool, h *scriptHub, args []string) {
	tr := truthOf(ts, h)
	tr.mu.Lock()
	before := tr.before
	tr.mu.Unlock()
	why := reviewedAfterForcePush(h.observe(ts), before)
	switch {
	case neg && why == "":
		ts.Fatalf("Copilot's latest review is of the head and after the last force-push, want it not to be")
	case !neg && why != "":
		ts.Fatalf("%s", why)
	}
}

// reviewedAfterForcePush says why Copilot's latest review is not a review
// of the head submitted after the last force-push ("" when it is): it
// must be another review than before, the latest when the branch was
// force-pushed, and not older than the push (the forge's clock has
// one-second steps, so a review in the push's second is not older).
func reviewedAfterForcePush(pr *forge.PullRequest, before string) string {
	fp := pr.LastForcePush()
	if fp.IsZero() {
		return "no force-push on the timeline"
	}
	at, id, commit, ok := latestCopilot(pr)
	switch {
	case !ok:
		return "no Copilot review"
	case id == before:
		return fmt.Sprintf("Copilot's latest review %s is the one from before the force-push", id)
	case commit != pr.HeadSHA:
		return fmt.Sprintf("Copilot's latest review %s is of %s, not the head %s", id, commit, pr.HeadSHA)
	case at.Before(fp):
		return fmt.Sprintf("Copilot's latest review %s was submitted at %s, before the force-push at %s", id, at, fp)
	}
	return ""
}

// latestCopilot is Copilot's latest review on the PR.
func latestCopilot(pr *forge.PullRequest) (at time.Time, id, commit string, ok bool) {
	for _, r := range pr.Reviews {
		if strings.EqualFold(r.Author, fakehub.LoginCopilot) && !r.SubmittedAt.Before(at) {
			at, id, commit, ok = r.SubmittedAt, r.ID, r.CommitSHA, true
		}
	}
	return at, id, commit, ok
}

// hubReplyInThread answers in a thread with ACTOR's token over REST
// (in_reply_to), as a reviewer does in GitHub's UI; a resolved thread
// stays resolved.
func hubReplyInThread(ts *testscript.TestScript, neg bool, h *scriptHub, args []string) {
	noNeg(ts, neg, "reply-in-thread")
	if len(args) < 3 || h.token(args[0]) == "" {
		ts.Fatalf("usage: hub reply-in-thread author|reviewer|outsider SUBSTR BODY")
	}
	th := threadWith(ts, h, args[1])
	c, err := ghREST(h.hub, h.token(args[0]))
	ts.Check(err)
	_, _, err = c.PullRequests.CreateCommentInReplyTo(context.Background(), h.demo.Owner, h.demo.Repo, h.demo.Number,
		strings.Join(args[2:], " "), th.Comments[0].DatabaseID)
	ts.Check(err)
}

func hubThreadOpen(ts *testscript.TestScript, neg bool, h *scriptHub, args []string) {
	if len(args) != 1 {
		ts.Fatalf("usage: hub thread-open SUBSTR")
	}
	checkThreadOpen(ts, neg, h, args[0])
}

// checkThreadOpen: the thread whose first comment holds substr is not
// resolved (neg: it is).
func checkThreadOpen(ts *testscript.TestScript, neg bool, r forgeReader, substr string) {
	th := threadWith(ts, r, substr)
	switch {
	case neg && !th.IsResolved:
		ts.Fatalf("thread %s (%q) is open, want it resolved", th.ID, substr)
	case !neg && th.IsResolved:
		ts.Fatalf("thread %s (%q) is resolved, want it open", th.ID, substr)
	}
}

func hubResolveThreadAs(ts *testscript.TestScript, neg bool, h *scriptHub, args []string) {
	noNeg(ts, neg, "resolve-thread-as")
	if len(args) != 2 || h.token(args[0]) == "" {
		ts.Fatalf("usage: hub resolve-thread-as author|reviewer SUBSTR")
	}
	th := threadWith(ts, h, args[1])
	c, err := ghclient.New(ghclient.Options{APIURL: h.hub.APIURL(), GraphQLURL: h.hub.GraphQLURL(), Token: h.token(args[0]), CAFile: h.hub.CAFile()})
	ts.Check(err)
	ref, err := forge.ParsePRURL(h.demo.PRURL)
	ts.Check(err)
	ts.Check(c.ResolveThread(context.Background(), ref, th.ID))
}

func hubLastReply(ts *testscript.TestScript, neg bool, h *scriptHub, args []string) {
	noNeg(ts, neg, "last-reply")
	if len(args) != 2 {
		ts.Fatalf("usage: hub last-reply SUBSTR WORD")
	}
	checkLastReply(ts, h, args[0], args[1])
}

// checkLastReply: the last comment of the thread whose first comment
// holds substr is converge's reply, and it holds word.
func checkLastReply(ts *testscript.TestScript, r forgeReader, substr, word string) {
	th := threadWith(ts, r, substr)
	last := th.Comments[len(th.Comments)-1]
	if !strings.EqualFold(last.Author, r.authorLogin()) || !strings.Contains(last.Body, "converge:reply") {
		ts.Fatalf("the last comment in %s is by %s, not converge's reply: %q", th.ID, last.Author, last.Body)
	}
	if !strings.Contains(last.Body, word) {
		ts.Fatalf("converge's last reply in %s does not say %q: %q", th.ID, word, last.Body)
	}
}

// threadWith is the thread whose first comment holds substr.
func threadWith(ts *testscript.TestScript, r forgeReader, substr string) (th forge.Thread) {
	for _, t := range r.observe(ts).Threads {
		if len(t.Comments) > 0 && strings.Contains(t.Comments[0].Body, substr) {
			return t
		}
	}
	ts.Fatalf("no thread starts with %q", substr)
	return th
}
