package cli

import (
	"context"
	"fmt"
	"os"
	"slices"
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
	"github.com/convergeloop/converge/internal/text"
)

// The `hub` command of the txtar scenarios: it starts the GitHub emulator
// for the script, plays the other actors with their own tokens, and checks
// outcomes at the forge, as gh's acceptance tests drive a real host.
//
//	hub start [copilot-delay] [no-ci]  emulator + demo PR (no-ci: no CI runner); sets PR_URL, GITHUB_API_URL,
//	                              SSL_CERT_FILE and CONVERGE_TOKEN (the author)
//	hub request-changes BODY      the reviewer requests changes
//	hub comment BODY              the reviewer comments on the PR
//	hub comment-as ACTOR BODY     reviewer or outsider (read only) comments on the PR
//	hub review-thread PATH LINE BODY   the reviewer opens a review thread on a line (@FILE: the body
//	                              is the script's FILE)
//	hub thread-as ACTOR PATH LINE BODY the author, reviewer or outsider opens a review thread
//	hub threads open|outdated-open|resolved N   the forge shows exactly N such threads
//	hub thread-answered SUBSTR WORD    the thread whose first comment holds SUBSTR is
//	                              resolved, and converge's last reply in it holds WORD
//	hub thread-replied SUBSTR WORD     converge's last reply in that thread holds WORD, resolved or not
//	hub thread-replies SUBSTR N   converge replied exactly N times in that thread
//	hub merge-state STATE         the forge shows the PR's merge state as STATE (BEHIND, CLEAN, DIRTY, …)
//	hub head-merges-base          the head is converge's merge of the base: two parents, the base's
//	                              tip second, the round trailer, and no rewrite of the branch
//	hub copilot-round N OPT…      Copilot's Nth review from now on (1-based; past the demo's three,
//	                              a clean one): none (no findings), error (its "encountered an
//	                              error" body), delay=D
//	hub verdict LABEL STATE       the PR carries LABEL and converge's verdict on the head is STATE
//	                              (success, failure, error)
//	hub pr-comment WORD…          a top-level comment by converge holds every WORD
//	hub mark-writes               remember how many writes the emulator logged so far
//	hub writes-since-mark ACTOR N exactly N writes by ACTOR since hub mark-writes
//	hub push base|head PATH FILE  the author pushes FILE (from the script) as PATH
//	                              to the PR's base or head branch
//	hub writes-by ACTOR N         the emulator logged exactly N write requests
//	                              (mutations, REST writes, pushes) by ACTOR
//	                              (author: converge's token, or reviewer)
//	hub refuse-copilot            Copilot is not enabled on the repository
//	hub require-up-to-date        branch protection requires branches to be up to date
//	                              before merging: only then does GitHub say BEHIND
//	hub copilot-bodies B1 B2 …    Copilot's reviews after the demo's two rounds of findings
//	hub await KIND                wait for an emulator event (push, copilot_started, …)
//	hub human-push                the author pushes a commit without converge's trailer
//	hub close                     the author closes the PR
//	hub head-unchanged            the PR's head is still the one it started with
//	hub head-has PATH SUBSTR      the file PATH at the PR's head holds SUBSTR (! : it does not)
//	hub proven [no-ci]            the forge proves two-stable (fails with why otherwise);
//	                              no-ci: a repository without CI
//	! hub proven                  the forge does not show a ready PR
var scriptHubs sync.Map // *testscript.TestScript → *scriptHub

// hubCmds are hub subcommands kept in files of their own
// (script_hub_*_test.go), each registering itself in an init func, so
// that scenarios of different topics do not all grow one switch.
var hubCmds = map[string]func(ts *testscript.TestScript, neg bool, h *scriptHub, args []string){}

type scriptHub struct {
	hub  *fakehub.Hub
	demo fakehub.DemoInfo

	head string // the PR's head when the hub started

	mark   int // the write log's length at hub mark-writes
	clones int // clones hub head-has made, each in its own directory
	// script is Copilot's script on the demo PR as hub copilot-round
	// changes it (nil: the demo's).
	script *fakehub.CopilotScript
	// app is the GitHub App hub app registered (script_hub_app_test.go).
	app *fakehub.App

	mu   sync.Mutex
	seen map[string]int // event kinds seen since start
	woke chan struct{}  // closed and replaced on every event
}

// await blocks until an event of kind has been seen, or fails the script.
func (h *scriptHub) await(ts *testscript.TestScript, kind string) {
	deadline := time.After(60 * time.Second)
	for {
		h.mu.Lock()
		n, woke := h.seen[kind], h.woke
		h.mu.Unlock()
		if n > 0 {
			return
		}
		select {
		case <-woke:
		case <-deadline:
			ts.Fatalf("hub await %s: no such event within 60s", kind)
		}
	}
}

func cmdHub(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) == 0 {
		ts.Fatalf("usage: hub start|request-changes|comment|refuse-copilot|copilot-bodies|proven")
	}
	if args[0] == "start" {
		startScriptHub(ts, args[1:])
		return
	}
	v, ok := scriptHubs.Load(ts)
	if !ok {
		ts.Fatalf("hub %s: no hub started", args[0])
	}
	h := v.(*scriptHub)
	if extra, ok := hubCmds[args[0]]; ok {
		extra(ts, neg, h, args[1:])
		return
	}
	ctx := context.Background()
	rev := func() *github.Client {
		c, err := ghREST(h.hub, h.hub.Tokens().Reviewer)
		ts.Check(err)
		return c
	}
	switch args[0] {
	case "request-changes":
		h.requestChanges(ts, strings.Join(args[1:], " "))
	case "review-thread":
		if len(args) < 4 {
			ts.Fatalf("usage: hub review-thread PATH LINE BODY")
		}
		line, err := strconv.Atoi(args[2])
		ts.Check(err)
		body := strings.Join(args[3:], " ")
		if f, ok := strings.CutPrefix(body, "@"); ok && len(args) == 4 {
			body = ts.ReadFile(f)
		}
		h.threadAs(ts, h.hub.Tokens().Reviewer, args[1], line, body)
	case "thread-as":
		tok := h.token(args[1])
		if len(args) < 5 || tok == "" {
			ts.Fatalf("usage: hub thread-as author|reviewer|outsider PATH LINE BODY")
		}
		line, err := strconv.Atoi(args[3])
		ts.Check(err)
		h.threadAs(ts, tok, args[2], line, strings.Join(args[4:], " "))
	case "threads":
		if len(args) != 3 {
			ts.Fatalf("usage: hub threads open|outdated-open|resolved N")
		}
		checkThreads(ts, h, args[1], args[2])
	case "thread-answered":
		if len(args) != 3 {
			ts.Fatalf("usage: hub thread-answered SUBSTR WORD")
		}
		threadAnswered(ts, h, args[1], args[2], true)
	case "thread-replied":
		if len(args) != 3 {
			ts.Fatalf("usage: hub thread-replied SUBSTR WORD")
		}
		threadAnswered(ts, h, args[1], args[2], false)
	case "thread-replies":
		if len(args) != 3 {
			ts.Fatalf("usage: hub thread-replies SUBSTR N")
		}
		want, err := strconv.Atoi(args[2])
		ts.Check(err)
		if got := repliesIn(ts, h, args[1]); got != want {
			ts.Fatalf("converge replied %d time(s) in the thread %q, want %d", got, args[1], want)
		}
	case "merge-state":
		if len(args) != 2 {
			ts.Fatalf("usage: hub merge-state STATE")
		}
		checkMergeState(ts, h, args[1])
	case "head-merges-base":
		why := h.headMergesBase(ts)
		switch {
		case neg && why == "":
			ts.Fatalf("the head is converge's merge of the base, want it not to be")
		case !neg && why != "":
			ts.Fatalf("the head is not converge's merge of the base: %s", why)
		}
		return
	case "copilot-round":
		if len(args) < 3 {
			ts.Fatalf("usage: hub copilot-round N error|delay=D …")
		}
		n, err := strconv.Atoi(args[1])
		ts.Check(err)
		h.copilotRound(ts, n, args[2:])
	case "verdict":
		if len(args) != 3 {
			ts.Fatalf("usage: hub verdict LABEL STATE")
		}
		checkVerdict(ts, h, args[1], args[2])
	case "pr-comment":
		if len(args) < 2 {
			ts.Fatalf("usage: hub pr-comment WORD…")
		}
		found := false
		var seen []string
		for _, ic := range h.observe(ts).IssueComments {
			seen = append(seen, ic.Author+": "+text.Clip(text.OneLine(ic.Body), 300))
			if !strings.EqualFold(ic.Author, fakehub.LoginAuthor) {
				continue
			}
			all := true
			for _, w := range args[1:] {
				all = all && strings.Contains(ic.Body, w)
			}
			found = found || all
		}
		if !found {
			ts.Fatalf("no comment by converge holds %q; the PR's comments:\n%s", args[1:], strings.Join(seen, "\n"))
		}
	case "mark-writes":
		h.mark = len(h.hub.Writes())
	case "writes-since-mark":
		if len(args) != 3 {
			ts.Fatalf("usage: hub writes-since-mark author|reviewer N")
		}
		login := map[string]string{"author": fakehub.LoginAuthor, "reviewer": fakehub.LoginReviewer}[args[1]]
		want, err := strconv.Atoi(args[2])
		ts.Check(err)
		var got []fakehub.Write
		for _, w := range h.hub.Writes()[h.mark:] {
			if strings.EqualFold(w.Actor, login) {
				got = append(got, w)
			}
		}
		if len(got) != want {
			ts.Fatalf("want %d write(s) by %s since the mark, the emulator logged %d: %+v", want, login, len(got), got)
		}
	case "push":
		if len(args) != 4 || (args[1] != "base" && args[1] != "head") {
			ts.Fatalf("usage: hub push base|head PATH FILE")
		}
		h.push(ts, args[1], map[string]string{args[2]: ts.ReadFile(args[3])}, "chore: "+args[2])
	case "require-up-to-date":
		ts.Check(h.hub.SetRequireUpToDate(h.demo.Owner, h.demo.Repo, true))
	case "writes-by":
		if len(args) != 3 {
			ts.Fatalf("usage: hub writes-by author|reviewer N")
		}
		want, err := strconv.Atoi(args[2])
		ts.Check(err)
		if got := h.writesBy(args[1]); len(got) != want {
			ts.Fatalf("want %d write(s) by %s, the emulator logged %d: %+v", want, args[1], len(got), got)
		}
	case "comment-as":
		tok := ""
		if len(args) > 1 && args[1] != "author" {
			tok = h.token(args[1])
		}
		if len(args) < 3 || tok == "" {
			ts.Fatalf("usage: hub comment-as reviewer|outsider BODY")
		}
		c, err := ghREST(h.hub, tok)
		ts.Check(err)
		_, _, err = c.Issues.CreateComment(ctx, h.demo.Owner, h.demo.Repo, h.demo.Number, github.IssueCommentRequest{Body: strings.Join(args[2:], " ")})
		ts.Check(err)
	case "comment":
		_, _, err := rev().Issues.CreateComment(ctx, h.demo.Owner, h.demo.Repo, h.demo.Number, github.IssueCommentRequest{Body: strings.Join(args[1:], " ")})
		ts.Check(err)
	case "refuse-copilot":
		ts.Check(h.hub.SetCopilotAvailable(h.demo.Owner, h.demo.Repo, false))
	case "copilot-bodies":
		s := fakehub.DemoScript()
		s.Rounds = s.Rounds[:2:2]
		for _, b := range args[1:] {
			s.Rounds = append(s.Rounds, fakehub.CopilotRound{Body: fakehub.Text(b)})
		}
		ts.Check(h.hub.SetCopilotScript(h.demo.Owner, h.demo.Repo, h.demo.Number, s))
	case "await":
		if len(args) != 2 {
			ts.Fatalf("usage: hub await KIND")
		}
		h.await(ts, args[1])
	case "human-push":
		h.humanPush(ts)
	case "close":
		h.closePR(ts)
	case "head-unchanged":
		checkHeadUnchanged(ts, h)
	case "head-has":
		if len(args) != 3 {
			ts.Fatalf("usage: hub head-has PATH SUBSTR")
		}
		checkHeadHas(ts, neg, h, args[1], args[2])
		return
	case "proven":
		checkProven(ts, neg, h, len(args) > 1 && args[1] == "no-ci")
		return
	default:
		ts.Fatalf("hub: unknown subcommand %q", args[0])
	}
	if neg {
		ts.Fatalf("hub %s cannot be negated", args[0])
	}
}

func startScriptHub(ts *testscript.TestScript, args []string) {
	delay := 100 * time.Millisecond
	var opts fakehub.DemoOptions
	for _, a := range args {
		if a == "no-ci" {
			opts.NoCI = true
			continue
		}
		d, err := time.ParseDuration(a)
		ts.Check(err)
		delay = d
	}
	hub, err := fakehub.New(fakehub.Options{StateDir: ts.MkAbs("hub"), CopilotDelay: delay})
	ts.Check(err)
	ctx, cancel := context.WithCancel(context.Background())
	ts.Check(hub.Start(ctx))
	ts.Defer(func() {
		cancel()
		hub.Close()
		scriptHubs.Delete(ts)
	})
	demo, err := fakehub.SeedDemoWith(ctx, hub, opts)
	ts.Check(err)
	start, err := hub.PR(demo.Owner, demo.Repo, demo.Number)
	ts.Check(err)
	sh := &scriptHub{hub: hub, demo: demo, head: start.HeadSHA, seen: map[string]int{}, woke: make(chan struct{})}
	events, unsubscribe := hub.Subscribe()
	ts.Defer(unsubscribe)
	go func() {
		for e := range events {
			sh.mu.Lock()
			sh.seen[e.Kind]++
			close(sh.woke)
			sh.woke = make(chan struct{})
			sh.mu.Unlock()
		}
	}()
	scriptHubs.Store(ts, sh)
	// The API, its CA and the token reach converge the way a user's shell
	// would give them (IF-2, IF-3); the state goes under XDG_STATE_HOME.
	ts.Setenv("PR_URL", demo.PRURL)
	ts.Setenv("GITHUB_API_URL", hub.APIURL())
	ts.Setenv("SSL_CERT_FILE", hub.CAFile())
	ts.Setenv("CONVERGE_TOKEN", hub.Tokens().Author)
}

func (h *scriptHub) observe(ts *testscript.TestScript) *forge.PullRequest {
	c, err := ghclient.New(ghclient.Options{APIURL: h.hub.APIURL(), GraphQLURL: h.hub.GraphQLURL(), Token: h.hub.Tokens().Reviewer, CAFile: h.hub.CAFile()})
	ts.Check(err)
	ref, err := forge.ParsePRURL(h.demo.PRURL)
	ts.Check(err)
	pr, err := c.Observe(context.Background(), ref)
	ts.Check(err)
	return pr
}

// headFile is path as the PR's head holds it, read from a fresh clone
// with the reviewer's token: what anyone fetching the branch sees.
func headFile(ts *testscript.TestScript, r forgeReader, path string) string {
	g, head := r.cloneAtHead(ts)
	out, err := g.Run(context.Background(), "show", head+":"+path)
	ts.Check(err)
	return out
}

// cloneAtHead makes a fresh clone of the demo repository with the
// reviewer's token, every branch fetched, and returns it with the PR's
// head as the forge shows it now.
func (h *scriptHub) cloneAtHead(ts *testscript.TestScript) (*repo.Git, string) {
	ctx := context.Background()
	pr, err := h.hub.PR(h.demo.Owner, h.demo.Repo, h.demo.Number)
	ts.Check(err)
	h.clones++
	env := append(os.Environ(), h.hub.GitEnv(h.hub.Tokens().Reviewer)...)
	g, err := repo.Clone(ctx, h.hub.GitURL(h.demo.Owner, h.demo.Repo), ts.MkAbs(fmt.Sprintf("hub-clone-%d", h.clones)), env)
	ts.Check(err)
	return g, pr.HeadSHA
}

// token is the emulator token of a script actor ("" for an unknown one).
func (h *scriptHub) token(actor string) string {
	t := h.hub.Tokens()
	return map[string]string{"author": t.Author, "reviewer": t.Reviewer, "outsider": t.Outsider}[actor]
}

// threadAnswered checks at the forge that converge (the author's token)
// replied with word in the thread whose first comment holds substr and,
// when resolved is set, that the thread is resolved, after a reply.
func threadAnswered(ts *testscript.TestScript, r forgeReader, substr, word string, resolved bool) {
	for _, th := range r.observe(ts).Threads {
		if len(th.Comments) == 0 || !strings.Contains(th.Comments[0].Body, substr) {
			continue
		}
		if resolved && !th.IsResolved {
			ts.Fatalf("thread %s (%q) is not resolved", th.ID, substr)
		}
		for i := len(th.Comments) - 1; i > 0; i-- {
			c := th.Comments[i]
			if strings.EqualFold(c.Author, r.authorLogin()) && strings.Contains(c.Body, "converge:reply") {
				if !strings.Contains(c.Body, word) {
					ts.Fatalf("converge's reply in %s does not say %q: %q", th.ID, word, c.Body)
				}
				r.replyBeforeResolve(ts)
				return
			}
		}
		ts.Fatalf("thread %s (%q) was resolved without converge's reply", th.ID, substr)
	}
	ts.Fatalf("no thread starts with %q", substr)
}

// replies counts converge's replies (the author's token, with its marker)
// in the thread whose first comment holds substr.
func repliesIn(ts *testscript.TestScript, r forgeReader, substr string) int {
	for _, th := range r.observe(ts).Threads {
		if len(th.Comments) == 0 || !strings.Contains(th.Comments[0].Body, substr) {
			continue
		}
		n := 0
		for _, c := range th.Comments[1:] {
			if strings.EqualFold(c.Author, r.authorLogin()) && strings.Contains(c.Body, "converge:reply") {
				n++
			}
		}
		return n
	}
	ts.Fatalf("no thread starts with %q", substr)
	return 0
}

// replyBeforeResolve: in the write log, no resolve by converge comes
// before its first reply (never resolved without a reply, PR-S12).
func (h *scriptHub) replyBeforeResolve(ts *testscript.TestScript) {
	replied := false
	for _, w := range h.hub.Writes() {
		if !strings.EqualFold(w.Actor, fakehub.LoginAuthor) {
			continue
		}
		switch {
		case strings.Contains(w.What, "addPullRequestReviewThreadReply"):
			replied = true
		case strings.Contains(w.What, "resolveReviewThread") && !strings.Contains(w.What, "unresolve") && !replied:
			ts.Fatalf("converge resolved a thread before any reply: %+v", h.hub.Writes())
		}
	}
}

// headMergesBase says why the PR's head is not converge's merge of its
// base (PR-S14), or "" when it is: a merge commit whose first parent is
// the previous head (no rewrite), whose second is the base's tip, and
// whose message carries the round trailer.
func (h *scriptHub) headMergesBase(ts *testscript.TestScript) string {
	pr := h.observe(ts)
	var head *forge.Commit
	for i := range pr.Commits {
		if pr.Commits[i].SHA == pr.HeadSHA {
			head = &pr.Commits[i]
		}
	}
	switch {
	case head == nil:
		return "the head " + pr.HeadSHA + " is not in the PR's commits"
	case len(head.Parents) != 2:
		return fmt.Sprintf("the head has %d parent(s)", len(head.Parents))
	case head.Parents[1] != pr.BaseSHA:
		return fmt.Sprintf("the head's second parent %s is not the base's tip %s", head.Parents[1], pr.BaseSHA)
	case !repo.HasTrailer(head.Message, "Converge-Round"):
		return "the merge commit has no Converge-Round trailer: " + head.Message
	}
	for _, c := range pr.Commits {
		if c.SHA == head.Parents[0] {
			return ""
		}
	}
	return "the head's first parent is not a commit of the branch"
}

// forgeReader is what the scenario checks read of a forge: the PR as the
// reviewer's token observes it through converge's own backend, a fresh
// clone, and who converge is there. scriptHub is one; the scenario table's
// forges (script_forge_test.go) are too, so one check serves `hub` and
// `forge` alike.
type forgeReader interface {
	observe(ts *testscript.TestScript) *forge.PullRequest
	// cloneAtHead is a fresh clone with every branch fetched, and the PR's
	// head as the forge shows it now.
	cloneAtHead(ts *testscript.TestScript) (*repo.Git, string)
	// startHead is the PR's head when the run under test began.
	startHead() string
	// authorLogin is the login converge writes as.
	authorLogin() string
	// replyBeforeResolve fails the script when the forge's write log shows
	// converge resolving a thread before its first reply (PR-S12).
	replyBeforeResolve(ts *testscript.TestScript)
}

func (h *scriptHub) startHead() string   { return h.head }
func (h *scriptHub) authorLogin() string { return fakehub.LoginAuthor }

// requestChanges: the reviewer requests changes with body.
func (h *scriptHub) requestChanges(ts *testscript.TestScript, body string) {
	c, err := ghREST(h.hub, h.hub.Tokens().Reviewer)
	ts.Check(err)
	_, _, err = c.PullRequests.CreateReview(context.Background(), h.demo.Owner, h.demo.Repo, h.demo.Number, &github.PullRequestReviewRequest{
		Event: new("REQUEST_CHANGES"), Body: new(body),
	})
	ts.Check(err)
}

// threadAs: the holder of tok opens a review thread on line of path.
func (h *scriptHub) threadAs(ts *testscript.TestScript, tok, path string, line int, body string) {
	c, err := ghREST(h.hub, tok)
	ts.Check(err)
	_, _, err = c.PullRequests.CreateReview(context.Background(), h.demo.Owner, h.demo.Repo, h.demo.Number, &github.PullRequestReviewRequest{
		Event: new("COMMENT"),
		Comments: []*github.DraftReviewComment{{
			Path: new(path), Line: new(line), Side: new("RIGHT"), Body: new(body),
		}},
	})
	ts.Check(err)
}

// copilotRound sets Copilot's nth review from now on (1-based) by opts:
// none, error, delay=D.
func (h *scriptHub) copilotRound(ts *testscript.TestScript, n int, opts []string) {
	if h.script == nil {
		sc := fakehub.DemoScript()
		h.script = &sc
	}
	for len(h.script.Rounds) < n {
		h.script.Rounds = append(h.script.Rounds, fakehub.CopilotRound{})
	}
	r := &h.script.Rounds[n-1]
	for _, o := range opts {
		switch k, v, _ := strings.Cut(o, "="); k {
		case "error":
			r.Error = true
		case "none":
			r.Findings = nil
		case "delay":
			d, err := time.ParseDuration(v)
			ts.Check(err)
			r.Delay = d
		default:
			ts.Fatalf("copilot round: unknown option %q", o)
		}
	}
	ts.Check(h.hub.SetCopilotScript(h.demo.Owner, h.demo.Repo, h.demo.Number, *h.script))
}

// push: the author pushes files to the PR's base or head branch; a run
// starts on a head pushed so, which is then no human push mid-run.
func (h *scriptHub) push(ts *testscript.TestScript, which string, files map[string]string, msg string) {
	pr, err := h.hub.PR(h.demo.Owner, h.demo.Repo, h.demo.Number)
	ts.Check(err)
	branch := pr.BaseRef
	if which == "head" {
		branch = pr.HeadRef
	}
	_, err = h.hub.PushFiles(h.demo.Owner, h.demo.Repo, branch, files, msg)
	ts.Check(err)
	if which == "head" {
		pr, err = h.hub.PR(h.demo.Owner, h.demo.Repo, h.demo.Number)
		ts.Check(err)
		h.head = pr.HeadSHA
	}
}

// humanPush: the author pushes a commit without converge's trailer.
func (h *scriptHub) humanPush(ts *testscript.TestScript) {
	pr, err := h.hub.PR(h.demo.Owner, h.demo.Repo, h.demo.Number)
	ts.Check(err)
	_, err = h.hub.PushFiles(h.demo.Owner, h.demo.Repo, pr.HeadRef, map[string]string{"NOTES.md": "human notes\n"}, "docs: add notes")
	ts.Check(err)
}

// closePR: the author closes the PR.
func (h *scriptHub) closePR(ts *testscript.TestScript) {
	c, err := ghREST(h.hub, h.hub.Tokens().Author)
	ts.Check(err)
	_, _, err = c.PullRequests.Edit(context.Background(), h.demo.Owner, h.demo.Repo, h.demo.Number, &github.PullRequest{State: new("closed")})
	ts.Check(err)
}

// writesBy is the emulator's log of write requests (mutations, REST
// writes, pushes) by actor: author (converge's token) or reviewer.
func (h *scriptHub) writesBy(actor string) []fakehub.Write {
	login := map[string]string{"author": fakehub.LoginAuthor, "reviewer": fakehub.LoginReviewer}[actor]
	var got []fakehub.Write
	for _, w := range h.hub.Writes() {
		if strings.EqualFold(w.Actor, login) {
			got = append(got, w)
		}
	}
	return got
}

// checkThreads: the forge shows exactly n threads of kind (open,
// outdated-open, resolved).
func checkThreads(ts *testscript.TestScript, r forgeReader, kind, n string) {
	want, err := strconv.Atoi(n)
	ts.Check(err)
	got := 0
	for _, th := range r.observe(ts).Threads {
		switch {
		case kind == "open" && !th.IsResolved,
			kind == "outdated-open" && !th.IsResolved && th.IsOutdated,
			kind == "resolved" && th.IsResolved:
			got++
		}
	}
	if got != want {
		ts.Fatalf("the forge shows %d %s thread(s), want %d", got, kind, want)
	}
}

// checkMergeState reads the merge state as the forge computes it: GitHub
// answers UNKNOWN until its background job has run after a push, and a
// later read finds it computed (fakehub's
// TestREL_4_MergeabilityIsComputedLazily), so UNKNOWN is read again.
// want may list states as A|B: any of them (GitHub says UNSTABLE for a
// PR that would be CLEAN but for a check still running).
func checkMergeState(ts *testscript.TestScript, r forgeReader, want string) {
	wants := strings.Split(want, "|")
	got := r.observe(ts).MergeState
	for i := 0; i < 5 && got == forge.MergeUnknown && !slices.Contains(wants, string(forge.MergeUnknown)); i++ {
		got = r.observe(ts).MergeState
	}
	if !slices.Contains(wants, string(got)) {
		ts.Fatalf("merge state %s, want %s", got, want)
	}
}

// checkVerdict: the PR carries label and converge's verdict on the head
// is state (success, failure, error).
func checkVerdict(ts *testscript.TestScript, r forgeReader, label, state string) {
	pr := r.observe(ts)
	if !slices.Contains(pr.Labels, label) {
		ts.Fatalf("the PR lacks label %s: %v", label, pr.Labels)
	}
	got := ""
	for _, cx := range pr.Checks.Contexts {
		if cx.Name == "converge" {
			got = strings.ToLower(string(cx.Conclusion))
		}
	}
	if got != state {
		ts.Fatalf("converge's verdict on the head is %q, want %q", got, state)
	}
}

func checkHeadUnchanged(ts *testscript.TestScript, r forgeReader) {
	if head := r.observe(ts).HeadSHA; head != r.startHead() {
		ts.Fatalf("the head moved: %s → %s", r.startHead(), head)
	}
}

// checkHeadHas: path at the PR's head holds substr (neg: it does not).
func checkHeadHas(ts *testscript.TestScript, neg bool, r forgeReader, path, substr string) {
	has := strings.Contains(headFile(ts, r, path), substr)
	switch {
	case neg && has:
		ts.Fatalf("%s at the head holds %q, want it not to", path, substr)
	case !neg && !has:
		ts.Fatalf("%s at the head does not hold %q", path, substr)
	}
}

// forgeProver is a forge whose proof of two-stable is not GitHub's
// (forgeVerdict): its review bot leaves other marks.
type forgeProver interface {
	verdict(pr *forge.PullRequest, localOK bool) string
}

// checkProven: the forge proves two-stable (neg: it does not); noCI, a
// repository without CI, forgives only the missing CI.
func checkProven(ts *testscript.TestScript, neg bool, r forgeReader, noCI bool) {
	verdict := forgeVerdict
	if p, ok := r.(forgeProver); ok {
		verdict = p.verdict
	}
	why := verdict(r.observe(ts), true)
	if noCI {
		why = strings.ReplaceAll(strings.ReplaceAll(why, "; no CI on the head", ""), "no CI on the head", "")
	}
	switch {
	case neg && why == "":
		ts.Fatalf("the forge proves two-stable, want it not to")
	case !neg && why != "":
		ts.Fatalf("the forge does not prove two-stable: %s", why)
	}
}
