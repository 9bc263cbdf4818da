package fakehub

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"strconv"
	"strings"
)

// The contents API (GET /repos/{o}/{r}/contents/{path}?ref=) and the
// commit endpoints whose ref may be a branch name with slashes.

// maxContentSize is the largest file the contents API inlines; a bigger
// one answers encoding "none" and no content, as GitHub's does past 1 MB.
const maxContentSize = 1 << 20

// lsEntry is one line of `git ls-tree -l`.
type lsEntry struct {
	mode, typ, sha string
	size           int
	name           string
}

// parseLsTree reads `git ls-tree -l -z`.
func parseLsTree(out string) []lsEntry {
	var es []lsEntry
	for _, rec := range strings.Split(out, "\x00") {
		meta, name, ok := strings.Cut(rec, "\t")
		if !ok {
			continue
		}
		f := strings.Fields(meta)
		if len(f) < 4 {
			continue
		}
		size, _ := strconv.Atoi(f[3])
		es = append(es, lsEntry{mode: f[0], typ: f[1], sha: f[2], size: size, name: name})
	}
	return es
}

// contentType is the contents API's type of an entry: file, dir, symlink
// or submodule.
func (e lsEntry) contentType() string {
	switch {
	case e.typ == "tree":
		return "dir"
	case e.typ == "commit":
		return "submodule"
	case e.mode == "120000":
		return "symlink"
	}
	return "file"
}

// restContents answers GET contents/{path}: a file's content (base64), a
// directory's entries, 404 when the path is not there at ref (the default
// branch when not given). The raw media type answers a file's bytes.
func (h *Hub) restContents(c *restCtx) {
	ctx := c.ctx()
	path := strings.Trim(c.r.PathValue("path"), "/")
	ref := c.r.URL.Query().Get("ref")
	if ref == "" {
		ref = c.rp.defaultBranch
	}
	commit, err := revParse(ctx, c.rp.dir, ref)
	if err != nil || commit == "" {
		c.fail(http.StatusNotFound, "No commit found for the ref "+ref)
		return
	}
	api := h.APIURL() + "/repos/" + c.rp.fullName()
	entryJSON := func(p string, e lsEntry) map[string]any {
		esc := escapePath(p)
		self := api + "/contents/" + esc + "?ref=" + ref
		html := fmt.Sprintf("%s/%s/blob/%s/%s", h.BaseURL(), c.rp.fullName(), ref, esc)
		git := api + "/git/blobs/" + e.sha
		var download any = fmt.Sprintf("%s/%s/raw/%s/%s", h.BaseURL(), c.rp.fullName(), ref, esc)
		switch e.contentType() {
		case "dir":
			html = fmt.Sprintf("%s/%s/tree/%s/%s", h.BaseURL(), c.rp.fullName(), ref, esc)
			git = api + "/git/trees/" + e.sha
			download = nil
		case "submodule":
			html, git, download = "", "", nil
		}
		var htmlJ, gitJ any = html, git
		if html == "" {
			htmlJ, gitJ = nil, nil
		}
		return map[string]any{
			"name": p[strings.LastIndex(p, "/")+1:], "path": p, "sha": e.sha, "size": e.size,
			"url": self, "html_url": htmlJ, "git_url": gitJ, "download_url": download,
			"_links": map[string]any{"self": self, "git": gitJ, "html": htmlJ},
		}
	}
	list := func(tree, prefix string) {
		out, err := runGit(ctx, c.rp.dir, nil, nil, "ls-tree", "-l", "-z", tree)
		if err != nil {
			c.fail(http.StatusInternalServerError, "contents: "+err.Error())
			return
		}
		items := []any{}
		for _, e := range parseLsTree(out) {
			j := entryJSON(prefix+e.name, e)
			t := e.contentType()
			if t == "symlink" {
				t = "file" // GitHub lists a symlink as a file
			}
			j["type"] = t
			items = append(items, j)
		}
		c.reply(200, items)
	}
	if path == "" {
		list(commit, "")
		return
	}
	out, err := runGit(ctx, c.rp.dir, nil, nil, "ls-tree", "-l", "-z", commit, "--", path)
	es := parseLsTree(out)
	if err != nil || len(es) != 1 || es[0].name != path {
		c.notFound()
		return
	}
	e := es[0]
	switch e.contentType() {
	case "dir":
		list(e.sha, path+"/")
		return
	case "submodule":
		j := entryJSON(path, e)
		j["type"], j["submodule_git_url"] = "submodule", nil
		c.reply(200, j)
		return
	}
	body, ok := fileAt(ctx, c.rp.dir, commit, path)
	if !ok {
		c.notFound()
		return
	}
	if rawMedia(c.r) {
		c.raw, c.rawType = []byte(body), "application/vnd.github.raw; charset=utf-8"
		c.hdr.Set("X-GitHub-Media-Type", "github.v3; param=raw")
		return
	}
	j := entryJSON(path, e)
	j["type"] = e.contentType()
	if e.contentType() == "symlink" {
		j["target"] = body
	}
	if len(body) > maxContentSize {
		j["encoding"], j["content"] = "none", ""
	} else {
		j["encoding"], j["content"] = "base64", base64Lines(body)
	}
	c.reply(200, j)
}

// base64Lines is base64 as GitHub's contents API writes it: lines of 60
// characters, each ending in a newline.
func base64Lines(s string) string {
	enc := base64.StdEncoding.EncodeToString([]byte(s))
	var b strings.Builder
	for len(enc) > 60 {
		b.WriteString(enc[:60])
		b.WriteByte('\n')
		enc = enc[60:]
	}
	if enc != "" {
		b.WriteString(enc)
		b.WriteByte('\n')
	}
	return b.String()
}

// rawMedia reports whether the request asks for the raw media type.
func rawMedia(r *http.Request) bool {
	for _, a := range r.Header.Values("Accept") {
		for _, t := range strings.Split(a, ",") {
			switch strings.TrimSpace(strings.SplitN(t, ";", 2)[0]) {
			case "application/vnd.github.raw", "application/vnd.github.v3.raw", "application/vnd.github.raw+json":
				return true
			}
		}
	}
	return false
}

// restCommitRef answers GET commits/{ref}/status, /statuses and
// /check-runs, where ref may be a branch name with slashes (feature/x),
// as GitHub resolves it: the last path segments name the endpoint.
func (h *Hub) restCommitRef(c *restCtx) {
	rest := c.r.PathValue("rest")
	for _, ep := range []struct {
		suffix string
		fn     func(*restCtx)
	}{
		{"/status", h.restCombinedStatus},
		{"/statuses", h.restListStatuses},
		{"/check-runs", h.restListCheckRuns},
	} {
		if ref, ok := strings.CutSuffix(rest, ep.suffix); ok && ref != "" {
			c.r.SetPathValue("ref", ref)
			ep.fn(c)
			return
		}
	}
	c.notFound()
}
