package cli

import (
	"github.com/rogpeppe/go-internal/testscript"

	"github.com/convergeloop/converge/internal/emulator/fakehub"
)

// The hub subcommands of the terminal scenarios (UX-1):
//
//	hub second-pr   opens a second PR on the demo repository, from its own
//	                branch with the demo's changes and Copilot script, and
//	                sets PR2_URL
func init() {
	hubCmds["second-pr"] = func(ts *testscript.TestScript, neg bool, h *scriptHub, args []string) {
		if neg || len(args) != 0 {
			ts.Fatalf("usage: hub second-pr")
		}
		n, err := h.hub.CreatePR(fakehub.DemoOwner, fakehub.DemoRepo, fakehub.NewPR{
			Head: "summary-stats-2", Title: "Add summary statistics, again", Author: fakehub.LoginAuthor,
			Files: fakehub.DemoPRFiles(), Message: "Add summary statistics",
		})
		ts.Check(err)
		ts.Check(h.hub.SetCopilotScript(fakehub.DemoOwner, fakehub.DemoRepo, n, fakehub.DemoScript()))
		ts.Setenv("PR2_URL", h.hub.PRURL(fakehub.DemoOwner, fakehub.DemoRepo, n))
	}
}
