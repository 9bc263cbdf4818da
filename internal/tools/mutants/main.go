// Command mutants checks that the tests guard converge's rules: each patch
// in testdata/mutants breaks one rule, and the tests it names must fail
// with it applied. It applies every patch to a scratch copy of the working
// tree, runs the tests, prints which test killed each mutant, and exits
// non-zero when any mutant survives, or does not apply or build.
//
// A patch's header, before its first "diff --git" line, says what it
// breaks and which tests guard it:
//
//	Breaks: PR-T1's fourth conjunct ignored
//	Test: ./internal/prloop
//	Run: ^TestPR_T1
//
// Run is optional (default: every test of the packages named by Test).
package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"
)

func main() {
	dir := flag.String("dir", "testdata/mutants", "directory of *.patch files")
	only := flag.String("only", "", "run only patches whose name contains this")
	flag.Parse()
	os.Exit(run(context.Background(), *dir, *only, os.Stdout))
}

type mutant struct {
	Name, Breaks, Run string
	Test              []string
	Patch             []byte
}

func run(ctx context.Context, dir, only string, out io.Writer) int {
	paths, err := filepath.Glob(filepath.Join(dir, "*.patch"))
	if err != nil || len(paths) == 0 {
		fmt.Fprintf(out, "mutants: no patches in %s\n", dir)
		return 2
	}
	sort.Strings(paths)
	root, err := os.Getwd()
	if err != nil {
		fmt.Fprintln(out, "mutants:", err)
		return 2
	}
	survived, broken, killed := 0, 0, 0
	for _, p := range paths {
		if only != "" && !strings.Contains(filepath.Base(p), only) {
			continue
		}
		m, err := load(p)
		if err != nil {
			fmt.Fprintf(out, "BROKEN   %s: %v\n", filepath.Base(p), err)
			broken++
			continue
		}
		start := time.Now()
		verdict, detail := try(ctx, root, m)
		fmt.Fprintf(out, "%-8s %s (%s) — %s [%s]\n", verdict, m.Name, m.Breaks, detail, time.Since(start).Round(time.Second))
		switch verdict {
		case "KILLED":
			killed++
		case "SURVIVED":
			survived++
		default:
			broken++
		}
	}
	fmt.Fprintf(out, "mutants: %d killed, %d survived, %d broken\n", killed, survived, broken)
	if survived > 0 || broken > 0 {
		return 1
	}
	return 0
}

func load(path string) (*mutant, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	m := &mutant{Name: strings.TrimSuffix(filepath.Base(path), ".patch"), Patch: b}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "diff --git") {
			break
		}
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		v = strings.TrimSpace(v)
		switch strings.TrimSpace(k) {
		case "Breaks":
			m.Breaks = v
		case "Test":
			m.Test = strings.Fields(v)
		case "Run":
			m.Run = v
		}
	}
	if m.Breaks == "" || len(m.Test) == 0 {
		return nil, errors.New("the header needs Breaks: and Test: lines")
	}
	if !bytes.Contains(b, []byte("\ndiff --git")) {
		return nil, errors.New("no diff in the patch")
	}
	return m, nil
}

var failRE = regexp.MustCompile(`(?m)^\s*--- FAIL: (\S+)`)

// try applies m to a scratch copy of the working tree and runs its tests.
func try(ctx context.Context, root string, m *mutant) (verdict, detail string) {
	scratch, err := os.MkdirTemp("", "converge-mutant-*")
	if err != nil {
		return "BROKEN", err.Error()
	}
	defer os.RemoveAll(scratch)
	if err := copyTree(ctx, root, scratch); err != nil {
		return "BROKEN", "copy: " + err.Error()
	}
	apply := exec.CommandContext(ctx, "git", "apply", "--whitespace=nowarn", "-")
	apply.Dir, apply.Stdin = scratch, bytes.NewReader(m.Patch)
	if b, err := apply.CombinedOutput(); err != nil {
		return "BROKEN", "does not apply: " + strings.TrimSpace(string(b))
	}
	args := append([]string{"test", "-count=1"}, m.Test...)
	if m.Run != "" {
		args = append(args, "-run", m.Run)
	}
	test := exec.CommandContext(ctx, "go", args...)
	test.Dir = scratch
	b, err := test.CombinedOutput()
	if err == nil {
		return "SURVIVED", "go " + strings.Join(args, " ") + " passed"
	}
	if ms := failRE.FindAllStringSubmatch(string(b), -1); len(ms) > 0 {
		var names []string
		for _, x := range ms {
			if !strings.Contains(x[1], "/") || len(names) == 0 {
				names = append(names, x[1])
			}
		}
		return "KILLED", "by " + strings.Join(dedupe(names), ", ")
	}
	if bytes.Contains(b, []byte("build failed")) || bytes.Contains(b, []byte("[setup failed]")) {
		return "BROKEN", "does not build: " + firstLines(string(b), 3)
	}
	return "KILLED", "tests failed: " + firstLines(string(b), 2)
}

// copyTree copies the working tree's tracked and untracked, not ignored,
// files: the mutant is measured against what is on disk.
func copyTree(ctx context.Context, root, dst string) error {
	ls := exec.CommandContext(ctx, "git", "ls-files", "-z", "--cached", "--others", "--exclude-standard")
	ls.Dir = root
	b, err := ls.Output()
	if err != nil {
		return err
	}
	for _, rel := range strings.Split(strings.TrimRight(string(b), "\x00"), "\x00") {
		if rel == "" {
			continue
		}
		src := filepath.Join(root, rel)
		st, err := os.Lstat(src)
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				continue // deleted in the working tree
			}
			return err
		}
		if !st.Mode().IsRegular() {
			continue
		}
		data, err := os.ReadFile(src)
		if err != nil {
			return err
		}
		to := filepath.Join(dst, rel)
		if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(to, data, st.Mode().Perm()); err != nil {
			return err
		}
	}
	return nil
}

func dedupe(xs []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, x := range xs {
		if !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	return out
}

func firstLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[:n]
	}
	return strings.Join(lines, " | ")
}
