// Command docgen writes converge's reference pages under docs/ from the
// code (`make docs`): a page per command and the configuration reference.
package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/convergeloop/converge/internal/cli"
	"github.com/convergeloop/converge/internal/cmdutil"
	"github.com/convergeloop/converge/internal/docgen"
)

func main() {
	dir := "docs"
	if len(os.Args) > 1 {
		dir = os.Args[1]
	}
	ios := &cmdutil.IOStreams{In: strings.NewReader(""), Out: os.Stdout, ErrOut: os.Stderr, Getenv: func(string) string { return "" }}
	if err := docgen.Write(dir, docgen.Pages(cli.NewRootCmd(cmdutil.NewFactory(ios)))); err != nil {
		fmt.Fprintln(os.Stderr, "docgen:", err)
		os.Exit(1)
	}
}
