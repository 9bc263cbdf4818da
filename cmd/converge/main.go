// Command converge drives AI coding agents until a pull request is
// review-clean and the forge itself proves it.
//
// On Linux, cli.Main may re-exec this binary once at start-up, so that a
// token given in the environment or with --token is not left where agents
// running as the same user could read it in /proc (SEC-2). Each agent and
// build/test run it starts is this binary again too, as the run's
// supervisor (AG-K1, proc.Supervise).
package main

import (
	"os"

	"github.com/convergeloop/converge/internal/cli"
)

func main() { os.Exit(cli.Main()) }
