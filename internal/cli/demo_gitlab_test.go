package cli

import (
	"context"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"

	gl "gitlab.com/gitlab-org/api/client-go"

	"github.com/convergeloop/converge/internal/cmdutil"
	"github.com/convergeloop/converge/internal/emulator/fakelab"
	"github.com/convergeloop/converge/internal/forge"
	"github.com/convergeloop/converge/internal/prloop"
	"github.com/convergeloop/converge/internal/testutil/labtest"
)

// TestIF6_DemoOnGitLabConvergesWithProof runs `converge demo --forge
// gitlab`: the local review is the independent reviewer (no Duo), the
// run ends two-stable, and the emulator shows it — the proof's head is the
// merge request's head, the ready label is on, converge's commit status on
// that head is success, its pipeline passed, and the head no longer holds
// the defects the first review found.
func TestIF6_DemoOnGitLabConvergesWithProof(t *testing.T) {
	t.Parallel() // each test has its own emulator and state
	ios, out, errOut := testIO(nil)
	var checked bool
	opts := &demoOptions{Forge: forge.GitLab, StateDir: t.TempDir(), factory: cmdutil.NewFactory(ios)}
	opts.atForge = func(lab *fakelab.Lab, demo fakelab.DemoInfo) {
		checked = true
		mr, err := lab.MR(demo.Project, demo.IID)
		if err != nil {
			t.Errorf("read the merge request: %v", err)
			return
		}
		if !strings.Contains(out.String(), "head                         "+mr.HeadSHA) {
			t.Errorf("the proof's head is not the merge request's head %s:\n%s", mr.HeadSHA, out)
		}
		if !slices.Contains(mr.Labels, prloop.LabelReady) {
			t.Errorf("labels %v lack %s", mr.Labels, prloop.LabelReady)
		}
		if mr.HeadPipeline != "success" {
			t.Errorf("head pipeline %q, want success", mr.HeadPipeline)
		}
		c := labtest.Client(t, lab, lab.Tokens().Reviewer)
		sts, _, err := c.Commits.GetCommitStatuses(demo.Project, mr.HeadSHA, &gl.GetCommitStatusesOptions{})
		if err != nil {
			t.Errorf("read commit statuses: %v", err)
			return
		}
		var conv string
		for _, st := range sts {
			if st.Name == "converge" {
				conv = st.Status
			}
		}
		if conv != "success" {
			t.Errorf("converge's commit status on the head is %q, want success (statuses %+v)", conv, sts)
		}
		// The head's file, fetched over git as anyone would.
		dir := t.TempDir()
		env := append(os.Environ(), lab.GitEnv(lab.Tokens().Reviewer)...)
		for _, args := range [][]string{{"init", "-q", dir}, {"-C", dir, "fetch", "-q", lab.GitURL(demo.Project), mr.HeadSHA}} {
			cmd := exec.Command("git", args...)
			cmd.Env = env
			if b, err := cmd.CombinedOutput(); err != nil {
				t.Errorf("git %v: %v\n%s", args, err, b)
				return
			}
		}
		files, err := exec.Command("git", "-C", dir, "show", mr.HeadSHA+":summary.go").Output()
		if err != nil {
			t.Errorf("read summary.go at the head: %v", err)
			return
		}
		for _, defect := range []string{"i+n < len(xs)", "v, _ := strconv.ParseFloat"} {
			if strings.Contains(string(files), defect) {
				t.Errorf("the head still holds %q", defect)
			}
		}
	}
	if err := runDemo(context.Background(), ios, opts); err != nil {
		t.Fatalf("demo --forge gitlab: %v\nstdout:\n%s\nstderr:\n%s", err, out, errOut)
	}
	if !checked {
		t.Fatal("the emulator was never read after the loop")
	}
	for _, want := range []string{"converge: two-stable (exit 0)", "local multi-angle review", "match=true"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("demo output lacks %q:\n%s", want, out)
		}
	}
}
