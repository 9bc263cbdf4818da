package fakelab

import (
	"context"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/convergeloop/converge/internal/emulator/fakegit"
)

// DeleteFile as a file's content in seeded commits removes the file.
const DeleteFile = fakegit.DeleteFile

// ProjectOptions shape a seeded project.
type ProjectOptions struct {
	// TestCommand is run by a pipeline (job "test") on every new branch
	// head; no pipelines when empty.
	TestCommand []string
	// DefaultBranch defaults to main.
	DefaultBranch string
	// Private hides the project from non-members (404); public projects
	// let any signed-in user read and comment.
	Private bool
	// Members maps usernames to access levels; default: lab-owner 50,
	// lab-reviewer 40, lab-author 30, lab-reporter 20 (outsider and
	// GitLabDuo are not members).
	Members map[string]int
	// NoDuo: Duo Code Review is not available; adding GitLabDuo as a
	// reviewer adds it but no review ever comes.
	NoDuo bool
	// PipelineMustSucceed: "Pipelines must succeed" (ci_must_pass,
	// ci_still_running in detailed_merge_status).
	PipelineMustSucceed bool
	// ThreadsMustResolve: "All threads must be resolved"
	// (discussions_not_resolved).
	ThreadsMustResolve bool
	// ApprovalsRequired > 0 holds the merge at not_approved until that
	// many approvals.
	ApprovalsRequired int
	// FastForwardOnly: the fast-forward merge method, so a head behind its
	// target is need_rebase.
	FastForwardOnly bool
}

// NewMR describes a merge request to seed.
type NewMR struct {
	Source      string // branch; created from Target when missing
	Target      string // default: the project's default branch
	Title       string
	Description string
	Author      string // username; default lab-author
	Draft       bool
	Labels      []string
	// Files are committed on the source branch before the MR opens.
	Files   map[string]string
	Message string // commit message for Files
}

var pathRE = regexp.MustCompile(`^[A-Za-z0-9_.-]+(/[A-Za-z0-9_.-]+)+$`)

var gitIdentity = []string{
	"GIT_AUTHOR_NAME=Lab Author", "GIT_AUTHOR_EMAIL=lab-author@users.noreply.fakelab",
	"GIT_COMMITTER_NAME=fakelab", "GIT_COMMITTER_EMAIL=noreply@fakelab",
}

// CreateProject makes a project at path ("group[/sub...]/name") with
// files committed on the default branch, and returns its id.
func (l *Lab) CreateProject(path string, files map[string]string, opts ProjectOptions) (int, error) {
	if !pathRE.MatchString(path) {
		return 0, fmt.Errorf("create project: bad path %q", path)
	}
	if opts.DefaultBranch == "" {
		opts.DefaultBranch = "main"
	}
	if opts.Members == nil {
		opts.Members = map[string]int{UserOwner: AccessOwner, UserReviewer: AccessMaintainer, UserAuthor: AccessDeveloper, UserReporter: AccessReporter}
	}
	ctx := l.Context()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.projectLocked(path) != nil {
		return 0, fmt.Errorf("create project %s: already exists", path)
	}
	p := &project{id: l.newIDLocked(), path: path, dir: filepath.Join(l.opts.StateDir, "repos", path+".git"),
		defaultBranch: opts.DefaultBranch, testCommand: opts.TestCommand, private: opts.Private, members: map[int]int{},
		opts: opts, ci: map[int]func(){}, noDuo: opts.NoDuo, createdAt: l.now()}
	for name, lvl := range opts.Members {
		u := l.userLocked(name)
		if u == nil {
			return 0, fmt.Errorf("create project: no user %s", name)
		}
		p.members[u.id] = lvl
	}
	if err := fakegit.InitBare(ctx, p.dir, opts.DefaultBranch); err != nil {
		return 0, fmt.Errorf("create project: %w", err)
	}
	sha, err := fakegit.CommitFiles(ctx, p.dir, "", files, "Initial commit", l.now(), gitIdentity)
	if err != nil {
		return 0, fmt.Errorf("create project: %w", err)
	}
	if _, err := fakegit.Run(ctx, p.dir, nil, nil, "update-ref", "refs/heads/"+opts.DefaultBranch, sha); err != nil {
		return 0, fmt.Errorf("create project: %w", err)
	}
	l.projects = append(l.projects, p)
	return p.id, nil
}

// SetMember sets a user's access level on a project; 0 removes the member.
func (l *Lab) SetMember(path, username string, level int) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	p, u := l.projectLocked(path), l.userLocked(username)
	if p == nil || u == nil {
		return fmt.Errorf("set member: no project %s or user %s", path, username)
	}
	if level == 0 {
		delete(p.members, u.id)
	} else {
		p.members[u.id] = level
	}
	return nil
}

// CreateMR commits Files on the source branch (made from the target when
// missing) and opens a merge request; it returns the iid.
func (l *Lab) CreateMR(path string, n NewMR) (int, error) {
	ctx := l.Context()
	l.mu.Lock()
	defer l.mu.Unlock()
	p := l.projectLocked(path)
	if p == nil {
		return 0, fmt.Errorf("create mr: no project %s", path)
	}
	if n.Target == "" {
		n.Target = p.defaultBranch
	}
	if n.Author == "" {
		n.Author = UserAuthor
	}
	author := l.userLocked(n.Author)
	if author == nil {
		return 0, fmt.Errorf("create mr: no user %s", n.Author)
	}
	refs, err := fakegit.ReadRefs(ctx, p.dir)
	if err != nil {
		return 0, fmt.Errorf("create mr: %w", err)
	}
	if refs[n.Target] == "" {
		return 0, fmt.Errorf("create mr: no target branch %s", n.Target)
	}
	head := refs[n.Source]
	if head == "" {
		head = refs[n.Target]
	}
	if len(n.Files) > 0 {
		msg := n.Message
		if msg == "" {
			msg = n.Title
		}
		if head, err = fakegit.CommitFiles(ctx, p.dir, head, n.Files, msg, l.now(), gitIdentity); err != nil {
			return 0, fmt.Errorf("create mr: %w", err)
		}
	}
	if _, err := fakegit.Run(ctx, p.dir, nil, nil, "update-ref", "refs/heads/"+n.Source, head); err != nil {
		return 0, fmt.Errorf("create mr: %w", err)
	}
	now := l.now()
	iid := 1
	for _, m := range p.mrs {
		iid = max(iid, m.iid+1)
	}
	m := &mr{id: l.newIDLocked(), iid: iid, proj: p, title: n.Title, description: n.Description, state: "opened",
		draft: n.Draft, author: author, source: n.Source, target: n.Target, headSHA: head, createdAt: now, updatedAt: now}
	v, err := l.newVersionLocked(ctx, m, head)
	if err != nil {
		return 0, fmt.Errorf("create mr: %w", err)
	}
	m.versions = append(m.versions, v)
	for _, lb := range n.Labels {
		l.addLabelLocked(m, author, lb)
	}
	p.mrs = append(p.mrs, m)
	l.publishLocked(Event{Kind: "mr_opened", Project: p.path, IID: iid, SHA: head, Actor: author.username})
	l.startPipelineLocked(p, n.Source, head)
	return iid, nil
}

// newVersionLocked computes a diff version of m at head against the
// target's tip.
func (l *Lab) newVersionLocked(ctx context.Context, m *mr, head string) (*version, error) {
	start, err := fakegit.RevParse(ctx, m.proj.dir, "refs/heads/"+m.target)
	if err != nil {
		return nil, err
	}
	base, err := fakegit.Run(ctx, m.proj.dir, nil, nil, "merge-base", start, head)
	if err != nil {
		base = start
	}
	out, _ := fakegit.Run(ctx, m.proj.dir, nil, nil, "diff", "--name-only", base, head)
	n := 0
	for _, f := range strings.Split(out, "\n") {
		if f != "" {
			n++
		}
	}
	return &version{id: l.newIDLocked(), head: head, base: base, start: start, createdAt: l.now(), realSize: n}, nil
}

// PushFiles commits files on top of branch's tip as username and moves
// the branch, as a human's push; it returns the new commit.
func (l *Lab) PushFiles(path, branch, username string, files map[string]string, message string) (string, error) {
	return l.push(path, branch, "refs/heads/"+branch, username, files, message)
}

// ForcePush commits files on top of onto (a revision, e.g. "main" or a
// sha) and force-moves branch there, rewriting its history.
func (l *Lab) ForcePush(path, branch, onto, username string, files map[string]string, message string) (string, error) {
	return l.push(path, branch, onto, username, files, message)
}

// ResetBranch force-moves branch to sha, an earlier commit, as a human's
// `git push --force` of an older head does.
func (l *Lab) ResetBranch(path, branch, sha, username string) error {
	ctx := l.Context()
	l.mu.Lock()
	defer l.mu.Unlock()
	p := l.projectLocked(path)
	u := l.userLocked(username)
	if p == nil || u == nil {
		return fmt.Errorf("reset branch: no project %s or user %s", path, username)
	}
	full, err := fakegit.RevParse(ctx, p.dir, sha)
	if err != nil {
		return fmt.Errorf("reset branch: %w", err)
	}
	old, _ := fakegit.ReadRefs(ctx, p.dir)
	if _, err := fakegit.Run(ctx, p.dir, nil, nil, "update-ref", "refs/heads/"+branch, full); err != nil {
		return fmt.Errorf("reset branch: %w", err)
	}
	l.refsChangedLocked(ctx, p, old, u)
	return nil
}

func (l *Lab) push(path, branch, parentRev, username string, files map[string]string, message string) (string, error) {
	ctx := l.Context()
	l.mu.Lock()
	defer l.mu.Unlock()
	p := l.projectLocked(path)
	u := l.userLocked(username)
	if p == nil || u == nil {
		return "", fmt.Errorf("push: no project %s or user %s", path, username)
	}
	parent, err := fakegit.RevParse(ctx, p.dir, parentRev)
	if err != nil {
		return "", fmt.Errorf("push: %w", err)
	}
	sha, err := fakegit.CommitFiles(ctx, p.dir, parent, files, message, l.now(), gitIdentity)
	if err != nil {
		return "", fmt.Errorf("push: %w", err)
	}
	old, _ := fakegit.ReadRefs(ctx, p.dir)
	if _, err := fakegit.Run(ctx, p.dir, nil, nil, "update-ref", "refs/heads/"+branch, sha); err != nil {
		return "", fmt.Errorf("push: %w", err)
	}
	l.refsChangedLocked(ctx, p, old, u)
	return sha, nil
}

// refsChangedLocked compares the branch tips with before: each moved
// source branch of an open MR adds a version and an "added N commits"
// system note, and every moved branch gets a pipeline.
func (l *Lab) refsChangedLocked(ctx context.Context, p *project, before map[string]string, by *user) {
	refs, err := fakegit.ReadRefs(ctx, p.dir)
	if err != nil {
		l.log.Error("fakelab read refs", "project", p.path, "err", err)
		return
	}
	for branch, sha := range refs {
		if before[branch] == sha {
			continue
		}
		for _, m := range p.mrs {
			if m.state != "opened" || m.source != branch || m.headSHA == sha {
				continue
			}
			old := m.headSHA
			v, err := l.newVersionLocked(ctx, m, sha)
			if err != nil {
				l.log.Error("fakelab version", "err", err)
				continue
			}
			m.versions = append(m.versions, v)
			m.headSHA = sha
			m.updatedAt = l.now()
			l.addedCommitsNoteLocked(ctx, m, old, sha, by)
			// GitLab resets approvals on a push when the project says so;
			// the default keeps them, as here.
			l.publishLocked(Event{Kind: "push", Project: p.path, IID: m.iid, SHA: sha, Actor: by.username})
		}
		l.startPipelineLocked(p, branch, sha)
	}
	l.publishLocked(Event{Kind: "push", Project: p.path, Actor: by.username})
}

func (l *Lab) addedCommitsNoteLocked(ctx context.Context, m *mr, old, head string, by *user) {
	// The commits new to the MR: those of head not reachable from the old
	// head nor from the target (a force push may add fewer than it has).
	out, err := fakegit.Run(ctx, m.proj.dir, nil, nil, "log", "--format=%H%x00%s", head, "^"+old, "^refs/heads/"+m.target)
	if err != nil {
		return
	}
	var lines []string
	for _, rec := range strings.Split(out, "\n") {
		sha, subj, ok := strings.Cut(rec, "\x00")
		if ok {
			lines = append(lines, "<li>"+sha[:8]+" - "+subj+"</li>")
		}
	}
	n := len(lines)
	if n == 0 {
		return
	}
	word := "commits"
	if n == 1 {
		word = "commit"
	}
	body := fmt.Sprintf("added %d %s\n\n<ul>%s</ul>\n\n[Compare with previous version](%s/diffs?diff_id=%d&start_sha=%s)",
		n, word, strings.Join(lines, ""), m.webURL(l), m.version().id, old)
	l.systemNoteLocked(m, by, body)
}

// systemNoteLocked adds a system note in its own individual discussion.
func (l *Lab) systemNoteLocked(m *mr, by *user, body string) *note {
	now := l.now()
	d := &discussion{id: newDiscussionID(), individual: true}
	n := &note{id: l.newIDLocked(), body: body, author: by, createdAt: now, updatedAt: now, system: true, disc: d}
	d.notes = []*note{n}
	m.discussions = append(m.discussions, d)
	m.updatedAt = now
	return n
}

func (l *Lab) addLabelLocked(m *mr, by *user, name string) {
	for _, x := range m.labels {
		if x == name {
			return
		}
	}
	m.labels = append(m.labels, name)
	m.labelEvents = append(m.labelEvents, &labelEvent{id: l.newIDLocked(), u: by, at: l.now(), label: name, action: "add"})
	l.publishLocked(Event{Kind: "label", Project: m.proj.path, IID: m.iid, Actor: by.username, Detail: name})
}

func (l *Lab) removeLabelLocked(m *mr, by *user, name string) {
	for i, x := range m.labels {
		if x == name {
			m.labels = append(m.labels[:i], m.labels[i+1:]...)
			m.labelEvents = append(m.labelEvents, &labelEvent{id: l.newIDLocked(), u: by, at: l.now(), label: name, action: "remove"})
			l.publishLocked(Event{Kind: "label", Project: m.proj.path, IID: m.iid, Actor: by.username, Detail: "-" + name})
			return
		}
	}
}
