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

// Hub subcommands of the hostile-agent scenarios: what the repository and
// converge's replies show after a misbehaving agent.
//
//	hub head-lacks PATH           the PR's head has no file PATH
//	hub no-reply-says WORD        no reply of converge in any thread holds WORD
//	                              (case-insensitive)
func init() {
	hubCmds["head-lacks"] = func(ts *testscript.TestScript, neg bool, h *scriptHub, args []string) {
		if len(args) != 1 {
			ts.Fatalf("usage: hub head-lacks PATH")
		}
		has := h.headHasFile(ts, args[0])
		switch {
		case !neg && has:
			ts.Fatalf("%s exists at the PR's head", args[0])
		case neg && !has:
			ts.Fatalf("%s does not exist at the PR's head", args[0])
		}
	}
	hubCmds["no-reply-says"] = func(ts *testscript.TestScript, neg bool, h *scriptHub, args []string) {
		if len(args) != 1 {
			ts.Fatalf("usage: hub no-reply-says WORD")
		}
		word := strings.ToLower(args[0])
		var saying []string
		for _, th := range h.observe(ts).Threads {
			for _, c := range th.Comments {
				if strings.EqualFold(c.Author, fakehub.LoginAuthor) && strings.Contains(strings.ToLower(c.Body), word) {
					saying = append(saying, fmt.Sprintf("%s: %q", th.ID, c.Body))
				}
			}
		}
		switch {
		case !neg && len(saying) > 0:
			ts.Fatalf("converge replied %q: %s", args[0], strings.Join(saying, "; "))
		case neg && len(saying) == 0:
			ts.Fatalf("no reply of converge holds %q", args[0])
		}
	}
}

// headHasFile says whether the PR's head has a file at path.
func (h *scriptHub) headHasFile(ts *testscript.TestScript, path string) bool {
	ctx := context.Background()
	pr, err := h.hub.PR(h.demo.Owner, h.demo.Repo, h.demo.Number)
	ts.Check(err)
	h.clones++
	env := append(os.Environ(), h.hub.GitEnv(h.hub.Tokens().Reviewer)...)
	g, err := repo.Clone(ctx, h.hub.GitURL(h.demo.Owner, h.demo.Repo), ts.MkAbs(fmt.Sprintf("hub-clone-%d", h.clones)), env)
	ts.Check(err)
	_, err = g.Run(ctx, "fetch", "origin", "+refs/heads/*:refs/remotes/origin/*")
	ts.Check(err)
	ls, err := g.Run(ctx, "ls-tree", "--name-only", pr.HeadSHA, "--", path)
	ts.Check(err)
	return strings.TrimSpace(ls) != ""
}
