package suggest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/convergeloop/converge/internal/agent"
	"github.com/convergeloop/converge/internal/proc"
	"github.com/convergeloop/converge/internal/text"
)

// catFileBudget time-boxes reading one blob from the local repository.
const catFileBudget = time.Minute

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
	r, err := proc.Run(ctx, proc.Spec{
		Argv: []string{"git", "cat-file", "blob", obj}, Dir: s.workdir, Env: env,
		Budget: catFileBudget, MaxOutput: -1, // the blob is read whole
		Direct: true, // git, see proc.Spec.Direct
	})
	switch {
	case err != nil:
	case r.Interrupted != nil:
		err = r.Interrupted
	case r.TimedOut:
		err = fmt.Errorf("git stopped after %s", catFileBudget)
	case r.ExitCode != 0:
		err = fmt.Errorf("exit status %d", r.ExitCode)
	}
	if err != nil {
		return originalFile{err: fmt.Sprintf("%s at the reviewed commit %s is not available (%s)",
			filepath.ToSlash(path), text.ShortSHA(s.commit), firstLineOf(r.Stderr, err))}
	}
	return originalFile{lines: splitFile(r.Stdout).lines}
}

// mismatch says why the current lines start..end are not the ones the
// reviewer saw, or "" when they are.
func (s *seenLines) mismatch(orig originalFile, current []string, path string, start, end int) string {
	p := filepath.ToSlash(path)
	switch {
	case orig.err != "":
		return orig.err
	case s.origEnd > len(orig.lines):
		return fmt.Sprintf("lines %d-%d of %s do not exist at the reviewed commit %s", s.origStart, s.origEnd, p, text.ShortSHA(s.commit))
	case !slices.Equal(orig.lines[s.origStart-1:s.origEnd], current):
		return fmt.Sprintf("lines %d-%d of %s are not the lines %d-%d it was written against at %s",
			start, end, p, s.origStart, s.origEnd, text.ShortSHA(s.commit))
	}
	return ""
}

func isCommitID(s string) bool {
	if len(s) < 4 || len(s) > 64 {
		return false
	}
	return strings.Trim(strings.ToLower(s), "0123456789abcdef") == ""
}

func firstLineOf(s string, err error) string {
	s = strings.TrimSpace(s)
	if s == "" {
		return err.Error()
	}
	first, _, _ := strings.Cut(s, "\n")
	return first
}
