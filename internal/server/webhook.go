package server

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/convergeloop/converge/internal/forge"
	"github.com/convergeloop/converge/internal/forge/provider"
)

// notice is what a delivery tells the server (provider.Notice), and the
// forge it came from: a GitHub event never wakes a GitLab merge request
// of the same path, nor the reverse.
type notice struct {
	provider.Notice
	forge forge.Kind
}

// concerns reports whether ref is in the notice's repository, on its
// forge and (when the payload named one) its host.
func (n notice) concerns(ref forge.PRRef) bool {
	return ref.Forge == n.forge && strings.EqualFold(ref.FullName(), n.Repo) &&
		(n.Host == "" || strings.EqualFold(ref.Host, n.Host))
}

// prKey names one PR of a notice for the rearm coalescer:
// "FORGE|HOST|REPO#N", lowercased, HOST empty when the payload named none.
// A registered target's names and host hold neither '|' nor '#'
// (forge.ParsePRURL), so a payload naming one with them matches nothing.
func (n notice) prKey(num int) string {
	return strings.ToLower(fmt.Sprintf("%s|%s|%s#%d", n.forge, n.Host, n.Repo, num))
}

// shaKey names one commit of a notice for the rearm coalescer:
// "FORGE|HOST|REPO@SHA": the PRs whose published verdict is on it.
func (n notice) shaKey(sha string) string {
	return strings.ToLower(fmt.Sprintf("%s|%s|%s@%s", n.forge, n.Host, n.Repo, sha))
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
		return notice{forge: kind, Notice: provider.Notice{Host: parts[1], Repo: repo}}, 0, sha, true
	}
	repo, num, ok := strings.Cut(parts[2], "#")
	n, err := strconv.Atoi(num)
	if !ok || err != nil {
		return notice{}, 0, "", false
	}
	return notice{forge: kind, Notice: provider.Notice{Host: parts[1], Repo: repo}}, n, "", true
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
		hit := slices.Contains(n.Numbers, ref.Number) ||
			(r.Head != "" && slices.Contains(n.SHAs, r.Head)) ||
			(r.Branch != "" && slices.Contains(n.Branches, r.Branch)) ||
			(r.Base != "" && slices.Contains(n.Branches, r.Base))
		if !hit && len(n.Numbers) == 0 && r.Head == "" && r.Branch == "" && len(n.SHAs)+len(n.Branches) > 0 {
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

// serveWebhook verifies, deduplicates and routes one delivery. The forge
// whose headers it carries reads it (provider.Webhooks); one no forge
// claims is the server's own forge's, and refused there.
func (s *Server) serveWebhook(w http.ResponseWriter, r *http.Request) {
	kind, hooks, err := s.webhooksOf(r.Header)
	if err != nil {
		s.metrics.delivery("", "malformed")
		httpError(w, http.StatusBadRequest, err.Error())
		return
	}
	event := hooks.Event(r.Header)
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		s.metrics.delivery(event, "unreadable")
		httpError(w, http.StatusBadRequest, "unreadable body: "+err.Error())
		return
	}
	if err := hooks.Verify(s.opts.Secret, r.Header, body); err != nil {
		outcome := "bad_signature"
		if errors.Is(err, provider.ErrUnsigned) {
			outcome = "unsigned"
		}
		s.metrics.delivery(event, outcome)
		s.log.Warn("webhook refused", "forge", kind, "event", event, "err", err)
		httpError(w, http.StatusUnauthorized, err.Error())
		return
	}
	id, err := hooks.Delivery(r.Header, body)
	if err != nil {
		s.metrics.delivery(event, "malformed")
		httpError(w, http.StatusBadRequest, err.Error())
		return
	}
	n, err := hooks.Read(event, body)
	switch {
	case errors.Is(err, provider.ErrPing):
		s.metrics.delivery(event, "ping")
		writeJSON(w, http.StatusOK, map[string]any{"ok": true})
		return
	case errors.Is(err, provider.ErrIgnored):
		s.metrics.delivery(event, "ignored")
		writeJSON(w, http.StatusOK, map[string]any{"ignored": true})
		return
	case err != nil:
		s.metrics.delivery(event, "malformed")
		httpError(w, http.StatusBadRequest, err.Error())
		return
	}
	s.act(w, r, id, event, notice{Notice: n, forge: kind})
}

// webhooksOf is the forge whose headers h carries, and its webhooks; the
// server's own forge's when no forge claims them. A delivery two forges
// claim is refused: which one sent it cannot be told.
func (s *Server) webhooksOf(h http.Header) (forge.Kind, provider.Webhooks, error) {
	var claimants []provider.Provider
	for _, p := range provider.All() {
		if p.Webhooks().Claims(h) {
			claimants = append(claimants, p)
		}
	}
	switch len(claimants) {
	case 1:
		return claimants[0].Kind(), claimants[0].Webhooks(), nil
	case 0:
	default:
		return "", nil, fmt.Errorf("the delivery carries the headers of %s and %s: which forge sent it cannot be told", claimants[0].Kind(), claimants[1].Kind())
	}
	p, err := provider.For(s.opts.Forge)
	if err != nil {
		return "", nil, err
	}
	return p.Kind(), p.Webhooks(), nil
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
	if n.Membership && s.opts.Discover != nil {
		s.discover.add(strings.ToLower(n.Repo))
	}
	if n.Rearm {
		for _, num := range n.Numbers {
			s.rearm.add(n.prKey(num))
		}
	}
	if n.CI {
		for _, sha := range n.SHAs {
			s.rearm.add(n.shaKey(sha))
		}
	}
	s.metrics.delivery(event, "accepted")
	writeJSON(w, http.StatusAccepted, map[string]any{"targets": len(targets)})
	s.prune(r.Context(), false)
}
