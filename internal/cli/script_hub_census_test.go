package cli

import (
	"context"
	"strings"

	"github.com/rogpeppe/go-internal/testscript"
)

// The hub subcommands of the test census scenarios (PR-V4):
//
//	hub every-head-has PATH SUBSTR  every commit on the PR's head branch from the
//	                              head at hub start to the head now holds SUBSTR in
//	                              PATH: no push of the run lost it
func init() {
	hubCmds["every-head-has"] = func(ts *testscript.TestScript, neg bool, h *scriptHub, args []string) {
		if neg || len(args) != 2 {
			ts.Fatalf("usage: hub every-head-has PATH SUBSTR")
		}
		everyHeadHas(ts, h, args[0], args[1])
	}
}

// everyHeadHas reads, from a fresh clone, every commit between the head
// at hub start and the head now.
func everyHeadHas(ts *testscript.TestScript, r forgeReader, path, substr string) {
	ctx := context.Background()
	g, head := r.cloneAtHead(ts)
	start := r.startHead()
	revs, err := g.Run(ctx, "rev-list", start+".."+head)
	ts.Check(err)
	n := 0
	for _, sha := range append(strings.Fields(revs), start) {
		out, err := g.Run(ctx, "show", sha+":"+path)
		if err != nil || !strings.Contains(out, substr) {
			ts.Fatalf("%s at %s does not hold %q", path, sha, substr)
		}
		n++
	}
	ts.Logf("%d commit(s) from %s to %s hold %q in %s", n, start[:7], head[:7], substr, path)
}
