package cli

import (
	"context"
	"strings"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/convergeloop/converge/internal/forge/fakehub"
)

// Hub subcommands of the verified-work scenarios (PR-V1, PR-V2, PR-V3),
// each checking at the forge:
//
//	hub never-addressed SUBSTR    no reply of converge in the thread whose first comment
//	                              holds SUBSTR says "Addressed", and the thread is open
//	hub head-lacks PATH           the PR's head has no file PATH
//	hub head-diff-has PATH        the PR's head still differs from its base in PATH
//	                              (the PR's own work is not undone)
func init() {
	hubCmds["never-addressed"] = func(ts *testscript.TestScript, neg bool, h *scriptHub, args []string) {
		if len(args) != 1 || neg {
			ts.Fatalf("usage: hub never-addressed SUBSTR")
		}
		for _, th := range h.observe(ts).Threads {
			if len(th.Comments) == 0 || !strings.Contains(th.Comments[0].Body, args[0]) {
				continue
			}
			for _, c := range th.Comments[1:] {
				if strings.EqualFold(c.Author, fakehub.LoginAuthor) && strings.Contains(c.Body, "Addressed") {
					ts.Fatalf("converge answered %s (%q) %q", th.ID, args[0], c.Body)
				}
			}
			if th.IsResolved {
				ts.Fatalf("thread %s (%q) is resolved, its finding unfixed", th.ID, args[0])
			}
			return
		}
		ts.Fatalf("no thread starts with %q", args[0])
	}
	hubCmds["head-lacks"] = func(ts *testscript.TestScript, neg bool, h *scriptHub, args []string) {
		if len(args) != 1 || neg {
			ts.Fatalf("usage: hub head-lacks PATH")
		}
		if out := h.gitAtHead(ts, "ls-tree", "--name-only", "HEAD_SHA", "--", args[0]); strings.TrimSpace(out) != "" {
			ts.Fatalf("the head has %s", args[0])
		}
	}
	hubCmds["head-diff-has"] = func(ts *testscript.TestScript, neg bool, h *scriptHub, args []string) {
		if len(args) != 1 || neg {
			ts.Fatalf("usage: hub head-diff-has PATH")
		}
		out := h.gitAtHead(ts, "diff", "--name-only", "origin/main...HEAD_SHA", "--", args[0])
		if strings.TrimSpace(out) == "" {
			ts.Fatalf("the PR's head no longer differs from its base in %s", args[0])
		}
	}
}

// gitAtHead runs git in a fresh clone with the reviewer's token, HEAD_SHA
// in args standing for the PR's head.
func (h *scriptHub) gitAtHead(ts *testscript.TestScript, args ...string) string {
	g, head := h.cloneAtHead(ts)
	for i, a := range args {
		args[i] = strings.ReplaceAll(a, "HEAD_SHA", head)
	}
	out, err := g.Run(context.Background(), args...)
	ts.Check(err)
	return out
}
