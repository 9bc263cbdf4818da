package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/convergeloop/converge/internal/forge"
	"github.com/convergeloop/converge/internal/store"
)

// The GitLab project of the tests, and merge requests on it, as
// forge.PRRef prints them.
const (
	glProjectPath = "gitlab-org/gitlab-test"
	glWebURL      = "http://example.com/gitlab-org/gitlab-test"
	mr1           = glWebURL + "/-/merge_requests/1"
	mr2           = glWebURL + "/-/merge_requests/2"
)

// glBody is the testdata payload file (a GitLab docs example) moved onto
// the test project, with edits applied: path, value pairs such as
// "object_attributes.action", "update". A nil value writes null.
func glBody(t *testing.T, file string, edits ...any) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", "gitlab", file))
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	edits = append([]any{"project.path_with_namespace", glProjectPath, "project.web_url", glWebURL}, edits...)
	for i := 0; i+1 < len(edits); i += 2 {
		keys := strings.Split(edits[i].(string), ".")
		m := doc
		for _, k := range keys[:len(keys)-1] {
			next, ok := m[k].(map[string]any)
			if !ok {
				next = map[string]any{}
				m[k] = next
			}
			m = next
		}
		m[keys[len(keys)-1]] = edits[i+1]
	}
	out, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

// deliverGitLab posts one GitLab delivery: X-Gitlab-Event, the event
// UUID, the Idempotency-Key when key is not empty, and the token when it
// is not empty.
func (r *rig) deliverGitLab(t *testing.T, event, uuid, key, token, body string) int {
	t.Helper()
	req := httptest.NewRequest(http.MethodPost, "/webhook", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(HeaderGitLabEvent, event)
	req.Header.Set(HeaderGitLabEventUUID, uuid)
	req.Header.Set("X-Gitlab-Instance", "http://example.com")
	if key != "" {
		req.Header.Set(HeaderIdempotencyKey, key)
	}
	if token != "" {
		req.Header.Set(HeaderGitLabToken, token)
	}
	rec := httptest.NewRecorder()
	r.srv.ServeHTTP(rec, req)
	return rec.Code
}

func newGitLabRig(t *testing.T, runs []RunInfo, mod func(*Options)) *rig {
	t.Helper()
	r := newRig(t, mod)
	r.loops.runs = runs
	return r
}

func sorted(xs []string) []string {
	out := slices.Clone(xs)
	sort.Strings(out)
	return out
}

// TestSEC_4_GitLabTokenChecked: a GitLab delivery without X-Gitlab-Token,
// with a wrong one (also one sharing the secret's prefix or of another
// length), or to a server with no secret is refused with 401, wakes
// nothing and is not recorded: the genuine delivery of the same event
// UUID afterwards is acted on.
func TestSEC_4_GitLabTokenChecked(t *testing.T) {
	secret := []byte(testSecret)
	if err := VerifyGitLabToken(secret, testSecret); err != nil {
		t.Errorf("VerifyGitLabToken(the secret) = %v", err)
	}
	for _, bad := range []string{"", "It's a Secret", testSecret + " ", "sha256=" + testSecret, strings.ToUpper(testSecret)} {
		if err := VerifyGitLabToken(secret, bad); err == nil {
			t.Errorf("VerifyGitLabToken accepted %q", bad)
		}
	}
	if err := VerifyGitLabToken(nil, ""); err == nil {
		t.Error("VerifyGitLabToken with no secret accepted an empty token")
	}

	r := newGitLabRig(t, []RunInfo{{Target: mr1, Head: "aaa111", Branch: "ms-viewport", Base: "master"}}, nil)
	body := glBody(t, "merge_request.json", "object_attributes.action", "update")
	for _, tok := range []string{"", "wrong", "It's a Secret", Sign(secret, []byte(body))} {
		if code := r.deliverGitLab(t, "Merge Request Hook", "u-1", "", tok, body); code != http.StatusUnauthorized {
			t.Errorf("token %q: status %d, want 401", tok, code)
		}
	}
	// A GitHub signature does not stand in for GitLab's token.
	if code := r.post([]byte(body), map[string]string{HeaderGitLabEvent: "Merge Request Hook", HeaderGitLabEventUUID: "u-1",
		HeaderSignature: Sign(secret, []byte(body))}); code != http.StatusUnauthorized {
		t.Errorf("GitHub-signed GitLab delivery: status %d, want 401", code)
	}
	r.settle()
	if w := r.loops.Wakes(); len(w) != 0 {
		t.Fatalf("refused deliveries woke %v", w)
	}
	if code := r.deliverGitLab(t, "Merge Request Hook", "u-1", "", testSecret, body); code != http.StatusAccepted {
		t.Fatalf("the genuine delivery after refused ones: status %d, want 202", code)
	}
	r.settle()
	if w := r.loops.Wakes(); !slices.Equal(w, []string{mr1}) {
		t.Errorf("wakes = %v, want [%s]", w, mr1)
	}

	// Refusals and acceptances are counted under GitLab's event name.
	fams, err := r.srv.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	counts := map[string]float64{}
	for _, f := range fams {
		if f.GetName() != "converge_webhook_deliveries_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, lp := range m.GetLabel() {
				labels[lp.GetName()] = lp.GetValue()
			}
			if labels["event"] == "Merge Request Hook" {
				counts[labels["outcome"]] = m.GetCounter().GetValue()
			}
		}
	}
	if want := map[string]float64{"unsigned": 2, "bad_signature": 3, "accepted": 1}; !maps.Equal(counts, want) {
		t.Errorf("deliveries counted %v, want %v", counts, want)
	}

	none := newGitLabRig(t, []RunInfo{{Target: mr1}}, func(o *Options) { o.Secret = nil })
	if code := none.deliverGitLab(t, "Merge Request Hook", "u-2", "", testSecret, body); code != http.StatusUnauthorized {
		t.Errorf("no secret configured: status %d, want 401", code)
	}
	none.settle()
	if w := none.loops.Wakes(); len(w) != 0 {
		t.Errorf("a server without a secret woke %v", w)
	}
}

// TestSEC_4_GitLabReplayedDeliveryActsOnce: a GitLab delivery seen before
// causes no second action, also after a restart: by its Idempotency-Key
// when GitLab sends one (a resend carries the same key under a new event
// UUID), else by its event UUID. Two different events that share an
// event UUID (GitLab gives recursive deliveries one) are both acted on.
func TestSEC_4_GitLabReplayedDeliveryActsOnce(t *testing.T) {
	r := newGitLabRig(t, []RunInfo{
		{Target: mr1, Head: "aaa111", Branch: "ms-viewport", Base: "master"},
		{Target: mr2, Head: "bbb222", Branch: "feature-b", Base: "master"},
	}, nil)
	note := glBody(t, "note_merge_request.json")
	if code := r.deliverGitLab(t, "Note Hook", "u-1", "", testSecret, note); code != http.StatusAccepted {
		t.Fatalf("first delivery: status %d", code)
	}
	r.settle()
	if code := r.deliverGitLab(t, "Note Hook", "u-1", "", testSecret, note); code != http.StatusOK {
		t.Errorf("replayed event UUID: status %d, want 200", code)
	}
	r.settle()
	if w := r.loops.Wakes(); !slices.Equal(w, []string{mr1}) {
		t.Fatalf("wakes after a replay = %v, want one of %s", w, mr1)
	}

	// GitLab 17.4+: a resend has a new event UUID and the same key.
	mr := glBody(t, "merge_request.json", "object_attributes.iid", 2, "object_attributes.action", "update")
	if code := r.deliverGitLab(t, "Merge Request Hook", "u-2", "k-2", testSecret, mr); code != http.StatusAccepted {
		t.Fatalf("keyed delivery: status %d", code)
	}
	r.settle()
	if code := r.deliverGitLab(t, "Merge Request Hook", "u-2-resent", "k-2", testSecret, mr); code != http.StatusOK {
		t.Errorf("resent delivery (same Idempotency-Key): status %d, want 200", code)
	}
	r.settle()
	if w := r.loops.Wakes(); !slices.Equal(w, []string{mr1, mr2}) {
		t.Fatalf("wakes after a resend = %v, want [%s %s]", w, mr1, mr2)
	}

	// Recursive deliveries share an event UUID: different events under
	// one UUID are not replays.
	other := glBody(t, "merge_request.json", "object_attributes.iid", 1, "object_attributes.action", "approved")
	if code := r.deliverGitLab(t, "Merge Request Hook", "u-1", "", testSecret, other); code != http.StatusAccepted {
		t.Errorf("another event under a used event UUID: status %d, want 202", code)
	}
	r.settle()
	if w := r.loops.Wakes(); len(w) != 3 {
		t.Fatalf("wakes = %v, want three", w)
	}

	// A restart: a new server on the store reopened from its file.
	r.st.Close()
	st := openStore(t, r.path)
	loops := &fakeLoops{runs: r.loops.Snapshot()}
	s2, err := New(Options{Loops: loops, Store: st, Secret: []byte(testSecret), Addr: "127.0.0.1:0", Clock: r.clock})
	if err != nil {
		t.Fatal(err)
	}
	r2 := &rig{srv: s2, loops: loops, clock: r.clock, st: st}
	if code := r2.deliverGitLab(t, "Note Hook", "u-1", "", testSecret, note); code != http.StatusOK {
		t.Errorf("replayed event UUID after restart: status %d, want 200", code)
	}
	if code := r2.deliverGitLab(t, "Merge Request Hook", "u-2-again", "k-2", testSecret, mr); code != http.StatusOK {
		t.Errorf("resent delivery after restart: status %d, want 200", code)
	}
	r2.settle()
	if w := loops.Wakes(); len(w) != 0 {
		t.Errorf("replays after restart woke %v", w)
	}
	// A delivery with neither id is malformed.
	req := httptest.NewRequest(http.MethodPost, "/webhook", strings.NewReader(note))
	req.Header.Set(HeaderGitLabEvent, "Note Hook")
	req.Header.Set(HeaderGitLabToken, testSecret)
	rec := httptest.NewRecorder()
	r2.srv.ServeHTTP(rec, req)
	if rec.Code != http.StatusBadRequest {
		t.Errorf("no event UUID nor Idempotency-Key: status %d, want 400", rec.Code)
	}
}

// TestPR_S2_GitLabWebhookEventsWakeTheirMergeRequests: each GitLab event
// kind wakes the merge request it concerns: a merge request or note
// event by iid; a pipeline by its merge request, else by commit or
// branch; a push by branch (head or base). A note on an issue, a tag, a
// push to a branch no merge request has, and kinds converge does not
// follow wake nothing and are answered 200. A GitHub PR of the same path
// and a merge request on another GitLab host are never woken.
func TestPR_S2_GitLabWebhookEventsWakeTheirMergeRequests(t *testing.T) {
	gh := "https://github.com/gitlab-org/gitlab-test/pull/1"
	elsewhere := "https://gitlab.other.example/gitlab-org/gitlab-test/-/merge_requests/2"
	sub := "https://gitlab.example.com/acme/platform/widget/-/merge_requests/4"
	runs := []RunInfo{
		{Target: mr1, Head: "aaa111", Branch: "feature-a", Base: "master"},
		{Target: mr2, Head: "bbb222", Branch: "feature-b", Base: "release"},
		{Target: gh, Head: "aaa111", Branch: "feature-a", Base: "master"},
		{Target: elsewhere, Head: "bbb222", Branch: "feature-b", Base: "release"},
		{Target: sub, Head: "ccc333", Branch: "fix", Base: "main"},
	}
	subProject := []any{"project.path_with_namespace", "acme/platform/widget", "project.web_url", "https://gitlab.example.com/acme/platform/widget"}
	cases := []struct {
		name, event, body string
		status            int
		want              []string
	}{
		{"merge request opened", "Merge Request Hook", glBody(t, "merge_request.json"), 202, []string{mr1}},
		{"merge request updated", "Merge Request Hook", glBody(t, "merge_request.json", "object_attributes.iid", 2, "object_attributes.action", "update"), 202, []string{mr2}},
		{"merge request approved", "Merge Request Hook", glBody(t, "merge_request.json", "object_attributes.action", "approved"), 202, []string{mr1}},
		{"merge request merged", "Merge Request Hook", glBody(t, "merge_request.json", "object_attributes.iid", 2, "object_attributes.action", "merge"), 202, []string{mr2}},
		{"note on a merge request", "Note Hook", glBody(t, "note_merge_request.json"), 202, []string{mr1}},
		{"diff note on a merge request", "Note Hook", glBody(t, "note_diff.json", "merge_request.iid", 2), 202, []string{mr2}},
		{"note on an issue", "Note Hook", glBody(t, "note_issue.json"), 200, nil},
		{"merge request pipeline", "Pipeline Hook", glBody(t, "pipeline.json", "merge_request.iid", 2), 202, []string{mr2}},
		{"branch pipeline by branch", "Pipeline Hook", glBody(t, "pipeline.json", "merge_request", nil, "object_attributes.ref", "feature-a", "object_attributes.sha", "fff999"), 202, []string{mr1}},
		{"branch pipeline by commit", "Pipeline Hook", glBody(t, "pipeline.json", "merge_request", nil, "object_attributes.ref", "elsewhere", "object_attributes.sha", "bbb222"), 202, []string{mr2}},
		{"detached pipeline of no known commit", "Pipeline Hook", glBody(t, "pipeline.json", "merge_request", nil, "object_attributes.ref", "refs/merge-requests/9/head", "object_attributes.sha", "fff999"), 202, nil},
		{"tag pipeline", "Pipeline Hook", glBody(t, "pipeline.json", "merge_request", nil, "object_attributes.ref", "feature-a", "object_attributes.tag", true, "object_attributes.sha", "fff999"), 202, nil},
		{"push to a head branch", "Push Hook", glBody(t, "push.json", "ref", "refs/heads/feature-b"), 202, []string{mr2}},
		{"push to a base branch", "Push Hook", glBody(t, "push.json", "ref", "refs/heads/release"), 202, []string{mr2}},
		{"push to an unregistered branch", "Push Hook", glBody(t, "push.json", "ref", "refs/heads/nobody-s"), 202, nil},
		{"branch deleted", "Push Hook", glBody(t, "push.json", "ref", "refs/heads/feature-a", "after", "0000000000000000000000000000000000000000"), 202, []string{mr1}},
		{"tag push", "Tag Push Hook", glBody(t, "tag_push.json"), 200, nil},
		{"unfollowed kind", "Wiki Page Hook", `{"object_kind":"wiki_page","project":{"path_with_namespace":"gitlab-org/gitlab-test"},"object_attributes":{"action":"create"}}`, 200, nil},
		{"merge request in a subgroup", "Merge Request Hook", glBody(t, "merge_request.json", append(slices.Clone(subProject), "object_attributes.iid", 4)...), 202, []string{sub}},
		{"push in a subgroup", "Push Hook", glBody(t, "push.json", append(slices.Clone(subProject), "ref", "refs/heads/fix")...), 202, []string{sub}},
		{"merge request on another host", "Merge Request Hook", glBody(t, "merge_request.json", "project.web_url", "https://gitlab.other.example/gitlab-org/gitlab-test", "object_attributes.iid", 2), 202, []string{elsewhere}},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := newGitLabRig(t, slices.Clone(runs), nil)
			if code := r.deliverGitLab(t, c.event, fmt.Sprintf("u-%d", i), "", testSecret, c.body); code != c.status {
				t.Fatalf("status %d, want %d", code, c.status)
			}
			r.settle()
			if got := sorted(r.loops.Wakes()); !slices.Equal(got, sorted(c.want)) {
				t.Errorf("woke %v, want %v", got, c.want)
			}
		})
	}

	// The forges stay apart also where no host tells them apart: a
	// GitHub event of the same path and number, and a GitLab payload
	// without its project's web_url.
	r0 := newGitLabRig(t, slices.Clone(runs), nil)
	ghBody := `{"action":"synchronize","number":1,"pull_request":{"number":1},"repository":{"full_name":"gitlab-org/gitlab-test"}}`
	if code := r0.deliver(t, "pull_request", "gh-1", testSecret, ghBody); code != http.StatusAccepted {
		t.Fatalf("GitHub delivery: status %d", code)
	}
	r0.settle()
	if got := r0.loops.Wakes(); !slices.Equal(got, []string{gh}) {
		t.Errorf("a GitHub event woke %v, want only %s", got, gh)
	}
	r0 = newGitLabRig(t, slices.Clone(runs), nil)
	if code := r0.deliverGitLab(t, "Merge Request Hook", "u-nohost", "", testSecret, glBody(t, "merge_request.json", "project.web_url", nil)); code != http.StatusAccepted {
		t.Fatalf("GitLab delivery without web_url: status %d", code)
	}
	r0.settle()
	if got := r0.loops.Wakes(); !slices.Equal(got, []string{mr1}) {
		t.Errorf("a GitLab event without a host woke %v, want only %s", got, mr1)
	}

	// A merge request whose head the server has not observed yet is
	// woken by any pipeline or push of its project.
	fresh := glWebURL + "/-/merge_requests/3"
	r := newGitLabRig(t, append(slices.Clone(runs), RunInfo{Target: fresh}), nil)
	if code := r.deliverGitLab(t, "Push Hook", "u-fresh", "", testSecret, glBody(t, "push.json", "ref", "refs/heads/nobody-s")); code != http.StatusAccepted {
		t.Fatalf("push: status %d", code)
	}
	r.settle()
	if got := r.loops.Wakes(); !slices.Equal(got, []string{fresh}) {
		t.Errorf("a push woke %v, want the merge request of unknown head %s", got, fresh)
	}

	// A payload of a followed kind without its project is not GitLab's.
	if code := r.deliverGitLab(t, "Merge Request Hook", "u-bad", "", testSecret, `{"object_kind":"merge_request","object_attributes":{"iid":1,"action":"open"}}`); code != http.StatusBadRequest {
		t.Errorf("a merge request event without a project: status %d, want 400", code)
	}
}

// TestPR_T10_GitLabEventsRearmAsGitHubsDo: on a registered merge request
// whose run ended two-stable, the GitLab events whose GitHub counterparts
// start a new run start one (new commits, a reopen, an approval, a new
// line comment or thread note) and the others only wake: converge's own
// label change, a plain comment, an edited comment, its own commit status
// (a pipeline event) and a push. A merge request opened or labelled on a
// watched project is discovered; one only edited is not.
func TestPR_T10_GitLabEventsRearmAsGitHubsDo(t *testing.T) {
	mr := func(iid int) string { return fmt.Sprintf("%s/-/merge_requests/%d", glWebURL, iid) }
	var (
		listed int
		open   []string
	)
	r := newGitLabRig(t, nil, func(o *Options) {
		o.Discover = func(_ context.Context, w store.RepoWatch) ([]string, error) {
			listed++
			return open, nil
		}
	})
	ctx := context.Background()
	ended := r.clock.Now()
	for iid := 1; iid <= 12; iid++ {
		if err := r.st.PutRegistration(ctx, mr(iid)); err != nil {
			t.Fatal(err)
		}
		if err := r.st.CreateRun(ctx, store.Run{ID: fmt.Sprintf("r-%d", iid), Kind: "pr", Target: mr(iid), Status: "two-stable", EndedAt: ended}); err != nil {
			t.Fatal(err)
		}
	}
	// The GitHub PR of the same path and number is registered and
	// finished too: GitLab's events never rearm it.
	gh := "https://github.com/gitlab-org/gitlab-test/pull/1"
	if err := r.st.PutRegistration(ctx, gh); err != nil {
		t.Fatal(err)
	}
	if err := r.st.CreateRun(ctx, store.Run{ID: "r-gh", Kind: "pr", Target: gh, Status: "two-stable", EndedAt: ended}); err != nil {
		t.Fatal(err)
	}
	if err := r.st.PutRepoWatch(ctx, store.RepoWatch{Repo: glProjectPath}); err != nil {
		t.Fatal(err)
	}
	update := func(iid int, edits ...any) string {
		return glBody(t, "merge_request.json", append([]any{"object_attributes.iid", iid, "object_attributes.action", "update", "changes", map[string]any{}}, edits...)...)
	}
	deliveries := []struct{ event, body string }{
		{"Merge Request Hook", update(1, "object_attributes.oldrev", "95790bf891e76fee5e1747ab589903a6a1f80f22")},                       // new commits: rearm
		{"Merge Request Hook", update(2, "changes", map[string]any{"labels": map[string]any{"previous": []any{}, "current": []any{}}})}, // a label: no
		{"Merge Request Hook", glBody(t, "merge_request.json", "object_attributes.iid", 3, "object_attributes.action", "reopen")},       // rearm
		{"Merge Request Hook", glBody(t, "merge_request.json", "object_attributes.iid", 4, "object_attributes.action", "approved")},     // rearm
		{"Merge Request Hook", glBody(t, "merge_request.json", "object_attributes.iid", 5, "object_attributes.action", "approval")},     // rearm
		{"Merge Request Hook", glBody(t, "merge_request.json", "object_attributes.iid", 6, "object_attributes.action", "unapproved")},
		{"Note Hook", glBody(t, "note_merge_request.json", "merge_request.iid", 7)},                                              // a plain comment: rearm (a trusted one is a finding, PR-T13)
		{"Note Hook", glBody(t, "note_diff.json", "merge_request.iid", 8)},                                                       // a line comment: rearm
		{"Note Hook", glBody(t, "note_diff.json", "merge_request.iid", 9, "object_attributes.action", "update")},                 // an edit: no
		{"Note Hook", glBody(t, "note_merge_request.json", "merge_request.iid", 10, "object_attributes.type", "DiscussionNote")}, // a thread note: rearm
		{"Pipeline Hook", glBody(t, "pipeline.json", "merge_request.iid", 11)},                                                   // its own status: no
		{"Merge Request Hook", update(12, "object_attributes.description", "edited")},                                            // an edit: no
	}
	for i, d := range deliveries {
		if code := r.deliverGitLab(t, d.event, fmt.Sprintf("u-%d", i), "", testSecret, d.body); code != http.StatusAccepted {
			t.Fatalf("delivery %d (%s): status %d", i, d.event, code)
		}
	}
	if code := r.deliverGitLab(t, "Push Hook", "u-push", "", testSecret, glBody(t, "push.json", "ref", "refs/heads/ms-viewport")); code != http.StatusAccepted {
		t.Fatalf("push: status %d", code)
	}
	r.settle()
	want := sorted([]string{mr(1), mr(3), mr(4), mr(5), mr(7), mr(8), mr(10)})
	if got := r.loops.Registered(); !slices.Equal(got, want) {
		t.Errorf("rearmed %v, want %v", got, want)
	}
	if listed != 1 {
		t.Errorf("discovery ran %d times, want once (the label change)", listed)
	}

	// Opened on the watched project: discovered and registered.
	open = []string{mr(50)}
	if code := r.deliverGitLab(t, "Merge Request Hook", "u-open", "", testSecret, glBody(t, "merge_request.json", "object_attributes.iid", 50)); code != http.StatusAccepted {
		t.Fatalf("open: status %d", code)
	}
	r.settle()
	if listed != 2 || !slices.Contains(r.loops.Registered(), mr(50)) {
		t.Errorf("an opened merge request: discovery ran %d times, registered %v", listed, r.loops.Registered())
	}
}

// TestSEC_4_ADeliveryOfTwoForgesIsRefused: a delivery carrying both
// GitHub's and GitLab's event headers, each forge's proof valid, is
// refused (400) and wakes nothing: which forge sent it cannot be told,
// so neither forge's rules may be picked for it.
func TestSEC_4_ADeliveryOfTwoForgesIsRefused(t *testing.T) {
	r := newGitLabRig(t, []RunInfo{{Target: mr1, Head: "aaa111", Branch: "ms-viewport", Base: "master"}}, nil)
	body := glBody(t, "merge_request.json", "object_attributes.action", "update")
	// The body reads as either forge's: GitLab's merge request update
	// and GitHub's pull_request synchronize.
	var both map[string]any
	if err := json.Unmarshal([]byte(body), &both); err != nil {
		t.Fatal(err)
	}
	both["action"], both["number"], both["repository"] = "synchronize", 1, map[string]any{"full_name": "acme/widget"}
	raw, err := json.Marshal(both)
	if err != nil {
		t.Fatal(err)
	}
	for _, kind := range []forge.Kind{forge.GitHub, forge.GitLab} {
		event := map[forge.Kind]string{forge.GitHub: "pull_request", forge.GitLab: "Merge Request Hook"}[kind]
		if n, err := readNotice(kind, event, raw); err != nil || len(n.Numbers) != 1 {
			t.Fatalf("the body does not read as %s's: %+v, %v", kind, n, err)
		}
	}
	if code := r.post(raw, map[string]string{HeaderGitLabEvent: "Merge Request Hook", HeaderGitLabEventUUID: "u-both", HeaderGitLabToken: testSecret,
		HeaderEvent: "pull_request", HeaderDelivery: "d-both", HeaderSignature: Sign([]byte(testSecret), raw)}); code != http.StatusBadRequest {
		t.Errorf("a delivery of two forges: status %d, want 400", code)
	}
	r.settle()
	if w := r.loops.Wakes(); len(w) != 0 {
		t.Fatalf("the refused delivery woke %v", w)
	}
	// Either forge's headers alone are read by that forge.
	if code := r.deliverGitLab(t, "Merge Request Hook", "u-one", "", testSecret, body); code != http.StatusAccepted {
		t.Fatalf("GitLab's headers alone: status %d, want 202", code)
	}
}

// post delivers body to the webhook with headers, and returns the status.
func (r *rig) post(body []byte, headers map[string]string) int {
	req := httptest.NewRequest(http.MethodPost, "/webhook", bytes.NewReader(body))
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	r.srv.ServeHTTP(rec, req)
	return rec.Code
}
