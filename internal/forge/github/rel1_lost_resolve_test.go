package github_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/convergeloop/converge/internal/emulator/fakehub"
	"github.com/convergeloop/converge/internal/engine"
	"github.com/convergeloop/converge/internal/forge"
	ghclient "github.com/convergeloop/converge/internal/forge/github"
	"github.com/convergeloop/converge/internal/prloop"
	"github.com/convergeloop/converge/internal/testutil/hubtest"
)

// losesAnswer sends every request and loses the answer of the nth one
// whose body holds mark after it landed: a reset after the write, as
// REL-1's faults make.
type losesAnswer struct {
	base http.RoundTripper
	mark string
	nth  int32
	seen atomic.Int32
	lost atomic.Bool
}

func (l *losesAnswer) RoundTrip(req *http.Request) (*http.Response, error) {
	var body []byte
	if req.Body != nil {
		body, _ = io.ReadAll(req.Body)
		req.Body.Close()
		req.Body = io.NopCloser(bytes.NewReader(body))
	}
	resp, err := l.base.RoundTrip(req)
	if err == nil && bytes.Contains(body, []byte(l.mark)) && l.seen.Add(1) == l.nth {
		l.lost.Store(true)
		resp.Body.Close()
		return nil, errors.New("read: connection reset by peer")
	}
	return resp, err
}

// TestREL1_LostBatchedResolveIsNotSentAgain: a round's replies land and
// its batched resolve is refused before it runs; the next step resolves
// alone, and that batch lands at the forge but its answer is lost. The
// step after must not send it again: the probe answers 304 (no REST
// answer holds a resolution) with the read from before the resolve, so
// the loop reads whole before it acts, sees the threads resolved, and
// writes nothing. At the forge each thread was resolved once.
func TestREL1_LostBatchedResolveIsNotSentAgain(t *testing.T) {
	hub, c, ref := emulatorPR(t)
	ids := manyThreads(t, hub, c, ref, 3)
	hub.InjectGraphQLFault("BatchResolve", http.StatusBadGateway, 1)
	lossy := &losesAnswer{base: hub.HTTPClient().Transport, mark: "BatchResolve", nth: 2}
	lc, err := ghclient.New(ghclient.Options{APIURL: hub.APIURL(), GraphQLURL: hub.GraphQLURL(), Token: hub.Tokens().Author,
		HTTPClient: &http.Client{Transport: lossy, Timeout: 30 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	st0, _ := hub.PR("acme", "widget", ref.Number)
	// Settled CI: the probe asks the PR alone.
	if err := hubtest.Client(t, hub, hub.Tokens().CI).SetCommitStatus(context.Background(), ref, st0.HeadSHA, forge.CommitStatus{State: forge.StatusSuccess, Context: "ci/test"}); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	st := prloop.State{Phase: prloop.PhaseReply, Round: 1, StartedAt: now, InitialHead: st0.HeadSHA, LastLoopSHA: st0.HeadSHA,
		HeadSeen: st0.HeadSHA, HeadSeenAt: now, LastActivityAt: now,
		Rounds: []prloop.RoundRecord{{N: 1, HeadSHA: st0.HeadSHA, StartedAt: now}}}
	for _, id := range ids {
		st.Threads = append(st.Threads, prloop.ThreadRecord{ThreadID: id, Round: 1, Disposition: prloop.DispAddressed, HeadSHA: st0.HeadSHA})
	}
	l := frugalLoop(t, hub, lc, ref)
	ctx := context.Background()
	resolvesSent := func() int {
		n := 0
		for _, w := range hub.Writes() {
			if strings.EqualFold(w.Actor, fakehub.LoginAuthor) {
				for _, f := range w.Fields {
					if f == "resolveReviewThread" {
						n++
					}
				}
			}
		}
		return n
	}
	before := hub.CountsFor(fakehub.LoginAuthor)
	for i := range 4 {
		obs, err := l.Observe(ctx, st, engine.Input[*prloop.ActResult]{Now: now})
		if err != nil {
			t.Fatal(err)
		}
		next, acts, _ := l.Decide(st, obs)
		for _, a := range acts {
			if a.Kind == prloop.ActWait {
				continue
			}
			if _, err := l.Act(ctx, next, obs, a); err != nil && !(i < 2 && a.Kind == prloop.ActResolve) {
				t.Fatalf("step %d: %s %s: %v", i, a.Kind, a.Key, err)
			}
		}
		st = next
	}
	if probes := hub.CountsFor(fakehub.LoginAuthor).Sub(before).NotModified; !lossy.lost.Load() || probes == 0 {
		t.Fatalf("lost answer %v, %d probe(s) answered 304: the test proves nothing", lossy.lost.Load(), probes)
	}
	if got := resolvesSent(); got != len(ids) {
		t.Errorf("%d resolves landed at the forge for %d threads: a landed resolve was sent again", got, len(ids))
	}
	pr, err := c.Observe(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	for _, th := range pr.Threads {
		if !th.IsResolved {
			t.Errorf("thread %s is open", th.ID)
		}
	}
}
