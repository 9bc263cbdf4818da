package fakehub

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func goTest(t *testing.T, files map[string]string) error {
	t.Helper()
	dir := t.TempDir()
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.CommandContext(t.Context(), "go", "test", "./...")
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Logf("go test:\n%s", out)
	}
	return err
}

// TestDemoSeed_SuggestionsKeepTestsGreen applies Copilot's scripted
// suggestions round by round, as converge would, through the hub: each
// review sees the current head, fixed findings are not found again, CI
// stays green, and the third review is clean.
func TestDemoSeed_SuggestionsKeepTestsGreen(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("go not on PATH")
	}
	h := newHub(t, Options{CopilotDelay: 10 * time.Millisecond})
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	info, err := SeedDemo(ctx, h)
	if err != nil {
		t.Fatal(err)
	}
	if info.PRURL != h.PRURL(DemoOwner, DemoRepo, info.Number) {
		t.Errorf("PRURL %s", info.PRURL)
	}
	p := h.prForTest(t, info.Owner, info.Repo, info.Number)
	events, stop := h.Subscribe()
	defer stop()
	files := DemoPRFiles()
	script := DemoScript()
	wantComments := []int{2, 1, 0}
	for round := range script.Rounds {
		st, _ := h.PR(info.Owner, info.Repo, info.Number)
		if c, err := h.WaitCI(ctx, info.Owner, info.Repo, st.HeadSHA); err != nil || c != "success" {
			t.Fatalf("round %d: CI on %s: %q %v", round, short(st.HeadSHA), c, err)
		}
		threadsBefore := st.Threads
		requestCopilot(t, h, p)
		waitFor(t, events, 20*time.Second, func(ev Event) bool { return ev.Kind == "copilot_finished" })
		st, _ = h.PR(info.Owner, info.Repo, info.Number)
		if got := st.Threads - threadsBefore; got != wantComments[round] {
			t.Fatalf("round %d: %d new threads, want %d", round, got, wantComments[round])
		}
		h.mu.Lock()
		body := p.reviews[len(p.reviews)-1].body
		h.mu.Unlock()
		if round == 2 && !strings.Contains(body, "generated no new comments") {
			t.Fatalf("round 3 review: %q", body)
		}
		if round == 2 {
			break
		}
		content := files["summary.go"]
		for _, f := range script.Rounds[round].Findings {
			var ok bool
			if content, ok = ApplySuggestion(content, f); !ok {
				t.Fatalf("round %d: anchor %q not found", round, f.Anchor)
			}
			if _, still := ApplySuggestion(content, f); still {
				t.Fatalf("round %d: anchor %q survives its own fix", round, f.Anchor)
			}
		}
		files["summary.go"] = content
		if err := goTest(t, mergeFiles(DemoBaseFiles(), files)); err != nil {
			t.Fatalf("round %d: go test after applying suggestions: %v", round, err)
		}
		if _, err := h.PushFiles(info.Owner, info.Repo, DemoBranch, map[string]string{"summary.go": content}, "Apply Copilot suggestions"); err != nil {
			t.Fatal(err)
		}
	}
	// The fixed code really is fixed.
	for _, want := range []string{"return 0, ErrEmpty", "i+n <= len(xs)", "parse score"} {
		if !strings.Contains(files["summary.go"], want) {
			t.Errorf("fixed summary.go lacks %q", want)
		}
	}
}

func mergeFiles(ms ...map[string]string) map[string]string {
	out := map[string]string{}
	for _, m := range ms {
		for k, v := range m {
			out[k] = v
		}
	}
	return out
}

var _ = context.Background
