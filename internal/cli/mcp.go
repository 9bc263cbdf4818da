package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	"github.com/convergeloop/converge/internal/cmdutil"
	"github.com/convergeloop/converge/internal/exitcode"
	"github.com/convergeloop/converge/internal/mcpserver"
	"github.com/convergeloop/converge/internal/secure"
	"github.com/convergeloop/converge/internal/store"
)

type mcpOptions struct {
	StateDir string
}

func newMCPCmd(factory *cmdutil.Factory, runF func(*mcpOptions) error) *cobra.Command {
	ios := factory.IOStreams
	opts := &mcpOptions{}
	cmd := &cobra.Command{
		Use: "mcp",
		Example: `  # in an MCP client's configuration: the command converge, the argument mcp
  converge mcp`,
		Short: "Serve converge to an MCP client (a coding agent) over stdio",
		Long: `Serve converge over the Model Context Protocol on stdin and stdout, for
an MCP client such as a coding agent. Its tools: start_pr, start_loop and
start_plan start a run as a converge process of its own (it outlives the
session; its output goes to a file under the state directory) and return
its run id once it is recorded; list_runs, run_status, run_log and
run_proof read the state store as converge status, log and proof do;
stop_run is converge stop; dispose_threads is converge pr --dispose-only.

Every tool uses --state (default $XDG_STATE_HOME/converge). A started run
gets this process's environment, the forge token included. Add it to a
client, e.g. Claude Code: claude mcp add converge -- converge mcp`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if runF != nil {
				return runF(opts)
			}
			return runMCP(cmd.Context(), ios, opts)
		},
	}
	cmd.Flags().StringVar(&opts.StateDir, "state", "", "state directory (default $XDG_STATE_HOME/converge)")
	return cmd
}

func runMCP(ctx context.Context, ios *cmdutil.IOStreams, opts *mcpOptions) error {
	cfg, err := MCPConfig(ios, opts.StateDir)
	if err != nil {
		return err
	}
	t := &mcp.IOTransport{Reader: io.NopCloser(ios.In), Writer: nopWriteCloser{ios.Out}}
	if err := mcpserver.New(cfg).Run(ctx, t); err != nil && ctx.Err() == nil {
		return fmt.Errorf("mcp: %w", err)
	}
	return nil
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

// MCPConfig is the MCP server converge mcp serves on the state directory
// dir ("" the default): its reads and stop are converge's own commands in
// this process, its runs this binary.
func MCPConfig(ios *cmdutil.IOStreams, dir string) (mcpserver.Config, error) {
	if ios.Getenv == nil {
		ios.Getenv = os.Getenv
	}
	if dir == "" {
		p := cmdutil.StorePath(ios, "")
		if p == "" {
			return mcpserver.Config{}, cmdutil.UsageErr("no state directory: neither XDG_STATE_HOME nor HOME is set; give one with --state DIR")
		}
		dir = filepath.Dir(p)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return mcpserver.Config{}, cmdutil.UsageErr("--state %s: %v", dir, err)
	}
	if err := cmdutil.WritableDir(abs); err != nil {
		return mcpserver.Config{}, err
	}
	exe, err := os.Executable()
	if err != nil {
		return mcpserver.Config{}, fmt.Errorf("find the converge binary: %w", err)
	}
	return mcpserver.Config{
		StateDir:   abs,
		Executable: exe,
		Env:        runEnv(ios),
		Converge: func(ctx context.Context, args []string, stdout, stderr io.Writer) exitcode.Code {
			return Run(ctx, args, &cmdutil.IOStreams{In: strings.NewReader(""), Out: stdout, ErrOut: stderr,
				Getenv: ios.Getenv, Environ: ios.Environ, Backend: ios.Backend})
		},
		OpenStore: func(ctx context.Context) (*store.Store, error) {
			return cmdutil.NewFactory(ios).OpenStoreFile(ctx, filepath.Join(abs, "converge.db"))
		},
	}, nil
}

// runEnv is the environment of a run converge mcp starts: this process's,
// with the token variables Harden took out of it put back (the run hides
// them again itself, SEC-2).
func runEnv(ios *cmdutil.IOStreams) []string {
	env := os.Environ()
	if ios.Environ != nil {
		env = ios.Environ()
	}
	env = slices.Clone(env)
	for _, k := range secure.TokenEnv {
		if v := ios.Getenv(k); v != "" && !slices.ContainsFunc(env, func(kv string) bool { return strings.HasPrefix(kv, k+"=") }) {
			env = append(env, k+"="+v)
		}
	}
	return env
}
