package fakegit

import (
	"io"
	"net/http"
	"net/http/cgi"
	"os"
	"os/exec"
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
	}
	for _, k := range []string{"PATH", "HOME"} {
		env = append(env, k+"="+os.Getenv(k))
	}
	gitPath, err := exec.LookPath("git")
	if err != nil {
		http.Error(w, "git not found", http.StatusInternalServerError)
		return
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
	handler := &cgi.Handler{Path: gitPath, Args: []string{"http-backend"}, Env: env, Dir: projectRoot}
	handler.ServeHTTP(w, r)
}
