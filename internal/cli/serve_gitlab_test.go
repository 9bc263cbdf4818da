package cli

import (
	"fmt"
	"net/http"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	gitlab "gitlab.com/gitlab-org/api/client-go"

	"github.com/convergeloop/converge/internal/cmdutil"
	"github.com/convergeloop/converge/internal/emulator/fakehub"
	"github.com/convergeloop/converge/internal/emulator/fakelab"
	"github.com/convergeloop/converge/internal/forge"
	"github.com/convergeloop/converge/internal/prloop"
	"github.com/convergeloop/converge/internal/testutil/labtest"
)

// labDemoMR opens one more merge request like the demo's on the demo
// project, Duo scripted as on the demo's, and returns its iid.
func labDemoMR(t *testing.T, lab *fakelab.Lab, i int) int {
	t.Helper()
	iid, err := lab.CreateMR(fakelab.DemoProject, fakelab.NewMR{
		Source: fmt.Sprintf("%s-%d", fakelab.DemoBranch, i), Title: fmt.Sprintf("Add summary statistics (%d)", i),
		Files: fakehub.DemoPRFiles(), Message: "Add summary statistics",
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := lab.SetDuoScript(fakelab.DemoProject, iid, fakelab.DemoScript()); err != nil {
		t.Fatal(err)
	}
	return iid
}

// labStatus is converge's commit status on sha, read at the emulator by
// the official client; "" when there is none.
func labStatus(t *testing.T, c *gitlab.Client, sha string) string {
	t.Helper()
	sts, _, err := c.Commits.GetCommitStatuses(fakelab.DemoProject, sha, &gitlab.GetCommitStatusesOptions{All: gitlab.Ptr(true)})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range sts {
		if s.Name == prloop.StatusContext {
			return s.Status
		}
	}
	return ""
}

// labTwoStable reports whether the emulator shows MR iid finished as
// two-stable: the ready label, converge's status success on the head, and
// every thread answered by converge and resolved. why says what is
// missing.
func labTwoStable(t *testing.T, lab *fakelab.Lab, c *gitlab.Client, iid int) (ok bool, why string) {
	t.Helper()
	st, err := lab.MR(fakelab.DemoProject, iid)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(st.Labels, prloop.LabelReady) {
		return false, fmt.Sprintf("labels %v", st.Labels)
	}
	if s := labStatus(t, c, st.HeadSHA); s != "success" {
		return false, fmt.Sprintf("converge status %q on %.8s", s, st.HeadSHA)
	}
	threads := 0
	for _, d := range st.Discussions {
		if !d.Resolvable {
			continue // a plain comment (Duo's summary, converge's own)
		}
		threads++
		replies := 0
		for _, b := range d.Notes {
			if len(prloop.ParseMarkers(b)) > 0 {
				replies++
			}
		}
		if replies != 1 || !d.Resolved {
			return false, fmt.Sprintf("thread %s: %d converge replies, resolved %v: %q", d.ID, replies, d.Resolved, d.Notes)
		}
	}
	if threads == 0 {
		return false, "no thread: Duo's findings never came"
	}
	return true, ""
}

// waitLab waits, on the emulator's own events, until ok holds, or the
// serve process ends.
func waitLab(t *testing.T, lab *fakelab.Lab, sp *serveProc, limit time.Duration, what string, ok func() (bool, string)) {
	t.Helper()
	events, cancel := lab.Subscribe()
	defer cancel()
	deadline := time.After(limit)
	for {
		done, why := ok()
		if done {
			return
		}
		select {
		case <-events:
		case <-sp.done:
			t.Fatalf("converge serve exited before %s (%s):\n%s", what, why, sp.out.String())
		case <-deadline:
			t.Fatalf("no %s after %s (%s):\n%s", what, limit, why, sp.out.String())
		}
	}
}

// labServe is a GitLab serve test's world: the emulator with the demo
// merge request and a second like it, its project hook pointed at the
// address serve listens on (set before serve starts: a loop's first
// actions make events at once), and serve started on it, polls ten
// minutes apart, with the first merge request named and the project
// watched (--forge gitlab --watch GROUP/SUB/PROJECT).
type labServe struct {
	lab    *fakelab.Lab
	sp     *serveProc
	iids   []int
	reader *gitlab.Client
}

func startLabServe(t *testing.T) *labServe {
	t.Helper()
	lab := labtest.Start(t, 100*time.Millisecond)
	demo, err := fakelab.SeedDemo(t.Context(), lab)
	if err != nil {
		t.Fatal(err)
	}
	iids := []int{demo.IID, labDemoMR(t, lab, 2)}
	addr := freeAddr(t)
	if _, err := lab.AddHook(fakelab.DemoProject, fakelab.Hook{URL: "http://" + addr + "/webhook", Token: serveTestSecret,
		PushEvents: true, MergeRequestsEvents: true, NoteEvents: true, PipelineEvents: true}); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"CONVERGE_TOKEN": lab.Tokens().Author, "CONVERGE_WEBHOOK_SECRET": serveTestSecret}
	sp := startServe(t, env, "--api-url", lab.APIURL(), "--ca-file", lab.CAFile(), "--state", t.TempDir(),
		"--poll-min", "10m", "--poll-max", "10m", "--listen", addr,
		"--forge", "gitlab", "--watch", fakelab.DemoProject, demo.MRURL)
	return &labServe{lab: lab, sp: sp, iids: iids, reader: labtest.Client(t, lab, lab.Tokens().Reviewer)}
}

// waitTwoStable waits until the emulator shows every merge request of w
// two-stable.
func (w *labServe) waitTwoStable(t *testing.T) {
	t.Helper()
	waitLab(t, w.lab, w.sp, 10*time.Minute, "every merge request two-stable at the emulator", func() (bool, string) {
		for _, iid := range w.iids {
			if ok, why := labTwoStable(t, w.lab, w.reader, iid); !ok {
				return false, fmt.Sprintf("!%d: %s", iid, why)
			}
		}
		return true, ""
	})
}

// drain sends SIGTERM and checks serve drains and exits 0.
func (w *labServe) drain(t *testing.T) {
	t.Helper()
	if err := w.sp.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	<-w.sp.done
	if w.sp.err != nil {
		t.Errorf("serve after SIGTERM: %v\n%s", w.sp.err, w.sp.out.String())
	}
	if !strings.Contains(w.sp.out.String(), "drained") {
		t.Errorf("serve did not say it drained:\n%s", w.sp.out.String())
	}
}

// TestPR_S2_ServeDrivesGitLabMRsByWebhooks: `converge serve` on the GitLab
// emulator, polls ten minutes apart, drives three merge requests to
// two-stable within the test's time, so the emulator's webhooks (carrying
// the secret token, SEC-4) woke its loops: one named as an argument, one
// open when serve started on a watched project (--forge gitlab --watch
// GROUP/SUB/PROJECT), one opened once serve looked through the project
// (its Merge Request Hook open makes serve look again). Each ends
// two-stable as the emulator shows it: every thread answered once by
// converge and resolved, the ready label, converge's commit status
// success on the head. SIGTERM then drains and exits 0.
func TestPR_S2_ServeDrivesGitLabMRsByWebhooks(t *testing.T) {
	t.Parallel() // its own emulator, state and port
	if testing.Short() {
		t.Skip("runs MR loops end to end")
	}
	w := startLabServe(t)
	second := w.lab.MRURL(fakelab.DemoProject, w.iids[1])
	deadline := time.Now().Add(2 * time.Minute)
	for !strings.Contains(getRuns(t, w.sp.addr), second+`"`) {
		if time.Now().After(deadline) {
			t.Fatalf("serve never took %s from the watched project:\n%s", second, w.sp.out.String())
		}
		select {
		case <-w.sp.done:
			t.Fatalf("converge serve exited:\n%s", w.sp.out.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
	w.iids = append(w.iids, labDemoMR(t, w.lab, 3))
	w.waitTwoStable(t)
	// Every delivery serve answered it took: none refused for its token
	// or its shape. (Those made before serve listened, a pipeline's end
	// while the binary built, found no one: GitLab's retries gave up.)
	answered := 0
	for _, d := range w.lab.HookDeliveries() {
		if d.Status == 0 {
			continue
		}
		answered++
		if d.Status != http.StatusAccepted && d.Status != http.StatusOK {
			t.Errorf("%s %s (!%d): serve answered %d", d.Event, d.Action, d.IID, d.Status)
		}
	}
	if answered == 0 {
		t.Fatal("serve answered no webhook delivery")
	}
	w.drain(t)
}

// TestPR_T10_ServeProvesAGitLabMRHeadPushedAfterItsVerdict: someone
// pushes to a merge request serve finished; its verdict was about the old
// head, so the push's webhooks (Push Hook, Merge Request Hook update with
// oldrev) rearm it and serve proves the new head: converge's status
// success on it.
func TestPR_T10_ServeProvesAGitLabMRHeadPushedAfterItsVerdict(t *testing.T) {
	t.Parallel() // its own emulator, state and port
	if testing.Short() {
		t.Skip("runs MR loops end to end")
	}
	w := startLabServe(t)
	w.waitTwoStable(t)
	// The push comes once serve no longer lists the loop.
	first := w.lab.MRURL(fakelab.DemoProject, w.iids[0])
	waitUnlisted(t, w.sp, first)
	head, err := w.lab.PushFiles(fakelab.DemoProject, fakelab.DemoBranch, fakelab.UserAuthor, map[string]string{"NOTES.md": "a note pushed after the verdict\n"}, "Add notes")
	if err != nil {
		t.Fatal(err)
	}
	waitLab(t, w.lab, w.sp, 8*time.Minute, "a converge verdict on the new head "+head, func() (bool, string) {
		s := labStatus(t, w.reader, head)
		return s == "success", "status " + s
	})
	w.drain(t)
}

// TestPR_S2_ServeForgeAndWatchNames: serve's forge is --forge, else the
// first URL's; a URL of another forge is refused; --watch takes a GitLab
// project's full path on GitLab and owner/name on GitHub.
func TestPR_S2_ServeForgeAndWatchNames(t *testing.T) {
	gl, err := forge.ParsePRURL("https://gitlab.example.com/g/sub/p/-/merge_requests/3")
	if err != nil {
		t.Fatal(err)
	}
	gh, err := forge.ParsePRURL("https://github.com/o/r/pull/1")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		flag string
		refs []forge.PRRef
		want forge.Kind
		err  bool
	}{
		{"", nil, forge.GitHub, false},
		{"gitlab", nil, forge.GitLab, false},
		{"", []forge.PRRef{gl}, forge.GitLab, false},
		{"gitlab", []forge.PRRef{gl}, forge.GitLab, false},
		{"github", []forge.PRRef{gl}, forge.GitHub, true},
		{"", []forge.PRRef{gl, gh}, forge.GitLab, true},
		{"gitea", nil, forge.GitHub, true},
	} {
		got, err := serveForge(c.flag, c.refs)
		if (err != nil) != c.err || (err == nil && got != c.want) {
			t.Errorf("serveForge(%q, %v) = %v, %v", c.flag, c.refs, got, err)
		}
		if err != nil && cmdutil.ExitCodeOf(err) != 2 {
			t.Errorf("serveForge(%q): %v is not a usage error", c.flag, err)
		}
	}
}

// TestPR_T14_ServeRetractsAGitLabVerdictOnATrustedComment: after a merge
// request ends two-stable under serve, a trusted reviewer asks for more in
// a plain (top-level) comment. Its Note Hook rearms the merge request and
// the new run withdraws the verdict at the emulator before anything else:
// the ready label off, converge's status on the head no longer success,
// one comment by converge saying a comment awaits a reply.
func TestPR_T14_ServeRetractsAGitLabVerdictOnATrustedComment(t *testing.T) {
	t.Parallel() // its own emulator, state and port
	if testing.Short() {
		t.Skip("runs MR loops end to end")
	}
	w := startLabServe(t)
	w.waitTwoStable(t)
	iid := w.iids[0]
	url := w.lab.MRURL(fakelab.DemoProject, iid)
	waitUnlisted(t, w.sp, url)
	st, err := w.lab.MR(fakelab.DemoProject, iid)
	if err != nil {
		t.Fatal(err)
	}
	head := st.HeadSHA
	if _, _, err := w.reader.Notes.CreateMergeRequestNote(fakelab.DemoProject, int64(iid), &gitlab.CreateMergeRequestNoteOptions{
		Body: gitlab.Ptr("Describe should print the median too."),
	}); err != nil {
		t.Fatal(err)
	}
	waitLab(t, w.lab, w.sp, 3*time.Minute, "the verdict withdrawn", func() (bool, string) {
		st, err := w.lab.MR(fakelab.DemoProject, iid)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, d := range st.Discussions {
			for _, b := range d.Notes {
				if strings.Contains(b, "<!-- converge:retracted") {
					n++
				}
			}
		}
		return n == 1 && !slices.Contains(st.Labels, prloop.LabelReady) && labStatus(t, w.reader, head) != "success",
			fmt.Sprintf("%d retraction(s), labels %v, status %q", n, st.Labels, labStatus(t, w.reader, head))
	})
	w.drain(t)
}

// TestPR_T14_WatchRetractsAGitLabVerdictOnATrustedComment: `converge pr
// --watch` on a GitLab merge request stays after two-stable; a trusted
// reviewer's plain comment then breaks "nothing awaits a reply", and the
// watch's next look starts a run that withdraws the verdict at the
// emulator: label off, status no longer success, one comment.
func TestPR_T14_WatchRetractsAGitLabVerdictOnATrustedComment(t *testing.T) {
	t.Parallel() // its own emulator and state
	lab := labtest.Start(t, 100*time.Millisecond)
	demo, err := fakelab.SeedDemo(t.Context(), lab)
	if err != nil {
		t.Fatal(err)
	}
	buildConverge(t)
	cmd := exec.Command("converge", "pr", demo.MRURL, "--api-url", lab.APIURL(), "--ca-file", lab.CAFile(),
		"--state", t.TempDir(), "--poll-min", "50ms", "--poll-max", "500ms", "--watch")
	cmd.Env = cleanEnv(map[string]string{"CONVERGE_TOKEN": lab.Tokens().Author})
	var out syncBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	defer func() { _ = cmd.Process.Kill() }()
	reader := labtest.Client(t, lab, lab.Tokens().Reviewer)
	wait := func(limit time.Duration, what string, ok func() (bool, string)) {
		t.Helper()
		deadline := time.After(limit)
		why := ""
		for {
			var good bool
			if good, why = ok(); good {
				return
			}
			select {
			case <-time.After(100 * time.Millisecond):
			case err := <-done:
				t.Fatalf("converge pr --watch ended (%v) before %s:\n%s", err, what, out.String())
			case <-deadline:
				t.Fatalf("no %s after %s (%s):\n%s", what, limit, why, out.String())
			}
		}
	}
	wait(5*time.Minute, "two-stable, then watching", func() (bool, string) {
		if !strings.Contains(out.String(), "converge: watching") {
			return false, "not watching yet"
		}
		return labTwoStable(t, lab, reader, demo.IID)
	})
	st, err := lab.MR(fakelab.DemoProject, demo.IID)
	if err != nil {
		t.Fatal(err)
	}
	head := st.HeadSHA
	if _, _, err := reader.Notes.CreateMergeRequestNote(fakelab.DemoProject, int64(demo.IID), &gitlab.CreateMergeRequestNoteOptions{
		Body: gitlab.Ptr("Describe should print the median too."),
	}); err != nil {
		t.Fatal(err)
	}
	wait(3*time.Minute, "the verdict withdrawn", func() (bool, string) {
		st, err := lab.MR(fakelab.DemoProject, demo.IID)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, d := range st.Discussions {
			for _, b := range d.Notes {
				if strings.Contains(b, "<!-- converge:retracted") {
					n++
				}
			}
		}
		s := labStatus(t, reader, head)
		return n == 1 && !slices.Contains(st.Labels, prloop.LabelReady) && s != "success",
			fmt.Sprintf("%d retraction(s), labels %v, status %q", n, st.Labels, s)
	})
	_ = cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-done:
	case <-time.After(2 * time.Minute):
		t.Fatalf("converge pr --watch did not end after SIGINT:\n%s", out.String())
	}
}

// waitUnlisted waits until serve no longer lists target's loop: its run
// ended.
func waitUnlisted(t *testing.T, sp *serveProc, target string) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for strings.Contains(getRuns(t, sp.addr), target+`"`) {
		if time.Now().After(deadline) {
			t.Fatalf("serve still lists %s's finished loop", target)
		}
		select {
		case <-sp.done:
			t.Fatalf("converge serve exited:\n%s", sp.out.String())
		case <-time.After(50 * time.Millisecond):
		}
	}
}
