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

	"github.com/convergeloop/converge/internal/agent/backends"
	"github.com/convergeloop/converge/internal/config"
	ghclient "github.com/convergeloop/converge/internal/forge/github"
	"github.com/convergeloop/converge/internal/repo"
)

type doctorOptions struct {
	Workdir string
	Host    string
	JSON    bool
}

func newDoctorCmd(ios *IOStreams) *cobra.Command {
	opts := &doctorOptions{}
	cmd := &cobra.Command{
		Use:   "doctor",
		Short: "Print the build, test and lint commands converge found in a repository, and why; and what it can run",
		Long: `Print what converge pr, loop and plan would use in this repository
(REPO-C1): the build, test and lint commands, each with the file and rule
that named it — AGENTS.md, CONTRIBUTING.md, a README code block under a
heading that names the kind, Makefile, justfile or Taskfile targets,
package.json scripts, or the ecosystem's standard command for a manifest
— and the test_cmd of .converge.yaml when it overrides them. Then git,
the agent CLIs converge can drive, and where the forge token would come
from (never the token). Nothing is written anywhere.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runDoctor(cmd.Context(), ios, opts)
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.Workdir, "workdir", ".", "the repository to inspect")
	f.StringVar(&opts.Host, "host", "github.com", "the forge host whose token to look for")
	f.BoolVar(&opts.JSON, "json", false, "print JSON")
	return cmd
}

// doctorReport is what doctor found; its JSON is the --json output.
type doctorReport struct {
	Repository string         `json:"repository"`
	Git        string         `json:"git"` // "" when the directory is not in a git repository
	Commands   []doctorCmd    `json:"commands"`
	Agents     []doctorAgent  `json:"agents"`
	Token      doctorFinding  `json:"token"`
	GitVersion doctorFinding  `json:"git_version"`
	Override   *doctorFinding `json:"override,omitempty"`
}

type doctorCmd struct {
	Kind    string `json:"kind"`
	Command string `json:"command"` // "" when none was found
	Why     string `json:"why"`
}

type doctorAgent struct {
	Name    string `json:"name"`
	Program string `json:"program,omitempty"`
	Problem string `json:"problem,omitempty"`
}

type doctorFinding struct {
	OK   bool   `json:"ok"`
	What string `json:"what"`
}

func runDoctor(ctx context.Context, ios *IOStreams, opts *doctorOptions) error {
	dir, err := filepath.Abs(opts.Workdir)
	if err != nil {
		return usageErr("--workdir %s: %v", opts.Workdir, err)
	}
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return usageErr("--workdir %s: not a directory", opts.Workdir)
	}
	rep := doctorReport{Repository: dir}
	g := &repo.Git{Dir: dir}
	if v, err := g.Run(ctx, "version"); err == nil {
		rep.GitVersion = doctorFinding{OK: true, What: strings.TrimSpace(v)}
	} else {
		rep.GitVersion = doctorFinding{What: "git not found: install git; converge works on git repositories"}
	}
	if top, err := g.Run(ctx, "rev-parse", "--show-toplevel"); err == nil {
		rep.Repository = strings.TrimSpace(top)
		rep.Git = rep.Repository
	}

	cmds := repo.Discover(rep.Repository)
	for _, k := range []struct {
		kind string
		argv []string
	}{{repo.KindTest, cmds.Test}, {repo.KindBuild, cmds.Build}, {repo.KindLint, cmds.Lint}} {
		rep.Commands = append(rep.Commands, doctorCmd{Kind: k.kind, Command: strings.Join(k.argv, " "), Why: cmds.Why[k.kind]})
	}
	// The repository's own settings win over discovery (PR-M4, REPO-C1).
	cfgPath := filepath.Join(rep.Repository, config.FileName)
	file, err := config.ReadFile(config.PRFields(), cfgPath)
	if err != nil {
		return usageErr("%v", err)
	}
	if file != nil {
		ss, err := config.Resolve(config.PRFields(), config.Inputs{File: file, Getenv: ios.Getenv})
		if err != nil {
			return usageErr("%v", err)
		}
		for _, s := range ss {
			if s.Key == "test_cmd" && s.Value != "" {
				rep.Override = &doctorFinding{OK: true, What: fmt.Sprintf("test_cmd %q from %s overrides the test command above", s.Value, s.Where)}
			}
		}
	}

	for _, name := range backends.Names() {
		a := doctorAgent{Name: name}
		ag, err := backends.New(backends.Config{Name: name, Getenv: ios.Getenv})
		if err != nil {
			a.Problem = err.Error()
		} else if b, ok := ag.(interface{ Binary() string }); ok {
			a.Program = b.Binary()
		}
		rep.Agents = append(rep.Agents, a)
	}

	if _, src, err := ghclient.ResolveToken(opts.Host, "", ios.Getenv, ghclient.GHAuthToken); err != nil {
		rep.Token = doctorFinding{What: err.Error()}
	} else {
		rep.Token = doctorFinding{OK: true, What: fmt.Sprintf("%s: from %s", opts.Host, src)}
	}

	if opts.JSON {
		return json.NewEncoder(ios.Out).Encode(rep)
	}
	tw := tabwriter.NewWriter(ios.Out, 0, 4, 2, ' ', 0)
	where := rep.Repository
	if rep.Git == "" {
		where += " (not a git repository)"
	}
	fmt.Fprintf(tw, "repository\t%s\n", where)
	for _, c := range rep.Commands {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", c.Kind, orNone(c.Command), c.Why)
	}
	if rep.Override != nil {
		fmt.Fprintf(tw, "override\t%s\n", rep.Override.What)
	}
	fmt.Fprintf(tw, "git\t%s\n", rep.GitVersion.What)
	for _, a := range rep.Agents {
		if a.Problem != "" {
			fmt.Fprintf(tw, "agent %s\tnot usable\t%s\n", a.Name, a.Problem)
			continue
		}
		fmt.Fprintf(tw, "agent %s\t%s\n", a.Name, a.Program)
	}
	fmt.Fprintf(tw, "token\t%s\n", rep.Token.What)
	return tw.Flush()
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}
