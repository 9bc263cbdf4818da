package fakehub

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-github/v93/github"
)

// mergeabilitySettles lets GitHub's background mergeability job finish
// for every change so far, by the hub's clock.
func mergeabilitySettles(h *Hub) { h.AdvanceClock(DefaultMergeabilityDelay) }

// getJSON GETs url with token and decodes the answer; it returns the
// status and the ETag.
func getJSON(t *testing.T, h *Hub, token, url string, into any, hdr ...string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), "GET", url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "token "+token)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := h.HTTPClient().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if into != nil && resp.StatusCode == 200 {
		if err := json.NewDecoder(resp.Body).Decode(into); err != nil {
			t.Fatalf("GET %s: %v", url, err)
		}
	}
	return resp.StatusCode, resp.Header.Get("ETag")
}

var hex40 = regexp.MustCompile(`^[0-9a-f]{40}$`)

// TestREL_4_PRAnswerCarriesRepositoryWideFields: GET pulls/{n} (and the
// list) carries its repository in base.repo and head.repo with the facts
// GitHub keeps there — pushed_at, updated_at, size, open_issues_count,
// stargazers_count, watchers_count, forks_count — and merge_commit_sha, so
// the PR's ETag moves when anything in the repository moves: a push to
// another branch, a new issue or PR, a star. Nothing else moves it.
func TestREL_4_PRAnswerCarriesRepositoryWideFields(t *testing.T) {
	t.Parallel()
	h := newHub(t, Options{})
	n := seedPR(t, h, RepoOptions{})
	mergeabilitySettles(h)
	tok := h.Tokens().Author
	pull := h.APIURL() + "/repos/acme/widget/pulls/1"
	read := func() (map[string]any, string) {
		t.Helper()
		var m map[string]any
		if st, etag := getJSON(t, h, tok, pull, &m); st == 200 {
			return m, etag
		}
		t.Fatal("GET pull: not 200")
		return nil, ""
	}
	pr, etag := read()
	if _, ok := pr["merge_commit_sha"]; !ok {
		t.Error("no merge_commit_sha in the PR's answer")
	} else if s, _ := pr["merge_commit_sha"].(string); !hex40.MatchString(s) {
		t.Errorf("merge_commit_sha %v: want the test merge commit of a mergeable PR", pr["merge_commit_sha"])
	}
	for _, side := range []string{"base", "head"} {
		rp, _ := pr[side].(map[string]any)["repo"].(map[string]any)
		for _, k := range []string{"pushed_at", "updated_at", "created_at", "size", "open_issues_count", "open_issues",
			"stargazers_count", "watchers_count", "watchers", "forks_count", "forks", "default_branch", "full_name"} {
			if _, ok := rp[k]; !ok {
				t.Errorf("%s.repo lacks %s", side, k)
			}
		}
		if rp["open_issues_count"] != float64(1) {
			t.Errorf("%s.repo.open_issues_count %v, want 1 (the PR)", side, rp["open_issues_count"])
		}
	}
	var list []map[string]any
	getJSON(t, h, tok, h.APIURL()+"/repos/acme/widget/pulls", &list)
	if len(list) != 1 || list[0]["base"].(map[string]any)["repo"].(map[string]any)["pushed_at"] == nil {
		t.Errorf("the list's PRs lack their repository's pushed_at: %v", list)
	}
	var full map[string]any
	getJSON(t, h, tok, h.APIURL()+"/repos/acme/widget", &full)
	if full["pushed_at"] == nil || full["open_issues_count"] != float64(1) {
		t.Errorf("GET repo: pushed_at %v, open_issues_count %v", full["pushed_at"], full["open_issues_count"])
	}

	if _, again := read(); again != etag {
		t.Fatalf("nothing moved, yet the ETag did: %s → %s", etag, again)
	}
	moves := []struct {
		what string
		do   func() error
	}{
		{"a push to another branch", func() error {
			_, err := h.PushFiles("acme", "widget", "docs/notes", map[string]string{"NOTES.md": "notes\n"}, "Notes")
			return err
		}},
		{"a new issue", func() error { _, err := h.CreateIssue("acme", "widget", "A bug"); return err }},
		{"a new PR", func() error {
			_, err := h.CreatePR("acme", "widget", NewPR{Head: "other", Title: "Other", Files: map[string]string{"other.txt": "x\n"}})
			return err
		}},
		{"a star", func() error { return h.Star("acme", "widget") }},
	}
	for _, m := range moves {
		h.AdvanceClock(time.Second) // GitHub's timestamps are to the second
		if err := m.do(); err != nil {
			t.Fatal(err)
		}
		pr, next := read()
		if next == etag {
			t.Errorf("after %s the PR's ETag did not move", m.what)
		}
		etag = next
		if m.what == "a star" && pr["base"].(map[string]any)["repo"].(map[string]any)["stargazers_count"] != float64(1) {
			t.Errorf("after a star: stargazers_count %v", pr["base"].(map[string]any)["repo"].(map[string]any)["stargazers_count"])
		}
	}
	st, _ := h.PR("acme", "widget", n)
	if got := pr["head"].(map[string]any)["sha"]; got != st.HeadSHA {
		t.Errorf("head sha %v, want %s", got, st.HeadSHA)
	}
	if pr, _ := read(); pr["base"].(map[string]any)["repo"].(map[string]any)["open_issues_count"] != float64(3) {
		t.Errorf("open_issues_count %v, want 3: two PRs and an issue", pr["base"].(map[string]any)["repo"].(map[string]any)["open_issues_count"])
	}
}

// mergeFields reads mergeable and mergeStateStatus in one GraphQL request.
func mergeFields(t *testing.T, h *Hub, n int) (string, string) {
	t.Helper()
	r := gql(t, h, h.Tokens().Author, `query($n: Int!) { repository(owner: "acme", name: "widget") { pullRequest(number: $n) { mergeable mergeStateStatus again: mergeable } } }`, map[string]any{"n": n})
	var got struct {
		Repository struct {
			PullRequest struct{ Mergeable, MergeStateStatus, Again string }
		}
	}
	if err := json.Unmarshal(r.Data, &got); err != nil || len(r.Errors) > 0 {
		t.Fatal(err, r.Errors)
	}
	p := got.Repository.PullRequest
	if p.Again != p.Mergeable {
		t.Fatalf("one request read mergeable twice and got %s then %s", p.Mergeable, p.Again)
	}
	return p.Mergeable, p.MergeStateStatus
}

// TestREL_4_MergeabilityIsComputedLazily: right after a PR is opened or
// pushed to, GitHub has not computed its mergeability: REST says
// mergeable null, mergeable_state "unknown" and merge_commit_sha null,
// GraphQL mergeable and mergeStateStatus UNKNOWN (both, within one
// request). A later request finds it computed; so does any read once the
// background job's time has passed on the hub's clock.
func TestREL_4_MergeabilityIsComputedLazily(t *testing.T) {
	t.Parallel()
	h := newHub(t, Options{})
	h.FreezeClock() // only AdvanceClock lets the job's time pass
	n := seedPR(t, h, RepoOptions{})
	tok := h.Tokens().Author
	pull := h.APIURL() + "/repos/acme/widget/pulls/1"
	var first, second map[string]any
	_, e1 := getJSON(t, h, tok, pull, &first)
	if first["mergeable"] != nil || first["mergeable_state"] != "unknown" || first["merge_commit_sha"] != nil || first["rebaseable"] != nil {
		t.Errorf("the first read after opening: mergeable %v, mergeable_state %v, merge_commit_sha %v: want null, unknown, null",
			first["mergeable"], first["mergeable_state"], first["merge_commit_sha"])
	}
	_, e2 := getJSON(t, h, tok, pull, &second)
	if second["mergeable"] != true || second["mergeable_state"] != "clean" || !hex40.MatchString(second["merge_commit_sha"].(string)) {
		t.Errorf("a later read: mergeable %v, mergeable_state %v, merge_commit_sha %v: want true, clean, a sha",
			second["mergeable"], second["mergeable_state"], second["merge_commit_sha"])
	}
	if e1 == e2 {
		t.Error("the computed mergeability did not move the ETag")
	}

	// A push to the head: GraphQL's first request says UNKNOWN, the next
	// the value.
	if _, err := h.PushFiles("acme", "widget", "feature/greet", map[string]string{"NOTES.md": "n\n"}, "Notes"); err != nil {
		t.Fatal(err)
	}
	if m, s := mergeFields(t, h, n); m != "UNKNOWN" || s != "UNKNOWN" {
		t.Errorf("the first read after a push: %s %s, want UNKNOWN UNKNOWN", m, s)
	}
	if m, s := mergeFields(t, h, n); m != "MERGEABLE" || s != "CLEAN" {
		t.Errorf("the next read: %s %s, want MERGEABLE CLEAN", m, s)
	}
	// A push to the base that conflicts, then the job's time passes
	// before anyone reads: the first read has the value.
	if _, err := h.PushFiles("acme", "widget", "main", map[string]string{"main.go": "package main\n\nfunc main() {}\n"}, "Conflict"); err != nil {
		t.Fatal(err)
	}
	mergeabilitySettles(h)
	if m, s := mergeFields(t, h, n); m != "CONFLICTING" || s != "DIRTY" {
		t.Errorf("a read after the job's time: %s %s, want CONFLICTING DIRTY", m, s)
	}
	var third map[string]any
	getJSON(t, h, tok, pull, &third)
	if third["mergeable"] != false || third["mergeable_state"] != "dirty" || third["merge_commit_sha"] != nil {
		t.Errorf("REST on a conflict: mergeable %v, mergeable_state %v, merge_commit_sha %v", third["mergeable"], third["mergeable_state"], third["merge_commit_sha"])
	}
}

// setStatus posts a commit status on the PR's head as CI.
func setStatus(t *testing.T, h *Hub, sha, state, ctx string) {
	t.Helper()
	if st, body := do(t, h, h.Tokens().CI, "POST", h.APIURL()+"/repos/acme/widget/statuses/"+sha, map[string]any{"state": state, "context": ctx}); st != 201 {
		t.Fatalf("status: %d %s", st, body)
	}
}

// TestREL_4_PendingChecksAreUnstable: a mergeable PR is CLEAN only when
// every check run and status on its head is green; one pending or
// failing makes it UNSTABLE (mergeable_state "unstable"), as on GitHub.
func TestREL_4_PendingChecksAreUnstable(t *testing.T) {
	t.Parallel()
	h := newHub(t, Options{})
	n := seedPR(t, h, RepoOptions{})
	mergeabilitySettles(h)
	head := h.prForTest(t, "acme", "widget", n).headSHA
	want := func(when, status string) {
		t.Helper()
		if m, s := mergeFields(t, h, n); m != "MERGEABLE" || s != status {
			t.Errorf("%s: %s %s, want MERGEABLE %s", when, m, s, status)
		}
		var p map[string]any
		getJSON(t, h, h.Tokens().Author, h.APIURL()+"/repos/acme/widget/pulls/1", &p)
		if p["mergeable_state"] != strings.ToLower(status) {
			t.Errorf("%s: REST mergeable_state %v, want %s", when, p["mergeable_state"], strings.ToLower(status))
		}
	}
	want("no checks", "CLEAN")
	setStatus(t, h, head, "pending", "lint")
	want("a pending status", "UNSTABLE")
	setStatus(t, h, head, "success", "lint")
	want("every status green", "CLEAN")
	if st, body := do(t, h, h.Tokens().CI, "POST", h.APIURL()+"/repos/acme/widget/check-runs", map[string]any{"name": "build", "head_sha": head, "status": "in_progress"}); st != 201 {
		t.Fatalf("check run: %d %s", st, body)
	}
	want("a check run in progress", "UNSTABLE")
	setStatus(t, h, head, "failure", "lint")
	want("a failed status", "UNSTABLE")
}

// TestREL_4_ReviewRuleBlocksUntilApproved: under branch protection's
// review rule (RepoOptions.RequiredApprovals) a PR without enough
// approvals is BLOCKED, and its review decision REVIEW_REQUIRED; without
// the rule GitHub gives no review decision at all (null), approved or
// not, and reviews never block. The decision is reviewDecision's, which
// GraphQL's PullRequest.reviewDecision (resolvers_gh.go) is to answer.
func TestREL_4_ReviewRuleBlocksUntilApproved(t *testing.T) {
	t.Parallel()
	approve := func(h *Hub, event string) {
		t.Helper()
		if st, body := do(t, h, h.Tokens().Reviewer, "POST", h.APIURL()+"/repos/acme/widget/pulls/1/reviews", map[string]any{"event": event, "body": "ok"}); st != 200 {
			t.Fatalf("review: %d %s", st, body)
		}
	}
	// As a client reads it: GraphQL's PullRequest.reviewDecision.
	decision := func(h *Hub) string {
		t.Helper()
		r := gql(t, h, h.Tokens().Reviewer, `query { repository(owner: "acme", name: "widget") { pullRequest(number: 1) { reviewDecision } } }`, nil)
		var d struct {
			Repository struct {
				PullRequest struct {
					ReviewDecision *string `json:"reviewDecision"`
				} `json:"pullRequest"`
			} `json:"repository"`
		}
		if len(r.Errors) > 0 || json.Unmarshal(r.Data, &d) != nil {
			t.Fatalf("reviewDecision: %v %s", r.Errors, r.Data)
		}
		if p := d.Repository.PullRequest.ReviewDecision; p != nil {
			return *p
		}
		return "null"
	}

	free := newHub(t, Options{})
	n := seedPR(t, free, RepoOptions{})
	mergeabilitySettles(free)
	approve(free, "APPROVE")
	if d := decision(free); d != "null" {
		t.Errorf("no review rule, approved: reviewDecision %s, want null", d)
	}
	approve(free, "REQUEST_CHANGES")
	if _, s := mergeFields(t, free, n); s != "CLEAN" || decision(free) != "null" {
		t.Errorf("no review rule, changes requested: %s, reviewDecision %s; want CLEAN, null", s, decision(free))
	}

	ruled := newHub(t, Options{})
	n = seedPR(t, ruled, RepoOptions{RequiredApprovals: 1})
	mergeabilitySettles(ruled)
	if _, s := mergeFields(t, ruled, n); s != "BLOCKED" || decision(ruled) != "REVIEW_REQUIRED" {
		t.Errorf("review rule, no review: %s, reviewDecision %s; want BLOCKED, REVIEW_REQUIRED", s, decision(ruled))
	}
	approve(ruled, "APPROVE")
	if _, s := mergeFields(t, ruled, n); s != "CLEAN" || decision(ruled) != "APPROVED" {
		t.Errorf("review rule, approved: %s, reviewDecision %s; want CLEAN, APPROVED", s, decision(ruled))
	}
	approve(ruled, "REQUEST_CHANGES")
	if _, s := mergeFields(t, ruled, n); s != "BLOCKED" || decision(ruled) != "CHANGES_REQUESTED" {
		t.Errorf("review rule, changes requested: %s, reviewDecision %s; want BLOCKED, CHANGES_REQUESTED", s, decision(ruled))
	}
}

// TestREL_4_ContentsAndCompareFiles: GET contents/{path}?ref= answers a
// file (base64 content in 60-character lines, its blob sha, size, type
// "file"), a directory (an array), 404 when missing, and the raw bytes
// with the raw media type; compare lists the changed files with status,
// counts and patch. go-github reads both.
func TestREL_4_ContentsAndCompareFiles(t *testing.T) {
	t.Parallel()
	h := newHub(t, Options{})
	n := seedPR(t, h, RepoOptions{})
	if _, err := h.PushFiles("acme", "widget", "main", map[string]string{"pkg/util.go": "package pkg\n", "pkg/deep/x.txt": strings.Repeat("long line of text ", 10) + "\n"}, "Pkg"); err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	tok := h.Tokens().Author
	gh := ghClient(t, h, tok)
	p := h.prForTest(t, "acme", "widget", n)
	h.mu.RLock()
	dir := p.repo.dir
	h.mu.RUnlock()
	blob, _ := runGit(ctx, dir, nil, nil, "rev-parse", "feature/greet:main.go")
	head, _ := fileAt(ctx, dir, "feature/greet", "main.go")

	var f map[string]any
	if st, _ := getJSON(t, h, tok, h.APIURL()+"/repos/acme/widget/contents/main.go?ref=feature/greet", &f); st != 200 {
		t.Fatalf("GET contents/main.go: %d", st)
	}
	raw, err := base64.StdEncoding.DecodeString(strings.ReplaceAll(f["content"].(string), "\n", ""))
	if f["type"] != "file" || f["encoding"] != "base64" || err != nil || string(raw) != head || f["sha"] != blob ||
		f["size"] != float64(len(head)) || f["name"] != "main.go" || f["path"] != "main.go" {
		t.Errorf("contents/main.go at the head: %v (decoded %q, %v), want the head's file, blob %s", f, raw, err, blob)
	}
	var long map[string]any
	getJSON(t, h, tok, h.APIURL()+"/repos/acme/widget/contents/pkg/deep/x.txt", &long)
	for _, l := range strings.Split(strings.TrimSuffix(long["content"].(string), "\n"), "\n") {
		if len(l) > 60 {
			t.Errorf("a base64 line of %d characters, GitHub writes 60", len(l))
		}
	}
	if !strings.HasSuffix(long["content"].(string), "\n") {
		t.Error("base64 content does not end in a newline")
	}
	fc, dc, _, err := gh.Repositories.GetContents(ctx, "acme", "widget", "main.go", nil)
	if err != nil || dc != nil {
		t.Fatalf("go-github file: %v %v", err, dc)
	}
	if s, _ := fc.GetContent(); !strings.Contains(s, `println("hello")`) || strings.Contains(s, "bye") {
		t.Errorf("main.go on the default branch: %q", s)
	}
	_, root, _, err := gh.Repositories.GetContents(ctx, "acme", "widget", "", nil)
	var names []string
	for _, e := range root {
		names = append(names, e.GetName()+":"+e.GetType())
	}
	sort.Strings(names)
	if err != nil || strings.Join(names, " ") != "go.mod:file lib.go:file main.go:file pkg:dir" {
		t.Errorf("root listing: %v %v", names, err)
	}
	_, sub, _, err := gh.Repositories.GetContents(ctx, "acme", "widget", "pkg", &github.RepositoryContentGetOptions{Ref: "main"})
	if err != nil || len(sub) != 2 || sub[0].GetPath() != "pkg/deep" || sub[0].GetType() != "dir" || sub[1].GetPath() != "pkg/util.go" || sub[1].GetSize() != len("package pkg\n") {
		t.Errorf("pkg listing: %v %v", sub, err)
	}
	for _, missing := range []string{"nope.go", "pkg/nope", "main.go?ref=no-such-branch"} {
		if st, _ := getJSON(t, h, tok, h.APIURL()+"/repos/acme/widget/contents/"+missing, nil); st != 404 {
			t.Errorf("contents/%s: %d, want 404", missing, st)
		}
	}
	req, _ := http.NewRequestWithContext(ctx, "GET", h.APIURL()+"/repos/acme/widget/contents/lib.go", nil)
	req.Header.Set("Authorization", "token "+tok)
	req.Header.Set("Accept", "application/vnd.github.raw")
	resp, err := h.HTTPClient().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if want, _ := fileAt(ctx, dir, "main", "lib.go"); resp.StatusCode != 200 || string(b) != want {
		t.Errorf("raw lib.go: %d %q", resp.StatusCode, b)
	}

	cmp, _, err := gh.Repositories.CompareCommits(ctx, "acme", "widget", p.baseSHA, p.headSHA, nil)
	if err != nil || len(cmp.Files) != 1 {
		t.Fatalf("compare files: %v %v", cmp, err)
	}
	cf := cmp.Files[0]
	if cf.GetFilename() != "main.go" || cf.GetStatus() != "modified" || cf.GetAdditions() != 2 || cf.GetDeletions() != 1 || cf.GetChanges() != 3 ||
		!strings.Contains(cf.GetPatch(), "+\tprintln(\"bye\")") || cf.GetSHA() != blob {
		t.Errorf("compare's file: %+v", cf)
	}
	// A three-dot compare from main (which moved) lists only the head's
	// changes since the merge base.
	if cmp, _, err := gh.Repositories.CompareCommits(ctx, "acme", "widget", "main", "feature/greet", nil); err != nil || len(cmp.Files) != 1 || cmp.Files[0].GetFilename() != "main.go" {
		t.Errorf("compare main...feature/greet: %v %v", cmp, err)
	}
}

// TestREL_4_RefsWithSlashesResolve: GET commits/{ref}/status, /statuses
// and /check-runs take a branch whose name has slashes, escaped or not,
// as GitHub does.
func TestREL_4_RefsWithSlashesResolve(t *testing.T) {
	t.Parallel()
	h := newHub(t, Options{})
	n := seedPR(t, h, RepoOptions{})
	head := h.prForTest(t, "acme", "widget", n).headSHA
	setStatus(t, h, head, "success", "lint")
	if st, body := do(t, h, h.Tokens().CI, "POST", h.APIURL()+"/repos/acme/widget/check-runs", map[string]any{"name": "build", "head_sha": head, "conclusion": "success"}); st != 201 {
		t.Fatalf("check run: %d %s", st, body)
	}
	tok := h.Tokens().Author
	for _, ref := range []string{"feature/greet", "feature%2Fgreet", head} {
		var combined struct {
			State, SHA string
			Statuses   []any
		}
		if st, _ := getJSON(t, h, tok, h.APIURL()+"/repos/acme/widget/commits/"+ref+"/status", &combined); st != 200 || combined.SHA != head || combined.State != "success" || len(combined.Statuses) != 1 {
			t.Errorf("commits/%s/status: %d %+v", ref, st, combined)
		}
		var list []any
		if st, _ := getJSON(t, h, tok, h.APIURL()+"/repos/acme/widget/commits/"+ref+"/statuses", &list); st != 200 || len(list) != 1 {
			t.Errorf("commits/%s/statuses: %d %v", ref, st, list)
		}
		var runs struct {
			TotalCount int `json:"total_count"`
		}
		if st, _ := getJSON(t, h, tok, h.APIURL()+"/repos/acme/widget/commits/"+ref+"/check-runs", &runs); st != 200 || runs.TotalCount != 1 {
			t.Errorf("commits/%s/check-runs: %d %+v", ref, st, runs)
		}
	}
	gh := ghClient(t, h, tok)
	if cs, _, err := gh.Repositories.GetCombinedStatus(t.Context(), "acme", "widget", "feature/greet", nil); err != nil || cs.GetSHA() != head {
		t.Errorf("go-github combined status of feature/greet: %v %v", cs, err)
	}
	if st, _ := getJSON(t, h, tok, h.APIURL()+"/repos/acme/widget/commits/no/such/branch/status", nil); st == 200 {
		t.Error("an unknown ref with slashes answered 200")
	}
}

// TestREL_4_CopilotRealProfile: under the real profile Copilot starts a
// requested review 30 s later (copilot_work_started; until then it is only
// requested) and posts it 2 minutes after that, by the hub's clock; the
// events' and the review's times say so.
func TestREL_4_CopilotRealProfile(t *testing.T) {
	t.Parallel()
	h := newHub(t, Options{CopilotProfile: CopilotProfileReal})
	n := seedPR(t, h, RepoOptions{})
	p := h.prForTest(t, "acme", "widget", n)
	events, cancel := h.Subscribe()
	defer cancel()
	requested := h.now()
	requestCopilot(t, h, p)

	gh := ghClient(t, h, h.Tokens().Author)
	evs, _, err := gh.Issues.ListIssueEvents(t.Context(), "acme", "widget", n, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range evs {
		if e.GetEvent() == "copilot_work_started" {
			t.Fatal("Copilot started at once under the real profile")
		}
	}
	if st, _ := h.PR("acme", "widget", n); len(st.Requested) != 1 || st.Reviews != 0 {
		t.Fatalf("before the start: requested %v, %d reviews", st.Requested, st.Reviews)
	}

	h.AdvanceClock(RealCopilotStartDelay)
	started := waitFor(t, events, 10*time.Second, func(ev Event) bool { return ev.Kind == "copilot_started" })
	if d := started.At.Sub(requested); d < RealCopilotStartDelay {
		t.Errorf("started %s after the request, want %s", d, RealCopilotStartDelay)
	}
	if st, _ := h.PR("acme", "widget", n); st.Reviews != 0 {
		t.Fatal("the review came with the start")
	}
	h.AdvanceClock(RealCopilotReviewDelay)
	waitFor(t, events, 10*time.Second, func(ev Event) bool { return ev.Kind == "copilot_finished" })
	st, _ := h.PR("acme", "widget", n)
	if len(st.ReviewList) != 1 || st.ReviewList[0].Author != LoginCopilot {
		t.Fatalf("after the review delay: %+v", st.ReviewList)
	}
	if d := st.ReviewList[0].SubmittedAt.Sub(started.At); d < RealCopilotReviewDelay {
		t.Errorf("review posted %s after the start, want %s", d, RealCopilotReviewDelay)
	}

	// The fast profile (the default) starts at once.
	fast := newHub(t, Options{CopilotDelay: time.Hour})
	n = seedPR(t, fast, RepoOptions{})
	requestCopilot(t, fast, fast.prForTest(t, "acme", "widget", n))
	fevs, _, err := ghClient(t, fast, fast.Tokens().Author).Issues.ListIssueEvents(context.Background(), "acme", "widget", n, nil)
	if err != nil || len(fevs) == 0 || fevs[len(fevs)-1].GetEvent() != "copilot_work_started" {
		t.Errorf("fast profile: %v %v", fevs, err)
	}
	if _, err := New(Options{CopilotProfile: "slow"}); err == nil {
		t.Error("an unknown Copilot profile was accepted")
	}
}
