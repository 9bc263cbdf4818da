package fakehub

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"
)

// get sends one REST GET as token and returns the status, header and
// body, or the transport error (a reset).
func faultGet(t *testing.T, h *Hub, token, path string) (int, http.Header, string, error) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, h.APIURL()+path, nil)
	req.Header.Set("Authorization", "token "+token)
	return faultDo(h, req)
}

func faultDo(h *Hub, req *http.Request) (int, http.Header, string, error) {
	c := h.HTTPClient()
	c.Timeout = 2 * time.Second
	resp, err := c.Do(req)
	if err != nil {
		return 0, nil, "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b), nil
}

func faultGraphQL(t *testing.T, h *Hub, token, doc string) (int, http.Header, string, error) {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"query": doc})
	req, _ := http.NewRequest(http.MethodPost, h.GraphQLURL(), bytes.NewReader(body))
	req.Header.Set("Authorization", "token "+token)
	return faultDo(h, req)
}

// TestREL1_SeededFaultsAreDeterministicPerSeed: the same seed meets the
// same faults at the same requests; another seed meets others; the rate
// is about what was asked.
func TestREL1_SeededFaultsAreDeterministicPerSeed(t *testing.T) {
	run := func(seed int64) []FaultHit {
		h := newHub(t, Options{HTTP: true})
		seedPR(t, h, RepoOptions{})
		h.SetFaults(Faults{Seed: seed, Rate: 0.2, Kinds: []FaultKind{Fault5xx, FaultPartial},
			Logins: []string{LoginAuthor}})
		for range 100 {
			faultGet(t, h, h.Tokens().Author, "/repos/acme/widget/pulls/1")
			// Another token's requests neither fault nor count.
			faultGet(t, h, h.Tokens().Reviewer, "/repos/acme/widget/pulls/1")
		}
		return h.FaultHits()
	}
	a, b, c := run(7), run(7), run(8)
	if !reflect.DeepEqual(a, b) {
		t.Errorf("seed 7 twice met different faults:\n%v\n%v", a, b)
	}
	if reflect.DeepEqual(a, c) {
		t.Errorf("seeds 7 and 8 met the same faults: %v", a)
	}
	if len(a) < 8 || len(a) > 35 {
		t.Errorf("%d faults in 100 requests at rate 0.2", len(a))
	}
	for _, f := range a {
		if f.Login != LoginAuthor || f.Kind != Fault5xx {
			t.Errorf("fault %v: want only the author's, and a REST partial turned 5xx", f)
		}
	}
}

// TestREL1_SeededFaultKindsAsGitHubShowsThem: each kind, forced at rate 1,
// answers as GitHub does; a spent limit keeps refusing until it resets.
func TestREL1_SeededFaultKindsAsGitHubShowsThem(t *testing.T) {
	h := newHub(t, Options{HTTP: true})
	seedPR(t, h, RepoOptions{})
	tok := h.Tokens().Author
	const pulls = "/repos/acme/widget/pulls/1"
	const query = `query { repository(owner:"acme", name:"widget") { pullRequest(number:1) { title } } }`
	set := func(k FaultKind) {
		h.SetFaults(Faults{Seed: 1, Rate: 1, Kinds: []FaultKind{k}, Slow: 3 * time.Second, RetryAfter: 2 * time.Second, ResetIn: 2 * time.Second})
	}

	set(Fault5xx)
	if st, _, body, err := faultGet(t, h, tok, pulls); err != nil || st < 500 || !strings.Contains(body, "documentation_url") {
		t.Errorf("5xx: %d %q %v", st, body, err)
	}

	set(FaultReset)
	if _, _, _, err := faultGet(t, h, tok, pulls); err == nil {
		t.Error("reset: got an answer")
	}

	set(FaultSlow)
	var ne interface{ Timeout() bool }
	if _, _, _, err := faultGet(t, h, tok, pulls); !errors.As(err, &ne) || !ne.Timeout() {
		t.Errorf("slow: %v, want the client's 2s timeout", err)
	}

	set(FaultPartial)
	st, _, body, err := faultGraphQL(t, h, tok, query)
	if err != nil || st != 200 || !strings.Contains(body, `"data":{"repository"`) || !strings.Contains(body, "Something went wrong") {
		t.Errorf("partial: %d %s %v, want data and an error beside it", st, body, err)
	}

	set(FaultPrimary)
	st, hdr, body, _ := faultGraphQL(t, h, tok, query)
	reset, _ := strconv.ParseInt(hdr.Get("X-RateLimit-Reset"), 10, 64)
	if st != 200 || !strings.Contains(body, `"type":"RATE_LIMIT"`) || !strings.Contains(body, `"code":"graphql_rate_limit"`) ||
		hdr.Get("X-RateLimit-Remaining") == "0" || reset < time.Now().Unix() {
		t.Errorf("primary on graphql: %d %v %s", st, hdr, body)
	}
	st, hdr, body, _ = faultGet(t, h, tok, pulls)
	if st != 403 || hdr.Get("X-RateLimit-Remaining") != "0" || !strings.Contains(body, "rate limit") {
		t.Errorf("primary on REST within the window: %d %v %s", st, hdr, body)
	}
	if n := len(h.FaultHits()); n != 1 {
		t.Errorf("%d draws; a request in a spent window is refused, not drawn", n)
	}

	set(FaultSecondary)
	st, hdr, body, _ = faultGet(t, h, tok, pulls)
	if (st != 403 && st != 429) || hdr.Get("Retry-After") != "2" || !strings.Contains(body, "secondary rate limit") {
		t.Errorf("secondary: %d %v %s", st, hdr, body)
	}

	h.SetFaults(Faults{})
	if st, _, _, err := faultGet(t, h, tok, pulls); err != nil || st != 200 {
		t.Errorf("faults off: %d %v", st, err)
	}
}

// TestREL1_SeededFaultAfterAWriteLanded: a write drawn a fault "after"
// lands though its answer is lost, as on GitHub.
func TestREL1_SeededFaultAfterAWriteLanded(t *testing.T) {
	h := newHub(t, Options{HTTP: true})
	seedPR(t, h, RepoOptions{})
	tok := h.Tokens().Author
	h.SetFaults(Faults{Seed: 3, Rate: 1, Kinds: []FaultKind{FaultSlow}, Slow: 3 * time.Second})
	body := strings.NewReader(`{"body":"landed"}`)
	req, _ := http.NewRequest(http.MethodPost, h.APIURL()+"/repos/acme/widget/issues/1/comments", body)
	req.Header.Set("Authorization", "token "+tok)
	if _, _, _, err := faultDo(h, req); err == nil {
		t.Fatal("a slow answer came within the timeout")
	}
	if hits := h.FaultHits(); len(hits) != 1 || !hits[0].After || !hits[0].Write {
		t.Errorf("hits %v", hits)
	}
	h.SetFaults(Faults{})
	_, _, list, err := faultGet(t, h, tok, "/repos/acme/widget/issues/1/comments")
	if err != nil || strings.Count(list, `"landed"`) != 1 {
		t.Errorf("the write did not land once: %s %v", list, err)
	}
}
