package fakehub

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// A pull request's diff as GitHub serves it: the files changed between the
// merge base and the head (REST pulls/N/files, GraphQL files, additions,
// deletions), the whole diff and the commits as patches (GET pulls/N with
// the diff and patch media types), and the head branch's deletion, which
// closes the PR.

// prFile is one file of a PR's diff (base...head).
type prFile struct {
	path, previous       string // previous: the old path of a rename
	status               string // REST's: added, removed, modified, renamed
	additions, deletions int
	blob                 string // the head's blob ("" when removed)
	patch                string // the file's hunks, as REST's patch
}

// changeType is GraphQL's PatchStatus of the file.
func (f prFile) changeType() string {
	switch f.status {
	case "added":
		return "ADDED"
	case "removed":
		return "DELETED"
	case "renamed":
		return "RENAMED"
	case "copied":
		return "COPIED"
	}
	return "MODIFIED"
}

// prFiles lists the files changed between the merge base of base and head,
// and head, in git's order (by path).
func (h *Hub) prFiles(ctx context.Context, dir, base, head string) ([]prFile, error) {
	key := dir + "\x00" + base + "\x00" + head
	return memo(&h.git, &h.git.files, key, func() ([]prFile, error) {
		rng := base + "..." + head
		raw, err := runGit(ctx, dir, nil, nil, "diff", "--no-color", "--no-ext-diff", "-M", "--raw", "--no-abbrev", "-z", rng)
		if err != nil {
			return nil, err
		}
		num, err := runGit(ctx, dir, nil, nil, "diff", "--no-color", "--no-ext-diff", "-M", "--numstat", "-z", rng)
		if err != nil {
			return nil, err
		}
		full, err := h.prDiff(ctx, dir, base, head)
		if err != nil {
			return nil, err
		}
		files := parseRaw(raw)
		counts := parseNumstat(num)
		patches := splitDiff(full)
		for i := range files {
			if i < len(counts) {
				files[i].additions, files[i].deletions = counts[i][0], counts[i][1]
			}
			if i < len(patches) {
				files[i].patch = patches[i]
			}
		}
		return files, nil
	})
}

// parseRaw reads `git diff --raw -z`: ":old new oldsha newsha STATUS\0path\0"
// (two paths for renames and copies).
func parseRaw(out string) []prFile {
	var fs []prFile
	f := strings.Split(out, "\x00")
	for i := 0; i < len(f); i++ {
		meta, ok := strings.CutPrefix(f[i], ":")
		if !ok {
			continue
		}
		m := strings.Fields(meta)
		if len(m) < 5 || i+1 >= len(f) {
			continue
		}
		pf := prFile{path: f[i+1], blob: m[3]}
		i++
		switch m[4][0] {
		case 'A':
			pf.status = "added"
		case 'D':
			pf.status, pf.blob = "removed", ""
		case 'R', 'C':
			pf.status = map[byte]string{'R': "renamed", 'C': "copied"}[m[4][0]]
			if i+1 < len(f) {
				pf.previous, pf.path = pf.path, f[i+1]
				i++
			}
		default:
			pf.status = "modified"
		}
		fs = append(fs, pf)
	}
	return fs
}

// parseNumstat reads `git diff --numstat -z`; a binary file counts 0.
func parseNumstat(out string) [][2]int {
	var cs [][2]int
	f := strings.Split(out, "\x00")
	for i := 0; i < len(f); i++ {
		parts := strings.SplitN(f[i], "\t", 3)
		if len(parts) < 3 {
			continue
		}
		a, _ := strconv.Atoi(parts[0])
		d, _ := strconv.Atoi(parts[1])
		cs = append(cs, [2]int{a, d})
		if parts[2] == "" { // a rename: the two paths follow
			i += 2
		}
	}
	return cs
}

// splitDiff cuts a whole diff into each file's hunks, REST's patch: from
// the first "@@" on, without the newline after the last line.
func splitDiff(full string) []string {
	var out []string
	for _, sec := range strings.Split("\n"+full, "\ndiff --git ")[1:] {
		patch := ""
		if i := strings.Index(sec, "\n@@"); i >= 0 {
			patch = strings.TrimRight(sec[i+1:], "\n")
		}
		out = append(out, patch)
	}
	return out
}

// prDiff is the PR's whole diff (base...head), as GET pulls/N serves it
// with the diff media type.
func (h *Hub) prDiff(ctx context.Context, dir, base, head string) (string, error) {
	return runGit(ctx, dir, nil, nil, "diff", "--no-color", "--no-ext-diff", "-M", base+"..."+head)
}

// prPatch is the PR's commits as a mailbox of patches, as GET pulls/N
// serves it with the patch media type.
func (h *Hub) prPatch(ctx context.Context, dir, base, head string) (string, error) {
	return runGit(ctx, dir, nil, nil, "format-patch", "--stdout", "--no-color", "--no-signature", base+".."+head)
}

// diffMedia names the media type a GET of a pull request asks for: "diff",
// "patch" or "" (JSON).
func diffMedia(r *http.Request) string {
	for _, a := range r.Header.Values("Accept") {
		for _, t := range strings.Split(a, ",") {
			t = strings.TrimSpace(strings.SplitN(t, ";", 2)[0])
			switch t {
			case "application/vnd.github.diff", "application/vnd.github.v3.diff":
				return "diff"
			case "application/vnd.github.patch", "application/vnd.github.v3.patch":
				return "patch"
			}
		}
	}
	return ""
}

// restPullDiff answers GET pulls/N with the diff or patch media type.
func (h *Hub) restPullDiff(c *restCtx, media string) {
	h.mu.RLock()
	dir, base, head := c.p.repo.dir, c.p.baseSHA, c.p.headSHA
	h.mu.RUnlock()
	var text string
	var err error
	if media == "patch" {
		text, err = h.prPatch(c.ctx(), dir, base, head)
	} else {
		text, err = h.prDiff(c.ctx(), dir, base, head)
	}
	if err != nil {
		c.fail(http.StatusInternalServerError, "diff: "+err.Error())
		return
	}
	if text != "" {
		text += "\n"
	}
	c.raw, c.rawType = []byte(text), "text/plain; charset=utf-8"
	c.hdr.Set("X-GitHub-Media-Type", "github.v3; param="+media)
}

// restPullFiles is GET pulls/N/files.
func (h *Hub) restPullFiles(c *restCtx) {
	h.mu.RLock()
	rp, base, head := c.p.repo, c.p.baseSHA, c.p.headSHA
	h.mu.RUnlock()
	files, err := h.prFiles(c.ctx(), rp.dir, base, head)
	if err != nil {
		c.fail(http.StatusInternalServerError, "files: "+err.Error())
		return
	}
	out := []any{}
	for _, f := range paged(c, files) {
		out = append(out, h.fileJSON(rp, head, f))
	}
	c.reply(200, out)
}

// fileJSON is one changed file as pulls/N/files and compare list it.
func (h *Hub) fileJSON(rp *repo, head string, f prFile) map[string]any {
	esc := escapePath(f.path)
	j := map[string]any{
		"sha": f.blob, "filename": f.path, "status": f.status,
		"additions": f.additions, "deletions": f.deletions, "changes": f.additions + f.deletions,
		"blob_url":     fmt.Sprintf("%s/%s/blob/%s/%s", h.BaseURL(), rp.fullName(), head, esc),
		"raw_url":      fmt.Sprintf("%s/%s/raw/%s/%s", h.BaseURL(), rp.fullName(), head, esc),
		"contents_url": fmt.Sprintf("%s/repos/%s/contents/%s?ref=%s", h.APIURL(), rp.fullName(), esc, head),
	}
	if f.patch != "" {
		j["patch"] = f.patch
	}
	if f.previous != "" {
		j["previous_filename"] = f.previous
	}
	return j
}

func escapePath(p string) string {
	parts := strings.Split(p, "/")
	for i, s := range parts {
		parts[i] = url.PathEscape(s)
	}
	return strings.Join(parts, "/")
}

// restPullCommits is GET pulls/N/commits, oldest first.
func (h *Hub) restPullCommits(c *restCtx) {
	h.mu.RLock()
	rp, base, head := c.p.repo, c.p.baseSHA, c.p.headSHA
	h.mu.RUnlock()
	cs, err := h.prCommits(c.ctx(), rp.dir, base, head)
	if err != nil {
		c.fail(http.StatusInternalServerError, "commits: "+err.Error())
		return
	}
	out := []any{}
	for _, ci := range paged(c, cs) {
		out = append(out, h.commitJSON(rp, ci))
	}
	c.reply(200, out)
}

func (h *Hub) commitJSON(rp *repo, ci commitInfo) map[string]any {
	api := fmt.Sprintf("%s/repos/%s", h.APIURL(), rp.fullName())
	var parents []any
	for _, p := range ci.parents {
		parents = append(parents, map[string]any{"sha": p, "url": api + "/commits/" + p, "html_url": fmt.Sprintf("%s/%s/commit/%s", h.BaseURL(), rp.fullName(), p)})
	}
	if parents == nil {
		parents = []any{}
	}
	person := func(name, email string, when time.Time) map[string]any {
		return map[string]any{"name": name, "email": email, "date": ts(when)}
	}
	account := func(email string) any {
		if u := h.userByEmail(email); u != nil {
			return h.userJSON(u, "")
		}
		return nil
	}
	return map[string]any{
		"sha": ci.sha, "node_id": "C_fh" + ci.sha,
		"url":          api + "/commits/" + ci.sha,
		"html_url":     fmt.Sprintf("%s/%s/commit/%s", h.BaseURL(), rp.fullName(), ci.sha),
		"comments_url": api + "/commits/" + ci.sha + "/comments",
		"commit": map[string]any{
			"author":    person(ci.authorName, ci.authorEmail, ci.authored),
			"committer": person(ci.committerName, ci.committerEmail, ci.committed),
			"message":   ci.message, "comment_count": 0,
			"url":  api + "/git/commits/" + ci.sha,
			"tree": map[string]any{"sha": ci.tree, "url": api + "/git/trees/" + ci.tree},
			// The emulator signs nothing: GitHub's answer for an
			// unsigned commit.
			"verification": map[string]any{"verified": false, "reason": "unsigned", "signature": nil, "payload": nil, "verified_at": nil},
		},
		"author": account(ci.authorEmail), "committer": account(ci.committerEmail),
		"parents": parents,
	}
}

// userByEmail maps a commit's email to an account as GitHub does for its
// no-reply addresses (LOGIN@users.noreply.HOST, ID+LOGIN@…); nil otherwise.
func (h *Hub) userByEmail(email string) *user {
	local, domain, ok := strings.Cut(email, "@")
	if !ok || !strings.HasPrefix(domain, "users.noreply.") {
		return nil
	}
	if _, login, ok := strings.Cut(local, "+"); ok {
		local = login
	}
	return h.userByLogin(local)
}

// restDeleteRef is DELETE git/refs/heads/BRANCH: the branch goes, and
// every open PR whose head it was is closed, as on GitHub.
func (h *Hub) restDeleteRef(c *restCtx) {
	if !c.needWrite() {
		return
	}
	ref := c.r.PathValue("ref")
	branch, ok := strings.CutPrefix(ref, "heads/")
	if !ok || branch == "" {
		c.unprocessable("Reference does not exist")
		return
	}
	ctx := c.ctx()
	if branch == c.rp.defaultBranch {
		c.unprocessable("Cannot delete the default branch")
		return
	}
	if _, err := revParse(ctx, c.rp.dir, "refs/heads/"+branch); err != nil {
		c.unprocessable("Reference does not exist")
		return
	}
	if _, err := runGit(ctx, c.rp.dir, nil, nil, "update-ref", "-d", "refs/heads/"+branch); err != nil {
		c.fail(http.StatusInternalServerError, "delete ref: "+err.Error())
		return
	}
	refs, err := readRefs(ctx, c.rp.dir)
	if err != nil {
		c.fail(http.StatusInternalServerError, "read refs: "+err.Error())
		return
	}
	h.refsChanged(ctx, c.rp, refs, c.u)
	c.reply(http.StatusNoContent, nil)
}

// headDeleted closes the open PR p when its head branch is gone (checked
// again, so a PR opened after refs were read is not closed by mistake)
// and reports whether it did.
func (h *Hub) headDeleted(ctx context.Context, rp *repo, p *pr, by *user) bool {
	h.mu.RLock()
	head := p.headRef
	h.mu.RUnlock()
	if _, err := revParse(ctx, rp.dir, "refs/heads/"+head); err == nil {
		return false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if p.state != "OPEN" {
		return false
	}
	p.state, p.closedAt, p.updatedAt = "CLOSED", h.now(), h.now()
	h.addEventLocked(p, &issueEvent{event: "head_ref_deleted", actor: by})
	h.addEventLocked(p, &issueEvent{event: "closed", actor: by})
	h.publishLocked(Event{Kind: "state", Owner: rp.owner, Repo: rp.name, Number: p.number, Actor: by.restLogin, Detail: "closed"})
	return true
}
