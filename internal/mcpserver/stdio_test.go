package mcpserver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/convergeloop/converge/internal/cli"
	"github.com/convergeloop/converge/internal/cmdutil"
	"github.com/convergeloop/converge/internal/mcpserver"
)

// tools are the tools converge mcp serves.
var tools = []string{"dispose_threads", "list_runs", "run_log", "run_proof", "run_status", "start_loop", "start_plan", "start_pr", "stop_run"}

// TestUX_2_ConvergeMCPOverStdio: the real binary's converge mcp answers
// an MCP client over stdin and stdout: initialize names the server,
// tools/list lists every tool with its input schema, and list_runs
// reads the store given with --state.
func TestUX_2_ConvergeMCPOverStdio(t *testing.T) {
	t.Parallel()
	state := t.TempDir()
	s := seed(t, state)
	ctx := context.Background()
	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: exec.Command(buildConverge(t), "mcp", "--state", state)}, nil)
	if err != nil {
		t.Fatalf("initialize: %v", err)
	}
	defer cs.Close()
	hello := cs.InitializeResult()
	if hello == nil || hello.ServerInfo == nil || hello.ServerInfo.Name != "converge" || hello.Capabilities == nil || hello.Capabilities.Tools == nil {
		t.Fatalf("initialize: want the converge server with tools, got %+v", hello)
	}

	list, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatalf("tools/list: %v", err)
	}
	var names []string
	for _, tool := range list.Tools {
		names = append(names, tool.Name)
		if tool.Description == "" || tool.InputSchema == nil {
			t.Errorf("tool %s has no description or input schema", tool.Name)
		}
	}
	slices.Sort(names)
	if !slices.Equal(names, tools) {
		t.Fatalf("tools/list: %v, want %v", names, tools)
	}

	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "list_runs", Arguments: map[string]any{}})
	if err != nil || res.IsError {
		t.Fatalf("list_runs: %v %s", err, textOf(res))
	}
	b, _ := json.Marshal(res.StructuredContent)
	var out struct{ Runs []mcpserver.Run }
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, r := range out.Runs {
		ids = append(ids, r.ID)
	}
	if !slices.Equal(ids, []string{s.orphan, s.limited, s.proven}) {
		t.Errorf("list_runs over stdio: %v", ids)
	}
}

// TestREL_3_ConvergeMCPBadInputIsUsage: converge mcp with an argument, or
// a state directory it cannot use, is one line and exit 2 (IF-1), before
// it serves anything.
func TestREL_3_ConvergeMCPBadInputIsUsage(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"mcp", "extra"}, {"mcp", "--state", filepath.Join(file, "state")}} {
		var out, errOut bytes.Buffer
		code := cli.Run(context.Background(), args, &cmdutil.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut, Getenv: os.Getenv})
		if code != 2 || strings.Count(errOut.String(), "\n") != 1 || out.Len() != 0 {
			t.Errorf("converge %s: exit %d, stdout %q, stderr %q; want exit 2 and one line on stderr", strings.Join(args, " "), code, out.String(), errOut.String())
		}
	}
}
