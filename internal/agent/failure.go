package agent

import (
	"errors"
	"fmt"
	"strings"

	"github.com/convergeloop/converge/internal/text"
)

// FailureOf tells whether a fix run that returned (r, err) happened by the
// protocol or could not run (AG-T4): an error from Run, output without a
// valid status record (a crash or a non-zero exit without one included),
// a run stopped at its budget before printing one, or one stopped for
// flooding its output (ReasonOutputFlood). Anything else — a
// valid record of any status — is nil: the record is the agent's answer.
// name is the backend's Name(); the stderr tail is redacted again, as the
// failure is printed and stored.
func FailureOf(name string, r Result, err error) *RunFailure {
	var what string
	var cli *CLIError
	switch {
	case errors.As(err, &cli):
		what = cli.Error()
	case err != nil:
		what = strings.Join(strings.Fields(err.Error()), " ")
	case r.Record.Reason == ReasonOutputFlood:
		// Its last line is a piece of the flood, no clue.
		what = r.Record.Summary
	case r.Record.Reason == ReasonUnparseable, r.Record.Reason == ReasonBudgetExceeded:
		what = r.Record.Summary
		if what == "" {
			what = r.Record.Reason
		}
		if last := LastLine(r.Output); last != "" {
			// What the model said last, refusal or garbage, is the
			// user's best clue (AG-T3).
			what += fmt.Sprintf("; its last line: %q", last)
		}
	default:
		return nil
	}
	return &RunFailure{Agent: name, What: what, Stderr: Redact(tailLines(r.Stderr, 20)), CLI: cli}
}

// tailLines is the last n lines of s.
func tailLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// LastLine is the last non-empty line of s, one line, clipped to 300
// bytes and redacted: the quote of what an agent said last.
func LastLine(s string) string {
	return text.Clip(Redact(lastLines(s, 1)), 300)
}
