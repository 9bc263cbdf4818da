// Package fakelab is a GitLab emulator for tests, the demo and
// `converge sandbox --forge gitlab`: REST under /api/v4, GraphQL at
// /api/graphql (served from our own SDL, a subset of GitLab's public
// schema) and git smart HTTP over real bare repositories, on loopback, with
// https by default so git and the official Go client talk to it unchanged.
//
// The GitLab Duo Code Review bot is scripted and a pipeline runs a real test
// command on every new head, so a whole review loop can run against it.
//
// Every request reads and writes one consistent state: a request holds
// the lab's lock for its whole handling (the per-request snapshot).
package fakelab

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	graphqlgo "github.com/graph-gophers/graphql-go"

	"github.com/convergeloop/converge/internal/emulator/fakegit"
)

// Options configure a Lab.
type Options struct {
	// StateDir holds the bare repositories and ca.pem; a temporary
	// directory (removed by Close) when empty.
	StateDir string
	// Addr to listen on; default 127.0.0.1:0.
	Addr string
	// HTTP serves plain http instead of https.
	HTTP bool
	// DuoDelay is how long a requested Duo review takes; default 1s.
	// Negative means immediately.
	DuoDelay time.Duration
	// DuoNeverApproves plays Duo Code Review as GitLab did before
	// gitlab-org/gitlab!254981: a review neither approves nor requests
	// changes. The default is today's Duo: a review that finds nothing
	// approves, one that comments requests changes, and a new review first
	// withdraws Duo's earlier approval.
	DuoNeverApproves bool
	// RateLimit is the requests a token may make per minute; default
	// 2000 (GitLab.com's authenticated API limit). Negative: unlimited.
	RateLimit int
	// Logger receives request and background-work logs; discarded when nil.
	Logger *slog.Logger
	// Faults turns seeded API faults on from the start (see Faults).
	Faults Faults
	// DiscussionLag turns the lag fault on from the start (see SetDiscussionLag).
	DiscussionLag int
}

// Tokens are the lab's per-identity secrets.
type Tokens struct {
	Owner    string // lab-owner: owner (50)
	Author   string // lab-author: opens merge requests, developer (30)
	Reviewer string // lab-reviewer: maintainer (40), a human reviewer
	Reporter string // lab-reporter: reporter (20), read only, untrusted
	Outsider string // outsider: not a member, untrusted
	Duo      string // GitLabDuo, the Duo Code Review bot
}

// Usernames of the built-in identities.
const (
	UserOwner    = "lab-owner"
	UserAuthor   = "lab-author"
	UserReviewer = "lab-reviewer"
	UserReporter = "lab-reporter"
	UserOutsider = "outsider"
	// UserDuo is GitLab's Duo Code Review bot (a bot user, bot:true).
	UserDuo = "GitLabDuo"
)

// Access levels of project members, GitLab's numbers.
const (
	AccessMinimal    = 5
	AccessGuest      = 10
	AccessReporter   = 20
	AccessDeveloper  = 30
	AccessMaintainer = 40
	AccessOwner      = 50
)

// Lab is one running emulator.
type Lab struct {
	// Server is the lab as a server: state directory, CA, listener and
	// background work (Host, URL, CAFile, HTTPClient, Connections, ...).
	*fakegit.Server
	opts   Options
	log    *slog.Logger
	tokens Tokens
	schema *graphqlgo.Schema

	// mu guards the model; each request holds it for its whole handling.
	mu       sync.Mutex
	users    []*user
	byToken  map[string]*user
	projects []*project
	nextID   int
	// clockMu guards lastNow: the lab's clock only moves forward, by at
	// least a millisecond a reading, so two writes never share a time.
	clockMu    sync.Mutex
	lastNow    time.Time
	subs       map[int]chan Event
	nextSub    int
	closed     bool
	rate       map[string]*rateWindow
	faults     faultState
	counts     RequestCounts
	lagReads   int
	mergeCache map[string]mergeInfo
	writes     []Write
	hooks      labHooks // project webhooks (webhooks.go)
}

// New prepares a lab: state directory, CA, users. Start serves it.
func New(opts Options) (*Lab, error) {
	if opts.Addr == "" {
		opts.Addr = "127.0.0.1:0"
	}
	if opts.DuoDelay == 0 {
		opts.DuoDelay = time.Second
	}
	if opts.RateLimit == 0 {
		opts.RateLimit = 2000
	}
	l := &Lab{opts: opts, log: opts.Logger, byToken: map[string]*user{}, subs: map[int]chan Event{},
		rate: map[string]*rateWindow{}, nextID: 100, lagReads: opts.DiscussionLag, mergeCache: map[string]mergeInfo{}}
	if l.log == nil {
		l.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	srv, err := fakegit.NewServer("fakelab", l.opts.StateDir, opts.HTTP)
	if err != nil {
		return nil, err
	}
	l.Server, l.opts.StateDir = srv, srv.StateDir()
	l.makeUsers()
	s, err := graphqlgo.ParseSchema(schemaSDL, &rootResolver{l: l}, graphqlgo.MaxParallelism(1), graphqlgo.UseFieldResolvers())
	if err != nil {
		return nil, fmt.Errorf("parse schema: %w", err)
	}
	l.schema = s
	if opts.Faults.Rate > 0 {
		l.SetFaults(opts.Faults)
	}
	return l, nil
}

// Start listens and serves until Close (or ctx ends).
func (l *Lab) Start(ctx context.Context) error {
	return l.Listen(ctx, l.opts.Addr, l, l.log)
}

// Close stops serving, cancels background work (Duo, pipelines) and waits
// for it; a temporary state directory is removed.
func (l *Lab) Close() error {
	l.mu.Lock()
	l.closed = true
	l.mu.Unlock()
	l.Stop()
	l.mu.Lock()
	for id, ch := range l.subs {
		close(ch)
		delete(l.subs, id)
	}
	l.mu.Unlock()
	return l.RemoveState()
}

// APIURL is the REST v4 base.
func (l *Lab) APIURL() string { return l.URL() + "/api/v4" }

// GraphQLURL is the GraphQL endpoint.
func (l *Lab) GraphQLURL() string { return l.URL() + "/api/graphql" }

// GitURL is a project's smart-HTTP clone URL (http_url_to_repo).
func (l *Lab) GitURL(path string) string { return l.URL() + "/" + path + ".git" }

// MRURL is a merge request's web URL.
func (l *Lab) MRURL(path string, iid int) string {
	return fmt.Sprintf("%s/%s/-/merge_requests/%d", l.URL(), path, iid)
}

// Tokens returns the identities' tokens.
func (l *Lab) Tokens() Tokens { return l.tokens }

// GitEnv is the environment git needs to talk to the lab with token: the
// CA and the token as basic auth (oauth2:<token>, as GitLab takes it)
// passed as config through the environment, so nothing lands on disk.
func (l *Lab) GitEnv(token string) []string {
	env := l.Server.GitEnv()
	if token != "" {
		env = append(env, "GIT_CONFIG_COUNT=1",
			"GIT_CONFIG_KEY_0=http.extraHeader",
			"GIT_CONFIG_VALUE_0=Authorization: Basic "+basic("oauth2", token))
	}
	return env
}

// ServeHTTP routes the three surfaces: REST, GraphQL and git.
func (l *Lab) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if strings.HasPrefix(r.URL.Path, "/api/") && l.fault(w, r) {
		return
	}
	l.ServeHTTPUnfaulted(w, r)
}

// ServeHTTPUnfaulted serves r with no fault drawn.
func (l *Lab) ServeHTTPUnfaulted(w http.ResponseWriter, r *http.Request) {
	p := r.URL.Path
	switch {
	case p == "/api/graphql" || p == "/api/graphql/":
		l.serveGraphQL(w, r)
	case strings.HasPrefix(p, "/api/v4/"):
		l.serveREST(w, r)
	case strings.Contains(p, ".git/") || strings.HasSuffix(p, ".git"):
		l.serveGit(w, r)
	default:
		writeJSON(w, http.StatusNotFound, msg("404 Not found"))
	}
}

// Event is one change in the lab, for subscribers that want to wake early
// instead of polling.
type Event struct {
	Kind    string // push, mr_opened, note, resolved, unresolved, pipeline, status, label, state, reviewer, approval, duo_started, duo_finished
	Project string
	IID     int
	SHA     string
	Actor   string
	Detail  string
}

// Subscribe delivers every later Event until cancel. Slow subscribers lose
// events (the channel is buffered) rather than stall the lab.
func (l *Lab) Subscribe() (<-chan Event, func()) {
	ch := make(chan Event, 256)
	l.mu.Lock()
	id := l.nextSub
	l.nextSub++
	l.subs[id] = ch
	l.mu.Unlock()
	var once sync.Once
	return ch, func() {
		once.Do(func() {
			l.mu.Lock()
			if c, ok := l.subs[id]; ok {
				delete(l.subs, id)
				close(c)
			}
			l.mu.Unlock()
		})
	}
}

func (l *Lab) publishLocked(ev Event) {
	for _, ch := range l.subs {
		select {
		case ch <- ev:
		default:
		}
	}
	l.hookLocked(ev)
}

// now is the lab's time at millisecond precision, as GitLab's JSON gives
// it. Each reading is later than the one before, so the order of writes
// (Duo's withdrawal, then its progress note, then its approval) shows in
// their times as it does on a real server, where they are requests apart.
func (l *Lab) now() time.Time {
	t := time.Now().UTC().Truncate(time.Millisecond)
	l.clockMu.Lock()
	defer l.clockMu.Unlock()
	if !t.After(l.lastNow) {
		t = l.lastNow.Add(time.Millisecond)
	}
	l.lastNow = t
	return t
}

func (l *Lab) newIDLocked() int {
	l.nextID++
	return l.nextID
}
