package fakelab

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha1"
	"crypto/tls"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/convergeloop/converge/internal/emulator/fakegit"
)

// Project webhooks, delivered as GitLab delivers them (docs.gitlab.com,
// "Webhooks" and "Webhook events"): one POST per event and hook, JSON in
// the documented shapes, with X-Gitlab-Event, the hook's secret token as
// X-Gitlab-Token (GitLab signs nothing), X-Gitlab-Event-UUID,
// X-Gitlab-Webhook-UUID, X-Gitlab-Instance and Idempotency-Key (the same
// on every retry and resend of one delivery).
//
// What fires what, as GitLab does:
//   - Merge Request Hook: open; update (oldrev on a push to the source
//     branch, changes.labels, changes.reviewers, all threads resolved);
//     close; reopen; approval/approved; unapproval/unapproved.
//   - Note Hook: every note a person or bot writes on a merge request
//     (type DiffNote with position and line_code on a line, DiscussionNote
//     in a thread, null for a plain comment); Duo's edit of its progress
//     note (action update). System notes fire none.
//   - Pipeline Hook: each status change of a pipeline, with merge_request
//     when the pipeline ran on an open merge request's head.
//   - Push Hook: each branch a push (or a seeded commit) moved.
//
// Resolving a thread fires nothing, except the resolve that leaves none
// unresolved (GitLab 14.3, a Merge Request Hook update); reopening one
// fires nothing (gitlab-org/gitlab#349623). An external commit status
// (POST /statuses) fires nothing here.

// Webhook event names (X-Gitlab-Event).
const (
	EventMergeRequest = "Merge Request Hook"
	EventNote         = "Note Hook"
	EventPipeline     = "Pipeline Hook"
	EventPush         = "Push Hook"
)

// Hook is a project webhook, as the project hooks API takes it.
type Hook struct {
	URL string
	// Token is sent as X-Gitlab-Token with every delivery.
	Token               string
	PushEvents          bool
	MergeRequestsEvents bool
	NoteEvents          bool
	PipelineEvents      bool
	// SkipTLSVerify is enable_ssl_verification=false.
	SkipTLSVerify bool

	// Attempts bounds the tries of one delivery: an answer other than 2xx,
	// or none, is tried again after RetryDelay, doubling each time, with
	// the same Idempotency-Key. Default 3.
	Attempts   int
	RetryDelay time.Duration // default 50ms
	// Client sends the deliveries; default one with GitLab's 10 s timeout.
	Client *http.Client
}

// HookDelivery is one webhook delivery as the lab made it.
type HookDelivery struct {
	// ID is the Idempotency-Key: a retry and a resend repeat it.
	ID string
	// EventUUID is X-Gitlab-Event-UUID, new for a resend.
	EventUUID string
	HookID    int
	Event     string // X-Gitlab-Event
	Kind      string // object_kind
	Action    string // object_attributes.action, a pipeline's status
	Project   string
	IID       int // the merge request, when the event has one
	Body      []byte
	Resend    bool
	fakegit.DeliveryState
}

const maxHookLog = 10000

type hookReg struct {
	id        int
	projectID int
	uuid      string
	cfg       Hook
	name      string
	desc      string
	createdAt time.Time
}

// labHooks is the lab's webhook state, under its own lock: l.mu may be
// held when taking hs.mu, never the other way round, so a receiver that
// calls the lab back while a delivery is in flight never deadlocks.
type labHooks struct {
	mu     sync.Mutex
	regs   []*hookReg
	nextID int
	log    []*HookDelivery
	queue  []*HookDelivery
	kick   chan struct{}
	done   chan struct{} // closed and replaced whenever a delivery ends
	// tips are the branch tips last seen per project id, to tell which
	// branches a push moved.
	tips map[int]map[string]string
}

// AddHook registers a webhook on the project at path and returns its id.
// The lab must be started.
func (l *Lab) AddHook(path string, h Hook) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	p := l.projectLocked(path)
	if p == nil {
		return 0, fmt.Errorf("add hook: no project %s", path)
	}
	return l.addHookLocked(p, h, "", "")
}

func (l *Lab) addHookLocked(p *project, h Hook, name, desc string) (int, error) {
	if !l.Listening() {
		return 0, errors.New("add hook: the lab is not started")
	}
	if !strings.HasPrefix(h.URL, "http://") && !strings.HasPrefix(h.URL, "https://") {
		return 0, fmt.Errorf("add hook: url %q is blocked: only allowed schemes are http, https", h.URL)
	}
	if h.Attempts <= 0 {
		h.Attempts = 3
	}
	if h.RetryDelay <= 0 {
		h.RetryDelay = 50 * time.Millisecond
	}
	if h.Client == nil {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		if h.SkipTLSVerify {
			tr.TLSClientConfig = &tls.Config{InsecureSkipVerify: true} //nolint:gosec // the hook asked for it (enable_ssl_verification=false)
		}
		h.Client = &http.Client{Transport: tr, Timeout: 10 * time.Second}
	}
	// The tips now are the baseline the next push is compared with.
	tips, _ := fakegit.ReadRefs(l.Context(), p.dir)
	hs := &l.hooks
	hs.mu.Lock()
	defer hs.mu.Unlock()
	start := hs.kick == nil
	if start {
		hs.kick = make(chan struct{}, 1)
		hs.done = make(chan struct{})
		hs.tips = map[int]map[string]string{}
	}
	if _, seen := hs.tips[p.id]; !seen {
		hs.tips[p.id] = tips
	}
	hs.nextID++
	reg := &hookReg{id: hs.nextID, projectID: p.id, uuid: newUUID(), cfg: h, name: name, desc: desc, createdAt: l.now()}
	hs.regs = append(hs.regs, reg)
	if start {
		l.Go(l.deliverHooks)
	}
	return reg.id, nil
}

// RemoveHook deletes a webhook; what was queued for it is dropped.
func (l *Lab) RemoveHook(id int) error {
	hs := &l.hooks
	hs.mu.Lock()
	defer hs.mu.Unlock()
	for i, r := range hs.regs {
		if r.id == id {
			hs.regs = append(hs.regs[:i], hs.regs[i+1:]...)
			hs.dropLocked(id)
			return nil
		}
	}
	return fmt.Errorf("remove hook: no hook %d", id)
}

func (hs *labHooks) dropLocked(hookID int) {
	kept := hs.queue[:0]
	dropped := false
	for _, d := range hs.queue {
		if d.HookID == hookID {
			d.Done, d.Err, dropped = true, "webhook removed", true
			continue
		}
		kept = append(kept, d)
	}
	hs.queue = kept
	if dropped {
		close(hs.done)
		hs.done = make(chan struct{})
	}
}

// HookDeliveries lists the deliveries made so far, oldest first.
func (l *Lab) HookDeliveries() []HookDelivery {
	hs := &l.hooks
	hs.mu.Lock()
	defer hs.mu.Unlock()
	out := make([]HookDelivery, len(hs.log))
	for i, d := range hs.log {
		out[i] = *d
	}
	return out
}

// ResendHookDelivery sends a delivery again with the same body and
// Idempotency-Key and a new X-Gitlab-Event-UUID, as GitLab's "Resend
// request" does.
func (l *Lab) ResendHookDelivery(id string) error {
	hs := &l.hooks
	hs.mu.Lock()
	defer hs.mu.Unlock()
	for i := len(hs.log) - 1; i >= 0; i-- {
		d := hs.log[i]
		if d.ID != id {
			continue
		}
		if hs.reg(d.HookID) == nil {
			return fmt.Errorf("resend: hook %d is gone", d.HookID)
		}
		re := &HookDelivery{ID: d.ID, EventUUID: newUUID(), HookID: d.HookID, Event: d.Event, Kind: d.Kind, Action: d.Action,
			Project: d.Project, IID: d.IID, Body: d.Body, Resend: true}
		hs.addLocked(re)
		return nil
	}
	return fmt.Errorf("resend: no delivery %s", id)
}

// WaitHookDeliveries waits until every delivery queued so far is done
// (delivered or out of attempts).
func (l *Lab) WaitHookDeliveries(ctx context.Context) error {
	hs := &l.hooks
	return fakegit.WaitDelivered(ctx, func() (bool, <-chan struct{}) {
		hs.mu.Lock()
		defer hs.mu.Unlock()
		return slices.ContainsFunc(hs.log, func(d *HookDelivery) bool { return !d.Done }), hs.done
	})
}

func (hs *labHooks) reg(id int) *hookReg {
	for _, r := range hs.regs {
		if r.id == id {
			return r
		}
	}
	return nil
}

func (hs *labHooks) addLocked(d *HookDelivery) {
	hs.log = append(hs.log, d)
	if len(hs.log) > maxHookLog {
		hs.log = hs.log[len(hs.log)-maxHookLog:]
	}
	hs.queue = append(hs.queue, d)
	select {
	case hs.kick <- struct{}{}:
	default:
	}
}

// deliverHooks sends queued deliveries, concurrently, until ctx ends; a
// delivery whose hook was removed since it was queued is dropped.
func (l *Lab) deliverHooks(ctx context.Context) {
	hs := &l.hooks
	fakegit.RunDeliveries(ctx, func() (func(context.Context), <-chan struct{}) {
		hs.mu.Lock()
		defer hs.mu.Unlock()
		for len(hs.queue) > 0 {
			d := hs.queue[0]
			hs.queue = hs.queue[1:]
			if r := hs.reg(d.HookID); r != nil {
				cfg := r.cfg
				return func(ctx context.Context) { l.sendHook(ctx, cfg, d) }, hs.kick
			}
			d.Done, d.Err = true, "webhook removed"
		}
		return nil, hs.kick
	})
}

func (l *Lab) sendHook(ctx context.Context, cfg Hook, d *HookDelivery) {
	hs := &l.hooks
	fakegit.TryDelivery(ctx, cfg.RetryDelay, func(ctx context.Context) (int, error) { return l.postHook(ctx, cfg, d) },
		func(status int, err error) bool {
			hs.mu.Lock()
			done := d.Record(status, err, cfg.Attempts, ctx.Err() != nil)
			if done {
				close(hs.done)
				hs.done = make(chan struct{})
			}
			hs.mu.Unlock()
			l.log.Debug("fakelab webhook", "event", d.Event, "id", d.ID, "status", status, "err", err)
			return done
		})
}

func (l *Lab) postHook(ctx context.Context, cfg Hook, d *HookDelivery) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, cfg.URL, bytes.NewReader(d.Body))
	if err != nil {
		return 0, err
	}
	h := req.Header
	h.Set("Content-Type", "application/json")
	h.Set("User-Agent", "GitLab/18.6.0-fakelab")
	h.Set("X-Gitlab-Event", d.Event)
	h.Set("X-Gitlab-Event-UUID", d.EventUUID)
	h.Set("Idempotency-Key", d.ID)
	h.Set("X-Gitlab-Instance", l.URL())
	l.hooks.mu.Lock()
	if r := l.hooks.reg(d.HookID); r != nil {
		h.Set("X-Gitlab-Webhook-UUID", r.uuid)
	}
	l.hooks.mu.Unlock()
	if cfg.Token != "" {
		h.Set("X-Gitlab-Token", cfg.Token)
	}
	resp, err := cfg.Client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	return resp.StatusCode, nil
}

func newUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	x := hex.EncodeToString(b[:])
	return x[:8] + "-" + x[8:12] + "-" + x[12:16] + "-" + x[16:20] + "-" + x[20:]
}

// hookOut is one payload to deliver to every hook of a project that
// takes its kind.
type hookOut struct {
	event, kind, action string
	iid                 int
	body                map[string]any
}

// hookLocked turns one lab event into the deliveries GitLab would make;
// l.mu is held. The payloads are rendered now, from the state the event
// left, as GitLab renders them when the event happens.
func (l *Lab) hookLocked(ev Event) {
	hs := &l.hooks
	p := l.projectLocked(ev.Project)
	if p == nil {
		return
	}
	hs.mu.Lock()
	on := false
	for _, r := range hs.regs {
		on = on || r.projectID == p.id
	}
	hs.mu.Unlock()
	if !on {
		return
	}
	var m *mr
	if ev.IID > 0 {
		m = p.mr(ev.IID)
	}
	actor := l.userLocked(ev.Actor)
	var out []hookOut
	mrHook := func(action string, changes map[string]any, extra map[string]any) {
		if m == nil {
			return
		}
		out = append(out, hookOut{event: EventMergeRequest, kind: "merge_request", action: action, iid: m.iid,
			body: l.mrHookJSON(m, actor, action, changes, extra)})
	}
	switch ev.Kind {
	case "mr_opened":
		out = append(out, l.pushHooksLocked(p, actor)...)
		mrHook("open", map[string]any{}, nil)
	case "push":
		out = append(out, l.pushHooksLocked(p, actor)...)
		if m != nil && len(m.versions) > 1 {
			old := m.versions[len(m.versions)-2].head
			mrHook("update", map[string]any{"updated_at": map[string]any{"previous": nil, "current": hookTS(m.updatedAt)}},
				map[string]any{"oldrev": old})
		}
	case "state":
		action := map[string]string{"closed": "close", "opened": "reopen", "merged": "merge"}[ev.Detail]
		if action == "" {
			return
		}
		prev := map[string]int{"close": 1, "reopen": 2, "merge": 1}[action]
		mrHook(action, map[string]any{"state_id": map[string]any{"previous": prev, "current": stateID(m.state)}}, nil)
	case "label":
		if m == nil {
			return
		}
		name, removed := strings.CutPrefix(ev.Detail, "-")
		prev := slicesWithout(m.labels, name)
		if removed {
			prev = append(append([]string(nil), m.labels...), name)
		}
		mrHook("update", map[string]any{"labels": map[string]any{"previous": l.labelsJSON(p, prev), "current": l.labelsJSON(p, m.labels)}}, nil)
	case "reviewer":
		if m == nil {
			return
		}
		var prev []*reviewer
		for _, r := range m.reviewers {
			if !strings.EqualFold(r.u.username, ev.Detail) {
				prev = append(prev, r)
			}
		}
		mrHook("update", map[string]any{"reviewers": map[string]any{"previous": l.reviewersHookJSON(prev), "current": l.reviewersHookJSON(m.reviewers)}}, nil)
	case "approval":
		if m == nil {
			return
		}
		left := max(p.opts.ApprovalsRequired-len(m.approvedBy), 0)
		switch ev.Detail {
		case "approved":
			// "approved" once the approval rules are met, "approval" for
			// an approval that leaves some to give (GitLab EE).
			if left == 0 {
				mrHook("approved", map[string]any{}, nil)
			} else {
				mrHook("approval", map[string]any{}, nil)
			}
		case "unapproved":
			if left > 0 || len(m.approvedBy) == 0 {
				mrHook("unapproved", map[string]any{}, nil)
			} else {
				mrHook("unapproval", map[string]any{}, nil)
			}
		case "requested_changes":
			// A submitted review requesting changes: an update with the
			// reviewer's new state (gitlab-org/gitlab!246562).
			mrHook("update", map[string]any{"reviewers": map[string]any{"previous": l.reviewersHookJSON(nil), "current": l.reviewersHookJSON(m.reviewers)}}, nil)
		}
	case "resolved":
		if m != nil && l.allResolvedLocked(m) {
			mrHook("update", map[string]any{"blocking_discussions_resolved": map[string]any{"previous": false, "current": true}}, nil)
		}
	case "note":
		if m == nil {
			return
		}
		if n := newestNote(m); n != nil && !n.system {
			out = append(out, hookOut{event: EventNote, kind: "note", action: "create", iid: m.iid, body: l.noteHookJSON(m, n, "create")})
		}
	case "duo_finished":
		// Duo edits its progress note into its summary: a note update.
		if m == nil {
			return
		}
		var progress *note
		for _, d := range m.discussions {
			if f := d.first(); d.individual && !f.system && f.author.username == UserDuo && (progress == nil || f.id > progress.id) {
				progress = f
			}
		}
		if progress != nil && progress.body != DuoNothingToNote {
			out = append(out, hookOut{event: EventNote, kind: "note", action: "update", iid: m.iid, body: l.noteHookJSON(m, progress, "update")})
		}
	case "pipeline":
		var pl *pipeline
		for _, x := range p.pipelines {
			if x.sha == ev.SHA && (pl == nil || x.status == ev.Detail || pl.status != ev.Detail) {
				pl = x
			}
		}
		if pl == nil {
			return
		}
		body, iid := l.pipelineHookJSON(p, pl, actor)
		out = append(out, hookOut{event: EventPipeline, kind: "pipeline", action: pl.status, iid: iid, body: body})
	default:
		return // status, duo_started (its note fired), unresolved: no webhook
	}
	l.queueHooksLocked(p, out)
}

// queueHooksLocked renders and queues out for every hook of p that takes
// each event; l.mu is held.
func (l *Lab) queueHooksLocked(p *project, out []hookOut) {
	hs := &l.hooks
	hs.mu.Lock()
	defer hs.mu.Unlock()
	for _, o := range out {
		body, err := json.Marshal(o.body)
		if err != nil {
			l.log.Error("fakelab webhook payload", "event", o.event, "err", err)
			continue
		}
		for _, r := range hs.regs {
			if r.projectID != p.id || !r.takes(o.event) {
				continue
			}
			hs.addLocked(&HookDelivery{ID: newUUID(), EventUUID: newUUID(), HookID: r.id, Event: o.event, Kind: o.kind,
				Action: o.action, Project: p.path, IID: o.iid, Body: body})
		}
	}
}

func (r *hookReg) takes(event string) bool {
	switch event {
	case EventMergeRequest:
		return r.cfg.MergeRequestsEvents
	case EventNote:
		return r.cfg.NoteEvents
	case EventPipeline:
		return r.cfg.PipelineEvents
	case EventPush:
		return r.cfg.PushEvents
	}
	return false
}

const zeroSHA = "0000000000000000000000000000000000000000"

// pushHooksLocked makes a Push Hook per branch of p that moved since the
// last look; l.mu is held.
func (l *Lab) pushHooksLocked(p *project, by *user) []hookOut {
	ctx := l.Context()
	refs, err := fakegit.ReadRefs(ctx, p.dir)
	if err != nil {
		return nil
	}
	hs := &l.hooks
	hs.mu.Lock()
	old := hs.tips[p.id]
	hs.tips[p.id] = refs
	hs.mu.Unlock()
	var branches []string
	for b := range refs {
		branches = append(branches, b)
	}
	for b := range old {
		if _, ok := refs[b]; !ok {
			branches = append(branches, b)
		}
	}
	sort.Strings(branches)
	var out []hookOut
	for _, b := range branches {
		before, after := old[b], refs[b]
		if before == after {
			continue
		}
		if before == "" {
			before = zeroSHA
		}
		if after == "" {
			after = zeroSHA
		}
		out = append(out, hookOut{event: EventPush, kind: "push", body: l.pushHookJSON(ctx, p, by, b, before, after)})
	}
	return out
}

func hookTS(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UTC().Format("2006-01-02 15:04:05 UTC")
}

func stateID(state string) int {
	return map[string]int{"opened": 1, "closed": 2, "merged": 3, "locked": 4}[state]
}

func slicesWithout(xs []string, x string) []string {
	var out []string
	for _, y := range xs {
		if y != x {
			out = append(out, y)
		}
	}
	return out
}

func newestNote(m *mr) *note {
	var last *note
	for _, d := range m.discussions {
		for _, n := range d.notes {
			if last == nil || n.id > last.id {
				last = n
			}
		}
	}
	return last
}

func (l *Lab) userHookJSON(u *user) any {
	if u == nil {
		return nil
	}
	return map[string]any{"id": u.id, "name": u.name, "username": u.username, "avatar_url": nil, "email": "[REDACTED]"}
}

func (l *Lab) projectHookJSON(p *project) map[string]any {
	parts := strings.Split(p.path, "/")
	vis := 20
	if p.private {
		vis = 0
	}
	web := l.URL() + "/" + p.path
	ssh := "git@" + strings.Split(l.Host(), ":")[0] + ":" + p.path + ".git"
	return map[string]any{"id": p.id, "name": parts[len(parts)-1], "description": nil, "web_url": web, "avatar_url": nil,
		"git_ssh_url": ssh, "git_http_url": l.GitURL(p.path), "namespace": parts[len(parts)-2], "visibility_level": vis,
		"path_with_namespace": p.path, "default_branch": p.defaultBranch, "ci_config_path": nil, "homepage": web,
		"url": ssh, "ssh_url": ssh, "http_url": l.GitURL(p.path)}
}

func (l *Lab) repositoryHookJSON(p *project) map[string]any {
	parts := strings.Split(p.path, "/")
	web := l.URL() + "/" + p.path
	return map[string]any{"name": parts[len(parts)-1], "url": l.GitURL(p.path), "description": nil, "homepage": web}
}

func (l *Lab) labelsJSON(p *project, names []string) []any {
	out := []any{}
	for _, n := range names {
		out = append(out, map[string]any{"id": labelID(n), "title": n, "color": "#428BCA", "project_id": p.id,
			"created_at": hookTS(p.createdAt), "updated_at": hookTS(p.createdAt), "template": false, "description": nil,
			"type": "ProjectLabel", "group_id": nil})
	}
	return out
}

func (l *Lab) reviewersHookJSON(rs []*reviewer) []any {
	out := []any{}
	for _, r := range rs {
		out = append(out, map[string]any{"id": r.u.id, "name": r.u.name, "username": r.u.username, "avatar_url": nil,
			"email": "[REDACTED]", "state": r.state, "re_requested": false})
	}
	return out
}

// commitHookJSON is a commit as payloads carry it (last_commit, commits[]).
func (l *Lab) commitHookJSON(ctx context.Context, p *project, sha string) map[string]any {
	out, _ := fakegit.Run(ctx, p.dir, nil, nil, "log", "-1", "--format=%aI%x00%an%x00%ae%x00%B", sha)
	f := strings.SplitN(out, "\x00", 4)
	for len(f) < 4 {
		f = append(f, "")
	}
	msg := strings.TrimRight(f[3], "\n") + "\n"
	title, _, _ := strings.Cut(msg, "\n")
	return map[string]any{"id": sha, "message": msg, "title": title, "timestamp": f[0],
		"url":    fmt.Sprintf("%s/%s/-/commit/%s", l.URL(), p.path, sha),
		"author": map[string]any{"name": f[1], "email": f[2]}}
}

// mrAttrsJSON is a merge request's hook attributes: object_attributes of
// a Merge Request Hook, merge_request of a Note Hook.
func (l *Lab) mrAttrsJSON(m *mr) map[string]any {
	p := m.proj
	status, conflict := l.detailedStatusLocked(m)
	legacy := "can_be_merged"
	if conflict {
		legacy = "cannot_be_merged"
	}
	reviewerIDs := []int{}
	for _, r := range m.reviewers {
		reviewerIDs = append(reviewerIDs, r.u.id)
	}
	title := m.title
	if m.draft {
		title = "Draft: " + title
	}
	return map[string]any{"id": m.id, "iid": m.iid, "target_branch": m.target, "source_branch": m.source,
		"source_project_id": p.id, "target_project_id": p.id, "author_id": m.author.id, "assignee_ids": []int{}, "assignee_id": nil,
		"reviewer_ids": reviewerIDs, "title": title, "created_at": hookTS(m.createdAt), "updated_at": hookTS(m.updatedAt),
		"last_edited_at": nil, "last_edited_by_id": nil, "milestone_id": nil, "state_id": stateID(m.state), "state": m.state,
		"blocking_discussions_resolved": !p.opts.ThreadsMustResolve || l.allResolvedLocked(m),
		"work_in_progress":              m.draft, "draft": m.draft, "first_contribution": false, "merge_status": legacy,
		"description": m.description, "url": m.webURL(l), "source": l.projectHookJSON(p), "target": l.projectHookJSON(p),
		"last_commit": l.commitHookJSON(l.Context(), p, m.headSHA), "labels": l.labelsJSON(p, m.labels),
		"detailed_merge_status": status, "head_pipeline_id": headPipelineID(m), "time_estimate": 0, "total_time_spent": 0}
}

func headPipelineID(m *mr) any {
	if pl := headPipelineLocked(m); pl != nil {
		return pl.id
	}
	return nil
}

// mrHookJSON is a Merge Request Hook payload.
func (l *Lab) mrHookJSON(m *mr, by *user, action string, changes, extra map[string]any) map[string]any {
	p := m.proj
	attrs := l.mrAttrsJSON(m)
	attrs["action"] = action
	for k, v := range extra {
		attrs[k] = v
	}
	reviewers := l.reviewersHookJSON(m.reviewers)
	return map[string]any{"object_kind": "merge_request", "event_type": "merge_request", "user": l.userHookJSON(by),
		"project": l.projectHookJSON(p), "repository": l.repositoryHookJSON(p), "object_attributes": attrs,
		"labels": l.labelsJSON(p, m.labels), "changes": changes, "assignees": []any{}, "reviewers": reviewers}
}

// lineCode is GitLab's line_code of a diff position: the SHA-1 of the
// file's path, then the old and the new line.
func lineCode(pos *Position) string {
	sum := sha1.Sum([]byte(pos.NewPath))
	return fmt.Sprintf("%x_%d_%d", sum, pos.OldLine, pos.NewLine)
}

// noteHookJSON is a Note Hook payload for note n on m: the note's
// columns as object_attributes.
func (l *Lab) noteHookJSON(m *mr, n *note, action string) map[string]any {
	p := m.proj
	var typ, pos, code, resolvedBy, resolvedAt any
	if n.typ != "" {
		typ = n.typ
	}
	if n.position != nil {
		pos, code = l.positionJSON(n.position), lineCode(n.position)
	}
	if n.resolvedBy != nil && n.resolved {
		resolvedBy, resolvedAt = n.resolvedBy.id, hookTS(n.resolvedAt)
	}
	attrs := map[string]any{"id": n.id, "note": n.body, "description": n.body, "noteable_type": "MergeRequest",
		"author_id": n.author.id, "created_at": hookTS(n.createdAt), "updated_at": hookTS(n.updatedAt), "project_id": p.id,
		"attachment": nil, "line_code": code, "commit_id": nil, "noteable_id": m.id, "system": n.system, "st_diff": nil,
		"updated_by_id": nil, "type": typ, "position": pos, "original_position": pos, "change_position": nil,
		"resolved_at": resolvedAt, "resolved_by_id": resolvedBy, "resolved_by_push": nil, "discussion_id": n.disc.id,
		"url": fmt.Sprintf("%s#note_%d", m.webURL(l), n.id), "action": action, "internal": false, "confidential": false}
	if n.resolvable {
		attrs["resolvable"], attrs["resolved"] = true, n.resolved
	}
	return map[string]any{"object_kind": "note", "event_type": "note", "user": l.userHookJSON(n.author), "project_id": p.id,
		"project": l.projectHookJSON(p), "repository": l.repositoryHookJSON(p), "object_attributes": attrs,
		"merge_request": l.mrAttrsJSON(m)}
}

// pipelineHookJSON is a Pipeline Hook payload and the iid of the open
// merge request whose head it ran on (0 when none).
func (l *Lab) pipelineHookJSON(p *project, pl *pipeline, by *user) (map[string]any, int) {
	var mrj any
	iid := 0
	for _, m := range p.mrs {
		if m.state == "opened" && m.headSHA == pl.sha && m.source == pl.ref {
			status, conflict := l.detailedStatusLocked(m)
			legacy := map[bool]string{true: "cannot_be_merged", false: "can_be_merged"}[conflict]
			mrj = map[string]any{"id": m.id, "iid": m.iid, "title": m.title, "source_branch": m.source, "source_project_id": p.id,
				"target_branch": m.target, "target_project_id": p.id, "state": m.state, "merge_status": legacy,
				"detailed_merge_status": status, "url": m.webURL(l)}
			iid = m.iid
			break
		}
	}
	var finished, duration any
	done := pl.status != "running" && pl.status != "pending" && pl.status != "created"
	if done {
		finished, duration = hookTS(pl.updatedAt), int(pl.updatedAt.Sub(pl.createdAt).Seconds())
	}
	var builds []any
	for _, j := range pl.jobs {
		var jf, jd any
		if !j.finished.IsZero() {
			jf, jd = hookTS(j.finished), j.finished.Sub(j.started).Seconds()
		}
		builds = append(builds, map[string]any{"id": j.id, "stage": j.stage, "name": j.name, "status": j.status,
			"created_at": hookTS(j.createdAt), "started_at": hookTS(j.started), "finished_at": jf, "duration": jd,
			"queued_duration": 0.0, "failure_reason": nil, "when": "on_success", "manual": false, "allow_failure": false,
			"user": l.userHookJSON(by), "runner": nil, "artifacts_file": map[string]any{"filename": nil, "size": nil}, "environment": nil})
	}
	if builds == nil {
		builds = []any{}
	}
	attrs := map[string]any{"id": pl.id, "iid": pl.iid, "name": nil, "ref": pl.ref, "tag": false, "sha": pl.sha,
		"before_sha": zeroSHA, "source": pl.source, "status": pl.status, "detailed_status": pl.status, "stages": []string{"test"},
		"created_at": hookTS(pl.createdAt), "finished_at": finished, "duration": duration, "queued_duration": 0,
		"variables": []any{}, "url": fmt.Sprintf("%s/%s/-/pipelines/%d", l.URL(), p.path, pl.id)}
	return map[string]any{"object_kind": "pipeline", "object_attributes": attrs, "merge_request": mrj,
		"user": l.userHookJSON(by), "project": l.projectHookJSON(p), "commit": l.commitHookJSON(l.Context(), p, pl.sha),
		"source_pipeline": nil, "builds": builds}, iid
}

// pushHookJSON is a Push Hook payload for one branch moved from before
// to after (zeroSHA: created or deleted).
func (l *Lab) pushHookJSON(ctx context.Context, p *project, by *user, branch, before, after string) map[string]any {
	commits := []any{}
	total := 0
	var checkout any
	if after != zeroSHA {
		checkout = after
		rng := []string{after}
		if before != zeroSHA {
			rng = append(rng, "^"+before)
		} else if branch != p.defaultBranch {
			rng = append(rng, "^refs/heads/"+p.defaultBranch)
		}
		out, _ := fakegit.Run(ctx, p.dir, nil, nil, append([]string{"rev-list", "--reverse"}, rng...)...)
		shas := strings.Fields(out)
		total = len(shas)
		// GitLab lists at most the newest 20 commits.
		if len(shas) > 20 {
			shas = shas[len(shas)-20:]
		}
		for _, s := range shas {
			c := l.commitHookJSON(ctx, p, s)
			c["added"], c["modified"], c["removed"] = []string{}, []string{}, []string{}
			commits = append(commits, c)
		}
	}
	var uid, uname, uuser any
	if by != nil {
		uid, uname, uuser = by.id, by.name, by.username
	}
	return map[string]any{"object_kind": "push", "event_name": "push", "before": before, "after": after,
		"ref": "refs/heads/" + branch, "ref_protected": branch == p.defaultBranch, "checkout_sha": checkout, "message": nil,
		"user_id": uid, "user_name": uname, "user_username": uuser, "user_email": "[REDACTED]", "user_avatar": nil,
		"project_id": p.id, "project": l.projectHookJSON(p), "commits": commits, "total_commits_count": total,
		"push_options": map[string]any{}, "repository": l.repositoryHookJSON(p)}
}

// hooksRoute serves the project hooks API (/projects/:id/hooks); the
// maintainer role is needed, as on GitLab.
func (l *Lab) hooksRoute(r *http.Request, ps params, u *user, p *project, seg []string) (int, any) {
	if p.access(u) < AccessMaintainer {
		return 403, forbidden
	}
	boolParam := func(k string, def bool) bool {
		if v := ps.get(k); v != "" {
			b, err := strconv.ParseBool(v)
			if err == nil {
				return b
			}
		}
		return def
	}
	switch {
	case len(seg) == 0 && r.Method == http.MethodGet:
		hs := &l.hooks
		hs.mu.Lock()
		defer hs.mu.Unlock()
		out := []any{}
		for _, reg := range hs.regs {
			if reg.projectID == p.id {
				out = append(out, l.hookJSON(reg))
			}
		}
		return 200, out
	case len(seg) == 0 && r.Method == http.MethodPost:
		if ps.get("url") == "" {
			return 400, map[string]any{"error": "url is missing"}
		}
		h := Hook{URL: ps.get("url"), Token: ps.get("token"), PushEvents: boolParam("push_events", true),
			MergeRequestsEvents: boolParam("merge_requests_events", false), NoteEvents: boolParam("note_events", false),
			PipelineEvents: boolParam("pipeline_events", false), SkipTLSVerify: !boolParam("enable_ssl_verification", true)}
		id, err := l.addHookLocked(p, h, ps.get("name"), ps.get("description"))
		if err != nil {
			return 422, map[string]any{"error": err.Error()}
		}
		hs := &l.hooks
		hs.mu.Lock()
		defer hs.mu.Unlock()
		return 201, l.hookJSON(hs.reg(id))
	case len(seg) == 1:
		id, _ := strconv.Atoi(seg[0])
		hs := &l.hooks
		hs.mu.Lock()
		reg := hs.reg(id)
		if reg == nil || reg.projectID != p.id {
			hs.mu.Unlock()
			return 404, msg("404 Not found")
		}
		switch r.Method {
		case http.MethodGet:
			defer hs.mu.Unlock()
			return 200, l.hookJSON(reg)
		case http.MethodPut:
			c := &reg.cfg
			if v := ps.get("url"); v != "" {
				c.URL = v
			}
			if _, ok := ps["token"]; ok {
				c.Token = ps.get("token")
			}
			c.PushEvents = boolParam("push_events", c.PushEvents)
			c.MergeRequestsEvents = boolParam("merge_requests_events", c.MergeRequestsEvents)
			c.NoteEvents = boolParam("note_events", c.NoteEvents)
			c.PipelineEvents = boolParam("pipeline_events", c.PipelineEvents)
			defer hs.mu.Unlock()
			return 200, l.hookJSON(reg)
		case http.MethodDelete:
			hs.mu.Unlock()
			if err := l.RemoveHook(id); err != nil {
				return 404, msg("404 Not found")
			}
			return 204, map[string]any{}
		}
		hs.mu.Unlock()
	}
	return 404, msg("404 Not Found")
}

// hookJSON is a hook as the API shows it: never its token.
func (l *Lab) hookJSON(r *hookReg) map[string]any {
	c := r.cfg
	return map[string]any{"id": r.id, "url": c.URL, "name": r.name, "description": r.desc, "project_id": r.projectID,
		"push_events": c.PushEvents, "push_events_branch_filter": "", "branch_filter_strategy": "wildcard",
		"issues_events": false, "confidential_issues_events": false, "merge_requests_events": c.MergeRequestsEvents,
		"tag_push_events": false, "note_events": c.NoteEvents, "confidential_note_events": false, "job_events": false,
		"pipeline_events": c.PipelineEvents, "wiki_page_events": false, "deployment_events": false, "releases_events": false,
		"emoji_events": false, "feature_flag_events": false, "resource_access_token_events": false,
		"repository_update_events": false, "enable_ssl_verification": !c.SkipTLSVerify, "alert_status": "executable",
		"disabled_until": nil, "url_variables": []any{}, "custom_webhook_template": nil, "custom_headers": []any{},
		"created_at": ts(r.createdAt)}
}
