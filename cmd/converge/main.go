// Command converge drives AI coding agents until a pull request is
// review-clean and the forge itself proves it.
package main

import (
	"os"

	"github.com/convergeloop/converge/internal/cli"
)

func main() { os.Exit(cli.Main()) }
