// Package exitcode is SPEC IF-1: converge's exit codes, the same for every
// command, what each means, and the one table that maps every terminal of
// every loop kind to its code. The CLI and the loops read it and keep no
// copy; TestIF1_ExitCodeIsTheTable fails when a loop kind declares a
// terminal the table does not name.
package exitcode

import "fmt"

// Code is an IF-1 exit code.
type Code int

// The exit codes of IF-1. They are typed: a code is chosen from this
// list, never written as a number, and becomes a process's exit status
// only at the edge (cli.Main).
const (
	OK          Code = 0 // success: two-stable, complete
	Error       Code = 1 // errored or failed: an unexpected error (state was saved first)
	Usage       Code = 2 // usage or bad input (flags, URL, config)
	Human       Code = 3 // handed to a human
	Bound       Code = 4 // a bound ran out
	Convergence Code = 5 // convergence-failure; loop stalled
	Auth        Code = 6 // authentication missing or rejected
	Unreachable Code = 7 // forge unreachable, or a fault that persisted
)

// meanings are the codes' rows of IF-1, in order.
var meanings = [...]string{
	OK:          "success",
	Error:       "errored: an unexpected error (state was saved first)",
	Usage:       "usage or bad input (flags, URL, config)",
	Human:       "handed to a human",
	Bound:       "a bound ran out",
	Convergence: "convergence failure",
	Auth:        "authentication missing or rejected",
	Unreachable: "forge unreachable, or a fault that persisted",
}

// Meaning says what c means, for help and status output; "" for a code
// outside IF-1.
func (c Code) Meaning() string {
	if c < 0 || int(c) >= len(meanings) {
		return ""
	}
	return meanings[c]
}

func (c Code) String() string {
	if m := c.Meaning(); m != "" {
		return fmt.Sprintf("%d (%s)", int(c), m)
	}
	return fmt.Sprintf("%d (not an IF-1 code)", int(c))
}

// Kind is a loop kind whose terminals end a command.
type Kind string

// The loop kinds, named after the packages that declare their terminals.
const (
	PR   Kind = "prloop"    // prloop.Reason
	Loop Kind = "checkloop" // checkloop.Status
	Plan Kind = "plan"      // plan.Status
)

// Table is IF-1's one table: every terminal of every loop kind and the
// code a run that ends there exits with. A terminal missing here is a
// test failure, never a silent exit 1.
var Table = map[Kind]map[string]Code{
	PR: {
		"two-stable": OK, "dry-run": OK, "disposed": OK,
		"errored":    Error,
		"handed-off": Human, "idle-timeout": Human, "human-push": Human, "all-conflicting": Human,
		"base-moved": Human, "pr-closed": Human, "blocked-no-independent-review": Human, "stopped-by-human": Human, "taken-over": Human,
		"cap-exhausted":       Bound,
		"convergence-failure": Convergence,
	},
	Loop: {
		"complete": OK,
		"failed":   Error,
		"blocked":  Human,
		"limited":  Bound,
		"stalled":  Convergence,
	},
	Plan: {
		"complete": OK,
		"failed":   Error,
		"blocked":  Human,
	},
}

// Of is the code a run of kind that ended at terminal exits with, and
// whether the table names that terminal.
func Of(kind Kind, terminal string) (Code, bool) {
	c, ok := Table[kind][terminal]
	return c, ok
}

// For is Of for a terminal the loop kind declares; a terminal the table
// does not name is an error (exit 1), which the table's test rules out.
func For(kind Kind, terminal string) Code {
	if c, ok := Of(kind, terminal); ok {
		return c
	}
	return Error
}

// ForReason is the exit code of a terminal of any loop kind (they agree
// where they share a name); an unknown one is an error.
func ForReason(reason string) Code {
	for _, k := range []Kind{PR, Loop, Plan} {
		if c, ok := Of(k, reason); ok {
			return c
		}
	}
	return Error
}

// Meaning says what code means; "" for a code outside the table.
func Meaning(code int) string { return Code(code).Meaning() }
