package agent

import (
	"fmt"
	"time"
)

// ProcessRecord says how a run that answers with something other than a
// status record (a review's findings array) ended: complete only for a
// normal exit 0, so that a crash or a stop that left no answer is told
// apart from an answer that could not be parsed.
func ProcessRecord(res CmdResult, budget time.Duration) StatusRecord {
	rec := StatusRecord{FilesChanged: []string{}}
	switch {
	case res.Flooded:
		return res.Record // FloodRecord
	case res.TimedOut:
		rec.Status, rec.Reason = StatusPartial, ReasonBudgetExceeded
		rec.Summary = fmt.Sprintf("stopped at the %s budget", budget)
	case res.ExitCode < 0:
		rec.Status, rec.Reason = StatusBlocked, "killed"
		rec.Summary = "ended by a signal"
	case res.ExitCode != 0:
		rec.Status, rec.Reason = StatusBlocked, "exit-code"
		rec.Summary = fmt.Sprintf("exited with code %d", res.ExitCode)
	default:
		rec.Status = StatusComplete
		rec.Summary = "review finished"
	}
	return rec
}

// RedactRecord keeps secrets an agent echoed out of its record, which is
// stored and may be posted (SEC-3).
func RedactRecord(r StatusRecord, secrets []string) StatusRecord {
	red := func(s string) string { return Redact(s, secrets...) }
	r.Summary, r.NextAction, r.Reason = red(r.Summary), red(r.NextAction), red(r.Reason)
	if r.Concerns != nil {
		cs := make([]string, len(r.Concerns))
		for i, c := range r.Concerns {
			cs[i] = red(c)
		}
		r.Concerns = cs
	}
	if r.FileReasons != nil {
		fr := make(map[string]string, len(r.FileReasons))
		for p, why := range r.FileReasons {
			fr[red(p)] = red(why)
		}
		r.FileReasons = fr
	}
	return r
}
