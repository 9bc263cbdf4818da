package plan

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/convergeloop/converge/internal/text"
)

// An implementer that answers NEEDS_CONTEXT says what it needs; the
// source has the orchestrator "read exactly what is needed" and find it
// (files, context from the plan) before the re-dispatch. converge reads
// what the request names, nothing else:
//
//   - a path of the repository (src/a.go, src/a.go:10-20, src/a.go#L10,
//     "lines 10-20 of src/a.go", "src/a.go lines 10-20"): the file, or
//     only the named lines, numbered; a directory: its entries; a bare
//     file name: the one file of the task (or else of the repository) so
//     named; a path that is not there is said so;
//   - a task of the plan ("task parser", or an id of 3 characters or more
//     on its own): its status, commit, summary and files changed;
//   - a paragraph of the plan's or the task's context that shares a word
//     with the request.
//
// When the request names none of these, the plan's context for the task
// (the plan's, the task's, the tasks it depends on) is the answer, said
// to be so; when there is none either, there is nothing to add, and the
// task climbs the model ladder instead (AG-E1).

// Bounds of what one answer quotes: a file at most fileBytes, the whole
// at most contextBytes (loop.go); a bare file name is looked for among at
// most walkLimit entries of the repository.
const (
	fileBytes = 8 << 10
	walkLimit = 20000
)

var (
	// pathToken is a path-like word: it has a slash or a file extension,
	// and may end in :N, :N-M, #LN or #LN-LM.
	pathToken = regexp.MustCompile(`[A-Za-z0-9_./-]*[A-Za-z0-9_-](?:/|\.[A-Za-z][A-Za-z0-9]{0,9})[A-Za-z0-9_./-]*(?:(?::|#L)[0-9]+(?:[-–](?:L)?[0-9]+)?)?`)
	// tokenLines splits a token's own line suffix.
	tokenLines = regexp.MustCompile(`^(.*?)(?::|#L)([0-9]+)(?:[-–]L?([0-9]+))?$`)
	// linesBefore / linesAfter are "lines 10-20 of" before a path and
	// "lines 10-20" (or "line 10") after it.
	linesBefore = regexp.MustCompile(`(?i)\blines?\s+([0-9]+)(?:\s*(?:-|–|to|through)\s*([0-9]+))?\s+(?:of|in|from)\s+$`)
	linesAfter  = regexp.MustCompile(`(?i)^[\s,(]*(?:at\s+|on\s+)?lines?\s+([0-9]+)(?:\s*(?:-|–|to|through)\s*([0-9]+))?`)
	// word is a word of the request, for the context's paragraphs.
	word = regexp.MustCompile(`[A-Za-z][A-Za-z0-9_]{3,}`)
)

// stopWords are words of a request that say nothing about what it needs.
var stopWords = map[string]bool{}

func init() {
	for _, w := range strings.Fields(`need needs needed know knowing which what where when whether this that these those with from have does doesn into about
		more information please should would could there their them they than then also file files line lines task tasks plan context
		content contents code repository repo read show tell give find look like want some other just only each every write exist exists
		does work done make made uses used using must will been being it's isn't don't`) {
		stopWords[w] = true
	}
}

// lineRange is a 1-based, inclusive range of lines; 0 is "the whole file".
type lineRange struct{ from, to int }

// named is one thing a request names.
type named struct {
	path  string
	lines lineRange
}

// requestPaths are the paths a request names, each once (ranges of one
// path kept apart), in order.
func requestPaths(req string) []named {
	var out []named
	for _, loc := range pathToken.FindAllStringIndex(req, -1) {
		tok := req[loc[0]:loc[1]]
		var lr lineRange
		if m := tokenLines.FindStringSubmatch(tok); m != nil {
			tok = m[1]
			lr = parseRange(m[2], m[3])
		}
		tok = strings.TrimRight(tok, "./")
		if tok == "" || strings.Contains(tok, "://") {
			continue
		}
		if lr.from == 0 {
			if m := linesBefore.FindStringSubmatch(req[:loc[0]]); m != nil {
				lr = parseRange(m[1], m[2])
			} else if m := linesAfter.FindStringSubmatch(req[loc[1]:]); m != nil {
				lr = parseRange(m[1], m[2])
			}
		}
		n := named{path: tok, lines: lr}
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}

func parseRange(a, b string) lineRange {
	from, _ := strconv.Atoi(a)
	to := from
	if b != "" {
		to, _ = strconv.Atoi(b)
	}
	if from < 1 {
		return lineRange{}
	}
	return lineRange{from: from, to: max(from, to)}
}

// AnswerInput is what answering a NEEDS_CONTEXT reads from.
type AnswerInput struct {
	State State
	Task  *Task
	// Asked is what the implementer said it needs.
	Asked string
	// Dir is the work tree the task runs in, as the task starts.
	Dir string
	// Budget bounds the bytes of files quoted.
	Budget int
}

// AnswerContext is the context a re-dispatch after NEEDS_CONTEXT carries
// (AG-T2): exactly what the request named, read from the work tree and
// the plan (see above); "" when there is nothing to add.
func AnswerContext(in AnswerInput) string {
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	asked := text.OneLine(in.Asked)
	w("You said you need: %s\n", asked)
	found, budget := false, in.Budget
	for _, n := range requestPaths(asked) {
		s, ok := readNamed(in.Dir, in.Task, n, &budget)
		if s == "" {
			continue
		}
		found = found || ok
		w("\n%s", s)
	}
	for _, ts := range namedTasks(in.State, in.Task, asked) {
		found = true
		w("\n%s", taskLine(in.State, ts))
	}
	terms := requestTerms(asked)
	for _, c := range []struct{ what, text string }{{"the plan's context", in.State.Config.Plan.Context}, {"the task's context", in.Task.Context}} {
		if ps := matching(c.text, terms); len(ps) > 0 {
			found = true
			w("\nFrom %s:\n%s\n", c.what, strings.Join(ps, "\n\n"))
		}
	}
	if found {
		return b.String()
	}
	// Nothing it named is there: what the plan says around the task.
	fallback := false
	if c := strings.TrimSpace(in.State.Config.Plan.Context); c != "" {
		fallback = true
		w("\nThe plan's context:\n%s\n", c)
	}
	if c := strings.TrimSpace(in.Task.Context); c != "" {
		fallback = true
		w("\nThe task's context:\n%s\n", c)
	}
	for _, dep := range in.Task.DependsOn {
		if i := slices.IndexFunc(in.State.Tasks, func(t TaskState) bool { return t.ID == dep }); i >= 0 {
			fallback = true
			w("\n%s", taskLine(in.State, in.State.Tasks[i]))
		}
	}
	if !fallback {
		return ""
	}
	return strings.Replace(b.String(), "\n", "\nconverge found nothing you named in the repository or the plan; this is what the plan says around the task.\n", 1)
}

// readNamed reads one named path from dir: its text and whether it was
// there. Paths outside the work tree, and git's own directory, are never
// read.
func readNamed(dir string, task *Task, n named, budget *int) (string, bool) {
	p := path.Clean(strings.TrimPrefix(n.path, "./"))
	if path.IsAbs(p) || p == "." || p == ".." || strings.HasPrefix(p, "../") {
		return fmt.Sprintf("%s is outside the repository: converge reads only its files.\n", n.path), false
	}
	if p == ".git" || strings.HasPrefix(p, ".git/") || strings.Contains(p, "/.git/") {
		return "", false
	}
	full, where := inside(dir, p)
	if where == pathAbsent && !strings.Contains(p, "/") {
		// A bare file name: the task's file of that name, else the one
		// file of the repository so named.
		if q, found := byBaseName(dir, task, p); found {
			p = q
			full, where = inside(dir, p)
		}
	}
	switch {
	case where == pathOutside:
		return fmt.Sprintf("%s leads outside the repository: converge reads only its files.\n", p), false
	case where == pathAbsent && (strings.Contains(p, "/") || looksLikeFile(p)):
		return fmt.Sprintf("%s does not exist in the repository.\n", p), false
	case where != pathThere:
		return "", false
	}
	st, err := os.Stat(full)
	if err != nil {
		return "", false
	}
	if st.IsDir() {
		ents, err := os.ReadDir(full)
		if err != nil {
			return "", false
		}
		var names []string
		for _, e := range ents {
			if e.Name() == ".git" {
				continue
			}
			nm := e.Name()
			if e.IsDir() {
				nm += "/"
			}
			names = append(names, nm)
		}
		return fmt.Sprintf("Directory %s holds: %s\n", p, strings.Join(names, ", ")), true
	}
	data, err := os.ReadFile(full)
	if err != nil {
		return "", false
	}
	if *budget <= 0 {
		return fmt.Sprintf("%s is there, but this answer has no room left for it: read it yourself.\n", p), true
	}
	lines := strings.SplitAfter(string(data), "\n")
	if len(lines) > 0 && lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	from, to, head := 1, len(lines), fmt.Sprintf("File %s (%d lines):\n", p, len(lines))
	if n.lines.from > 0 {
		if n.lines.from > len(lines) {
			return fmt.Sprintf("%s has %d lines; there is no line %d.\n", p, len(lines), n.lines.from), true
		}
		from, to = n.lines.from, min(n.lines.to, len(lines))
		head = fmt.Sprintf("File %s, lines %d-%d of %d:\n", p, from, to, len(lines))
	}
	var body strings.Builder
	for i := from; i <= to; i++ {
		fmt.Fprintf(&body, "%5d| %s", i, strings.TrimRight(lines[i-1], "\n"))
		body.WriteByte('\n')
	}
	s := body.String()
	if lim := min(fileBytes, *budget); len(s) > lim {
		s = s[:lim] + "\n… (clipped: ask for the lines you need)\n"
	}
	*budget -= len(s)
	return head + s, true
}

// Where a named path is.
const (
	pathAbsent  = iota // not in the work tree
	pathThere          // in the work tree
	pathOutside        // a link out of the work tree, or into git's own directory
)

// inside resolves p under dir, symbolic links followed, and says where
// it is: only a path that stays under dir, out of .git, is there.
func inside(dir, p string) (string, int) {
	full := filepath.Join(dir, filepath.FromSlash(p))
	if _, err := os.Lstat(full); err != nil {
		return "", pathAbsent
	}
	real, err := filepath.EvalSymlinks(full)
	if err != nil {
		return "", pathAbsent
	}
	root, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return "", pathAbsent
	}
	rel, err := filepath.Rel(root, real)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || filepath.IsAbs(rel) {
		return "", pathOutside
	}
	if rel == ".git" || strings.HasPrefix(rel, ".git"+string(filepath.Separator)) {
		return "", pathOutside
	}
	return real, pathThere
}

// byBaseName finds the file a bare name means: the task's file of that
// name, else the one file of the repository so named (none when two are).
func byBaseName(dir string, task *Task, name string) (string, bool) {
	for _, f := range task.Files {
		if path.Base(f) == name && !strings.HasSuffix(f, "/") {
			return f, true
		}
	}
	var hits []string
	seen := 0
	errStop := errors.New("stop")
	_ = filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if seen++; seen > walkLimit {
			return errStop
		}
		if e.IsDir() && e.Name() == ".git" {
			return filepath.SkipDir
		}
		if !e.IsDir() && e.Name() == name {
			if rel, err := filepath.Rel(dir, p); err == nil {
				hits = append(hits, filepath.ToSlash(rel))
			}
		}
		return nil
	})
	if len(hits) == 1 {
		return hits[0], true
	}
	return "", false
}

// looksLikeFile: a bare word with an extension of two characters or
// more (not an abbreviation such as e.g).
var fileName = regexp.MustCompile(`^[A-Za-z0-9_-]+\.[A-Za-z][A-Za-z0-9]{1,9}$`)

func looksLikeFile(p string) bool { return fileName.MatchString(p) }

// namedTasks are the tasks of the plan other than task the request names:
// "task ID", or an id of 3 characters or more as a word of its own.
func namedTasks(st State, task *Task, req string) []TaskState {
	var out []TaskState
	lower := strings.ToLower(req)
	for _, ts := range st.Tasks {
		if ts.ID == task.ID {
			continue
		}
		id := regexp.QuoteMeta(strings.ToLower(ts.ID))
		re := `\btask\s+` + id + `\b`
		if len(ts.ID) >= 3 {
			re = `(?:^|[^A-Za-z0-9_.\-/])` + id + `(?:$|[^A-Za-z0-9_\-/]|\.(?:\s|$))`
		}
		if regexp.MustCompile(re).MatchString(lower) {
			out = append(out, ts)
		}
	}
	return out
}

// taskLine says what a task of the plan did.
func taskLine(st State, ts TaskState) string {
	status := ts.Status
	if status == "" {
		status = string(ts.Phase)
	}
	s := fmt.Sprintf("Task %s is %s", ts.ID, status)
	if ts.Head != "" && ts.Head != ts.Base {
		s += " at commit " + text.ShortSHA(ts.Head)
	}
	if c := ts.current(); c != nil && c.Report != nil && c.Report.Summary != "" {
		s += ": " + text.Clip(text.OneLine(c.Report.Summary), 300)
	}
	if len(ts.Changed) > 0 {
		s += "; files changed: " + strings.Join(ts.Changed, ", ")
	}
	if t := st.Config.Plan.Task(ts.ID); t != nil {
		s += "; its task: " + text.Clip(text.OneLine(t.Prompt), 300)
	}
	return s + "\n"
}

// requestTerms are the request's words that may name a subject: four
// letters or more, no stop word, lowercased, each once.
func requestTerms(req string) []string {
	var out []string
	for _, w := range word.FindAllString(req, -1) {
		w = strings.ToLower(w)
		if !stopWords[w] && !slices.Contains(out, w) {
			out = append(out, w)
		}
	}
	return out
}

// matching are the paragraphs of s (blank-line separated; a context
// without blank lines is one paragraph per line) holding one of terms as
// a word.
func matching(s string, terms []string) []string {
	s = strings.TrimSpace(s)
	if s == "" || len(terms) == 0 {
		return nil
	}
	sep := "\n\n"
	if !strings.Contains(s, sep) {
		sep = "\n"
	}
	var out []string
	for _, p := range strings.Split(s, sep) {
		p = strings.TrimSpace(p)
		if p == "" {
			continue
		}
		lp := strings.ToLower(p)
		for _, t := range terms {
			if regexp.MustCompile(`\b` + regexp.QuoteMeta(t) + `\b`).MatchString(lp) {
				out = append(out, p)
				break
			}
		}
	}
	return out
}
