package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/convergeloop/converge/internal/cmdutil"
	"github.com/convergeloop/converge/internal/exitcode"
	"github.com/convergeloop/converge/internal/forge"
	"github.com/convergeloop/converge/internal/forge/forgehttp"
	ghclient "github.com/convergeloop/converge/internal/forge/github"
	glclient "github.com/convergeloop/converge/internal/forge/gitlab"
)

// TestREL_4_SandboxNoCIHasNoCI: `converge sandbox --no-ci` (both forges)
// seeds a repository on which no CI ever reports. Run beside the same
// sandbox with CI: once that one's CI has reported on its PR's head, the
// --no-ci one's head still shows no check run, status or pipeline.
func TestREL_4_SandboxNoCIHasNoCI(t *testing.T) {
	for _, kind := range []string{"github", "gitlab"} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			withCI := startSandbox(t, "--forge", kind)
			noCI := startSandbox(t, "--forge", kind, "--no-ci")
			deadline := time.After(3 * time.Minute)
			for {
				if cx := headChecks(t, withCI); len(cx) > 0 && cx[0].Conclusion != "" && cx[0].Conclusion != "PENDING" { // finished
					break
				}
				select {
				case <-deadline:
					t.Fatalf("the sandbox with CI showed no finished CI on its head: %+v", headChecks(t, withCI))
				case <-time.After(100 * time.Millisecond):
				}
			}
			if cx := headChecks(t, noCI); len(cx) != 0 {
				t.Fatalf("the --no-ci sandbox's head shows CI: %+v", cx)
			}
		})
	}
}

// startSandbox runs `converge sandbox` with args until the test ends and
// returns its JSON line.
func startSandbox(t *testing.T, args ...string) sandboxInfo {
	t.Helper()
	pr, pw := io.Pipe()
	ios := &cmdutil.IOStreams{In: strings.NewReader(""), Out: pw, ErrOut: io.Discard, Getenv: func(string) string { return "" }}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan exitcode.Code, 1)
	go func() {
		code := Run(ctx, append([]string{"sandbox", "--state", filepath.Join(t.TempDir(), "sbx")}, args...), ios)
		pw.Close()
		done <- code
	}()
	t.Cleanup(func() {
		cancel()
		if code := <-done; code != 0 {
			t.Errorf("sandbox %v exit %d after interrupt", args, code)
		}
	})
	br := bufio.NewReader(pr)
	line, err := br.ReadString('\n')
	if err != nil {
		t.Fatalf("sandbox %v printed no line: %v", args, err)
	}
	go func() { _, _ = io.Copy(io.Discard, br) }()
	var info sandboxInfo
	if err := json.Unmarshal([]byte(line), &info); err != nil {
		t.Fatalf("sandbox line is not JSON: %v\n%s", err, line)
	}
	return info
}

// headChecks are the checks converge's own client observes on the
// sandbox PR's head, on either forge.
func headChecks(t *testing.T, info sandboxInfo) []forge.CheckContext {
	t.Helper()
	ref, err := forge.ParsePRURL(info.PRURL)
	if err != nil {
		t.Fatal(err)
	}
	var f forge.Forge
	if ref.Forge == forge.GitLab {
		hc, err := forgehttp.HTTPClientWithCA(info.CAFile)
		if err != nil {
			t.Fatal(err)
		}
		f, err = glclient.New(glclient.Options{APIURL: info.APIURL, Token: info.Tokens.Author, HTTPClient: hc})
		if err != nil {
			t.Fatal(err)
		}
	} else {
		f, err = ghclient.New(ghclient.Options{APIURL: info.APIURL, GraphQLURL: info.GraphQLURL, Token: info.Tokens.Author, CAFile: info.CAFile})
		if err != nil {
			t.Fatal(err)
		}
	}
	pr, err := f.Observe(context.Background(), ref)
	if err != nil {
		t.Fatal(err)
	}
	return pr.Checks.Contexts
}
