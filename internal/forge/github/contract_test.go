package github_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	gh "github.com/google/go-github/v93/github"

	"github.com/convergeloop/converge/internal/emulator/fakehub"
	"github.com/convergeloop/converge/internal/forge"
	"github.com/convergeloop/converge/internal/forge/forgetest"
	ghclient "github.com/convergeloop/converge/internal/forge/github"
	"github.com/convergeloop/converge/internal/testutil/hubtest"
)

// TestContract_Emulator runs the forge contract against the emulator: a
// fresh repository and PR per test, octo-author as converge, octo-reviewer
// as the second identity, the CI app's token for check runs.
func TestContract_Emulator(t *testing.T) {
	hub := hubtest.Start(t, 50*time.Millisecond)
	var n atomic.Int64
	forgetest.Run(t, func(t *testing.T) forgetest.Harness {
		return emulatorHarness(t, hub, fmt.Sprintf("contract%d", n.Add(1)))
	})
}

const (
	contractBase = "package main\n\nfunc main() {\n\tprintln(\"hello\")\n}\n"
	contractHead = "package main\n\nfunc main() {\n\tprintln(\"hello\")\n\tprintln(\"bye\")\n}\n"
)

func emulatorHarness(t *testing.T, hub *fakehub.Hub, repo string) forgetest.Harness {
	t.Helper()
	const owner = "acme"
	if err := hub.CreateRepo(owner, repo, map[string]string{"go.mod": "module example.com/widget\n\ngo 1.22\n", "main.go": contractBase}, fakehub.RepoOptions{}); err != nil {
		t.Fatal(err)
	}
	num, err := hub.CreatePR(owner, repo, fakehub.NewPR{Head: "feature/bye", Title: "Say bye", Body: "Adds a farewell.", Files: map[string]string{"main.go": contractHead}})
	if err != nil {
		t.Fatal(err)
	}
	// Requesting Copilot records the request and starts nothing: the
	// suite tests requests, not the scripted reviewer.
	if err := hub.SetCopilotScript(owner, repo, num, fakehub.CopilotScript{Rounds: []fakehub.CopilotRound{{NoStart: true}, {NoStart: true}, {NoStart: true}}}); err != nil {
		t.Fatal(err)
	}
	ref, err := forge.ParsePRURL(hub.PRURL(owner, repo, num))
	if err != nil {
		t.Fatal(err)
	}
	rest, err := gh.NewClient(gh.WithHTTPClient(hub.HTTPClient()), gh.WithAuthToken(hub.Tokens().Reviewer), gh.WithEnterpriseURLs(hub.APIURL(), hub.APIURL()))
	if err != nil {
		t.Fatal(err)
	}
	rejected, err := ghclient.New(ghclient.Options{APIURL: hub.APIURL(), GraphQLURL: hub.GraphQLURL(), Token: "ghp_" + forgetest.Marker + "Rejected0000000000000000000", CAFile: hub.CAFile()})
	if err != nil {
		t.Fatal(err)
	}
	fx := &ghFixture{
		rest: rest, ref: ref, viewer: fakehub.LoginAuthor, reviewer: fakehub.LoginReviewer,
		path: "main.go", line: 5, lineText: "\tprintln(\"bye\")", mergeState: forge.MergeClean, commits: 1,
		requestable: []forgetest.Reviewer{
			{Login: fakehub.LoginReviewer},
			{Login: fakehub.LoginCopilot, Bot: true},
		},
		perms: map[string]forge.Permission{fakehub.LoginReviewer: "write", fakehub.LoginOutsider: "read"},
	}
	fx.push = func(ctx context.Context, head string) (string, error) {
		name := fmt.Sprintf("%s-%d.txt", forgetest.Marker, fx.pushes.Add(1))
		return hub.PushFiles(owner, repo, head, map[string]string{name: "pushed\n"}, forgetest.Marker+": push "+name)
	}
	fx.reset = func(_ context.Context, head, sha string) error {
		return hub.ForcePushBranch(owner, repo, head, sha, fakehub.LoginReviewer)
	}
	return forgetest.Harness{
		Forge:     hubtest.Client(t, hub, hub.Tokens().Author),
		Fixture:   fx,
		CheckRuns: hubtest.Client(t, hub, hub.Tokens().CI),
		Rejected:  rejected,
	}
}

// TestContract_GitHub runs the forge contract against real GitHub (or an
// Enterprise server) on an existing open PR of a test repository, when
// CONVERGE_CONTRACT_GITHUB_TOKEN and CONVERGE_CONTRACT_GITHUB_REPO
// (owner/name#number) are set. The token needs write access to the
// repository. Optional:
//
//	CONVERGE_CONTRACT_GITHUB_REVIEWER_TOKEN  a second identity for reviews
//	                                         and comments (else the token's
//	                                         own COMMENTED reviews)
//	CONVERGE_CONTRACT_GITHUB_REVIEWERS       requestable reviewers, comma
//	                                         separated: login, or
//	                                         bot:login[=shown-login]
//	CONVERGE_CONTRACT_GITHUB_APP_TOKEN       an App installation token for
//	                                         check runs
//	CONVERGE_CONTRACT_GITHUB_API_URL         default https://api.github.com
//	CONVERGE_CONTRACT_GITHUB_LINE            path:line of a line the PR adds,
//	                                         for inline comments (default:
//	                                         the first added line)
//
// The PR keeps the reviews the suite submits; the comments it wrote, the
// labels it added and the reviewers it requested are removed after each
// test, as far as the API allows.
func TestContract_GitHub(t *testing.T) {
	token, repo := os.Getenv("CONVERGE_CONTRACT_GITHUB_TOKEN"), os.Getenv("CONVERGE_CONTRACT_GITHUB_REPO")
	if token == "" || repo == "" {
		t.Skip("set CONVERGE_CONTRACT_GITHUB_TOKEN and CONVERGE_CONTRACT_GITHUB_REPO=owner/name#number to run the forge contract against real GitHub")
	}
	cfg, err := parseRealConfig(os.Getenv)
	if err != nil {
		t.Fatal(err)
	}
	forgetest.Run(t, func(t *testing.T) forgetest.Harness { return realHarness(t, cfg) })
}

type realConfig struct {
	apiURL, token, reviewerToken, appToken string
	owner, repo                            string
	number                                 int
	requestable                            []forgetest.Reviewer
	path                                   string
	line                                   int
	settle                                 time.Duration
}

var repoArgRE = regexp.MustCompile(`^([A-Za-z0-9_.-]+)/([A-Za-z0-9_.-]+)#([0-9]+)$`)

func parseRealConfig(env func(string) string) (realConfig, error) {
	m := repoArgRE.FindStringSubmatch(strings.TrimSpace(env("CONVERGE_CONTRACT_GITHUB_REPO")))
	if m == nil {
		return realConfig{}, fmt.Errorf("CONVERGE_CONTRACT_GITHUB_REPO=%q: want owner/name#number", env("CONVERGE_CONTRACT_GITHUB_REPO"))
	}
	n, _ := strconv.Atoi(m[3])
	cfg := realConfig{
		apiURL: env("CONVERGE_CONTRACT_GITHUB_API_URL"), token: env("CONVERGE_CONTRACT_GITHUB_TOKEN"),
		reviewerToken: env("CONVERGE_CONTRACT_GITHUB_REVIEWER_TOKEN"), appToken: env("CONVERGE_CONTRACT_GITHUB_APP_TOKEN"),
		owner: m[1], repo: m[2], number: n, settle: 30 * time.Second,
	}
	if pl := env("CONVERGE_CONTRACT_GITHUB_LINE"); pl != "" {
		i := strings.LastIndex(pl, ":")
		line, err := strconv.Atoi(pl[i+1:])
		if i <= 0 || err != nil || line <= 0 {
			return realConfig{}, fmt.Errorf("CONVERGE_CONTRACT_GITHUB_LINE=%q: want path:line", pl)
		}
		cfg.path, cfg.line = pl[:i], line
	}
	if cfg.apiURL == "" {
		cfg.apiURL = "https://api.github.com"
	}
	for _, s := range strings.Split(env("CONVERGE_CONTRACT_GITHUB_REVIEWERS"), ",") {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		var r forgetest.Reviewer
		s, r.Bot = strings.CutPrefix(s, "bot:")
		r.Login, r.Shown, _ = strings.Cut(s, "=")
		cfg.requestable = append(cfg.requestable, r)
	}
	return cfg, nil
}

func realHarness(t *testing.T, cfg realConfig) forgetest.Harness {
	t.Helper()
	ctx := context.Background()
	webHost, err := ghclient.WebHost(cfg.apiURL)
	if err != nil {
		t.Fatal(err)
	}
	ref := forge.PRRef{Host: webHost, Scheme: "https", Owner: cfg.owner, Repo: cfg.repo, Number: cfg.number}
	newClient := func(token string) *ghclient.Client {
		c, err := ghclient.New(ghclient.Options{APIURL: cfg.apiURL, Token: token})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	newREST := func(token string) *gh.Client {
		opts := []gh.ClientOptionsFunc{gh.WithAuthToken(token)}
		if cfg.apiURL != "https://api.github.com" {
			opts = append(opts, gh.WithEnterpriseURLs(cfg.apiURL, cfg.apiURL))
		}
		c, err := gh.NewClient(opts...)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	mine := newREST(cfg.token)
	theirs := mine
	if cfg.reviewerToken != "" {
		theirs = newREST(cfg.reviewerToken)
	}
	viewer, _, err := mine.Users.Get(ctx, "")
	if err != nil {
		t.Fatalf("the contract token: %v", err)
	}
	reviewer, _, err := theirs.Users.Get(ctx, "")
	if err != nil {
		t.Fatalf("the reviewer token: %v", err)
	}
	path, line, text := cfg.path, cfg.line, ""
	if path == "" {
		if path, line, text, err = commentableLine(ctx, mine, cfg); err != nil {
			t.Fatal(err)
		}
	}
	fx := &ghFixture{
		rest: theirs, ref: ref, viewer: viewer.GetLogin(), reviewer: reviewer.GetLogin(),
		path: path, line: line, lineText: text, requestable: cfg.requestable,
	}
	h := forgetest.Harness{
		Forge:    newClient(cfg.token),
		Fixture:  fx,
		Rejected: newClient("ghp_" + forgetest.Marker + "Rejected000000000000000000000"),
		Settle:   cfg.settle,
	}
	if cfg.appToken != "" {
		h.CheckRuns = newClient(cfg.appToken)
	}
	cleanUpAfter(t, cfg, mine, map[string]*gh.Client{viewer.GetLogin(): mine, reviewer.GetLogin(): theirs})
	return h
}

// commentableLine finds the first line the PR adds, where review comments
// can go, and its text.
func commentableLine(ctx context.Context, c *gh.Client, cfg realConfig) (string, int, string, error) {
	files, _, err := c.PullRequests.ListFiles(ctx, cfg.owner, cfg.repo, cfg.number, &gh.ListOptions{PerPage: 100})
	if err != nil {
		return "", 0, "", fmt.Errorf("list the PR's files: %w", err)
	}
	hunkRE := regexp.MustCompile(`^@@ -\d+(?:,\d+)? \+(\d+)`)
	for _, f := range files {
		line := 0
		sc := bufio.NewScanner(strings.NewReader(f.GetPatch()))
		for sc.Scan() {
			s := sc.Text()
			switch {
			case hunkRE.MatchString(s):
				line, _ = strconv.Atoi(hunkRE.FindStringSubmatch(s)[1])
			case strings.HasPrefix(s, "+"):
				return f.GetFilename(), line, s[1:], nil
			case strings.HasPrefix(s, "-"):
			default:
				line++
			}
		}
	}
	return "", 0, "", fmt.Errorf("%s/%s#%d adds no line a review comment could go on", cfg.owner, cfg.repo, cfg.number)
}

// cleanUpAfter removes, when the test ends, the comments carrying the
// suite's marker written since now, each by its author's client, and the
// review requests the test added (with mine, the contract token's client).
func cleanUpAfter(t *testing.T, cfg realConfig, mine *gh.Client, clients map[string]*gh.Client) {
	ctx := context.Background()
	since := time.Now().Add(-time.Minute)
	before, _, err := mine.PullRequests.ListReviewers(ctx, cfg.owner, cfg.repo, cfg.number)
	if err != nil {
		t.Fatalf("list requested reviewers: %v", err)
	}
	t.Cleanup(func() {
		kept := 0
		for login, c := range clients {
			ics, _, err := c.Issues.ListComments(ctx, cfg.owner, cfg.repo, cfg.number, &gh.IssueListCommentsOptions{Since: &since, ListOptions: gh.ListOptions{PerPage: 100}})
			for _, ic := range ics {
				if strings.Contains(ic.GetBody(), forgetest.Marker) && ic.GetUser().GetLogin() == login {
					if _, err := c.Issues.DeleteComment(ctx, cfg.owner, cfg.repo, ic.GetID()); err != nil {
						kept++
					}
				}
			}
			rcs, _, err2 := c.PullRequests.ListComments(ctx, cfg.owner, cfg.repo, cfg.number, &gh.PullRequestListCommentsOptions{Since: since, ListOptions: gh.ListOptions{PerPage: 100}})
			// Replies first, so a thread's first comment goes last.
			slices.Reverse(rcs)
			for _, rc := range rcs {
				if strings.Contains(rc.GetBody(), forgetest.Marker) && rc.GetUser().GetLogin() == login {
					if _, err := c.PullRequests.DeleteComment(ctx, cfg.owner, cfg.repo, rc.GetID()); err != nil {
						kept++
					}
				}
			}
			if err := errors.Join(err, err2); err != nil {
				t.Logf("cleanup: %v", err)
			}
		}
		if kept > 0 {
			t.Logf("cleanup: %d marked comments could not be deleted", kept)
		}
		after, _, err := mine.PullRequests.ListReviewers(ctx, cfg.owner, cfg.repo, cfg.number)
		if err != nil {
			t.Logf("cleanup: %v", err)
			return
		}
		var drop []string
		for _, u := range after.Users {
			if !slices.ContainsFunc(before.Users, func(b *gh.User) bool { return b.GetLogin() == u.GetLogin() }) {
				drop = append(drop, u.GetLogin())
			}
		}
		if len(drop) > 0 {
			if _, err := mine.PullRequests.RemoveReviewers(ctx, cfg.owner, cfg.repo, cfg.number, gh.ReviewersRequest{Reviewers: drop}); err != nil {
				t.Logf("cleanup: remove requested reviewers %v: %v", drop, err)
			}
		}
	})
}

// ghFixture acts on a GitHub PR (real or emulated) through REST as the
// reviewer; pushing needs the emulator.
type ghFixture struct {
	rest             *gh.Client
	ref              forge.PRRef
	viewer, reviewer string
	path             string
	line             int
	lineText         string
	mergeState       forge.MergeState
	requestable      []forgetest.Reviewer
	perms            map[string]forge.Permission
	push             func(ctx context.Context, head string) (string, error)
	// reset force-pushes the head branch back to a commit (nil: cannot).
	reset func(ctx context.Context, head, sha string) error

	mu      sync.Mutex
	commits int // known commit count when REST does not report it
	pushes  atomic.Int64
}

func (f *ghFixture) pull(ctx context.Context) (*gh.PullRequest, error) {
	pr, _, err := f.rest.PullRequests.Get(ctx, f.ref.Owner, f.ref.Repo, f.ref.Number)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", f.ref, err)
	}
	return pr, nil
}

func (f *ghFixture) Facts(ctx context.Context) (forgetest.Facts, error) {
	pr, err := f.pull(ctx)
	if err != nil {
		return forgetest.Facts{}, err
	}
	f.mu.Lock()
	commits := f.commits
	f.mu.Unlock()
	if pr.Commits != nil {
		commits = pr.GetCommits()
	}
	return forgetest.Facts{
		PR: f.ref, Author: pr.GetUser().GetLogin(), Viewer: f.viewer, Reviewer: f.reviewer,
		HeadRef: pr.GetHead().GetRef(), BaseRef: pr.GetBase().GetRef(), HeadSHA: pr.GetHead().GetSHA(),
		Commits: commits, CloneURL: pr.GetBase().GetRepo().GetCloneURL(), MergeState: f.mergeState,
		Path: f.path, Line: f.line, LineText: f.lineText, Requestable: f.requestable, Permissions: f.perms,
	}, nil
}

func (f *ghFixture) Review(ctx context.Context, r forgetest.Review) (string, error) {
	pr, err := f.pull(ctx)
	if err != nil {
		return "", err
	}
	req := &gh.PullRequestReviewRequest{CommitID: new(pr.GetHead().GetSHA()), Body: new(r.Body), Event: new("COMMENT")}
	for _, c := range r.Comments {
		req.Comments = append(req.Comments, &gh.DraftReviewComment{Path: new(c.Path), Line: new(c.Line), Side: new("RIGHT"), Body: new(c.Body)})
	}
	rv, _, err := f.rest.PullRequests.CreateReview(ctx, f.ref.Owner, f.ref.Repo, f.ref.Number, req)
	if err != nil {
		return "", fmt.Errorf("submit review: %w", err)
	}
	return rv.GetNodeID(), nil
}

func (f *ghFixture) Comment(ctx context.Context, body string) error {
	_, _, err := f.rest.Issues.CreateComment(ctx, f.ref.Owner, f.ref.Repo, f.ref.Number, gh.IssueCommentRequest{Body: body})
	return err
}

func (f *ghFixture) Push(ctx context.Context) (string, error) {
	if f.push == nil {
		return "", fmt.Errorf("pushing to a real repository: %w", errors.ErrUnsupported)
	}
	pr, err := f.pull(ctx)
	if err != nil {
		return "", err
	}
	sha, err := f.push(ctx, pr.GetHead().GetRef())
	if err == nil {
		f.mu.Lock()
		f.commits++
		f.mu.Unlock()
	}
	return sha, err
}

// ResetHead force-pushes the PR's head branch back to sha as the
// reviewer (forgetest.HeadResetter).
func (f *ghFixture) ResetHead(ctx context.Context, sha string) error {
	if f.reset == nil {
		return fmt.Errorf("force-pushing a real repository: %w", errors.ErrUnsupported)
	}
	pr, err := f.pull(ctx)
	if err != nil {
		return err
	}
	return f.reset(ctx, pr.GetHead().GetRef(), sha)
}

// TestContract_GitHubConfig: the real-GitHub run reads its repository and
// reviewers from the environment and refuses a malformed repository.
func TestContract_GitHubConfig(t *testing.T) {
	env := map[string]string{
		"CONVERGE_CONTRACT_GITHUB_TOKEN":     "t",
		"CONVERGE_CONTRACT_GITHUB_REPO":      "octo/hello#12",
		"CONVERGE_CONTRACT_GITHUB_REVIEWERS": "alice, bot:copilot-pull-request-reviewer=Copilot",
	}
	cfg, err := parseRealConfig(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	want := []forgetest.Reviewer{{Login: "alice"}, {Login: "copilot-pull-request-reviewer", Bot: true, Shown: "Copilot"}}
	if cfg.owner != "octo" || cfg.repo != "hello" || cfg.number != 12 || cfg.apiURL != "https://api.github.com" || !slices.Equal(cfg.requestable, want) || cfg.path != "" {
		t.Errorf("config %+v", cfg)
	}
	env["CONVERGE_CONTRACT_GITHUB_LINE"] = "cmd/a b.go:12"
	if cfg, err := parseRealConfig(func(k string) string { return env[k] }); err != nil || cfg.path != "cmd/a b.go" || cfg.line != 12 {
		t.Errorf("line override: %q:%d, %v", cfg.path, cfg.line, err)
	}
	for k, v := range map[string]string{"CONVERGE_CONTRACT_GITHUB_REPO": "octo/hello", "CONVERGE_CONTRACT_GITHUB_LINE": "main.go"} {
		bad := maps.Clone(env)
		bad[k] = v
		if _, err := parseRealConfig(func(k string) string { return bad[k] }); err == nil {
			t.Errorf("%s=%q was accepted", k, v)
		}
	}
}

// TestContract_GitHubPathOnEmulator runs the real-GitHub harness — one
// shared PR for every test, REST set-up with a second token, clean-up
// after each test — against the emulator over loopback http, so the path
// TestContract_GitHub takes is exercised on every run.
func TestContract_GitHubPathOnEmulator(t *testing.T) {
	hub := hubtest.StartWith(t, fakehub.Options{HTTP: true, CopilotDelay: -1})
	if err := hub.CreateRepo("acme", "shared", map[string]string{"main.go": contractBase}, fakehub.RepoOptions{}); err != nil {
		t.Fatal(err)
	}
	n, err := hub.CreatePR("acme", "shared", fakehub.NewPR{Head: "feature/bye", Title: "Say bye", Files: map[string]string{"main.go": contractHead}})
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{
		"CONVERGE_CONTRACT_GITHUB_TOKEN":          hub.Tokens().Author,
		"CONVERGE_CONTRACT_GITHUB_REVIEWER_TOKEN": hub.Tokens().Reviewer,
		"CONVERGE_CONTRACT_GITHUB_APP_TOKEN":      hub.Tokens().CI,
		"CONVERGE_CONTRACT_GITHUB_REPO":           fmt.Sprintf("acme/shared#%d", n),
		"CONVERGE_CONTRACT_GITHUB_REVIEWERS":      fakehub.LoginReviewer + "," + fakehub.LoginOutsider,
		"CONVERGE_CONTRACT_GITHUB_API_URL":        hub.APIURL(),
		"CONVERGE_CONTRACT_GITHUB_LINE":           "main.go:5",
	}
	cfg, err := parseRealConfig(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	cfg.settle = 0
	forgetest.Run(t, func(t *testing.T) forgetest.Harness { return realHarness(t, cfg) })
	st, err := hub.PR("acme", "shared", n)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Labels) != 0 || len(st.Requested) != 0 {
		t.Errorf("the suite left labels %v and requested reviewers %v behind", st.Labels, st.Requested)
	}
}
