package github

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/convergeloop/converge/internal/forge/provider"
)

// Webhook headers GitHub sends.
const (
	HeaderSignature = "X-Hub-Signature-256"
	HeaderDelivery  = "X-GitHub-Delivery"
	HeaderEvent     = "X-GitHub-Event"
)

// SignWebhook is the X-Hub-Signature-256 value of body under secret:
// "sha256=" and the hex HMAC SHA-256 of the body.
func SignWebhook(secret, body []byte) string {
	m := hmac.New(sha256.New, secret)
	m.Write(body)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

// ErrBadSignature is VerifySignature's answer to a signature that does
// not match.
var ErrBadSignature = errors.New("signature does not match")

// VerifySignature checks an X-Hub-Signature-256 value against body, in constant
// time. An empty secret verifies nothing: a server with no secret
// refuses every delivery rather than trust them all.
func VerifySignature(secret, body []byte, signature string) error {
	if len(secret) == 0 || signature == "" {
		return provider.ErrUnsigned
	}
	hexSig, ok := strings.CutPrefix(signature, "sha256=")
	if !ok {
		return ErrBadSignature
	}
	got, err := hex.DecodeString(hexSig)
	if err != nil {
		return ErrBadSignature
	}
	m := hmac.New(sha256.New, secret)
	m.Write(body)
	if !hmac.Equal(got, m.Sum(nil)) {
		return ErrBadSignature
	}
	return nil
}

// Webhooks reads GitHub's deliveries: signed with the webhook's secret
// (X-Hub-Signature-256), deduplicated by X-GitHub-Delivery.
func (Provider) Webhooks() provider.Webhooks { return webhooks{} }

type webhooks struct{}

// Claims a delivery naming a GitHub event; GitHub names every one.
func (webhooks) Claims(h http.Header) bool { return h.Get(HeaderEvent) != "" }

func (webhooks) Event(h http.Header) string { return h.Get(HeaderEvent) }

func (webhooks) Verify(secret []byte, h http.Header, body []byte) error {
	return VerifySignature(secret, body, h.Get(HeaderSignature))
}

func (webhooks) Delivery(h http.Header, _ []byte) (string, error) {
	id := h.Get(HeaderDelivery)
	if id == "" || h.Get(HeaderEvent) == "" {
		return "", errors.New("missing " + HeaderDelivery + " or " + HeaderEvent)
	}
	return id, nil
}

func (webhooks) Read(event string, body []byte) (provider.Notice, error) {
	if event == "ping" {
		return provider.Notice{}, provider.ErrPing
	}
	return parseNotice(event, body)
}

type wireRepo struct {
	FullName string `json:"full_name"`
}

type wirePR struct {
	Number int `json:"number"`
	Head   struct {
		SHA string `json:"sha"`
		Ref string `json:"ref"`
	} `json:"head"`
}

type wirePayload struct {
	Action      string   `json:"action"`
	Number      int      `json:"number"`
	Repository  wireRepo `json:"repository"`
	PullRequest *wirePR  `json:"pull_request"`
	Issue       *struct {
		Number      int             `json:"number"`
		PullRequest json.RawMessage `json:"pull_request"`
	} `json:"issue"`
	CheckRun *struct {
		HeadSHA      string   `json:"head_sha"`
		PullRequests []wirePR `json:"pull_requests"`
		CheckSuite   struct {
			HeadBranch string `json:"head_branch"`
		} `json:"check_suite"`
	} `json:"check_run"`
	CheckSuite *struct {
		HeadSHA      string   `json:"head_sha"`
		HeadBranch   string   `json:"head_branch"`
		PullRequests []wirePR `json:"pull_requests"`
	} `json:"check_suite"`
	// status
	SHA      string `json:"sha"`
	Branches []struct {
		Name string `json:"name"`
	} `json:"branches"`
	// push
	Ref   string `json:"ref"`
	After string `json:"after"`
}

// parseNotice reads the PR targets out of one delivery.
func parseNotice(event string, body []byte) (provider.Notice, error) {
	var p wirePayload
	if err := json.Unmarshal(body, &p); err != nil {
		return provider.Notice{}, fmt.Errorf("payload of %s: %w", event, err)
	}
	n := provider.Notice{Repo: p.Repository.FullName}
	addPRs := func(prs []wirePR) {
		for _, pr := range prs {
			if pr.Number > 0 {
				n.Numbers = append(n.Numbers, pr.Number)
			}
		}
	}
	switch event {
	case "pull_request", "pull_request_review", "pull_request_review_comment", "pull_request_review_thread":
		num := p.Number
		if p.PullRequest != nil && p.PullRequest.Number > 0 {
			num = p.PullRequest.Number
		}
		if num <= 0 {
			return provider.Notice{}, fmt.Errorf("payload of %s: no pull request number", event)
		}
		n.Numbers = []int{num}
		if event == "pull_request" {
			switch p.Action {
			case "opened", "reopened", "labeled", "ready_for_review":
				n.Membership = true
			}
			switch p.Action {
			case "synchronize", "reopened":
				n.Rearm = true
			}
		}
		// A review, a line comment or a reopened thread after a
		// two-stable finish makes its "no open thread, reviewed head"
		// claim old news as surely as a push does.
		switch event + "/" + p.Action {
		case "pull_request_review/submitted", "pull_request_review_comment/created", "pull_request_review_thread/unresolved":
			n.Rearm = true
		}
	case "issue_comment":
		if p.Issue == nil || len(p.Issue.PullRequest) == 0 || string(p.Issue.PullRequest) == "null" {
			return provider.Notice{}, provider.ErrIgnored // a comment on an issue, not a PR
		}
		n.Numbers = []int{p.Issue.Number}
		// A trusted follow-up after converge's last reply is a finding
		// (PR-T13) a two-stable verdict did not read.
		n.Rearm = p.Action == "created"
	case "check_run":
		if p.CheckRun == nil {
			return provider.Notice{}, fmt.Errorf("payload of %s: no check_run", event)
		}
		addPRs(p.CheckRun.PullRequests)
		n.SHAs = provider.NonEmpty(p.CheckRun.HeadSHA)
		n.Branches = provider.NonEmpty(p.CheckRun.CheckSuite.HeadBranch)
		n.CI = true
	case "check_suite":
		if p.CheckSuite == nil {
			return provider.Notice{}, fmt.Errorf("payload of %s: no check_suite", event)
		}
		addPRs(p.CheckSuite.PullRequests)
		n.SHAs = provider.NonEmpty(p.CheckSuite.HeadSHA)
		n.Branches = provider.NonEmpty(p.CheckSuite.HeadBranch)
		n.CI = true
	case "status":
		n.SHAs = provider.NonEmpty(p.SHA)
		for _, b := range p.Branches {
			n.Branches = append(n.Branches, provider.NonEmpty(b.Name)...)
		}
		n.CI = true
	case "push":
		branch, ok := strings.CutPrefix(p.Ref, "refs/heads/")
		if !ok {
			return provider.Notice{}, provider.ErrIgnored // a tag
		}
		n.Branches = provider.NonEmpty(branch)
		if strings.Trim(p.After, "0") != "" {
			n.SHAs = provider.NonEmpty(p.After)
		}
	default:
		return provider.Notice{}, provider.ErrIgnored
	}
	if strings.Count(n.Repo, "/") != 1 {
		return provider.Notice{}, fmt.Errorf("payload of %s: no repository full_name", event)
	}
	return n, nil
}
