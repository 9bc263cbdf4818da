package fakegit

import (
	"bytes"
	"compress/zlib"
	"context"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// treeEntry is one file of a commit's tree: its mode as git writes it in
// a tree object (100644, 100755, 120000, 160000) and its object id.
type treeEntry struct {
	mode, sha string
}

// listFiles resolves parent to its commit id and lists every file of its
// tree by path: from what this process wrote or listed before (a commit's
// tree never changes), else from git ls-tree.
func listFiles(ctx context.Context, dir, parent string) (string, map[string]treeEntry, error) {
	full, err := RevParse(ctx, dir, parent)
	if err != nil {
		return "", nil, err
	}
	if files, ok := objCache.getFiles(dir, full); ok {
		return full, files, nil
	}
	out, err := Run(ctx, dir, nil, nil, "ls-tree", "-r", "-z", "--full-tree", full)
	if err != nil {
		return "", nil, err
	}
	files := map[string]treeEntry{}
	for rec := range strings.SplitSeq(out, "\x00") {
		if rec == "" {
			continue
		}
		meta, path, ok := strings.Cut(rec, "\t")
		f := strings.Fields(meta)
		if !ok || len(f) != 3 {
			return "", nil, fmt.Errorf("git ls-tree %s: unexpected line %q", full, rec)
		}
		files[path] = treeEntry{mode: f[0], sha: f[2]}
	}
	objCache.putFiles(dir, full, files)
	return full, files, nil
}

// validTreePath is a path git would take into a tree: relative, no empty,
// ".", ".." or ".git" component.
func validTreePath(path string) bool {
	if path == "" || strings.ContainsRune(path, 0) {
		return false
	}
	for c := range strings.SplitSeq(path, "/") {
		if c == "" || c == "." || c == ".." || strings.EqualFold(c, ".git") {
			return false
		}
	}
	return true
}

// writeTree writes the trees of files (path -> entry) and returns the
// root tree's id.
func writeTree(dir string, files map[string]treeEntry) (string, error) {
	type node struct {
		files map[string]treeEntry
		dirs  map[string]*node
	}
	newNode := func() *node { return &node{files: map[string]treeEntry{}, dirs: map[string]*node{}} }
	root := newNode()
	for path, e := range files {
		n := root
		parts := strings.Split(path, "/")
		for _, d := range parts[:len(parts)-1] {
			if _, isFile := n.files[d]; isFile {
				return "", fmt.Errorf("commit files: %q is a file and a directory", d)
			}
			if n.dirs[d] == nil {
				n.dirs[d] = newNode()
			}
			n = n.dirs[d]
		}
		name := parts[len(parts)-1]
		if n.dirs[name] != nil {
			return "", fmt.Errorf("commit files: %q is a file and a directory", path)
		}
		n.files[name] = e
	}
	var write func(n *node) (string, error)
	write = func(n *node) (string, error) {
		type item struct{ key, mode, name, sha string }
		var items []item
		for name, e := range n.files {
			items = append(items, item{name, e.mode, name, e.sha})
		}
		for name, sub := range n.dirs {
			sha, err := write(sub)
			if err != nil {
				return "", err
			}
			// git orders a tree's entries by name, a directory's
			// name as if it ended in "/".
			items = append(items, item{name + "/", "40000", name, sha})
		}
		slices.SortFunc(items, func(a, b item) int { return strings.Compare(a.key, b.key) })
		var buf bytes.Buffer
		for _, it := range items {
			raw, err := hex.DecodeString(it.sha)
			if err != nil || len(raw) != sha1.Size {
				return "", fmt.Errorf("commit files: object id %q of %s is not SHA-1", it.sha, it.name)
			}
			fmt.Fprintf(&buf, "%s %s\x00", it.mode, it.name)
			buf.Write(raw)
		}
		return writeObject(dir, "tree", buf.Bytes())
	}
	return write(root)
}

// writeObject writes a loose object of type typ into the bare repository
// dir, as git does (zlib, 0444, into place by rename), unless it is there
// already, and returns its id. The emulators' repositories are SHA-1 ones
// (InitBare).
func writeObject(dir, typ string, content []byte) (string, error) {
	header := fmt.Sprintf("%s %d\x00", typ, len(content))
	h := sha1.New()
	h.Write([]byte(header))
	h.Write(content)
	id := hex.EncodeToString(h.Sum(nil))
	path := filepath.Join(dir, "objects", id[:2], id[2:])
	if _, err := os.Stat(path); err == nil {
		return id, nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return "", fmt.Errorf("write object: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "tmp_obj_")
	if err != nil {
		return "", fmt.Errorf("write object: %w", err)
	}
	defer os.Remove(tmp.Name())
	zw := zlib.NewWriter(tmp)
	zw.Write([]byte(header))
	zw.Write(content)
	err = zw.Close()
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp.Name(), 0o444)
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		return "", fmt.Errorf("write object: %w", err)
	}
	return id, nil
}

// identityLines are a commit's author and committer lines (without their
// keyword) for identity, dated when, as git commit-tree writes them.
// Names and emails git would trim or reject are refused.
func identityLines(identity []string, when time.Time) (author, committer string, err error) {
	get := func(key string) (string, error) {
		v, ok := "", false
		for _, kv := range identity {
			if val, found := strings.CutPrefix(kv, key+"="); found {
				v, ok = val, true
			}
		}
		if !ok {
			v = os.Getenv(key)
		}
		crud := func(c byte) bool { return c <= ' ' || strings.IndexByte(".,:;<>\"\\'", c) >= 0 }
		if v == "" || strings.ContainsAny(v, "<>\n") || crud(v[0]) || crud(v[len(v)-1]) {
			return "", fmt.Errorf("commit files: %s %q is not a plain name or email", key, v)
		}
		return v, nil
	}
	_, offset := when.Zone()
	sign := '+'
	if offset < 0 {
		sign, offset = '-', -offset
	}
	date := fmt.Sprintf("%d %c%02d%02d", when.Unix(), sign, offset/3600, offset%3600/60)
	var f [4]string
	for i, key := range []string{"GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL"} {
		if f[i], err = get(key); err != nil {
			return "", "", err
		}
	}
	return fmt.Sprintf("%s <%s> %s", f[0], f[1], date), fmt.Sprintf("%s <%s> %s", f[2], f[3], date), nil
}
