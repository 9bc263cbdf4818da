package gitlab

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/convergeloop/converge/internal/forge/provider"
)

// Webhook headers GitLab sends (docs.gitlab.com, "Webhooks", delivery
// headers).
const (
	HeaderEvent = "X-Gitlab-Event"
	// HeaderToken carries the webhook's secret token as is: GitLab
	// signs nothing, so the token proves the sender knows the secret and
	// says nothing about the body.
	HeaderToken = "X-Gitlab-Token"
	// HeaderEventUUID is unique per delivery, except that deliveries
	// a receiver's own API calls set off (recursive webhooks) share it.
	HeaderEventUUID = "X-Gitlab-Event-UUID"
	// HeaderIdempotencyKey (GitLab 17.4 and later) is unique per delivery
	// and the same on every retry and resend of it.
	HeaderIdempotencyKey = "Idempotency-Key"
)

// ErrBadToken is VerifyWebhookToken's answer to a token that is not the
// secret.
var ErrBadToken = errors.New("token does not match")

// VerifyWebhookToken checks an X-Gitlab-Token value against the secret in
// constant time: both are hashed first, so neither the length nor a
// common prefix of the secret leaks through the comparison's time. An
// empty secret verifies nothing, as GitHub's signature.
func VerifyWebhookToken(secret []byte, token string) error {
	if len(secret) == 0 || token == "" {
		return provider.ErrUnsigned
	}
	want, got := sha256.Sum256(secret), sha256.Sum256([]byte(token))
	if !hmac.Equal(got[:], want[:]) {
		return ErrBadToken
	}
	return nil
}

// deliveryID is the id a GitLab delivery is deduplicated by: its
// Idempotency-Key when GitLab sent one (a retry or a "Resend request"
// repeats it while its X-Gitlab-Event-UUID is new), else its
// X-Gitlab-Event-UUID with a digest of the body, since recursive
// deliveries share one event UUID across different events. Both are
// prefixed, so a GitLab id never meets a GitHub one. Empty when the
// delivery has neither header.
func deliveryID(h http.Header, body []byte) string {
	if key := strings.TrimSpace(h.Get(HeaderIdempotencyKey)); key != "" {
		return "gitlab:" + key
	}
	if uuid := strings.TrimSpace(h.Get(HeaderEventUUID)); uuid != "" {
		sum := sha256.Sum256(body)
		return "gitlab:" + uuid + ":" + hex.EncodeToString(sum[:8])
	}
	return ""
}

// Webhooks reads GitLab's deliveries: the secret sent as X-Gitlab-Token,
// deduplicated by Idempotency-Key or X-Gitlab-Event-UUID. GitLab
// permanently disables a webhook that answers 4xx, so only a
// misconfiguration (wrong token, a payload that is not GitLab's) gets
// one; events converge does not follow are ignored.
func (Provider) Webhooks() provider.Webhooks { return webhooks{} }

type webhooks struct{}

func (webhooks) Claims(h http.Header) bool { return h.Get(HeaderEvent) != "" }

func (webhooks) Event(h http.Header) string { return h.Get(HeaderEvent) }

func (webhooks) Verify(secret []byte, h http.Header, _ []byte) error {
	if err := VerifyWebhookToken(secret, h.Get(HeaderToken)); err != nil {
		return fmt.Errorf("missing or wrong %s: %w", HeaderToken, err)
	}
	return nil
}

func (webhooks) Delivery(h http.Header, body []byte) (string, error) {
	if id := deliveryID(h, body); id != "" {
		return id, nil
	}
	return "", errors.New("missing " + HeaderEventUUID)
}

// Read reads a delivery by its payload's object_kind; the event header
// only names it.
func (webhooks) Read(_ string, body []byte) (provider.Notice, error) { return parseNotice(body) }

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

// parseNotice reads the merge request targets out of one GitLab
// delivery, by its object_kind: merge_request, note, pipeline and push.
// Others are ignored. The notice kinds are GitHub's, so a GitLab event
// rearms a finished merge request exactly when its GitHub counterpart
// would: a new head or a reopen (pull_request synchronize, reopened), an
// approval (a review submitted), a new line comment or thread note (a
// review comment created). converge's own doings, a label or a commit
// status (a pipeline event), only wake.
func parseNotice(body []byte) (provider.Notice, error) {
	var head struct {
		ObjectKind string `json:"object_kind"`
	}
	if err := json.Unmarshal(body, &head); err != nil {
		return provider.Notice{}, fmt.Errorf("gitlab payload: %w", err)
	}
	kind := head.ObjectKind
	switch kind {
	case "merge_request", "note", "pipeline", "push":
	default:
		// Read no further: another kind's fields may have other shapes.
		return provider.Notice{}, provider.ErrIgnored
	}
	var p glPayload
	if err := json.Unmarshal(body, &p); err != nil {
		return provider.Notice{}, fmt.Errorf("gitlab %s payload: %w", kind, err)
	}
	n := provider.Notice{Repo: p.Project.PathWithNamespace}
	if u, err := url.Parse(p.Project.WebURL); err == nil {
		n.Host = u.Host
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
			return provider.Notice{}, err
		}
		if a.IID <= 0 {
			return provider.Notice{}, fmt.Errorf("gitlab %s payload: no merge request iid", kind)
		}
		n.Numbers = []int{a.IID}
		_, labels := p.Changes["labels"]
		_, draft := p.Changes["draft"]
		_, wip := p.Changes["work_in_progress"] // before GitLab 16
		switch a.Action {
		case "open", "reopen":
			n.Membership = true
		case "update":
			// Labelled, or marked ready: the merge request may now
			// belong to a watched repository's set.
			n.Membership = labels || draft || wip
		}
		switch a.Action {
		case "reopen", "approved", "approval":
			n.Rearm = true
		case "update":
			n.Rearm = strings.Trim(a.Oldrev, "0") != ""
		}
	case "note":
		var a glNoteAttrs
		if err := attrs(&a); err != nil {
			return provider.Notice{}, err
		}
		if a.NoteableType != "MergeRequest" {
			return provider.Notice{}, provider.ErrIgnored // a comment on an issue, a commit or a snippet
		}
		if p.MergeRequest == nil || p.MergeRequest.IID <= 0 {
			return provider.Notice{}, fmt.Errorf("gitlab %s payload: no merge_request iid", kind)
		}
		n.Numbers = []int{p.MergeRequest.IID}
		// An edit is not news to a verdict, as GitHub's "edited" is not;
		// a new note is, in a thread or not (a trusted top-level note is
		// a finding, PR-T13).
		n.Rearm = !a.System && (a.Action == "" || a.Action == "create")
	case "pipeline":
		var a glPipelineAttrs
		if err := attrs(&a); err != nil {
			return provider.Notice{}, err
		}
		if p.MergeRequest != nil && p.MergeRequest.IID > 0 {
			// A merge request pipeline names its merge request; its
			// ref may still read as the target branch, which would wake
			// every merge request into it.
			n.Numbers = []int{p.MergeRequest.IID}
			n.CI = true
			n.SHAs = provider.NonEmpty(a.SHA)
			break
		}
		n.SHAs = provider.NonEmpty(a.SHA)
		n.CI = true
		// A detached pipeline runs on refs/merge-requests/IID/head, a
		// tag pipeline on a tag: neither names a branch.
		if !a.Tag && !strings.HasPrefix(a.Ref, "refs/") {
			n.Branches = provider.NonEmpty(a.Ref)
		}
	case "push":
		branch, ok := strings.CutPrefix(p.Ref, "refs/heads/")
		if !ok {
			return provider.Notice{}, provider.ErrIgnored
		}
		n.Branches = provider.NonEmpty(branch)
		if strings.Trim(p.After, "0") != "" {
			n.SHAs = provider.NonEmpty(p.After)
		}
	}
	if i := strings.LastIndex(n.Repo, "/"); i <= 0 || i == len(n.Repo)-1 {
		return provider.Notice{}, fmt.Errorf("gitlab %s payload: no project path_with_namespace", kind)
	}
	return n, nil
}
