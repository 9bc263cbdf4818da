package fakehub

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/convergeloop/converge/internal/emulator/fakegit"
)

// WebhookConfig is the hub's one webhook, which, like a GitHub App's,
// receives the events of every repository.
type WebhookConfig struct {
	URL    string
	Secret string // signs every delivery (X-Hub-Signature-256)
	// Attempts bounds the tries of one delivery: an answer other than 2xx,
	// or none, is tried again after RetryDelay, doubling each time, with
	// the same X-GitHub-Delivery. GitHub itself never retries (its docs
	// suggest a redelivery script); the emulator plays that script.
	// Default 3.
	Attempts   int
	RetryDelay time.Duration // default 50ms
	// Client sends the deliveries; default one with GitHub's 10 s
	// deadline.
	Client *http.Client
}

// Delivery is one webhook delivery as the hub made it.
type Delivery struct {
	GUID   string // X-GitHub-Delivery; a redelivery repeats it
	Event  string // X-GitHub-Event
	Action string
	Repo   string // owner/name
	Number int    // the PR, when the event has one
	Body   []byte
	// Redelivery: queued again by Redeliver.
	Redelivery bool
	fakegit.DeliveryState
}

// maxDeliveryLog bounds the log; older deliveries cannot be redelivered,
// as GitHub keeps them only three days.
const maxDeliveryLog = 10000

// webhooks is the hub's webhook state, under its own lock: h.mu may be
// held when taking wh.mu, never the other way round.
type webhooks struct {
	mu    sync.Mutex
	cfg   *WebhookConfig
	log   []*Delivery
	queue []*Delivery
	kick  chan struct{}
	done  chan struct{} // closed and replaced whenever a delivery ends
	// refs are the branch tips last seen per repository, to tell which
	// branches a push moved.
	refs map[string]map[string]string
}

// SetWebhook points the hub's webhook at cfg.URL; an empty URL turns it
// off. The hub must be started.
func (h *Hub) SetWebhook(cfg WebhookConfig) error {
	if !h.Listening() {
		return errors.New("set webhook: the hub is not started")
	}
	if cfg.Attempts <= 0 {
		cfg.Attempts = 3
	}
	if cfg.RetryDelay <= 0 {
		cfg.RetryDelay = 50 * time.Millisecond
	}
	if cfg.Client == nil {
		cfg.Client = &http.Client{Timeout: 10 * time.Second}
	}
	// The tips now are the baseline the next push is compared with.
	h.mu.Lock()
	repos := make([]*repo, 0, len(h.repos))
	for _, rp := range h.repos {
		repos = append(repos, rp)
	}
	h.mu.Unlock()
	tips := map[string]map[string]string{}
	for _, rp := range repos {
		if refs, err := readRefs(h.Context(), rp.dir); err == nil {
			tips[rp.fullName()] = refs
		}
	}
	wh := &h.hooks
	wh.mu.Lock()
	defer wh.mu.Unlock()
	start := wh.kick == nil
	if start {
		wh.kick = make(chan struct{}, 1)
		wh.done = make(chan struct{})
	}
	wh.refs = tips
	if cfg.URL == "" {
		// Turned off: what was queued is dropped, so nobody waits for it.
		wh.cfg = nil
		for _, d := range wh.queue {
			d.Done, d.Err = true, "webhook removed"
		}
		if len(wh.queue) > 0 {
			wh.queue = nil
			close(wh.done)
			wh.done = make(chan struct{})
		}
		return nil
	}
	wh.cfg = &cfg
	if start {
		h.Go(h.deliverLoop)
	}
	return nil
}

// Deliveries lists the deliveries made so far, oldest first.
func (h *Hub) Deliveries() []Delivery {
	wh := &h.hooks
	wh.mu.Lock()
	defer wh.mu.Unlock()
	out := make([]Delivery, len(wh.log))
	for i, d := range wh.log {
		out[i] = *d
	}
	return out
}

// Redeliver sends the delivery guid again, with the same X-GitHub-Delivery
// and body, as GitHub's "Redeliver" does.
func (h *Hub) Redeliver(guid string) error {
	wh := &h.hooks
	wh.mu.Lock()
	defer wh.mu.Unlock()
	if wh.cfg == nil {
		return errors.New("redeliver: no webhook configured")
	}
	for i := len(wh.log) - 1; i >= 0; i-- {
		if d := wh.log[i]; d.GUID == guid {
			re := &Delivery{GUID: d.GUID, Event: d.Event, Action: d.Action, Repo: d.Repo, Number: d.Number, Body: d.Body, Redelivery: true}
			wh.addLocked(re)
			return nil
		}
	}
	return fmt.Errorf("redeliver: no delivery %s", guid)
}

// WaitDeliveries waits until every delivery queued so far is done
// (delivered or out of attempts).
func (h *Hub) WaitDeliveries(ctx context.Context) error {
	wh := &h.hooks
	return fakegit.WaitDelivered(ctx, func() (bool, <-chan struct{}) {
		wh.mu.Lock()
		defer wh.mu.Unlock()
		return slices.ContainsFunc(wh.log, func(d *Delivery) bool { return !d.Done }), wh.done
	})
}

// addLocked logs and queues d; wh.mu is held.
func (wh *webhooks) addLocked(d *Delivery) {
	wh.log = append(wh.log, d)
	if len(wh.log) > maxDeliveryLog {
		wh.log = wh.log[len(wh.log)-maxDeliveryLog:]
	}
	wh.queue = append(wh.queue, d)
	select {
	case wh.kick <- struct{}{}:
	default:
	}
}

// deliverLoop sends queued deliveries, concurrently, until ctx ends.
func (h *Hub) deliverLoop(ctx context.Context) {
	wh := &h.hooks
	fakegit.RunDeliveries(ctx, func() (func(context.Context), <-chan struct{}) {
		wh.mu.Lock()
		defer wh.mu.Unlock()
		if len(wh.queue) == 0 || wh.cfg == nil {
			return nil, wh.kick
		}
		d, cfg := wh.queue[0], *wh.cfg
		wh.queue = wh.queue[1:]
		return func(ctx context.Context) { h.send(ctx, cfg, d) }, wh.kick
	})
}

// send tries one delivery up to cfg.Attempts times.
func (h *Hub) send(ctx context.Context, cfg WebhookConfig, d *Delivery) {
	wh := &h.hooks
	fakegit.TryDelivery(ctx, cfg.RetryDelay, func(ctx context.Context) (int, error) { return post(ctx, cfg, d) },
		func(status int, err error) bool {
			wh.mu.Lock()
			done := d.Record(status, err, cfg.Attempts, ctx.Err() != nil)
			if done {
				close(wh.done)
				wh.done = make(chan struct{})
			}
			wh.mu.Unlock()
			h.log.Debug("fakehub webhook", "event", d.Event, "guid", d.GUID, "status", status, "err", err)
			return done
		})
}

func post(ctx context.Context, cfg WebhookConfig, d *Delivery) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, cfg.URL, bytes.NewReader(d.Body))
	if err != nil {
		return 0, err
	}
	m := hmac.New(sha256.New, []byte(cfg.Secret))
	m.Write(d.Body)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "GitHub-Hookshot/fakehub")
	req.Header.Set("X-GitHub-Event", d.Event)
	req.Header.Set("X-GitHub-Delivery", d.GUID)
	req.Header.Set("X-GitHub-Hook-ID", "1")
	if cfg.Secret != "" {
		req.Header.Set("X-Hub-Signature-256", "sha256="+hex.EncodeToString(m.Sum(nil)))
	}
	resp, err := cfg.Client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	return resp.StatusCode, nil
}

func newGUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	x := hex.EncodeToString(b[:])
	return x[:8] + "-" + x[8:12] + "-" + x[12:16] + "-" + x[16:20] + "-" + x[20:]
}

// hookLocked turns one hub event into the deliveries GitHub would make;
// h.mu is held. Pushes come from pushHooks, which knows the branches.
func (h *Hub) hookLocked(ev Event) {
	wh := &h.hooks
	wh.mu.Lock()
	on := wh.cfg != nil
	wh.mu.Unlock()
	if !on {
		return
	}
	rp := h.repoLocked(ev.Owner, ev.Repo)
	if rp == nil {
		return
	}
	var p *pr
	if ev.Number > 0 {
		p = rp.pr(ev.Number)
	}
	sender := h.userByLogin(ev.Actor)
	base := func(action string) map[string]any {
		m := map[string]any{"repository": h.hookRepoJSON(rp), "sender": h.userJSON(sender, "")}
		if action != "" {
			m["action"] = action
		}
		if p != nil {
			m["pull_request"] = h.hookPullJSON(p)
			m["number"] = p.number
		}
		return m
	}
	var out []hookOut
	add := func(event, action string, m map[string]any) {
		out = append(out, hookOut{event: event, action: action, body: m})
	}
	switch ev.Kind {
	case "pr_opened", "edited", "review_requested", "label", "state", "push":
		if p == nil {
			return
		}
		action := map[string]string{"pr_opened": "opened", "edited": "edited", "review_requested": "review_requested", "push": "synchronize"}[ev.Kind]
		m := base("")
		switch ev.Kind {
		case "label":
			action = "labeled"
			name := ev.Detail
			if n, ok := strings.CutPrefix(name, "-"); ok {
				action, name = "unlabeled", n
			}
			m["label"] = map[string]any{"name": name}
		case "state":
			action = ev.Detail
			if action == "merged" {
				action = "closed"
			}
		case "review_requested":
			m["requested_reviewer"] = h.userJSON(h.userByLogin(ev.Detail), ev.Detail)
		case "push":
			m["after"] = p.headSHA
			if len(p.heads) > 1 {
				m["before"] = p.heads[len(p.heads)-2]
			}
		}
		m["action"] = action
		add("pull_request", action, m)
	case "review":
		if p == nil {
			return
		}
		dismissed := strings.HasPrefix(ev.Detail, "DISMISSED")
		var rv *review
		for _, r := range p.reviews {
			if (r.state == "DISMISSED") == dismissed && (rv == nil || r.id > rv.id) {
				rv = r
			}
		}
		if rv == nil {
			return
		}
		action := "submitted"
		if dismissed {
			action = "dismissed"
		}
		m := base(action)
		rj := h.reviewJSON(rv)
		rj["state"] = strings.ToLower(rv.state) // webhooks spell states lower-case
		m["review"] = rj
		add("pull_request_review", action, m)
		if !dismissed {
			for _, t := range p.threads {
				for _, c := range t.comments {
					if c.reviewID == rv.id {
						cm := base("created")
						cm["comment"] = h.hookCommentJSON(c)
						add("pull_request_review_comment", "created", cm)
					}
				}
			}
		}
	case "comment":
		if p == nil {
			return
		}
		// The comment just made is the newest object on the PR: ids are
		// increasing across kinds.
		var ic *issueComment
		var rc *reviewComment
		for _, c := range p.issueComments {
			if ic == nil || c.id > ic.id {
				ic = c
			}
		}
		for _, t := range p.threads {
			for _, c := range t.comments {
				if rc == nil || c.id > rc.id {
					rc = c
				}
			}
		}
		switch {
		case ic != nil && (rc == nil || ic.id > rc.id):
			m := map[string]any{"action": "created", "repository": h.hookRepoJSON(rp), "sender": h.userJSON(sender, ""),
				"issue":   h.hookIssueJSON(p),
				"comment": h.issueCommentJSON(p, ic)}
			add("issue_comment", "created", m)
		case rc != nil:
			m := base("created")
			m["comment"] = h.hookCommentJSON(rc)
			add("pull_request_review_comment", "created", m)
		}
	case "thread_resolved", "thread_unresolved":
		if p == nil {
			return
		}
		action := strings.TrimPrefix(ev.Kind, "thread_")
		m := base(action)
		if t, ok := h.nodes[ev.Detail].(*thread); ok {
			var cs []any
			for _, c := range t.comments {
				cs = append(cs, h.hookCommentJSON(c))
			}
			m["thread"] = map[string]any{"node_id": t.nodeID(), "comments": cs}
		}
		add("pull_request_review_thread", action, m)
	case "check":
		cr := h.hookCheckRunLocked(rp, ev)
		if cr == nil {
			return
		}
		prs := h.hookPRsForSHA(rp, cr.sha)
		action := "created"
		if cr.status == "completed" {
			action = "completed"
		}
		m := map[string]any{"action": action, "repository": h.hookRepoJSON(rp), "sender": h.userJSON(sender, "")}
		cj := h.checkRunJSON(rp, cr)
		cj["pull_requests"] = prs
		cj["check_suite"] = map[string]any{"id": cr.id, "head_sha": cr.sha, "head_branch": h.hookBranchForSHA(rp, cr.sha)}
		m["check_run"] = cj
		add("check_run", action, m)
		if action == "completed" {
			if concl, ok := suiteConclusion(rp.latestCheckRuns(cr.sha)); ok {
				add("check_suite", "completed", map[string]any{"action": "completed", "repository": h.hookRepoJSON(rp), "sender": h.userJSON(sender, ""),
					"check_suite": map[string]any{"id": cr.id, "head_sha": cr.sha, "head_branch": h.hookBranchForSHA(rp, cr.sha),
						"status": "completed", "conclusion": concl, "pull_requests": prs}})
			}
		}
	case "status":
		ctxName, _, _ := strings.Cut(ev.Detail, "=")
		var st *commitStatus
		for _, s := range rp.statuses {
			if s.sha == ev.SHA && s.context == ctxName && (st == nil || s.id > st.id) {
				st = s
			}
		}
		if st == nil {
			return
		}
		var branches []any
		for name, sha := range h.hooks.tipsOf(rp.fullName()) {
			if sha == st.sha {
				branches = append(branches, map[string]any{"name": name, "commit": map[string]any{"sha": sha}})
			}
		}
		if branches == nil {
			branches = []any{}
		}
		m := h.statusJSON(rp, st)
		m["sha"] = st.sha
		m["name"] = rp.fullName()
		m["commit"] = map[string]any{"sha": st.sha}
		m["branches"] = branches
		m["repository"] = h.hookRepoJSON(rp)
		m["sender"] = h.userJSON(sender, "")
		add("status", "", m)
	default:
		return // copilot_started, copilot_finished: no webhook on GitHub
	}
	h.queueHooksLocked(rp, ev.Number, out)
}

type hookOut struct {
	event, action string
	body          map[string]any
}

// queueHooksLocked signs nothing yet: it renders and queues; h.mu is held.
func (h *Hub) queueHooksLocked(rp *repo, number int, out []hookOut) {
	wh := &h.hooks
	wh.mu.Lock()
	defer wh.mu.Unlock()
	if wh.cfg == nil {
		return
	}
	for _, o := range out {
		body, err := json.Marshal(o.body)
		if err != nil {
			h.log.Error("fakehub webhook payload", "event", o.event, "err", err)
			continue
		}
		wh.addLocked(&Delivery{GUID: newGUID(), Event: o.event, Action: o.action, Repo: rp.fullName(), Number: number, Body: body})
	}
}

// tipsOf is the branch tips last seen of a repository.
func (wh *webhooks) tipsOf(repo string) map[string]string {
	wh.mu.Lock()
	defer wh.mu.Unlock()
	out := map[string]string{}
	for k, v := range wh.refs[repo] {
		out[k] = v
	}
	return out
}

// pushHooks delivers a push event per branch that moved since the last
// look, before the PRs on them are updated (as GitHub sends push before
// pull_request synchronize).
func (h *Hub) pushHooks(rp *repo, refs map[string]string, by *user) {
	wh := &h.hooks
	wh.mu.Lock()
	if wh.refs == nil {
		wh.refs = map[string]map[string]string{}
	}
	old := wh.refs[rp.fullName()]
	next := map[string]string{}
	for k, v := range refs {
		next[k] = v
	}
	wh.refs[rp.fullName()] = next
	on := wh.cfg != nil
	wh.mu.Unlock()
	if !on {
		return
	}
	const zero = "0000000000000000000000000000000000000000"
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []hookOut
	for branch, sha := range refs {
		before, seen := old[branch]
		if seen && before == sha {
			continue
		}
		if !seen {
			before = zero
		}
		out = append(out, hookOut{event: "push", body: map[string]any{
			"ref": "refs/heads/" + branch, "before": before, "after": sha, "created": !seen, "deleted": false, "forced": false,
			"repository": h.hookRepoJSON(rp), "pusher": map[string]any{"name": by.restLogin}, "sender": h.userJSON(by, ""),
			"head_commit": map[string]any{"id": sha},
		}})
	}
	for branch, before := range old {
		if _, ok := refs[branch]; !ok {
			out = append(out, hookOut{event: "push", body: map[string]any{
				"ref": "refs/heads/" + branch, "before": before, "after": zero, "created": false, "deleted": true, "forced": false,
				"repository": h.hookRepoJSON(rp), "pusher": map[string]any{"name": by.restLogin}, "sender": h.userJSON(by, ""),
			}})
		}
	}
	h.queueHooksLocked(rp, 0, out)
}

func (h *Hub) hookRepoJSON(rp *repo) map[string]any {
	return map[string]any{
		"id": rp.id, "node_id": rp.nodeID(), "name": rp.name, "full_name": rp.fullName(), "private": false,
		"owner": h.userJSON(h.ownerUser(rp.owner), rp.owner), "html_url": h.BaseURL() + "/" + rp.fullName(),
		"url": h.APIURL() + "/repos/" + rp.fullName(), "default_branch": rp.defaultBranch,
	}
}

// hookPullJSON is the pull_request object of a payload, without the
// mergeability a webhook does not carry.
func (h *Hub) hookPullJSON(p *pr) map[string]any {
	rp := p.repo
	state := "open"
	if p.state != "OPEN" {
		state = "closed"
	}
	labels := []any{}
	for _, l := range p.labels {
		labels = append(labels, h.labelJSON(rp, l))
	}
	branch := func(ref, sha string) map[string]any {
		return map[string]any{"label": rp.owner + ":" + ref, "ref": ref, "sha": sha, "repo": h.hookRepoJSON(rp)}
	}
	return map[string]any{
		"url": fmt.Sprintf("%s/repos/%s/pulls/%d", h.APIURL(), rp.fullName(), p.number), "id": p.id, "node_id": p.nodeID(),
		"html_url": h.PRURL(rp.owner, rp.name, p.number), "number": p.number, "state": state,
		"title": p.title, "body": p.body, "user": h.userJSON(p.author, ""), "labels": labels, "draft": p.draft,
		"merged": p.state == "MERGED", "head": branch(p.headRef, p.headSHA), "base": branch(p.baseRef, p.baseSHA),
		"created_at": ts(p.createdAt), "updated_at": ts(p.updatedAt), "closed_at": ts(p.closedAt), "merged_at": ts(p.mergedAt),
	}
}

func (h *Hub) hookIssueJSON(p *pr) map[string]any {
	rp := p.repo
	state := "open"
	if p.state != "OPEN" {
		state = "closed"
	}
	return map[string]any{
		"id": p.id, "number": p.number, "title": p.title, "state": state, "user": h.userJSON(p.author, ""),
		"html_url": h.PRURL(rp.owner, rp.name, p.number),
		"pull_request": map[string]any{
			"url":      fmt.Sprintf("%s/repos/%s/pulls/%d", h.APIURL(), rp.fullName(), p.number),
			"html_url": h.PRURL(rp.owner, rp.name, p.number),
		},
	}
}

// hookCommentJSON is a review comment as a payload carries it; the
// thread's current line is not worked out (that needs git).
func (h *Hub) hookCommentJSON(c *reviewComment) map[string]any {
	t := c.thread
	p := t.pr
	j := map[string]any{
		"id": c.id, "node_id": c.nodeID(), "pull_request_review_id": c.reviewID, "path": t.path, "body": c.body,
		"user": h.userJSON(c.author, c.author.surfaceLogin()), "commit_id": p.headSHA, "original_commit_id": t.commitSHA,
		"original_line": t.line, "side": t.side, "diff_hunk": t.diffHunk,
		"created_at": ts(c.createdAt), "updated_at": ts(c.createdAt), "html_url": h.commentURL(c),
	}
	if c.replyTo != 0 {
		j["in_reply_to_id"] = c.replyTo
	}
	return j
}

// hookCheckRunLocked finds the check run an event is about: the newest on
// its commit in the state the event names ("in_progress", "success",
// "completed:failure", ...).
func (h *Hub) hookCheckRunLocked(rp *repo, ev Event) *checkRun {
	status, concl, hasConcl := strings.Cut(ev.Detail, ":")
	switch status {
	case "queued", "in_progress", "completed":
	default:
		status, concl, hasConcl = "completed", ev.Detail, true
	}
	var best, newest *checkRun
	for _, c := range rp.checkRuns {
		if c.sha != ev.SHA {
			continue
		}
		if newest == nil || c.id > newest.id {
			newest = c
		}
		if c.status == status && (!hasConcl || c.conclusion == concl) && (best == nil || c.id > best.id) {
			best = c
		}
	}
	if best == nil {
		return newest
	}
	return best
}

func (h *Hub) hookPRsForSHA(rp *repo, sha string) []any {
	out := []any{}
	for _, p := range rp.prs {
		if p.state == "OPEN" && p.headSHA == sha {
			out = append(out, map[string]any{
				"id": p.id, "number": p.number, "url": fmt.Sprintf("%s/repos/%s/pulls/%d", h.APIURL(), rp.fullName(), p.number),
				"head": map[string]any{"ref": p.headRef, "sha": p.headSHA, "repo": map[string]any{"id": rp.id, "name": rp.name}},
				"base": map[string]any{"ref": p.baseRef, "sha": p.baseSHA, "repo": map[string]any{"id": rp.id, "name": rp.name}},
			})
		}
	}
	return out
}

func (h *Hub) hookBranchForSHA(rp *repo, sha string) any {
	for _, p := range rp.prs {
		if p.headSHA == sha {
			return p.headRef
		}
	}
	return nil
}

// suiteConclusion is the suite's conclusion once every run on the commit
// completed.
func suiteConclusion(runs []*checkRun) (string, bool) {
	concl := "success"
	for _, c := range runs {
		if c.status != "completed" {
			return "", false
		}
		switch c.conclusion {
		case "success", "neutral", "skipped":
		default:
			concl = "failure"
		}
	}
	return concl, len(runs) > 0
}
