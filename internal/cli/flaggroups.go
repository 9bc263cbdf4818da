package cli

import (
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// flagGroups sort a command's many flags under headings in its help, as
// they are documented (docs/configuration.md): converge pr has some 70,
// and a reader looks for one concern at a time. Flags named here under
// no heading stay under "Flags:", first; the order is the help's.
var flagGroups = []struct {
	title string
	flags []string
}{
	{"Forge and credentials", []string{"api-url", "ca-file", "token", "app-id", "app-key", "app-installation", "allow-host-mismatch", "config"}},
	{"Agents", []string{"agent", "agent-cmd", "agent-env", "agent-models", "agent-retry-bound", "agent-timeout", "max-parallel-fixers",
		"judge-agent", "judge-agent-cmd", "no-agent-check", "unsafe-no-sandbox"}},
	{"Review", []string{"no-copilot", "expects-copilot", "review-agent", "review-agent-cmd", "review-angles", "review-escalation",
		"review-escalation-angles", "review-instructions", "review-memory", "review-models", "review-start-window", "review-wait",
		"trusted-bots", "fix-minor", "recap-interval", "proof"}},
	{"Build, tests and CI", []string{"test-cmd", "test-timeout", "allow-untested", "expects-github-checks", "ci-wait", "sync-base"}},
	{"Bounds", []string{"max-iterations", "max-wall-clock", "max-cost", "max-structural-rounds", "idle-timeout",
		"max-push-bytes", "max-push-files", "max-file-bytes", "diff-multiplier"}},
	{"Polls and faults", []string{"poll-min", "poll-max", "fault-budget", "forge-backoff", "forge-concurrency", "forge-timeout"}},
	{"The run", []string{"state", "json", "dry-run", "dispose-only", "fresh", "watch", "take-over", "keep"}},
	{"Engine (a fleet on Temporal)", []string{"engine", "temporal-address", "namespace", "task-queue"}},
}

// groupFlagHelp makes cmd's help list its flags under flagGroups'
// headings. own are cmd's own flags, listed first under "Flags:" whatever
// a group says of their name (serve's --watch is not pr's).
func groupFlagHelp(cmd *cobra.Command, own ...string) {
	const plain = "Flags:\n{{.LocalFlags.FlagUsages | trimTrailingWhitespaces}}"
	tmpl := cmd.UsageTemplate()
	if !strings.Contains(tmpl, plain) {
		return // a cobra whose template differs: its own list stays
	}
	if cmd.Annotations == nil {
		cmd.Annotations = map[string]string{}
	}
	cmd.Annotations[ownFlagsKey] = strings.Join(own, ",")
	cmd.SetUsageTemplate(strings.Replace(tmpl, plain, "{{groupedFlagUsages .}}", 1))
}

// ownFlagsKey annotates a command with its own flags (groupFlagHelp).
const ownFlagsKey = "converge-own-flags"

func init() { cobra.AddTemplateFunc("groupedFlagUsages", groupedFlagUsages) }

// groupedFlagUsages is c's local flags as cobra lists them, one list per
// heading: c's own and the ungrouped ones under "Flags:" first, then each
// group that has any of c's flags, and --help last.
func groupedFlagUsages(c *cobra.Command) string {
	group := map[string]int{}
	for i, g := range flagGroups {
		for _, name := range g.flags {
			group[name] = i + 1
		}
	}
	for _, name := range strings.Split(c.Annotations[ownFlagsKey], ",") {
		delete(group, name)
	}
	sets := make([]*pflag.FlagSet, len(flagGroups)+2)
	for i := range sets {
		sets[i] = pflag.NewFlagSet("", pflag.ContinueOnError)
	}
	help := len(sets) - 1
	c.LocalFlags().VisitAll(func(f *pflag.Flag) {
		if f.Name == "help" {
			sets[help].AddFlag(f)
			return
		}
		sets[group[f.Name]].AddFlag(f)
	})
	var parts []string
	for i, fs := range sets {
		if !fs.HasAvailableFlags() {
			continue
		}
		title := "Flags"
		switch {
		case i == help:
			title = "Help"
		case i > 0:
			title = flagGroups[i-1].title
		}
		parts = append(parts, title+":\n"+strings.TrimRight(fs.FlagUsages(), " \n"))
	}
	return strings.Join(parts, "\n\n")
}
