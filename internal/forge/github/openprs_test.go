package github

import (
	"context"
	"testing"

	"github.com/convergeloop/converge/internal/emulator/fakehub"
)

// TestOpenPRsListsEveryPage: a watched repository's open PRs (converge
// serve) are listed whole, past the first page, with author and labels.
func TestOpenPRsListsEveryPage(t *testing.T) {
	ctx := context.Background()
	hub, err := fakehub.New(fakehub.Options{StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if err := hub.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer hub.Close()
	if err := hub.CreateRepo("o", "r", map[string]string{"a.txt": "a\n"}, fakehub.RepoOptions{}); err != nil {
		t.Fatal(err)
	}
	const n = 103
	for i := range n {
		if _, err := hub.CreatePR("o", "r", fakehub.NewPR{Head: "b" + string(rune('a'+i%26)) + string(rune('a'+i/26)), Title: "t", Files: map[string]string{"a.txt": "b\n"}}); err != nil {
			t.Fatal(err)
		}
	}
	c, err := New(Options{APIURL: hub.APIURL(), Token: hub.Tokens().Author, HTTPClient: hub.HTTPClient()})
	if err != nil {
		t.Fatal(err)
	}
	prs, err := c.OpenPRs(ctx, "o", "r")
	if err != nil {
		t.Fatal(err)
	}
	if len(prs) != n {
		t.Fatalf("%d open PRs listed, want %d", len(prs), n)
	}
	if prs[0].Author != fakehub.LoginAuthor || prs[0].URL == "" || prs[0].Number == 0 {
		t.Fatalf("first PR %+v", prs[0])
	}
}
