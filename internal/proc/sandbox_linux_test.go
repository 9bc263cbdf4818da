package proc_test

import (
	"context"

	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/convergeloop/converge/internal/proc"
	"github.com/convergeloop/converge/internal/proc/proctest"
)

// The SEC-7 tests run as whoever runs the test binary; run as root they
// also run the whole suite again as nobody (TestSEC_7_AsAnUnprivilegedUser),
// since what contains a root run (capabilities dropped, securebits) and
// an ordinary user's (a user namespace) differ.

// contained runs script contained in dir, with the policy hiding hide.
func contained(t *testing.T, dir, script string, edit ...func(*proc.Spec)) proc.Result {
	t.Helper()
	s := proc.Spec{Argv: []string{"sh", "-c", script}, Dir: dir, Budget: time.Minute, Grace: time.Second, Env: os.Environ()}
	for _, f := range edit {
		f(&s)
	}
	r, err := proc.Run(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// requireSandbox fails the test where the kernel offers no containment:
// converge then refuses agents, and these tests would prove nothing.
func requireSandbox(t *testing.T) {
	t.Helper()
	if err := proc.Available(); err != nil {
		t.Fatalf("containment is not available here: %v", err)
	}
}

// hiding sets a policy that hides state for the test's length.
func hiding(t *testing.T, state ...string) {
	t.Helper()
	old := proc.CurrentPolicy()
	proc.SetPolicy(proc.Policy{Hide: state, Limits: proc.Limits{FileSize: 1 << 20, Processes: 256}})
	t.Cleanup(func() { proc.SetPolicy(old) })
}

// worktree is a directory the run may write, with a secret beside it in
// a state directory it must not see.
func worktree(t *testing.T) (state, wt string) {
	t.Helper()
	state = t.TempDir()
	wt = filepath.Join(state, "work", "wt")
	if err := os.MkdirAll(wt, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(state, "converge.db"), []byte("token=s3cr3t"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(state, "work", "other"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(state, "work", "other", "f"), []byte("another run's"), 0o644); err != nil {
		t.Fatal(err)
	}
	return state, wt
}

func TestSEC_7_AContainedRunSeesAndSignalsOnlyItsOwnTree(t *testing.T) {
	requireSandbox(t)
	me := strconv.Itoa(os.Getpid())
	r := contained(t, t.TempDir(), `ls /proc | grep -E '^[0-9]+$' | tr '\n' ' '; echo; kill -0 `+me+` 2>&1 && echo signalled-converge; kill -9 1 2>&1; kill -9 $PPID; echo alive`)
	if !strings.Contains(r.Stdout, "alive") {
		t.Fatalf("the run did not finish: %+v", r)
	}
	pids := strings.Fields(strings.SplitN(r.Stdout, "\n", 2)[0])
	if len(pids) == 0 || len(pids) > 6 {
		t.Errorf("the run sees %d processes (%v); want its own few", len(pids), pids)
	}
	if strings.Contains(r.Stdout, "signalled-converge") {
		t.Errorf("the run could signal converge (pid %s)", me)
	}
}

func TestSEC_7_AContainedRunWritesOnlyItsWorktreeAndSeesNoState(t *testing.T) {
	requireSandbox(t)
	state, wt := worktree(t)
	hiding(t, state)
	outside := t.TempDir() // beside the state, not hidden by the policy
	if err := os.Chmod(outside, 0o777); err != nil {
		t.Fatal(err)
	}
	home, _ := os.UserHomeDir()
	r := contained(t, wt, strings.Join([]string{
		// Undo the jail first: unmount the covers (umount2, MNT_DETACH,
		// straight: util-linux's umount refuses a non-root user itself).
		`[ "$(uname -m)" = x86_64 ] && perl -e 'for my $m ("/tmp", "/tmp", "/root", "/home", "` + state + `") { my $p = $m; syscall(166, $p, 2) }' 2>/dev/null`,
		`echo mine > ` + filepath.Join(wt, "mine"),
		`echo home > "$HOME/.converge-test-home-write"`,
		`cat ` + filepath.Join(state, "converge.db") + ` && echo READ-STATE`,
		`cat ` + filepath.Join(state, "work", "other", "f") + ` && echo READ-OTHER`,
		`echo x > ` + filepath.Join(outside, "escaped") + ` && echo WROTE-OUTSIDE`,
		`echo x > /etc/converge-escaped && echo WROTE-ETC`,
		`ls -A "$HOME"`,
		`echo done`,
	}, "; "))
	if !strings.Contains(r.Stdout, "done") {
		t.Fatalf("the run did not finish: %+v", r)
	}
	for _, bad := range []string{"READ-STATE", "READ-OTHER", "WROTE-OUTSIDE", "WROTE-ETC", "s3cr3t"} {
		if strings.Contains(r.Stdout, bad) {
			t.Errorf("%s: %s", bad, r.Stdout)
		}
	}
	if b, err := os.ReadFile(filepath.Join(wt, "mine")); err != nil || string(b) != "mine\n" {
		t.Errorf("the run's own write to its worktree: %q %v", b, err)
	}
	for _, p := range []string{filepath.Join(outside, "escaped"), "/etc/converge-escaped"} {
		if _, err := os.Stat(p); err == nil {
			t.Errorf("%s exists on the machine", p)
			_ = os.Remove(p)
		}
	}
	if home != "" {
		if _, err := os.Stat(filepath.Join(home, ".converge-test-home-write")); err == nil {
			t.Errorf("the run wrote into the user's home")
			_ = os.Remove(filepath.Join(home, ".converge-test-home-write"))
		}
	}
}

func TestSEC_7_AContainedRunCannotWriteItsGitDirectory(t *testing.T) {
	requireSandbox(t)
	state, wt := worktree(t)
	hiding(t, state)
	if out, err := exec.Command("git", "init", "-q", wt).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v %s", err, out)
	}
	cfg := filepath.Join(wt, ".git", "config")
	before, _ := os.ReadFile(cfg)
	r := contained(t, wt, `printf '[core]\n\thooksPath = /tmp/h\n' >> .git/config && echo WROTE-CONFIG; mkdir -p .git/hooks && echo x > .git/hooks/pre-commit && echo WROTE-HOOK; mkdir -p .git/info && echo '* filter=x' > .git/info/attributes && echo WROTE-ATTRIBUTES; echo f > f && git status --porcelain; git add f && git -c user.name=a -c user.email=a@b commit -qm agent && echo COMMITTED; echo done`)
	if !strings.Contains(r.Stdout, "done") || !strings.Contains(r.Stdout, "?? f") || !strings.Contains(r.Stdout, "COMMITTED") {
		t.Fatalf("the run did not finish, or its git did not see its file or could not commit it: %+v", r)
	}
	after, _ := os.ReadFile(cfg)
	if string(after) != string(before) || strings.Contains(r.Stdout, "WROTE-") {
		t.Errorf("the run wrote its repository's git directory: %s", r.Stdout)
	}
	if _, err := os.Stat(filepath.Join(wt, ".git", "hooks", "pre-commit")); err == nil {
		t.Errorf("the run planted a hook")
	}
}

func TestSEC_7_NothingOfAContainedRunOutlivesIt(t *testing.T) {
	requireSandbox(t)
	marker := "converge-escapee-" + strconv.Itoa(os.Getpid()) + "-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	// It detaches every way it can, ignores every signal it may, kills
	// its parent and tries its init, then the run's leader exits.
	script := `trap '' TERM INT HUP; (setsid sh -c 'trap "" TERM INT HUP; exec -a ` + marker + ` sleep 300' &) ; (sh -c '(exec -a ` + marker + ` sleep 300 &) ' &); kill -9 $PPID 1 2>/dev/null; sleep 0.2; echo detached`
	r := contained(t, t.TempDir(), script)
	if !strings.Contains(r.Stdout, "detached") {
		t.Fatalf("the run did not get to detach: %+v", r)
	}
	left := func() []int {
		var pids []int
		for _, p := range proc.Processes() {
			b, _ := os.ReadFile("/proc/" + strconv.Itoa(p.PID) + "/cmdline")
			if strings.Contains(string(b), marker) && !p.Zombie {
				pids = append(pids, p.PID)
			}
		}
		return pids
	}
	if pids := left(); len(pids) > 0 {
		t.Fatalf("processes of the run outlived it: %v", pids)
	}
}

func TestSEC_7_AContainedRunIsBoundInFileSize(t *testing.T) {
	requireSandbox(t)
	state, wt := worktree(t)
	hiding(t, state) // 1 MiB files
	r := contained(t, wt, `head -c 3145728 /dev/zero > big 2>/dev/null; echo "exit=$?"`)
	fi, err := os.Stat(filepath.Join(wt, "big"))
	if err == nil && fi.Size() > 1<<20 {
		t.Fatalf("the run wrote a %d-byte file past its 1 MiB bound: %s", fi.Size(), r.Stdout)
	}
}

func TestSEC_7_ToolsUnderTheHomeStillRun(t *testing.T) {
	requireSandbox(t)
	home, err := os.UserHomeDir()
	if err != nil || home == "" || home == "/" {
		t.Skip("no home")
	}
	// A tool directory on PATH under a hidden home is exposed (a
	// copy-on-write layer); the rest of the home is not.
	tools, err := os.MkdirTemp(home, ".converge-tools-")
	if err != nil {
		t.Skipf("home not writable: %v", err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(tools) })
	if err := os.MkdirAll(filepath.Join(tools, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(tools, "bin", "hello-tool"), []byte("#!/bin/sh\necho hello from the tool\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	secret := filepath.Join(home, ".converge-test-secret")
	if err := os.WriteFile(secret, []byte("s3cr3t"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.Remove(secret) })
	env := append(os.Environ(), "PATH="+filepath.Join(tools, "bin")+":"+os.Getenv("PATH"))
	old := proc.CurrentPolicy()
	proc.SetPolicy(proc.Policy{Expose: proc.ToolPaths(env)})
	t.Cleanup(func() { proc.SetPolicy(old) })
	r := contained(t, t.TempDir(), `hello-tool; echo x > `+filepath.Join(tools, "bin", "planted")+` && echo WROTE-COW; cat `+secret+` && echo READ-SECRET; echo done`, func(s *proc.Spec) { s.Env = env })
	if !strings.Contains(r.Stdout, "hello from the tool") || !strings.Contains(r.Stdout, "done") {
		t.Fatalf("the tool did not run: %+v", r)
	}
	if !strings.Contains(r.Stdout, "WROTE-COW") {
		t.Errorf("a tool directory was not writable through its copy-on-write layer (a build cache must be): %s", r.Stderr)
	}
	if strings.Contains(r.Stdout, "READ-SECRET") {
		t.Errorf("the run read a dotfile of the home")
	}
	if _, err := os.Stat(filepath.Join(tools, "bin", "planted")); err == nil {
		t.Errorf("the run wrote into the real tool directory")
	}
}

// TestSEC_7_AsAnUnprivilegedUser runs this package's SEC-7 tests again as
// nobody, when run as root: both must be contained.
func TestSEC_7_AsAnUnprivilegedUser(t *testing.T) {
	out := proctest.AsNobody(t, "^TestSEC_7_", "TestSEC_7_AContainedRunWritesOnlyItsWorktreeAndSeesNoState", os.Environ())
	t.Logf("as nobody:\n%s", lastLines(out, 12))
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// A file the run's environment names (a provider's credentials) is
// readable, unless it is in the state directory, which nothing shows.
func TestSEC_7_WhatTheEnvironmentNamesIsReadableButNeverTheState(t *testing.T) {
	requireSandbox(t)
	state, wt := worktree(t)
	hiding(t, state)
	creds := filepath.Join(proctest.WorldDir(t), "service-account.json")
	if err := os.WriteFile(creds, []byte("creds-ok"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), "GOOGLE_APPLICATION_CREDENTIALS="+creds, "XDG_STATE_HOME="+state, "STATE_DB="+filepath.Join(state, "converge.db"))
	r := contained(t, wt, `cat "$GOOGLE_APPLICATION_CREDENTIALS"; echo; cat "$STATE_DB" && echo READ-STATE; ls "$XDG_STATE_HOME"; echo done`, func(s *proc.Spec) { s.Env = env })
	if !strings.Contains(r.Stdout, "creds-ok") || !strings.Contains(r.Stdout, "done") {
		t.Fatalf("the named credentials were not readable: %+v", r)
	}
	if strings.Contains(r.Stdout, "READ-STATE") || strings.Contains(r.Stdout, "s3cr3t") || strings.Contains(r.Stdout, "converge.db") {
		t.Fatalf("the state directory showed through a variable naming it: %s", r.Stdout)
	}
}

// A fork bomb stops at the run's process bound: its pids group where one
// can be made (root), RLIMIT_NPROC in its own user namespace otherwise.
func TestSEC_7_AContainedRunIsBoundInProcesses(t *testing.T) {
	requireSandbox(t)
	old := proc.CurrentPolicy()
	proc.SetPolicy(proc.Policy{Limits: proc.Limits{Processes: 64}})
	t.Cleanup(func() { proc.SetPolicy(old) })
	r := contained(t, t.TempDir(), `perl -e '$| = 1; my @k; for (1..200) { my $p = fork(); last unless defined $p; if ($p == 0) { sleep 30; exit 0 } push @k, $p } print "started=" . scalar(@k) . "\n"; kill "KILL", @k; '; echo done`)
	var started int
	for _, l := range strings.Split(r.Stdout, "\n") {
		if v, ok := strings.CutPrefix(l, "started="); ok {
			started, _ = strconv.Atoi(strings.TrimSpace(v))
		}
	}
	if !strings.Contains(r.Stdout, "done") || started == 0 {
		t.Fatalf("the run did not get to fork: %+v", r)
	}
	if started > 64 {
		t.Fatalf("the run started %d processes past its bound of 64", started)
	}
}

// Memory is bounded where a memory control group can be made (root
// here): a run that holds more is killed, not the machine's.
func TestSEC_7_AContainedRunIsBoundInMemory(t *testing.T) {
	requireSandbox(t)
	if os.Getuid() != 0 {
		t.Skip("memory is bounded by a control group converge can make as root (or in a delegated cgroup v2 subtree)")
	}
	old := proc.CurrentPolicy()
	proc.SetPolicy(proc.Policy{Limits: proc.Limits{Memory: 32 << 20}})
	t.Cleanup(func() { proc.SetPolicy(old) })
	// awk holds a record whole: 128 MiB without a newline.
	r := contained(t, t.TempDir(), `head -c 134217728 /dev/zero | tr '\0' a | awk '{ n = length($0) } END { print "held=" n }'`)
	if strings.Contains(r.Stdout, "held=134217728") {
		t.Fatalf("the run held 128 MiB past its 32 MiB bound: %+v", r)
	}
}

// A place made writable around the state (CONVERGE_SANDBOX_WRITABLE on a
// parent of it) shows the place, never the state; a script the command
// line names is readable.
func TestSEC_7_TheStateShowsUnderNoPlaceAroundIt(t *testing.T) {
	requireSandbox(t)
	state, wt := worktree(t)
	// The state's parent, and the whole temporary directory (itself a
	// place every run is kept out of).
	for _, parent := range []string{filepath.Dir(state), os.TempDir()} {
		t.Run(filepath.Base(parent), func(t *testing.T) { stateUnder(t, state, wt, parent) })
	}
}

func stateUnder(t *testing.T, state, wt, parent string) {
	old := proc.CurrentPolicy()
	proc.SetPolicy(proc.Policy{Hide: []string{state}, Writable: []string{parent}})
	t.Cleanup(func() { proc.SetPolicy(old) })
	script := filepath.Join(proctest.WorldDir(t), "agent.sh")
	if err := os.WriteFile(script, []byte("echo script-ran\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	r := contained(t, wt, `sh `+script+`; echo x > `+filepath.Join(parent, "log")+` && echo WROTE-PARENT; cat `+filepath.Join(state, "converge.db")+` && echo READ-STATE; echo y > mine; echo done`)
	if !strings.Contains(r.Stdout, "done") || !strings.Contains(r.Stdout, "script-ran") || !strings.Contains(r.Stdout, "WROTE-PARENT") {
		t.Fatalf("the named script, the writable place or the worktree failed: %+v", r)
	}
	if strings.Contains(r.Stdout, "READ-STATE") || strings.Contains(r.Stdout, "s3cr3t") {
		t.Fatalf("the state showed under a writable place around it: %s", r.Stdout)
	}
	if _, err := os.Stat(filepath.Join(wt, "mine")); err != nil {
		t.Fatalf("the worktree inside the state was not the run's: %v", err)
	}
}

// At its budget a contained run is told to stop (SIGTERM, passed on by
// its jail's init to everything in it) and has its grace to say its last
// word; a child deaf to SIGTERM is killed at the grace's end, and Run
// returns with all of it gone (AG-T1 in the jail).
func TestSEC_7_AContainedRunGetsItsGraceAtTheBudget(t *testing.T) {
	requireSandbox(t)
	mark := "converge-grace-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	r := contained(t, t.TempDir(), `trap 'echo record-at-term; exit 0' TERM; (trap "" TERM; exec bash -c "exec -a `+mark+` sleep 600") & while :; do sleep 0.05; done`,
		func(s *proc.Spec) { s.Budget, s.Grace = 500*time.Millisecond, 2*time.Second })
	if !r.TimedOut || !strings.Contains(r.Stdout, "record-at-term") {
		t.Fatalf("want stopped at the budget with the record printed in the grace: %+v", r)
	}
	if left := markedLeft(mark); len(left) > 0 {
		t.Fatalf("the deaf child %v outlived the run", left)
	}
}

func markedLeft(mark string) []int {
	var pids []int
	for _, p := range proc.Processes() {
		b, _ := os.ReadFile("/proc/" + strconv.Itoa(p.PID) + "/cmdline")
		if strings.Contains(string(b), mark) && !p.Zombie {
			pids = append(pids, p.PID)
		}
	}
	return pids
}

// In a linked worktree (converge pr's), the run may commit, but nothing
// it writes in the clone's git directory reaches the clone every other
// run of the repository shares: not another run's branch or HEAD, not an
// object (a replaced pack would change what another run reads), not the
// repository's config and hooks, not any worktree's links, which
// converge's own git follows and runs (SEC-8). Its commit shows as the
// files it changed.
func TestSEC_7_ALinkedWorktreesGitLinksAreNotTheRunsToWrite(t *testing.T) {
	requireSandbox(t)
	state := t.TempDir()
	hiding(t, state)
	clone := filepath.Join(state, "work", "clones", "r.git")
	git := func(dir string, args ...string) string {
		t.Helper()
		c := exec.Command("git", append([]string{"-C", dir, "-c", "user.name=t", "-c", "user.email=t@t"}, args...)...)
		out, err := c.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	if out, err := exec.Command("git", "init", "-q", clone).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v %s", err, out)
	}
	git(clone, "commit", "-q", "--allow-empty", "-m", "base")
	git(clone, "gc", "-q")
	wt, other := filepath.Join(state, "work", "wt", "mine"), filepath.Join(state, "work", "wt", "other")
	git(clone, "worktree", "add", "-q", "-b", "mine", wt)
	git(clone, "worktree", "add", "-q", "-b", "other", other)
	// What the clone's git directory holds, file by file, before the run.
	snapshot := func() map[string]string {
		m := map[string]string{}
		root := filepath.Join(clone, ".git")
		_ = filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return nil
			}
			rel, _ := filepath.Rel(root, p)
			if rel == "index" || strings.HasPrefix(rel, "logs/") {
				return nil // the clone's own worktree, not a run's
			}
			b, _ := os.ReadFile(p)
			m[rel] = string(b)
			return nil
		})
		return m
	}
	before := snapshot()
	if len(before) < 8 {
		t.Fatalf("the clone's git directory was not read: %d files", len(before))
	}
	r := contained(t, wt, strings.Join([]string{
		`g=$(git rev-parse --git-dir); c=$(git rev-parse --git-common-dir)`,
		`echo f > f && git add f && git -c user.name=a -c user.email=a@b commit -qm agent && echo COMMITTED`,
		`git update-ref refs/heads/other HEAD`,
		`git update-ref refs/heads/planted HEAD`,
		`git rev-parse HEAD > "$c/worktrees/other/HEAD"`,
		`for p in "$c"/objects/pack/*.pack; do chmod u+w "$p"; printf x >> "$p"; done`,
		`git config core.hooksPath /tmp/h`,
		`echo /tmp/evil > "$c/worktrees/other/commondir"`,
		`echo /tmp/evil > "$g/gitdir"`,
		`echo /tmp/evil > "$g/commondir"`,
		`echo done`,
	}, "; "))
	if !strings.Contains(r.Stdout, "done") || !strings.Contains(r.Stdout, "COMMITTED") {
		t.Fatalf("the run did not finish, or could not commit in its worktree: %+v", r)
	}
	after := snapshot()
	for f, was := range before {
		if after[f] != was {
			t.Errorf("the run changed the clone's %s", f)
		}
	}
	for f := range after {
		if _, ok := before[f]; !ok {
			t.Errorf("the run added %s to the clone", f)
		}
	}
	if got := git(other, "rev-parse", "HEAD"); got != git(clone, "rev-parse", "other") || git(other, "log", "--format=%s", "-1") != "base" {
		t.Errorf("another run's worktree moved to %s", got)
	}
	// The run's commit is gone from converge's view; its file is there,
	// uncommitted, for converge to commit.
	if git(wt, "log", "--format=%s", "-1") != "base" || git(wt, "status", "--porcelain") != "?? f" {
		t.Errorf("the run's worktree after its commit: %q / %q", git(wt, "log", "--format=%s", "-1"), git(wt, "status", "--porcelain"))
	}
}
