package cli

import (
	"context"
	"strings"

	"github.com/rogpeppe/go-internal/testscript"
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
		checkNeverAddressed(ts, h, args[0])
	}
	hubCmds["head-lacks"] = func(ts *testscript.TestScript, neg bool, h *scriptHub, args []string) {
		if len(args) != 1 || neg {
			ts.Fatalf("usage: hub head-lacks PATH")
		}
		checkHeadLacks(ts, h, args[0])
	}
	hubCmds["head-diff-has"] = func(ts *testscript.TestScript, neg bool, h *scriptHub, args []string) {
		if len(args) != 1 || neg {
			ts.Fatalf("usage: hub head-diff-has PATH")
		}
		checkHeadDiffHas(ts, h, args[0])
	}
}

// checkNeverAddressed: no reply of converge in the thread whose first
// comment holds substr says "Addressed", and the thread is open.
func checkNeverAddressed(ts *testscript.TestScript, r forgeReader, substr string) {
	for _, th := range r.observe(ts).Threads {
		if len(th.Comments) == 0 || !strings.Contains(th.Comments[0].Body, substr) {
			continue
		}
		for _, c := range th.Comments[1:] {
			if strings.EqualFold(c.Author, r.authorLogin()) && strings.Contains(c.Body, "Addressed") {
				ts.Fatalf("converge answered %s (%q) %q", th.ID, substr, c.Body)
			}
		}
		if th.IsResolved {
			ts.Fatalf("thread %s (%q) is resolved, its finding unfixed", th.ID, substr)
		}
		return
	}
	ts.Fatalf("no thread starts with %q", substr)
}

// checkHeadLacks: the PR's head has no file path.
func checkHeadLacks(ts *testscript.TestScript, r forgeReader, path string) {
	if out := gitAtHead(ts, r, "ls-tree", "--name-only", "HEAD_SHA", "--", path); strings.TrimSpace(out) != "" {
		ts.Fatalf("the head has %s", path)
	}
}

// checkHeadDiffHas: the PR's head still differs from its base in path.
func checkHeadDiffHas(ts *testscript.TestScript, r forgeReader, path string) {
	out := gitAtHead(ts, r, "diff", "--name-only", "origin/main...HEAD_SHA", "--", path)
	if strings.TrimSpace(out) == "" {
		ts.Fatalf("the PR's head no longer differs from its base in %s", path)
	}
}

// gitAtHead runs git in a fresh clone with the reviewer's token, HEAD_SHA
// in args standing for the PR's head.
func gitAtHead(ts *testscript.TestScript, r forgeReader, args ...string) string {
	g, head := r.cloneAtHead(ts)
	for i, a := range args {
		args[i] = strings.ReplaceAll(a, "HEAD_SHA", head)
	}
	out, err := g.Run(context.Background(), args...)
	ts.Check(err)
	return out
}
