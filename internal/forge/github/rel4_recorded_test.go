package github

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	gh "github.com/google/go-github/v93/github"

	"github.com/convergeloop/converge/internal/forge"
	"github.com/convergeloop/converge/internal/forge/github/graphql"
	"github.com/convergeloop/converge/internal/testutil/httpmock"
	"github.com/convergeloop/converge/internal/testutil/recorded"
)

// REL-1 and REL-4: converge's GitHub client against recorded real
// answers of GitHub's API (testdata/recorded/github; its README says the
// format, SOURCES.md where each answer comes from). Every recording is
// served by a test server, as GitHub gave it, to the request converge
// really sends, and converge must read it as its rules say: the fields it
// reads decoded; a rate limit in any shape (403 or 429, primary or
// secondary, GraphQL's RATE_LIMIT or older RATE_LIMITED) rate-limited
// with the wait GitHub asks for, never a refusal; 401 auth; 404 not
// found; 422 invalid. A recording no case handles fails the test, so the
// corpus cannot grow past what is proven.

// recAnswer is one recorded answer (testdata/recorded/README.md).
type recAnswer = recorded.Answer

// replayed is one request converge sent to the replay server.
type recReplayed struct {
	method, path, query string
	header              http.Header
	body                []byte
}

// replayServer answers every request with its recording, as recorded.
type recServer struct {
	*httptest.Server
	mu   sync.Mutex
	seen []recReplayed
}

func newRecServer(t *testing.T, answer func(*http.Request) *recAnswer) *recServer {
	t.Helper()
	s := &recServer{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		s.mu.Lock()
		s.seen = append(s.seen, recReplayed{r.Method, r.URL.Path, r.URL.RawQuery, r.Header.Clone(), b})
		s.mu.Unlock()
		rec := answer(r)
		if rec == nil {
			t.Errorf("no recording answers %s %s", r.Method, r.URL.Path)
			http.Error(w, "no recording", http.StatusTeapot)
			return
		}
		recWrite(w, rec)
	}))
	t.Cleanup(s.Close)
	return s
}

func recWrite(w http.ResponseWriter, rec *recAnswer) {
	for k, v := range rec.Response.Headers {
		w.Header().Set(k, v)
	}
	w.WriteHeader(rec.Response.Status)
	if rec.Response.Status == http.StatusNotModified || rec.Response.Status == http.StatusNoContent {
		return
	}
	switch {
	case len(rec.Response.Body) > 0 && string(rec.Response.Body) != "null":
		w.Write(rec.Response.Body)
	case rec.Response.BodyText != nil:
		io.WriteString(w, *rec.Response.BodyText)
	}
}

func (s *recServer) requests() []recReplayed {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.seen)
}

// outcome is what converge must make of a recording.
type recOutcome int

const (
	recDecoded     recOutcome = iota // no error; the case checks the fields read
	recAuth                          // forge.KindAuth
	recNotFound                      // forge.KindNotFound
	recInvalid                       // forge.KindInvalid
	recRateLimited                   // forge.KindRateLimited, after waiting as asked
)

var recOutcomeKind = map[recOutcome]forge.ErrorKind{
	recAuth: forge.KindAuth, recNotFound: forge.KindNotFound, recInvalid: forge.KindInvalid, recRateLimited: forge.KindRateLimited,
}

// ghEnv is one case's client against the replay server.
type recEnv struct {
	t   *testing.T
	rec *recAnswer
	srv *recServer
	c   *Client
	sl  *sleeps
	ctx context.Context
}

// refAt reads owner, repo and (when the pattern has a third group) the
// number from the recorded request path.
func (e *recEnv) refAt(pattern string) (forge.PRRef, []string) {
	e.t.Helper()
	p, err := url.PathUnescape(e.rec.Request.Path)
	if err != nil {
		e.t.Fatal(err)
	}
	m := regexp.MustCompile(pattern).FindStringSubmatch(p)
	if m == nil {
		e.t.Fatalf("%s: path %s does not match %s", e.rec.File, p, pattern)
	}
	ref := forge.PRRef{Host: "github.example.com", Scheme: "https", Owner: m[1], Repo: m[2], Forge: forge.GitHub}
	if len(m) > 3 {
		if n, err := strconv.Atoi(m[3]); err == nil {
			ref.Number = n
		}
	}
	return ref, m
}

func (e *recEnv) body() any { return e.rec.Decode(e.t) }

var (
	recAppKeyOnce sync.Once
	recAppKey     *rsa.PrivateKey
)

// app is a GitHub App whose own requests go to the replay server.
func (e *recEnv) app() *App {
	e.t.Helper()
	recAppKeyOnce.Do(func() {
		k, err := rsa.GenerateKey(rand.Reader, 2048)
		if err != nil {
			e.t.Fatal(err)
		}
		recAppKey = k
	})
	a, err := NewApp(AppOptions{ID: 4242, Key: recAppKey, APIURL: e.srv.URL + "/api/v3", HTTPClient: e.srv.Client(), Now: e.sl.clock})
	if err != nil {
		e.t.Fatal(err)
	}
	return a
}

// ghCase drives converge with one recording and checks what it read.
type recCase struct {
	// exact: the recording answers the very request converge sends, so
	// the method and path converge sent must be the recorded ones.
	exact bool
	run   func(e *recEnv) error
	want  recOutcome
	// wait is the first wait GitHub's rules ask for this answer (a rate
	// limit only), from the recorded headers.
	wait func(e *recEnv) time.Duration
}

// GitHub's documented waits for a rate-limited answer
// (docs.github.com, "Exceeding the rate limit"): Retry-After when given;
// else, x-ratelimit-remaining 0, until x-ratelimit-reset (converge adds a
// second of margin); else at least a minute.
func recWaitRetryAfter(e *recEnv) time.Duration {
	s, err := strconv.Atoi(e.rec.Header("Retry-After"))
	if err != nil {
		e.t.Fatalf("%s: Retry-After %q", e.rec.File, e.rec.Header("Retry-After"))
	}
	return time.Duration(s) * time.Second
}

func recWaitReset(e *recEnv) time.Duration {
	reset, err := strconv.ParseInt(e.rec.Header("X-Ratelimit-Reset"), 10, 64)
	date, derr := http.ParseTime(e.rec.Header("Date"))
	if err != nil || derr != nil {
		e.t.Fatalf("%s: no x-ratelimit-reset or Date", e.rec.File)
	}
	return time.Unix(reset, 0).Sub(date) + time.Second
}

func recWaitMinute(*recEnv) time.Duration { return time.Minute }

func recCases() map[string]recCase {
	const repoPR = `^/repos/([^/]+)/([^/]+)/(?:issues|pulls)/(\d+)`
	return map[string]recCase{
		// --- answers to the requests converge sends
		"rest-get-user-200.json": {exact: true, run: func(e *recEnv) error {
			login, err := e.c.Viewer(e.ctx)
			if err == nil && login != recorded.Str(e.t, e.body(), "login") {
				e.t.Errorf("viewer %q, want the recorded login", login)
			}
			return err
		}},
		"rest-list-issue-events-200.json": {exact: true, run: func(e *recEnv) error {
			ref, _ := e.refAt(repoPR + `/events$`)
			evs, err := e.c.IssueEvents(e.ctx, ref)
			if err != nil {
				return err
			}
			b := e.body().([]any)
			if len(evs) != len(b) {
				e.t.Fatalf("%d events, want %d", len(evs), len(b))
			}
			for i, ev := range evs {
				if ev.ID != recorded.Int(e.t, b, strconv.Itoa(i)+".id") || ev.Event != recorded.Str(e.t, b, strconv.Itoa(i)+".event") ||
					ev.Actor != recorded.Str(e.t, b, strconv.Itoa(i)+".actor.login") || ev.CreatedAt.IsZero() {
					e.t.Errorf("event %d read as %+v", i, ev)
				}
			}
			return nil
		}},
		"rest-add-labels-200.json": {exact: true, run: func(e *recEnv) error {
			ref, _ := e.refAt(repoPR + `/labels$`)
			var sent struct {
				Labels []string `json:"labels"`
			}
			if err := json.Unmarshal(e.rec.Request.Body, &sent); err != nil || len(sent.Labels) == 0 {
				e.t.Fatalf("recorded request body: %v", err)
			}
			return e.c.AddLabels(e.ctx, ref, sent.Labels...)
		}},
		"rest-remove-label-200.json": {exact: true, run: func(e *recEnv) error {
			ref, m := e.refAt(repoPR + `/labels/(.+)$`)
			return e.c.RemoveLabel(e.ctx, ref, m[4])
		}},
		"rest-create-issue-comment-201.json": {exact: true, run: func(e *recEnv) error {
			ref, _ := e.refAt(repoPR + `/comments$`)
			b := e.body()
			ic, err := e.c.CreateIssueComment(e.ctx, ref, recorded.Str(e.t, b, "body"))
			if err == nil && (ic.ID != recorded.Int(e.t, b, "id") || ic.Author != recorded.Str(e.t, b, "user.login") ||
				ic.Body != recorded.Str(e.t, b, "body") || ic.CreatedAt.IsZero()) {
				e.t.Errorf("comment read as %+v", ic)
			}
			return err
		}},
		"rest-list-issue-comments-200.json": {exact: true, run: func(e *recEnv) error {
			ref, _ := e.refAt(repoPR + `/comments$`)
			ics, err := e.c.ListIssueComments(e.ctx, ref)
			if err != nil {
				return err
			}
			b := e.body().([]any)
			if len(ics) != len(b) {
				e.t.Fatalf("%d comments, want %d", len(ics), len(b))
			}
			for i, ic := range ics {
				p := strconv.Itoa(i)
				if ic.ID != recorded.Int(e.t, b, p+".id") || ic.NodeID != recorded.Str(e.t, b, p+".node_id") ||
					ic.Author != recorded.Str(e.t, b, p+".user.login") || ic.Body == "" || ic.CreatedAt.IsZero() {
					e.t.Errorf("comment %d read as %+v", i, ic)
				}
			}
			return nil
		}},
		"rest-create-status-201.json": {exact: true, run: func(e *recEnv) error {
			ref, m := e.refAt(`^/repos/([^/]+)/([^/]+)/statuses/([0-9a-f]{40})$`)
			var sent struct {
				State, Context, Description string
				TargetURL                   string `json:"target_url"`
			}
			if err := json.Unmarshal(e.rec.Request.Body, &sent); err != nil {
				e.t.Fatal(err)
			}
			return e.c.SetCommitStatus(e.ctx, ref, m[3], forge.CommitStatus{
				State: forge.CommitStatusState(sent.State), Context: sent.Context, Description: sent.Description, TargetURL: sent.TargetURL})
		}},
		"rest-combined-status-200.json": {exact: true, run: func(e *recEnv) error {
			ref, m := e.refAt(`^/repos/([^/]+)/([^/]+)/commits/([0-9a-f]{40})/status$`)
			// The change probe's CI witness, as probe.go asks for it.
			p := "repos/" + ref.Owner + "/" + ref.Repo + "/commits/" + m[3] + "/status?per_page=100"
			tag, unchanged, _, err := e.c.conditionalGet(e.ctx, p, "", nil)
			if err == nil && (unchanged || tag == "" || tag != e.rec.Header("ETag")) {
				e.t.Errorf("probe read etag %q (unchanged %v), want the recorded %q", tag, unchanged, e.rec.Header("ETag"))
			}
			return err
		}},
		"rest-create-check-run-201.json": {exact: true, run: func(e *recEnv) error {
			ref, _ := e.refAt(`^/repos/([^/]+)/([^/]+)/check-runs$`)
			b := e.body()
			id, err := e.c.CreateCheckRun(e.ctx, ref, forge.CheckRun{Name: recorded.Str(e.t, b, "name"), HeadSHA: recorded.Str(e.t, b, "head_sha"),
				Status: recorded.Str(e.t, b, "status"), Conclusion: recorded.Str(e.t, b, "conclusion")})
			if err == nil && id != recorded.Int(e.t, b, "id") {
				e.t.Errorf("check run id %d, want the recorded one", id)
			}
			return err
		}},
		"rest-update-check-run-200.json": {exact: true, run: func(e *recEnv) error {
			// PublishVerdict's update of its own check run, as it sends it.
			ref, m := e.refAt(`^/repos/([^/]+)/([^/]+)/check-runs/(\d+)$`)
			id, _ := strconv.ParseInt(m[3], 10, 64)
			b := e.body()
			status := recorded.Str(e.t, b, "status")
			run, _, err := e.c.rest.Checks.UpdateCheckRun(e.ctx, ref.Owner, ref.Repo, id, gh.UpdateCheckRunOptions{Name: recorded.Str(e.t, b, "name"), Status: &status})
			if err != nil {
				return e.c.mapErr("update check run", e.c.restURL, err)
			}
			if run.GetID() != id || run.GetStatus() != status || run.GetApp().GetID() == 0 {
				e.t.Errorf("check run read as id %d status %q app %d", run.GetID(), run.GetStatus(), run.GetApp().GetID())
			}
			return nil
		}},
		"rest-list-check-runs-for-ref-200.json": {exact: true, run: func(e *recEnv) error {
			ref, m := e.refAt(`^/repos/([^/]+)/([^/]+)/commits/([0-9a-f]{40})/check-runs$`)
			b := e.body()
			// ownCheckRun reads only the App's id: the run answering for
			// the first recorded run's App and name is that run.
			e.c.app = &App{id: recorded.Int(e.t, b, "check_runs.0.app.id")}
			id, err := e.c.ownCheckRun(e.ctx, ref, m[3], recorded.Str(e.t, b, "check_runs.0.name"))
			if err == nil && id != recorded.Int(e.t, b, "check_runs.0.id") {
				e.t.Errorf("own check run %d, want the recorded first run", id)
			}
			return err
		}},
		"rest-permission-200.json": {exact: true, run: func(e *recEnv) error {
			ref, m := e.refAt(`^/repos/([^/]+)/([^/]+)/collaborators/([^/]+)/permission$`)
			b := e.body()
			if recorded.At(e.t, b, "role_name") != nil {
				e.t.Fatal("the recording has role_name: check the case")
			}
			p, err := e.c.Permission(e.ctx, ref, m[3])
			if err == nil && p != forge.Permission(recorded.Str(e.t, b, "permission")) {
				e.t.Errorf("permission %q, want the recorded %q", p, recorded.Str(e.t, b, "permission"))
			}
			return err
		}},
		"rest-compare-200.json": {exact: true, run: func(e *recEnv) error {
			ref, m := e.refAt(`^/repos/([^/]+)/([^/]+)/compare/(.+)\.\.\.(.+)$`)
			n, err := e.c.CommitsBehind(e.ctx, ref, m[3], m[4])
			if err == nil && int64(n) != recorded.Int(e.t, e.body(), "behind_by") {
				e.t.Errorf("behind by %d, want the recorded behind_by", n)
			}
			return err
		}},
		"rest-list-pulls-200.json": {exact: true, run: func(e *recEnv) error {
			ref, _ := e.refAt(`^/repos/([^/]+)/([^/]+)/pulls$`)
			prs, err := e.c.OpenPRs(e.ctx, ref.Owner, ref.Repo)
			if err != nil {
				return err
			}
			b := e.body().([]any)
			if len(prs) != len(b) {
				e.t.Fatalf("%d pull requests, want %d", len(prs), len(b))
			}
			for i, p := range prs {
				k := strconv.Itoa(i)
				if int64(p.Number) != recorded.Int(e.t, b, k+".number") || p.URL != recorded.Str(e.t, b, k+".html_url") ||
					p.Author != recorded.Str(e.t, b, k+".user.login") || len(p.Labels) != len(recorded.At(e.t, b, k+".labels").([]any)) {
					e.t.Errorf("pull request %d read as %+v", i, p)
				}
			}
			return nil
		}},
		"rest-get-pull-mergeable-null-200.json": {exact: true, run: func(e *recEnv) error {
			// GitHub had not computed mergeability: REST says null. converge
			// reads mergeability from GraphQL only (MergeableState!, UNKNOWN
			// while computing); this answer is the change probe's witness,
			// whose ETag moves when mergeable does. It must read updated_at
			// and keep the ETag.
			b := e.body()
			if recorded.At(e.t, b, "mergeable") != nil || recorded.Str(e.t, b, "mergeable_state") != "unknown" {
				e.t.Fatal("the recording is not the lazily computed mergeability")
			}
			ref, _ := e.refAt(repoPR + `$`)
			var st prStamp
			tag, unchanged, date, err := e.c.conditionalGet(e.ctx, "repos/"+ref.Owner+"/"+ref.Repo+"/pulls/"+strconv.Itoa(ref.Number), "", &st)
			if err != nil {
				return err
			}
			want, _ := time.Parse(time.RFC3339, recorded.Str(e.t, b, "updated_at"))
			if unchanged || tag != e.rec.Header("ETag") || !st.UpdatedAt.Equal(want) || date.IsZero() || !st.settled(date) {
				e.t.Errorf("probe read etag %q updated_at %v date %v (unchanged %v)", tag, st.UpdatedAt, date, unchanged)
			}
			return nil
		}},
		"rest-get-pull-304.json": {exact: true, run: func(e *recEnv) error {
			ref, _ := e.refAt(repoPR + `$`)
			prev := e.rec.Header("ETag")
			tag, unchanged, _, err := e.c.conditionalGet(e.ctx, "repos/"+ref.Owner+"/"+ref.Repo+"/pulls/"+strconv.Itoa(ref.Number), prev, &prStamp{})
			if err == nil && (!unchanged || tag != prev) {
				e.t.Errorf("304 read as unchanged %v etag %q", unchanged, tag)
			}
			if got := e.srv.requests()[0].header.Get("If-None-Match"); got != prev {
				e.t.Errorf("If-None-Match %q, want %q", got, prev)
			}
			return err
		}},
		"app-get-app-200.json": {exact: true, run: func(e *recEnv) error {
			slug, err := e.app().Slug(e.ctx)
			if err == nil && slug != recorded.Str(e.t, e.body(), "slug") {
				e.t.Errorf("slug %q, want the recorded one", slug)
			}
			return err
		}},
		"app-get-repo-installation-200.json": {exact: true, run: func(e *recEnv) error {
			ref, _ := e.refAt(`^/repos/([^/]+)/([^/]+)/installation$`)
			id, err := e.app().installation(e.ctx, ref.Owner, ref.Repo)
			if err == nil && id != recorded.Int(e.t, e.body(), "id") {
				e.t.Errorf("installation %d, want the recorded id", id)
			}
			return err
		}},
		"app-create-installation-token-201.json": {exact: true, run: func(e *recEnv) error {
			m := regexp.MustCompile(`^/app/installations/(\d+)/access_tokens$`).FindStringSubmatch(e.rec.Request.Path)
			inst, _ := strconv.ParseInt(m[1], 10, 64)
			tok, err := e.app().installationToken(e.ctx, inst, "")
			if err == nil && tok != recorded.Str(e.t, e.body(), "token") {
				e.t.Errorf("token %q, want the recorded one", tok)
			}
			return err
		}},

		// --- GraphQL answers recorded by git-spice (SOURCES.md). The
		// mutations are converge's own, sent as converge sends them;
		// the reads addressed the PR by node id, so converge's client
		// sends the recorded document and reads the answer with the
		// wire types and conversions its observation uses.
		"graphql-reply-to-thread-200.json": {run: func(e *recEnv) error {
			in := recGraphQLInput(e)
			threadID, _ := in["pullRequestReviewThreadId"].(string)
			body, _ := in["body"].(string)
			cm, err := e.c.ReplyToThread(e.ctx, testRef, threadID, body)
			recSentMutation(e, "reply", in)
			b := e.body()
			const at = "data.addPullRequestReviewThreadReply.comment."
			if err == nil && (cm.ID != recorded.Str(e.t, b, at+"id") || cm.URL != recorded.Str(e.t, b, at+"url")) {
				e.t.Errorf("reply read as %+v", cm)
			}
			return err
		}},
		"graphql-resolve-thread-200.json": {run: func(e *recEnv) error {
			in := recGraphQLInput(e)
			threadID, _ := in["threadId"].(string)
			err := e.c.ResolveThread(e.ctx, testRef, threadID)
			recSentMutation(e, "resolve", in)
			return err
		}},
		"graphql-unresolve-thread-200.json": {run: func(e *recEnv) error {
			in := recGraphQLInput(e)
			threadID, _ := in["threadId"].(string)
			err := e.c.UnresolveThread(e.ctx, testRef, threadID)
			recSentMutation(e, "unresolve", in)
			return err
		}},
		"graphql-review-threads-resolved-200.json":   {run: recThreadsPage},
		"graphql-review-threads-file-level-200.json": {run: recThreadsPage},
		// GitHub's own words for mergeability are converge's constants:
		// UNKNOWN while GitHub computes it, then the value.
		"graphql-mergeable-unknown-200.json":     {run: recMergeability(forge.MergeableUnknown, forge.MergeUnknown)},
		"graphql-mergeable-conflicting-200.json": {run: recMergeability(forge.MergeableConflicting, forge.MergeDirty)},

		// --- refusals
		"rest-401-bad-credentials.json": {exact: true, want: recAuth, run: recViewer},
		"rest-401-otp-required.json":    {exact: true, want: recAuth, run: recViewer},
		"rest-403-bad-user-agent.json":  {exact: true, want: recAuth, run: recViewer},
		"rest-403-permission-needs-push.json": {exact: true, want: recAuth, run: func(e *recEnv) error {
			ref, m := e.refAt(`^/repos/([^/]+)/([^/]+)/collaborators/([^/]+)/permission$`)
			_, err := e.c.Permission(e.ctx, ref, m[3])
			return err
		}},
		"rest-404-not-found.json": {want: recNotFound, run: func(e *recEnv) error {
			_, err := e.c.CommitsBehind(e.ctx, testRef, "main", "feature")
			return err
		}},
		"rest-404-branch-not-protected.json": {want: recNotFound, run: func(e *recEnv) error {
			_, err := e.c.ListIssueComments(e.ctx, testRef)
			return err
		}},
		"rest-422-validation-failed.json": {want: recInvalid, run: func(e *recEnv) error {
			err := e.c.AddLabels(e.ctx, testRef, "converge")
			if err != nil && !strings.Contains(err.Error(), "Validation Failed") {
				e.t.Errorf("error %q lacks GitHub's message", err)
			}
			return err
		}},
		"rest-422-validation-custom-message.json": {want: recInvalid, run: func(e *recEnv) error {
			_, err := e.c.CreateIssueComment(e.ctx, testRef, "hello")
			if err != nil && !strings.Contains(err.Error(), "key is invalid") {
				e.t.Errorf("error %q lacks GitHub's message", err)
			}
			return err
		}},
		"graphql-not-found.json": {want: recNotFound, run: func(e *recEnv) error {
			id, _ := e.rec.Request.GraphQLVariables["id"].(string)
			return e.c.ResolveThread(e.ctx, testRef, id)
		}},
		"graphql-unprocessable.json": {want: recInvalid, run: func(e *recEnv) error {
			_, err := e.c.ReplyToThread(e.ctx, testRef, "PRRT_kwDOAAABBB4", "Fixed in the next commit.")
			return err
		}},
		"graphql-401-bad-credentials.json": {want: recAuth, run: recObserve},

		// --- rate limits, every shape: waited out as GitHub asks, then
		// rate-limited (never a refusal)
		"rest-403-primary-rate-limit-2013.json":     {want: recRateLimited, wait: recWaitMinute, run: recViewer},
		"rest-403-primary-rate-limit-docs.json":     {exact: true, want: recRateLimited, wait: recWaitReset, run: recViewer},
		"rest-403-secondary-abuse-retry-after.json": {want: recRateLimited, wait: recWaitRetryAfter, run: recListComments},
		"rest-403-secondary-rate-limit-docs.json":   {exact: true, want: recRateLimited, wait: recWaitMinute, run: recCreateComment},
		"graphql-rate-limit-current.json":           {want: recRateLimited, wait: recWaitMinute, run: recObserve},
		"graphql-rate-limited-older.json":           {want: recRateLimited, wait: recWaitMinute, run: recResolveThread},
	}
}

func recViewer(e *recEnv) error {
	_, err := e.c.Viewer(e.ctx)
	return err
}

func recObserve(e *recEnv) error {
	_, err := e.c.Observe(e.ctx, testRef)
	return err
}

func recListComments(e *recEnv) error {
	_, err := e.c.ListIssueComments(e.ctx, testRef)
	return err
}

func recCreateComment(e *recEnv) error {
	ref, _ := e.refAt(`^/repos/([^/]+)/([^/]+)/issues/(\d+)/comments$`)
	_, err := e.c.CreateIssueComment(e.ctx, ref, "Addressed in the next push.")
	return err
}

func recResolveThread(e *recEnv) error {
	return e.c.ResolveThread(e.ctx, testRef, "PRRT_kwDOAAABBB4")
}

// recGraphQLInput is the recorded mutation's input.
func recGraphQLInput(e *recEnv) map[string]any {
	e.t.Helper()
	in, ok := e.rec.Request.GraphQLVariables["input"].(map[string]any)
	if !ok || len(in) == 0 {
		e.t.Fatalf("%s: no recorded input", e.rec.File)
	}
	return in
}

// recSentMutation checks that converge sent its own document doc with
// the recorded input, so the recorded answer answers what it asked.
func recSentMutation(e *recEnv, doc string, in map[string]any) {
	e.t.Helper()
	reqs := e.srv.requests()
	if len(reqs) != 1 {
		e.t.Fatalf("%d requests, want the mutation once", len(reqs))
	}
	var sent struct {
		Query     string `json:"query"`
		Variables struct {
			Input map[string]any `json:"input"`
		} `json:"variables"`
	}
	if err := json.Unmarshal(reqs[0].body, &sent); err != nil {
		e.t.Fatal(err)
	}
	if sent.Query != graphql.Doc(doc) {
		e.t.Errorf("converge sent %q, not its %s document", sent.Query, doc)
	}
	if len(sent.Variables.Input) != len(in) {
		e.t.Errorf("converge sent input %v; the recording's was %v", sent.Variables.Input, in)
	}
	for k, v := range in {
		if sent.Variables.Input[k] != v {
			e.t.Errorf("converge sent %s %v; the recording's was %v", k, sent.Variables.Input[k], v)
		}
	}
}

// recSendRecorded sends the recorded GraphQL document and variables with
// converge's client and decodes the answer into out.
func recSendRecorded(e *recEnv, out any) error {
	e.t.Helper()
	if e.rec.Request.GraphQLDocument == "" {
		e.t.Fatalf("%s: no recorded document", e.rec.File)
	}
	const op = "observe pr"
	if _, err := e.c.graphQL(e.ctx, op, e.rec.Request.GraphQLDocument, e.rec.Request.GraphQLVariables, false, out); err != nil {
		return e.c.readFail(op, err)
	}
	return nil
}

// recIntOrZero is At's number, 0 for null (converge's deref).
func recIntOrZero(t testing.TB, v any, dotted string) int {
	t.Helper()
	switch x := recorded.At(t, v, dotted).(type) {
	case nil:
		return 0
	case float64:
		return int(x)
	default:
		t.Fatalf("%s: %v is neither a number nor null", dotted, x)
		return 0
	}
}

// recThreadsPage reads a recorded page of review threads with converge's
// threadConn and toThread, as Observe and threads_page read theirs.
func recThreadsPage(e *recEnv) error {
	var d struct {
		Node *struct {
			ReviewThreads threadConn `json:"reviewThreads"`
		} `json:"node"`
	}
	if err := recSendRecorded(e, &d); err != nil {
		return err
	}
	if d.Node == nil {
		e.t.Fatal("no pull request read")
	}
	b := e.body()
	const at = "data.node.reviewThreads."
	tc := d.Node.ReviewThreads
	if tc.PageInfo.HasNextPage != recorded.At(e.t, b, at+"pageInfo.hasNextPage").(bool) ||
		tc.PageInfo.EndCursor != recorded.Str(e.t, b, at+"pageInfo.endCursor") {
		e.t.Errorf("page info read as %+v", tc.PageInfo)
	}
	nodes := recorded.At(e.t, b, at+"nodes").([]any)
	if len(nodes) == 0 || len(tc.Nodes) != len(nodes) {
		e.t.Fatalf("%d threads, want the %d recorded", len(tc.Nodes), len(nodes))
	}
	for i, tn := range tc.Nodes {
		th := toThread(tn)
		p := at + "nodes." + strconv.Itoa(i) + "."
		if th.ID != recorded.Str(e.t, b, p+"id") || th.Path != recorded.Str(e.t, b, p+"path") ||
			th.Line != recIntOrZero(e.t, b, p+"line") || th.StartLine != recIntOrZero(e.t, b, p+"startLine") ||
			th.OrigLine != recIntOrZero(e.t, b, p+"originalLine") || th.OrigStart != recIntOrZero(e.t, b, p+"originalStartLine") ||
			th.IsResolved != recorded.At(e.t, b, p+"isResolved").(bool) || th.IsOutdated != recorded.At(e.t, b, p+"isOutdated").(bool) {
			e.t.Errorf("thread %d read as %+v", i, th)
		}
		if tn.Comments.PageInfo.HasNextPage != recorded.At(e.t, b, p+"comments.pageInfo.hasNextPage").(bool) {
			e.t.Errorf("thread %d: comments' hasNextPage read as %v", i, tn.Comments.PageInfo.HasNextPage)
		}
		cms := recorded.At(e.t, b, p+"comments.nodes").([]any)
		if len(cms) == 0 || len(th.Comments) != len(cms) {
			e.t.Fatalf("thread %d: %d comments, want the %d recorded", i, len(th.Comments), len(cms))
		}
		for j, cm := range th.Comments {
			q := p + "comments.nodes." + strconv.Itoa(j) + "."
			created, err := time.Parse(time.RFC3339, recorded.Str(e.t, b, q+"createdAt"))
			if err != nil {
				e.t.Fatal(err)
			}
			if cm.ID != recorded.Str(e.t, b, q+"id") || cm.URL != recorded.Str(e.t, b, q+"url") ||
				cm.Body != recorded.Str(e.t, b, q+"body") || cm.Author != recorded.Str(e.t, b, q+"author.login") ||
				cm.OriginalCommit != recorded.Str(e.t, b, q+"originalCommit.oid") || !cm.CreatedAt.Equal(created) {
				e.t.Errorf("thread %d comment %d read as %+v", i, j, cm)
			}
		}
	}
	return nil
}

// recMergeability reads a recorded PullRequest's mergeability with
// converge's prNode and toPullRequest, and wants GitHub's words to be
// converge's constants m and s.
func recMergeability(m forge.MergeableState, s forge.MergeState) func(*recEnv) error {
	return func(e *recEnv) error {
		var d struct {
			Node *prNode `json:"node"`
		}
		if err := recSendRecorded(e, &d); err != nil {
			return err
		}
		if d.Node == nil {
			e.t.Fatal("no pull request read")
		}
		pr := toPullRequest(testRef, d.Node, nil)
		b := e.body()
		if string(m) != recorded.Str(e.t, b, "data.node.mergeable") || string(s) != recorded.Str(e.t, b, "data.node.mergeStateStatus") {
			e.t.Fatalf("the recording says %v/%v, the case %s/%s", recorded.At(e.t, b, "data.node.mergeable"), recorded.At(e.t, b, "data.node.mergeStateStatus"), m, s)
		}
		if pr.Mergeable != m || pr.MergeState != s || pr.IsDraft != recorded.At(e.t, b, "data.node.isDraft").(bool) {
			e.t.Errorf("read as mergeable %q, merge state %q, draft %v", pr.Mergeable, pr.MergeState, pr.IsDraft)
		}
		return nil
	}
}

func TestREL_4_ClientReadsRecordedGitHubAnswers(t *testing.T) {
	recs := recorded.Load(t, "github")
	cases := recCases()
	for name := range cases {
		if recs[name] == nil {
			t.Errorf("case %s has no recording in the corpus", name)
		}
	}
	names := make([]string, 0, len(recs))
	for name := range recs {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		rec := recs[name]
		t.Run(strings.TrimSuffix(name, ".json"), func(t *testing.T) {
			tc, ok := cases[name]
			if !ok {
				t.Fatalf("no case handles %s: add one, so that every recording is proven", name)
			}
			runRecCase(t, rec, tc)
		})
	}
}

func runRecCase(t *testing.T, rec *recAnswer, tc recCase) {
	srv := newRecServer(t, func(*http.Request) *recAnswer { return rec })
	// The clock starts at the answer's own Date, so a wait until its
	// x-ratelimit-reset is the wait GitHub meant.
	start := httpmock.Date
	if d, err := http.ParseTime(rec.Header("Date")); err == nil {
		start = d
	}
	sl := &sleeps{now: start}
	c, err := New(Options{
		APIURL:     srv.URL + "/api/v3",
		GraphQLURL: srv.URL + "/api/graphql",
		Token:      testToken,
		HTTPClient: srv.Client(),
		// Two attempts, and a limit long enough that every recorded wait
		// is sat out (with the fake clock) rather than handed up.
		Retry: RetryPolicy{MaxAttempts: 2, MaxWait: 48 * time.Hour, Sleep: sl.sleep, Now: sl.clock},
	})
	if err != nil {
		t.Fatal(err)
	}
	c.now = sl.clock
	e := &recEnv{t: t, rec: rec, srv: srv, c: c, sl: sl, ctx: context.Background()}
	err = tc.run(e)

	reqs := srv.requests()
	if len(reqs) == 0 {
		t.Fatal("converge sent no request")
	}
	if tc.exact {
		for _, r := range reqs {
			p := strings.TrimPrefix(r.path, "/api/v3")
			if r.method != rec.Request.Method || !recSamePath(p, rec.Request.Path) {
				t.Errorf("converge sent %s %s; the recording answers %s %s", r.method, p, rec.Request.Method, rec.Request.Path)
			}
		}
	}
	if rec.Request.Path == "/graphql" {
		for _, r := range reqs {
			if r.method != http.MethodPost || r.path != "/api/graphql" {
				t.Errorf("a GraphQL answer served to %s %s", r.method, r.path)
			}
		}
	}

	waits := sl.all()
	if tc.want == recDecoded {
		if err != nil {
			t.Fatalf("converge did not read the recorded answer: %v", err)
		}
		if len(waits) != 0 {
			t.Errorf("waited %v on a good answer", waits)
		}
		return
	}
	if err == nil {
		t.Fatalf("no error, want %s", recOutcomeKind[tc.want])
	}
	if got := forge.KindOf(err); got != recOutcomeKind[tc.want] {
		t.Fatalf("read as %s (%v), want %s", got, err, recOutcomeKind[tc.want])
	}
	if strings.Contains(err.Error(), testToken) {
		t.Errorf("error says the token: %v", err)
	}
	if tc.want != recRateLimited {
		if len(waits) != 0 || len(reqs) != 1 {
			t.Errorf("a refusal was retried: %d requests, waits %v", len(reqs), waits)
		}
		return
	}
	// A rate limit is waited out as asked and asked again (a write too:
	// it was refused before it ran), never taken for a refusal.
	if len(reqs) != 2 {
		t.Errorf("%d requests, want the limit waited out and the request sent again", len(reqs))
	}
	if want := tc.wait(&recEnv{t: t, rec: rec}); len(waits) == 0 || waits[0] != want {
		t.Errorf("waited %v, want %v first (as the recorded headers ask)", waits, want)
	}
}

// samePath compares decoded paths: converge and the recording may escape
// a label's punctuation differently.
func recSamePath(a, b string) bool {
	ua, err1 := url.PathUnescape(a)
	ub, err2 := url.PathUnescape(b)
	return err1 == nil && err2 == nil && path.Clean(ua) == path.Clean(ub)
}
