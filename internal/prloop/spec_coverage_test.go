package prloop

import (
	"bufio"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// specIDRE is a requirement ID of SPEC §1 in prose or a script comment.
var specIDRE = regexp.MustCompile(`\bPR-[OSTGMV]\d+\b`)

// idTokenRE is one ID in a test function's name, after "PR_".
var idTokenRE = regexp.MustCompile(`^[OSTGMV]\d+$`)

// testFuncRE is a test function's name.
var testFuncRE = regexp.MustCompile(`(?m)^func (Test\w+)\(`)

// idsInTestName reads the IDs a test function names: after a "PR" token,
// each token shaped like an ID (TestPR_T1_T12_Force… names PR-T1 and
// PR-T12).
func idsInTestName(name string) []string {
	var out []string
	toks := strings.Split(strings.TrimPrefix(name, "Test"), "_")
	for i := 0; i < len(toks); i++ {
		if toks[i] != "PR" {
			continue
		}
		for j := i + 1; j < len(toks) && idTokenRE.MatchString(toks[j]); j++ {
			out = append(out, "PR-"+toks[j])
		}
	}
	return out
}

// specIDs is the committed list of SPEC §1's IDs; when the spec itself is
// at hand (CONVERGE_SPEC, or the shared spec beside the checkout) the list
// must be exactly its §1.
func specIDs(t *testing.T) []string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", "spec_pr_ids.txt"))
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, l := range strings.Split(string(raw), "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			ids = append(ids, strings.Fields(l)[0])
		}
	}
	spec := os.Getenv("CONVERGE_SPEC")
	if spec == "" {
		spec = filepath.Join("..", "..", "..", "shared", "spec", "SPEC.md")
	}
	if b, err := os.ReadFile(spec); err == nil {
		s := string(b)
		start, end := strings.Index(s, "\n## 1."), strings.Index(s, "\n## 2.")
		if start < 0 || end < start {
			t.Fatalf("%s: no section 1", spec)
		}
		var inSpec []string
		for _, l := range strings.Split(s[start:end], "\n") {
			if m := regexp.MustCompile(`^- (PR-[A-Z]\d+)\b`).FindStringSubmatch(l); m != nil {
				inSpec = append(inSpec, m[1])
			}
		}
		a, b := slices.Sorted(slices.Values(inSpec)), slices.Sorted(slices.Values(ids))
		if !slices.Equal(a, b) {
			t.Fatalf("testdata/spec_pr_ids.txt is not SPEC §1's list:\n  spec %v\n  list %v", a, b)
		}
	}
	return ids
}

// TestPR_EveryIDOfSpecSection1HasATest: every requirement of SPEC §1 is
// named by a test function or an acceptance script of the repository, so
// coverage of the list can be read off the names (the convention SPEC
// states at its top). An ID no test names fails here.
func TestPR_EveryIDOfSpecSection1HasATest(t *testing.T) {
	root := filepath.Join("..", "..")
	named := map[string][]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		switch {
		case strings.HasSuffix(p, "_test.go"):
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			for _, m := range testFuncRE.FindAllStringSubmatch(string(b), -1) {
				for _, id := range idsInTestName(m[1]) {
					named[id] = append(named[id], m[1])
				}
			}
		case strings.HasSuffix(p, ".txtar") && (strings.Contains(filepath.ToSlash(p), "testdata/script/") || strings.Contains(filepath.ToSlash(p), "testdata/bothforges/")):
			f, err := os.Open(p)
			if err != nil {
				return err
			}
			defer f.Close()
			sc := bufio.NewScanner(f)
			for sc.Scan() {
				l := sc.Text()
				if strings.HasPrefix(l, "-- ") {
					break // the script's files, not the script
				}
				if !strings.HasPrefix(l, "#") {
					continue
				}
				for _, id := range specIDRE.FindAllString(l, -1) {
					named[id] = append(named[id], filepath.Base(p))
				}
			}
			return sc.Err()
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var missing []string
	pending := pendingIDs(t)
	for _, id := range specIDs(t) {
		issue, isPending := pending[id]
		switch {
		case isPending && len(named[id]) > 0:
			t.Errorf("%s is marked pending (%s) in testdata/spec_pr_ids.txt but %v names it: take the mark off", id, issue, named[id])
		case !isPending && len(named[id]) == 0:
			missing = append(missing, id)
		}
	}
	if len(missing) > 0 {
		t.Fatalf("no test function or acceptance script names %s", strings.Join(missing, ", "))
	}
}

func TestPR_TestNamesAreReadForIDs(t *testing.T) {
	for name, want := range map[string][]string{
		"TestPR_T1_T12_ForcePushBackToReviewedHeadIsNotTwoStable":   {"PR-T1", "PR-T12"},
		"TestPR_S13_CleanupResolvesOutdatedThreadsOnceAfterSuccess": {"PR-S13"},
		"TestPR_HappyPathThreeRounds":                               nil,
		"TestAG_T4_CrashingAgentEndsErrored":                        nil,
	} {
		if got := idsInTestName(name); !slices.Equal(got, want) {
			t.Errorf("%s: %v, want %v", name, got, want)
		}
	}
}

// pendingIDs are the IDs testdata/spec_pr_ids.txt marks "pending: issue
// N": in SPEC, not built yet, each with the open issue that builds it. A
// pending ID needs no test; one a test names must lose its mark.
func pendingIDs(t *testing.T) map[string]string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", "spec_pr_ids.txt"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, l := range strings.Split(string(raw), "\n") {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		if _, why, ok := strings.Cut(l, "pending:"); ok {
			why = strings.TrimSpace(why)
			if !strings.HasPrefix(why, "issue ") {
				t.Fatalf("testdata/spec_pr_ids.txt: %q: a pending ID names the open issue that builds it (pending: issue N)", l)
			}
			out[strings.Fields(l)[0]] = why
		}
	}
	return out
}
