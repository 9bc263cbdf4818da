package prloop

import (
	"strings"

	"github.com/convergeloop/converge/internal/forge"
)

// CI states as the loop reads them from the head's rollup.
const (
	ciSuccess = "success"
	ciPending = "pending"
	ciFailure = "failure"
	ciNone    = "none" // no check or status other than converge's own
)

// ciState reads CI on the head from its contexts, not from the rollup's
// State: the rollup includes converge's own `converge` status, which is
// pending for as long as the loop runs and would never let CI settle
// (PR-T1(2) excludes it).
func ciState(ch forge.CheckRollup) string {
	seen, pending, failed := false, false, false
	for _, cx := range ch.Contexts {
		if strings.EqualFold(cx.Name, StatusContext) {
			continue
		}
		seen = true
		switch contextState(cx) {
		case ciPending:
			pending = true
		case ciFailure:
			failed = true
		}
	}
	switch {
	case failed:
		return ciFailure
	case pending:
		return ciPending
	case seen:
		return ciSuccess
	}
	return ciNone
}

// contextState maps one check run or commit status to success, pending or
// failure. Anything not known to pass is a failure, fail-closed.
func contextState(cx forge.CheckContext) string {
	if cx.IsStatus {
		switch strings.ToUpper(string(cx.Conclusion)) {
		case "SUCCESS":
			return ciSuccess
		case "PENDING", "EXPECTED", "":
			return ciPending
		}
		return ciFailure
	}
	switch strings.ToUpper(string(cx.Status)) {
	case "COMPLETED", "":
	default: // QUEUED, IN_PROGRESS, PENDING, WAITING, REQUESTED
		return ciPending
	}
	switch strings.ToUpper(string(cx.Conclusion)) {
	case "SUCCESS", "NEUTRAL", "SKIPPED":
		return ciSuccess
	case "":
		return ciPending
	}
	return ciFailure
}

// convergeStatus is the state converge's own verdict shows on the head
// (pending, success, failure, error, or "" when absent), so a verdict the
// forge already shows is not posted again.
func convergeStatus(ch forge.CheckRollup) forge.CommitStatusState {
	for _, cx := range ch.Contexts {
		if !strings.EqualFold(cx.Name, StatusContext) {
			continue
		}
		if !cx.IsStatus {
			switch strings.ToUpper(string(cx.Status)) {
			case "QUEUED", "IN_PROGRESS", "PENDING", "WAITING", "REQUESTED":
				return forge.StatusPending
			}
		}
		return forge.CommitStatusState(strings.ToLower(string(cx.Conclusion)))
	}
	return ""
}
