package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/convergeloop/converge/internal/agent"
	"github.com/convergeloop/converge/internal/agent/backends"
	"github.com/convergeloop/converge/internal/checkloop"
	"github.com/convergeloop/converge/internal/cmdutil"
	"github.com/convergeloop/converge/internal/exitcode"
	"github.com/convergeloop/converge/internal/forge"
	"github.com/convergeloop/converge/internal/forge/provider"
	"github.com/convergeloop/converge/internal/store"
)

// The flag tests build each command with a runF that keeps its parsed
// options, under the real root (whose flag errors are exit 2), with a
// factory whose makers fail the test: parsing a command line opens no
// store, builds no forge client or agent and runs nothing (IF-1).

// flagCase is one command line: its arguments after the command's name,
// the exit code (0: it parses and reaches runF), the words of a usage
// error, and what the options must hold.
type flagCase[O any] struct {
	args  []string
	code  exitcode.Code
	want  string
	check func(*O) bool
}

// noFactory is a factory whose makers fail t: a flag test runs nothing.
func noFactory(t *testing.T) *cmdutil.Factory {
	ios, _, _ := testIO(nil)
	fail := func(what string) error {
		t.Errorf("a flag test %s", what)
		return errors.New(what)
	}
	return &cmdutil.Factory{
		IOStreams: ios,
		OpenStore: func(context.Context, string, ...store.Option) (*store.Store, error) {
			return nil, fail("opened a state store")
		},
		OpenStoreFile: func(context.Context, string, ...store.Option) (*store.Store, error) {
			return nil, fail("opened a state store")
		},
		OpenExistingStore: func(context.Context, string, string) (*store.Store, error) {
			return nil, fail("opened a state store")
		},
		ForgeClient: func(provider.Provider, provider.ClientOptions) (provider.Client, error) {
			return nil, fail("built a forge client")
		},
		Agent: func(backends.Config, string, string, string) (agent.Agent, error) {
			return nil, fail("built an agent")
		},
	}
}

// parseFlags runs the command newCmd builds with args under the root and
// returns the options runF got (nil when it was not called), the exit
// code and the error.
func parseFlags[O any](t *testing.T, newCmd func(*cmdutil.Factory, func(*O) error) *cobra.Command, args []string) (*O, exitcode.Code, error) {
	t.Helper()
	var got *O
	root := newRoot()
	cmd := newCmd(noFactory(t), func(o *O) error {
		got = o
		return nil
	})
	root.AddCommand(cmd)
	argsAreUsage(root)
	root.SetArgs(append([]string{cmd.Name()}, args...))
	root.SetOut(io.Discard)
	root.SetErr(io.Discard)
	err := root.ExecuteContext(context.Background())
	return got, cmdutil.ExitCodeOf(err), err
}

func testFlags[O any](t *testing.T, newCmd func(*cmdutil.Factory, func(*O) error) *cobra.Command, cases []flagCase[O]) {
	t.Helper()
	for _, tc := range cases {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			got, code, err := parseFlags(t, newCmd, tc.args)
			if code != tc.code {
				t.Fatalf("exit %d (%v), want %d", code, err, tc.code)
			}
			if tc.code != exitcode.OK {
				if got != nil {
					t.Errorf("runF ran on a bad command line: %+v", *got)
				}
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Errorf("error %v, want one with %q", err, tc.want)
				}
				return
			}
			if got == nil {
				t.Fatal("runF was not called")
			}
			if tc.check != nil && !tc.check(got) {
				t.Errorf("options %s", fmt.Sprintf("%+v", *got))
			}
		})
	}
}

// usage is a usage error (exit 2) with these words.
func usage[O any](want string, args ...string) flagCase[O] {
	return flagCase[O]{args: args, code: exitcode.Usage, want: want}
}

func TestIF_1_ConfigFlags(t *testing.T) {
	testFlags(t, newConfigCmd, []flagCase[configOptions]{
		{check: func(o *configOptions) bool { return o.File == "" && !o.JSON && len(o.Set) == 0 }},
		{args: []string{"--config", "c.yaml", "--json", "--max-iterations", "7", "--expects-copilot", "--agent-env", "A", "--agent-env", "B"},
			check: func(o *configOptions) bool {
				return o.File == "c.yaml" && o.JSON && o.Set["max_iterations"] == "7" && o.Set["expects_copilot"] == "true" && o.Set["agent_env"] == "A,B"
			}},
		usage[configOptions]("invalid argument", "--max-iterations", "0"),
		usage[configOptions]("invalid argument", "--poll-min", "soon"),
		usage[configOptions]("unknown flag", "--nope"),
		usage[configOptions]("unknown command", "extra"),
	})
}

func TestIF_1_SandboxFlags(t *testing.T) {
	testFlags(t, newSandboxCmd, []flagCase[sandboxOptions]{
		{check: func(o *sandboxOptions) bool {
			return o.StateDir == "" && o.Addr == "127.0.0.1:0" && !o.HTTP && o.CopilotDelay == 3*time.Second && !o.Verbose && o.Forge == forge.GitHub
		}},
		{args: []string{"--state", "s", "--addr", "[::1]:9", "--http", "--copilot-delay", "50ms", "-v", "--forge", "gitlab"},
			check: func(o *sandboxOptions) bool {
				return o.StateDir == "s" && o.Addr == "[::1]:9" && o.HTTP && o.CopilotDelay == 50*time.Millisecond && o.Verbose && o.Forge == forge.GitLab
			}},
		usage[sandboxOptions](`unknown forge "gitea"`, "--forge", "gitea"),
		usage[sandboxOptions]("invalid argument", "--copilot-delay", "3"),
		usage[sandboxOptions]("unknown command", "now"),
	})
}

func TestIF_1_DemoFlags(t *testing.T) {
	testFlags(t, newDemoCmd, []flagCase[demoOptions]{
		{check: func(o *demoOptions) bool {
			return o.StateDir == "" && !o.JSON && !o.Keep && o.CopilotDelay == time.Second && o.Forge == forge.GitHub
		}},
		{args: []string{"--state", "d", "--json", "--keep", "--copilot-delay", "0s", "--forge", "GitLab"},
			check: func(o *demoOptions) bool {
				return o.StateDir == "d" && o.JSON && o.Keep && o.CopilotDelay == 0 && o.Forge == forge.GitLab
			}},
		usage[demoOptions]("unknown flag", "--agent", "claude"),
		usage[demoOptions](`unknown forge "bitbucket": want github or gitlab`, "--forge", "bitbucket"),
	})
}

func TestIF_1_BenchFlags(t *testing.T) {
	testFlags(t, newBenchCmd, []flagCase[benchOptions]{
		{check: func(o *benchOptions) bool { return o.Scale == "small" && !o.JSON }},
		{args: []string{"--scale", "full", "--json"}, check: func(o *benchOptions) bool { return o.Scale == "full" && o.JSON }},
		usage[benchOptions](`--scale "huge": want small or full`, "--scale", "huge"),
	})
}

func TestIF_1_StatusFlags(t *testing.T) {
	testFlags(t, newStatusCmd, []flagCase[statusOptions]{
		{check: func(o *statusOptions) bool {
			return o.StateDir == "" && !o.JSON && o.Limit == 20 && o.engine == engineOptions{Engine: engineLocal}
		}},
		{args: []string{"--state", "s", "--json", "--limit", "0", "--engine", "temporal", "--temporal-address", "h:1", "--namespace", "n"},
			check: func(o *statusOptions) bool {
				return o.StateDir == "s" && o.JSON && o.Limit == 0 && o.engine == engineOptions{Engine: engineTemporal, Address: "h:1", Namespace: "n"}
			}},
		// A task queue is where workers poll for work to run; status
		// reads workflows by their ids (issue 39: only flags that apply).
		usage[statusOptions]("unknown flag: --task-queue", "--engine", "temporal", "--task-queue", "q"),
		usage[statusOptions]("invalid argument", "--limit", "many"),
		usage[statusOptions]("unknown command", "r-1"),
		{args: []string{"--follow", "r-1", "--json", "--state", "s"}, check: func(o *statusOptions) bool {
			return o.Follow == "r-1" && o.JSON && o.StateDir == "s"
		}},
		usage[statusOptions]("flag needs an argument", "--follow"),
	})
}

func TestIF_1_VersionFlags(t *testing.T) {
	testFlags(t, newVersionCmd, []flagCase[versionOptions]{
		{check: func(o *versionOptions) bool { return !o.JSON }},
		{args: []string{"--json"}, check: func(o *versionOptions) bool { return o.JSON }},
		usage[versionOptions]("takes no arguments", "extra"),
		usage[versionOptions]("unknown flag", "--short"),
	})
}

// runIDCases are the cases of a command of one run id.
func runIDCases[O any](name string, check func(*O) bool) []flagCase[O] {
	return []flagCase[O]{
		{args: []string{"r-1", "--state", "s"}, check: check},
		usage[O](name + " needs exactly one run id"),
		usage[O](name+" needs exactly one run id", "r-1", "r-2"),
		usage[O]("unknown flag", "r-1", "--nope"),
	}
}

func TestIF_1_ProofFlags(t *testing.T) {
	testFlags(t, newProofCmd, append(runIDCases("proof", func(o *proofOptions) bool {
		return o.RunID == "r-1" && o.StateDir == "s" && !o.JSON && o.engine.Engine == engineLocal
	}), flagCase[proofOptions]{args: []string{"r-9", "--json"}, check: func(o *proofOptions) bool { return o.RunID == "r-9" && o.JSON }}))
}

func TestIF_1_LogFlags(t *testing.T) {
	testFlags(t, newLogCmd, runIDCases("log", func(o *logOptions) bool {
		return o.RunID == "r-1" && o.StateDir == "s" && o.engine.Engine == engineLocal
	}))
}

func TestIF_1_StopFlags(t *testing.T) {
	testFlags(t, newStopCmd, runIDCases("stop", func(o *stopOptions) bool {
		return o.RunID == "r-1" && o.StateDir == "s" && o.engine.Engine == engineLocal
	}))
}

const flagPR = "https://github.com/o/r/pull/1"

func TestIF_1_PRFlags(t *testing.T) {
	testFlags(t, newPRCmd, []flagCase[prOptions]{
		{args: []string{flagPR}, check: func(o *prOptions) bool {
			return strings.Join(o.URLs, " ") == flagPR && o.Agent == "suggest" && o.AgentCmd == "" && o.ReviewAgent == "" && o.JudgeAgent == "" &&
				o.StateDir == "" && o.APIURL == "" && o.Token == "" && !o.JSON && !o.Keep && !o.Fresh && !o.DryRun && !o.DisposeOnly &&
				!o.NoAgentCheck && len(o.Set) == 0 && o.App == appOptions{} && o.engine.Engine == engineLocal && o.factory != nil
		}},
		{args: []string{flagPR, flagPR + "0", "--agent", "command", "--agent-cmd", "./fix.sh", "--review-agent", "claude", "--judge-agent", "command",
			"--judge-agent-cmd", "./judge.sh", "--dry-run", "--no-copilot", "--max-iterations", "3", "--agent-env", "A", "--agent-env", "B,C",
			"--no-agent-check", "--app-id", "1", "--app-key", "k.pem", "--state", "s", "--json", "--keep", "--fresh", "--config", "c.yaml", "--engine", "temporal"},
			check: func(o *prOptions) bool {
				return len(o.URLs) == 2 && o.Agent == "command" && o.AgentCmd == "./fix.sh" && o.ReviewAgent == "claude" && o.JudgeAgent == "command" &&
					o.JudgeAgentCmd == "./judge.sh" && o.DryRun && o.Set["expects_copilot"] == "false" && o.Set["max_iterations"] == "3" &&
					o.Set["agent_env"] == "A,B,C" && o.NoAgentCheck && o.App == appOptions{ID: "1", KeyFile: "k.pem"} && o.StateDir == "s" &&
					o.JSON && o.Keep && o.Fresh && o.ConfigFile == "c.yaml" && o.engine.Engine == engineTemporal
			}},
		{args: []string{flagPR, "--no-copilot=false", "--allow-untested", "--dispose-only"}, check: func(o *prOptions) bool {
			return o.Set["expects_copilot"] == "true" && o.Set["allow_untested"] == "true" && o.DisposeOnly
		}},
		usage[prOptions]("pr needs a PR URL"),
		usage[prOptions]("invalid argument", flagPR, "--max-cost", "-1"),
		usage[prOptions]("invalid argument", flagPR, "--agent-env", "A=1"),
		usage[prOptions]("invalid argument", flagPR, "--fix-minor=maybe"),
		usage[prOptions]("unknown flag", flagPR, "--goal", "x"),
	})
}

func TestIF_1_ServeFlags(t *testing.T) {
	testFlags(t, newServeCmd, []flagCase[serveOptions]{
		{check: func(o *serveOptions) bool {
			return len(o.pr.URLs) == 0 && o.Listen == "127.0.0.1:8765" && len(o.Watch) == 0 && o.Label == "" && len(o.Authors) == 0 &&
				o.PollPoints == defaultPollPoints && o.PollBudget == 0 && !o.changed("poll-budget") && o.pr.Agent == "suggest" &&
				o.engine.Engine == engineLocal && o.pr.factory != nil
		}},
		{args: []string{flagPR, "--listen", ":9", "--watch", "o/a,o/b", "--watch", "o/c", "--watch-label", "l", "--watch-author", "x",
			"--poll-points", "500", "--agent", "codex", "--ci-wait", "1m"},
			check: func(o *serveOptions) bool {
				return strings.Join(o.pr.URLs, " ") == flagPR && o.Listen == ":9" && strings.Join(o.Watch, " ") == "o/a o/b o/c" && o.Label == "l" &&
					strings.Join(o.Authors, " ") == "x" && o.PollPoints == 500 && o.pr.Agent == "codex" && o.pr.Set["ci_wait"] == "1m0s"
			}},
		// The old budget in polls a minute still parses (deprecated).
		{args: []string{"--poll-budget", "5"}, check: func(o *serveOptions) bool {
			return o.PollBudget == 5 && o.changed("poll-budget") && o.PollPoints == defaultPollPoints
		}},
		{args: []string{"--forge", "gitlab", "--watch", "g/sub/p"}, check: func(o *serveOptions) bool {
			return o.Forge == "gitlab" && strings.Join(o.Watch, " ") == "g/sub/p"
		}},
		usage[serveOptions]("invalid argument", "--poll-budget", "lots"),
		usage[serveOptions]("invalid argument", "--poll-points", "lots"),
		usage[serveOptions]("unknown flag", "--watch-labels", "l"),
	})
}

func TestIF_1_DoctorFlags(t *testing.T) {
	testFlags(t, newDoctorCmd, []flagCase[doctorOptions]{
		{check: func(o *doctorOptions) bool {
			// Host "" is the forge's public host, resolved as doctor runs.
			return o.Workdir == "." && o.Host == "" && !o.JSON && !o.Check && len(o.Agents) == 0 && len(o.Set) == 0 && o.Forge == forge.GitHub
		}},
		{args: []string{"--forge", "gitlab"}, check: func(o *doctorOptions) bool { return o.Forge == forge.GitLab }},
		{args: []string{"--workdir", "w", "--host", "ghe.example", "--json", "--check", "--agent", "claude", "--agent", "codex", "--agent-retry-bound", "30s"},
			check: func(o *doctorOptions) bool {
				return o.Workdir == "w" && o.Host == "ghe.example" && o.JSON && o.Check && strings.Join(o.Agents, " ") == "claude codex" && o.Set["agent_retry_bound"] == "30s"
			}},
		usage[doctorOptions]("invalid argument", "--agent-retry-bound", "0s"),
		usage[doctorOptions]("unknown command", "claude"),
	})
}

func TestIF_1_WorkerFlags(t *testing.T) {
	testFlags(t, newWorkerCmd, []flagCase[workerOptions]{
		{check: func(o *workerOptions) bool {
			return o.engine == engineOptions{Engine: engineTemporal} && o.Token == "" && o.CAFile == "" && o.StateDir == "" && o.App == appOptions{} && o.factory != nil
		}},
		{args: []string{"--temporal-address", "h:7233", "--namespace", "n", "--task-queue", "q", "--token", "t", "--ca-file", "ca.pem", "--state", "s", "--app-id", "2", "--app-key", "k", "--app-installation", "3"},
			check: func(o *workerOptions) bool {
				return o.engine == engineOptions{Engine: engineTemporal, Address: "h:7233", Namespace: "n", TaskQueue: "q"} && o.Token == "t" &&
					o.CAFile == "ca.pem" && o.StateDir == "s" && o.App == appOptions{ID: "2", KeyFile: "k", Installation: "3"}
			}},
		usage[workerOptions]("unknown flag", "--engine", "local"),
		usage[workerOptions]("unknown command", "now"),
	})
}

func TestIF_1_LoopFlags(t *testing.T) {
	testFlags(t, newLoopCmd, []flagCase[loopOptions]{
		{check: func(o *loopOptions) bool {
			return o.Goal == "" && o.Agent == "command" && o.MaxIterations == 0 && o.StallAfter == checkloop.DefaultStallIterations &&
				o.Confirm == checkloop.DefaultConfirm && !o.confirmSet && o.AgentTimeout == agent.DefaultBudget && o.CheckTimeout == checkloop.DefaultCheckBudget &&
				o.Workdir == "." && o.StateDir == "" && len(o.Protect) == 0 && !o.agents.NoCheck && len(o.agents.Set) == 0 &&
				o.engine.Engine == engineLocal && o.factory != nil && !o.changed("max-iterations")
		}},
		{args: []string{"--goal", "g", "--check", "go test ./...", "--agent", "claude", "--max-iterations", "5", "--stall-after", "4", "--confirm", "3",
			"--protect", "a/*", "--protect", "b", "--allow-test-removal", "--max-wall-clock", "1h", "--max-cost", "2.5", "--predecessor", "r-1",
			"--json", "--state", "s", "--workdir", "w", "--fresh", "--agent-timeout", "1m", "--check-timeout", "2m", "--agent-env", "K", "--no-agent-check"},
			check: func(o *loopOptions) bool {
				return o.Goal == "g" && o.Check == "go test ./..." && o.Agent == "claude" && o.MaxIterations == 5 && o.StallAfter == 4 && o.Confirm == 3 &&
					o.confirmSet && strings.Join(o.Protect, " ") == "a/* b" && o.AllowRemoval && o.MaxWallClock == time.Hour && o.MaxCost == 2.5 &&
					o.Predecessor == "r-1" && o.JSON && o.StateDir == "s" && o.Workdir == "w" && o.Fresh && o.AgentTimeout == time.Minute &&
					o.CheckTimeout == 2*time.Minute && o.agents.Set["agent_env"] == "K" && o.agents.NoCheck && o.changed("max-iterations") && !o.changed("goal-file")
			}},
		{args: []string{"--goal-file", "g.md", "--judge", "command", "--judge-cmd", "./judge.sh", "--agent-cmd", "./a.sh"},
			check: func(o *loopOptions) bool {
				return o.GoalFile == "g.md" && o.Judge == "command" && o.JudgeCmd == "./judge.sh" && o.AgentCmd == "./a.sh" && !o.confirmSet
			}},
		usage[loopOptions]("invalid argument", "--max-iterations", "five"),
		usage[loopOptions]("invalid argument", "--max-wall-clock", "1"),
		usage[loopOptions]("invalid argument", "--agent-retry-bound", "-1s"),
		usage[loopOptions]("unknown command", "fix it"),
		usage[loopOptions]("unknown flag", "--review-agent", "claude"),
	})
}

func TestIF_1_PlanFlags(t *testing.T) {
	testFlags(t, newPlanCmd, []flagCase[planOptions]{
		{args: []string{"run", "p.yaml"}, check: func(o *planOptions) bool {
			return o.File == "p.yaml" && o.Agent == "command" && o.AgentCmd == "" && o.ReviewAgent == "" && !o.JSON && o.Report == "" &&
				o.StateDir == "" && o.Workdir == "." && !o.Fresh && o.AgentTimeout == agent.DefaultBudget && o.Parallel == defaultPlanParallel &&
				!o.agents.NoCheck && o.engine.Engine == engineLocal && o.factory != nil
		}},
		{args: []string{"run", "p.yaml", "--agent", "gemini", "--review-agent", "command", "--review-agent-cmd", "./r.sh", "--json", "--report", "r.md",
			"--state", "s", "--workdir", "w", "--fresh", "--agent-timeout", "90s", "--parallel", "1", "--agent-env", "X", "--no-agent-check", "--engine", "temporal"},
			check: func(o *planOptions) bool {
				return o.File == "p.yaml" && o.Agent == "gemini" && o.ReviewAgent == "command" && o.ReviewAgentCmd == "./r.sh" && o.JSON && o.Report == "r.md" &&
					o.StateDir == "s" && o.Workdir == "w" && o.Fresh && o.AgentTimeout == 90*time.Second && o.Parallel == 1 &&
					o.agents.Set["agent_env"] == "X" && o.agents.NoCheck && o.engine.Engine == engineTemporal
			}},
		usage[planOptions]("plan needs a subcommand"),
		usage[planOptions]("plan run needs exactly one plan file", "run"),
		usage[planOptions]("plan run needs exactly one plan file", "run", "a.yaml", "b.yaml"),
		usage[planOptions]("invalid argument", "run", "p.yaml", "--parallel", "all"),
		usage[planOptions]("unknown flag", "run", "p.yaml", "--check", "true"),
	})
}

// TestIF_1_EveryCommandHasFlagTests: each command of the root has its
// table in this file; a new command gets one (newXCmd(factory, runF)).
func TestIF_1_EveryCommandHasFlagTests(t *testing.T) {
	src, err := os.ReadFile("flags_test.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range NewRootCmd(noFactory(t)).Commands() {
		if !regexp.MustCompile(`(?im)^func TestIF_1_` + regexp.QuoteMeta(c.Name()) + `Flags\(`).Match(src) {
			t.Errorf("converge %s has no TestIF_1_%sFlags in flags_test.go", c.Name(), c.Name())
		}
	}
}

func TestIF_1_InitFlags(t *testing.T) {
	testFlags(t, newInitCmd, []flagCase[initOptions]{
		{check: func(o *initOptions) bool { return *o == initOptions{} }},
		{args: []string{"--dir", "d", "--force", "--action"},
			check: func(o *initOptions) bool { return *o == initOptions{Dir: "d", Force: true, Action: true} }},
		{args: []string{"--sync"}, check: func(o *initOptions) bool { return o.Sync && !o.Force }},
		usage[initOptions]("unknown flag", "--nope"),
		usage[initOptions]("unknown command", "extra"),
	})
}

func TestIF_1_DashboardFlags(t *testing.T) {
	testFlags(t, newDashboardCmd, []flagCase[dashboardOptions]{
		{check: func(o *dashboardOptions) bool { return o.StateDir == "" && o.Addr == "127.0.0.1:8766" }},
		{args: []string{"--state", "s", "--addr", "0.0.0.0:9"},
			check: func(o *dashboardOptions) bool { return o.StateDir == "s" && o.Addr == "0.0.0.0:9" }},
		usage[dashboardOptions]("unknown flag", "--token", "x"),
		usage[dashboardOptions]("unknown command", "extra"),
	})
}

func TestIF_1_MCPFlags(t *testing.T) {
	testFlags(t, newMCPCmd, []flagCase[mcpOptions]{
		{check: func(o *mcpOptions) bool { return o.StateDir == "" }},
		{args: []string{"--state", "s"}, check: func(o *mcpOptions) bool { return o.StateDir == "s" }},
		usage[mcpOptions]("unknown flag", "--stdio"),
		usage[mcpOptions]("unknown command", "extra"),
	})
}
