// Package exitcode is SPEC IF-1: converge's exit codes, the same for every
// command, what each means, and which terminal reasons end with it. It is
// the one table; the CLI and the loops read it and keep no copy.
package exitcode

// The exit codes of IF-1.
const (
	OK          = 0 // success: two-stable, complete
	Error       = 1 // errored or failed: an unexpected error (state was saved first)
	Usage       = 2 // usage or bad input (flags, URL, config)
	Human       = 3 // handed to a human
	Bound       = 4 // a bound ran out
	Convergence = 5 // convergence-failure; loop stalled
	Auth        = 6 // authentication missing or rejected
	Unreachable = 7 // forge unreachable, or a fault that persisted
)

// row is one line of the IF-1 table.
type row struct {
	code    int
	meaning string
	reasons []string // terminal reasons and loop outcomes that end with code
}

var table = []row{
	{OK, "success", []string{"two-stable", "complete", "dry-run", "disposed"}},
	{Error, "errored: an unexpected error (state was saved first)", []string{"errored", "failed"}},
	{Usage, "usage or bad input (flags, URL, config)", nil},
	{Human, "handed to a human", []string{"handed-off", "idle-timeout", "human-push", "all-conflicting",
		"base-moved", "pr-closed", "blocked-no-independent-review", "stopped-by-human", "blocked"}},
	{Bound, "a bound ran out", []string{"cap-exhausted", "limited"}},
	{Convergence, "convergence failure", []string{"convergence-failure", "stalled"}},
	{Auth, "authentication missing or rejected", nil},
	{Unreachable, "forge unreachable, or a fault that persisted", nil},
}

// ForReason is the exit code a run that ended for reason exits with; a
// reason the table does not name is an error.
func ForReason(reason string) int {
	for _, r := range table {
		for _, x := range r.reasons {
			if x == reason {
				return r.code
			}
		}
	}
	return Error
}

// Meaning says what code means, for help and status output; "" for a code
// outside the table.
func Meaning(code int) string {
	for _, r := range table {
		if r.code == code {
			return r.meaning
		}
	}
	return ""
}
