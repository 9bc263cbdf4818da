package cli

import (
	"strconv"
	"strings"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/convergeloop/converge/internal/emulator/fakehub"
	"github.com/convergeloop/converge/internal/text"
)

// The hub subcommands of the agent failure scenarios (AG-T4, PR-T8):
//
//	hub pr-comments SUBSTR N   converge's top-level comments on the PR that
//	                           hold SUBSTR number N
//	hub nowhere SECRET…        no comment (top-level or in a thread) and no
//	                           check or status text on the PR holds a SECRET
//	hub no-replies             converge wrote nothing in any thread
func init() {
	hubCmds["pr-comments"] = func(ts *testscript.TestScript, neg bool, h *scriptHub, args []string) {
		if neg || len(args) != 2 {
			ts.Fatalf("usage: hub pr-comments SUBSTR N")
		}
		want, err := strconv.Atoi(args[1])
		ts.Check(err)
		got := 0
		var seen []string
		for _, ic := range h.observe(ts).IssueComments {
			seen = append(seen, ic.Author+": "+text.Clip(text.OneLine(ic.Body), 300))
			if strings.EqualFold(ic.Author, fakehub.LoginAuthor) && strings.Contains(ic.Body, args[0]) {
				got++
			}
		}
		if got != want {
			ts.Fatalf("%d comment(s) by converge hold %q, want %d; the PR's comments:\n%s", got, args[0], want, strings.Join(seen, "\n"))
		}
	}
	hubCmds["nowhere"] = func(ts *testscript.TestScript, neg bool, h *scriptHub, args []string) {
		if neg || len(args) == 0 {
			ts.Fatalf("usage: hub nowhere SECRET…")
		}
		pr := h.observe(ts)
		var texts []string
		for _, ic := range pr.IssueComments {
			texts = append(texts, ic.Body)
		}
		for _, th := range pr.Threads {
			for _, c := range th.Comments {
				texts = append(texts, c.Body)
			}
		}
		for _, cx := range pr.Checks.Contexts {
			texts = append(texts, cx.Title, cx.Summary, cx.Text, cx.Description)
		}
		for _, s := range args {
			for _, t := range texts {
				if strings.Contains(t, s) {
					ts.Fatalf("the PR shows %q: %s", s, text.Clip(text.OneLine(t), 400))
				}
			}
		}
	}
	hubCmds["no-replies"] = func(ts *testscript.TestScript, neg bool, h *scriptHub, args []string) {
		if neg || len(args) != 0 {
			ts.Fatalf("usage: hub no-replies")
		}
		for _, th := range h.observe(ts).Threads {
			for _, c := range th.Comments {
				if strings.EqualFold(c.Author, fakehub.LoginAuthor) {
					ts.Fatalf("converge wrote in thread %s: %s", th.ID, text.Clip(text.OneLine(c.Body), 300))
				}
			}
		}
	}
}
