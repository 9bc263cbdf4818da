package fakegit

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

// RunCI checks sha of the bare repository gitDir out into a throwaway
// directory and runs cmd there, returning its combined output. A cancelled
// ctx kills the command's whole process group.
func RunCI(ctx context.Context, gitDir, sha string, cmd []string) (string, error) {
	dir, err := os.MkdirTemp("", "fakegit-ci-")
	if err != nil {
		return "", fmt.Errorf("ci dir: %w", err)
	}
	defer os.RemoveAll(dir)
	if err := Extract(ctx, gitDir, sha, dir); err != nil {
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

// Extract writes the tree of sha into dir via git archive.
func Extract(ctx context.Context, gitDir, sha, dir string) error {
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

// Tail keeps the last lines of s.
func Tail(s string, lines int) string {
	s = strings.TrimRight(s, "\n")
	parts := strings.Split(s, "\n")
	if len(parts) > lines {
		parts = parts[len(parts)-lines:]
	}
	return strings.Join(parts, "\n")
}
