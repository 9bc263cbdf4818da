package cli

import (
	"os"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
)

func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"converge": func() { os.Exit(Main()) },
	})
}

// TestScripts runs the txtar scenarios in testdata/script: real command
// lines of the converge binary, named after the SPEC IDs they prove.
func TestScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir:  "testdata/script",
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){"hub": cmdHub},
		Setup: func(env *testscript.Env) error {
			// A clean environment: no tokens leak in from the developer's shell.
			for _, k := range []string{"CONVERGE_TOKEN", "GH_TOKEN", "GITHUB_TOKEN", "GH_ENTERPRISE_TOKEN", "GITHUB_ENTERPRISE_TOKEN", "GITHUB_API_URL"} {
				env.Setenv(k, "")
			}
			env.Setenv("XDG_STATE_HOME", env.WorkDir+"/state")
			env.Setenv("GH_CONFIG_DIR", env.WorkDir+"/gh")
			return nil
		},
	})
}
