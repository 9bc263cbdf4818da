package cli

import (
	"strconv"
	"strings"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/convergeloop/converge/internal/emulator/fakehub"
	"github.com/convergeloop/converge/internal/repo"
)

// hub subcommands of the memory and fix-caused scenarios:
//
//	hub copilot-add N PATH ANCHOR BODY-FILE [SUGGESTION-FILE]
//	                              Copilot's Nth review (1-based) also comments on the first line of
//	                              PATH holding ANCHOR, with the script's BODY-FILE (and a suggestion)
//	hub copilot-reraise           Copilot raises again, as a new thread, each earlier finding of its
//	                              own whose lines are unchanged, answered or not (GitHub's behaviour)
//	hub reraise-answered SUBSTR WORD…  Copilot's threads starting with SUBSTR: the first holds
//	                              converge's deferred or escalated reply; each later one is resolved
//	                              after converge's reply, which links the first thread and holds
//	                              every WORD
//	hub loop-commits N            the PR's branch holds exactly N commits with converge's round trailer
//	hub last-reply SUBSTR WORD    converge's last reply in the thread starting with SUBSTR holds WORD
//	                              (! : it replied there, without WORD)
func init() {
	hubCmds["last-reply"] = func(ts *testscript.TestScript, neg bool, h *scriptHub, args []string) {
		if len(args) != 2 {
			ts.Fatalf("usage: hub last-reply SUBSTR WORD")
		}
		for _, th := range h.observe(ts).Threads {
			if len(th.Comments) == 0 || !strings.Contains(th.Comments[0].Body, args[0]) {
				continue
			}
			last := ""
			for _, c := range th.Comments[1:] {
				if strings.EqualFold(c.Author, fakehub.LoginAuthor) && strings.Contains(c.Body, "converge:reply") {
					last = c.Body
				}
			}
			switch has := strings.Contains(last, args[1]); {
			case last == "":
				ts.Fatalf("converge did not reply in %s", th.ID)
			case neg && has:
				ts.Fatalf("converge's reply in %s holds %q:\n%s", th.ID, args[1], last)
			case !neg && !has:
				ts.Fatalf("converge's reply in %s lacks %q:\n%s", th.ID, args[1], last)
			}
			return
		}
		ts.Fatalf("no thread starts with %q", args[0])
	}
	hubCmds["copilot-add"] = func(ts *testscript.TestScript, neg bool, h *scriptHub, args []string) {
		if neg || len(args) < 4 || len(args) > 5 {
			ts.Fatalf("usage: hub copilot-add N PATH ANCHOR BODY-FILE [SUGGESTION-FILE]")
		}
		n, err := strconv.Atoi(args[0])
		ts.Check(err)
		f := fakehub.Finding{Path: args[1], Anchor: args[2], Body: strings.TrimRight(ts.ReadFile(args[3]), "\n")}
		if len(args) == 5 {
			f.Suggestion = ts.ReadFile(args[4])
		}
		sc := h.copilotScript()
		for len(sc.Rounds) < n {
			sc.Rounds = append(sc.Rounds, fakehub.CopilotRound{})
		}
		sc.Rounds[n-1].Findings = append(sc.Rounds[n-1].Findings, f)
		ts.Check(h.hub.SetCopilotScript(h.demo.Owner, h.demo.Repo, h.demo.Number, *sc))
	}
	hubCmds["copilot-reraise"] = func(ts *testscript.TestScript, neg bool, h *scriptHub, args []string) {
		if neg || len(args) != 0 {
			ts.Fatalf("usage: hub copilot-reraise")
		}
		sc := h.copilotScript()
		sc.ReRaise = true
		ts.Check(h.hub.SetCopilotScript(h.demo.Owner, h.demo.Repo, h.demo.Number, *sc))
	}
	hubCmds["reraise-answered"] = func(ts *testscript.TestScript, neg bool, h *scriptHub, args []string) {
		if neg || len(args) < 1 {
			ts.Fatalf("usage: hub reraise-answered SUBSTR WORD…")
		}
		h.reraiseAnswered(ts, args[0], args[1:])
	}
	hubCmds["loop-commits"] = func(ts *testscript.TestScript, neg bool, h *scriptHub, args []string) {
		if neg || len(args) != 1 {
			ts.Fatalf("usage: hub loop-commits N")
		}
		want, err := strconv.Atoi(args[0])
		ts.Check(err)
		got := 0
		for _, c := range h.observe(ts).Commits {
			if repo.HasTrailer(c.Message, "Converge-Round") {
				got++
			}
		}
		if got != want {
			ts.Fatalf("the branch holds %d commit(s) of converge's, want %d", got, want)
		}
	}
}

// copilotScript is Copilot's script as the scenario changes it, the
// demo's to start with.
func (h *scriptHub) copilotScript() *fakehub.CopilotScript {
	if h.script == nil {
		sc := fakehub.DemoScript()
		h.script = &sc
	}
	return h.script
}

// reraiseAnswered checks at the forge that every re-raise of the first
// Copilot thread starting with substr was answered from it (memory): a
// reply by converge that links the first thread and holds every word,
// then the resolve; the first thread still holds converge's decision.
func (h *scriptHub) reraiseAnswered(ts *testscript.TestScript, substr string, words []string) {
	var first string
	raised := 0
	for _, th := range h.observe(ts).Threads {
		if len(th.Comments) == 0 || !strings.Contains(th.Comments[0].Body, substr) || !strings.Contains(strings.ToLower(th.Comments[0].Author), "copilot") {
			continue
		}
		last := ""
		for _, c := range th.Comments[1:] {
			if strings.EqualFold(c.Author, fakehub.LoginAuthor) && strings.Contains(c.Body, "converge:reply") {
				last = c.Body
			}
		}
		if first == "" {
			first = th.Comments[0].URL
			if !strings.Contains(last, "disposition=deferred") && !strings.Contains(last, "disposition=escalated") {
				ts.Fatalf("the first thread %s holds no decision of converge's: %q", th.ID, last)
			}
			if first == "" {
				ts.Fatalf("the first thread %s has no URL", th.ID)
			}
			continue
		}
		raised++
		if !th.IsResolved {
			ts.Fatalf("the re-raised thread %s is not resolved", th.ID)
		}
		if last == "" {
			ts.Fatalf("the re-raised thread %s was resolved without converge's reply", th.ID)
		}
		for _, w := range append([]string{"(" + first + ")", "disposition=settled"}, words...) {
			if !strings.Contains(last, w) {
				ts.Fatalf("converge's answer in %s lacks %q:\n%s", th.ID, w, last)
			}
		}
		h.replyBeforeResolve(ts)
	}
	if raised == 0 {
		ts.Fatalf("Copilot raised %q only once", substr)
	}
}
