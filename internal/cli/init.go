package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/convergeloop/converge/internal/cmdutil"
	"github.com/convergeloop/converge/internal/repo"
	"github.com/convergeloop/converge/internal/scaffold"
)

type initOptions struct {
	Dir    string
	Force  bool
	Action bool
	Sync   bool
}

func newInitCmd(factory *cmdutil.Factory, runF func(*initOptions) error) *cobra.Command {
	ios := factory.IOStreams
	opts := &initOptions{}
	cmd := &cobra.Command{
		Use: "init [--dir DIR] [--force] [--action] [--sync]",
		Example: `  # .converge.yaml with every default, and review instructions
  converge init

  # also the GitHub Action workflow
  converge init --action

  # after editing .github/review-instructions.md: update Copilot's copy
  converge init --sync`,
		Short: "Write .converge.yaml, review instructions and (--action) the GitHub Action workflow",
		Long: `Set converge up in a repository (the root of the git repository in the
current directory, or --dir DIR):

  .converge.yaml                    every setting with its default, commented out
  .github/review-instructions.md    a skeleton, where there are none yet
  .github/copilot-instructions.md   a marked section holding a copy of the
                                    review instructions (the rest of the file is kept)
  .github/workflows/converge.yml    with --action: the GitHub Action's workflow

An existing file is never replaced unless --force (exit 2 otherwise, and
nothing is written); existing review instructions are always kept, and
are what is copied. --sync only updates Copilot's copy of the review
instructions, after they were edited.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if runF != nil {
				return runF(opts)
			}
			return runInit(cmd.Context(), ios, opts)
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.Dir, "dir", "", "the repository to set up (default: the root of the git repository in the current directory)")
	f.BoolVar(&opts.Force, "force", false, "replace existing files (review instructions are kept)")
	f.BoolVar(&opts.Action, "action", false, "also write the GitHub Action workflow "+scaffold.WorkflowFile)
	f.BoolVar(&opts.Sync, "sync", false, "only copy the review instructions into Copilot's instructions")
	return cmd
}

func runInit(ctx context.Context, ios *cmdutil.IOStreams, opts *initOptions) error {
	if opts.Sync && (opts.Force || opts.Action) {
		return cmdutil.UsageErr("--sync writes only Copilot's copy of the review instructions; give it without --force and --action")
	}
	dir := opts.Dir
	if dir == "" {
		wd, err := os.Getwd()
		if err != nil {
			return err
		}
		dir = wd
		if top, err := (&repo.Git{Dir: wd}).Run(ctx, "rev-parse", "--show-toplevel"); err == nil {
			dir = strings.TrimSpace(top)
		}
	}
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return cmdutil.UsageErr("--dir %s: not a directory; name the repository to set up", dir)
	}
	changes, err := scaffold.Init(scaffold.Options{Dir: dir, Force: opts.Force, Action: opts.Action, Sync: opts.Sync})
	if err != nil {
		var ee *scaffold.ExistsError
		var ie *scaffold.InputError
		switch {
		case errors.As(err, &ee):
			return cmdutil.UsageErr("init: %v; nothing was written", err)
		case errors.As(err, &ie):
			return cmdutil.UsageErr("init: %v", err)
		}
		return fmt.Errorf("init: %w", err)
	}
	for _, c := range changes {
		fmt.Fprintf(ios.Out, "%-9s %s\n", c.What, c.Path)
	}
	return nil
}
