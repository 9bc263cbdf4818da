package github_test

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/convergeloop/converge/internal/forge"
	"github.com/convergeloop/converge/internal/testutil/hubtest"
)

// TestPR_O1_DemoObservationCarriesTheRepositorysHunks: converge's one
// observation of the demo PR, after Copilot's first review, gives every
// thread's first comment the diff hunk git itself cuts from the demo
// repository: a hunk of `git diff base...commit` (three lines of context)
// read from its header down to the commented line (bounded as the client
// bounds it), whose text is that line of the file at the comment's commit.
func TestPR_O1_DemoObservationCarriesTheRepositorysHunks(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	hub, demo := hubtest.Demo(t, 50*time.Millisecond)
	tok := hub.Tokens().Author
	c := hubtest.Client(t, hub, tok)
	ref, err := forge.ParsePRURL(demo.PRURL)
	if err != nil {
		t.Fatal(err)
	}
	reviewedByCopilot(t, hub, c, ref)
	hub.ResetRequestCounts()
	pr, err := c.Observe(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	if n := hub.RequestCount(); n.GraphQL != 1 || n.REST != 0 {
		t.Fatalf("observing cost %d GraphQL and %d REST requests, want one GraphQL", n.GraphQL, n.REST)
	}
	if len(pr.Threads) == 0 {
		t.Fatal("Copilot's review opened no thread")
	}

	dir := t.TempDir()
	gitIn := func(args ...string) string {
		t.Helper()
		cmd := exec.CommandContext(ctx, "git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), hub.GitEnv(tok)...)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("git %v: %v", args, err)
		}
		return string(out)
	}
	gitIn("clone", "--quiet", hub.GitURL(demo.Owner, demo.Repo), ".")
	gitIn("fetch", "--quiet", "origin", "+refs/heads/"+pr.HeadRef+":refs/remotes/origin/"+pr.HeadRef)
	for _, th := range pr.Threads {
		cm := th.Comments[0]
		hunk := cm.DiffHunk
		lines := strings.Split(hunk, "\n")
		if len(lines) < 2 || !strings.HasPrefix(hunk, "@@ ") {
			t.Errorf("thread %s: no hunk: %q", th.ID, hunk)
			continue
		}
		// git's hunk: from the header above the comment's lines down to
		// them, as bounded by the client.
		diff := gitIn("diff", "--no-color", "-U3", "origin/"+pr.BaseRef+"..."+cm.OriginalCommit, "--", th.Path)
		body := strings.Join(lines[1:], "\n")
		at := strings.Index(diff, "\n"+body+"\n")
		header := strings.LastIndex(diff[:max(at, 0)+1], "\n@@ ")
		if at < 0 || header < 0 {
			t.Errorf("thread %s: the hunk's lines are not git's:\n%s\n--- git diff:\n%s", th.ID, hunk, diff)
			continue
		}
		need := 1
		if th.OrigStart > 0 {
			need = th.OrigLine - th.OrigStart + 1
		}
		if want := forge.ClipDiffHunk(diff[header+1:at+1+len(body)], need); hunk != want {
			t.Errorf("thread %s: hunk\n%s\nwant git's\n%s", th.ID, hunk, want)
		}
		file := strings.Split(gitIn("show", cm.OriginalCommit+":"+th.Path), "\n")
		if last := lines[len(lines)-1]; th.OrigLine < 1 || th.OrigLine > len(file) || last[1:] != file[th.OrigLine-1] {
			t.Errorf("thread %s on line %d: the hunk ends %q, not on that line of %s", th.ID, th.OrigLine, last, th.Path)
		}
	}
}
