package cli

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
	gitlab "gitlab.com/gitlab-org/api/client-go"

	"github.com/convergeloop/converge/internal/emulator/fakelab"
	"github.com/convergeloop/converge/internal/forge"
	glclient "github.com/convergeloop/converge/internal/forge/gitlab"
	"github.com/convergeloop/converge/internal/repo"
	"github.com/convergeloop/converge/internal/review/duo"
)

// The scenario table's GitLab (issue 21): the GitLab emulator (fakelab)
// seeded with its demo, the same textstats repository and findings as
// GitHub's, with GitLab Duo Code Review in Copilot's part. Its reads go
// through converge's own GitLab backend with the reviewer's token, and a
// fresh git clone; the other actors move on the wire with their own
// tokens through GitLab's official Go client, except where GitLab's API
// has no such move (a "Submit review → Request changes", a push of files
// without a working tree), which the emulator's test API plays.
func init() {
	scriptForges[forge.GitLab] = startScriptLab
}

// labForge is one script's GitLab emulator and its demo merge request.
type labForge struct {
	lab  *fakelab.Lab
	demo fakelab.DemoInfo
	ref  forge.PRRef

	head   string // the MR's head when the run under test began
	clones int    // fresh clones made, each in its own directory
	// script is Duo's script on the demo MR as bot-round changed it (nil:
	// the demo's).
	script *fakelab.DuoScript

	mu   sync.Mutex
	seen map[string]int // event kinds seen since start
	woke chan struct{}  // closed and replaced on every event
}

func startScriptLab(ts *testscript.TestScript, opts forgeStart) scriptForge {
	lab, err := fakelab.New(fakelab.Options{StateDir: ts.MkAbs("lab"), DuoDelay: opts.BotDelay})
	ts.Check(err)
	ctx, cancel := context.WithCancel(context.Background())
	ts.Check(lab.Start(ctx))
	ts.Defer(func() {
		cancel()
		lab.Close()
	})
	demo, err := fakelab.SeedDemoWith(ctx, lab, fakelab.DemoOptions{NoCI: opts.NoCI})
	ts.Check(err)
	ref, err := forge.ParsePRURL(demo.MRURL)
	ts.Check(err)
	st, err := lab.MR(demo.Project, demo.IID)
	ts.Check(err)
	f := &labForge{lab: lab, demo: demo, ref: ref, head: st.HeadSHA, seen: map[string]int{}, woke: make(chan struct{})}
	events, unsubscribe := lab.Subscribe()
	ts.Defer(unsubscribe)
	go func() {
		for e := range events {
			if e.Project != demo.Project {
				continue
			}
			f.mu.Lock()
			f.seen[e.Kind]++
			close(f.woke)
			f.woke = make(chan struct{})
			f.mu.Unlock()
		}
	}()
	// The MR URL names the emulator's host, so converge derives the API
	// from it (no --api-url); the CA and the author's token reach it the
	// way a user's shell would give them. No token of the developer's
	// shell leaks in under GitLab's own names.
	ts.Setenv("PR_URL", demo.MRURL)
	ts.Setenv("SSL_CERT_FILE", lab.CAFile())
	ts.Setenv("CONVERGE_TOKEN", lab.Tokens().Author)
	ts.Setenv("GITLAB_TOKEN", "")
	ts.Setenv("GL_TOKEN", "")
	return f
}

func (f *labForge) bot() string { return duo.Name }

// replyWritten: converge's GitLab client batches its replies in one
// aliased createNote mutation, BatchReply (internal/forge/gitlab/batch.go),
// and names its boundaries as the GitHub client does
// (internal/forge/gitlab/crashpoint.go).
func (f *labForge) replyWritten() string { return "forge graphql BatchReply: after" }

// client is converge's GitLab backend acting with token.
func (f *labForge) client(ts *testscript.TestScript, token string) *glclient.Client {
	c, err := glclient.New(glclient.Options{APIURL: f.lab.APIURL(), Token: token, HTTPClient: f.lab.HTTPClient()})
	ts.Check(err)
	return c
}

// official is GitLab's official Go client acting with token; it does not
// retry, so a refusal fails the move.
func (f *labForge) official(ts *testscript.TestScript, token string) *gitlab.Client {
	c, err := gitlab.NewClient(token, gitlab.WithBaseURL(f.lab.APIURL()), gitlab.WithHTTPClient(f.lab.HTTPClient()), gitlab.WithCustomRetryMax(0))
	ts.Check(err)
	return c
}

func (f *labForge) observe(ts *testscript.TestScript) *forge.PullRequest {
	pr, err := f.client(ts, f.lab.Tokens().Reviewer).Observe(context.Background(), f.ref)
	ts.Check(err)
	return pr
}

func (f *labForge) cloneAtHead(ts *testscript.TestScript) (*repo.Git, string) {
	ctx := context.Background()
	st, err := f.lab.MR(f.demo.Project, f.demo.IID)
	ts.Check(err)
	f.clones++
	env := append(os.Environ(), f.lab.GitEnv(f.lab.Tokens().Reviewer)...)
	g, err := repo.Clone(ctx, f.lab.GitURL(f.demo.Project), ts.MkAbs(fmt.Sprintf("lab-clone-%d", f.clones)), env)
	ts.Check(err)
	return g, st.HeadSHA
}

func (f *labForge) startHead() string   { return f.head }
func (f *labForge) authorLogin() string { return fakelab.UserAuthor }

// The emulator's write log names a thread write by its surface: a GraphQL
// request by its mutation fields, a REST one by method and path.
var (
	restReplyRE   = regexp.MustCompile(`^POST .*/merge_requests/\d+/discussions/[^/]+/notes$`)
	restResolveRE = regexp.MustCompile(`^PUT .*/merge_requests/\d+/discussions/[^/]+$`)
)

// replyBeforeResolve: no resolve by converge in the write log comes
// before its first reply (PR-S12). converge never reopens a thread, so
// each of its discussion toggles is a resolve.
func (f *labForge) replyBeforeResolve(ts *testscript.TestScript) {
	replied := false
	all := f.lab.Writes()
	for _, w := range all {
		if !strings.EqualFold(w.Actor, fakelab.UserAuthor) {
			continue
		}
		reply := restReplyRE.MatchString(w.What)
		resolve := restResolveRE.MatchString(w.What)
		for _, fl := range w.Fields {
			reply = reply || fl == "createNote"
			resolve = resolve || fl == "discussionToggleResolve"
		}
		switch {
		case reply:
			replied = true
		case resolve && !replied:
			ts.Fatalf("converge resolved a thread before any reply: %+v", all)
		}
	}
}

func (f *labForge) writes(actor string) []string {
	login := map[string]string{"author": fakelab.UserAuthor, "reviewer": fakelab.UserReviewer}[actor]
	if login == "" {
		return []string{"unknown actor " + actor}
	}
	var out []string
	for _, w := range f.lab.Writes() {
		if strings.EqualFold(w.Actor, login) {
			out = append(out, fmt.Sprintf("%+v", w))
		}
	}
	return out
}

func (f *labForge) await(ts *testscript.TestScript, event string) {
	kind, ok := map[string]string{"bot-started": "duo_started"}[event]
	if !ok {
		ts.Fatalf("forge await: unknown event %q (bot-started)", event)
	}
	deadline := time.After(60 * time.Second)
	for {
		f.mu.Lock()
		n, woke := f.seen[kind], f.woke
		f.mu.Unlock()
		if n > 0 {
			return
		}
		select {
		case <-woke:
		case <-deadline:
			ts.Fatalf("forge await %s: no %s event within 60s", event, kind)
		}
	}
}

// reviewThread: the reviewer opens a diff discussion on line of path at
// the head, positioned on the MR's current diff_refs (an added line: the
// demo's files are new in the MR).
func (f *labForge) reviewThread(ts *testscript.TestScript, path string, line int, body string) {
	c := f.official(ts, f.lab.Tokens().Reviewer)
	mr, _, err := c.MergeRequests.GetMergeRequest(f.demo.Project, int64(f.demo.IID), nil)
	ts.Check(err)
	_, _, err = c.Discussions.CreateMergeRequestDiscussion(f.demo.Project, int64(f.demo.IID), &gitlab.CreateMergeRequestDiscussionOptions{
		Body: gitlab.Ptr(body),
		Position: &gitlab.PositionOptions{
			BaseSHA: gitlab.Ptr(mr.DiffRefs.BaseSha), StartSHA: gitlab.Ptr(mr.DiffRefs.StartSha), HeadSHA: gitlab.Ptr(mr.DiffRefs.HeadSha),
			PositionType: gitlab.Ptr("text"), OldPath: gitlab.Ptr(path), NewPath: gitlab.Ptr(path), NewLine: gitlab.Ptr(int64(line)),
		},
	})
	ts.Check(err)
}

// requestChanges: the reviewer submits a review requesting changes, as
// GitLab's "Submit review" does (its summary as a note, the "requested
// changes" system note). GitLab's REST API has no such call; the
// emulator's test API plays it.
func (f *labForge) requestChanges(ts *testscript.TestScript, body string) {
	ts.Check(f.lab.RequestChanges(f.demo.Project, f.demo.IID, fakelab.UserReviewer, body))
}

// setResolved: the reviewer (un)resolves the thread through converge's
// own GitLab client, as hubForge does through its GitHub one.
func (f *labForge) setResolved(ts *testscript.TestScript, threadID string, resolved bool) {
	c := f.client(ts, f.lab.Tokens().Reviewer)
	if resolved {
		ts.Check(c.ResolveThread(context.Background(), f.ref, threadID))
		return
	}
	ts.Check(c.UnresolveThread(context.Background(), f.ref, threadID))
}

// push: the author pushes files to the MR's base or head branch; a run
// starts on a head pushed so, which is then no human push mid-run.
func (f *labForge) push(ts *testscript.TestScript, which string, files map[string]string, msg string) {
	branch := "main"
	if which == "head" {
		branch = fakelab.DemoBranch
	}
	_, err := f.lab.PushFiles(f.demo.Project, branch, fakelab.UserAuthor, files, msg)
	ts.Check(err)
	if which == "head" {
		st, err := f.lab.MR(f.demo.Project, f.demo.IID)
		ts.Check(err)
		f.head = st.HeadSHA
	}
}

// rateLimits: GitLab's rate limit, 429 with RateLimit-* headers and
// Retry-After (fakelab.FaultRateLimit).
func (f *labForge) rateLimits(_ *testscript.TestScript, seed int64, rate float64) {
	f.lab.SetFaults(fakelab.Faults{Seed: seed, Rate: rate, Kinds: []fakelab.FaultKind{fakelab.FaultRateLimit},
		Usernames: []string{fakelab.UserAuthor}, RetryAfter: time.Second})
}

// rateLimitsMet: every 429 is GitLab's current shape.
func (f *labForge) rateLimitsMet() []string {
	var out []string
	for _, hit := range f.lab.FaultHits() {
		if hit.Kind == fakelab.FaultRateLimit {
			out = append(out, hit.String())
		}
	}
	return out
}

// humanPush: the author pushes a commit without converge's trailer.
func (f *labForge) humanPush(ts *testscript.TestScript) {
	_, err := f.lab.PushFiles(f.demo.Project, fakelab.DemoBranch, fakelab.UserAuthor, map[string]string{"NOTES.md": "human notes\n"}, "docs: add notes")
	ts.Check(err)
}

// closePR: the author closes the MR (state_event=close).
func (f *labForge) closePR(ts *testscript.TestScript) {
	c := f.official(ts, f.lab.Tokens().Author)
	_, _, err := c.MergeRequests.UpdateMergeRequest(f.demo.Project, int64(f.demo.IID), &gitlab.UpdateMergeRequestOptions{StateEvent: gitlab.Ptr("close")})
	ts.Check(err)
}

// botRound sets Duo's nth review from now on (1-based) by opts: none,
// error, delay=D.
func (f *labForge) botRound(ts *testscript.TestScript, n int, opts []string) {
	if f.script == nil {
		sc := fakelab.DemoScript()
		f.script = &sc
	}
	for len(f.script.Rounds) < n {
		f.script.Rounds = append(f.script.Rounds, fakelab.DuoRound{})
	}
	r := &f.script.Rounds[n-1]
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
			ts.Fatalf("bot round: unknown option %q", o)
		}
	}
	ts.Check(f.lab.SetDuoScript(f.demo.Project, f.demo.IID, *f.script))
}

// verdict is what GitLab itself proves about an MR converge called
// two-stable (forgeProver): forgeVerdict's rules with Duo in Copilot's
// part.
func (f *labForge) verdict(pr *forge.PullRequest, localOK bool) string {
	return labVerdict(pr, localOK)
}

// labVerdict is forgeVerdict on GitLab: Duo's latest review (or
// converge's clean local review summary) is of the head and clean — an
// approval of the head by Duo, no Duo thread on the head, and Duo's
// latest note saying it found nothing — no trusted thread is open, CI is
// green on the head, and the labels say ready. "" means proven.
func labVerdict(pr *forge.PullRequest, localOK bool) string {
	var why []string
	bot := duo.New()
	var latest *forge.Review
	for i := range pr.Reviews {
		r := &pr.Reviews[i]
		if bot.Is(r.Author) && (latest == nil || !r.SubmittedAt.Before(latest.SubmittedAt)) {
			latest = r
		}
	}
	var note *forge.IssueComment
	for i := range pr.IssueComments {
		c := &pr.IssueComments[i]
		if bot.Is(c.Author) && (note == nil || !c.CreatedAt.Before(note.CreatedAt)) {
			note = c
		}
	}
	duoOK := latest != nil && latest.State == forge.ReviewApproved && latest.CommitSHA == pr.HeadSHA &&
		note != nil && strings.Contains(strings.ToLower(note.Body), "found nothing to comment on")
	for _, th := range pr.Threads {
		if len(th.Comments) > 0 && bot.Is(th.Comments[0].Author) && th.Comments[0].OriginalCommit == pr.HeadSHA {
			duoOK = false
		}
	}
	localClean := false
	for _, ic := range pr.IssueComments {
		if strings.Contains(ic.Body, "converge:local-review head="+pr.HeadSHA) && localCleanSummary(ic.Body) {
			localClean = true
		}
	}
	if !duoOK && !(localOK && localClean) {
		desc := "none"
		if latest != nil {
			desc = fmt.Sprintf("%s %s on %s", latest.ID, latest.State, latest.CommitSHA)
		}
		if note != nil {
			desc += fmt.Sprintf("; its latest note: %q", note.Body)
		}
		why = append(why, "no clean independent review of the head "+pr.HeadSHA+" (latest Duo review: "+desc+")")
	}
	trusted := func(l string) bool {
		return bot.Is(l) || strings.EqualFold(l, fakelab.UserAuthor) || strings.EqualFold(l, fakelab.UserReviewer) || strings.EqualFold(l, fakelab.UserOwner)
	}
	for _, th := range pr.Threads {
		if !th.IsResolved && len(th.Comments) > 0 && trusted(th.Comments[0].Author) {
			why = append(why, "trusted thread "+th.ID+" is open")
		}
	}
	ciSeen := false
	for _, cx := range pr.Checks.Contexts {
		if strings.EqualFold(cx.Name, "converge") {
			continue
		}
		ciSeen = true
		if !strings.EqualFold(string(cx.Conclusion), "SUCCESS") {
			why = append(why, fmt.Sprintf("CI %s is %s/%s on the head", cx.Name, cx.Status, cx.Conclusion))
		}
	}
	if !ciSeen {
		why = append(why, "no CI on the head")
	}
	ready := false
	for _, l := range pr.Labels {
		if l == "converge:ready-for-merge" {
			ready = true
		}
		if l == "converge:needs-attention" {
			why = append(why, "needs-attention label on a two-stable PR")
		}
	}
	if !ready {
		why = append(why, "no ready-for-merge label")
	}
	return strings.Join(why, "; ")
}

// TestPR_T1_LabAdapterMoves checks the table's GitLab adapter on its own
// (testdata/labforge): each move and read of the `forge` command on the
// GitLab emulator, without a converge run.
func TestPR_T1_LabAdapterMoves(t *testing.T) {
	t.Parallel()
	testscript.Run(t, testscript.Params{
		Dir:  "testdata/labforge",
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){"forge": cmdForge},
		Setup: func(env *testscript.Env) error {
			if err := scriptSetup(env); err != nil {
				return err
			}
			env.Setenv(forgeKindKey, string(forge.GitLab))
			return nil
		},
	})
}
