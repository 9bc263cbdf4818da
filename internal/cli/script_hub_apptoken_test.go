package cli

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/convergeloop/converge/internal/repo"
)

// Hub subcommands of the GitHub App token scenarios (SEC-5, SEC-3):
//
//	hub app-token-ttl DURATION  installation tokens minted from now on live DURATION
//	hub app-clock DURATION      the hub's App clock moves on DURATION: every token
//	                            minted so far whose life ends before it expires
//	hub app-tokens-absent DIR…  no installation token the hub ever minted, in any
//	                            form git or the API sends it, is in a file under DIR
func init() {
	hubCmds["app-token-ttl"] = func(ts *testscript.TestScript, neg bool, h *scriptHub, args []string) {
		if len(args) != 1 || neg {
			ts.Fatalf("usage: hub app-token-ttl DURATION")
		}
		d, err := time.ParseDuration(args[0])
		ts.Check(err)
		h.hub.SetAppTokenTTL(d)
	}
	hubCmds["app-clock"] = func(ts *testscript.TestScript, neg bool, h *scriptHub, args []string) {
		if len(args) != 1 || neg {
			ts.Fatalf("usage: hub app-clock DURATION")
		}
		d, err := time.ParseDuration(args[0])
		ts.Check(err)
		h.hub.AdvanceAppClock(d)
	}
	hubCmds["app-tokens-absent"] = func(ts *testscript.TestScript, neg bool, h *scriptHub, args []string) {
		if len(args) == 0 || neg {
			ts.Fatalf("usage: hub app-tokens-absent DIR…")
		}
		toks := h.hub.AppTokens()
		if len(toks) == 0 {
			ts.Fatalf("the hub minted no installation token")
		}
		var forms [][]byte
		for _, t := range toks {
			for _, f := range repo.Secrets(t) {
				forms = append(forms, []byte(f))
			}
		}
		files := 0
		for _, dir := range args {
			ts.Check(filepath.WalkDir(ts.MkAbs(dir), func(path string, d fs.DirEntry, err error) error {
				if err != nil || !d.Type().IsRegular() {
					return err
				}
				b, err := os.ReadFile(path)
				if err != nil {
					return err
				}
				files++
				for _, f := range forms {
					if bytes.Contains(b, f) {
						ts.Fatalf("%s holds an installation token", path)
					}
				}
				return nil
			}))
		}
		if files == 0 {
			ts.Fatalf("no file under %v", args)
		}
	}
}
