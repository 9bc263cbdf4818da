package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	gl "gitlab.com/gitlab-org/api/client-go"

	"github.com/convergeloop/converge/internal/cmdutil"
	"github.com/convergeloop/converge/internal/emulator/fakelab"
	"github.com/convergeloop/converge/internal/exitcode"
	"github.com/convergeloop/converge/internal/forge"
	"github.com/convergeloop/converge/internal/forge/forgehttp"
	glclient "github.com/convergeloop/converge/internal/forge/gitlab"
)

// TestSandbox_GitLabPrintsJSONAndServesTheMergeRequest runs `converge
// sandbox --forge gitlab`: its JSON line names a GitLab merge request URL
// converge parses as GitLab's, the official GitLab client reads that merge
// request with the author's token, git clones the project with the token
// as GitLab takes it (oauth2:TOKEN), and converge's GitLab client observes
// the same head.
func TestSandbox_GitLabPrintsJSONAndServesTheMergeRequest(t *testing.T) {
	pr, pw := io.Pipe()
	ios := &cmdutil.IOStreams{In: strings.NewReader(""), Out: pw, ErrOut: io.Discard, Getenv: func(string) string { return "" }}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan exitcode.Code, 1)
	go func() {
		done <- Run(ctx, []string{"sandbox", "--forge", "gitlab", "--state", filepath.Join(t.TempDir(), "sbx")}, ios)
	}()
	t.Cleanup(func() {
		cancel()
		if code := <-done; code != 0 {
			t.Errorf("sandbox exit %d after interrupt", code)
		}
	})
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	go io.Copy(io.Discard, pr)
	var info sandboxInfo
	if err := json.Unmarshal([]byte(line), &info); err != nil {
		t.Fatalf("sandbox line is not JSON: %v\n%s", err, line)
	}
	if info.Tokens.Author == "" || info.Tokens.Reviewer == "" || info.Tokens.Duo == "" || info.CAFile == "" || info.Tokens.Copilot != "" {
		t.Fatalf("sandbox line's tokens are not GitLab's: %s", line)
	}
	ref, err := forge.ParsePRURL(info.PRURL)
	if err != nil || ref.Forge != forge.GitLab || ref.FullName() != fakelab.DemoProject || ref.Number != info.PRNumber || info.Repo != fakelab.DemoProject {
		t.Fatalf("sandbox merge request %q parses as %+v (%v); line %s", info.PRURL, ref, err, line)
	}

	hc, err := forgehttp.HTTPClientWithCA(info.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	official, err := gl.NewClient(info.Tokens.Author, gl.WithBaseURL(info.APIURL), gl.WithHTTPClient(&http.Client{Transport: hc.Transport}))
	if err != nil {
		t.Fatal(err)
	}
	mr, _, err := official.MergeRequests.GetMergeRequest(info.Repo, int64(info.PRNumber), nil)
	if err != nil {
		t.Fatalf("the official client cannot read the merge request: %v", err)
	}
	client, err := glclient.New(glclient.Options{APIURL: info.APIURL, Token: info.Tokens.Author, HTTPClient: hc})
	if err != nil {
		t.Fatal(err)
	}
	obs, err := client.Observe(context.Background(), ref)
	if err != nil {
		t.Fatalf("converge cannot observe the merge request: %v", err)
	}
	if obs.HeadSHA != mr.SHA || obs.Ref != ref {
		t.Errorf("converge sees head %s of %v, the official client %s", obs.HeadSHA, obs.Ref, mr.SHA)
	}

	dir := t.TempDir()
	clone := strings.Replace(info.GitURL, "https://", "https://oauth2:"+info.Tokens.Author+"@", 1)
	cmd := exec.Command("git", "clone", "--quiet", clone, dir)
	cmd.Env = append(os.Environ(), "GIT_TERMINAL_PROMPT=0", "GIT_SSL_CAINFO="+info.CAFile)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git clone: %v\n%s", err, b)
	}
	head, err := exec.Command("git", "-C", dir, "rev-parse", "origin/"+mr.SourceBranch).Output()
	if err != nil || strings.TrimSpace(string(head)) != mr.SHA {
		t.Errorf("the clone's %s is %q (%v), the merge request's head %s", mr.SourceBranch, head, err, mr.SHA)
	}
}
