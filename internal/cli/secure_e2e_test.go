package cli

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/convergeloop/converge/internal/emulator/fakehub"
	"github.com/convergeloop/converge/internal/exitcode"
	"github.com/convergeloop/converge/internal/repo"
	"github.com/convergeloop/converge/internal/secure"
)

// buildConverge builds the real binary: only its main hardens the process
// (SEC-2); tests calling Run stay in process and prove nothing about /proc.
// It is built once per package run and shared (TestMain removes it).
func buildConverge(t testing.TB) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the converge binary")
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go not on PATH")
	}
	built.once.Do(func() {
		if built.dir, built.err = os.MkdirTemp("", "converge-bin-"); built.err != nil {
			return
		}
		built.bin = filepath.Join(built.dir, "converge")
		cmd := exec.Command(goTool, "build", "-o", built.bin, "github.com/convergeloop/converge/cmd/converge")
		built.out, built.err = cmd.CombinedOutput()
	})
	if built.err != nil {
		t.Fatalf("go build: %v\n%s", built.err, built.out)
	}
	return built.bin
}

// built is the one converge binary buildConverge makes.
var built struct {
	once     sync.Once
	dir, bin string
	out      []byte
	err      error
}

// removeBuiltConverge deletes the binary buildConverge made, if any.
func removeBuiltConverge() {
	if built.dir != "" {
		os.RemoveAll(built.dir)
	}
}

// procSpyAgent is an agent that, like a hostile one, reads what /proc shows
// of every ancestor process (the shell converge started it with, converge
// itself, and up) into dir/ancestors, with its own environment in
// dir/agent-env, then gives up on the task.
const procSpyAgent = `#!/bin/sh
cat > /dev/null
out=%DIR%
env > "$out/agent-env"
pid=$PPID
while [ -n "$pid" ] && [ "$pid" -gt 1 ]; do
  {
    printf '== pid %s comm %s\n' "$pid" "$(cat /proc/$pid/comm 2>/dev/null)"
    printf -- '-- cmdline\n'; tr '\0' ' ' < /proc/$pid/cmdline 2>&1; echo
    printf -- '-- environ\n'; tr '\0' '\n' < /proc/$pid/environ 2>&1; echo
  } >> "$out/ancestors.tmp"
  pid=$(awk '/^PPid:/ {print $2}' /proc/$pid/status 2>/dev/null)
done
mv "$out/ancestors.tmp" "$out/ancestors"
echo '{"status":"blocked","next_action":"","needs_extension_minutes":0,"summary":"spied","files_changed":[],"reason":"test agent"}'
`

// TestSEC2_AgentCannotReadTokenFromConvergeProcess runs the real binary
// against the emulator in its plain-http mode on 127.0.0.1 (SEC-6 allows
// loopback), once with the token in the environment and once on the
// command line. The agent walks up its ancestors reading
// /proc/PID/environ and /proc/PID/cmdline: converge is among them, and
// none holds the token, nor does the agent's own environment hold it or
// git's credentials. Run as root, where permissions stop nothing, this
// checks what the files contain; as another user converge is also not
// dumpable, so its environ cannot be read at all.
func TestSEC2_AgentCannotReadTokenFromConvergeProcess(t *testing.T) {
	t.Parallel() // each test has its own emulator and state
	bin := buildConverge(t)
	for _, tc := range []struct {
		name string
		env  func(tok string) []string
		args func(tok string) []string
	}{
		{"token in environment",
			func(tok string) []string { return []string{"GH_ENTERPRISE_TOKEN=" + tok} },
			func(string) []string { return nil }},
		{"token on command line",
			func(string) []string { return nil },
			func(tok string) []string { return []string{"--token", tok} }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel() // its own emulator, state and spy directory
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			hub, err := fakehub.New(fakehub.Options{StateDir: t.TempDir(), HTTP: true, CopilotDelay: 100 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			if err := hub.Start(ctx); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { hub.Close() })
			demo, err := fakehub.SeedDemo(ctx, hub)
			if err != nil {
				t.Fatal(err)
			}
			tok := hub.Tokens().Author

			spy := t.TempDir()
			script := filepath.Join(spy, "agent.sh")
			if err := os.WriteFile(script, []byte(strings.ReplaceAll(procSpyAgent, "%DIR%", spy)), 0o755); err != nil {
				t.Fatal(err)
			}
			state := t.TempDir()
			args := append([]string{"pr", demo.PRURL, "--state", state, "--poll-min", "50ms", "--poll-max", "500ms",
				"--max-iterations", "1", "--agent", "command", "--agent-cmd", script, uncontainedForPIDs}, tc.args(tok)...)
			rctx, rcancel := context.WithTimeout(ctx, 2*time.Minute)
			defer rcancel()
			cmd := exec.CommandContext(rctx, bin, args...)
			cmd.Env = append(slices.DeleteFunc(os.Environ(), func(kv string) bool {
				k, _, _ := strings.Cut(kv, "=")
				return slices.Contains(secure.TokenEnv, k) || k == "GITHUB_API_URL"
			}), append(tc.env(tok), "GH_CONFIG_DIR="+t.TempDir())...)
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			err = cmd.Run()
			code := exitcode.Code(cmd.ProcessState.ExitCode())
			if code == exitcode.Usage || code == exitcode.Auth || code == exitcode.Unreachable || rctx.Err() != nil {
				t.Fatalf("converge exit %d (%v): the token did not get through\n%s", code, err, out.String())
			}
			if strings.Contains(out.String(), tok) {
				t.Errorf("converge printed the token (SEC-3)")
			}

			anc, err := os.ReadFile(filepath.Join(spy, "ancestors"))
			if err != nil {
				t.Fatalf("the agent never ran: %v\n%s", err, out.String())
			}
			pid := strconv.Itoa(cmd.Process.Pid)
			if !strings.Contains(string(anc), "== pid "+pid+" comm converge\n") {
				t.Fatalf("converge (pid %s, named converge) is not among the agent's ancestors:\n%s", pid, anc)
			}
			if !strings.Contains(string(anc), demo.PRURL) {
				t.Errorf("no ancestor's cmdline shows the PR URL: the spy read nothing useful:\n%s", anc)
			}
			for _, where := range sectionsHolding(string(anc), repo.Secrets(tok)) {
				t.Errorf("the token is readable in /proc/%s", where)
			}
			agentEnv, _ := os.ReadFile(filepath.Join(spy, "agent-env"))
			for _, s := range append(repo.Secrets(tok), "GIT_CONFIG_", "extraHeader") {
				if strings.Contains(string(agentEnv), s) {
					t.Errorf("the agent's environment holds %q", s)
				}
			}
		})
	}
}

// sectionsHolding names the "PID/cmdline" and "PID/environ" sections of
// the spy's dump that contain any of secrets, without quoting them.
func sectionsHolding(dump string, secrets []string) []string {
	var found []string
	pid, section := "", ""
	var body strings.Builder
	flush := func() {
		for _, s := range secrets {
			if section != "" && strings.Contains(body.String(), s) {
				found = append(found, pid+"/"+section)
				break
			}
		}
		body.Reset()
	}
	for _, line := range strings.Split(dump, "\n") {
		switch {
		case strings.HasPrefix(line, "== pid "):
			flush()
			pid, section = strings.Fields(line)[2], ""
		case strings.HasPrefix(line, "-- "):
			flush()
			section = strings.TrimPrefix(line, "-- ")
		default:
			body.WriteString(line + "\n")
		}
	}
	flush()
	return found
}

// TestSEC6_RealBinaryRefusesHostMismatch: the built binary, given a PR URL
// on one host and --api-url on another, exits 2 with one line before it
// sends either host anything.
func TestSEC6_RealBinaryRefusesHostMismatch(t *testing.T) {
	t.Parallel() // each test has its own emulator and state
	bin := buildConverge(t)
	hub, demo := startHub(t, time.Second)
	other, hits := countingServer(t)
	prURL := strings.Replace(demo.PRURL, hub.BaseURL(), other.URL, 1)
	before := hub.RequestCount()
	cmd := exec.Command(bin, "pr", prURL, "--api-url", hub.APIURL(), "--ca-file", hub.CAFile(), "--state", t.TempDir())
	cmd.Env = append(os.Environ(), "CONVERGE_TOKEN="+hub.Tokens().Author)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	_ = cmd.Run()
	if code := exitcode.Code(cmd.ProcessState.ExitCode()); code != exitcode.Usage || strings.Count(stderr.String(), "\n") != 1 ||
		!strings.Contains(stderr.String(), "--allow-host-mismatch") {
		t.Fatalf("exit %d, want 2 with one line naming --allow-host-mismatch\n%s%s", code, stdout.String(), stderr.String())
	}
	if hits.Load() != 0 || hub.RequestCount().Total() != before.Total() || hub.RequestCount().Git != before.Git {
		t.Errorf("requests were sent before the refusal: other host %d, API %+v → %+v", hits.Load(), before, hub.RequestCount())
	}
}
