package classify

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"
)

// The real data set, testdata/real_comments.jsonl: review comments copied
// from public pull requests, Copilot's and humans', labelled before any rule
// was changed for them (see testdata/README.md). The split is splitOf's, as
// for the written set: rules are tuned on "tune", and "score" is the third
// the figures in BENCHMARKS.md promise.

// real is one line of the real data set.
type real struct {
	labelled
	URL      string `json:"url"`
	Repo     string `json:"repo"`
	Language string `json:"language"` // of the file
	RepoKind string `json:"repo_kind"`
}

const (
	realSetPath = "testdata/real_comments.jsonl"
	heldSetPath = "testdata/real_heldout.jsonl"
	// held2SetPath: the second fresh set, collected after the precision
	// pass on the rules and scored once (see testdata/README.md).
	held2SetPath = "testdata/real_heldout2.jsonl"
	// held3SetPath: the third fresh set, collected for issue 36 after
	// the says-wrong rule was written and labelled before the heuristic
	// ran on it (see testdata/README.md).
	held3SetPath = "testdata/real_heldout3.jsonl"
)

func loadRealSet(t testing.TB) []real { return loadReal(t, realSetPath) }

// loadHeldOut is the fresh held-out set: collected after the rules were
// tuned and the scored third first scored; no rule is tuned on it.
func loadHeldOut(t testing.TB) []real { return loadReal(t, heldSetPath) }

// loadHeldOut2 is the second fresh set; no rule is tuned on it either.
func loadHeldOut2(t testing.TB) []real { return loadReal(t, held2SetPath) }

// loadHeldOut3 is the third fresh set; no rule is tuned on it.
func loadHeldOut3(t testing.TB) []real { return loadReal(t, held3SetPath) }

// loadAllReal is every real comment: both splits and held-out 1 to 3.
func loadAllReal(t testing.TB) []real {
	out := append(loadRealSet(t), loadHeldOut(t)...)
	out = append(out, loadHeldOut2(t)...)
	return append(out, loadHeldOut3(t)...)
}

func loadReal(t testing.TB, file string) []real {
	t.Helper()
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var out []real
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for n := 1; sc.Scan(); n++ {
		var r real
		dec := json.NewDecoder(bytes.NewReader(sc.Bytes()))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&r); err != nil {
			t.Fatalf("%s:%d: %v", file, n, err)
		}
		out = append(out, r)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func labelledOf(set []real) []labelled {
	out := make([]labelled, 0, len(set))
	for _, r := range set {
		out = append(out, r.labelled)
	}
	return out
}

// TestPR_S5_RealCommentsDataSet: the real set is as issue 17 asks — at
// least 150 comments from public PRs with their URLs, Copilot's and
// humans', five languages or more, libraries, applications and docs-heavy
// repositories, none from the repositories kept aside — and its split is
// splitOf's.
func TestPR_S5_RealCommentsDataSet(t *testing.T) {
	set, held := loadRealSet(t), append(loadHeldOut(t), loadHeldOut2(t)...)
	held = append(held, loadHeldOut3(t)...)
	if len(set) < 150 {
		t.Fatalf("%d real comments, want at least 150", len(set))
	}
	seen := map[string]bool{}
	seenText := map[string]bool{}
	ids := make([]string, 0, len(set))
	count := map[string]int{}
	langs, langs2 := map[string]bool{}, map[string]bool{}
	for _, r := range append(slices.Clone(set), held...) {
		// The held-out set repeats no comment of the first set.
		if key := r.URL + "\x00" + r.Body; seenText[key] {
			t.Errorf("%s: the same comment twice", r.ID)
		} else {
			seenText[key] = true
		}
		if r.ID == "" || seen[r.ID] {
			t.Errorf("id %q empty or repeated", r.ID)
		}
		seen[r.ID] = true
		if !strings.HasPrefix(r.URL, "https://github.com/"+r.Repo+"/pull/") {
			t.Errorf("%s: url %q is not a pull request of %q", r.ID, r.URL, r.Repo)
		}
		if strings.Contains(strings.ToLower(r.Repo), "three-pillars") {
			t.Errorf("%s: %s is kept aside for independent scoring", r.ID, r.Repo)
		}
		if r.Source != SourceCopilot && r.Source != SourceHuman {
			t.Errorf("%s: source %q", r.ID, r.Source)
		}
		if r.Label != Structural && r.Label != Minor {
			t.Errorf("%s: label %q", r.ID, r.Label)
		}
		if !slices.Contains([]string{"library", "application", "docs"}, r.RepoKind) {
			t.Errorf("%s: repo_kind %q", r.ID, r.RepoKind)
		}
		if r.Author == "" || r.Path == "" || r.Language == "" || strings.TrimSpace(r.Body) == "" ||
			strings.TrimSpace(r.DiffHunk) == "" || r.Why == "" || r.Line < 0 {
			t.Errorf("%s: incomplete: %+v", r.ID, r)
		}
		if r.Split == "held" || r.Split == "held2" || r.Split == "held3" {
			if !strings.HasPrefix(r.ID, r.Split+"-") {
				t.Errorf("%s: %s ids start with %s-", r.ID, r.Split, r.Split)
			}
			count[r.Split+" "+string(r.Label)]++
			if r.Split == "held3" {
				count["held3 source "+r.Source]++
			}
			if r.Split == "held2" {
				count["held2 source "+r.Source]++
				count["held2 kind "+r.RepoKind]++
				langs2[r.Language] = true
			}
			continue
		}
		ids = append(ids, r.ID)
		langs[r.Language] = true
		count["source "+r.Source]++
		count["kind "+r.RepoKind]++
		count[r.Split+" "+string(r.Label)]++
	}
	want := splitOf(ids)
	for _, r := range set {
		if r.Split != want[r.ID] {
			t.Errorf("%s: split %q, want %q (splitOf)", r.ID, r.Split, want[r.ID])
		}
	}
	for _, k := range []string{"source copilot", "source human", "kind library", "kind application", "kind docs",
		"tune structural", "tune minor", "score structural", "score minor"} {
		if count[k] < 10 {
			t.Errorf("%d comments of %s, want at least 10", count[k], k)
		}
	}
	if len(langs) < 5 {
		t.Errorf("%d languages, want at least 5", len(langs))
	}
	// Held-out 2 is as varied on its own: 60 comments or more, Copilot's
	// and humans', three kinds of repository, five languages.
	if n := count["held2 structural"] + count["held2 minor"]; n < 60 {
		t.Errorf("%d comments in held-out 2, want at least 60", n)
	}
	for _, k := range []string{"held2 source copilot", "held2 source human", "held2 kind library", "held2 kind application", "held2 kind docs"} {
		if count[k] < 1 {
			t.Errorf("no comment of %s", k)
		}
	}
	if len(langs2) < 5 {
		t.Errorf("%d languages in held-out 2, want at least 5", len(langs2))
	}
	// Held-out 3 (issue 36): 40 comments or more, Copilot's and
	// humans', structural and minor.
	if n := count["held3 structural"] + count["held3 minor"]; n < 40 {
		t.Errorf("%d comments in held-out 3, want at least 40", n)
	}
	for _, k := range []string{"held3 source copilot", "held3 source human", "held3 structural", "held3 minor"} {
		if count[k] < 1 {
			t.Errorf("no comment of %s", k)
		}
	}
	t.Logf("%d comments (and %d held out), %d languages: %v", len(set), len(held), len(langs), count)
}

// Agreement floors on decided comments, each the measured figure rounded
// down to 5% so that agreement cannot fall further unnoticed. Issue 17
// sets the target at 90%: the scored third reaches it (10/10) but is no
// clean measurement any more; held-out 2, scored once before any rule
// could be changed for it, does not (11/15, 73.3%; BENCHMARKS.md).
const (
	realTargetAgreement = 0.90
	realMinAgreement    = 0.85 // scored third
	held2MinAgreement   = 0.70 // held-out 2
)

// held2KnownStructuralAsMinor are the structural comments of held-out 2
// the rules call minor. Its one scoring (d979747, rules of 807915e) found
// held2-044, a ```suggestion that changes a code sample in a docs page;
// afterwards one change that can only turn decisions borderline (a
// suggestion on a docs page that looks like code is a doubt,
// suggestion-docs-code) took it out, so the list is empty and the check
// absolute. Held-out 2's clean figure stays that one scoring's.
var held2KnownStructuralAsMinor []string

// TestPR_S5_RealComments scores the heuristic on the real sets: the tune
// split, the scored third, the two together, the held-out set and
// held-out 2. It fails when a structural comment of any of them is called
// minor — the guarantee: a structural finding is never fixed as a cosmetic
// one on the heuristic's word — and when agreement on the decided
// comments of the scored third or of held-out 2 falls below its floor.
// Run it with -v for the figures:
//
//	go test ./internal/classify -run TestPR_S5_RealComments -v
func TestPR_S5_RealComments(t *testing.T) {
	set := labelledOf(loadAllReal(t))
	for _, part := range []struct {
		name  string
		keep  func(labelled) bool
		floor float64 // 0: not gated
		known []string
	}{
		{"tune", func(l labelled) bool { return l.Split == "tune" }, 0, nil},
		{"score", func(l labelled) bool { return l.Split == "score" }, realMinAgreement, nil},
		{"whole", func(l labelled) bool { return l.Split == "tune" || l.Split == "score" }, 0, nil},
		{"held", func(l labelled) bool { return l.Split == "held" }, 0, nil},
		{"held2", func(l labelled) bool { return l.Split == "held2" }, held2MinAgreement, held2KnownStructuralAsMinor},
		// Held-out 3 (issue 36): scored once, after the says-wrong rule;
		// no structural comment of it may be called minor.
		{"held3", func(l labelled) bool { return l.Split == "held3" }, 0, nil},
	} {
		s := scoreOn(set, part.keep)
		t.Logf("%-5s %s", part.name, s)
		if !slices.Equal(s.structuralAsMinor, part.known) && len(s.structuralAsMinor) > 0 {
			t.Errorf("%s: structural comments called minor: %v (known: %v)", part.name, s.structuralAsMinor, part.known)
		}
		if part.floor == 0 {
			continue
		}
		if s.agreement() < part.floor {
			t.Errorf("%s: agreement %.1f%% < %.0f%% on decided comments", part.name, 100*s.agreement(), 100*part.floor)
		}
		if s.agreement() < realTargetAgreement {
			t.Logf("%s: agreement %.1f%% is below issue 17's target of %.0f%%", part.name, 100*s.agreement(), 100*realTargetAgreement)
		}
	}
}
