package fakelab

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/convergeloop/converge/internal/testutil/jsonshape"
	"github.com/convergeloop/converge/internal/testutil/recorded"
)

// labShapeCases are the recorded GitLab answers the emulator is held to:
// the request the emulator is sent for each (its project grp/sub/proj,
// merge request {iid}, its head {head}), and the differences of shape left,
// each with why it cannot matter. A difference not listed fails the test,
// and so does one listed that no longer occurs.
var labShapeCases = []struct {
	file, method, path string
	body               any
	known              map[string]string
}{
	{file: "rest-get-merge-request-200.json", method: "GET", path: "projects/{project}/merge_requests/{iid}"},
	{file: "rest-get-merge-request-unchecked-200.json", method: "GET", path: "projects/{project}/merge_requests/{iid}"},
	{file: "rest-list-project-merge-requests-200.json", method: "GET", path: "projects/{project}/merge_requests"},
	{file: "rest-get-merge-request-commits-200.json", method: "GET", path: "projects/{project}/merge_requests/{iid}/commits"},
	{file: "rest-get-merge-request-versions-200.json", method: "GET", path: "projects/{project}/merge_requests/{iid}/versions"},
	{file: "rest-get-merge-request-approvals-200.json", method: "GET", path: "projects/{project}/merge_requests/{iid}/approvals"},
	{file: "rest-get-merge-request-reviewers-200.json", method: "GET", path: "projects/{project}/merge_requests/{iid}/reviewers"},
	{file: "rest-list-merge-request-discussions-200.json", method: "GET", path: "projects/{project}/merge_requests/{iid}/discussions"},
	{file: "rest-list-merge-request-label-events-200.json", method: "GET", path: "projects/{project}/merge_requests/{iid}/resource_label_events"},
	{file: "rest-list-commit-statuses-200.json", method: "GET", path: "projects/{project}/repository/commits/{head}/statuses"},
	{file: "rest-create-commit-status-201.json", method: "POST", path: "projects/{project}/statuses/{head}", body: map[string]any{"state": "success", "name": "converge", "description": "ok"}},
	{file: "rest-compare-200.json", method: "GET", path: "projects/{project}/repository/compare?from=main&to=feature"},
	{file: "rest-get-member-all-200.json", method: "GET", path: "projects/{project}/members/all/{author}"},
	{file: "rest-get-user-200.json", method: "GET", path: "user"},
	{file: "rest-list-users-by-username-200.json", method: "GET", path: "users?username=lab-author"},
}

// TestREL_4_LabAnswersHaveTheRecordedShape: for each recorded GitLab
// answer above, the emulator's answer to the same request has the same
// status and the recording's shape, but for the differences listed.
func TestREL_4_LabAnswersHaveTheRecordedShape(t *testing.T) {
	t.Parallel()
	l, iid := seeded(t, Options{}, ProjectOptions{})
	tok := l.Tokens().Author
	send := func(method, path string, in any) (int, []byte) {
		var rd io.Reader
		if in != nil {
			b, _ := json.Marshal(in)
			rd = bytes.NewReader(b)
		}
		req, err := http.NewRequestWithContext(t.Context(), method, l.APIURL()+"/"+path, rd)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("PRIVATE-TOKEN", tok)
		if in != nil {
			req.Header.Set("Content-Type", "application/json")
		}
		resp, err := l.HTTPClient().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, b
	}
	project := strings.ReplaceAll(testProject, "/", "%2F")
	_, mr := send("GET", fmt.Sprintf("projects/%s/merge_requests/%d", project, iid), nil)
	var m struct {
		SHA    string `json:"sha"`
		Author struct {
			ID int `json:"id"`
		} `json:"author"`
	}
	if err := json.Unmarshal(mr, &m); err != nil || m.SHA == "" {
		t.Fatalf("the merge request: %v %s", err, mr)
	}
	// Something for the lists to hold.
	send("POST", fmt.Sprintf("projects/%s/merge_requests/%d/discussions", project, iid), map[string]any{"body": "a thread"})
	send("POST", fmt.Sprintf("projects/%s/statuses/%s", project, m.SHA), map[string]any{"state": "success", "name": "lint"})
	send("PUT", fmt.Sprintf("projects/%s/merge_requests/%d", project, iid), map[string]any{"add_labels": "bug"})
	report := os.Getenv("FAKELAB_SHAPE_REPORT") != ""
	recs := recorded.Load(t, "gitlab")
	for _, c := range labShapeCases {
		t.Run(c.file, func(t *testing.T) {
			rec, ok := recs[c.file]
			if !ok {
				t.Fatalf("no recording %s", c.file)
			}
			path := strings.NewReplacer("{project}", project, "{iid}", fmt.Sprint(iid), "{head}", m.SHA, "{author}", fmt.Sprint(m.Author.ID)).Replace(c.path)
			status, body := send(c.method, path, c.body)
			if status != rec.Response.Status {
				t.Fatalf("%s %s: the emulator answered %d, GitLab %d: %s", c.method, path, status, rec.Response.Status, body)
			}
			var want, got any
			if err := json.Unmarshal(rec.Response.Body, &want); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(body, &got); err != nil {
				t.Fatalf("the emulator's answer is not JSON: %s", body)
			}
			diffs := jsonshape.Diff(want, got)
			unlisted, gone := jsonshape.Unexplained(diffs, c.known)
			if report {
				for _, u := range unlisted {
					fmt.Printf("%s\t%s\n", c.file, u)
				}
				return
			}
			if len(unlisted) > 0 {
				t.Errorf("the emulator's answer differs from GitLab's recorded one:\n  %s", strings.Join(unlisted, "\n  "))
			}
			if len(gone) > 0 {
				t.Errorf("listed differences that no longer occur (drop them from the list): %s", strings.Join(gone, ", "))
			}
		})
	}
}
