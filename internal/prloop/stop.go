package prloop

import (
	"strings"

	"github.com/convergeloop/converge/internal/forge"
)

// StopCommand is the comment that stops a run from the PR (PR-G5).
const StopCommand = "/converge stop"

// humanStop is PR-G5's stop from the pull request: the converge:stop
// label, or a `/converge stop` comment posted since the run started, each
// counted only from a trusted author (SEC-1). A label whose author the
// forge cannot tell (no issue events) counts: only triage and above can
// label on GitHub, and a stop is the safe direction. An untrusted stop is
// ignored and said so.
func humanStop(s State, o Observation, c Config) (stop bool, why string) {
	pr := o.PR
	if hasLabel(pr, LabelStop) {
		switch by := o.StopLabelBy; {
		case by == "":
			return true, "the " + LabelStop + " label is on the pull request; remove it to run converge again"
		case trusted(by, o, c):
			return true, "@" + by + " put the " + LabelStop + " label on the pull request; remove it to run converge again"
		default:
			why = "the " + LabelStop + " label by @" + by + " is ignored: not a trusted author (SEC-1)"
		}
	}
	for _, ic := range pr.IssueComments {
		if !isStopComment(ic.Body) || ic.CreatedAt.Before(s.StartedAt) {
			continue
		}
		if trusted(ic.Author, o, c) {
			return true, "@" + ic.Author + " commented " + StopCommand
		}
		why = StopCommand + " by @" + ic.Author + " is ignored: not a trusted author (SEC-1)"
	}
	return false, why
}

// isStopComment: the comment's first line is the stop command.
func isStopComment(body string) bool {
	first, _, _ := strings.Cut(strings.TrimSpace(body), "\n")
	return strings.EqualFold(strings.TrimSpace(first), StopCommand)
}

// stopLabelBy is who last put the stop label on, from the PR's events.
func stopLabelBy(evs []forge.Event) string {
	by := ""
	for _, e := range evs {
		if e.Event == "labeled" && strings.EqualFold(e.Label, LabelStop) {
			by = e.Actor
		}
	}
	return by
}
