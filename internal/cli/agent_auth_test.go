package cli

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/convergeloop/converge/internal/agent/agenttest"
	"github.com/convergeloop/converge/internal/agent/claude"
	"github.com/convergeloop/converge/internal/agent/codex"
	"github.com/convergeloop/converge/internal/agent/gemini"
	"github.com/convergeloop/converge/internal/agent/opencode"
	"github.com/convergeloop/converge/internal/emulator/fakemodel"
	"github.com/convergeloop/converge/internal/forge"
	ghclient "github.com/convergeloop/converge/internal/forge/github"
	"github.com/convergeloop/converge/internal/prloop"
)

// forgeMarks is what a converge run may have written on a PR: the head,
// labels, top-level comments, thread replies and commit statuses.
type forgeMarks struct {
	head     string
	labels   []string
	comments []string
	replies  int
	statuses []string
}

func marksOf(pr *forge.PullRequest) forgeMarks {
	m := forgeMarks{head: pr.HeadSHA, labels: slices.Clone(pr.Labels)}
	for _, c := range pr.IssueComments {
		m.comments = append(m.comments, c.Body)
	}
	for _, th := range pr.Threads {
		m.replies += len(th.Comments)
	}
	for _, c := range pr.Checks.Contexts {
		if c.IsStatus {
			m.statuses = append(m.statuses, c.Name+"="+string(c.Conclusion))
		}
	}
	return m
}

func (m forgeMarks) same(o forgeMarks) bool {
	return m.head == o.head && slices.Equal(m.labels, o.labels) && slices.Equal(m.comments, o.comments) &&
		m.replies == o.replies && slices.Equal(m.statuses, o.statuses)
}

// TestAG_T4_RealClaudeWithoutWorkingCredentialsExits6 runs `converge pr`
// on the sandbox PR with the real Claude Code CLI as its agent, set up as
// a user's first day goes wrong: no key at all, or a key the model API
// refuses (401). The pre-flight check ends the command with exit 6 in
// Claude Code's own words and nothing written to the forge; past the
// pre-flight (--no-agent-check), the refused key ends the run errored
// with exit 6 at its first agent run (the local review's), the CLI's
// report quoted, needs-attention
// and one comment naming the agent at the forge — once, however often the
// run is repeated — and the key in no comment.
func TestAG_T4_RealClaudeWithoutWorkingCredentialsExits6(t *testing.T) {
	bin := agenttest.RealCLI(t, claude.BinaryEnv, "claude", "@anthropic-ai/claude-code")
	t.Parallel()
	info, _ := sandbox(t)
	const key = "sk-ant-api03-refusedrefusedrefused0123456789"
	srv, url := agenttest.Serve(t)
	srv.Refuse = func(string, *http.Request) (int, string) { return 401, "invalid x-api-key" }

	ref, err := forge.ParsePRURL(info.PRURL)
	if err != nil {
		t.Fatal(err)
	}
	client, err := ghclient.New(ghclient.Options{APIURL: info.APIURL, GraphQLURL: info.GraphQLURL, Token: info.Tokens.Reviewer, CAFile: info.CAFile})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	observe := func() *forge.PullRequest {
		t.Helper()
		pr, err := client.Observe(ctx, ref)
		if err != nil {
			t.Fatal(err)
		}
		return pr
	}
	before := marksOf(observe())
	args := func(state string, more ...string) []string {
		return append([]string{"pr", info.PRURL, "--api-url", info.APIURL, "--ca-file", info.CAFile, "--state", state,
			"--poll-min", "50ms", "--poll-max", "500ms", "--agent", "claude", "--agent-timeout", "5m",
			"--review-angles", "correctness-leak"}, more...)
	}

	for _, tc := range []struct {
		name string
		env  map[string]string
		says string // Claude Code's own words in converge's error
	}{
		{"no key", map[string]string{"ANTHROPIC_API_KEY": "", "ANTHROPIC_BASE_URL": url}, "Not logged in"},
		{"refused key", map[string]string{"ANTHROPIC_API_KEY": key, "ANTHROPIC_BASE_URL": url}, "401"},
	} {
		env := claudeEnv(t, bin, url, map[string]string{"CONVERGE_TOKEN": info.Tokens.Author})
		for k, v := range tc.env {
			env[k] = v
		}
		code, out := runBin(t, env, args(t.TempDir())...)
		t.Logf("%s: exit %d\n%s", tc.name, code, out)
		if code != 6 || !strings.Contains(out, tc.says) || strings.Contains(out, key) {
			t.Fatalf("%s: pre-flight: want exit 6 quoting %q without the key, got exit %d:\n%s", tc.name, tc.says, code, out)
		}
		if after := marksOf(observe()); !after.same(before) {
			t.Fatalf("%s: the pre-flight wrote to the forge: %+v, before %+v", tc.name, after, before)
		}
	}

	// Past the pre-flight: the first agent run is refused.
	env := claudeEnv(t, bin, url, map[string]string{"CONVERGE_TOKEN": info.Tokens.Author, "ANTHROPIC_API_KEY": key})
	for range 2 {
		code, out := runBin(t, env, args(t.TempDir(), "--no-agent-check")...)
		t.Logf("mid-run: exit %d\n%s", code, out)
		if code != 6 || !strings.Contains(out, "authentication failed") || strings.Contains(out, key) {
			t.Fatalf("mid-run: want exit 6 naming the authentication failure without the key, got exit %d:\n%s", code, out)
		}
	}
	pr := observe()
	if !slices.Contains(pr.Labels, prloop.LabelNeedsAttention) {
		t.Errorf("labels %q lack %s", pr.Labels, prloop.LabelNeedsAttention)
	}
	var failures []string
	for _, c := range pr.IssueComments {
		if strings.Contains(c.Body, "converge:agent-failure") {
			failures = append(failures, c.Body)
		}
		if strings.Contains(c.Body, key) {
			t.Errorf("a comment carries the model key:\n%s", c.Body)
		}
	}
	if len(failures) != 1 || !strings.Contains(failures[0], "claude") {
		t.Errorf("want one agent-failure comment naming claude, got %d:\n%s", len(failures), strings.Join(failures, "\n---\n"))
	}
	if pr.HeadSHA != before.head {
		t.Errorf("the head moved to %s: nothing may be pushed by a refused agent", pr.HeadSHA)
	}
}

// writeFile writes content at dir/rel, making its directories.
func writeFile(t *testing.T, dir, rel, content string) {
	t.Helper()
	p := filepath.Join(dir, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestAG_T4_RealCLIsRefusedKeyExits6AtThePreflight: for Codex, Gemini CLI
// and OpenCode, each set up as its users set it up but with a key the
// model API refuses (401), `converge pr --agent NAME` ends at the
// pre-flight with exit 6 naming the authentication failure, the key in
// no output, and nothing written to the forge (AG-T4, IF-1).
func TestAG_T4_RealCLIsRefusedKeyExits6AtThePreflight(t *testing.T) {
	type setup struct {
		name, pkg, binEnv string
		env               func(home, url string) map[string]string
	}
	const key = "sk-refusedrefusedrefused0123456789"
	cases := []setup{
		{"codex", "@openai/codex", codex.BinaryEnv, func(home, url string) map[string]string {
			writeFile(t, home, ".codex/config.toml", "openai_base_url = \""+url+"/v1\"\n\n[features]\nplugins = false\n")
			return map[string]string{"CODEX_HOME": filepath.Join(home, ".codex"), "CODEX_API_KEY": key}
		}},
		{"gemini", "@google/gemini-cli", gemini.BinaryEnv, func(home, url string) map[string]string {
			writeFile(t, home, ".gemini/settings.json", `{"security":{"auth":{"selectedType":"gemini-api-key"}},"privacy":{"usageStatisticsEnabled":false},"general":{"disableAutoUpdate":true}}`)
			return map[string]string{"GEMINI_API_KEY": key, "GOOGLE_GEMINI_BASE_URL": url}
		}},
		{"opencode", "opencode-ai", opencode.BinaryEnv, func(home, url string) map[string]string {
			writeFile(t, home, ".config/opencode/opencode.json", `{"provider": {"anthropic": {"options": {"baseURL": "`+url+`/v1"}}}}`)
			return map[string]string{"ANTHROPIC_API_KEY": key, "OPENCODE_DISABLE_MODELS_FETCH": "1"}
		}},
	}
	bins := map[string]string{}
	for _, c := range cases {
		bins[c.name] = agenttest.RealCLI(t, c.binEnv, c.name, c.pkg)
	}
	t.Parallel()
	info, _ := sandbox(t)
	srv, url := agenttest.Serve(t)
	srv.Refuse = func(string, *http.Request) (int, string) { return 401, "invalid api key" }
	ref, err := forge.ParsePRURL(info.PRURL)
	if err != nil {
		t.Fatal(err)
	}
	client, err := ghclient.New(ghclient.Options{APIURL: info.APIURL, GraphQLURL: info.GraphQLURL, Token: info.Tokens.Reviewer, CAFile: info.CAFile})
	if err != nil {
		t.Fatal(err)
	}
	observe := func() forgeMarks {
		t.Helper()
		pr, err := client.Observe(context.Background(), ref)
		if err != nil {
			t.Fatal(err)
		}
		return marksOf(pr)
	}
	before := observe()
	for _, c := range cases {
		home := t.TempDir()
		env := c.env(home, url)
		env["HOME"], env[c.binEnv], env["CONVERGE_TOKEN"] = home, bins[c.name], info.Tokens.Author
		code, out := runBin(t, env, "pr", info.PRURL, "--api-url", info.APIURL, "--ca-file", info.CAFile, "--state", t.TempDir(),
			"--agent", c.name, "--agent-timeout", "5m")
		t.Logf("%s: exit %d\n%s", c.name, code, out)
		if code != 6 || !strings.Contains(out, "agent "+c.name+": authentication failed") || strings.Contains(out, key) {
			t.Errorf("%s: want exit 6 naming its authentication failure without the key, got exit %d:\n%s", c.name, code, out)
		}
		if after := observe(); !after.same(before) {
			t.Fatalf("%s: the pre-flight wrote to the forge: %+v, before %+v", c.name, after, before)
		}
	}
}

// TestPR_T5_RealClaudeCostBoundEndsTheRun: `converge pr --max-cost` with
// the real Claude Code CLI, whose result events carry its price: once the
// agents' reported cost reaches the bound, no further round starts and
// the run ends cap-exhausted (exit 4), saying what was spent; the PR is
// not labelled ready.
func TestPR_T5_RealClaudeCostBoundEndsTheRun(t *testing.T) {
	bin := agenttest.RealCLI(t, claude.BinaryEnv, "claude", "@anthropic-ai/claude-code")
	t.Parallel()
	info, _ := sandbox(t)
	_, url := agenttest.Serve(t,
		fakemodel.Script{Match: reviewPrompt, Turns: []fakemodel.Turn{{Text: "Nothing from this angle.\n[]",
			Usage: fakemodel.Usage{InputTokens: 20000, OutputTokens: 2000}}}},
		// Round 1's fixer fixes Copilot's first two findings (as in
		// TestAG_B1_RealClaudeFixesTheSandboxPRToTwoStable), so the run
		// would go on to round 2 but for its bound.
		fakemodel.Script{Match: fixPrompt, Turns: []fakemodel.Turn{
			{Calls: []fakemodel.ToolCall{{Name: "Edit", Input: map[string]any{"file_path": "summary.go", "old_string": meanOld, "new_string": meanNew}}}},
			{Calls: []fakemodel.ToolCall{{Name: "Edit", Input: map[string]any{"file_path": "summary.go", "old_string": boundOld, "new_string": boundNew}}}},
			{Text: "Applied both suggestions.\n" + statusRecord(t, "Mean returns ErrEmpty on empty input; MovingSum keeps the last window"),
				Usage: fakemodel.Usage{InputTokens: 20000, OutputTokens: 2000}},
		}},
		verifierScript(t),
	)
	code, out := runBin(t, claudeEnv(t, bin, url, map[string]string{"CONVERGE_TOKEN": info.Tokens.Author}),
		"pr", info.PRURL, "--api-url", info.APIURL, "--ca-file", info.CAFile, "--state", t.TempDir(),
		"--poll-min", "50ms", "--poll-max", "500ms", "--agent", "claude", "--agent-timeout", "2m", "--no-agent-check",
		"--review-angles", "correctness-leak", "--max-cost", "0.0001")
	t.Logf("exit %d\n%s", code, out)
	if code != 4 || !strings.Contains(out, "cap-exhausted") || !regexp.MustCompile(`max_cost \$0\.0001 spent: the agents reported \$[0-9.]+`).MatchString(out) {
		t.Fatalf("want cap-exhausted (exit 4) naming the spend, got exit %d:\n%s", code, out)
	}
	ref, err := forge.ParsePRURL(info.PRURL)
	if err != nil {
		t.Fatal(err)
	}
	client, err := ghclient.New(ghclient.Options{APIURL: info.APIURL, GraphQLURL: info.GraphQLURL, Token: info.Tokens.Reviewer, CAFile: info.CAFile})
	if err != nil {
		t.Fatal(err)
	}
	pr, err := client.Observe(context.Background(), ref)
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(pr.Labels, prloop.LabelReady) {
		t.Errorf("a run ended by its cost bound labelled the PR %s: %q", prloop.LabelReady, pr.Labels)
	}
}
