package cli

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/convergeloop/converge/internal/forge/fakehub"
	"github.com/convergeloop/converge/internal/repo"
)

// The hub subcommands of the test census scenarios (PR-V4):
//
//	hub every-head-has PATH SUBSTR  every commit on the PR's head branch from the
//	                              head at hub start to the head now holds SUBSTR in
//	                              PATH: no push of the run lost it
//	hub thread-not-addressed SUBSTR the thread whose first comment holds SUBSTR is
//	                              open, and no reply of converge in it says "Addressed"
func init() {
	hubCmds["every-head-has"] = func(ts *testscript.TestScript, neg bool, h *scriptHub, args []string) {
		if neg || len(args) != 2 {
			ts.Fatalf("usage: hub every-head-has PATH SUBSTR")
		}
		h.everyHeadHas(ts, args[0], args[1])
	}
	hubCmds["thread-not-addressed"] = func(ts *testscript.TestScript, neg bool, h *scriptHub, args []string) {
		if neg || len(args) != 1 {
			ts.Fatalf("usage: hub thread-not-addressed SUBSTR")
		}
		h.threadNotAddressed(ts, args[0])
	}
}

// everyHeadHas reads, from a fresh clone, every commit between the head
// at hub start and the head now.
func (h *scriptHub) everyHeadHas(ts *testscript.TestScript, path, substr string) {
	ctx := context.Background()
	pr, err := h.hub.PR(h.demo.Owner, h.demo.Repo, h.demo.Number)
	ts.Check(err)
	h.clones++
	env := append(os.Environ(), h.hub.GitEnv(h.hub.Tokens().Reviewer)...)
	g, err := repo.Clone(ctx, h.hub.GitURL(h.demo.Owner, h.demo.Repo), ts.MkAbs(fmt.Sprintf("hub-clone-%d", h.clones)), env)
	ts.Check(err)
	_, err = g.Run(ctx, "fetch", "origin", "+refs/heads/*:refs/remotes/origin/*")
	ts.Check(err)
	revs, err := g.Run(ctx, "rev-list", h.head+".."+pr.HeadSHA)
	ts.Check(err)
	n := 0
	for _, sha := range append(strings.Fields(revs), h.head) {
		out, err := g.Run(ctx, "show", sha+":"+path)
		if err != nil || !strings.Contains(out, substr) {
			ts.Fatalf("%s at %s does not hold %q", path, sha, substr)
		}
		n++
	}
	ts.Logf("%d commit(s) from %s to %s hold %q in %s", n, h.head[:7], pr.HeadSHA[:7], substr, path)
}

func (h *scriptHub) threadNotAddressed(ts *testscript.TestScript, substr string) {
	for _, th := range h.observe(ts).Threads {
		if len(th.Comments) == 0 || !strings.Contains(th.Comments[0].Body, substr) {
			continue
		}
		if th.IsResolved {
			ts.Fatalf("thread %s (%q) is resolved", th.ID, substr)
		}
		for _, c := range th.Comments[1:] {
			if strings.EqualFold(c.Author, fakehub.LoginAuthor) && strings.Contains(c.Body, "Addressed") {
				ts.Fatalf("converge answered thread %s (%q) Addressed: %q", th.ID, substr, c.Body)
			}
		}
		return
	}
	ts.Fatalf("no thread starts with %q", substr)
}
