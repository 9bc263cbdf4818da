package suggest

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"github.com/convergeloop/converge/internal/agent"
)

// originalFile is a file as it was at a reviewed commit, or why it could
// not be read.
type originalFile struct {
	lines []string
	err   string
}

// readOriginal reads path at s.commit from the workdir's git history. The
// blob is read raw (cat-file, not show, which may run textconv filters),
// so it compares with the file's own bytes.
func readOriginal(ctx context.Context, s *seenLines, path string) originalFile {
	env := s.env
	if env == nil {
		env = agent.ScrubEnv(os.Environ())
	}
	// "./" makes the path relative to the workdir even when the workdir is
	// not the top of its repository.
	obj := s.commit + ":./" + filepath.ToSlash(path)
	cmd := exec.CommandContext(ctx, "git", "cat-file", "blob", obj)
	cmd.Dir = s.workdir
	cmd.Env = env
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return originalFile{err: fmt.Sprintf("%s at the reviewed commit %s is not available (%s)",
			filepath.ToSlash(path), short(s.commit), firstLineOf(stderr.String(), err))}
	}
	return originalFile{lines: splitFile(string(out)).lines}
}

// mismatch says why the current lines start..end are not the ones the
// reviewer saw, or "" when they are.
func (s *seenLines) mismatch(orig originalFile, current []string, path string, start, end int) string {
	p := filepath.ToSlash(path)
	switch {
	case orig.err != "":
		return orig.err
	case s.origEnd > len(orig.lines):
		return fmt.Sprintf("lines %d-%d of %s do not exist at the reviewed commit %s", s.origStart, s.origEnd, p, short(s.commit))
	case !slices.Equal(orig.lines[s.origStart-1:s.origEnd], current):
		return fmt.Sprintf("lines %d-%d of %s are not the lines %d-%d it was written against at %s",
			start, end, p, s.origStart, s.origEnd, short(s.commit))
	}
	return ""
}

func isCommitID(s string) bool {
	if len(s) < 4 || len(s) > 64 {
		return false
	}
	return strings.Trim(strings.ToLower(s), "0123456789abcdef") == ""
}

func short(sha string) string {
	if len(sha) > 12 {
		return sha[:12]
	}
	return sha
}

func firstLineOf(s string, err error) string {
	s = strings.TrimSpace(s)
	if s == "" {
		return err.Error()
	}
	first, _, _ := strings.Cut(s, "\n")
	return first
}
