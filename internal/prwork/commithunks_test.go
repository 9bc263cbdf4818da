package prwork

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/convergeloop/converge/internal/prloop"
	"github.com/convergeloop/converge/internal/repo"
)

// TestPR_S8_CommitHunksFromGit reads a real commit the way the workspace
// does after it commits.
func TestPR_S8_CommitHunksFromGit(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dir := t.TempDir()
	g := &repo.Git{Dir: dir, Env: []string{"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com", "GIT_CONFIG_GLOBAL=/dev/null"}}
	write := func(body string) {
		if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	run := func(args ...string) string {
		out, err := g.Run(ctx, args...)
		if err != nil {
			t.Fatalf("git %v: %v", args, err)
		}
		return strings.TrimSpace(out)
	}
	run("init", "-q")
	run("config", "diff.noprefix", "true") // the workspace sets its own prefixes
	write("package main\n\nfunc run() error {\n\treturn nil\n}\n")
	run("add", ".")
	run("commit", "-q", "-m", "one")
	write("package main\n\nfunc run() error {\n\treturn err\n}\n")
	run("commit", "-q", "-am", "two")
	hs, err := commitHunks(ctx, g, run("rev-parse", "HEAD"))
	if err != nil {
		t.Fatal(err)
	}
	want := []prloop.Hunk{{Path: "main.go", OldStart: 4, OldCount: 1, NewStart: 4, NewCount: 1, Removed: []string{"\treturn nil"}, Added: []string{"\treturn err"}}}
	if !reflect.DeepEqual(hs, want) {
		t.Fatalf("got %+v, want %+v", hs, want)
	}
}
