package fakelab

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"net/http"
	"strings"
	"time"
)

type user struct {
	id       int
	username string
	name     string
	token    string
	bot      bool
}

type project struct {
	id            int
	path          string // full path, "group/sub/name"
	dir           string
	defaultBranch string
	testCommand   []string
	private       bool
	members       map[int]int // user id -> access level
	opts          ProjectOptions
	mrs           []*mr
	pipelines     []*pipeline
	statuses      []*commitStatus
	ci            map[int]func() // running pipeline cancel by MR iid
	duoScript     *DuoScript
	noDuo         bool
	createdAt     time.Time
}

type mr struct {
	id, iid     int
	proj        *project
	title       string
	description string
	state       string // opened, closed, merged, locked
	draft       bool
	author      *user
	source      string
	target      string
	headSHA     string
	versions    []*version // newest last
	discussions []*discussion
	labels      []string
	labelEvents []*labelEvent
	reviewers   []*reviewer
	approvedBy  []*user
	createdAt   time.Time
	updatedAt   time.Time
	duoScript   *DuoScript
	duoRound    int
	reads       int // GraphQL/REST discussion reads, for the lag fault
}

type version struct {
	id                int
	head, base, start string
	createdAt         time.Time
	realSize          int
}

type reviewer struct {
	u         *user
	state     string
	createdAt time.Time
}

type discussion struct {
	id         string
	individual bool
	notes      []*note
	visibleAt  int // the MR read from which it shows (lag fault)
}

type note struct {
	id         int
	typ        string // DiffNote, DiscussionNote or ""
	body       string
	author     *user
	createdAt  time.Time
	updatedAt  time.Time
	system     bool
	resolvable bool
	resolved   bool
	resolvedBy *user
	resolvedAt time.Time
	position   *Position
	disc       *discussion
}

// Position is a DiffNote's place: GitLab's position object, made from the
// MR's diff_refs at the time it was written.
type Position struct {
	BaseSHA  string
	StartSHA string
	HeadSHA  string
	OldPath  string
	NewPath  string
	OldLine  int // 0: null (an added line)
	NewLine  int // 0: null (a removed line)
}

type labelEvent struct {
	id     int
	u      *user
	at     time.Time
	label  string
	action string
}

type pipeline struct {
	id        int
	iid       int
	sha, ref  string
	status    string
	jobs      []*job
	createdAt time.Time
	updatedAt time.Time
	source    string
}

type job struct {
	id        int
	name      string
	stage     string
	status    string
	createdAt time.Time
	started   time.Time
	finished  time.Time
	trace     string
}

type commitStatus struct {
	id          int
	sha         string
	ref         string
	name        string
	status      string
	description string
	targetURL   string
	createdAt   time.Time
	author      *user
}

func (d *discussion) first() *note { return d.notes[0] }

func (d *discussion) resolvable() bool { return !d.individual && d.first().resolvable }

func (d *discussion) resolved() bool {
	if !d.resolvable() {
		return false
	}
	for _, n := range d.notes {
		if n.resolvable && !n.resolved {
			return false
		}
	}
	return true
}

func (m *mr) version() *version { return m.versions[len(m.versions)-1] }

func (m *mr) webURL(l *Lab) string { return l.MRURL(m.proj.path, m.iid) }

func (m *mr) reviewer(u *user) *reviewer {
	for _, r := range m.reviewers {
		if r.u == u {
			return r
		}
	}
	return nil
}

func (m *mr) approved(u *user) bool {
	for _, a := range m.approvedBy {
		if a == u {
			return true
		}
	}
	return false
}

func (p *project) mr(iid int) *mr {
	for _, m := range p.mrs {
		if m.iid == iid {
			return m
		}
	}
	return nil
}

// access is u's access level on p, 0 when not a member.
func (p *project) access(u *user) int {
	if u == nil {
		return 0
	}
	return p.members[u.id]
}

func (p *project) canRead(u *user) bool {
	return u != nil && (!p.private || p.access(u) >= AccessGuest)
}

func (p *project) canWrite(u *user) bool { return p.access(u) >= AccessDeveloper }

func newToken() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return "glpat-" + hex.EncodeToString(b)
}

func newDiscussionID() string {
	b := make([]byte, 20)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func basic(user, pass string) string {
	return base64.StdEncoding.EncodeToString([]byte(user + ":" + pass))
}

func (l *Lab) makeUsers() {
	add := func(username, name string, bot bool) string {
		u := &user{id: len(l.users) + 1, username: username, name: name, token: newToken(), bot: bot}
		l.users = append(l.users, u)
		l.byToken[u.token] = u
		return u.token
	}
	l.tokens = Tokens{
		Owner:    add(UserOwner, "Lab Owner", false),
		Author:   add(UserAuthor, "Lab Author", false),
		Reviewer: add(UserReviewer, "Lab Reviewer", false),
		Reporter: add(UserReporter, "Lab Reporter", false),
		Outsider: add(UserOutsider, "Out Sider", false),
		Duo:      add(UserDuo, "GitLab Duo", true),
	}
}

// AddUser creates a user (not a member of any project) and returns its token.
func (l *Lab) AddUser(username string, bot bool) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	u := &user{id: len(l.users) + 1, username: username, name: username, token: newToken(), bot: bot}
	l.users = append(l.users, u)
	l.byToken[u.token] = u
	return u.token
}

func (l *Lab) userLocked(username string) *user {
	for _, u := range l.users {
		if strings.EqualFold(u.username, username) {
			return u
		}
	}
	return nil
}

func (l *Lab) userByID(id int) *user {
	for _, u := range l.users {
		if u.id == id {
			return u
		}
	}
	return nil
}

// authenticate finds the token's user: PRIVATE-TOKEN, a Bearer token, or
// the password of basic auth (git).
func (l *Lab) authenticate(r *http.Request) *user {
	tok := r.Header.Get("PRIVATE-TOKEN")
	if tok == "" {
		if a := r.Header.Get("Authorization"); strings.HasPrefix(a, "Bearer ") {
			tok = strings.TrimPrefix(a, "Bearer ")
		}
	}
	if tok == "" {
		if _, p, ok := r.BasicAuth(); ok {
			tok = p
		}
	}
	if tok == "" {
		return nil
	}
	return l.byToken[tok]
}

// projectLocked finds a project by numeric id or full path.
func (l *Lab) projectLocked(idOrPath string) *project {
	for _, p := range l.projects {
		if p.path == idOrPath || itoa(p.id) == idOrPath {
			return p
		}
	}
	return nil
}
