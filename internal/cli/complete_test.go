package cli

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/convergeloop/converge/internal/cmdutil"
	"github.com/convergeloop/converge/internal/store"
)

// complete runs `converge __complete ARGS` (what the completion scripts
// cobra generates call) and returns the completions it printed.
func complete(t *testing.T, args ...string) []string {
	t.Helper()
	var out strings.Builder
	ios := &cmdutil.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &strings.Builder{}, Getenv: func(string) string { return "" }}
	if code := Run(context.Background(), append([]string{"__complete"}, args...), ios); code != 0 {
		t.Fatalf("__complete %v: exit %d", args, code)
	}
	var words []string
	for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		if l != "" && !strings.HasPrefix(l, ":") {
			words = append(words, l)
		}
	}
	return words
}

// TestUX_CompletionCompletesValuesAndRunIDs: flags that take one of a few
// words complete them (a PR's fixer may be suggest, a loop's not), and the
// commands that name a run complete the state store's run ids.
func TestUX_CompletionCompletesValuesAndRunIDs(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"pr", "--agent", ""}, "suggest command claude codex gemini opencode"},
		{[]string{"loop", "--agent", ""}, "command claude codex gemini opencode"},
		{[]string{"pr", "--review-agent", ""}, "command claude codex gemini opencode"},
		{[]string{"demo", "--forge", ""}, "github gitlab"},
		{[]string{"status", "--engine", ""}, "local temporal"},
	} {
		if got := strings.Join(complete(t, c.args...), " "); got != c.want {
			t.Errorf("converge %s: completes %q, want %q", strings.Join(c.args, " "), got, c.want)
		}
	}

	dir := t.TempDir()
	db, err := store.Open(context.Background(), filepath.Join(dir, "converge.db"))
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"r-20261207-aaaaaa", "r-20261207-bbbbbb"} {
		if err := db.CreateRun(context.Background(), store.Run{ID: id, Kind: "pr", Target: "https://github.com/acme/widget/pull/7", Status: "running"}); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()
	for _, args := range [][]string{
		{"log", "--state", dir, ""},
		{"proof", "--state", dir, ""},
		{"stop", "--state", dir, ""},
		{"status", "--state", dir, "--follow", ""},
	} {
		got := complete(t, args...)
		joined := strings.Join(got, "\n")
		if len(got) != 2 || !strings.Contains(joined, "r-20261207-aaaaaa\thttps://github.com/acme/widget/pull/7 running") || !strings.Contains(joined, "r-20261207-bbbbbb") {
			t.Errorf("converge %s: completes %q, want both run ids with their target and status", strings.Join(args, " "), got)
		}
	}
	if got := complete(t, "log", "--state", t.TempDir(), ""); len(got) != 0 {
		t.Errorf("a state directory without a store completes %q", got)
	}
}
