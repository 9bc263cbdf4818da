package cli

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/convergeloop/converge/internal/agent"
	"github.com/convergeloop/converge/internal/agent/backends"
	"github.com/convergeloop/converge/internal/cmdutil"
	"github.com/convergeloop/converge/internal/config"
	"github.com/convergeloop/converge/internal/exitcode"
	"github.com/convergeloop/converge/internal/forge"
	"github.com/convergeloop/converge/internal/repo"
	"github.com/convergeloop/converge/internal/text"
)

type doctorOptions struct {
	Workdir string
	Host    string
	// Forge is whose token to look for: GitHub's variables or GitLab's.
	Forge forge.Kind
	JSON  bool
	// Check makes one live request per backend (agent.Check).
	Check bool
	// Agents are the backends a run would use (--agent), beside those
	// CONVERGE_<NAME>_BIN or _MODEL configure.
	Agents []string
	// Set holds the agent settings given as flags (--agent-env, …).
	Set map[string]string
	// factory builds the agents (nil: the real one).
	factory *cmdutil.Factory
}

func newDoctorCmd(factory *cmdutil.Factory, runF func(*doctorOptions) error) *cobra.Command {
	ios := factory.IOStreams
	opts := &doctorOptions{factory: factory}
	cmd := &cobra.Command{
		Use: "doctor",
		Example: `  # the build, test and lint commands converge found here, and the agent CLIs it can drive
  converge doctor

  # ask Claude Code's model once, read-only, before a run
  converge doctor --agent claude --check`,
		Short: "Print the build, test and lint commands converge found in a repository, and why; and what it can run",
		Long: `Print what converge pr, loop and plan would use in this repository
(REPO-C1): the build, test and lint commands, each with the file and rule
that named it — AGENTS.md, CONTRIBUTING.md, a README code block under a
heading that names the kind, Makefile, justfile or Taskfile targets,
package.json scripts, or the ecosystem's standard command for a manifest
— and the test_cmd of .converge.yaml when it overrides them. Then git,
the agent CLIs converge can drive, and where the forge token would come
from (never the token). Nothing is written anywhere.

For each agent CLI (claude, codex, gemini, opencode): its program and
version, the model a run would use and where that comes from, where its
credential would come from (never its value) and the variables a run
passes it. --check makes one minimal read-only request per backend and
marks it usable only when its model answered, quoting the CLI otherwise.
The backends a run would use are those --agent names and those a
CONVERGE_<NAME>_BIN or _MODEL variable configures (a run's default agents,
suggest and command, are no CLI); doctor exits with the IF-1 code of the worst problem among
them, the forge token and git that would stop converge pr: 6 when no
forge token resolves or a CLI's credentials were refused, 2 when git or a
CLI is missing, broken or did not answer, 0 otherwise. A backend
nobody configured is only listed (--check asks every installed backend
when none is configured). A problem
doctor guesses from the outside (no credential it knows of) is dropped
when --check shows the model answered.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if runF != nil {
				return runF(opts)
			}
			return runDoctor(cmd.Context(), ios, opts)
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.Workdir, "workdir", ".", "the repository to inspect")
	f.StringVar(&opts.Host, "host", "", "the forge host whose token to look for (default: the forge's public host, github.com or gitlab.com)")
	f.Var(forgeFlag{&opts.Forge}, "forge", "the forge whose token to look for: github (GH_TOKEN, gh) or gitlab (GITLAB_TOKEN, GL_TOKEN)")
	f.BoolVar(&opts.JSON, "json", false, "print JSON")
	f.BoolVar(&opts.Check, "check", false, "make one minimal read-only request per agent CLI and say whether its model answered")
	f.StringArrayVar(&opts.Agents, "agent", nil, "a backend a run would use (repeatable): its problems decide the exit code")
	opts.Set = map[string]string{}
	for _, fd := range config.AgentFields() {
		f.Var(&cmdutil.FieldFlag{Field: fd, Values: opts.Set}, fd.Flag(), fd.Help)
	}
	return cmd
}

// doctorReport is what doctor found; its JSON is the --json output.
type doctorReport struct {
	Repository string        `json:"repository"`
	Git        string        `json:"git"` // "" when the directory is not in a git repository
	Commands   []doctorCmd   `json:"commands"`
	Agents     []doctorAgent `json:"agents"`
	Token      doctorFinding `json:"token"`
	GitVersion doctorFinding `json:"git_version"`
	// Sandbox is whether agents can run contained here (SEC-7).
	Sandbox  doctorFinding  `json:"sandbox"`
	Override *doctorFinding `json:"override,omitempty"`
	// ExitCode is doctor's: the IF-1 code of the worst problem of the
	// agents a run would use.
	ExitCode exitcode.Code `json:"exit_code"`
}

type doctorCmd struct {
	Kind    string `json:"kind"`
	Command string `json:"command"` // "" when none was found
	Why     string `json:"why"`
}

// doctorAgent is what doctor found of one agent CLI backend.
type doctorAgent struct {
	Name string `json:"name"`
	// Configured: --agent names it, or a CONVERGE_<NAME>_* variable
	// configures it. Used: a run would use it (configured, or installed
	// when none is configured): its problems decide the exit code.
	Configured bool `json:"configured"`
	// Installed is false when its program was not found and nothing
	// configures it: informational, no problem of any run.
	Installed bool   `json:"installed"`
	Used      bool   `json:"used"`
	Program   string `json:"program,omitempty"`
	// The backend's own description (agent.Describer), or what doctor
	// found without one; Problem also holds why it cannot be built.
	agent.Description
	// Usable, with --check: whether its model answered; Check is the
	// answer or the CLI's error, in one line.
	Usable *bool  `json:"usable,omitempty"`
	Check  string `json:"check,omitempty"`
	// Note is a problem Describe saw that the check proved wrong.
	Note string `json:"note,omitempty"`
	// Code is the IF-1 code of its problem (0: none).
	Code exitcode.Code `json:"exit_code"`
	// described: the backend described itself (agent.Describer).
	described bool
}

type doctorFinding struct {
	OK   bool   `json:"ok"`
	What string `json:"what"`
}

func runDoctor(ctx context.Context, ios *cmdutil.IOStreams, opts *doctorOptions) error {
	dir, err := filepath.Abs(opts.Workdir)
	if err != nil {
		return cmdutil.UsageErr("--workdir %s: %v", opts.Workdir, err)
	}
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return cmdutil.UsageErr("--workdir %s: not a directory", opts.Workdir)
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
		return cmdutil.UsageErr("%v", err)
	}
	if file != nil {
		ss, err := config.Resolve(config.PRFields(), config.Inputs{File: file, Getenv: ios.Getenv})
		if err != nil {
			return cmdutil.UsageErr("%v", err)
		}
		for _, s := range ss {
			if s.Key == "test_cmd" && s.Value != "" {
				rep.Override = &doctorFinding{OK: true, What: fmt.Sprintf("test_cmd %q from %s overrides the test command above", s.Value, s.Where)}
			}
		}
	}

	site, err := forgeOf(opts.Forge)
	if err != nil {
		return err
	}
	if opts.Host == "" {
		opts.Host = site.DefaultHost()
	}
	token, src, err := site.ResolveToken(opts.Host, "", ios.Getenv)
	if err != nil {
		rep.Token = doctorFinding{What: err.Error()}
	} else {
		rep.Token = doctorFinding{OK: true, What: fmt.Sprintf("%s: from %s", opts.Host, src)}
	}

	rep.Sandbox = sandboxFinding()
	ac, err := cmdutil.AgentSettings(ios, opts.Set, file)
	if err != nil {
		return err
	}
	ac.Secrets = repo.Secrets(token)
	if rep.Agents, err = doctorAgents(ctx, ios, opts, ac); err != nil {
		return err
	}
	var worst *doctorAgent
	for i, a := range rep.Agents {
		if a.Used && a.Code > rep.ExitCode {
			rep.ExitCode, worst = a.Code, &rep.Agents[i]
		}
	}
	var end error
	if worst != nil {
		// What the live check showed beats what doctor guessed.
		why := worst.Problem
		if worst.Usable != nil && !*worst.Usable || why == "" {
			why = worst.Check
		}
		end = &cmdutil.ExitErr{Code: rep.ExitCode, Err: fmt.Errorf("agent %s would stop a run: %s", worst.Name, text.OneLine(why))}
	}
	end = doctorWorst(&rep, end)

	if opts.JSON {
		if err := json.NewEncoder(ios.Out).Encode(rep); err != nil {
			return err
		}
		return end
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
	fmt.Fprintf(tw, "sandbox\t%s\n", rep.Sandbox.What)
	for _, a := range rep.Agents {
		writeDoctorAgent(tw, a)
	}
	fmt.Fprintf(tw, "token\t%s\n", rep.Token.What)
	if err := tw.Flush(); err != nil {
		return err
	}
	return end
}

// doctorAgents describes every backend, and with opts.Check checks those
// a run would use.
func doctorAgents(ctx context.Context, ios *cmdutil.IOStreams, opts *doctorOptions, ac cmdutil.AgentConfig) ([]doctorAgent, error) {
	for _, n := range opts.Agents {
		if !backends.Known(n) {
			return nil, cmdutil.UsageErr("doctor --agent %q: name one of %s", n, strings.Join(backends.Names(), ", "))
		}
	}
	b := cmdutil.NewAgentBuilder(opts.factory.OrDefault(ios), ac)
	var out []doctorAgent
	built := map[string]agent.Agent{}
	var describe []func() agent.Description // out[i]'s, nil when it has none
	anyConfigured := false
	for _, name := range backends.Names() {
		up := strings.ToUpper(name)
		bin, model := "CONVERGE_"+up+"_BIN", "CONVERGE_"+up+"_MODEL"
		a := doctorAgent{Name: name, Configured: slices.Contains(opts.Agents, name) || ios.Getenv(bin) != "" || ios.Getenv(model) != "", Installed: true}
		anyConfigured = anyConfigured || a.Configured
		ag, err := b.Backend(backends.Config{Name: name, Getenv: ios.Getenv})
		if err != nil {
			// Not found and not configured: simply not installed.
			a.Installed, a.Problem = a.Configured, err.Error()
			if a.Installed {
				a.Code = exitcode.Usage
			}
			out, describe = append(out, a), append(describe, nil)
			continue
		}
		built[name] = ag
		if p, ok := ag.(interface{ Binary() string }); ok {
			a.Program = p.Binary()
		}
		if d, ok := ag.(agent.Describer); ok {
			a.described = true
			describe = append(describe, func() agent.Description { return d.Describe(ctx) })
		} else {
			program := a.Program
			describe = append(describe, func() agent.Description { return describeFallback(ctx, ios, program, model, ac) })
		}
		out = append(out, a)
	}
	// A description runs the CLI's --version, and some CLIs take seconds
	// of CPU to answer it (Gemini CLI about five): all run at once.
	var wg sync.WaitGroup
	for i, f := range describe {
		if f == nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			out[i].Description = f()
		}()
	}
	wg.Wait()
	for i := range out {
		a := &out[i]
		if describe[i] == nil {
			continue
		}
		if a.Version == "" && a.Problem == "" {
			up := strings.ToUpper(a.Name)
			a.Problem = fmt.Sprintf("%s --version answered nothing: is %s the %s CLI? (set %s to its path)", cmp.Or(a.Program, a.Name), cmp.Or(a.Program, "it"), a.Name, "CONVERGE_"+up+"_BIN")
		}
		if a.Problem != "" {
			a.Code = exitcode.Usage
		}
	}
	env := ac.TaskEnv()
	for i := range out {
		a := &out[i]
		// A run uses a CLI backend only when told to (--agent claude):
		// the default agents are suggest and command. So only what is
		// configured decides the exit code, and --check asks what is
		// configured — every installed backend when nothing is.
		a.Used = a.Configured
		ag := built[a.Name]
		if !opts.Check || ag == nil || (anyConfigured && !a.Configured) {
			continue
		}
		res, err := agent.Check(ctx, ag, env, 0)
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		usable := err == nil
		a.Usable = &usable
		if err != nil {
			a.Check = text.OneLine(err.Error())
			code := exitcode.Usage
			if agent.KindOf(err) == agent.FailAuth {
				code = exitcode.Auth
			}
			a.Code = max(a.Code, code)
			continue
		}
		a.Check = fmt.Sprintf("the model answered %q in %s", text.Clip(res.Answer, 40), res.Duration.Round(100*time.Millisecond))
		if a.Problem != "" {
			// The model answered: what doctor guessed from the outside
			// (no credential it knows of: a keychain login, a helper)
			// is no problem.
			a.Note, a.Problem, a.Code = a.Problem, "", 0
		}
	}
	return out, nil
}

// describeFallback is what doctor finds of a backend that does not
// describe itself: the program's version, the model converge configures
// and the agent_env variables that are set.
func describeFallback(ctx context.Context, ios *cmdutil.IOStreams, program, modelVar string, ac cmdutil.AgentConfig) agent.Description {
	var d agent.Description
	if program != "" {
		d.Version = agent.CLIVersion(ctx, program, ac.TaskEnv())
	}
	d.Model, d.ModelFrom = ios.Getenv(modelVar), modelVar
	if d.Model == "" {
		d.ModelFrom = "the CLI's default"
	}
	// What agents get: the process's environment, never a secret's value.
	set := map[string]bool{}
	for _, kv := range agent.WithoutValues(os.Environ(), ac.Secrets) {
		if name, v, _ := strings.Cut(kv, "="); v != "" {
			set[name] = true
		}
	}
	for _, n := range ac.Env {
		if set[n] && !slices.Contains(agent.ForgeTokenNames, n) {
			d.PassEnv = append(d.PassEnv, n)
		}
	}
	return d
}

// writeDoctorAgent prints one backend: a line saying whether a run could
// use it, then what was found.
func writeDoctorAgent(tw io.Writer, a doctorAgent) {
	head := cmp.Or(a.Program, "(no program path)")
	switch {
	case !a.Installed:
		fmt.Fprintf(tw, "agent %s\tnot installed\t%s\n", a.Name, a.Problem)
		return
	case a.Problem != "" && a.Program == "":
		fmt.Fprintf(tw, "agent %s\tnot usable\t%s\n", a.Name, a.Problem)
		return
	case a.Problem != "":
		head = "not usable\t" + a.Problem
	case a.Usable != nil && !*a.Usable:
		head = "not usable\t" + a.Check
	}
	fmt.Fprintf(tw, "agent %s\t%s\n", a.Name, head)
	if a.Problem != "" || (a.Usable != nil && !*a.Usable) {
		fmt.Fprintf(tw, "  program\t%s\n", a.Program)
	}
	fmt.Fprintf(tw, "  version\t%s\n", orNone(a.Version))
	model := cmp.Or(a.Model, "(the CLI's default)")
	if a.ModelFrom != "" && a.Model != "" {
		model += " (from " + a.ModelFrom + ")"
	}
	fmt.Fprintf(tw, "  model\t%s\n", model)
	cred := a.Credential
	switch {
	case cred != "":
	case a.described:
		cred = "(none found; see docs/agents.md, \"Setting up each agent's provider\")"
	default:
		cred = "(this backend does not say)"
	}
	fmt.Fprintf(tw, "  credential\t%s\n", cred)
	fmt.Fprintf(tw, "  passes\t%s\n", clipList(a.PassEnv, 12))
	if a.Note != "" {
		fmt.Fprintf(tw, "  note\t%s (yet the model answered)\n", a.Note)
	}
	switch {
	case a.Usable == nil:
	case *a.Usable:
		fmt.Fprintf(tw, "  check\tusable: %s\n", a.Check)
	default:
		fmt.Fprintf(tw, "  check\tnot usable: %s\n", a.Check)
	}
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}
