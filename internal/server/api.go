package server

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"maps"
	"mime"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/convergeloop/converge/internal/forge"
	"github.com/convergeloop/converge/internal/forge/provider"
	"github.com/convergeloop/converge/internal/prloop"
	"github.com/convergeloop/converge/internal/store"
)

// auth requires the bearer token when the server is bound off loopback or
// was given one (SEC-4). Open on loopback, it still refuses what a web
// page in the user's browser could send: a request naming the server by
// a host other than a loopback one (DNS rebinding), and a POST that is
// not JSON (a cross-site form).
func (s *Server) auth(next http.Handler) http.Handler {
	want := []byte("Bearer " + s.opts.Token)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.needAuth {
			got := []byte(r.Header.Get("Authorization"))
			if subtle.ConstantTimeCompare(got, want) != 1 {
				w.Header().Set("WWW-Authenticate", `Bearer realm="converge"`)
				httpError(w, http.StatusUnauthorized, "missing or wrong bearer token")
				return
			}
		} else if !IsLoopback(r.Host) {
			httpError(w, http.StatusForbidden, fmt.Sprintf("host %q: address this server by 127.0.0.1, ::1 or localhost", r.Host))
			return
		}
		if r.Method == http.MethodPost {
			if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
				httpError(w, http.StatusUnsupportedMediaType, "send the request body as Content-Type: application/json")
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// maxAPIBody bounds an API request; registrations are small.
const maxAPIBody = 1 << 20

func decodeBody(w http.ResponseWriter, r *http.Request, v any) bool {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxAPIBody))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		httpError(w, http.StatusBadRequest, "bad request body: "+err.Error())
		return false
	}
	return true
}

// servePostPR registers one PR: POST /api/prs {"url": "https://HOST/O/R/pull/N"}.
func (s *Server) servePostPR(w http.ResponseWriter, r *http.Request) {
	var in struct {
		URL string `json:"url"`
	}
	if !decodeBody(w, r, &in) {
		return
	}
	ref, err := forge.ParsePRURL(in.URL)
	if err != nil {
		httpError(w, http.StatusBadRequest, err.Error())
		return
	}
	target := ref.String()
	if err := s.opts.Loops.Register(r.Context(), target); err != nil {
		httpError(w, http.StatusUnprocessableEntity, fmt.Sprintf("register %s: %v", target, err))
		return
	}
	writeJSON(w, http.StatusCreated, map[string]any{"target": target})
}

// servePostRepo watches a repository: POST /api/repos {"repo": "o/r",
// "label": "...", "authors": [...]}; its matching open PRs are registered
// now and whenever a webhook says one opened or was labelled.
func (s *Server) servePostRepo(w http.ResponseWriter, r *http.Request) {
	if s.opts.Discover == nil {
		httpError(w, http.StatusNotImplemented, "watching repositories needs a forge to list their PRs; this server has none")
		return
	}
	var in struct {
		Repo    string   `json:"repo"`
		Label   string   `json:"label"`
		Authors []string `json:"authors"`
		// Forge is "github" or "gitlab"; empty means the server's.
		Forge string `json:"forge"`
	}
	if !decodeBody(w, r, &in) {
		return
	}
	kind := s.opts.Forge
	if in.Forge != "" {
		k, err := forge.ParseKind(in.Forge)
		if err != nil {
			httpError(w, http.StatusBadRequest, err.Error())
			return
		}
		if k != s.opts.Forge {
			httpError(w, http.StatusUnprocessableEntity, fmt.Sprintf("this server drives %s; start another for %s", s.opts.Forge, k))
			return
		}
		kind = k
	}
	site, err := provider.For(kind)
	if err == nil {
		_, err = site.RepoRef(site.DefaultHost(), "", in.Repo)
	}
	if err != nil {
		httpError(w, http.StatusBadRequest, err.Error())
		return
	}
	watch := store.RepoWatch{Repo: in.Repo, Label: in.Label, Authors: in.Authors}
	if err := s.opts.Store.PutRepoWatch(r.Context(), watch); err != nil {
		httpError(w, http.StatusInternalServerError, err.Error())
		return
	}
	s.discover.add(strings.ToLower(in.Repo))
	writeJSON(w, http.StatusCreated, map[string]any{"repo": in.Repo})
}

// serveRuns lists the loops and the watched repositories: GET /api/runs.
func (s *Server) serveRuns(w http.ResponseWriter, r *http.Request) {
	runs := s.opts.Loops.Snapshot()
	if runs == nil {
		runs = []RunInfo{}
	}
	watches, err := s.opts.Store.RepoWatches(r.Context())
	if err != nil {
		httpError(w, http.StatusInternalServerError, err.Error())
		return
	}
	type repoOut struct {
		Repo    string   `json:"repo"`
		Label   string   `json:"label,omitempty"`
		Authors []string `json:"authors,omitempty"`
	}
	repos := []repoOut{}
	for _, wt := range watches {
		repos = append(repos, repoOut{Repo: wt.Repo, Label: wt.Label, Authors: wt.Authors})
	}
	writeJSON(w, http.StatusOK, map[string]any{"runs": runs, "repos": repos})
}

// DiscoverAll registers the matching open PRs of every watched repository:
// at start, and as the fallback poll for PRs whose webhook was lost.
func (s *Server) DiscoverAll(ctx context.Context) error {
	if s.opts.Discover == nil {
		return nil
	}
	watches, err := s.opts.Store.RepoWatches(ctx)
	if err != nil {
		return fmt.Errorf("discover: %w", err)
	}
	for _, wt := range watches {
		s.discoverWatch(ctx, wt)
	}
	return nil
}

// discoverRepo registers the matching open PRs of repo if it is watched.
func (s *Server) discoverRepo(ctx context.Context, repo string) {
	watches, err := s.opts.Store.RepoWatches(ctx)
	if err != nil {
		s.log.Error("discover", "repo", repo, "err", err)
		return
	}
	for _, wt := range watches {
		if strings.EqualFold(wt.Repo, repo) {
			s.discoverWatch(ctx, wt)
		}
	}
}

func (s *Server) discoverWatch(ctx context.Context, wt store.RepoWatch) {
	urls, err := s.opts.Discover(ctx, wt)
	if err != nil {
		s.log.Error("discover", "repo", wt.Repo, "err", err)
		return
	}
	// A PR registered before is not taken again: its unfinished run
	// resumes at start, and a finished one waits for a new head (rearmPR),
	// so the server's own label on a PR does not start a run on every
	// other PR it finished.
	known, err := s.registered(ctx)
	if err != nil {
		s.log.Error("discover", "repo", wt.Repo, "err", err)
		return
	}
	for _, r := range s.opts.Loops.Snapshot() {
		known[r.Target] = true
	}
	for _, u := range urls {
		ref, err := forge.ParsePRURL(u)
		if err != nil || !strings.EqualFold(ref.FullName(), wt.Repo) {
			s.log.Warn("discover: not a PR of the repository", "repo", wt.Repo, "url", u)
			continue
		}
		target := ref.String()
		if known[target] {
			continue
		}
		if err := s.opts.Loops.Register(ctx, target); err != nil {
			s.log.Error("discover: register", "target", target, "err", err)
			continue
		}
		known[target] = true
	}
}

// WatchMatches reports whether an open PR by author carrying labels
// belongs to watch w: it carries w's label, or its author is one of w's
// authors; a watch with neither takes every open PR. Names compare as
// GitHub compares them, case-insensitively.
func WatchMatches(w store.RepoWatch, author string, labels []string) bool {
	if w.Label == "" && len(w.Authors) == 0 {
		return true
	}
	if w.Label != "" {
		for _, l := range labels {
			if strings.EqualFold(l, w.Label) {
				return true
			}
		}
	}
	for _, a := range w.Authors {
		if strings.EqualFold(a, author) {
			return true
		}
	}
	return false
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func httpError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, map[string]any{"error": msg})
}

// registered is every target the store has a registration for.
func (s *Server) registered(ctx context.Context) (map[string]bool, error) {
	regs, err := s.opts.Store.Registrations(ctx)
	if err != nil {
		return nil, err
	}
	known := make(map[string]bool, len(regs))
	for _, t := range regs {
		known[t] = true
	}
	return known, nil
}

// rearmPR starts a new run on a registered PR (a notice's prKey) that has
// a new head, was reopened, or has a new review, line comment, top-level
// comment or reopened thread while no loop ran on it, when its last run
// ended two-stable: the verdict it published (the ready label, a check
// run) may no longer hold, and the new run's first observation retracts
// it or, when nothing broke, ends two-stable again writing nothing
// (PR-T14). A shaKey (CI news on a commit) does the same for the PRs
// whose verdict is on that commit. Any other terminal published
// needs-attention, which such news does not make less true, and a human
// push is a yield (PR-T4) that must not be undone by the push's own
// event. A PR whose loop runs is woken instead, and the news is kept
// until that loop ends (deferRearm): news a finishing run did not read is
// never lost. One never registered is left alone. A registered PR whose
// last run is unfinished while no loop of this server drives it (refused
// at its claim, or ended by an error) is registered again on any such
// news: it resumes.
func (s *Server) rearmPR(ctx context.Context, key string) {
	n, num, sha, ok := parsePRKey(key)
	if !ok {
		s.log.Error("rearm: malformed key", "pr", key)
		return
	}
	live := map[string]bool{}
	for _, r := range s.opts.Loops.Snapshot() {
		live[r.Target] = true
	}
	regs, err := s.opts.Store.Registrations(ctx)
	if err != nil {
		s.log.Error("rearm", "pr", key, "err", err)
		return
	}
	at := s.opts.Clock.Now()
	for _, t := range regs {
		ref, err := forge.ParsePRURL(t)
		if err != nil || !n.concerns(ref) || (sha == "" && ref.Number != num) {
			continue
		}
		if live[t] {
			s.deferRearm(t, sha, at)
			continue
		}
		s.rearmRetrying(ctx, t, sha, time.Time{}, 0)
	}
}

// rearmRetrying is rearmTarget, and when its registration fails (a clone that
// could not be read, the store busy), the news is kept and tried again
// after a back-off: a retraction is never lost to a passing fault.
func (s *Server) rearmRetrying(ctx context.Context, t, sha string, since time.Time, tries int) {
	err := s.rearmTarget(ctx, t, sha, since)
	if err == nil || ctx.Err() != nil {
		return
	}
	wait := min(pendingEvery<<min(tries, 10), maxRearmBackoff)
	s.log.Error("rearm: register", "target", t, "err", err, "retry_in", wait)
	s.pendMu.Lock()
	p := s.pendingFor(t, since)
	p.tries = max(p.tries, tries+1)
	p.due = s.opts.Clock.Now().Add(wait)
	p.note(sha)
	s.pendMu.Unlock()
	s.kickPending()
}

// maxRearmBackoff caps the wait between tries of a failed rearm.
const maxRearmBackoff = 5 * time.Minute

// rearmTarget registers t again when its newest run calls for it (see
// rearmPR). With sha, only a two-stable verdict on that commit does; with
// since, only one whose proof was observed no later than lagMargin after
// since: news older than that was read by the run that proved it. Its
// error is the registration's.
func (s *Server) rearmTarget(ctx context.Context, t, sha string, since time.Time) error {
	run, err := s.opts.Store.LatestRunFor(ctx, t)
	switch {
	case err != nil:
		return nil
	case !run.Finished():
		if sha != "" || !since.IsZero() {
			return nil
		}
		// Unfinished, and no loop of this server drives it: it was
		// refused at its claim or ended by an error before its end was
		// recorded. Registering resumes it (or is refused again, and
		// says why, while another process drives it).
		s.log.Info("rearm: news on a PR whose unfinished run no loop drives", "target", t, "run", run.ID)
	case run.Status != string(prloop.ReasonTwoStable):
		return nil
	default:
		if sha != "" && !strings.EqualFold(prloop.PriorVerdictHead([]store.Run{run}), sha) {
			return nil
		}
		if !since.IsZero() {
			if obs := prloop.ProofObservedAt(run); !obs.IsZero() && since.Before(obs.Add(-lagMargin)) {
				return nil
			}
		}
		s.log.Info("rearm: news on a finished PR", "target", t)
	}
	return s.opts.Loops.Register(ctx, t)
}

// lagMargin is how long before a proof's observation news may have
// happened and still not be in it: the forge shows a change to its API a
// little after its webhook leaves.
const lagMargin = 5 * time.Second

// pendingRearm is news about a PR whose loop was live when it came.
type pendingRearm struct {
	shas []string // CI news on these commits; empty: news on the PR
	pr   bool
	// at is when the newest news came: the run's proof read all of it
	// only when observed after this (less lagMargin). Zero: news no proof
	// can have read (a rearm that failed while no loop ran).
	at time.Time

	tries int       // failed registrations so far
	due   time.Time // not tried again before this
}

// note adds news: on the PR when sha is empty, else CI news on sha.
func (p *pendingRearm) note(sha string) {
	if sha == "" {
		p.pr = true
	} else if !slices.Contains(p.shas, sha) {
		p.shas = append(p.shas, sha)
	}
}

// pendingFor is t's deferred news, with news at at added to it. It keeps
// the newest time, not the first: a proof observed between two pieces of
// news read the first and not the second, and must still be rearmed.
// Under pendMu.
func (s *Server) pendingFor(t string, at time.Time) *pendingRearm {
	if s.pending == nil {
		s.pending = map[string]*pendingRearm{}
	}
	p := s.pending[t]
	switch {
	case p == nil:
		p = &pendingRearm{at: at}
		s.pending[t] = p
	case at.IsZero() || p.at.IsZero():
		p.at = time.Time{}
	case at.After(p.at):
		p.at = at
	}
	return p
}

// kickPending wakes runPending.
func (s *Server) kickPending() {
	select {
	case s.pendKick <- struct{}{}:
	default:
	}
}

// deferRearm keeps news on t while its loop runs: the loop was woken, but
// may be past its last observation (PR-T14).
func (s *Server) deferRearm(t, sha string, at time.Time) {
	s.pendMu.Lock()
	s.pendingFor(t, at).note(sha)
	s.pendMu.Unlock()
	s.kickPending()
}

// pendingEvery spaces the checks of deferred news.
const pendingEvery = time.Second

// runPending hands deferred news to rearmTarget once its loop ended.
func (s *Server) runPending(ctx context.Context) {
	for {
		s.pendMu.Lock()
		idle := len(s.pending) == 0
		s.pendMu.Unlock()
		if idle {
			// Nothing deferred: no timer until deferRearm kicks.
			select {
			case <-ctx.Done():
				return
			case <-s.pendKick:
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-s.opts.Clock.After(pendingEvery):
		}
		s.pendMu.Lock()
		live := map[string]bool{}
		for _, r := range s.opts.Loops.Snapshot() {
			live[r.Target] = true
		}
		ended := map[string]*pendingRearm{}
		now := s.opts.Clock.Now()
		for t, p := range s.pending {
			if !live[t] && !p.due.After(now) {
				ended[t] = p
				delete(s.pending, t)
			}
		}
		s.pendMu.Unlock()
		for _, t := range slices.Sorted(maps.Keys(ended)) {
			p := ended[t]
			if p.pr {
				s.rearmRetrying(ctx, t, "", p.at, p.tries)
				continue
			}
			for _, sha := range p.shas {
				s.rearmRetrying(ctx, t, sha, p.at, p.tries)
			}
		}
	}
}
