package fakelab

import (
	"net/http"
	"testing"
	"time"
)

func getStatus(t *testing.T, l *Lab, token, path string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest("GET", l.APIURL()+path, nil)
	req.Header.Set("PRIVATE-TOKEN", token)
	resp, err := l.HTTPClient().Do(req)
	if err != nil {
		return nil
	}
	resp.Body.Close()
	return resp
}

// Injected faults hit the next matching requests only; an outage answers
// 503 to every API request until it ends.
func TestFaults_InjectAndOutage(t *testing.T) {
	l := newLab(t, Options{})
	tok := l.Tokens().Author
	l.InjectFault("/api/v4/user", 502, 2)
	for i, want := range []int{502, 502, 200} {
		if resp := getStatus(t, l, tok, "/user"); resp == nil || resp.StatusCode != want {
			t.Fatalf("request %d: %v, want %d", i, resp, want)
		}
	}
	l.Outage(time.Hour)
	if resp := getStatus(t, l, tok, "/user"); resp == nil || resp.StatusCode != 503 {
		t.Fatalf("outage: %v", resp)
	}
	l.Outage(0)
	if resp := getStatus(t, l, tok, "/user"); resp == nil || resp.StatusCode != 200 {
		t.Fatalf("after outage: %v", resp)
	}
}

// REL-1: the same seed meets the same faults in the same order.
func TestFaults_SeededReplay(t *testing.T) {
	run := func() []FaultHit {
		l := newLab(t, Options{Faults: Faults{Seed: 7, Rate: 0.5, Kinds: []FaultKind{Fault5xx, FaultReset}}})
		for i := 0; i < 20; i++ {
			getStatus(t, l, l.Tokens().Author, "/user")
		}
		return l.FaultHits()
	}
	a, b := run(), run()
	if len(a) == 0 || len(a) != len(b) {
		t.Fatalf("hits %d vs %d", len(a), len(b))
	}
	for i := range a {
		if a[i].N != b[i].N || a[i].Kind != b[i].Kind {
			t.Fatalf("hit %d: %v vs %v", i, a[i], b[i])
		}
	}
}

// The lag fault leaves a new discussion out of the next k reads.
func TestFaults_DiscussionLag(t *testing.T) {
	l, iid := seeded(t, Options{DiscussionLag: 2}, ProjectOptions{TestCommand: []string{"true"}})
	if _, _, err := l.OpenDiscussion(testProject, iid, UserReviewer, NewDiscussion{Body: "late"}); err != nil {
		t.Fatal(err)
	}
	c := client(t, l, l.Tokens().Author)
	for read, want := range []int{0, 0, 1} {
		ds, _, err := c.Discussions.ListMergeRequestDiscussions(testProject, int64(iid), nil)
		if err != nil || len(ds) != want {
			t.Fatalf("read %d: %d discussions, want %d (%v)", read, len(ds), want, err)
		}
	}
}
