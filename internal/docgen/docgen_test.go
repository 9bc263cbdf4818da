package docgen_test

import (
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/convergeloop/converge/internal/cli"
	"github.com/convergeloop/converge/internal/cmdutil"
	"github.com/convergeloop/converge/internal/docgen"
)

func root() *cobra.Command {
	ios := &cmdutil.IOStreams{In: strings.NewReader(""), Out: &strings.Builder{}, ErrOut: &strings.Builder{}, Getenv: func(string) string { return "" }}
	return cli.NewRootCmd(cmdutil.NewFactory(ios))
}

// TestUX_DocsAreCurrent: the reference pages under docs/ are what the
// code generates (every command's help, the configuration fields); a
// change to a command, a flag or a setting without `make docs` fails here.
func TestUX_DocsAreCurrent(t *testing.T) {
	if stale := docgen.Stale("../../docs", docgen.Pages(root())); len(stale) > 0 {
		t.Fatalf("docs/ is stale: %s; run make docs and commit the pages", strings.Join(stale, ", "))
	}
}

// TestUX_EveryCommandHasExamples: every command a user runs shows how in
// its help (and so on its page).
func TestUX_EveryCommandHasExamples(t *testing.T) {
	var missing []string
	var visit func(c *cobra.Command)
	visit = func(c *cobra.Command) {
		if c.Hidden || c.Name() == "help" || c.Name() == "completion" {
			return
		}
		if c.HasParent() && strings.TrimSpace(c.Example) == "" {
			missing = append(missing, c.CommandPath())
		}
		for _, s := range c.Commands() {
			visit(s)
		}
	}
	visit(root())
	if len(missing) > 0 {
		t.Fatalf("commands without Examples in their help: %s", strings.Join(missing, ", "))
	}
}
