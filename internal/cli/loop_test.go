package cli

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
)

// TestLOOP_Acceptance runs the done-check loop's acceptance scenarios in
// testdata/loop (issue 10): real `converge loop` command lines on sample
// Go repositories created by the script, whose done-check is
// `go test ./...`. They live apart from testdata/script because they run
// the go command on their own modules, which needs this machine's build
// cache (a cold cache costs a minute per run), a module cache of their own
// and none of the GOFLAGS of the developer's shell. The loop scenarios that need
// no Go toolchain are testdata/script/loop_*.txtar.
func TestLOOP_Acceptance(t *testing.T) {
	t.Parallel() // each script has its own work directory, module cache and state
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("needs the go command")
	}
	out, err := exec.Command("go", "env", "GOCACHE").Output()
	cache := strings.TrimSpace(string(out))
	if err != nil || cache == "" || cache == "off" {
		t.Skipf("no go build cache (%v)", err)
	}
	testscript.Run(t, testscript.Params{
		Dir: "testdata/loop",
		Setup: func(env *testscript.Env) error {
			// The same clean environment as TestScripts, plus the go
			// command's build cache and a module cache of the script's own.
			for _, k := range []string{"CONVERGE_TOKEN", "GH_TOKEN", "GITHUB_TOKEN", "GH_ENTERPRISE_TOKEN", "GITHUB_ENTERPRISE_TOKEN", "GITHUB_API_URL"} {
				env.Setenv(k, "")
			}
			env.Setenv("XDG_STATE_HOME", env.WorkDir+"/state")
			// The scripted agents write their logs in $WORK (SEC-7).
			env.Setenv("CONVERGE_SANDBOX_WRITABLE", env.WorkDir)
			env.Setenv("GOCACHE", cache)
			env.Setenv("GOPATH", env.WorkDir+"/gopath")
			env.Setenv("GOTOOLCHAIN", "local")
			// None of the developer's GOFLAGS; those the scripts' go
			// commands get (gobuild.ShareCache): the build cache shared
			// across the scripts' directories, no vet pass.
			env.Setenv("GOFLAGS", "-trimpath -vet=off")
			checkEvents(env)
			return nil
		},
	})
}
