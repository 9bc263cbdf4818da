package gitlab

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"

	"github.com/convergeloop/converge/internal/forge"
)

type fileDiff struct {
	OldPath     string `json:"old_path"`
	NewPath     string `json:"new_path"`
	Diff        string `json:"diff"`
	NewFile     bool   `json:"new_file"`
	DeletedFile bool   `json:"deleted_file"`
}

// compareResult is one repository compare. diffs is nil when GitLab gave
// none (a line then cannot be proven to map).
type compareResult struct {
	missing bool // a SHA is not in the repository (404)
	commits []commit
	diffs   *[]fileDiff
}

// compare reads GET projects/:id/repository/compare?from&to, cached per
// pair: both are commit SHAs, so the answer never changes. A 404 (a SHA
// force-pushed away and collected) is an answer, not an error.
func (c *Client) compare(ctx context.Context, ref forge.PRRef, from, to string, straight bool) (*compareResult, error) {
	key := fmt.Sprintf("%s|%s|%s|%v", ref.FullName(), from, to, straight)
	c.mu.Lock()
	cached := c.compares[key]
	c.mu.Unlock()
	if cached != nil {
		return cached, nil
	}
	q := url.Values{"from": {from}, "to": {to}}
	if straight {
		q.Set("straight", "true")
	}
	var body struct {
		Commits []commit    `json:"commits"`
		Diffs   *[]fileDiff `json:"diffs"`
	}
	_, err := c.do(ctx, http.MethodGet, projectPath(ref)+"/repository/compare?"+q.Encode(), nil, &body)
	if statusOf(err) == http.StatusNotFound {
		return &compareResult{missing: true}, nil
	}
	if err != nil {
		return nil, err
	}
	r := &compareResult{commits: body.Commits, diffs: body.Diffs}
	c.mu.Lock()
	c.compares[key] = r
	c.mu.Unlock()
	return r, nil
}

func findDiff(diffs []fileDiff, path string, old bool) *fileDiff {
	for i := range diffs {
		p := diffs[i].NewPath
		if old {
			p = diffs[i].OldPath
		}
		if p == path {
			return &diffs[i]
		}
	}
	return nil
}

// mapLine is where a diff position's new line is on the MR's head now.
// A position on the head is current; one on an older head is outdated
// unless the compare from its head to the current one proves the line
// unchanged (the file untouched, or the line outside every hunk or a
// context line of one), and then it is carried to its new number.
func (c *Client) mapLine(ctx context.Context, ref forge.PRRef, p *position, head string) (int, bool, error) {
	line := deref(p.NewLine)
	if p.HeadSHA == head || head == "" {
		return line, line == 0 && p.HeadSHA != head, nil
	}
	if line == 0 {
		return 0, true, nil // on a removed line: nothing to carry
	}
	cmp, err := c.compare(ctx, ref, p.HeadSHA, head, true)
	if err != nil {
		return 0, false, err
	}
	if cmp.missing || cmp.diffs == nil {
		return 0, true, nil
	}
	fd := findDiff(*cmp.diffs, p.path(), true)
	if fd == nil {
		return line, false, nil
	}
	if fd.DeletedFile || fd.NewPath != fd.OldPath {
		return 0, true, nil
	}
	n, ok := carryLine(fd.Diff, line)
	return n, !ok, nil
}

var hunkRE = regexp.MustCompile(`^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@`)

// carryLine maps old-side line l of a file through its unified diff:
// its new number, or false when a hunk removed or replaced it.
func carryLine(diff string, l int) (int, bool) {
	offset := 0
	lines := strings.Split(diff, "\n")
	for i := 0; i < len(lines); i++ {
		m := hunkRE.FindStringSubmatch(lines[i])
		if m == nil {
			continue
		}
		oldStart, _ := strconv.Atoi(m[1])
		newStart, _ := strconv.Atoi(m[3])
		if l < oldStart {
			return l + offset, true
		}
		o, n := oldStart, newStart
		for i+1 < len(lines) && !strings.HasPrefix(lines[i+1], "@@") {
			i++
			s := lines[i]
			switch {
			case strings.HasPrefix(s, "-"):
				if o == l {
					return 0, false
				}
				o++
			case strings.HasPrefix(s, "+"):
				n++
			case strings.HasPrefix(s, `\`):
			case s == "" && i == len(lines)-1:
			default:
				if o == l {
					return n, true
				}
				o++
				n++
			}
		}
		offset = n - o
	}
	return l + offset, true
}

// diffHunk is the comment's diff hunk (GitHub's diff_hunk): its hunk of
// the MR diff at the position (base_sha..head_sha), from the hunk header to
// the commented new line, bounded by forge.ClipDiffHunk. "" when the
// compare gives no diff for the file or the line is in no hunk. The
// compare is cached per SHA pair, so a thread costs a request once.
func (c *Client) diffHunk(ctx context.Context, ref forge.PRRef, p *position, need int) (string, error) {
	line := deref(p.NewLine)
	if line == 0 || p.BaseSHA == "" || p.HeadSHA == "" {
		return "", nil
	}
	cmp, err := c.compare(ctx, ref, p.BaseSHA, p.HeadSHA, true)
	if err != nil {
		return "", err
	}
	if cmp.missing || cmp.diffs == nil {
		return "", nil
	}
	fd := findDiff(*cmp.diffs, p.path(), false)
	if fd == nil {
		return "", nil
	}
	return forge.ClipDiffHunk(hunkUpTo(fd.Diff, line), need), nil
}

// hunkUpTo cuts a file's unified diff to the hunk holding new line l,
// from its header to l.
func hunkUpTo(diff string, l int) string {
	lines := strings.Split(diff, "\n")
	for i := 0; i < len(lines); i++ {
		m := hunkRE.FindStringSubmatch(lines[i])
		if m == nil {
			continue
		}
		n, _ := strconv.Atoi(m[3])
		start := i
		for i+1 < len(lines) && !strings.HasPrefix(lines[i+1], "@@") {
			i++
			s := lines[i]
			if strings.HasPrefix(s, "-") || strings.HasPrefix(s, `\`) || (s == "" && i == len(lines)-1) {
				continue
			}
			if n == l {
				return strings.Join(lines[start:i+1], "\n")
			}
			n++
		}
	}
	return ""
}

// CommitsBehind counts the commits reachable from base that head lacks:
// the compare from head to base (GitLab compares from their merge base).
func (c *Client) CommitsBehind(ctx context.Context, ref forge.PRRef, base, head string) (int, error) {
	cmp, err := c.compare(ctx, ref, head, base, false)
	if err != nil {
		return 0, c.mapErr("compare commits", err)
	}
	if cmp.missing {
		return 0, c.fail(forge.KindNotFound, "compare commits", fmt.Sprintf("%s or %s not in %s", base, head, ref.FullName()), nil)
	}
	return len(cmp.commits), nil
}
