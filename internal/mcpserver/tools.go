package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Run is a run as converge status --json shows it.
type Run struct {
	ID     string `json:"id" jsonschema:"the run id (converge status, log, proof and stop take it)"`
	Kind   string `json:"kind" jsonschema:"pr, pr-dispose, pr-dry-run, loop or plan"`
	Target string `json:"target" jsonschema:"the pull request, or the repository a loop or plan works in"`
	Status string `json:"status" jsonschema:"running, or the terminal the run ended with (two-stable, complete, handed-off, ...)"`
	// ExitCode is set once the run ended.
	ExitCode  *int   `json:"exit_code,omitempty" jsonschema:"the run's exit code (IF-1), once it ended"`
	StartedAt string `json:"started_at"`
	UpdatedAt string `json:"updated_at"`
	EndedAt   string `json:"ended_at,omitempty"`
	// Alive, for a run not finished: whether a converge holds it now.
	Alive *bool  `json:"alive,omitempty" jsonschema:"for a run not ended: whether a converge process holds it now (false: killed or left; the same command resumes it)"`
	Why   string `json:"why,omitempty" jsonschema:"why a run that ended non-zero ended so"`
}

type listRunsIn struct {
	Limit *int `json:"limit,omitempty" jsonschema:"how many runs, newest first (default 20; 0: all)"`
}

type listRunsOut struct {
	Runs []Run  `json:"runs"`
	Note string `json:"note,omitempty" jsonschema:"what converge status said besides the list (e.g. that it was cut)"`
}

type runIn struct {
	Run string `json:"run" jsonschema:"the run id, as list_runs shows it"`
}

type logOut struct {
	Run string `json:"run"`
	Log string `json:"log" jsonschema:"the run's decision log as markdown (converge log)"`
}

type proofOut struct {
	Run   Run    `json:"run"`
	Proof any    `json:"proof,omitempty" jsonschema:"the stored proof of convergence; only a two-stable or complete finish has one"`
	Usage any    `json:"usage,omitempty" jsonschema:"what the run's agents reported consuming"`
	Text  string `json:"text" jsonschema:"the proof as converge proof prints it, or why there is none"`
}

type stopOut struct {
	Run     string `json:"run"`
	Message string `json:"message"`
}

type disposeIn struct {
	PR   string   `json:"pr" jsonschema:"the pull request URL"`
	Args []string `json:"args,omitempty" jsonschema:"further converge pr flags, one word each (e.g. --api-url, URL)"`
}

type disposeOut struct {
	Run      string            `json:"run" jsonschema:"the disposal's run id"`
	PR       string            `json:"pr"`
	Replied  []string          `json:"replied" jsonschema:"threads replied to"`
	Resolved []string          `json:"resolved" jsonschema:"threads resolved"`
	Skipped  []string          `json:"skipped" jsonschema:"threads left as they were"`
	Why      map[string]string `json:"why,omitempty" jsonschema:"why each skipped thread was skipped"`
}

func readOnly() *mcp.ToolAnnotations {
	return &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: new(false)}
}

func (s *server) addTools(srv *mcp.Server) {
	mcp.AddTool(srv, &mcp.Tool{
		Name:        "list_runs",
		Description: "List converge's runs, newest first, from its state store (converge status --json).",
		Annotations: readOnly(),
	}, s.listRuns)
	mcp.AddTool(srv, &mcp.Tool{
		Name:        "run_status",
		Description: "One run's status: kind, target, running or how it ended, exit code, whether a converge still holds it, and why it ended non-zero.",
		Annotations: readOnly(),
	}, s.runStatus)
	mcp.AddTool(srv, &mcp.Tool{
		Name:        "run_log",
		Description: "A run's decision log as markdown (converge log): rounds or iterations or tasks, findings with verdict and disposition, commits, decisions, terminal and proof. A run still going shows what it has so far.",
		Annotations: readOnly(),
	}, s.runLog)
	mcp.AddTool(srv, &mcp.Tool{
		Name:        "run_proof",
		Description: "A run's stored proof of convergence (converge proof), with what its agents consumed; a run that did not finish two-stable or complete has none, and the text says why.",
		Annotations: readOnly(),
	}, s.runProof)
	mcp.AddTool(srv, &mcp.Tool{
		Name:        "stop_run",
		Description: "Ask a running run to end cleanly at its next step (converge stop): it finishes the action in flight, records stopped-by-human and releases its lock.",
		Annotations: &mcp.ToolAnnotations{DestructiveHint: new(false), IdempotentHint: true, OpenWorldHint: new(false)},
	}, s.stopRun)
	mcp.AddTool(srv, &mcp.Tool{
		Name: "dispose_threads",
		Description: "Reply to and resolve every open review thread of a pull request once, fixing nothing (converge pr PR --dispose-only, PR-M2): " +
			"a thread a loop commit addressed is answered and resolved, a trusted thread nobody addressed is deferred to a human (replied to, left open), hand-offs and untrusted threads are skipped. " +
			"Refused while a loop runs on the pull request: it disposes its threads itself. Waits for the disposal to end and returns its envelope.",
		Annotations: &mcp.ToolAnnotations{DestructiveHint: new(false), IdempotentHint: true},
	}, s.disposeThreads)
	s.addStartTools(srv)
}

func (s *server) listRuns(ctx context.Context, _ *mcp.CallToolRequest, in listRunsIn) (*mcp.CallToolResult, listRunsOut, error) {
	limit := 20
	if in.Limit != nil {
		limit = *in.Limit
	}
	runs, note, err := s.status(ctx, limit)
	if err != nil {
		return nil, listRunsOut{}, err
	}
	return nil, listRunsOut{Runs: runs, Note: note}, nil
}

// status is converge status --json --limit N: the runs, and what it said
// on stderr besides (a cut list).
func (s *server) status(ctx context.Context, limit int) ([]Run, string, error) {
	var out, errOut strings.Builder
	args := []string{"status", "--json", "--limit", strconv.Itoa(limit), "--state", s.cfg.StateDir}
	if code := s.cfg.Converge(ctx, args, &out, &errOut); code != 0 {
		return nil, "", &commandError{cmd: "status", code: code, msg: errorLine(errOut.String(), out.String())}
	}
	runs := []Run{}
	if err := json.Unmarshal([]byte(out.String()), &runs); err != nil {
		return nil, "", fmt.Errorf("read converge status --json: %w", err)
	}
	note := strings.TrimPrefix(strings.TrimSpace(errOut.String()), "converge: ")
	return runs, note, nil
}

// find is the runs named ids among those converge status lists (all of
// them), in the order of ids.
func (s *server) find(ctx context.Context, ids ...string) ([]Run, error) {
	runs, _, err := s.status(ctx, 0)
	if err != nil {
		return nil, err
	}
	var found []Run
	for _, id := range ids {
		for _, r := range runs {
			if r.ID == id {
				found = append(found, r)
				break
			}
		}
	}
	return found, nil
}

func (s *server) runStatus(ctx context.Context, _ *mcp.CallToolRequest, in runIn) (*mcp.CallToolResult, Run, error) {
	if err := checkID(in.Run); err != nil {
		return nil, Run{}, err
	}
	found, err := s.find(ctx, in.Run)
	if err != nil {
		return nil, Run{}, err
	}
	if len(found) == 0 {
		return nil, Run{}, fmt.Errorf("no run %q in the state store %s (list_runs shows the runs)", in.Run, s.storePath())
	}
	return nil, found[0], nil
}

// checkID refuses what is not a run id before it reaches a command line,
// where a word starting with "-" would be a flag.
func checkID(id string) error {
	if id == "" || strings.HasPrefix(id, "-") || strings.ContainsAny(id, " \t\n") {
		return fmt.Errorf("%q is not a run id: give one list_runs shows (r-YYYYMMDD-xxxxxx)", id)
	}
	return nil
}

func (s *server) runLog(ctx context.Context, _ *mcp.CallToolRequest, in runIn) (*mcp.CallToolResult, logOut, error) {
	if err := checkID(in.Run); err != nil {
		return nil, logOut{}, err
	}
	log, err := s.converge(ctx, "log", in.Run)
	if err != nil {
		return nil, logOut{}, err
	}
	// The markdown is what a model reads best; the structured content
	// carries it too.
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: log}}}, logOut{Run: in.Run, Log: log}, nil
}

func (s *server) runProof(ctx context.Context, _ *mcp.CallToolRequest, in runIn) (*mcp.CallToolResult, proofOut, error) {
	if err := checkID(in.Run); err != nil {
		return nil, proofOut{}, err
	}
	raw, err := s.converge(ctx, "proof", in.Run, "--json")
	if err != nil {
		return nil, proofOut{}, err
	}
	var v struct {
		Run
		Proof json.RawMessage `json:"proof"`
		Usage json.RawMessage `json:"usage"`
	}
	if err := json.Unmarshal([]byte(raw), &v); err != nil {
		return nil, proofOut{}, fmt.Errorf("read converge proof --json: %w", err)
	}
	out := proofOut{Run: v.Run}
	if len(v.Proof) > 0 {
		if err := json.Unmarshal(v.Proof, &out.Proof); err != nil {
			return nil, proofOut{}, fmt.Errorf("read the proof of %s: %w", in.Run, err)
		}
	}
	if len(v.Usage) > 0 {
		if err := json.Unmarshal(v.Usage, &out.Usage); err != nil {
			return nil, proofOut{}, fmt.Errorf("read the usage of %s: %w", in.Run, err)
		}
	}
	// The printed proof ends non-zero when there is none, and says why:
	// that is the answer, not a failure of the tool.
	txt, err := s.converge(ctx, "proof", in.Run)
	var ce *commandError
	if err != nil && !errors.As(err, &ce) {
		return nil, proofOut{}, err
	}
	out.Text = txt
	if out.Text == "" && ce != nil {
		out.Text = ce.msg
	}
	return nil, out, nil
}

func (s *server) stopRun(ctx context.Context, _ *mcp.CallToolRequest, in runIn) (*mcp.CallToolResult, stopOut, error) {
	if err := checkID(in.Run); err != nil {
		return nil, stopOut{}, err
	}
	msg, err := s.converge(ctx, "stop", in.Run)
	if err != nil {
		return nil, stopOut{}, err
	}
	return nil, stopOut{Run: in.Run, Message: strings.TrimSpace(msg)}, nil
}
