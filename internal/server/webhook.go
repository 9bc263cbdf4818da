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
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/convergeloop/converge/internal/forge"
)

// Webhook headers GitHub sends.
const (
	HeaderSignature = "X-Hub-Signature-256"
	HeaderDelivery  = "X-GitHub-Delivery"
	HeaderEvent     = "X-GitHub-Event"
)

// Sign is the X-Hub-Signature-256 value of body under secret:
// "sha256=" and the hex HMAC SHA-256 of the body.
func Sign(secret, body []byte) string {
	m := hmac.New(sha256.New, secret)
	m.Write(body)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

// Errors of Verify.
var (
	ErrUnsigned     = errors.New("unsigned delivery")
	ErrBadSignature = errors.New("signature does not match")
)

// Verify checks an X-Hub-Signature-256 value against body, in constant
// time. An empty secret verifies nothing: a server with no secret
// refuses every delivery rather than trust them all.
func Verify(secret, body []byte, signature string) error {
	if len(secret) == 0 || signature == "" {
		return ErrUnsigned
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

// notice is what a delivery tells the server: which repository, and which
// PRs by number, head commit or branch. Nothing else in it is believed.
type notice struct {
	// forge is the forge the delivery came from: a GitHub event never
	// wakes a GitLab merge request of the same path, nor the reverse.
	forge forge.Kind
	// host is the forge's host as the payload names it (GitLab's
	// project.web_url); empty matches a target on any host.
	host     string
	repo     string // owner/name; on GitLab the project's full path
	numbers  []int
	shas     []string
	branches []string
	// membership: a pull_request change that may add the PR to a watched
	// repository's set (opened, labelled, ...).
	membership bool
	// rearm: the PR has a new head, was reopened, or has a new review,
	// line comment, top-level comment or reopened thread, so a verdict its
	// finished run published may no longer hold (PR-T10, PR-T14).
	rearm bool
	// ci: a check run, check suite or status changed on the commits in
	// shas: a verdict published on one of them may no longer hold
	// (PR-T14: CI red or re-run on the head).
	ci bool
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

// errIgnored marks a delivery of an event, or an action, converge does not
// follow.
var errIgnored = errors.New("ignored")

// parseNotice reads the PR targets out of one delivery.
func parseNotice(event string, body []byte) (notice, error) {
	var p wirePayload
	if err := json.Unmarshal(body, &p); err != nil {
		return notice{}, fmt.Errorf("payload of %s: %w", event, err)
	}
	n := notice{repo: p.Repository.FullName}
	addPRs := func(prs []wirePR) {
		for _, pr := range prs {
			if pr.Number > 0 {
				n.numbers = append(n.numbers, pr.Number)
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
			return notice{}, fmt.Errorf("payload of %s: no pull request number", event)
		}
		n.numbers = []int{num}
		if event == "pull_request" {
			switch p.Action {
			case "opened", "reopened", "labeled", "ready_for_review":
				n.membership = true
			}
			switch p.Action {
			case "synchronize", "reopened":
				n.rearm = true
			}
		}
		// A review, a line comment or a reopened thread after a
		// two-stable finish makes its "no open thread, reviewed head"
		// claim old news as surely as a push does.
		switch event + "/" + p.Action {
		case "pull_request_review/submitted", "pull_request_review_comment/created", "pull_request_review_thread/unresolved":
			n.rearm = true
		}
	case "issue_comment":
		if p.Issue == nil || len(p.Issue.PullRequest) == 0 || string(p.Issue.PullRequest) == "null" {
			return notice{}, errIgnored // a comment on an issue, not a PR
		}
		n.numbers = []int{p.Issue.Number}
		// A trusted follow-up after converge's last reply is a finding
		// (PR-T13) a two-stable verdict did not read.
		n.rearm = p.Action == "created"
	case "check_run":
		if p.CheckRun == nil {
			return notice{}, fmt.Errorf("payload of %s: no check_run", event)
		}
		addPRs(p.CheckRun.PullRequests)
		n.shas = nonEmpty(p.CheckRun.HeadSHA)
		n.branches = nonEmpty(p.CheckRun.CheckSuite.HeadBranch)
		n.ci = true
	case "check_suite":
		if p.CheckSuite == nil {
			return notice{}, fmt.Errorf("payload of %s: no check_suite", event)
		}
		addPRs(p.CheckSuite.PullRequests)
		n.shas = nonEmpty(p.CheckSuite.HeadSHA)
		n.branches = nonEmpty(p.CheckSuite.HeadBranch)
		n.ci = true
	case "status":
		n.shas = nonEmpty(p.SHA)
		for _, b := range p.Branches {
			n.branches = append(n.branches, nonEmpty(b.Name)...)
		}
		n.ci = true
	case "push":
		branch, ok := strings.CutPrefix(p.Ref, "refs/heads/")
		if !ok {
			return notice{}, errIgnored // a tag
		}
		n.branches = nonEmpty(branch)
		if strings.Trim(p.After, "0") != "" {
			n.shas = nonEmpty(p.After)
		}
	default:
		return notice{}, errIgnored
	}
	if strings.Count(n.repo, "/") != 1 {
		return notice{}, fmt.Errorf("payload of %s: no repository full_name", event)
	}
	return n, nil
}

// concerns reports whether ref is in the notice's repository, on its
// forge and (when the payload named one) its host.
func (n notice) concerns(ref forge.PRRef) bool {
	return ref.Forge == n.forge && strings.EqualFold(ref.FullName(), n.repo) &&
		(n.host == "" || strings.EqualFold(ref.Host, n.host))
}

// prKey names one PR of a notice for the rearm coalescer:
// "FORGE|HOST|REPO#N", lowercased, HOST empty when the payload named none.
// A registered target's names and host hold neither '|' nor '#'
// (forge.ParsePRURL), so a payload naming one with them matches nothing.
func (n notice) prKey(num int) string {
	return strings.ToLower(fmt.Sprintf("%s|%s|%s#%d", n.forge, n.host, n.repo, num))
}

// shaKey names one commit of a notice for the rearm coalescer:
// "FORGE|HOST|REPO@SHA": the PRs whose published verdict is on it.
func (n notice) shaKey(sha string) string {
	return strings.ToLower(fmt.Sprintf("%s|%s|%s@%s", n.forge, n.host, n.repo, sha))
}

// parsePRKey reads a prKey back as the notice that concerns its PR, and
// the PR's number; or a shaKey, and the commit (number 0).
func parsePRKey(key string) (notice, int, string, bool) {
	parts := strings.SplitN(key, "|", 3)
	if len(parts) != 3 {
		return notice{}, 0, "", false
	}
	kind, err := forge.ParseKind(parts[0])
	if err != nil {
		return notice{}, 0, "", false
	}
	if repo, sha, ok := strings.Cut(parts[2], "@"); ok && sha != "" && !strings.Contains(repo, "#") {
		return notice{forge: kind, host: parts[1], repo: repo}, 0, sha, true
	}
	repo, num, ok := strings.Cut(parts[2], "#")
	n, err := strconv.Atoi(num)
	if !ok || err != nil {
		return notice{}, 0, "", false
	}
	return notice{forge: kind, host: parts[1], repo: repo}, n, "", true
}

func nonEmpty(s string) []string {
	if s == "" {
		return nil
	}
	return []string{s}
}

// targets picks, among the loops, those the notice concerns: by PR
// number; by head commit, head branch or base branch; and, for an event
// that names only commits or branches, every loop of the repository whose
// head is not known yet (a wake costs one observation, a missed one a
// poll interval).
func (n notice) targets(runs []RunInfo, refs *refCache) []string {
	var out []string
	for _, r := range runs {
		ref, ok := refs.get(r.Target)
		if !ok || !n.concerns(ref) {
			continue
		}
		hit := slices.Contains(n.numbers, ref.Number) ||
			(r.Head != "" && slices.Contains(n.shas, r.Head)) ||
			(r.Branch != "" && slices.Contains(n.branches, r.Branch)) ||
			(r.Base != "" && slices.Contains(n.branches, r.Base))
		if !hit && len(n.numbers) == 0 && r.Head == "" && r.Branch == "" && len(n.shas)+len(n.branches) > 0 {
			hit = true
		}
		if hit && !slices.Contains(out, r.Target) {
			out = append(out, r.Target)
		}
	}
	return out
}

// refCache keeps targets parsed: every delivery looks through every
// loop, and a fleet has thousands.
type refCache struct {
	mu   sync.Mutex
	refs map[string]*forge.PRRef // nil: not a PR URL
}

func (c *refCache) get(target string) (forge.PRRef, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.refs == nil {
		c.refs = map[string]*forge.PRRef{}
	}
	ref, seen := c.refs[target]
	if !seen {
		if r, err := forge.ParsePRURL(target); err == nil {
			ref = &r
		}
		c.refs[target] = ref
	}
	if ref == nil {
		return forge.PRRef{}, false
	}
	return *ref, true
}

// serveWebhook verifies, deduplicates and routes one delivery. A request
// with X-Gitlab-Event is GitLab's (gitlab.go); any other is GitHub's.
func (s *Server) serveWebhook(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get(HeaderGitLabEvent) != "" {
		s.serveGitLabWebhook(w, r)
		return
	}
	event := r.Header.Get(HeaderEvent)
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		s.metrics.delivery(event, "unreadable")
		httpError(w, http.StatusBadRequest, "unreadable body: "+err.Error())
		return
	}
	if err := Verify(s.opts.Secret, body, r.Header.Get(HeaderSignature)); err != nil {
		outcome := "bad_signature"
		if errors.Is(err, ErrUnsigned) {
			outcome = "unsigned"
		}
		s.metrics.delivery(event, outcome)
		s.log.Warn("webhook refused", "event", event, "delivery", r.Header.Get(HeaderDelivery), "err", err)
		httpError(w, http.StatusUnauthorized, err.Error())
		return
	}
	id := r.Header.Get(HeaderDelivery)
	if id == "" || event == "" {
		s.metrics.delivery(event, "malformed")
		httpError(w, http.StatusBadRequest, "missing "+HeaderDelivery+" or "+HeaderEvent)
		return
	}
	if event == "ping" {
		s.metrics.delivery(event, "ping")
		writeJSON(w, http.StatusOK, map[string]any{"ok": true})
		return
	}
	n, err := parseNotice(event, body)
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

// act records a verified delivery's id and, the first time it is seen,
// wakes the loops its notice concerns, looks through a watched
// repository again, and rearms a finished PR. Its answer is quick: the
// wakes happen after the coalescing window, in Run.
func (s *Server) act(w http.ResponseWriter, r *http.Request, id, event string, n notice) {
	first, err := s.opts.Store.RecordDelivery(r.Context(), id, event)
	if err != nil {
		// Not recorded: the forge's redelivery may try again.
		s.metrics.delivery(event, "error")
		httpError(w, http.StatusInternalServerError, "record delivery: "+err.Error())
		return
	}
	if !first {
		s.metrics.delivery(event, "duplicate")
		writeJSON(w, http.StatusOK, map[string]any{"duplicate": true})
		return
	}
	targets := n.targets(s.opts.Loops.Snapshot(), &s.refs)
	for _, t := range targets {
		s.wakes.add(t)
	}
	if n.membership && s.opts.Discover != nil {
		s.discover.add(strings.ToLower(n.repo))
	}
	if n.rearm {
		for _, num := range n.numbers {
			s.rearm.add(n.prKey(num))
		}
	}
	if n.ci {
		for _, sha := range n.shas {
			s.rearm.add(n.shaKey(sha))
		}
	}
	s.metrics.delivery(event, "accepted")
	writeJSON(w, http.StatusAccepted, map[string]any{"targets": len(targets)})
	s.prune(r.Context(), false)
}
