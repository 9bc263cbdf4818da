package github

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"time"

	"github.com/convergeloop/converge/internal/forge"
)

// The conditional change probe (PR-O1): before the GraphQL observation,
// conditional REST GETs whose ETags move with what the observation reads.
// Answered 304 they are free on the primary limit, and the last whole
// read is handed back marked Unchanged: an unchanged PR costs one request
// and no point per poll.
//
// Which endpoints. GitHub's ETag is a digest of the answer, so it moves
// exactly when the answer does. GET /repos/{o}/{r}/pulls/{n} answers with
// the PR's state, draft flag, title, body, head and base SHAs (a push or a
// force-push), mergeability, labels, requested reviewers, its counts of
// conversation comments, review comments and commits, and updated_at,
// which GitHub moves on reviews, comments, pushes, labels and review
// requests. That is every fact of the observation but two:
//
//   - CI on the head. Check runs and statuses show in the PR only through
//     mergeable_state, which does not tell pending from failed. While the
//     last read's head has a check that is not finished (or none yet), the
//     probe adds GET /commits/{head}/status and GET
//     /commits/{head}/check-runs, each conditional; a settled head is
//     probed through the PR alone, so a re-run of a finished check is seen
//     at the next whole read.
//   - A thread's resolution, and edits to a comment's body: no REST
//     endpoint answers with them.
//
// So the probe fails closed twice over: any answer but 304 on every
// endpoint, a fault, or a last read older than probeMaxAge means a whole
// read; and an Unchanged observation is for waiting only — a loop reads
// the PR whole before it acts or ends on it. Observe probes only when
// asked (forge.WithProbe): by default it reads whole, as the Forge
// contract says. The first observation of a PR is a whole read (nothing
// to compare with); the probe starts with the second.
//
// An ETag is valid for the next probe when it was taken just before the
// whole read kept with it: a change in between makes the next probe read
// whole again. But the PR's answer shows reviews only through updated_at,
// which has one-second granularity: a review posted in the same second as
// the change before it leaves the answer byte for byte as it was (the
// fleet's test hung on this: Copilot requested, its review posted and the
// request gone, all within one second, and the probe handed back a read
// without the review for up to probeMaxAge). So an ETag on the PR is kept
// only when its answer's Date is etagSettle past its updated_at: every
// later change then moves updated_at to a later second. Both times are
// GitHub's clock, so no skew of ours counts; a missing one proves nothing.
//
// Two more rules hold even if GitHub did not move updated_at on a review
// request or a review: a whole read asked for without a probe keeps no
// ETags (they would stand for the PR as it was before what that read
// saw), and requesting a review drops them (RequestReviews).

// probeMaxAge bounds how long probes may stand in for a whole read, so a
// change no endpoint shows is seen within it even while nothing acts.
const probeMaxAge = 15 * time.Minute

// etagSettle is how long after the PR's updated_at its ETag may stand for
// it: past one second of updated_at's granularity, with a second more for
// the time between GitHub reading the PR and dating the answer.
const etagSettle = 2 * time.Second

// probeEntry is the last whole read of one PR and the ETags taken just
// before it, by witness URL.
type probeEntry struct {
	pr     *forge.PullRequest
	readAt time.Time // client clock
	etags  map[string]string
}

// witness is one conditional GET of the probe.
type witness struct{ path string }

// witnesses are the endpoints that prove pr unchanged (see above).
func witnesses(ref forge.PRRef, pr *forge.PullRequest) []witness {
	base := fmt.Sprintf("repos/%s/%s/", url.PathEscape(ref.Owner), url.PathEscape(ref.Repo))
	ws := []witness{{base + fmt.Sprintf("pulls/%d", ref.Number)}}
	if pr != nil && pr.HeadSHA != "" && !ciSettled(pr.Checks) {
		ws = append(ws,
			witness{base + "commits/" + url.PathEscape(pr.HeadSHA) + "/status?per_page=100"},
			witness{base + "commits/" + url.PathEscape(pr.HeadSHA) + "/check-runs?per_page=100"})
	}
	return ws
}

// ciSettled reports whether every check and status on the head finished,
// and there is at least one: only then may a change to CI wait for the
// next whole read.
func ciSettled(ch forge.CheckRollup) bool {
	switch ch.State {
	case forge.CISuccess, forge.CIFailure, forge.CIError:
	default:
		return false
	}
	if len(ch.Contexts) == 0 {
		return false
	}
	for _, cx := range ch.Contexts {
		if cx.IsStatus {
			if cx.Conclusion == "PENDING" || cx.Conclusion == "EXPECTED" || cx.Conclusion == "" {
				return false
			}
		} else if cx.Status != forge.CheckCompleted {
			return false
		}
	}
	return true
}

// probe runs the change probe for ref. hit is the last whole read, marked
// Unchanged, when every witness answered 304; otherwise etags are what
// the witnesses answered now, for remember to keep with the whole read
// that follows. A probe that fails proves nothing: no hit, no ETags.
func (c *Client) probe(ctx context.Context, ref forge.PRRef) (hit *forge.PullRequest, etags map[string]string) {
	c.mu.Lock()
	e := c.probes[ref]
	c.mu.Unlock()
	if e == nil {
		// The first read of this PR: nothing to compare with.
		return nil, nil
	}
	if !forge.ProbeAllowed(ctx) {
		// A whole read asked for: no probe, and no ETags kept with it
		// (see above); the next probe takes them again.
		return nil, nil
	}
	etags = map[string]string{}
	unchanged := true
	var date time.Time
	for i, w := range witnesses(ref, e.pr) {
		prev := e.etags[w.path]
		var body prStamp
		into := any(nil)
		if i == 0 {
			into = &body
		}
		tag, notModified, at, err := c.conditionalGet(ctx, w.path, prev, into)
		if err != nil {
			c.log.Debug("github: change probe failed; reading whole", "pr", ref.String(), "err", err)
			return nil, nil
		}
		etags[w.path], date = tag, at
		if !notModified {
			unchanged = false
			if i == 0 {
				if !body.settled(at) {
					delete(etags, w.path)
				}
				// A changed PR (maybe a new head) makes the last head's
				// CI witnesses moot.
				break
			}
		}
	}
	fresh := c.now().Sub(e.readAt) <= probeMaxAge
	if !unchanged || !fresh {
		return nil, etags
	}
	pr := *e.pr
	pr.Unchanged = true
	pr.ObservedAt = c.now()
	if !date.IsZero() {
		pr.ObservedAt = date
	}
	return &pr, nil
}

// dropETags makes the next probe of ref read whole (and take its ETags
// again), after a write whose answer the PR's REST representation may
// not show.
func (c *Client) dropETags(ref forge.PRRef) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e := c.probes[ref]; e != nil {
		e.etags = nil
	}
}

// prStamp is what the probe reads of the PR's REST answer.
type prStamp struct {
	UpdatedAt time.Time `json:"updated_at"`
}

// settled reports whether an ETag on the answer, dated date, proves every
// later change to the PR: fail closed when either time is missing.
func (s prStamp) settled(date time.Time) bool {
	return !s.UpdatedAt.IsZero() && !date.IsZero() && date.Sub(s.UpdatedAt) >= etagSettle
}

// conditionalGet sends one GET with If-None-Match: prev (when any) and
// reports the ETag now, whether the answer was 304, and its Date. A 200's
// JSON body is decoded into into, when not nil.
func (c *Client) conditionalGet(ctx context.Context, path, prev string, into any) (etag string, notModified bool, date time.Time, err error) {
	req, err := c.rest.NewRequest(ctx, http.MethodGet, path, nil)
	if err != nil {
		return "", false, date, err
	}
	if prev != "" {
		req.Header.Set("If-None-Match", prev)
	}
	// The body is read to its end (and dropped), so the connection goes
	// back to the pool: unread, it is closed and the next probe pays a
	// new TLS handshake.
	var body bytes.Buffer
	var sink io.Writer = io.Discard
	if into != nil {
		sink = &body
	}
	resp, err := c.rest.Do(req, sink)
	if resp != nil {
		date, _ = http.ParseTime(resp.Header.Get("Date"))
	}
	if resp != nil && resp.StatusCode == http.StatusNotModified && prev != "" {
		return prev, true, date, nil
	}
	if err != nil {
		return "", false, date, err
	}
	if into != nil {
		if err := json.Unmarshal(body.Bytes(), into); err != nil {
			return "", false, date, fmt.Errorf("decode %s: %w", path, err)
		}
	}
	return resp.Header.Get("ETag"), false, date, nil
}

// remember keeps a whole read and the ETags taken before it. ETags from a
// probe of an older head are kept only for the witnesses of this read.
func (c *Client) remember(ref forge.PRRef, pr *forge.PullRequest, etags map[string]string) {
	keep := map[string]string{}
	for _, w := range witnesses(ref, pr) {
		if t := etags[w.path]; t != "" {
			keep[w.path] = t
		}
	}
	now := c.now()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.probes == nil {
		c.probes = map[forge.PRRef]*probeEntry{}
	}
	c.probes[ref] = &probeEntry{pr: pr, readAt: now, etags: keep}
	// A PR no longer observed (its loop ended) is dropped once its read
	// is too old to stand in for anything, so a long-lived client does
	// not keep every PR it ever read.
	if len(c.probes)%256 == 0 {
		for r, e := range c.probes {
			if now.Sub(e.readAt) > probeMaxAge {
				delete(c.probes, r)
			}
		}
	}
}

// ProbeWitnesses lists the endpoints the next probe of ref asks, for
// tests and `converge bench`; nil before the first whole read.
func (c *Client) ProbeWitnesses(ref forge.PRRef) []string {
	c.mu.Lock()
	e := c.probes[ref]
	c.mu.Unlock()
	if e == nil {
		return nil
	}
	var out []string
	for _, w := range witnesses(ref, e.pr) {
		out = append(out, w.path)
	}
	return slices.Clip(out)
}
