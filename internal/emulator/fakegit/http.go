package fakegit

import (
	"compress/gzip"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
)

// IsPush reports whether a smart-HTTP request belongs to a push.
func IsPush(r *http.Request) bool {
	p := r.URL.Path
	return len(p) >= len("/git-receive-pack") && p[len(p)-len("/git-receive-pack"):] == "/git-receive-pack" ||
		r.URL.Query().Get("service") == "git-receive-pack"
}

// ServeHTTP serves git's smart HTTP protocol for the repositories under
// projectRoot (the request path, relative to it, names the repository)
// as remoteUser. The caller authenticates and authorises first, and
// re-reads refs after a push (a POST that IsPush).
//
// It does what git http-backend does for the smart protocol (the only
// one git clients use with a smart server), without http-backend's
// process between the request and git: a fetch or a push starts one git,
// `upload-pack` or `receive-pack --stateless-rpc`, not two. The wire is
// git's own either way; what this writes is only the HTTP around it, as
// http-backend.c writes it: the service line before a v0 advertisement,
// the content types, the no-cache headers, a gzipped request inflated.
func ServeHTTP(w http.ResponseWriter, r *http.Request, projectRoot, remoteUser string) {
	repoPath, service, advertise, ok := smartRoute(r)
	if !ok {
		http.Error(w, "Not Found", http.StatusNotFound)
		return
	}
	dir, ok := repoDir(projectRoot, repoPath)
	if !ok {
		http.Error(w, "Not Found", http.StatusNotFound)
		return
	}
	switch {
	case advertise && r.Method != http.MethodGet:
		http.Error(w, "Method Not Allowed", http.StatusMethodNotAllowed)
		return
	case !advertise && r.Method != http.MethodPost:
		http.Error(w, "Method Not Allowed", http.StatusMethodNotAllowed)
		return
	case !advertise && r.Header.Get("Content-Type") != "application/x-git-"+service+"-request":
		http.Error(w, "Unsupported Media Type", http.StatusUnsupportedMediaType)
		return
	}
	gitPath, err := exec.LookPath("git")
	if err != nil {
		http.Error(w, "git not found", http.StatusInternalServerError)
		return
	}
	args := []string{service, "--stateless-rpc"}
	if advertise {
		args = append(args, "--advertise-refs")
	}
	cmd := exec.CommandContext(r.Context(), gitPath, append(args, ".")...)
	cmd.Dir = dir
	cmd.Env = []string{
		"GIT_CONFIG_NOSYSTEM=1",
		// The repositories are the emulator's own and short-lived: a
		// push need not start gc --auto after receive-pack. This env
		// is built from scratch, so no other GIT_CONFIG_* entries
		// are present to collide with.
		"GIT_CONFIG_COUNT=2",
		"GIT_CONFIG_KEY_0=receive.autogc", "GIT_CONFIG_VALUE_0=false",
		"GIT_CONFIG_KEY_1=gc.auto", "GIT_CONFIG_VALUE_1=0",
		"HOME=" + os.Getenv("HOME"),
		"PATH=" + os.Getenv("PATH"),
		// As http-backend names the pusher in what receive-pack writes.
		"GIT_COMMITTER_NAME=" + remoteUser,
		"GIT_COMMITTER_EMAIL=" + remoteUser + "@http." + remoteHost(r),
	}
	if proto := r.Header.Get("Git-Protocol"); proto != "" {
		cmd.Env = append(cmd.Env, "GIT_PROTOCOL="+proto)
	}
	if !advertise {
		body := io.Reader(r.Body)
		if enc := r.Header.Get("Content-Encoding"); enc == "gzip" || enc == "x-gzip" {
			zr, err := gzip.NewReader(r.Body)
			if err != nil {
				http.Error(w, "Bad Request: "+err.Error(), http.StatusBadRequest)
				return
			}
			defer zr.Close()
			body = zr
		}
		cmd.Stdin = body
	}
	cmd.Stderr = os.Stderr
	h := w.Header()
	h.Set("Expires", "Fri, 01 Jan 1980 00:00:00 GMT")
	h.Set("Pragma", "no-cache")
	h.Set("Cache-Control", "no-cache, max-age=0, must-revalidate")
	if advertise {
		h.Set("Content-Type", "application/x-git-"+service+"-advertisement")
	} else {
		h.Set("Content-Type", "application/x-git-"+service+"-result")
	}
	w.WriteHeader(http.StatusOK)
	if advertise && !strings.Contains(r.Header.Get("Git-Protocol"), "version=2") {
		line := "# service=git-" + service + "\n"
		fmt.Fprintf(w, "%04x%s0000", len(line)+4, line)
	}
	cmd.Stdout = w
	// As with http-backend, a git that fails after the headers ends the
	// body early; the client reports what git wrote on the wire.
	_ = cmd.Run()
}

// smartRoute splits a smart-HTTP request path into the repository's path
// and the service it asks for; advertise is the GET of info/refs.
func smartRoute(r *http.Request) (repoPath, service string, advertise, ok bool) {
	p := r.URL.Path
	for _, svc := range []string{"upload-pack", "receive-pack"} {
		if rest, found := strings.CutSuffix(p, "/git-"+svc); found {
			return rest, svc, false, true
		}
	}
	if rest, found := strings.CutSuffix(p, "/info/refs"); found {
		switch q := r.URL.Query().Get("service"); q {
		case "git-upload-pack", "git-receive-pack":
			return rest, strings.TrimPrefix(q, "git-"), true, true
		}
	}
	return "", "", false, false
}

// repoDir is the repository directory a request's path names under root,
// never outside it; with ".git" added when the path lacks it, as
// http-backend finds a repository.
func repoDir(root, repoPath string) (string, bool) {
	clean := path.Clean("/" + repoPath)
	if clean == "/" {
		return "", false
	}
	dir := filepath.Join(root, filepath.FromSlash(clean))
	for _, d := range []string{dir, dir + ".git"} {
		if fi, err := os.Stat(d); err == nil && fi.IsDir() {
			return d, true
		}
	}
	return "", false
}

func remoteHost(r *http.Request) string {
	host := r.RemoteAddr
	if i := strings.LastIndex(host, ":"); i >= 0 {
		host = host[:i]
	}
	return strings.Trim(host, "[]")
}
