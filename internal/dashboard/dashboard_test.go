package dashboard

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func get(t *testing.T, h http.Handler, target string, hdr map[string]string) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, target, nil)
	req.Host = "127.0.0.1:8766"
	for k, v := range hdr {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// SEC-4: off loopback the dashboard requires its token, as a bearer
// header or ?token=; on loopback without one it refuses a request naming
// it by another host (DNS rebinding).
func TestSEC_4_DashboardTokenOffLoopback(t *testing.T) {
	db, _ := seedStore(t)
	if _, err := New(db, Options{Addr: "0.0.0.0:8766"}); err == nil {
		t.Fatal("New on 0.0.0.0 without a token: no error")
	}
	h, err := New(db, Options{Addr: "0.0.0.0:8766", Token: "s3cret-token"})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, target string
		hdr          map[string]string
		want         int
	}{
		{"no token", "/api/runs", nil, http.StatusUnauthorized},
		{"no token, run", "/api/runs/r-20261130-d0d0d0", nil, http.StatusUnauthorized},
		{"no token, stream", "/api/stream", nil, http.StatusUnauthorized},
		{"wrong bearer", "/api/runs", map[string]string{"Authorization": "Bearer s3cret-tokeX"}, http.StatusUnauthorized},
		{"prefix of the token", "/api/runs?token=s3cret", nil, http.StatusUnauthorized},
		{"wrong scheme", "/api/runs", map[string]string{"Authorization": "Basic s3cret-token"}, http.StatusUnauthorized},
		{"bearer", "/api/runs", map[string]string{"Authorization": "Bearer s3cret-token", "Host": "dash.example:8766"}, http.StatusOK},
		{"query token", "/api/runs?token=s3cret-token", map[string]string{"Host": "dash.example:8766"}, http.StatusOK},
		{"the page itself: no data, no token", "/", nil, http.StatusOK},
		{"the script: no data, no token", "/app.js", nil, http.StatusOK},
	} {
		if got := get(t, h, c.target, c.hdr).Code; got != c.want {
			t.Errorf("%s: GET %s = %d, want %d", c.name, c.target, got, c.want)
		}
	}

	lo, err := New(db, Options{Addr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	if got := get(t, lo, "/api/runs", map[string]string{"Host": "evil.example:8766"}).Code; got != http.StatusForbidden {
		t.Errorf("loopback, foreign Host: %d, want 403", got)
	}
	for _, host := range []string{"127.0.0.1:8766", "localhost:8766", "[::1]:8766"} {
		if got := get(t, lo, "/api/runs", map[string]string{"Host": host}).Code; got != http.StatusOK {
			t.Errorf("loopback, Host %s: %d, want 200", host, got)
		}
	}
}

// UX-2: text written by others (a finding's body, a decision's message)
// reaches the page as JSON data, never as markup: the JSON escapes it,
// the page forbids inline script (CSP), and the script builds the DOM
// from text nodes only.
func TestUX_2_DashboardEscapesHostileText(t *testing.T) {
	db, s := seedStore(t)
	h, err := New(db, Options{Addr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	rec := get(t, h, "/api/runs/"+s.Done, nil)
	if rec.Code != http.StatusOK {
		t.Fatalf("GET run: %d %s", rec.Code, rec.Body)
	}
	body := rec.Body.String()
	if strings.Contains(body, "<img") || strings.Contains(body, "<b>") {
		t.Errorf("run JSON holds raw markup:\n%s", body)
	}
	var d RunDetail
	if err := json.Unmarshal(rec.Body.Bytes(), &d); err != nil {
		t.Fatal(err)
	}
	var found bool
	for _, th := range d.Threads {
		found = found || th.Summary == hostile
	}
	if !found {
		t.Errorf("the hostile finding's text is not carried as it was written: %+v", d.Threads)
	}
	page := get(t, h, "/", nil)
	if csp := page.Header().Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") || strings.Contains(csp, "unsafe-inline") {
		t.Errorf("page CSP = %q, want script-src 'self' and no unsafe-inline", csp)
	}
	js, err := fs.ReadFile(assetFS, "assets/app.js")
	if err != nil {
		t.Fatal(err)
	}
	for _, sink := range []string{"innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval("} {
		if strings.Contains(string(js), sink) {
			t.Errorf("app.js uses %s: the page must build its DOM from text nodes", sink)
		}
	}
	for target, want := range map[string]string{
		"javascript:alert(1)": "", "https://github.com/o/r/pull/1": "https://github.com/o/r/pull/1", "file:///etc/passwd": "",
	} {
		if got := webURL(target); got != want {
			t.Errorf("webURL(%q) = %q, want %q", target, got, want)
		}
	}
}

// UX-2: the run page's data: one chart point per round with findings
// by verdict and source, threads, the loop's cumulative diff against 3×
// the PR's lines, cost; the threads with dispositions and actions; the
// decisions without progress events; the proof.
func TestUX_2_DashboardRunDetail(t *testing.T) {
	db, s := seedStore(t)
	h, err := New(db, Options{Addr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	var runs []RunSummary
	if err := json.Unmarshal(get(t, h, "/api/runs", nil).Body.Bytes(), &runs); err != nil {
		t.Fatal(err)
	}
	if len(runs) != 3 {
		t.Fatalf("runs = %d, want 3", len(runs))
	}
	byID := map[string]RunSummary{}
	for _, r := range runs {
		byID[r.ID] = r
	}
	if r := byID[s.Done]; r.State != "ended" || r.Terminal != "two-stable" || r.Rounds != 4 || r.CostUSD == nil || *r.CostUSD < 0.84 || *r.CostUSD > 0.86 {
		t.Errorf("finished run row = %+v", r)
	}
	if r := byID[s.Errored]; r.Terminal != "errored" || r.ExitCode == nil || *r.ExitCode != 1 || !strings.Contains(r.Message, "API key rejected") {
		t.Errorf("errored run row = %+v", r)
	}
	if r := byID[s.Running]; r.State != "running" || r.Terminal != "" || r.Rounds != 2 {
		t.Errorf("running run row = %+v", r)
	}

	var d RunDetail
	if err := json.Unmarshal(get(t, h, "/api/runs/"+s.Done, nil).Body.Bytes(), &d); err != nil {
		t.Fatal(err)
	}
	if len(d.Rounds) != 4 || d.DiffLimit != 120 {
		t.Fatalf("rounds = %d, diff limit %d; want 4 and 120", len(d.Rounds), d.DiffLimit)
	}
	r1, last := d.Rounds[0], d.Rounds[3]
	if r1.ByVerdict["structural"] != 2 || r1.ByVerdict["minor"] != 1 || r1.BySource["copilot"] != 2 || r1.BySource["human"] != 1 ||
		r1.ThreadsOpen != 3 || r1.ThreadsResolved != 2 || r1.DiffLines != 18 {
		t.Errorf("round 1 = %+v", r1)
	}
	if last.CumDiffLines != 47 || last.CumCostUSD < 0.84 || last.CumCostUSD > 0.86 || len(last.ByVerdict) != 0 {
		t.Errorf("round 4 = %+v", last)
	}
	if len(d.Threads) != 6 {
		t.Fatalf("threads = %d, want 6", len(d.Threads))
	}
	for _, th := range d.Threads {
		if th.ID == "PRRT_3" && (th.Disposition != "deferred" || th.Resolved || strings.Join(th.Actions, ",") != "reply done" || th.URL != "https://github.com/octo-org/textstats/pull/7/files") {
			t.Errorf("deferred thread = %+v", th)
		}
		if th.ID == "PRRT_1" && (th.Disposition != "addressed" || !th.Resolved || strings.Join(th.Actions, ",") != "reply done,resolve done") {
			t.Errorf("addressed thread = %+v", th)
		}
	}
	for _, e := range d.Decisions {
		if e.Kind == "observe" {
			t.Errorf("decision log holds a progress event: %+v", e)
		}
	}
	if len(d.Decisions) != 9 {
		t.Errorf("decisions = %d, want 9", len(d.Decisions))
	}
	if len(d.Proof) == 0 || !strings.Contains(string(d.Proof), `"rounds_run":4`) {
		t.Errorf("proof = %s", d.Proof)
	}
	if rec := get(t, h, "/api/runs/r-nope", nil); rec.Code != http.StatusNotFound {
		t.Errorf("unknown run: %d, want 404", rec.Code)
	}
}

// UX-2: the stream says "change" when the watched run advances in the
// store, however it was written (here a round without a state save).
func TestUX_2_DashboardStreamChange(t *testing.T) {
	db, s := seedStore(t)
	h, err := New(db, Options{Addr: "127.0.0.1:0", Poll: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	defer h.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/api/stream?run="+s.Running, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("Content-Type %q", ct)
	}
	events := make(chan string)
	go func() {
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if ev, ok := strings.CutPrefix(sc.Text(), "event: "); ok {
				select {
				case events <- ev:
				case <-ctx.Done():
					return
				}
			}
		}
		close(events)
	}()
	next := func() string {
		select {
		case ev, ok := <-events:
			if !ok {
				t.Fatal("stream ended")
			}
			return ev
		case <-ctx.Done():
			t.Fatal("no event")
		}
		return ""
	}
	if ev := next(); ev != "change" {
		t.Fatalf("first event %q, want change", ev)
	}
	addRound(t, db, s.Running, 3, seededFinding(3))
	if ev := next(); ev != "change" {
		t.Fatalf("after a new round: %q, want change", ev)
	}
	h.Close()
	select {
	case _, ok := <-events:
		for ok {
			_, ok = <-events
		}
	case <-ctx.Done():
		t.Fatal("Close left the stream open")
	}
	_, _ = io.Copy(io.Discard, resp.Body)
}
