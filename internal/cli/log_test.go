package cli

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite golden files")

// normalizeLog replaces what differs between two runs of the same
// scenario (run ids, times, commit SHAs, the emulator's port, durations)
// with placeholders; everything else is the scenario's.
func normalizeLog(s string) string {
	for _, r := range []struct{ re, with string }{
		{`r-\d{8}-[0-9a-f]{6}`, "RUN"},
		{`\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z`, "TIME"},
		{`\b[0-9a-f]{40}\b`, "SHA"},
		{`\b[0-9a-f]{12}\b`, "SHORT"},
		{`https://127\.0\.0\.1:\d+`, "https://HUB"},
		{`wall clock: \S+`, "wall clock: DURATION"},
	} {
		s = regexp.MustCompile(r.re).ReplaceAllString(s, r.with)
	}
	return s
}

// TestPR_M5_DecisionLogOfAThreeRoundRun: `converge log RUN` renders the
// demo's three-round run from the store alone: each round's review,
// findings with source, verdict and disposition, the commits, the guards,
// the decisions, the terminal and the proof (golden file).
func TestPR_M5_DecisionLogOfAThreeRoundRun(t *testing.T) {
	t.Parallel()
	state := t.TempDir()
	ios, out, errOut := testIO(nil)
	if code := Run(context.Background(), []string{"demo", "--state", state}, ios); code != 0 {
		t.Fatalf("demo exit %d\n%s\n%s", code, out, errOut)
	}
	id := regexp.MustCompile(`r-\d{8}-[0-9a-f]{6}`).FindString(out.String())
	ios, out, errOut = testIO(nil)
	if code := Run(context.Background(), []string{"log", id, "--state", state}, ios); code != 0 {
		t.Fatalf("log exit %d\n%s", code, errOut)
	}
	got := normalizeLog(out.String())
	golden := filepath.Join("testdata", "golden", "decision_log_demo.md")
	if *update {
		if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (go test -run %s -update writes it)", err, t.Name())
	}
	if got != string(want) {
		t.Fatalf("decision log differs from %s (rerun with -update after checking):\n%s", golden, got)
	}
	for _, must := range []string{"### Round 3", "| addressed |", "commit `SHORT`", "**two-stable** (exit 0)", "## Proof"} {
		if !strings.Contains(got, must) {
			t.Errorf("log lacks %q", must)
		}
	}
}

// TestPR_M5_LogOfAnUnknownRunIsUsage: a bad run id is one line, exit 2.
func TestPR_M5_LogOfAnUnknownRunIsUsage(t *testing.T) {
	ios, _, errOut := testIO(nil)
	if code := Run(context.Background(), []string{"log", "r-nope", "--state", t.TempDir()}, ios); code != 2 || !strings.Contains(errOut.String(), "no run") {
		t.Fatalf("want exit 2 naming the run, got %d: %s", code, errOut)
	}
}
