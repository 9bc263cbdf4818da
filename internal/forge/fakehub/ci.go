package fakehub

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// CICheckName is the check run the CI runner reports.
const CICheckName = "ci/test"

// startCI runs the repository's test command on the PR's head, superseding
// any run still going for an older head of the same PR.
func (h *Hub) startCI(rp *repo, p *pr) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(rp.testCommand) == 0 || p.state != "OPEN" || h.closed {
		return
	}
	if cancel := rp.ci[p.number]; cancel != nil {
		cancel()
	}
	ctx, cancel := context.WithCancel(h.bgCtx())
	rp.ci[p.number] = cancel
	now := h.now()
	cr := &checkRun{id: h.newIDLocked(), sha: p.headSHA, name: CICheckName, status: "in_progress", app: h.ciUser(),
		startedAt: now, title: "Running tests", detailsURL: fmt.Sprintf("%s/%s/actions/runs/%d", h.BaseURL(), rp.fullName(), h.nextID)}
	rp.checkRuns = append(rp.checkRuns, cr)
	h.nodes[cr.nodeID()] = cr
	h.publishLocked(Event{Kind: "check", Owner: rp.owner, Repo: rp.name, Number: p.number, SHA: cr.sha, Actor: LoginCIREST, Detail: "in_progress"})
	cmd := append([]string(nil), rp.testCommand...)
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		defer cancel()
		out, err := runCI(ctx, rp.dir, cr.sha, cmd)
		h.mu.Lock()
		defer h.mu.Unlock()
		conclusion := "success"
		switch {
		case ctx.Err() != nil:
			conclusion = "cancelled"
		case err != nil:
			conclusion = "failure"
		}
		cr.status, cr.conclusion, cr.completedAt = "completed", conclusion, h.now()
		cr.title = map[string]string{"success": "Tests passed", "failure": "Tests failed", "cancelled": "Superseded by a newer push"}[conclusion]
		cr.summary = "```\n" + tail(out, 60) + "\n```"
		if err != nil && ctx.Err() == nil {
			cr.text = err.Error()
		}
		h.publishLocked(Event{Kind: "check", Owner: rp.owner, Repo: rp.name, Number: p.number, SHA: cr.sha, Actor: LoginCIREST, Detail: conclusion})
	}()
}

// runCI checks sha out into a throwaway directory and runs cmd there.
func runCI(ctx context.Context, gitDir, sha string, cmd []string) (string, error) {
	dir, err := os.MkdirTemp("", "fakehub-ci-")
	if err != nil {
		return "", fmt.Errorf("ci dir: %w", err)
	}
	defer os.RemoveAll(dir)
	if err := extract(ctx, gitDir, sha, dir); err != nil {
		return "", err
	}
	c := exec.CommandContext(ctx, cmd[0], cmd[1:]...)
	c.Dir = dir
	// Keep only what a build needs so Go's caches are shared with the host.
	var env []string
	for _, k := range []string{"PATH", "HOME", "GOCACHE", "GOPATH", "GOFLAGS", "GOMODCACHE", "GOPROXY", "GOTOOLCHAIN", "TMPDIR", "GOROOT", "LANG"} {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	c.Env = env
	// Kill the whole process group on cancel: a test command's children
	// would otherwise hold the output pipe open past the cancel.
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	c.Cancel = func() error { return syscall.Kill(-c.Process.Pid, syscall.SIGKILL) }
	c.WaitDelay = 2 * time.Second
	var buf bytes.Buffer
	c.Stdout, c.Stderr = &buf, &buf
	err = c.Run()
	return buf.String(), err
}

// extract writes the tree of sha into dir via git archive.
func extract(ctx context.Context, gitDir, sha, dir string) error {
	c := exec.CommandContext(ctx, "git", "archive", "--format=tar", sha)
	c.Dir = gitDir
	var errb bytes.Buffer
	c.Stderr = &errb
	out, err := c.StdoutPipe()
	if err != nil {
		return fmt.Errorf("git archive: %w", err)
	}
	if err := c.Start(); err != nil {
		return fmt.Errorf("git archive: %w", err)
	}
	tr := tar.NewReader(out)
	for {
		hd, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			_ = c.Wait()
			return fmt.Errorf("read archive: %w", err)
		}
		name := filepath.Join(dir, filepath.FromSlash(hd.Name))
		if !strings.HasPrefix(name, filepath.Clean(dir)+string(filepath.Separator)) {
			continue
		}
		switch hd.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(name, 0o755); err != nil {
				return fmt.Errorf("extract: %w", err)
			}
		case tar.TypeReg:
			if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
				return fmt.Errorf("extract: %w", err)
			}
			f, err := os.OpenFile(name, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, os.FileMode(hd.Mode)&0o777|0o600)
			if err != nil {
				return fmt.Errorf("extract: %w", err)
			}
			_, err = io.Copy(f, tr)
			f.Close()
			if err != nil {
				return fmt.Errorf("extract: %w", err)
			}
		}
	}
	if err := c.Wait(); err != nil {
		return fmt.Errorf("git archive: %w: %s", err, errb.String())
	}
	return nil
}

func tail(s string, lines int) string {
	s = strings.TrimRight(s, "\n")
	parts := strings.Split(s, "\n")
	if len(parts) > lines {
		parts = parts[len(parts)-lines:]
	}
	return strings.Join(parts, "\n")
}

// WaitCI waits until the newest ci/test check run on sha completes and
// returns its conclusion.
func (h *Hub) WaitCI(ctx context.Context, owner, repoName, sha string) (string, error) {
	events, cancel := h.Subscribe()
	defer cancel()
	for {
		h.mu.Lock()
		rp := h.repoLocked(owner, repoName)
		var last *checkRun
		if rp != nil {
			for _, c := range rp.checkRuns {
				if c.sha == sha && c.name == CICheckName {
					last = c
				}
			}
		}
		var concl string
		if last != nil && last.status == "completed" {
			concl = last.conclusion
		}
		h.mu.Unlock()
		if rp == nil {
			return "", fmt.Errorf("wait ci: no repo %s/%s", owner, repoName)
		}
		if concl != "" {
			return concl, nil
		}
		select {
		case <-ctx.Done():
			return "", fmt.Errorf("wait ci on %s: %w", short(sha), ctx.Err())
		case _, ok := <-events:
			if !ok {
				return "", fmt.Errorf("wait ci: hub closed")
			}
		}
	}
}

func short(sha string) string { return sha[:min(len(sha), 7)] }
