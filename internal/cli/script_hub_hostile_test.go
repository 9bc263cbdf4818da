package cli

import (
	"fmt"
	"strings"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/convergeloop/converge/internal/forge/fakehub"
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
