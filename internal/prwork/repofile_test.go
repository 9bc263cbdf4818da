package prwork_test

import (
	"context"
	"testing"
	"time"

	"github.com/convergeloop/converge/internal/emulator/fakehub"
	"github.com/convergeloop/converge/internal/forge"
	"github.com/convergeloop/converge/internal/prwork"
	"github.com/convergeloop/converge/internal/repo"
	"github.com/convergeloop/converge/internal/testutil/hubtest"
)

// TestPR_M4_ReadBaseFileReadsTheBaseAsTheForgeHasItNow: the file comes
// from the PR's base branch, never its head; from the clone made for the
// read, and, once the clone is there, from a fetch, so a base that moved
// since is read as it is now; a file the base lacks is not found.
func TestPR_M4_ReadBaseFileReadsTheBaseAsTheForgeHasItNow(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	hub := hubtest.Start(t, 0)
	if err := hub.CreateRepo("acme", "cfg", map[string]string{".converge.yaml": "max_iterations: 3\n", "a.txt": "a\n"}, fakehub.RepoOptions{}); err != nil {
		t.Fatal(err)
	}
	n, err := hub.CreatePR("acme", "cfg", fakehub.NewPR{Head: "feature/x", Title: "x", Files: map[string]string{".converge.yaml": "max_iterations: 99\n"}})
	if err != nil {
		t.Fatal(err)
	}
	tok := hub.Tokens().Author
	ref, err := forge.ParsePRURL(hub.PRURL("acme", "cfg", n))
	if err != nil {
		t.Fatal(err)
	}
	pr, err := hubtest.Client(t, hub, tok).Observe(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	url := hub.GitURL("acme", "cfg")
	env := repo.AuthEnvFor(url, tok, hub.CAFile())
	read := func(path string) (string, bool) {
		t.Helper()
		data, found, err := prwork.ReadBaseFile(ctx, root, url, env, nil, pr, path)
		if err != nil {
			t.Fatal(err)
		}
		return string(data), found
	}
	if got, found := read(".converge.yaml"); !found || got != "max_iterations: 3\n" {
		t.Fatalf("from the clone made for it: %q %v, want the base's", got, found)
	}
	if _, err := hub.PushFiles("acme", "cfg", "main", map[string]string{".converge.yaml": "max_iterations: 5\n"}, "raise the bound"); err != nil {
		t.Fatal(err)
	}
	if got, found := read(".converge.yaml"); !found || got != "max_iterations: 5\n" {
		t.Fatalf("after the base moved: %q %v, want the base as it is now", got, found)
	}
	if got, found := read("missing.yaml"); found {
		t.Fatalf("a file the base lacks: %q found", got)
	}
}
