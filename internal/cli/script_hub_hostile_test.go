package cli

import (
	"fmt"
	"strings"

	"github.com/rogpeppe/go-internal/testscript"
)

// Hub subcommands of the hostile-agent scenarios: what the repository and
// converge's replies show after a misbehaving agent.
//
//	hub no-reply-says WORD        no reply of converge in any thread holds WORD
//	                              (case-insensitive)
func init() {
	hubCmds["no-reply-says"] = func(ts *testscript.TestScript, neg bool, h *scriptHub, args []string) {
		if len(args) != 1 {
			ts.Fatalf("usage: hub no-reply-says WORD")
		}
		checkNoReplySays(ts, neg, h, args[0])
	}
}

// checkNoReplySays: no reply of converge in any thread holds word (neg:
// one does).
func checkNoReplySays(ts *testscript.TestScript, neg bool, r forgeReader, word string) {
	lower := strings.ToLower(word)
	var saying []string
	for _, th := range r.observe(ts).Threads {
		for _, c := range th.Comments {
			if strings.EqualFold(c.Author, r.authorLogin()) && strings.Contains(strings.ToLower(c.Body), lower) {
				saying = append(saying, fmt.Sprintf("%s: %q", th.ID, c.Body))
			}
		}
	}
	switch {
	case !neg && len(saying) > 0:
		ts.Fatalf("converge replied %q: %s", word, strings.Join(saying, "; "))
	case neg && len(saying) == 0:
		ts.Fatalf("no reply of converge holds %q", word)
	}
}
