// Package mcpserver serves converge to an MCP client (a coding agent) over
// the Model Context Protocol: it starts pr, loop and plan runs, reads
// their status, decision log and proof, stops them, disposes a pull
// request's threads and lists runs — each the same operation the command
// line performs, so a run started here is a run like any other: it shows
// in converge status, survives the MCP session and is stopped by
// converge stop.
//
// The reads and the stop are the converge commands themselves, run in
// this process (Config.Converge); a start is a converge child process of
// the same binary and state directory, detached, so that it outlives the
// session that asked for it.
package mcpserver

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"path/filepath"
	"runtime/debug"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/convergeloop/converge/internal/exitcode"
	"github.com/convergeloop/converge/internal/store"
	"github.com/convergeloop/converge/internal/text"
)

// Config is what the server needs from the command that serves it.
type Config struct {
	// Version is converge's, as the server names itself ("" reads the
	// build info).
	Version string
	// StateDir is the state directory every tool reads and every run it
	// starts keeps its store in (--state).
	StateDir string
	// Executable is the converge binary a started run runs.
	Executable string
	// Env is the environment of a started run, the forge token's
	// variables included (the server's own no longer holds them, SEC-2).
	Env []string
	// Converge runs one converge command line in this process, with its
	// output in stdout and stderr, and returns its exit code (IF-1). The
	// read and stop tools are converge status, log, proof and stop run
	// so.
	Converge func(ctx context.Context, args []string, stdout, stderr io.Writer) exitcode.Code
	// OpenStore opens the existing state store of StateDir, read by the
	// start tools to find the run a started converge recorded.
	OpenStore func(ctx context.Context) (*store.Store, error)
	// StartWait bounds how long a start waits for its run to be in the
	// store (0: DefaultStartWait). What a run checks before it is
	// recorded (the forge's permissions, an agent CLI's credentials) is
	// inside it.
	StartWait time.Duration
}

// DefaultStartWait is how long a start waits for its run to be recorded.
const DefaultStartWait = 2 * time.Minute

// Name is the server's name in the MCP handshake; clients show its tools
// under it.
const Name = "converge"

// New builds the server with its tools.
func New(cfg Config) *mcp.Server {
	if cfg.Version == "" {
		cfg.Version = buildVersion()
	}
	if cfg.StartWait <= 0 {
		cfg.StartWait = DefaultStartWait
	}
	s := &server{cfg: cfg}
	srv := mcp.NewServer(&mcp.Implementation{Name: Name, Title: "converge", Version: cfg.Version}, &mcp.ServerOptions{
		Instructions: instructions,
	})
	s.addTools(srv)
	return srv
}

const instructions = `converge drives AI coding agents until an external check proves the work done. ` +
	`start_pr, start_loop and start_plan start a run in the background and return its run id once it is recorded; ` +
	`list_runs and run_status show where runs stand, run_log and run_proof what a run did and proved; ` +
	`stop_run ends a run cleanly at its next step; dispose_threads replies to and resolves a pull request's open threads once (converge pr --dispose-only). ` +
	`A run's exit codes are converge's (0 success, 2 bad input, 3 handed to a human, 4 a bound ran out, 5 no convergence, 6 authentication, 7 forge unreachable).`

type server struct {
	cfg Config
}

func buildVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		return bi.Main.Version
	}
	return "(devel)"
}

// storePath is the state store every tool reads.
func (s *server) storePath() string { return filepath.Join(s.cfg.StateDir, "converge.db") }

// commandError is a converge command that ended non-zero: its one line
// and exit code, as a tool error the client reads.
type commandError struct {
	cmd  string
	code exitcode.Code
	msg  string
}

func (e *commandError) Error() string {
	meaning := e.code.Meaning()
	if meaning == "" {
		meaning = "failed"
	}
	return fmt.Sprintf("converge %s: %s (exit %d: %s)", e.cmd, e.msg, e.code, meaning)
}

// converge runs a converge command in this process on the server's state
// directory and returns its stdout; a non-zero exit is a commandError
// with the line the command printed.
func (s *server) converge(ctx context.Context, args ...string) (string, error) {
	var out, errOut bytes.Buffer
	code := s.cfg.Converge(ctx, append(args, "--state", s.cfg.StateDir), &out, &errOut)
	if code != 0 {
		return out.String(), &commandError{cmd: args[0], code: code, msg: errorLine(errOut.String(), out.String())}
	}
	return out.String(), nil
}

// errorLine is what a converge that failed said: its "converge: " line on
// stderr, else its last words.
func errorLine(stderr, stdout string) string {
	for _, l := range strings.Split(stderr, "\n") {
		if m, ok := strings.CutPrefix(strings.TrimSpace(l), "converge: "); ok && !strings.HasPrefix(m, "warning: ") {
			return text.Clip(m, 600)
		}
	}
	for _, s := range []string{stderr, stdout} {
		if s = strings.TrimSpace(s); s != "" {
			lines := strings.Split(s, "\n")
			return text.Clip(strings.TrimSpace(lines[len(lines)-1]), 600)
		}
	}
	return "no output"
}
