package cli

import (
	"context"
	"regexp"
	"strings"
	"testing"

	"github.com/convergeloop/converge/internal/cmdutil"
	"github.com/spf13/pflag"
)

// TestUX_PRHelpListsItsFlagsByConcern: converge pr's some 70 flags are
// listed under headings (forge, agents, review, tests, bounds, polls,
// the run, the engine), each flag once, none dropped, and every flag of
// pr and serve has a heading: a new flag without one fails here rather
// than join an unsorted list.
func TestUX_PRHelpListsItsFlagsByConcern(t *testing.T) {
	for _, name := range []string{"pr", "serve"} {
		ios, out, _ := testIO(nil)
		if code := Run(context.Background(), []string{name, "--help"}, ios); code != 0 {
			t.Fatalf("%s --help: exit %d", name, code)
		}
		help := out.String()
		for _, g := range flagGroups {
			if !strings.Contains(help, "\n"+g.title+":\n") {
				t.Errorf("%s --help has no %q heading", name, g.title)
			}
		}
		cmd, _, err := NewRootCmd(cmdutil.NewFactory(ios)).Find([]string{name})
		if err != nil {
			t.Fatal(err)
		}
		own := map[string]bool{"help": true}
		for _, n := range strings.Split(cmd.Annotations[ownFlagsKey], ",") {
			own[n] = true
		}
		grouped := map[string]bool{}
		for _, g := range flagGroups {
			for _, f := range g.flags {
				grouped[f] = true
			}
		}
		cmd.LocalFlags().VisitAll(func(f *pflag.Flag) {
			if f.Hidden {
				return
			}
			if n := len(regexp.MustCompile(`(?m)^\s+(-\w, )?--`+regexp.QuoteMeta(f.Name)+`\b[ =]`).FindAllString(help, -1)); n != 1 {
				t.Errorf("%s --help lists --%s %d times, want once", name, f.Name, n)
			}
			if !own[f.Name] && !grouped[f.Name] {
				t.Errorf("%s: --%s has no heading in flagGroups", name, f.Name)
			}
		})
	}
}
