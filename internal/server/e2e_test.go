package server

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/convergeloop/converge/internal/emulator/fakehub"
	"github.com/convergeloop/converge/internal/testutil/hubtest"
)

// TestSEC_4_EmulatorDeliveriesVerifyEndToEnd: the emulator's signed
// deliveries, over real HTTP, pass the server's verifier and wake the
// PR they concern once per burst (PR-S2); a redelivery of the same id
// and a delivery signed with another secret wake nothing.
func TestSEC_4_EmulatorDeliveriesVerifyEndToEnd(t *testing.T) {
	hub := hubtest.Start(t, time.Millisecond)
	files := map[string]string{"main.go": "package main\n\nfunc main() {\n\tprintln(\"hi\")\n}\n"}
	if err := hub.CreateRepo("acme", "widget", files, fakehub.RepoOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, b := range []string{"one", "two"} {
		if _, err := hub.CreatePR("acme", "widget", fakehub.NewPR{Head: b, Title: b,
			Files: map[string]string{"main.go": "package main\n\nfunc main() {\n\tprintln(\"" + b + "\")\n}\n"}}); err != nil {
			t.Fatal(err)
		}
	}
	pr1, pr2 := hub.PRURL("acme", "widget", 1), hub.PRURL("acme", "widget", 2)
	two, err := hub.PR("acme", "widget", 2)
	if err != nil {
		t.Fatal(err)
	}
	r := newRig(t, nil)
	r.loops.runs = []RunInfo{{Target: pr1, Phase: "waiting"}, {Target: pr2, Phase: "waiting", Head: two.HeadSHA, Branch: "two", Base: "main"}}
	ts := httptest.NewServer(r.srv)
	defer ts.Close()
	if err := hub.SetWebhook(fakehub.WebhookConfig{URL: ts.URL + "/webhook", Secret: testSecret, Attempts: 1}); err != nil {
		t.Fatal(err)
	}

	post := func(token, path string, in any) {
		t.Helper()
		b, _ := json.Marshal(in)
		req, _ := http.NewRequestWithContext(t.Context(), "POST", hub.APIURL()+path, bytes.NewReader(b))
		req.Header.Set("Authorization", "bearer "+token)
		resp, err := hub.HTTPClient().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode/100 != 2 {
			t.Fatalf("POST %s: %d", path, resp.StatusCode)
		}
	}
	settled := func() []fakehub.Delivery {
		t.Helper()
		if err := hub.WaitDeliveries(t.Context()); err != nil {
			t.Fatal(err)
		}
		r.settle()
		return hub.Deliveries()
	}
	// A review with two inline comments: three deliveries, one wake.
	post(hub.Tokens().Reviewer, "/repos/acme/widget/pulls/1/reviews", map[string]any{"event": "COMMENT", "body": "look",
		"comments": []map[string]any{{"path": "main.go", "line": 4, "body": "a"}, {"path": "main.go", "line": 3, "body": "b"}}})
	ds := settled()
	if len(ds) != 3 {
		t.Fatalf("deliveries: %+v", ds)
	}
	for _, d := range ds {
		if !d.Delivered || d.Status != http.StatusAccepted {
			t.Errorf("%s %s: status %d, delivered %v: the server refused the emulator's signature", d.Event, d.GUID, d.Status, d.Delivered)
		}
	}
	if w := r.loops.Wakes(); !slices.Equal(w, []string{pr1}) {
		t.Fatalf("wakes = %v, want one of %s", w, pr1)
	}

	// A redelivery: refused as a duplicate, no second wake.
	if err := hub.Redeliver(ds[0].GUID); err != nil {
		t.Fatal(err)
	}
	ds = settled()
	if d := ds[len(ds)-1]; d.Status != http.StatusOK {
		t.Errorf("redelivery answered %d, want 200 (duplicate)", d.Status)
	}
	if w := r.loops.Wakes(); len(w) != 1 {
		t.Fatalf("wakes after a redelivery = %v", w)
	}

	// Signed with another secret: 401, no wake.
	if err := hub.SetWebhook(fakehub.WebhookConfig{URL: ts.URL + "/webhook", Secret: "not the secret", Attempts: 1}); err != nil {
		t.Fatal(err)
	}
	post(hub.Tokens().Author, "/repos/acme/widget/issues/1/comments", map[string]any{"body": "hello"})
	ds = settled()
	if d := ds[len(ds)-1]; d.Event != "issue_comment" || d.Status != http.StatusUnauthorized || d.Delivered {
		t.Errorf("a delivery signed with another secret: %s answered %d", d.Event, d.Status)
	}
	if w := r.loops.Wakes(); len(w) != 1 {
		t.Fatalf("wakes after a wrongly signed delivery = %v", w)
	}

	// A push to PR 2's branch wakes PR 2 (by branch) and PR 1 (head not
	// yet known), each once.
	if err := hub.SetWebhook(fakehub.WebhookConfig{URL: ts.URL + "/webhook", Secret: testSecret, Attempts: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := hub.PushFiles("acme", "widget", "two", map[string]string{"NOTES": "n\n"}, "notes"); err != nil {
		t.Fatal(err)
	}
	settled()
	w := r.loops.Wakes()[1:]
	slices.Sort(w)
	if !slices.Equal(w, []string{pr1, pr2}) {
		t.Errorf("wakes after a push to two = %v, want %s and %s once each", w, pr1, pr2)
	}
}
