package cli

import (
	"strconv"
	"strings"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/convergeloop/converge/internal/emulator/fakehub"
)

// Hub subcommands of the GitHub App scenarios (SEC-5, PR-T10), each
// checking at the forge:
//
//	hub app SLUG                  register a GitHub App whose key the hub writes; sets APP_ID,
//	                              APP_KEY (the PEM file) and APP_LOGIN (its bot, REST spelling)
//	hub check-runs NAME N [CONCLUSION]  the PR's head has exactly N check runs named NAME,
//	                              all by the App, the last completed with CONCLUSION
//	hub check-run-summary NAME WORD…    the head's NAME check run's output summary holds every WORD
//	hub statuses NAME N [STATE]   the PR's head has exactly N commit statuses with context NAME,
//	                              the last in STATE
//	hub app-wrote                 the App wrote to the PR (a push, a reply, a label) and the
//	                              author's token wrote nothing
func init() {
	hubCmds["app"] = func(ts *testscript.TestScript, neg bool, h *scriptHub, args []string) {
		if len(args) != 1 || neg {
			ts.Fatalf("usage: hub app SLUG")
		}
		app, err := h.hub.CreateApp(args[0])
		ts.Check(err)
		h.app = &app
		ts.Setenv("APP_ID", strconv.FormatInt(app.ID, 10))
		ts.Setenv("APP_KEY", app.KeyFile)
		ts.Setenv("APP_LOGIN", app.Slug+"[bot]")
	}
	hubCmds["check-runs"] = func(ts *testscript.TestScript, neg bool, h *scriptHub, args []string) {
		if len(args) < 2 || len(args) > 3 || neg {
			ts.Fatalf("usage: hub check-runs NAME N [CONCLUSION]")
		}
		want, err := strconv.Atoi(args[1])
		ts.Check(err)
		runs := h.namedRuns(ts, args[0])
		if len(runs) != want {
			ts.Fatalf("the head has %d %s check run(s), want %d: %+v", len(runs), args[0], want, runs)
		}
		for _, r := range runs {
			if h.app == nil || r.AppID != h.app.ID {
				ts.Fatalf("check run %d is by %s, not the App", r.ID, r.App)
			}
		}
		if len(args) == 3 && len(runs) > 0 {
			last := runs[len(runs)-1]
			if last.Status != "completed" || last.Conclusion != args[2] {
				ts.Fatalf("the %s check run is %s/%s, want completed/%s", args[0], last.Status, last.Conclusion, args[2])
			}
		}
	}
	hubCmds["check-run-summary"] = func(ts *testscript.TestScript, neg bool, h *scriptHub, args []string) {
		if len(args) < 2 || neg {
			ts.Fatalf("usage: hub check-run-summary NAME WORD…")
		}
		runs := h.namedRuns(ts, args[0])
		if len(runs) == 0 {
			ts.Fatalf("the head has no %s check run", args[0])
		}
		s := runs[len(runs)-1].Summary
		for _, w := range args[1:] {
			if !strings.Contains(s, w) {
				ts.Fatalf("the %s check run's summary lacks %q:\n%s", args[0], w, s)
			}
		}
	}
	hubCmds["statuses"] = func(ts *testscript.TestScript, neg bool, h *scriptHub, args []string) {
		if len(args) < 2 || len(args) > 3 || neg {
			ts.Fatalf("usage: hub statuses NAME N [STATE]")
		}
		want, err := strconv.Atoi(args[1])
		ts.Check(err)
		head := h.observe(ts).HeadSHA
		all, err := h.hub.Statuses(h.demo.Owner, h.demo.Repo, head)
		ts.Check(err)
		var got []fakehub.StatusState
		for _, s := range all {
			if s.Context == args[0] {
				got = append(got, s)
			}
		}
		if len(got) != want {
			ts.Fatalf("the head has %d %s status(es), want %d: %+v", len(got), args[0], want, got)
		}
		if len(args) == 3 && len(got) > 0 && got[len(got)-1].State != args[2] {
			ts.Fatalf("the last %s status is %s, want %s", args[0], got[len(got)-1].State, args[2])
		}
	}
	hubCmds["app-wrote"] = func(ts *testscript.TestScript, neg bool, h *scriptHub, args []string) {
		if len(args) != 0 || neg || h.app == nil {
			ts.Fatalf("usage: hub app-wrote (after hub app)")
		}
		kinds := map[string]int{}
		for _, w := range h.hub.Writes() {
			switch {
			case strings.EqualFold(w.Actor, fakehub.LoginAuthor):
				ts.Fatalf("the author's token wrote %+v", w)
			case w.Actor == h.app.Slug+"[bot]":
				kinds[w.Surface]++
			}
		}
		if kinds["git"] == 0 || kinds["graphql"] == 0 || kinds["rest"] == 0 {
			ts.Fatalf("the App's writes by surface: %v; want pushes, mutations and REST writes", kinds)
		}
	}
}

// namedRuns are the check runs named name on the PR's head, oldest first.
func (h *scriptHub) namedRuns(ts *testscript.TestScript, name string) []fakehub.CheckRunState {
	head := h.observe(ts).HeadSHA
	all, err := h.hub.CheckRuns(h.demo.Owner, h.demo.Repo, head)
	ts.Check(err)
	var out []fakehub.CheckRunState
	for _, r := range all {
		if r.Name == name {
			out = append(out, r)
		}
	}
	return out
}
