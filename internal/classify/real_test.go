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
)

func loadRealSet(t testing.TB) []real { return loadReal(t, realSetPath) }

// loadHeldOut is the fresh held-out set: collected after the rules were
// tuned and the scored third first scored; no rule is tuned on it.
func loadHeldOut(t testing.TB) []real { return loadReal(t, heldSetPath) }

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
	set, held := loadRealSet(t), loadHeldOut(t)
	if len(set) < 150 {
		t.Fatalf("%d real comments, want at least 150", len(set))
	}
	seen := map[string]bool{}
	seenText := map[string]bool{}
	ids := make([]string, 0, len(set))
	count := map[string]int{}
	langs := map[string]bool{}
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
		if r.Split == "held" {
			if !strings.HasPrefix(r.ID, "held-") {
				t.Errorf("%s: held-out ids start with held-", r.ID)
			}
			count["held "+string(r.Label)]++
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
	t.Logf("%d comments (and %d held out), %d languages: %v", len(set), len(held), len(langs), count)
}

// Agreement on the decided comments of the scored third. Issue 17 sets
// the target at 90%; the rules reach 86.7% there (BENCHMARKS.md says why,
// and that the target is not met). The test holds the line at 85% so that
// agreement cannot fall further unnoticed, and logs the target.
const (
	realTargetAgreement = 0.90
	realMinAgreement    = 0.85
)

// TestPR_S5_RealComments scores the heuristic on the real set: the tune
// split, the scored third, the two together and the fresh held-out set. It
// fails when a structural comment of any of them is called minor — the
// guarantee: a structural finding is never fixed as a cosmetic one on the
// heuristic's word — or when agreement on the scored third's decided
// comments falls below realMinAgreement. Run it with -v for the figures:
//
//	go test ./internal/classify -run TestPR_S5_RealComments -v
func TestPR_S5_RealComments(t *testing.T) {
	set := labelledOf(append(loadRealSet(t), loadHeldOut(t)...))
	for _, part := range []struct {
		name  string
		keep  func(labelled) bool
		gated bool
	}{
		{"tune", func(l labelled) bool { return l.Split == "tune" }, false},
		{"score", func(l labelled) bool { return l.Split == "score" }, true},
		{"whole", func(l labelled) bool { return l.Split != "held" }, false},
		{"held", func(l labelled) bool { return l.Split == "held" }, false},
	} {
		s := scoreOn(set, part.keep)
		t.Logf("%-5s %s", part.name, s)
		if len(s.structuralAsMinor) > 0 {
			t.Errorf("%s: structural comments called minor: %v", part.name, s.structuralAsMinor)
		}
		if !part.gated {
			continue
		}
		if s.agreement() < realMinAgreement {
			t.Errorf("%s: agreement %.1f%% < %.0f%% on decided comments", part.name, 100*s.agreement(), 100*realMinAgreement)
		}
		if s.agreement() < realTargetAgreement {
			t.Logf("%s: agreement %.1f%% is below issue 17's target of %.0f%%", part.name, 100*s.agreement(), 100*realTargetAgreement)
		}
	}
}
