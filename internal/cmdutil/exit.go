package cmdutil

import (
	"errors"
	"fmt"

	"github.com/convergeloop/converge/internal/agent"
	"github.com/convergeloop/converge/internal/exitcode"
	"github.com/convergeloop/converge/internal/forge"
)

// ExitErr carries an exit code with the one-line message to print.
type ExitErr struct {
	Code exitcode.Code
	Err  error
}

func (e *ExitErr) Error() string { return e.Err.Error() }
func (e *ExitErr) Unwrap() error { return e.Err }

// UsageErr is bad input: exit 2.
func UsageErr(format string, args ...any) error {
	return &ExitErr{Code: exitcode.Usage, Err: fmt.Errorf(format, args...)}
}

// SilentExit ends with a code whose message was already printed.
type SilentExit struct{ Code exitcode.Code }

func (s *SilentExit) Error() string { return fmt.Sprintf("exit %d", int(s.Code)) }

// ExitCodeOf maps an error to its IF-1 exit code.
func ExitCodeOf(err error) exitcode.Code {
	if err == nil {
		return exitcode.OK
	}
	var se *SilentExit
	if errors.As(err, &se) {
		return se.Code
	}
	var ee *ExitErr
	if errors.As(err, &ee) {
		return ee.Code
	}
	if agent.KindOf(err) == agent.FailAuth {
		// An agent CLI's credentials, not the forge's (AG-T4).
		return exitcode.Auth
	}
	switch forge.KindOf(err) {
	case forge.KindAuth:
		return exitcode.Auth
	case forge.KindUnreachable, forge.KindRateLimited:
		return exitcode.Unreachable
	}
	return exitcode.Error
}
