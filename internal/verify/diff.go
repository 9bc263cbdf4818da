// Package verify proves, from diffs and facts alone, what a round's change
// did (SPEC PR-V1, PR-V3): whether it touched a finding's lines (mapped
// forward through the commits since the comment's commit) or its file, and
// whether it broke a preservation rule — a test file deleted or renamed, a
// test removed or newly skipped, most of the pull request's own additions
// to a file removed, a file added that nothing explains. It runs no git
// and does no IO: the caller hands it diffs (git diff output) and the
// round's findings, and gets verdicts back.
package verify

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// FileDiff is one file's part of a unified diff (git diff). OldPath is ""
// for a file the diff adds, NewPath "" for one it deletes; a rename (only
// when the diff detected renames) has both, different.
type FileDiff struct {
	OldPath, NewPath string
	Binary           bool
	Changes          []Change
}

// Path is the file's path after the diff, or before it for a deletion.
func (f FileDiff) Path() string {
	if f.NewPath != "" {
		return f.NewPath
	}
	return f.OldPath
}

// Added reports whether the diff creates the file; Deleted whether it
// removes it.
func (f FileDiff) Added() bool   { return f.OldPath == "" && f.NewPath != "" }
func (f FileDiff) Deleted() bool { return f.NewPath == "" && f.OldPath != "" }

// Change is one run of removed and added lines with no unchanged line
// between them, positioned as git's zero-context hunks are: OldStart is
// the first removed line, or, when none is removed, the old line the
// added ones follow (0: the top of the file); NewStart likewise on the new
// side. Context lines of the diff are not part of any Change.
type Change struct {
	OldStart int
	Removed  []string
	NewStart int
	Added    []string
}

// oldEnd is the first old line after the change.
func (c Change) oldEnd() int {
	if len(c.Removed) == 0 {
		return c.OldStart + 1
	}
	return c.OldStart + len(c.Removed)
}

// newEnd is the first new line after the change.
func (c Change) newEnd() int {
	if len(c.Added) == 0 {
		return c.NewStart + 1
	}
	return c.NewStart + len(c.Added)
}

// maxDiffBytes bounds the diff ParseDiff reads: a round's change larger
// than this is not verified line by line but refused (fail closed).
const maxDiffBytes = 64 << 20

// ErrTooLarge is a diff larger than ParseDiff reads.
var ErrTooLarge = errors.New("verify: diff too large")

// ParseDiff reads git diff output (any context size; --no-renames or not;
// --binary patches are read as binary files without content). A diff it
// cannot read is an error, never a partial answer: a verdict on half a
// diff would be a false proof.
func ParseDiff(s string) ([]FileDiff, error) {
	if len(s) > maxDiffBytes {
		return nil, ErrTooLarge
	}
	var (
		out              []FileDiff
		cur              *FileDiff
		inHunk           bool
		oldN             int // next old line number
		newN             int // next new line number
		oldLeft, newLeft int
		ch               *Change
	)
	flush := func() {
		if ch != nil && cur != nil {
			cur.Changes = append(cur.Changes, *ch)
		}
		ch = nil
	}
	lines := strings.Split(s, "\n")
	if len(lines) > 0 && lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	for i, l := range lines {
		if inHunk && (oldLeft > 0 || newLeft > 0) {
			if l == "" {
				// git never emits an empty hunk line, but a mail client
				// strips the lone space of an empty context line.
				l = " "
			}
			switch l[0] {
			case ' ':
				flush()
				if oldLeft == 0 || newLeft == 0 {
					return nil, fmt.Errorf("verify: line %d: context past the hunk's counts", i+1)
				}
				oldN++
				newN++
				oldLeft--
				newLeft--
			case '-':
				if oldLeft == 0 {
					return nil, fmt.Errorf("verify: line %d: removal past the hunk's counts", i+1)
				}
				if ch == nil {
					ch = &Change{OldStart: oldN, NewStart: newN - 1}
				}
				if len(ch.Removed) == 0 {
					ch.OldStart = oldN
				}
				ch.Removed = append(ch.Removed, l[1:])
				oldN++
				oldLeft--
			case '+':
				if newLeft == 0 {
					return nil, fmt.Errorf("verify: line %d: addition past the hunk's counts", i+1)
				}
				if ch == nil {
					ch = &Change{OldStart: oldN - 1, NewStart: newN}
				}
				if len(ch.Added) == 0 {
					ch.NewStart = newN
				}
				ch.Added = append(ch.Added, l[1:])
				newN++
				newLeft--
			case '\\':
				// "\ No newline at end of file"
			default:
				return nil, fmt.Errorf("verify: line %d: hunk ends before its counts", i+1)
			}
			continue
		}
		if inHunk && strings.HasPrefix(l, "\\") {
			continue
		}
		flush()
		inHunk = false
		switch {
		case strings.HasPrefix(l, "diff --git "):
			out = append(out, FileDiff{})
			cur = &out[len(out)-1]
			a, b, ok := splitGitHeader(l[len("diff --git "):])
			if ok {
				cur.OldPath, cur.NewPath = a, b
			}
		case cur == nil:
			// Text before the first file (a commit message, a stat).
		case strings.HasPrefix(l, "new file mode"):
			cur.OldPath = ""
		case strings.HasPrefix(l, "deleted file mode"):
			cur.NewPath = ""
		case strings.HasPrefix(l, "rename from "):
			cur.OldPath = unquote(l[len("rename from "):])
		case strings.HasPrefix(l, "rename to "):
			cur.NewPath = unquote(l[len("rename to "):])
		case strings.HasPrefix(l, "--- "):
			p, err := diffPath(l[4:], "a/")
			if err != nil {
				return nil, fmt.Errorf("verify: line %d: %w", i+1, err)
			}
			cur.OldPath = p
		case strings.HasPrefix(l, "+++ "):
			p, err := diffPath(l[4:], "b/")
			if err != nil {
				return nil, fmt.Errorf("verify: line %d: %w", i+1, err)
			}
			cur.NewPath = p
		case strings.HasPrefix(l, "Binary files "), l == "GIT binary patch":
			cur.Binary = true
		case strings.HasPrefix(l, "@@ "):
			o, ol, n, nl, err := parseHunkHeader(l)
			if err != nil {
				return nil, fmt.Errorf("verify: line %d: %w", i+1, err)
			}
			// A zero count names the line before the (empty) range.
			oldN, newN = o, n
			if ol == 0 {
				oldN = o + 1
			}
			if nl == 0 {
				newN = n + 1
			}
			oldLeft, newLeft, inHunk = ol, nl, true
		}
	}
	flush()
	if inHunk && (oldLeft > 0 || newLeft > 0) {
		return nil, errors.New("verify: the diff ends inside a hunk")
	}
	return out, nil
}

// parseHunkHeader reads "@@ -o[,ol] +n[,nl] @@ …".
func parseHunkHeader(l string) (o, ol, n, nl int, err error) {
	rest, ok := strings.CutPrefix(l, "@@ -")
	if !ok {
		return 0, 0, 0, 0, errors.New("bad hunk header")
	}
	end := strings.Index(rest, " @@")
	if end < 0 {
		return 0, 0, 0, 0, errors.New("bad hunk header")
	}
	oldPart, newPart, ok := strings.Cut(rest[:end], " +")
	if !ok {
		return 0, 0, 0, 0, errors.New("bad hunk header")
	}
	if o, ol, err = rangeOf(oldPart); err != nil {
		return
	}
	n, nl, err = rangeOf(newPart)
	return
}

// maxLine bounds the line numbers a diff may name.
const maxLine = 1 << 30

func rangeOf(s string) (start, count int, err error) {
	a, b, has := strings.Cut(s, ",")
	start, err = strconv.Atoi(a)
	if err != nil || start < 0 || start > maxLine {
		return 0, 0, errors.New("bad hunk range")
	}
	count = 1
	if has {
		count, err = strconv.Atoi(b)
		if err != nil || count < 0 || count > maxLine {
			return 0, 0, errors.New("bad hunk range")
		}
	}
	if start == 0 && count != 0 {
		return 0, 0, errors.New("bad hunk range")
	}
	return start, count, nil
}

// diffPath reads the path of a ---/+++ line: /dev/null is "", else the
// prefix is cut (git's a/ and b/, or none with --no-prefix).
func diffPath(s, prefix string) (string, error) {
	s = strings.TrimRight(s, "\t")
	if i := strings.IndexByte(s, '\t'); i >= 0 && !strings.HasPrefix(s, `"`) {
		s = s[:i] // a timestamp after the name
	}
	if s == "/dev/null" {
		return "", nil
	}
	s = unquote(s)
	if s == "" {
		return "", errors.New("empty path")
	}
	return strings.TrimPrefix(s, prefix), nil
}

// splitGitHeader splits "a/X b/Y" of a diff --git line; ambiguous names
// with spaces are taken when both halves are equal, as for a binary file
// without ---/+++ lines.
func splitGitHeader(s string) (a, b string, ok bool) {
	if strings.HasPrefix(s, `"`) {
		// Quoted names: "a/x y" "b/x y".
		if q, err := strconv.QuotedPrefix(s); err == nil {
			a = unquote(q)
			rest := strings.TrimPrefix(s[len(q):], " ")
			b = unquote(rest)
			return strings.TrimPrefix(a, "a/"), strings.TrimPrefix(b, "b/"), true
		}
		return "", "", false
	}
	if len(s)%2 == 1 {
		half := (len(s) - 1) / 2
		if s[half] == ' ' && strings.HasPrefix(s, "a/") && s[half+1:half+3] == "b/" && s[2:half] == s[half+3:] {
			return s[2:half], s[half+3:], true
		}
	}
	if i := strings.Index(s, " b/"); i >= 0 && strings.HasPrefix(s, "a/") {
		return s[2:i], s[i+3:], true
	}
	return "", "", false
}

// unquote reads a C-quoted git path ("a/\303\251.go"); anything else is
// returned as it is.
func unquote(s string) string {
	if len(s) < 2 || s[0] != '"' || s[len(s)-1] != '"' {
		return s
	}
	var b strings.Builder
	for i := 1; i < len(s)-1; i++ {
		c := s[i]
		if c != '\\' || i+1 >= len(s)-1 {
			b.WriteByte(c)
			continue
		}
		i++
		switch e := s[i]; e {
		case 'n':
			b.WriteByte('\n')
		case 't':
			b.WriteByte('\t')
		case 'a':
			b.WriteByte('\a')
		case 'b':
			b.WriteByte('\b')
		case 'f':
			b.WriteByte('\f')
		case 'r':
			b.WriteByte('\r')
		case 'v':
			b.WriteByte('\v')
		case '0', '1', '2', '3':
			if i+2 < len(s)-1 {
				if v, err := strconv.ParseUint(s[i:i+3], 8, 8); err == nil {
					b.WriteByte(byte(v))
					i += 2
					continue
				}
			}
			b.WriteByte(e)
		default:
			b.WriteByte(e)
		}
	}
	return b.String()
}

// File is the part of diff about path (after the diff, or before it for a
// deleted file); nil when the diff does not touch it.
func File(diff []FileDiff, path string) *FileDiff {
	for i := range diff {
		if diff[i].NewPath == path || (diff[i].NewPath == "" && diff[i].OldPath == path) {
			return &diff[i]
		}
	}
	for i := range diff {
		if diff[i].OldPath == path {
			return &diff[i]
		}
	}
	return nil
}
