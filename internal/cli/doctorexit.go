package cli

import (
	"fmt"

	"github.com/convergeloop/converge/internal/cmdutil"
	"github.com/convergeloop/converge/internal/exitcode"
	"github.com/convergeloop/converge/internal/text"
)

// doctorWorst weighs the forge token and git beside the agents' problem
// (agentEnd, nil: none): converge pr stops at once without a token (IF-1:
// 6, as its own pre-flight exits) or without git (2), so doctor's exit
// code is the worst of them, and its one error line names that problem.
func doctorWorst(rep *doctorReport, agentEnd error) error {
	end := agentEnd
	worse := func(code exitcode.Code, err error) {
		if code > rep.ExitCode {
			rep.ExitCode, end = code, &cmdutil.ExitErr{Code: code, Err: err}
		}
	}
	if !rep.Token.OK {
		worse(exitcode.Auth, fmt.Errorf("no forge token would stop converge pr: %s", text.OneLine(rep.Token.What)))
	}
	if !rep.GitVersion.OK {
		worse(exitcode.Usage, fmt.Errorf("%s", rep.GitVersion.What))
	}
	return end
}
