package fakehub

import (
	"context"
	"fmt"
	"strings"
)

// DemoInfo names the seeded demo pull request.
type DemoInfo struct {
	Owner  string
	Repo   string
	Number int
	PRURL  string
}

// Demo repository coordinates.
const (
	DemoOwner  = "octo-org"
	DemoRepo   = "textstats"
	DemoBranch = "feature/summary-stats"
)

// DemoBaseFiles is the demo repository's main branch: a tiny Go module with
// no dependencies whose tests run in well under two seconds.
func DemoBaseFiles() map[string]string {
	return map[string]string{
		"go.mod":    "module example.com/textstats\n\ngo 1.21\n",
		"README.md": "# textstats\n\nSmall helpers for counting words and summarising numbers.\n",
		"words.go": `// Package textstats counts words and summarises numbers.
package textstats

import "strings"

// WordCount returns the number of whitespace-separated words in s.
func WordCount(s string) int {
	return len(strings.Fields(s))
}
`,
		"words_test.go": `package textstats

import "testing"

func TestWordCount(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int
	}{{"", 0}, {"one", 1}, {" two  words ", 2}} {
		if got := WordCount(tc.in); got != tc.want {
			t.Errorf("WordCount(%q) = %d, want %d", tc.in, got, tc.want)
		}
	}
}
`,
	}
}

// DemoPRFiles is what the demo PR adds. It has three real defects its
// tests do not catch: Mean divides by zero on empty input (NaN), MovingSum
// drops the last window (off by one), ParseScores ignores parse errors.
func DemoPRFiles() map[string]string {
	return map[string]string{
		"summary.go": `package textstats

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// ErrEmpty is returned when there is nothing to summarise.
var ErrEmpty = errors.New("textstats: no values")

// Mean returns the arithmetic mean of xs, or ErrEmpty when xs is empty.
func Mean(xs []float64) (float64, error) {
	var sum float64
	for _, x := range xs {
		sum += x
	}
	mean := sum / float64(len(xs))
	return mean, nil
}

// MovingSum returns the sum of every window of n consecutive values.
func MovingSum(xs []float64, n int) []float64 {
	if n <= 0 {
		return nil
	}
	var out []float64
	for i := 0; i+n < len(xs); i++ {
		var s float64
		for _, x := range xs[i : i+n] {
			s += x
		}
		out = append(out, s)
	}
	return out
}

// ParseScores parses whitespace-separated numbers.
func ParseScores(s string) ([]float64, error) {
	var out []float64
	for _, f := range strings.Fields(s) {
		v, _ := strconv.ParseFloat(f, 64)
		out = append(out, v)
	}
	return out, nil
}

// Describe summarises xs in one line.
func Describe(xs []float64) string {
	m, err := Mean(xs)
	if err != nil {
		return "no values"
	}
	return fmt.Sprintf("n=%d mean=%.2f", len(xs), m)
}
`,
		"summary_test.go": `package textstats

import "testing"

func TestMean(t *testing.T) {
	m, err := Mean([]float64{1, 2, 3})
	if err != nil || m != 2 {
		t.Fatalf("Mean = %v, %v; want 2, nil", m, err)
	}
}

func TestMovingSum(t *testing.T) {
	got := MovingSum([]float64{1, 2, 3, 4}, 2)
	if len(got) < 2 || got[0] != 3 || got[1] != 5 {
		t.Fatalf("MovingSum = %v", got)
	}
}

func TestParseScores(t *testing.T) {
	got, err := ParseScores("1 2.5 4")
	if err != nil || len(got) != 3 || got[1] != 2.5 {
		t.Fatalf("ParseScores = %v, %v", got, err)
	}
}

func TestDescribe(t *testing.T) {
	if got := Describe([]float64{2, 4}); got != "n=2 mean=3.00" {
		t.Fatalf("Describe = %q", got)
	}
}
`,
	}
}

// DemoScript is Copilot's script on the demo PR: two findings, then one
// more, then nothing new. Each suggestion applied exactly keeps the tests
// green, and each anchor disappears once its fix is applied.
func DemoScript() CopilotScript {
	return CopilotScript{Rounds: []CopilotRound{
		{Findings: []Finding{
			{
				Path: "summary.go", Anchor: "mean := sum / float64(len(xs))", AnchorEnd: "return mean, nil",
				Body:       "`Mean` divides by zero when `xs` is empty and returns NaN with a nil error, although the doc comment promises `ErrEmpty`.",
				Suggestion: "\tif len(xs) == 0 {\n\t\treturn 0, ErrEmpty\n\t}\n\treturn sum / float64(len(xs)), nil\n",
			},
			{
				Path: "summary.go", Anchor: "for i := 0; i+n < len(xs); i++ {",
				Body:       "Off by one: the loop stops before the last window, so `MovingSum([]float64{1, 2, 3}, 3)` returns nothing. The bound should be `i+n <= len(xs)`.",
				Suggestion: "\tfor i := 0; i+n <= len(xs); i++ {\n",
			},
		}},
		{Findings: []Finding{
			{
				Path: "summary.go", Anchor: "v, _ := strconv.ParseFloat(f, 64)",
				Body:       "The parse error is ignored: `ParseScores(\"1 x\")` returns `[1 0]` and a nil error. Return the error instead.",
				Suggestion: "\t\tv, err := strconv.ParseFloat(f, 64)\n\t\tif err != nil {\n\t\t\treturn nil, fmt.Errorf(\"textstats: parse score %q: %w\", f, err)\n\t\t}\n",
			},
		}},
		{},
	}}
}

// ApplySuggestion replaces a finding's anchored lines in content with its
// suggestion, as GitHub's "Commit suggestion" does; false when the anchor
// is absent.
func ApplySuggestion(content string, f Finding) (string, bool) {
	start, end := anchorLines(content, f.Anchor, f.AnchorEnd)
	if start == 0 {
		return content, false
	}
	lines := strings.SplitAfter(content, "\n")
	sug := f.Suggestion
	if sug != "" && !strings.HasSuffix(sug, "\n") {
		sug += "\n"
	}
	var b strings.Builder
	for _, l := range lines[:start-1] {
		b.WriteString(l)
	}
	b.WriteString(sug)
	for _, l := range lines[end:] {
		b.WriteString(l)
	}
	return b.String(), true
}

// SeedDemo creates the demo repository and PR on hub, with CI running
// `go test -vet=off ./...` and Copilot scripted by DemoScript.
func SeedDemo(ctx context.Context, hub *Hub) (DemoInfo, error) {
	return SeedDemoWith(ctx, hub, DemoOptions{})
}

// DemoOptions vary the demo repository.
type DemoOptions struct {
	// NoCI seeds the repository without a CI runner: no check or status
	// ever appears on a head but converge's own.
	NoCI bool
}

// SeedDemoWith is SeedDemo with options.
func SeedDemoWith(ctx context.Context, hub *Hub, o DemoOptions) (DemoInfo, error) {
	if err := ctx.Err(); err != nil {
		return DemoInfo{}, err
	}
	ro := RepoOptions{TestCommand: []string{"go", "test", "-vet=off", "./..."}}
	if o.NoCI {
		ro.TestCommand = nil
	}
	if err := hub.CreateRepo(DemoOwner, DemoRepo, DemoBaseFiles(), ro); err != nil {
		return DemoInfo{}, fmt.Errorf("seed demo: %w", err)
	}
	n, err := hub.CreatePR(DemoOwner, DemoRepo, NewPR{
		Head:    DemoBranch,
		Title:   "Add summary statistics",
		Body:    "Adds Mean, MovingSum, ParseScores and Describe for summarising numbers.",
		Author:  LoginAuthor,
		Files:   DemoPRFiles(),
		Message: "Add summary statistics",
	})
	if err != nil {
		return DemoInfo{}, fmt.Errorf("seed demo: %w", err)
	}
	if err := hub.SetCopilotScript(DemoOwner, DemoRepo, n, DemoScript()); err != nil {
		return DemoInfo{}, fmt.Errorf("seed demo: %w", err)
	}
	return DemoInfo{Owner: DemoOwner, Repo: DemoRepo, Number: n, PRURL: hub.PRURL(DemoOwner, DemoRepo, n)}, nil
}
