package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/convergeloop/converge/internal/cmdutil"
	"github.com/convergeloop/converge/internal/config"
	"github.com/convergeloop/converge/internal/repo"
)

type configOptions struct {
	File string
	JSON bool
	Set  map[string]string
}

func newConfigCmd(factory *cmdutil.Factory, runF func(*configOptions) error) *cobra.Command {
	ios := factory.IOStreams
	opts := &configOptions{Set: map[string]string{}}
	cmd := &cobra.Command{
		Use: "config",
		Example: `  # the effective settings in this repository, and where each came from
  converge config

  # what a variable and a flag change
  CONVERGE_MAX_ITERATIONS=8 converge config --review-wait 30m

  # another file, as JSON
  converge config --config ci/converge.yaml --json`,
		Short: "Print the effective configuration and where each value came from",
		Long: `Print every setting of the PR loop with its effective value and where it
came from (PR-M4): a flag, a CONVERGE_* variable, the config file (with
its line), or the default. The file is --config FILE, else the
.converge.yaml at the root of the git repository in the current directory
— the file converge pr reads from a PR's base branch once it is merged.
An unknown key or a bad value is an error naming the file and line.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if runF != nil {
				return runF(opts)
			}
			return runConfig(cmd.Context(), ios, opts)
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.File, "config", "", "config file (default: .converge.yaml at the repository root)")
	f.BoolVar(&opts.JSON, "json", false, "print JSON")
	for _, fd := range config.PRFields() {
		fl := f.VarPF(&cmdutil.FieldFlag{Field: fd, Values: opts.Set}, fd.Flag(), "", fd.Help)
		if fd.Kind == config.Bool {
			fl.NoOptDefVal = "true"
		}
	}
	return cmd
}

func runConfig(ctx context.Context, ios *cmdutil.IOStreams, opts *configOptions) error {
	if err := ios.CheckEnv(); err != nil {
		return err
	}
	fields := config.PRFields()
	path := opts.File
	if path == "" {
		dir, err := os.Getwd()
		if err != nil {
			return err
		}
		if top, err := (&repo.Git{Dir: dir}).Run(ctx, "rev-parse", "--show-toplevel"); err == nil {
			dir = strings.TrimSpace(top)
		}
		path = filepath.Join(dir, config.FileName)
	}
	file, err := config.ReadFile(fields, path)
	if err != nil {
		return cmdutil.UsageErr("%v", err)
	}
	if file == nil && opts.File != "" {
		return cmdutil.UsageErr("--config: no file %s", opts.File)
	}
	ss, err := config.Resolve(fields, config.Inputs{File: file, Getenv: ios.Getenv, Flags: opts.Set})
	if err != nil {
		return cmdutil.UsageErr("%v", err)
	}
	if opts.JSON {
		return json.NewEncoder(ios.Out).Encode(ss)
	}
	if file == nil {
		fmt.Fprintf(ios.Out, "no config file (%s)\n", path)
	}
	tw := tabwriter.NewWriter(ios.Out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "KEY\tVALUE\tFROM")
	for _, s := range ss {
		from := string(s.Source)
		if s.Where != "" {
			from += " " + s.Where
		}
		val := s.Value
		if val == "" {
			val = `""`
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", s.Key, val, from)
	}
	return tw.Flush()
}
