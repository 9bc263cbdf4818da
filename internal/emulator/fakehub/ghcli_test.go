package fakehub

import (
	"encoding/json"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/convergeloop/converge/internal/testutil/ghschema"
)

// TestGhCLI_PRViewAgainstEmulator runs the real gh CLI against the https
// emulator as an Enterprise host.
func TestGhCLI_PRViewAgainstEmulator(t *testing.T) {
	t.Parallel()
	ghPath, err := exec.LookPath("gh")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("gh CLI not on PATH under CI=true: install gh")
		}
		t.Skip("gh CLI not on PATH")
	}
	h := newHub(t, Options{})
	n := seedPR(t, h, RepoOptions{})
	p := h.prForTest(t, "acme", "widget", n)
	tok := h.Tokens()
	st, body := do(t, h, tok.Reviewer, "POST", h.APIURL()+"/repos/acme/widget/pulls/1/reviews", map[string]any{"event": "APPROVE", "body": "LGTM"})
	if st != 200 {
		t.Fatalf("review: %d %s", st, body)
	}
	st, body = do(t, h, tok.CI, "POST", h.APIURL()+"/repos/acme/widget/check-runs", map[string]any{"name": "build", "head_sha": p.headSHA, "conclusion": "success"})
	if st != 201 {
		t.Fatalf("check run: %d %s", st, body)
	}
	st, body = do(t, h, tok.Author, "POST", h.APIURL()+"/repos/acme/widget/statuses/"+p.headSHA, map[string]any{"state": "pending", "context": "lint"})
	if st != 201 {
		t.Fatalf("status: %d %s", st, body)
	}
	mergeabilitySettles(h)

	type view struct {
		HeadRefOid       string
		MergeStateStatus string
		Reviews          []struct {
			Author      struct{ Login string }
			State, Body string
		}
		StatusCheckRollup []struct {
			Typename   string `json:"__typename"`
			Name       string
			Context    string
			Status     string
			Conclusion string
			State      string
		}
	}
	cfg := t.TempDir()
	ghView := func() view {
		t.Helper()
		ctx := t.Context()
		cmd := exec.CommandContext(ctx, ghPath, "pr", "view", strconv.Itoa(n), "-R", h.Host()+"/acme/widget",
			"--json", "headRefOid,reviews,statusCheckRollup,mergeStateStatus")
		cmd.Env = append(os.Environ(), "GH_ENTERPRISE_TOKEN="+tok.Author, "GH_HOST="+h.Host(), "SSL_CERT_FILE="+h.CAFile(),
			"GH_CONFIG_DIR="+cfg, "GH_NO_UPDATE_NOTIFIER=1", "GH_PROMPT_DISABLED=1", "NO_COLOR=1", "GH_TOKEN=", "GITHUB_TOKEN=")
		out, err := cmd.Output()
		if err != nil {
			var stderr []byte
			if ee, ok := err.(*exec.ExitError); ok {
				stderr = ee.Stderr
			}
			t.Fatalf("gh pr view: %v\n%s\n%s", err, out, stderr)
		}
		var v view
		if err := json.Unmarshal(out, &v); err != nil {
			t.Fatalf("gh output: %v\n%s", err, out)
		}
		return v
	}
	v := ghView()
	if v.HeadRefOid != p.headSHA {
		t.Errorf("headRefOid %s, want %s", v.HeadRefOid, p.headSHA)
	}
	// Mergeable, but the lint status is pending: UNSTABLE, as GitHub says
	// until every check and status is green (TestREL_4_PendingChecksAreUnstable).
	if v.MergeStateStatus != "UNSTABLE" {
		t.Errorf("mergeStateStatus %s, want UNSTABLE (a pending status)", v.MergeStateStatus)
	}
	if len(v.Reviews) != 1 || v.Reviews[0].Author.Login != LoginReviewer || v.Reviews[0].State != "APPROVED" || v.Reviews[0].Body != "LGTM" {
		t.Errorf("reviews %+v", v.Reviews)
	}
	if len(v.StatusCheckRollup) != 2 ||
		v.StatusCheckRollup[0].Typename != "CheckRun" || v.StatusCheckRollup[0].Name != "build" || v.StatusCheckRollup[0].Conclusion != "SUCCESS" ||
		v.StatusCheckRollup[1].Typename != "StatusContext" || v.StatusCheckRollup[1].Context != "lint" || v.StatusCheckRollup[1].State != "PENDING" {
		t.Errorf("statusCheckRollup %+v", v.StatusCheckRollup)
	}

	sha, err := h.PushFiles("acme", "widget", "feature/greet", map[string]string{"NOTES.md": "more\n"}, "Add notes")
	if err != nil {
		t.Fatal(err)
	}
	if v := ghView(); v.HeadRefOid != sha || len(v.StatusCheckRollup) != 0 {
		t.Errorf("after push: headRefOid %s (want %s), rollup %+v", v.HeadRefOid, sha, v.StatusCheckRollup)
	}
}

// ghPRViewQuery is the query gh 2.23.0 sends for
// `gh pr view N --json headRefOid,reviews,statusCheckRollup,mergeStateStatus`
// (captured from the emulator's debug log), so the emulator's fidelity to it
// is checked even where gh is not installed.
const ghPRViewQuery = `
	query PullRequestByNumber($owner: String!, $repo: String!, $pr_number: Int!) {
		repository(owner: $owner, name: $repo) {
			pullRequest(number: $pr_number) {headRefOid,reviews(first: 100) {nodes {id,author{login},authorAssociation,submittedAt,body,state,commit{oid},reactionGroups{content,users{totalCount}}}pageInfo{hasNextPage,endCursor}totalCount},statusCheckRollup: commits(last: 1) {nodes {commit {statusCheckRollup {contexts(first:100) {nodes {__typename...on StatusContext {context,state,targetUrl,createdAt},...on CheckRun {name,checkSuite{workflowRun{workflow{name}}},status,conclusion,startedAt,completedAt,detailsUrl}},pageInfo{hasNextPage,endCursor}}}}}},mergeStateStatus,id,number}
		}
	}`

func TestGhCLI_QueryIsValidAndServed(t *testing.T) {
	t.Parallel()
	github := ghschema.Load(t)
	if err := ghschema.ValidateDocument(github, ghPRViewQuery); err != nil {
		t.Fatalf("gh's query against GitHub's schema: %v", err)
	}
	h := newHub(t, Options{})
	n := seedPR(t, h, RepoOptions{})
	mergeabilitySettles(h)
	r := gql(t, h, h.Tokens().Author, ghPRViewQuery, map[string]any{"owner": "acme", "repo": "widget", "pr_number": n})
	if len(r.Errors) > 0 || !strings.Contains(string(r.Data), `"mergeStateStatus":"CLEAN"`) {
		t.Errorf("gh's query: %s %v", r.Data, r.Errors)
	}
}
