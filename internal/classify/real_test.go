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

const realSetPath = "testdata/real_comments.jsonl"

func loadRealSet(t testing.TB) []real {
	t.Helper()
	raw, err := os.ReadFile(realSetPath)
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
			t.Fatalf("%s:%d: %v", realSetPath, n, err)
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
	set := loadRealSet(t)
	if len(set) < 150 {
		t.Fatalf("%d real comments, want at least 150", len(set))
	}
	seen := map[string]bool{}
	ids := make([]string, 0, len(set))
	count := map[string]int{}
	langs := map[string]bool{}
	for _, r := range set {
		if r.ID == "" || seen[r.ID] {
			t.Errorf("id %q empty or repeated", r.ID)
		}
		seen[r.ID] = true
		ids = append(ids, r.ID)
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
	t.Logf("%d comments, %d languages: %v", len(set), len(langs), count)
}

// Targets on the scored third of the real set (issue 17, item 5).
const realMinAgreement = 0.90

// TestPR_S5_RealComments scores the heuristic on the real set: the tune
// split, the scored third and the whole. It fails when a structural comment
// of the scored third (or of the tune split, which the rules were fitted
// to) is called minor — the guarantee: a structural finding is never fixed
// as a cosmetic one on the heuristic's word — or when agreement on the
// scored third's decided comments falls below 90%. Run it with -v for the
// figures:
//
//	go test ./internal/classify -run TestPR_S5_RealComments -v
func TestPR_S5_RealComments(t *testing.T) {
	set := labelledOf(loadRealSet(t))
	for _, part := range []struct {
		name  string
		keep  func(labelled) bool
		gated bool
	}{
		{"tune", func(l labelled) bool { return l.Split == "tune" }, false},
		{"score", func(l labelled) bool { return l.Split == "score" }, true},
		{"whole", func(labelled) bool { return true }, false},
	} {
		s := scoreOn(set, part.keep)
		t.Logf("%-5s %s", part.name, s)
		if part.name != "whole" && len(s.structuralAsMinor) > 0 {
			t.Errorf("%s: structural comments called minor: %v", part.name, s.structuralAsMinor)
		}
		if part.gated && s.agreement() < realMinAgreement {
			t.Errorf("%s: agreement %.1f%% < %.0f%% on decided comments", part.name, 100*s.agreement(), 100*realMinAgreement)
		}
	}
}
