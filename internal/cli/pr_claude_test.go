package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/convergeloop/converge/internal/agent/agenttest"
	"github.com/convergeloop/converge/internal/agent/claude"
	"github.com/convergeloop/converge/internal/emulator/fakehub"
	"github.com/convergeloop/converge/internal/emulator/fakemodel"
	"github.com/convergeloop/converge/internal/forge"
	ghclient "github.com/convergeloop/converge/internal/forge/github"
	"github.com/convergeloop/converge/internal/prloop"
	"github.com/convergeloop/converge/internal/repo"
	"github.com/convergeloop/converge/internal/review"
)

// The PR loop end to end with the real Claude Code CLI as its agents:
// the converge binary against the GitHub emulator, Claude Code against
// fakemodel, which scripts what the model says — the review angles'
// answers and the fixers' tool calls — while the CLI itself runs the
// tools on the PR's worktree.

// The demo PR's defects as they read in summary.go, and as the scripted
// fixes leave them (fakehub.DemoScript's suggestions, applied verbatim).
const (
	meanOld  = "\tmean := sum / float64(len(xs))\n\treturn mean, nil\n"
	meanNew  = "\tif len(xs) == 0 {\n\t\treturn 0, ErrEmpty\n\t}\n\treturn sum / float64(len(xs)), nil\n"
	boundOld = "for i := 0; i+n < len(xs); i++ {"
	boundNew = "for i := 0; i+n <= len(xs); i++ {"
	parseOld = "\t\tv, _ := strconv.ParseFloat(f, 64)\n"
	parseNew = "\t\tv, err := strconv.ParseFloat(f, 64)\n\t\tif err != nil {\n\t\t\treturn nil, fmt.Errorf(\"textstats: parse score %q: %w\", f, err)\n\t\t}\n"
)

// fixedSummary is the demo PR's summary.go with the given replacements
// (old, new, old, new, …) made once each.
func fixedSummary(t *testing.T, pairs ...string) string {
	t.Helper()
	s := fakehub.DemoPRFiles()["summary.go"]
	for i := 0; i+1 < len(pairs); i += 2 {
		if !strings.Contains(s, pairs[i]) {
			t.Fatalf("summary.go lacks %q", pairs[i])
		}
		s = strings.Replace(s, pairs[i], pairs[i+1], 1)
	}
	return s
}

// claudeEnv is converge's environment for a run whose agents are the real
// Claude Code CLI talking to fakemodel at url, plus env.
func claudeEnv(t *testing.T, bin, url string, env map[string]string) map[string]string {
	t.Helper()
	out := map[string]string{
		"CONVERGE_CLAUDE_BIN": bin,
		"ANTHROPIC_BASE_URL":  url,
		"ANTHROPIC_API_KEY":   "sk-ant-fakemodel",
		"ANTHROPIC_MODEL":     "claude-fakemodel",
		"HOME":                t.TempDir(),
	}
	maps.Copy(out, env)
	return out
}

// statusRecord is a fixer's final line: complete, files changed.
func statusRecord(t *testing.T, summary string) string {
	t.Helper()
	b, err := json.Marshal(map[string]any{"status": "complete", "next_action": "", "needs_extension_minutes": 0,
		"summary": summary, "files_changed": []string{"summary.go"}, "implementer_status": "DONE"})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// reviewPrompt opens every local review angle's prompt; fixPrompt every
// fixer's (agent.RenderTaskPrompt).
const (
	reviewPrompt = "You are a code reviewer reviewing a pull request"
	fixPrompt    = "You are a coding agent fixing review findings"
)

// checkClaudeRuns checks what fakemodel saw of the Claude Code runs:
// nothing went wrong on the wire and every tool call got its result
// (agenttest.CheckWire); every request of a review script was offered no
// tool that edits or runs commands, and every request of a fix script
// was offered the editing tools (so the first check can fail).
func checkClaudeRuns(t *testing.T, srv *fakemodel.Server, review func(script int) bool) {
	t.Helper()
	agenttest.CheckWire(t, srv)
	reviews, fixes := 0, 0
	for _, r := range srv.Requests() {
		if r.Side || r.API != "anthropic" || r.Script < 0 {
			continue
		}
		tools := r.Tools
		if review(r.Script) {
			reviews++
			for _, banned := range []string{"Edit", "Write", "MultiEdit", "NotebookEdit", "Bash"} {
				if slices.Contains(tools, banned) {
					t.Errorf("a review run (script %d) was offered %s: tools %v", r.Script, banned, tools)
				}
			}
			continue
		}
		fixes++
		if !slices.Contains(tools, "Edit") {
			t.Errorf("a fix run (script %d) was not offered Edit: tools %v", r.Script, tools)
		}
	}
	if reviews == 0 || fixes == 0 {
		t.Errorf("fakemodel saw %d review and %d fix requests; want both", reviews, fixes)
	}
}

// loopCommitAtHead fails unless the PR's head commit, as the forge lists
// it, is converge's: it carries the loop's trailer.
func loopCommitAtHead(t *testing.T, pr *forge.PullRequest) {
	t.Helper()
	for _, c := range pr.Commits {
		if c.SHA != pr.HeadSHA {
			continue
		}
		if !strings.Contains(c.Message, "\n"+prloop.CommitTrailer+": ") {
			t.Errorf("the head commit %s has no %s trailer:\n%s", c.SHA, prloop.CommitTrailer, c.Message)
		}
		return
	}
	t.Errorf("the head %s is not among the PR's commits %+v", pr.HeadSHA, pr.Commits)
}

// TestPR_M3_NoCopilotRealClaudeReviewsAndFixesUntilCleanLocalReview is
// the first acceptance line of issue 9: `converge pr --no-copilot --agent
// claude --review-agent claude` on the sandbox's demo PR. Each local
// review angle is a separate run of the real Claude Code CLI (PR-S4):
// on the PR's head one angle finds the empty-input defect of Mean and
// another the off-by-one bound of MovingSum, each after a real read-only
// tool call; the fixer, also Claude Code, reads the file and edits both
// through the Edit tool; the angles find nothing on the fixed head. The
// run ends two-stable (PR-M3: the local review is the independent review),
// and the forge proves it: the loop's commit is the head with the
// scripted bytes, converge's summary of the final head's local review says
// clean, the PR is labelled ready.
func TestPR_M3_NoCopilotRealClaudeReviewsAndFixesUntilCleanLocalReview(t *testing.T) {
	bin := agenttest.RealCLI(t, claude.BinaryEnv, "claude", "@anthropic-ai/claude-code")
	t.Parallel() // its own emulator, model and state
	hub, demo := startHub(t, 100*time.Millisecond)
	before := observe(t, hub, demo.PRURL)

	meanFinding := `[{"file":"summary.go","line_range":[19,20],"summary":"Mean divides by zero on empty input and returns NaN with a nil error; return ErrEmpty as its doc comment says","verdict":"structural"}]`
	boundFinding := `[{"file":"summary.go","line_range":[29,29],"summary":"MovingSum drops the last window: the loop bound must include i+n == len(xs)","verdict":"structural"}]`
	srv, url := agenttest.Serve(t,
		// 0: the round's fixer, given both findings (one file, one fixer).
		fakemodel.Script{Match: fixPrompt, Also: []string{"Mean divides by zero on empty input", "MovingSum drops the last window"}, Turns: []fakemodel.Turn{
			{Text: "Reading the file.", Calls: []fakemodel.ToolCall{{Name: "Read", Input: map[string]any{"file_path": "summary.go"}}}},
			{Calls: []fakemodel.ToolCall{{Name: "Edit", Input: map[string]any{"file_path": "summary.go", "old_string": meanOld, "new_string": meanNew}}}},
			{Calls: []fakemodel.ToolCall{{Name: "Edit", Input: map[string]any{"file_path": "summary.go", "old_string": boundOld, "new_string": boundNew}}}},
			{Text: "Fixed both.\n" + statusRecord(t, "Mean returns ErrEmpty on empty input; MovingSum keeps the last window")},
		}},
		// 1, 2: one angle each finds one defect in the diff of the PR's
		// head, which still adds the defective lines.
		fakemodel.Script{Match: `one angle: "correctness-leak"`, Also: []string{"+\tmean := sum / float64(len(xs))"}, Turns: []fakemodel.Turn{
			{Calls: []fakemodel.ToolCall{{Name: "Grep", Input: map[string]any{"pattern": "ErrEmpty"}}}},
			{Text: "One defect.\n" + meanFinding},
		}},
		fakemodel.Script{Match: `one angle: "edge-cases"`, Also: []string{"+\t" + boundOld}, Turns: []fakemodel.Turn{
			{Calls: []fakemodel.ToolCall{{Name: "Read", Input: map[string]any{"file_path": "summary.go"}}}},
			{Text: "One defect.\n" + boundFinding},
		}},
		// 3: any angle on the fixed head: nothing.
		fakemodel.Script{Match: reviewPrompt, Also: []string{"+\t\treturn 0, ErrEmpty", "+\t" + boundNew}, Turns: []fakemodel.Turn{
			{Text: "Nothing from this angle.\n[]"},
		}},
		// 4: the verifier, asked of each fix no test shows (PR-V7).
		verifierScript(t),
	)

	state := t.TempDir()
	// fakemodel's scripts are the runs this test counts: the agents'
	// pre-flight request is no script's (the check is tested apart).
	args := append(prArgs(hub, demo, state), "--no-copilot", "--agent", "claude", "--review-agent", "claude",
		"--review-angles", "correctness-leak,edge-cases", "--agent-timeout", "2m", "--no-agent-check")
	code, out := runBin(t, claudeEnv(t, bin, url, authorEnv(hub)), args...)
	if code != 0 || !strings.Contains(out, "converge: two-stable (exit 0)") {
		t.Fatalf("want two-stable, got exit %d:\n%s", code, out)
	}
	if !strings.Contains(out, "(local review at ") {
		t.Errorf("the proof does not name the local review as the independent review:\n%s", out)
	}

	pr := observe(t, hub, demo.PRURL)
	assertProven(t, pr, true, out)
	if pr.HeadSHA == before.HeadSHA {
		t.Fatalf("nothing was pushed: the head is still %s", pr.HeadSHA)
	}
	loopCommitAtHead(t, pr)
	if got, want := fileAtHead(t, hub, demo, "summary.go"), fixedSummary(t, meanOld, meanNew, boundOld, boundNew); got != want {
		t.Errorf("summary.go at the head:\n%s\nwant:\n%s", got, want)
	}
	clean := false
	for _, ic := range pr.IssueComments {
		if head, _, ok := review.ParseSummaryMarker(ic.Body); ok && head == pr.HeadSHA && localCleanSummary(ic.Body) {
			clean = true
		}
	}
	if !clean {
		t.Errorf("no local review summary of the final head %s says clean", pr.HeadSHA)
	}

	// Round 2 ran only the angles: its cost in the decision log is what
	// Claude Code reported for them (PR-M5).
	run := regexp.MustCompile(`proof \(run (r-[0-9a-z-]+)\)`).FindStringSubmatch(out)
	if run == nil {
		t.Fatalf("no run id in:\n%s", out)
	}
	code, log := runBin(t, nil, "log", run[1], "--state", state)
	_, round2, _ := strings.Cut(log, "### Round 2 ")
	round2, _, _ = strings.Cut(round2, "\n#")
	if code != 0 || !regexp.MustCompile(`(?m)^- agent usage: [1-9][0-9]* input, [1-9][0-9]* output token\(s\) in [1-9][0-9]* agent run\(s\); cost \$[0-9.]+ reported$`).MatchString(round2) {
		t.Errorf("round 2's cost does not count the review angles' usage (exit %d):\n%s", code, log)
	}

	// Round 1's two local findings were fixed by its commit: the ledger
	// says so.
	_, round1, _ := strings.Cut(log, "### Round 1 ")
	round1, _, _ = strings.Cut(round1, "\n#")
	if n := regexp.MustCompile(`(?m)^\| local:[^|]+ \| local \| .*\| addressed \|`).FindAllString(round1, -1); len(n) != 2 {
		t.Errorf("want round 1's two local findings addressed in the decision log:\n%s", log)
	}

	checkClaudeRuns(t, srv, func(script int) bool { return script > 0 })
	// Each angle reviewed the PR's head, and the clean review was of the
	// final head: its diff header names it.
	ran := map[int]bool{}
	finalReviewed := false
	for _, r := range srv.Requests() {
		ran[r.Script] = true
		if r.Script == 3 && strings.Contains(string(r.Body), `head=\"`+pr.HeadSHA) {
			finalReviewed = true
		}
	}
	for i := range 4 {
		if !ran[i] {
			t.Errorf("script %d never answered: %s", i, out)
		}
	}
	if !finalReviewed {
		t.Errorf("no clean review named the final head %s", pr.HeadSHA)
	}
}

// sandbox runs `converge sandbox` (the binary) until the test ends and
// returns what it printed, and where it keeps its repositories.
func sandbox(t *testing.T) (sandboxInfo, string) {
	t.Helper()
	state := filepath.Join(t.TempDir(), "sandbox")
	cmd := exec.Command("converge", "sandbox", "--state", state, "--copilot-delay", "100ms")
	cmd.Env = cleanEnv(nil)
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGINT)
		_ = cmd.Wait()
	})
	line := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		if sc.Scan() {
			line <- sc.Text()
		}
		close(line)
		for sc.Scan() {
		}
	}()
	var info sandboxInfo
	select {
	case l, ok := <-line:
		if !ok {
			t.Fatal("converge sandbox printed nothing")
		}
		if err := json.Unmarshal([]byte(l), &info); err != nil {
			t.Fatalf("converge sandbox printed %q: %v", l, err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("converge sandbox printed nothing in 30s")
	}
	return info, state
}

// TestAG_B1_RealClaudeFixesTheSandboxPRToTwoStable is the third
// acceptance line of issue 9: `converge pr` against `converge sandbox`
// with `--agent claude`. The sandbox's Copilot finds the demo PR's three
// defects over two reviews (fakehub.DemoScript); the real Claude Code CLI
// fixes them as fakemodel scripts it — the first review's two findings
// through Read and Edit, the second's through a sed run by the Bash tool
// — and reviews every head as the local review (the review agent is the
// fixer's; one angle), finding nothing. The run ends two-stable after
// Copilot's clean review of the final head, and the forge proves it: the
// loop's commit is the head, summary.go there holds the three fixes byte
// for byte, no thread is open, the PR is labelled ready.
func TestAG_B1_RealClaudeFixesTheSandboxPRToTwoStable(t *testing.T) {
	bin := agenttest.RealCLI(t, claude.BinaryEnv, "claude", "@anthropic-ai/claude-code")
	t.Parallel() // its own sandbox, model and state
	info, sandboxState := sandbox(t)

	srv, url := agenttest.Serve(t,
		// 0: round 1's fixer, given Copilot's first two findings.
		fakemodel.Script{Match: fixPrompt, Also: []string{"`Mean` divides by zero", "Off by one: the loop stops before the last window"}, Turns: []fakemodel.Turn{
			{Calls: []fakemodel.ToolCall{{Name: "Read", Input: map[string]any{"file_path": "summary.go"}}}},
			{Calls: []fakemodel.ToolCall{{Name: "Edit", Input: map[string]any{"file_path": "summary.go", "old_string": meanOld, "new_string": meanNew}}}},
			{Calls: []fakemodel.ToolCall{{Name: "Edit", Input: map[string]any{"file_path": "summary.go", "old_string": boundOld, "new_string": boundNew}}}},
			{Text: "Applied both suggestions.\n" + statusRecord(t, "Mean returns ErrEmpty on empty input; MovingSum keeps the last window")},
		}},
		// 1: round 2's fixer, given the ignored parse error.
		fakemodel.Script{Match: fixPrompt, Also: []string{"The parse error is ignored"}, Turns: []fakemodel.Turn{
			{Calls: []fakemodel.ToolCall{{Shell: `sed -i 's/^\t\tv, _ := strconv.ParseFloat(f, 64)$/\t\tv, err := strconv.ParseFloat(f, 64)\n\t\tif err != nil {\n\t\t\treturn nil, fmt.Errorf("textstats: parse score %q: %w", f, err)\n\t\t}/' summary.go`}}},
			{Text: "Returned the parse error.\n" + statusRecord(t, "ParseScores returns the parse error")},
		}},
		// 2: every local review angle, on every head.
		fakemodel.Script{Match: reviewPrompt, Turns: []fakemodel.Turn{{Text: "Nothing from this angle.\n[]"}}},
		// 3: the verifier, asked of each fix no test shows (PR-V7).
		verifierScript(t),
	)

	ref, err := forge.ParsePRURL(info.PRURL)
	if err != nil {
		t.Fatal(err)
	}
	client, err := ghclient.New(ghclient.Options{APIURL: info.APIURL, GraphQLURL: info.GraphQLURL, Token: info.Tokens.Reviewer, CAFile: info.CAFile})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	before, err := client.Observe(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}

	code, out := runBin(t, claudeEnv(t, bin, url, map[string]string{"CONVERGE_TOKEN": info.Tokens.Author}),
		"pr", info.PRURL, "--api-url", info.APIURL, "--ca-file", info.CAFile, "--state", t.TempDir(),
		"--poll-min", "50ms", "--poll-max", "500ms", "--agent", "claude", "--agent-timeout", "2m", "--no-agent-check",
		// One angle per head keeps the CLI processes few; the angles'
		// own test is the one above.
		"--review-angles", "correctness-leak")
	if code != 0 || !strings.Contains(out, "converge: two-stable (exit 0)") {
		t.Fatalf("want two-stable, got exit %d:\n%s", code, out)
	}

	pr, err := client.Observe(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	assertProven(t, pr, false, out)
	if pr.HeadSHA == before.HeadSHA {
		t.Fatalf("nothing was pushed: the head is still %s", pr.HeadSHA)
	}
	loopCommitAtHead(t, pr)
	if len(pr.Threads) != 3 {
		t.Errorf("want the sandbox's 3 Copilot threads, got %d", len(pr.Threads))
	}
	// The bytes the forge serves at the head, from its own repository.
	forgeRepo := &repo.Git{Dir: filepath.Join(sandboxState, "repos", fakehub.DemoOwner, fakehub.DemoRepo+".git")}
	got, err := forgeRepo.Run(ctx, "show", pr.HeadSHA+":summary.go")
	if err != nil {
		t.Fatal(err)
	}
	if want := fixedSummary(t, meanOld, meanNew, boundOld, boundNew, parseOld, parseNew); got != want {
		t.Errorf("summary.go at the head:\n%s\nwant:\n%s", got, want)
	}

	checkClaudeRuns(t, srv, func(script int) bool { return script == 2 || script == 3 }) // review angles, the verifier: read-only
	ran := map[int]bool{}
	for _, r := range srv.Requests() {
		ran[r.Script] = true
	}
	for i := range 3 {
		if !ran[i] {
			t.Errorf("script %d never answered:\n%s", i, out)
		}
	}
}

// verifierScript answers every PR-V7 verifier run — the fresh-context
// question whether a fix no test shows addresses its finding — with the
// one schema-valid line: addressed.
func verifierScript(t *testing.T) fakemodel.Script {
	t.Helper()
	line, err := json.Marshal(map[string]any{"status": "complete", "next_action": "", "needs_extension_minutes": 0,
		"summary": "the change does what the comment asks", "files_changed": []string{},
		"verdict": "addressed", "why": "the lines after the change fix what the comment describes"})
	if err != nil {
		t.Fatal(err)
	}
	return fakemodel.Script{Match: "You are verifying a fix.", Turns: []fakemodel.Turn{{Text: "Checked the change.\n" + string(line)}}}
}
