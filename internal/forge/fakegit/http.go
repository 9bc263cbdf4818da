package fakegit

import (
	"io"
	"net/http"
	"net/http/cgi"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
)

// IsPush reports whether a smart-HTTP request belongs to a push.
func IsPush(r *http.Request) bool {
	p := r.URL.Path
	return len(p) >= len("/git-receive-pack") && p[len(p)-len("/git-receive-pack"):] == "/git-receive-pack" ||
		r.URL.Query().Get("service") == "git-receive-pack"
}

// ServeHTTP hands a smart-HTTP request to git http-backend, serving the
// repositories under projectRoot (the request path, relative to it, names
// the repository) as remoteUser. The caller authenticates and authorises
// first, and re-reads refs after a push (a POST that IsPush).
func ServeHTTP(w http.ResponseWriter, r *http.Request, projectRoot, remoteUser string) {
	env := []string{
		"GIT_PROJECT_ROOT=" + projectRoot,
		"GIT_HTTP_EXPORT_ALL=1",
		"REMOTE_USER=" + remoteUser,
		"GIT_CONFIG_NOSYSTEM=1",
		// The repositories are the emulator's own and short-lived: a
		// push need not start gc --auto after receive-pack. This env
		// is built from scratch, so no other GIT_CONFIG_* entries
		// are present to collide with.
		"GIT_CONFIG_COUNT=2",
		"GIT_CONFIG_KEY_0=receive.autogc", "GIT_CONFIG_VALUE_0=false",
		"GIT_CONFIG_KEY_1=gc.auto", "GIT_CONFIG_VALUE_1=0",
		"HOME=" + os.Getenv("HOME"),
	}
	gitPath, err := exec.LookPath("git")
	if err != nil {
		http.Error(w, "git not found", http.StatusInternalServerError)
		return
	}
	path, args := gitPath, []string{"http-backend"}
	if xp, ok := backendExecPath(gitPath); ok {
		// What "git http-backend" would do, less one exec: run
		// git-http-backend from git's exec path with the env git
		// gives its dashed commands (GIT_EXEC_PATH set, the exec
		// path first on PATH, so upload-pack and receive-pack run
		// from there as before).
		path, args = filepath.Join(xp, "git-http-backend"), nil
		env = append(env, "GIT_EXEC_PATH="+xp, "PATH="+xp+string(os.PathListSeparator)+os.Getenv("PATH"))
	} else {
		env = append(env, "PATH="+os.Getenv("PATH"))
	}
	// net/http/cgi passes no CONTENT_LENGTH for chunked bodies (git sends
	// those for pushes over http.postBuffer) and http-backend then reads
	// nothing, so such bodies are spooled to learn their length.
	if r.ContentLength < 0 && r.Body != nil {
		f, err := os.CreateTemp("", "fakegit-push-")
		if err != nil {
			http.Error(w, "spool body", http.StatusInternalServerError)
			return
		}
		defer os.Remove(f.Name())
		defer f.Close()
		n, err := io.Copy(f, r.Body)
		if err == nil {
			_, err = f.Seek(0, io.SeekStart)
		}
		if err != nil {
			http.Error(w, "read body", http.StatusBadRequest)
			return
		}
		r.Body, r.ContentLength = f, n
		r.TransferEncoding = nil
	}
	handler := &cgi.Handler{Path: path, Args: args, Env: env, Dir: projectRoot}
	handler.ServeHTTP(w, r)
}

var execPaths sync.Map // git binary path -> execPath

type execPath struct {
	dir string
	ok  bool
}

// backendExecPath is the exec path of the git at gitPath (git --exec-path,
// asked once per binary) when git-http-backend is there to run directly.
func backendExecPath(gitPath string) (string, bool) {
	if v, ok := execPaths.Load(gitPath); ok {
		e := v.(execPath)
		return e.dir, e.ok
	}
	var e execPath
	cmd := exec.Command(gitPath, "--exec-path")
	// The env http-backend would get (none of this process's
	// GIT_EXEC_PATH), so the answer is the path it would run from.
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"), "GIT_CONFIG_NOSYSTEM=1"}
	if out, err := cmd.Output(); err == nil {
		e.dir = strings.TrimSpace(string(out))
		if fi, err := os.Stat(filepath.Join(e.dir, "git-http-backend")); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			e.ok = filepath.IsAbs(e.dir)
		}
	}
	execPaths.Store(gitPath, e)
	return e.dir, e.ok
}
