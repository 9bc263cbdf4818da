package cli

import (
	"strconv"
	"strings"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/convergeloop/converge/internal/emulator/fakehub"
)

// The hub subcommands of the drifting-reviewer scenarios (PR-G2, PR-T5):
//
//	hub copilot-drift            Copilot on the demo PR becomes a reviewer that drifts:
//	                             12 reviews, each with one new finding and its suggestion
//	                             (driftScript), never a clean one
//	hub copilot-reviews N        the forge shows exactly N reviews by Copilot on the PR
func init() {
	hubCmds["copilot-drift"] = func(ts *testscript.TestScript, neg bool, h *scriptHub, args []string) {
		if neg || len(args) != 0 {
			ts.Fatalf("usage: hub copilot-drift")
		}
		sc := driftScript()
		h.script = &sc
		ts.Check(h.hub.SetCopilotScript(h.demo.Owner, h.demo.Repo, h.demo.Number, sc))
	}
	hubCmds["copilot-reviews"] = func(ts *testscript.TestScript, neg bool, h *scriptHub, args []string) {
		if neg || len(args) != 1 {
			ts.Fatalf("usage: hub copilot-reviews N")
		}
		want, err := strconv.Atoi(args[0])
		ts.Check(err)
		got := 0
		for _, r := range h.observe(ts).Reviews {
			switch r.Author {
			case fakehub.LoginCopilot, fakehub.LoginCopilotREST, fakehub.LoginCopilotShort:
				got++
			}
		}
		if got != want {
			ts.Fatalf("the forge shows %d review(s) by Copilot, want %d", got, want)
		}
	}
}

// driftScript is a review bot that never runs out of things to say, as
// the 156-round runaway of SPEC PR-G2's source did: 12 reviews of the
// demo PR, each with one new finding whose suggestion keeps the tests
// green. The odd rounds are structural (the demo's three real defects,
// then behaviour the PR never set out to change, the 9th undoing the 1st
// round's fix); the even ones are "nit:" doc comments that grow the code.
// No two structural rounds follow each other, so PR-T6's k consecutive
// structural rounds (default 3) never ends the run first: only the recap
// can stop it.
func driftScript() fakehub.CopilotScript {
	demo := fakehub.DemoScript()
	mean, bound, parse := demo.Rounds[0].Findings[0], demo.Rounds[0].Findings[1], demo.Rounds[1].Findings[0]
	nit := func(anchor, why string, lines ...string) fakehub.CopilotRound {
		return fakehub.CopilotRound{Findings: []fakehub.Finding{{Path: "summary.go", Anchor: anchor,
			Body: "nit: " + why, Suggestion: strings.Join(lines, "\n") + "\n"}}}
	}
	one := func(f fakehub.Finding) fakehub.CopilotRound {
		return fakehub.CopilotRound{Findings: []fakehub.Finding{f}}
	}
	return fakehub.CopilotScript{Rounds: []fakehub.CopilotRound{
		one(mean),
		nit("// ErrEmpty is returned when there is nothing to summarise.", "the doc comment could name who returns it.",
			"// ErrEmpty is returned by Mean, and by every summary of xs,", "// when there is nothing to summarise."),
		one(bound),
		nit("// MovingSum returns the sum of every window of n consecutive values.", "the doc comment could say which window comes first.",
			"// MovingSum returns the sum of every window of n consecutive values,", "// oldest window first; it returns nil when n is not positive."),
		one(parse),
		nit("// Describe summarises xs in one line.", "the doc comment could show the output.",
			"// Describe summarises xs in one line, for logs:", `// "n=3 mean=2.00", or "no values".`),
		one(fakehub.Finding{Path: "summary.go", Anchor: "if n <= 0 {", AnchorEnd: "return nil",
			Body:       "`MovingSum` returns nil for `n <= 0` but an empty result for a window longer than `xs`; callers comparing with nil get inconsistent results. Return an empty slice in both cases.",
			Suggestion: "\tif n <= 0 || n > len(xs) {\n\t\treturn []float64{}\n"}),
		nit("// ParseScores parses whitespace-separated numbers.", "the doc comment could show an input.",
			"// ParseScores parses whitespace-separated numbers, such as", `// "1 2.5 4", and returns the first parse error.`),
		one(fakehub.Finding{Path: "summary.go", Anchor: "return 0, ErrEmpty",
			Body:       "Returning 0 with `ErrEmpty` looks like a valid mean to callers that log the value before checking the error; return -1 so it cannot be mistaken for one.",
			Suggestion: "\t\treturn -1, ErrEmpty\n"}),
		nit("// Mean returns the arithmetic mean of xs, or ErrEmpty when xs is empty.", "the doc comment should say what comes with ErrEmpty.",
			"// Mean returns the arithmetic mean of xs, or -1 and ErrEmpty", "// when xs is empty."),
		one(fakehub.Finding{Path: "summary.go", Anchor: `return "no values"`,
			Body:       "`Describe` drops the error from `Mean`; callers cannot tell an empty input from a parse failure upstream. Include the error text.",
			Suggestion: "\t\treturn \"no values: \" + err.Error()\n"}),
		nit("// Describe summarises xs in one line, for logs:", "the doc comment could say it never fails.",
			"// Describe summarises xs in one line, for logs, and never fails:"),
	}}
}
