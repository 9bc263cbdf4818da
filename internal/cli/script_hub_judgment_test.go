package cli

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/go-github/v93/github"
	"github.com/rogpeppe/go-internal/testscript"
)

// Hub subcommands of the judgment scenarios (PR-S4, PR-S7, PR-S8,
// PR-S10, PR-T3), each acting as another actor or checking at the forge:
//
//	hub label LABEL               the PR carries LABEL (! : it does not)
//	hub comment-every D N BODY    the reviewer comments on the PR N times, D apart
//	                              (the first at once): activity over time (PR-T3)
//	hub pushed-heads-lack PATH SUBSTR  no commit pushed to the PR's head branch since
//	                              hub start holds SUBSTR in PATH (PR-S8: no push undid it)
func init() {
	hubCmds["pushed-heads-lack"] = func(ts *testscript.TestScript, neg bool, h *scriptHub, args []string) {
		if neg || len(args) != 2 {
			ts.Fatalf("usage: hub pushed-heads-lack PATH SUBSTR")
		}
		ctx := context.Background()
		g, head := h.cloneAtHead(ts)
		revs, err := g.Run(ctx, "rev-list", h.head+".."+head)
		ts.Check(err)
		if strings.TrimSpace(revs) == "" {
			ts.Fatalf("nothing was pushed since hub start")
		}
		for _, sha := range strings.Fields(revs) {
			out, err := g.Run(ctx, "show", sha+":"+args[0])
			ts.Check(err)
			if strings.Contains(out, args[1]) {
				ts.Fatalf("%s at pushed commit %s holds %q", args[0], sha, args[1])
			}
		}
	}
	hubCmds["label"] = func(ts *testscript.TestScript, neg bool, h *scriptHub, args []string) {
		if len(args) != 1 {
			ts.Fatalf("usage: hub label LABEL")
		}
		labels := h.observe(ts).Labels
		has := slices.Contains(labels, args[0])
		switch {
		case neg && has:
			ts.Fatalf("the PR carries %s: %v", args[0], labels)
		case !neg && !has:
			ts.Fatalf("the PR lacks %s: %v", args[0], labels)
		}
	}
	hubCmds["comment-every"] = func(ts *testscript.TestScript, neg bool, h *scriptHub, args []string) {
		if len(args) < 3 || neg {
			ts.Fatalf("usage: hub comment-every D N BODY")
		}
		every, err := time.ParseDuration(args[0])
		ts.Check(err)
		n, err := strconv.Atoi(args[1])
		ts.Check(err)
		c, err := ghREST(h.hub, h.hub.Tokens().Reviewer)
		ts.Check(err)
		// Time passing is what the idle clock measures: the comments are
		// spaced by a ticker, not by a guess at how long anything takes.
		tick := time.NewTicker(every)
		defer tick.Stop()
		for i := range n {
			if i > 0 {
				<-tick.C
			}
			body := fmt.Sprintf("%s (%d of %d)", strings.Join(args[2:], " "), i+1, n)
			_, _, err := c.Issues.CreateComment(context.Background(), h.demo.Owner, h.demo.Repo, h.demo.Number, github.IssueCommentRequest{Body: body})
			ts.Check(err)
		}
	}
}
