package classify

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path"
	"slices"
	"strings"
	"testing"
)

// The labelled data set, testdata/comments.jsonl: realistic review
// comments, Copilot-style and human, with the diff hunk each sits on and a
// label by SPEC PR-S5's definitions. The labels were committed before any
// rule was written. The split is fixed by the ids (see splitOf): rules are
// tuned on "tune" only, and "score" is where the figures are reported.

// labelled is one line of the data set.
type labelled struct {
	Comment
	Split string  `json:"split"` // tune | score
	Label Verdict `json:"label"` // structural | minor
	Why   string  `json:"why"`   // why the label, for a reviewer of the set
}

const dataSetPath = "testdata/comments.jsonl"

func loadDataSet(t testing.TB) []labelled {
	t.Helper()
	f, err := os.Open(dataSetPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []labelled
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for n := 1; sc.Scan(); n++ {
		var l labelled
		dec := json.NewDecoder(bytes.NewReader(sc.Bytes()))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&l); err != nil {
			t.Fatalf("%s:%d: %v", dataSetPath, n, err)
		}
		out = append(out, l)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// splitOf is the deterministic split: the ids ordered by
// sha256("classify-split:"+id), the first two thirds (rounded down) tune,
// the rest score. Hashing keeps the order the comments were written in
// out of the split.
func splitOf(ids []string) map[string]string {
	sorted := slices.Clone(ids)
	key := func(id string) string {
		h := sha256.Sum256([]byte("classify-split:" + id))
		return hex.EncodeToString(h[:])
	}
	slices.SortFunc(sorted, func(a, b string) int { return strings.Compare(key(a), key(b)) })
	out := make(map[string]string, len(ids))
	for i, id := range sorted {
		if i < 2*len(ids)/3 {
			out[id] = "tune"
		} else {
			out[id] = "score"
		}
	}
	return out
}

// TestPR_S5_DataSet: the set is large and varied enough to tune and score
// on, every item is complete, and the split is the deterministic one.
func TestPR_S5_DataSet(t *testing.T) {
	set := loadDataSet(t)
	if len(set) < 90 {
		t.Fatalf("%d labelled comments, want at least 90", len(set))
	}
	ids := make([]string, 0, len(set))
	seen := map[string]bool{}
	count := map[string]int{}
	for _, l := range set {
		if l.ID == "" || seen[l.ID] {
			t.Errorf("id %q empty or repeated", l.ID)
		}
		seen[l.ID] = true
		ids = append(ids, l.ID)
		if l.Label != Structural && l.Label != Minor {
			t.Errorf("%s: label %q", l.ID, l.Label)
		}
		if !slices.Contains([]string{SourceCopilot, SourceHuman, SourceLocal}, l.Source) {
			t.Errorf("%s: source %q", l.ID, l.Source)
		}
		if l.Author == "" || l.Path == "" || l.Line <= 0 || strings.TrimSpace(l.Body) == "" || l.Why == "" ||
			!strings.HasPrefix(l.DiffHunk, "@@ ") || strings.Count(l.DiffHunk, "\n") < 1 {
			t.Errorf("%s: incomplete: %+v", l.ID, l)
		}
		count["source "+l.Source]++
		count["label "+string(l.Label)]++
		count[l.Split+" "+string(l.Label)]++
		if len(suggestions(l.Body)) > 0 {
			count["suggestion "+string(l.Label)]++
		}
		count["kind "+fmt.Sprint(kindOf(l.Path))]++
		count["ext "+path.Ext(l.Path)]++
	}
	want := splitOf(ids)
	for _, l := range set {
		if l.Split != want[l.ID] {
			t.Errorf("%s: split %q, want %q (splitOf)", l.ID, l.Split, want[l.ID])
		}
	}
	// Variety the heuristic must face: both sources of threads and the
	// local review, suggestions with either label, docs and build paths,
	// several languages, both labels in both splits.
	for _, k := range []string{"source copilot", "source human", "source local", "suggestion structural", "suggestion minor",
		"tune structural", "tune minor", "score structural", "score minor",
		"ext .go", "ext .py", "ext .ts", "ext .md", "ext .yml",
		"kind " + fmt.Sprint(pathDocs), "kind " + fmt.Sprint(pathBuild), "kind " + fmt.Sprint(pathTest)} {
		if count[k] < 3 {
			t.Errorf("%d comments of %s, want at least 3", count[k], k)
		}
	}
	t.Logf("%d comments: %v", len(set), count)
}

// score is the heuristic's figures on some comments.
type score struct {
	n, decided, agree int
	structuralAsMinor []string
	minorAsStructural []string
	borderlineByLabel map[Verdict]int
}

func scoreOn(set []labelled, keep func(labelled) bool) score {
	s := score{borderlineByLabel: map[Verdict]int{}}
	for _, l := range set {
		if !keep(l) {
			continue
		}
		s.n++
		v := Heuristic(l.Comment).Verdict
		switch {
		case v == Borderline:
			s.borderlineByLabel[l.Label]++
			continue
		case v == l.Label:
			s.agree++
		case l.Label == Structural:
			s.structuralAsMinor = append(s.structuralAsMinor, l.ID)
		default:
			s.minorAsStructural = append(s.minorAsStructural, l.ID)
		}
		s.decided++
	}
	return s
}

func (s score) decidedShare() float64 { return ratio(s.decided, s.n) }
func (s score) agreement() float64    { return ratio(s.agree, s.decided) }

func ratio(a, b int) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}

func (s score) String() string {
	return fmt.Sprintf("n=%d decided=%d (%.1f%%) agree=%d/%d (%.1f%%) structural→minor=%d %v minor→structural=%d %v borderline: %d structural, %d minor",
		s.n, s.decided, 100*s.decidedShare(), s.agree, s.decided, 100*s.agreement(),
		len(s.structuralAsMinor), s.structuralAsMinor, len(s.minorAsStructural), s.minorAsStructural,
		s.borderlineByLabel[Structural], s.borderlineByLabel[Minor])
}

// Targets of issue 8, item 1.
const (
	minDecidedShare = 0.50
	minAgreement    = 0.90
)

// TestPR_S5_Scores reports the heuristic's decided share and agreement on
// the tune split, the score split and the whole set, and fails when the
// score split or the whole set misses a target, or when any structural
// comment anywhere is called minor (fail-closed). Run it with -v to see
// the figures:
//
//	go test ./internal/classify -run TestPR_S5_Scores -v
func TestPR_S5_Scores(t *testing.T) {
	set := loadDataSet(t)
	for _, part := range []struct {
		name  string
		keep  func(labelled) bool
		gated bool
	}{
		{"tune", func(l labelled) bool { return l.Split == "tune" }, false},
		{"score", func(l labelled) bool { return l.Split == "score" }, true},
		{"whole", func(labelled) bool { return true }, true},
	} {
		s := scoreOn(set, part.keep)
		t.Logf("%-5s %s", part.name, s)
		if len(s.structuralAsMinor) > 0 {
			t.Errorf("%s: structural comments called minor: %v", part.name, s.structuralAsMinor)
		}
		if !part.gated {
			continue
		}
		if s.decidedShare() < minDecidedShare {
			t.Errorf("%s: decided share %.1f%% < %.0f%%", part.name, 100*s.decidedShare(), 100*minDecidedShare)
		}
		if s.agreement() < minAgreement {
			t.Errorf("%s: agreement %.1f%% < %.0f%% on decided comments", part.name, 100*s.agreement(), 100*minAgreement)
		}
	}
}

// BenchmarkPR_S5_Heuristic classifies the whole data set once per
// iteration and reports the figures of the score split and the whole set
// as metrics beside the time.
func BenchmarkPR_S5_Heuristic(b *testing.B) {
	set := loadDataSet(b)
	for b.Loop() {
		for _, l := range set {
			Heuristic(l.Comment)
		}
	}
	sc := scoreOn(set, func(l labelled) bool { return l.Split == "score" })
	all := scoreOn(set, func(labelled) bool { return true })
	b.ReportMetric(100*sc.decidedShare(), "score-decided-%")
	b.ReportMetric(100*sc.agreement(), "score-agree-%")
	b.ReportMetric(100*all.decidedShare(), "whole-decided-%")
	b.ReportMetric(100*all.agreement(), "whole-agree-%")
	b.ReportMetric(float64(len(sc.structuralAsMinor)+len(all.structuralAsMinor)), "structural-as-minor")
}
