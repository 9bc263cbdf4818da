package server

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/convergeloop/converge/internal/forge"
)

// Webhook headers GitLab sends (docs.gitlab.com, "Webhooks", delivery
// headers).
const (
	HeaderGitLabEvent = "X-Gitlab-Event"
	// HeaderGitLabToken carries the webhook's secret token as is: GitLab
	// signs nothing, so the token proves the sender knows the secret and
	// says nothing about the body.
	HeaderGitLabToken = "X-Gitlab-Token"
	// HeaderGitLabEventUUID is unique per delivery, except that deliveries
	// a receiver's own API calls set off (recursive webhooks) share it.
	HeaderGitLabEventUUID = "X-Gitlab-Event-UUID"
	// HeaderIdempotencyKey (GitLab 17.4 and later) is unique per delivery
	// and the same on every retry and resend of it.
	HeaderIdempotencyKey = "Idempotency-Key"
)

// ErrBadToken is VerifyGitLabToken's answer to a token that is not the
// secret.
var ErrBadToken = errors.New("token does not match")

// VerifyGitLabToken checks an X-Gitlab-Token value against the secret in
// constant time: both are hashed first, so neither the length nor a
// common prefix of the secret leaks through the comparison's time. An
// empty secret verifies nothing, as in Verify.
func VerifyGitLabToken(secret []byte, token string) error {
	if len(secret) == 0 || token == "" {
		return ErrUnsigned
	}
	want, got := sha256.Sum256(secret), sha256.Sum256([]byte(token))
	if !hmac.Equal(got[:], want[:]) {
		return ErrBadToken
	}
	return nil
}

// gitlabDeliveryID is the id a GitLab delivery is deduplicated by: its
// Idempotency-Key when GitLab sent one (a retry or a "Resend request"
// repeats it while its X-Gitlab-Event-UUID is new), else its
// X-Gitlab-Event-UUID with a digest of the body, since recursive
// deliveries share one event UUID across different events. Both are
// prefixed, so a GitLab id never meets a GitHub one. Empty when the
// delivery has neither header.
func gitlabDeliveryID(h http.Header, body []byte) string {
	if key := strings.TrimSpace(h.Get(HeaderIdempotencyKey)); key != "" {
		return "gitlab:" + key
	}
	if uuid := strings.TrimSpace(h.Get(HeaderGitLabEventUUID)); uuid != "" {
		sum := sha256.Sum256(body)
		return "gitlab:" + uuid + ":" + hex.EncodeToString(sum[:8])
	}
	return ""
}

// serveGitLabWebhook verifies, deduplicates and routes one GitLab
// delivery. GitLab permanently disables a webhook that answers 4xx, so
// only a misconfiguration (wrong token, a payload that is not GitLab's)
// gets one; events converge does not follow get 200.
func (s *Server) serveGitLabWebhook(w http.ResponseWriter, r *http.Request) {
	event := r.Header.Get(HeaderGitLabEvent)
	if err := VerifyGitLabToken(s.opts.Secret, r.Header.Get(HeaderGitLabToken)); err != nil {
		outcome := "bad_signature"
		if errors.Is(err, ErrUnsigned) {
			outcome = "unsigned"
		}
		s.metrics.delivery(event, outcome)
		s.log.Warn("webhook refused", "event", event, "delivery", r.Header.Get(HeaderGitLabEventUUID), "err", err)
		httpError(w, http.StatusUnauthorized, "missing or wrong "+HeaderGitLabToken)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		s.metrics.delivery(event, "unreadable")
		httpError(w, http.StatusBadRequest, "unreadable body: "+err.Error())
		return
	}
	id := gitlabDeliveryID(r.Header, body)
	if id == "" {
		s.metrics.delivery(event, "malformed")
		httpError(w, http.StatusBadRequest, "missing "+HeaderGitLabEventUUID)
		return
	}
	n, err := parseGitLabNotice(body)
	if errors.Is(err, errIgnored) {
		s.metrics.delivery(event, "ignored")
		writeJSON(w, http.StatusOK, map[string]any{"ignored": true})
		return
	}
	if err != nil {
		s.metrics.delivery(event, "malformed")
		httpError(w, http.StatusBadRequest, err.Error())
		return
	}
	s.act(w, r, id, event, n)
}

// glProject is the project every GitLab payload names. For a merge
// request or a note on one it is the merge request's target project.
type glProject struct {
	PathWithNamespace string `json:"path_with_namespace"`
	WebURL            string `json:"web_url"`
}

// glPayload is the part of a GitLab webhook payload converge reads; each
// object kind's object_attributes are read on their own, as their fields
// differ (a merge request's "source" is a project, a pipeline's a word).
type glPayload struct {
	Project          glProject                  `json:"project"`
	ObjectAttributes json.RawMessage            `json:"object_attributes"`
	Changes          map[string]json.RawMessage `json:"changes"`
	MergeRequest     *struct {
		IID int `json:"iid"`
	} `json:"merge_request"`
	// push
	Ref   string `json:"ref"`
	After string `json:"after"`
}

// glMRAttrs are a Merge Request Hook's object_attributes.
type glMRAttrs struct {
	IID    int    `json:"iid"`
	Action string `json:"action"`
	// Oldrev is the previous head, present only when the event added
	// commits to the source branch (GitHub's "synchronize").
	Oldrev string `json:"oldrev"`
}

// glNoteAttrs are a Note Hook's object_attributes: what the server reads
// of the note's columns.
type glNoteAttrs struct {
	NoteableType string `json:"noteable_type"`
	Action       string `json:"action"` // create or update (GitLab 16.11 and later)
	System       bool   `json:"system"`
}

// glPipelineAttrs are a Pipeline Hook's object_attributes.
type glPipelineAttrs struct {
	Ref string `json:"ref"`
	Tag bool   `json:"tag"`
	SHA string `json:"sha"`
}

// parseGitLabNotice reads the merge request targets out of one GitLab
// delivery, by its object_kind: merge_request, note, pipeline and push.
// Others are ignored. The notice kinds are GitHub's, so a GitLab event
// rearms a finished merge request exactly when its GitHub counterpart
// would: a new head or a reopen (pull_request synchronize, reopened), an
// approval (a review submitted), a new line comment or thread note (a
// review comment created). converge's own doings, a label or a commit
// status (a pipeline event), only wake.
func parseGitLabNotice(body []byte) (notice, error) {
	var head struct {
		ObjectKind string `json:"object_kind"`
	}
	if err := json.Unmarshal(body, &head); err != nil {
		return notice{}, fmt.Errorf("gitlab payload: %w", err)
	}
	kind := head.ObjectKind
	switch kind {
	case "merge_request", "note", "pipeline", "push":
	default:
		// Read no further: another kind's fields may have other shapes.
		return notice{}, errIgnored
	}
	var p glPayload
	if err := json.Unmarshal(body, &p); err != nil {
		return notice{}, fmt.Errorf("gitlab %s payload: %w", kind, err)
	}
	n := notice{forge: forge.GitLab, repo: p.Project.PathWithNamespace}
	if u, err := url.Parse(p.Project.WebURL); err == nil {
		n.host = u.Host
	}
	attrs := func(v any) error {
		if len(p.ObjectAttributes) == 0 || string(p.ObjectAttributes) == "null" {
			return fmt.Errorf("gitlab %s payload: no object_attributes", kind)
		}
		if err := json.Unmarshal(p.ObjectAttributes, v); err != nil {
			return fmt.Errorf("gitlab %s payload: object_attributes: %w", kind, err)
		}
		return nil
	}
	switch kind {
	case "merge_request":
		var a glMRAttrs
		if err := attrs(&a); err != nil {
			return notice{}, err
		}
		if a.IID <= 0 {
			return notice{}, fmt.Errorf("gitlab %s payload: no merge request iid", kind)
		}
		n.numbers = []int{a.IID}
		_, labels := p.Changes["labels"]
		_, draft := p.Changes["draft"]
		_, wip := p.Changes["work_in_progress"] // before GitLab 16
		switch a.Action {
		case "open", "reopen":
			n.membership = true
		case "update":
			// Labelled, or marked ready: the merge request may now
			// belong to a watched repository's set.
			n.membership = labels || draft || wip
		}
		switch a.Action {
		case "reopen", "approved", "approval":
			n.rearm = true
		case "update":
			n.rearm = strings.Trim(a.Oldrev, "0") != ""
		}
	case "note":
		var a glNoteAttrs
		if err := attrs(&a); err != nil {
			return notice{}, err
		}
		if a.NoteableType != "MergeRequest" {
			return notice{}, errIgnored // a comment on an issue, a commit or a snippet
		}
		if p.MergeRequest == nil || p.MergeRequest.IID <= 0 {
			return notice{}, fmt.Errorf("gitlab %s payload: no merge_request iid", kind)
		}
		n.numbers = []int{p.MergeRequest.IID}
		// An edit is not news to a verdict, as GitHub's "edited" is not;
		// a new note is, in a thread or not (a trusted top-level note is
		// a finding, PR-T13).
		n.rearm = !a.System && (a.Action == "" || a.Action == "create")
	case "pipeline":
		var a glPipelineAttrs
		if err := attrs(&a); err != nil {
			return notice{}, err
		}
		if p.MergeRequest != nil && p.MergeRequest.IID > 0 {
			// A merge request pipeline names its merge request; its
			// ref may still read as the target branch, which would wake
			// every merge request into it.
			n.numbers = []int{p.MergeRequest.IID}
			n.ci = true
			n.shas = nonEmpty(a.SHA)
			break
		}
		n.shas = nonEmpty(a.SHA)
		n.ci = true
		// A detached pipeline runs on refs/merge-requests/IID/head, a
		// tag pipeline on a tag: neither names a branch.
		if !a.Tag && !strings.HasPrefix(a.Ref, "refs/") {
			n.branches = nonEmpty(a.Ref)
		}
	case "push":
		branch, ok := strings.CutPrefix(p.Ref, "refs/heads/")
		if !ok {
			return notice{}, errIgnored
		}
		n.branches = nonEmpty(branch)
		if strings.Trim(p.After, "0") != "" {
			n.shas = nonEmpty(p.After)
		}
	}
	if i := strings.LastIndex(n.repo, "/"); i <= 0 || i == len(n.repo)-1 {
		return notice{}, fmt.Errorf("gitlab %s payload: no project path_with_namespace", kind)
	}
	return n, nil
}
