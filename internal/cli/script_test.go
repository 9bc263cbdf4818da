package cli

import (
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/convergeloop/converge/internal/proc"
	"github.com/convergeloop/converge/internal/testutil/gobuild"
)

func TestMain(m *testing.M) {
	// In-process runs are supervised as the binary's are (AG-K1), and a
	// re-executed test binary becomes the supervisor here.
	proc.Supervise()
	// The seeded repository's `go test ./...`, run by converge in each
	// fresh worktree and by the emulator's CI on each head, shares the
	// build cache instead of compiling and linking again per directory.
	gobuild.ShareCache()
	testscript.Main(withBuiltBinary{m}, map[string]func(){
		"converge": convergeMain,
	})
}

// withBuiltBinary removes the converge binary buildConverge built once for
// the package, after the tests.
type withBuiltBinary struct{ m *testing.M }

func (w withBuiltBinary) Run() int {
	defer removeBuiltConverge()
	return w.m.Run()
}

// TestScripts runs the txtar scenarios in testdata/script: real command
// lines of the converge binary, named after the SPEC IDs they prove.
func TestScripts(t *testing.T) {
	t.Parallel() // each script has its own emulator and work directory
	testscript.Run(t, testscript.Params{
		Dir:   "testdata/script",
		Cmds:  map[string]func(ts *testscript.TestScript, neg bool, args []string){"hub": cmdHub},
		Setup: scriptSetup,
	})
}

// scriptSetup is the environment of every txtar scenario (TestScripts and
// the scenario table).
func scriptSetup(env *testscript.Env) error {
	// A clean environment: no tokens leak in from the developer's shell.
	for _, k := range []string{"CONVERGE_TOKEN", "GH_TOKEN", "GITHUB_TOKEN", "GH_ENTERPRISE_TOKEN", "GITHUB_ENTERPRISE_TOKEN", "GITHUB_API_URL"} {
		env.Setenv(k, "")
	}
	env.Setenv("XDG_STATE_HOME", env.WorkDir+"/state")
	env.Setenv("GH_CONFIG_DIR", env.WorkDir+"/gh")
	// The scripted agents write their logs in $WORK (SEC-7: contained,
	// they may write only where they are told they may; the state, in
	// $WORK too, never shows).
	env.Setenv("CONVERGE_SANDBOX_WRITABLE", env.WorkDir)
	checkEvents(env)
	// The go commands converge runs share the host's build cache
	// (HOME is /no-home here).
	for _, kv := range gobuild.Env() {
		k, v, _ := strings.Cut(kv, "=")
		env.Setenv(k, v)
	}
	return nil
}
