package cli

import (
	"context"
	"fmt"
	"slices"

	"github.com/spf13/cobra"

	"github.com/convergeloop/converge/internal/cmdutil"
	"github.com/convergeloop/converge/internal/forge/provider"
	"github.com/convergeloop/converge/internal/store"
)

// Shell completion (`converge completion bash|zsh|fish|powershell`, which
// cobra adds): the flags that take one of a few words complete them, and
// the arguments and flags that name a run complete the run ids of the
// state store, newest first, each with its target and status.

// agentBackends are the agent CLIs converge drives; fixers of a PR may
// also be suggest (the reviewer's suggestions, applied).
var agentBackends = []string{"command", "claude", "codex", "gemini", "opencode"}

// flagWords are the words of a flag, by its name, on every command that
// has it; agent flags depend on the command (agentWords).
var flagWords = map[string][]string{
	"forge":           provider.Names(),
	"engine":          {engineLocal, engineTemporal},
	"scale":           {"small", "full"},
	"copilot-profile": {"fast", "real"},
}

// agentWords are what an agent flag of cmd takes: a PR's fixer may be
// suggest; doctor's --agent names the CLIs only.
func agentWords(cmd *cobra.Command, flag string) []string {
	switch {
	case flag == "judge": // converge loop's judge reads the packet on stdin
		return agentBackends[:1]
	case cmd.Name() == "doctor":
		return agentBackends[1:]
	case flag == "agent" && (cmd.Name() == "pr" || cmd.Name() == "serve"):
		return append([]string{"suggest"}, agentBackends...)
	}
	return agentBackends
}

// runCommands name a run by its id: as their argument, or (status) with
// --follow.
var runCommands = map[string]string{"log": "", "proof": "", "stop": "", "status": "follow"}

// completeValues installs the completions on c and every command under it.
func completeValues(c *cobra.Command, f *cmdutil.Factory) {
	for name, words := range flagWords {
		if c.LocalFlags().Lookup(name) != nil {
			_ = c.RegisterFlagCompletionFunc(name, fixedWords(words))
		}
	}
	for _, name := range []string{"agent", "review-agent", "judge-agent", "judge"} {
		if c.LocalFlags().Lookup(name) != nil {
			_ = c.RegisterFlagCompletionFunc(name, fixedWords(agentWords(c, name)))
		}
	}
	if flag, ok := runCommands[c.Name()]; ok && c.HasParent() && !c.Parent().HasParent() {
		if flag == "" {
			c.ValidArgsFunction = func(cmd *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
				if len(args) > 0 {
					return nil, cobra.ShellCompDirectiveNoFileComp
				}
				return runIDs(cmd, f), cobra.ShellCompDirectiveNoFileComp
			}
		} else {
			_ = c.RegisterFlagCompletionFunc(flag, func(cmd *cobra.Command, _ []string, _ string) ([]string, cobra.ShellCompDirective) {
				return runIDs(cmd, f), cobra.ShellCompDirectiveNoFileComp
			})
		}
	}
	for _, sub := range c.Commands() {
		completeValues(sub, f)
	}
}

func fixedWords(words []string) func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
	words = slices.Clone(words)
	return func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return words, cobra.ShellCompDirectiveNoFileComp
	}
}

// runIDs are the newest runs of the state store cmd's --state names, as
// completions ("ID\tTARGET STATUS"); none when it has none, or on the
// fleet, whose runs are workflows on the cluster.
func runIDs(cmd *cobra.Command, f *cmdutil.Factory) []string {
	if e, _ := cmd.Flags().GetString("engine"); e == engineTemporal {
		return nil
	}
	ctx := cmd.Context()
	if ctx == nil {
		ctx = context.Background()
	}
	dir, _ := cmd.Flags().GetString("state")
	db, err := f.OpenExistingStore(ctx, dir, "")
	if err != nil {
		return nil
	}
	defer db.Close()
	runs, err := db.ListRuns(ctx, store.ListOptions{Limit: 50})
	if err != nil {
		return nil
	}
	out := make([]string, 0, len(runs))
	for _, r := range runs {
		out = append(out, fmt.Sprintf("%s\t%s %s", r.ID, r.Target, r.Status))
	}
	return out
}
