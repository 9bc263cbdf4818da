//go:build linux

package secure

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// helperEnv makes the test binary act as converge's main: Harden, then
// report what the process shows of itself.
const helperEnv = "SECURE_TEST_HARDEN"

type helperReport struct {
	Args      []string
	Getenv    map[string]string
	Environ   string // /proc/self/environ
	Cmdline   string // /proc/self/cmdline
	Comm      string
	Dumpable  int
	Warning   string
	Err       string
	Marker    string // handoffEnv as the process sees it afterwards
	PipeStill bool   // the hand-over descriptor is still open
	Pid       int
}

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) == "1" {
		os.Exit(harden())
	}
	os.Exit(m.Run())
}

func harden() int {
	marker := os.Getenv(handoffEnv)
	s, err := Harden(os.Args)
	r := helperReport{Getenv: map[string]string{}, Pid: os.Getpid()}
	if err != nil {
		r.Err = err.Error()
	} else {
		r.Args, r.Warning = s.Args, s.Warning
		for _, k := range TokenEnv {
			r.Getenv[k] = s.Getenv(os.Getenv)(k)
		}
	}
	env, _ := os.ReadFile("/proc/self/environ")
	cmd, _ := os.ReadFile("/proc/self/cmdline")
	comm, _ := os.ReadFile("/proc/self/comm")
	r.Environ, r.Cmdline, r.Comm = string(env), string(cmd), strings.TrimSpace(string(comm))
	r.Dumpable, _ = unix.PrctlRetInt(unix.PR_GET_DUMPABLE, 0, 0, 0, 0)
	r.Marker = os.Getenv(handoffEnv)
	if n, err := strconv.Atoi(marker); err == nil && n > 2 {
		var st unix.Stat_t
		r.PipeStill = unix.Fstat(n, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFIFO
	}
	b, _ := json.Marshal(r)
	fmt.Println(string(b))
	return 0
}

func runHelper(t *testing.T, args []string, env ...string) helperReport {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe)
	cmd.Args = args
	cmd.Env = append(slices.DeleteFunc(os.Environ(), func(kv string) bool {
		k, _, _ := strings.Cut(kv, "=")
		return slices.Contains(TokenEnv, k) || k == handoffEnv
	}), append(env, helperEnv+"=1")...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("helper: %v\n%s", err, errb.String())
	}
	var r helperReport
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		t.Fatalf("helper output: %v\n%s%s", err, out.String(), errb.String())
	}
	return r
}

// TestSEC2_HardenHidesTokensFromProc starts a process the way converge's
// main does, with tokens in its environment and on its command line: after
// Harden neither /proc/self/environ nor /proc/self/cmdline holds them, the
// process is not dumpable, and it still sees the same command line and
// variables through Start.
func TestSEC2_HardenHidesTokensFromProc(t *testing.T) {
	const flagTok, eqTok, envTok, ghTok = "ghp_FLAGflag0123456789", "ghp_EQUALSeq0123456789", "ghp_ENVenv0123456789", "ghs_GHgh0123456789"
	args := []string{"converge", "pr", "https://h/o/r/pull/1", "--token", flagTok, "--json", "--token=" + eqTok}
	r := runHelper(t, args, "CONVERGE_TOKEN="+envTok, "GH_TOKEN="+ghTok)
	if r.Err != "" || r.Warning != "" {
		t.Fatalf("Harden: err %q warning %q", r.Err, r.Warning)
	}
	if !slices.Equal(r.Args, args) {
		t.Errorf("Start.Args = %q, want the original %q", r.Args, args)
	}
	if r.Getenv["CONVERGE_TOKEN"] != envTok || r.Getenv["GH_TOKEN"] != ghTok || r.Getenv["GITHUB_TOKEN"] != "" {
		t.Errorf("Start.Getenv = %v", r.Getenv)
	}
	for _, tok := range []string{flagTok, eqTok, envTok, ghTok} {
		if strings.Contains(r.Environ, tok) {
			t.Errorf("/proc/self/environ holds %s", tok)
		}
		if strings.Contains(r.Cmdline, tok) {
			t.Errorf("/proc/self/cmdline holds %s: %q", tok, r.Cmdline)
		}
	}
	if !strings.Contains(r.Cmdline, "--json") || !strings.Contains(r.Environ, helperEnv+"=1") {
		t.Errorf("the re-exec lost the rest of the command line or environment:\ncmdline %q", r.Cmdline)
	}
	if r.Dumpable != 0 {
		t.Errorf("dumpable = %d, want 0", r.Dumpable)
	}
	if r.Marker != "" || r.PipeStill {
		t.Errorf("hand-over left behind: marker %q, pipe open %v", r.Marker, r.PipeStill)
	}
	exe, _ := os.Executable()
	if want := filepath.Base(exe); len(want) > 15 && r.Comm != want[:15] || len(want) <= 15 && r.Comm != want {
		t.Errorf("comm = %q, want the binary's name %q, not exe", r.Comm, want)
	}
}

// TestSEC2_HardenWithoutTokensStaysInProcess: nothing to hide, no re-exec,
// and the process is still made non-dumpable.
func TestSEC2_HardenWithoutTokensStaysInProcess(t *testing.T) {
	args := []string{"converge", "status"}
	r := runHelper(t, args, "GITHUB_TOKEN=")
	if r.Err != "" || r.Warning != "" || !slices.Equal(r.Args, args) || r.Dumpable != 0 {
		t.Errorf("report %+v", r)
	}
}

// TestSEC2_HardenMarkerNeverLoops: a start that finds the marker never
// re-execs, and one whose marker names no pipe stops rather than run
// without the credentials it was meant to get.
func TestSEC2_HardenMarkerNeverLoops(t *testing.T) {
	r := runHelper(t, []string{"converge", "pr", "--token", "x"}, handoffEnv+"=0", "CONVERGE_TOKEN=y")
	if r.Err == "" || !strings.Contains(r.Err, "not a descriptor") {
		t.Errorf("marker 0: want an error, got %+v", r)
	}
	r = runHelper(t, []string{"converge"}, handoffEnv+"=99")
	if r.Err == "" {
		t.Errorf("marker naming a closed descriptor: want an error, got %+v", r)
	}
}
