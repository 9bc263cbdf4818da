package suggest

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/convergeloop/converge/internal/agent"
)

// GitLab's multi-line suggestion ("suggestion:-A+B") replaces the
// commented line with A lines above and B below it.
func TestPR_S9_GitLabSuggestionSpan(t *testing.T) {
	for _, tc := range []struct {
		body         string
		above, below int
		reason       string
	}{
		{"Fix.\n\n```suggestion:-0+2\na\nb\n```", 0, 2, ""},
		{"```suggestion:-1+0\nx\n```", 1, 0, ""},
		{"```suggestion\nx\n```", 0, 0, ""},
		{"```suggestion:+1-0\nx\n```", 0, 0, ReasonNoSuggestion},
		{"```suggestion:-x+1\nx\n```", 0, 0, ReasonNoSuggestion},
		{"```suggestion:-0+101\nx\n```", 0, 0, ReasonNoSuggestion},
	} {
		_, a, b, reason := ParseSuggestionSpan(tc.body)
		if a != tc.above || b != tc.below || reason != tc.reason {
			t.Errorf("%q: %d, %d, %q; want %d, %d, %q", tc.body, a, b, reason, tc.above, tc.below, tc.reason)
		}
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "f.go"), []byte("1\n2\n3\n4\n5\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	res, err := New().Run(context.Background(), agent.Task{Kind: agent.TaskKindFix, Workdir: dir, Findings: []agent.Finding{
		{ID: "a", Path: "f.go", EndLine: 2, Body: "```suggestion:-1+1\none\ntwo\nthree\n```"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(filepath.Join(dir, "f.go"))
	if string(got) != "one\ntwo\nthree\n4\n5\n" || !slices.ContainsFunc(res.Outcomes, func(o agent.FindingOutcome) bool { return o.Status == agent.StatusComplete }) {
		t.Fatalf("file %q, outcomes %+v", got, res.Outcomes)
	}
}
