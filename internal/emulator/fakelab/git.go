package fakelab

import (
	"fmt"
	"net/http"
	"path/filepath"
	"strings"

	"github.com/convergeloop/converge/internal/emulator/fakegit"
)

// serveGit hands smart HTTP to git (fakegit.ServeHTTP) after checking the token
// (basic auth, any username, the token as password); pushes need the
// developer role and move merge requests afterwards.
func (l *Lab) serveGit(w http.ResponseWriter, r *http.Request) {
	p := r.URL.Path
	path := strings.Trim(p[:strings.Index(p, ".git")], "/")
	l.mu.Lock()
	l.counts.Git++
	u := l.authenticate(r)
	pr := l.projectLocked(path)
	canRead, canWrite := pr != nil && pr.canRead(u), pr != nil && pr.canWrite(u)
	l.mu.Unlock()
	if u == nil {
		w.Header().Set("WWW-Authenticate", `Basic realm="GitLab"`)
		http.Error(w, "HTTP Basic: Access denied", http.StatusUnauthorized)
		return
	}
	if !canRead {
		http.Error(w, "The project you were looking for could not be found or you don't have permission to view it.", http.StatusNotFound)
		return
	}
	push := fakegit.IsPush(r)
	if push && !canWrite {
		http.Error(w, "You are not allowed to push code to this project.", http.StatusForbidden)
		return
	}
	var before map[string]string
	if push && r.Method == http.MethodPost {
		before, _ = fakegit.ReadRefs(r.Context(), pr.dir)
		l.mu.Lock()
		l.logWriteLocked(u, "git", "push "+p, nil)
		l.mu.Unlock()
	}
	fakegit.ServeHTTP(w, r, filepath.Join(l.opts.StateDir, "repos"), u.username)
	if push && r.Method == http.MethodPost {
		l.mu.Lock()
		l.refsChangedLocked(l.Context(), pr, before, u)
		l.mu.Unlock()
	}
}

// String names a Position for messages.
func (p Position) String() string {
	return fmt.Sprintf("%s:%d (head %.8s)", p.NewPath, p.NewLine, p.HeadSHA)
}
