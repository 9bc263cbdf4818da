package repo_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/convergeloop/converge/internal/emulator/fakehub"
	"github.com/convergeloop/converge/internal/proc"
	"github.com/convergeloop/converge/internal/repo"
	"github.com/convergeloop/converge/internal/testutil/hubtest"
)

// hostileGitConfig writes a git config that runs a program at every
// chance it gets, each writing its own marker file under dir, and returns
// the config's path and the markers. An agent cannot write the user's
// config under SEC-7, but a user's own hooks, fsmonitor or credential
// helper are not converge's to run either (SEC-8).
func hostileGitConfig(t *testing.T, dir string) (string, []string) {
	t.Helper()
	hooks := filepath.Join(dir, "hooks")
	if err := os.MkdirAll(hooks, 0o755); err != nil {
		t.Fatal(err)
	}
	var markers []string
	script := func(name, body string) string {
		p := filepath.Join(dir, "bin", name)
		m := filepath.Join(dir, "ran-"+name)
		markers = append(markers, m)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("#!/bin/sh\ntouch '"+m+"'\n"+body), 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, h := range []string{"pre-commit", "commit-msg", "post-commit", "pre-push", "post-checkout", "reference-transaction", "post-merge", "post-rewrite"} {
		src := script("hook-"+h, "exit 0\n")
		if err := os.Symlink(src, filepath.Join(hooks, h)); err != nil {
			t.Fatal(err)
		}
	}
	fsmonitor := script("fsmonitor", "exit 1\n")
	helper := script("credential", "echo username=evil\necho password=evil\n")
	extDiff := script("extdiff", "exit 0\n")
	textconv := script("textconv", "cat \"$1\"\n")
	filter := script("filter", "cat\n")
	cfg := filepath.Join(dir, "gitconfig")
	body := "[core]\n\thooksPath = " + hooks + "\n\tfsmonitor = " + fsmonitor + "\n" +
		"[credential]\n\thelper = " + helper + "\n" +
		"[diff]\n\texternal = " + extDiff + "\n" +
		"[diff \"evil\"]\n\ttextconv = " + textconv + "\n" +
		"[filter \"evil\"]\n\tclean = " + filter + "\n\tsmudge = " + filter + "\n" +
		"[alias]\n\tci = !touch " + filepath.Join(dir, "ran-alias") + "\n" +
		"[user]\n\tname = Global Evil\n\temail = evil@example.com\n"
	markers = append(markers, filepath.Join(dir, "ran-alias"))
	if err := os.WriteFile(cfg, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return cfg, markers
}

// TestSEC_8_GitIgnoresTheUsersAndSystemsConfig: with a hostile config as
// the user's (HOME and GIT_CONFIG_GLOBAL) and the system's
// (GIT_CONFIG_SYSTEM), and a tree whose .gitattributes name its diff and
// filter drivers, converge's clone, commit, diff, fetch, push and an
// unauthenticated ls-remote run none of its hooks, fsmonitor, credential
// helper, external diff, textconv or filter, and its commit's identity is
// Commit's, not the config's.
func TestSEC_8_GitIgnoresTheUsersAndSystemsConfig(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	ctx := context.Background()
	evil := t.TempDir()
	cfg, markers := hostileGitConfig(t, evil)
	home := t.TempDir()
	if err := os.WriteFile(filepath.Join(home, ".gitconfig"), []byte("[include]\n\tpath = "+cfg+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	// The remote and the server are made without the hostile config.
	clean := isolatedEnv(t)
	root := t.TempDir()
	bareRepo(t, root, "o/r.git", clean)
	srv, _ := gitHTTPServer(t, root, false)
	url := srv.URL + "/o/r.git"
	seed := cloneT(t, url, filepath.Join(t.TempDir(), "seed"), append(clean, repo.AuthEnvFor(url, testToken)...))
	write(t, seed.Dir, ".gitattributes", "*.txt diff=evil filter=evil\n")
	write(t, seed.Dir, "a.txt", "one\n")
	commit(t, seed, "seed")
	if err := seed.Push(ctx, "origin", "HEAD", "main"); err != nil {
		t.Fatal(err)
	}

	// From here on this process's environment is the hostile user's.
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(home, ".config"))
	t.Setenv("GIT_CONFIG_GLOBAL", cfg)
	t.Setenv("GIT_CONFIG_SYSTEM", cfg)
	t.Setenv("GIT_CONFIG_NOSYSTEM", "")
	os.Unsetenv("GIT_CONFIG_NOSYSTEM")
	t.Setenv("GIT_CONFIG_COUNT", "1")
	t.Setenv("GIT_CONFIG_KEY_0", "core.hooksPath")
	t.Setenv("GIT_CONFIG_VALUE_0", filepath.Join(evil, "hooks"))
	for _, k := range []string{"GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL", "EMAIL"} {
		t.Setenv(k, "")
		os.Unsetenv(k)
	}

	env := repo.AuthEnvFor(url, testToken)
	g, err := repo.Clone(ctx, url, filepath.Join(t.TempDir(), "c"), env)
	if err != nil {
		t.Fatalf("clone: %v", err)
	}
	write(t, g.Dir, "a.txt", "two\n")
	sha, err := g.Commit(ctx, repo.CommitOptions{Message: "change", AuthorName: "Converge Bot", AuthorEmail: "bot@example.com"})
	if err != nil {
		t.Fatalf("commit: %v", err)
	}
	if who := git(t, g, "log", "-1", "--format=%an <%ae> / %cn <%ce>", sha); who != "Converge Bot <bot@example.com> / Converge Bot <bot@example.com>" {
		t.Errorf("commit identity %q, want Commit's", who)
	}
	if _, err := g.Run(ctx, "diff", "HEAD~1", "HEAD"); err != nil {
		t.Fatalf("diff: %v", err)
	}
	if _, _, err := g.DiffLines(ctx, "HEAD~1", "HEAD"); err != nil {
		t.Fatalf("diff lines: %v", err)
	}
	if _, err := g.Run(ctx, "status", "--porcelain"); err != nil {
		t.Fatalf("status: %v", err)
	}
	if err := g.Fetch(ctx, "origin"); err != nil {
		t.Fatalf("fetch: %v", err)
	}
	if err := g.Push(ctx, "origin", "HEAD", "main"); err != nil {
		t.Fatalf("push: %v", err)
	}
	if _, err := g.Run(ctx, "ci"); err == nil {
		t.Error("the config's alias ran as a git command")
	}
	// Without a token the server asks for one: no helper of the user's
	// may answer (nor run).
	if _, err := (&repo.Git{Dir: t.TempDir()}).Run(ctx, "ls-remote", url); err == nil {
		t.Error("ls-remote without converge's token succeeded: a credential helper of the config answered")
	}
	for _, m := range markers {
		if _, err := os.Stat(m); err == nil {
			t.Errorf("the hostile config ran %s", filepath.Base(m))
		}
	}
	// The remote's copy holds the commit, through the clean filter of no
	// config: byte for byte what was written.
	if got := git(t, &repo.Git{Dir: filepath.Join(root, "o/r.git"), Env: clean}, "show", "main:a.txt"); got != "two" {
		t.Errorf("pushed a.txt = %q", got)
	}
}

// TestSEC_8_WorktreeGitFileIsPinned: a worktree converge made stays
// converge's when an agent rewrites its .git file to point at a
// repository of its own: HEAD, commits and config are the real ones.
func TestSEC_8_WorktreeGitFileIsPinned(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	want := git(t, f.work, "rev-parse", "HEAD")
	wt, err := f.work.AddWorktree(ctx, filepath.Join(t.TempDir(), "wt"), "HEAD", "")
	if err != nil {
		t.Fatal(err)
	}
	// The agent's own repository, with a commit of its own and a hook.
	evil := t.TempDir()
	eg := &repo.Git{Dir: evil, Env: f.env}
	git(t, eg, "init", "-q", "-b", "main")
	write(t, evil, "x", "evil\n")
	commit(t, eg, "evil")
	marker := filepath.Join(t.TempDir(), "ran")
	write(t, filepath.Join(evil, ".git", "hooks"), "pre-commit", "#!/bin/sh\ntouch "+marker+"\n")
	if err := os.Chmod(filepath.Join(evil, ".git", "hooks", "pre-commit"), 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, wt.Dir, ".git", "gitdir: "+filepath.Join(evil, ".git")+"\n")
	if got := git(t, wt, "rev-parse", "HEAD"); got != want {
		t.Errorf("HEAD in the worktree = %s, want converge's %s (the .git file was followed)", got, want)
	}
	write(t, wt.Dir, "new.txt", "x\n")
	sha, err := wt.Commit(ctx, repo.CommitOptions{Message: "in the worktree"})
	if err != nil {
		t.Fatal(err)
	}
	if parent := git(t, f.work, "rev-parse", sha+"^"); parent != want {
		t.Errorf("the commit's parent = %s, want %s", parent, want)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("the agent's repository's hook ran")
	}
}

// TestSEC_8_CredentialEntryStartsNoProcess: the entry AuthEnvFor puts the
// token in can reach no process: an Env carrying it, handed to anything
// but Git (a build, a test, an agent), fails to start instead of passing
// the token on.
func TestSEC_8_CredentialEntryStartsNoProcess(t *testing.T) {
	env := append(os.Environ(), repo.AuthEnvFor("https://github.com/o/r.git", testToken)...)
	cmd := exec.Command("true")
	cmd.Env = env
	if err := cmd.Run(); err == nil {
		t.Error("os/exec started a process with the credential entry")
	}
	if _, err := proc.Run(context.Background(), proc.Spec{Argv: []string{"true"}, Env: env, Direct: true}); err == nil {
		t.Error("proc.Run started a process with the credential entry")
	}
	if _, _, err := repo.RunCommand(context.Background(), t.TempDir(), []string{"true"}, env, 0); err == nil {
		t.Error("RunCommand started a process with the credential entry")
	}
	for _, kv := range repo.AuthEnvFor("https://github.com/o/r.git", testToken) {
		if strings.Contains(kv, testToken) && !strings.Contains(kv, "\x00") {
			t.Errorf("entry %q carries the token in a form a process could get", kv)
		}
	}
}

// procScanner reads every process's environment and command line on the
// machine, over and over, looking for secrets.
type procScanner struct {
	secrets [][]byte
	found   atomic.Value // string: the first sighting
	gits    atomic.Int64 // git processes whose environment it read
	seen    sync.Map     // pid → true, git processes counted
}

func (s *procScanner) run(stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	self := strconv.Itoa(os.Getpid())
	for {
		select {
		case <-stop:
			return
		default:
		}
		ents, err := os.ReadDir("/proc")
		if err != nil {
			return
		}
		for _, e := range ents {
			pid := e.Name()
			if pid == self || pid[0] < '0' || pid[0] > '9' {
				continue
			}
			cmdline, _ := os.ReadFile("/proc/" + pid + "/cmdline")
			environ, err := os.ReadFile("/proc/" + pid + "/environ")
			for _, sec := range s.secrets {
				for what, b := range map[string][]byte{"cmdline": cmdline, "environ": environ} {
					if bytes.Contains(b, sec) {
						s.found.CompareAndSwap(nil, "/proc/"+pid+"/"+what+" of "+strings.ReplaceAll(string(cmdline), "\x00", " "))
					}
				}
			}
			if err == nil && len(environ) > 0 && isGit(cmdline) {
				if _, dup := s.seen.LoadOrStore(pid+" "+string(cmdline), true); !dup {
					s.gits.Add(1)
				}
			}
		}
	}
}

func isGit(cmdline []byte) bool {
	argv0, _, _ := bytes.Cut(cmdline, []byte{0})
	base := filepath.Base(string(argv0))
	return base == "git" || strings.HasPrefix(base, "git-remote-http")
}

// TestSEC_8_TokenInNoProcessOfTheMachine: while converge's git clones,
// fetches, pushes and lists the GitHub emulator's repository, with a fixed
// token and with a Credential, a reader of every /proc/PID/environ and
// /proc/PID/cmdline on the machine never meets the token, nor its Basic
// form; and the token still works: the pushes land.
func TestSEC_8_TokenInNoProcessOfTheMachine(t *testing.T) {
	if _, err := os.Stat("/proc/self/environ"); err != nil {
		t.Skip("no /proc")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	hub := hubtest.Start(t, 0)
	if err := hub.CreateRepo("acme", "calc", map[string]string{"README.md": "calc\n"}, fakehub.RepoOptions{}); err != nil {
		t.Fatal(err)
	}
	n, err := hub.CreatePR("acme", "calc", fakehub.NewPR{Head: "feature/x", Title: "x", Files: map[string]string{"x.txt": "x\n"}})
	if err != nil {
		t.Fatal(err)
	}
	tok := hub.Tokens().Author
	url := hub.GitURL("acme", "calc")

	s := &procScanner{}
	for _, sec := range repo.Secrets(tok) {
		s.secrets = append(s.secrets, []byte(sec))
	}
	stop, done := make(chan struct{}), make(chan struct{})
	go s.run(stop, done)
	defer func() {
		select {
		case <-stop:
		default:
			close(stop)
		}
		<-done
	}()

	env := append(isolatedEnv(t), repo.AuthEnvFor(url, tok, hub.CAFile())...)
	cred := &repo.Credential{Remote: url, Token: func(context.Context, string) (string, error) { return tok, nil }}
	credEnv := append(isolatedEnv(t), "GIT_SSL_CAINFO="+hub.CAFile())
	var last string
	for i := 0; i < 4 || s.gits.Load() < 30; i++ {
		if i >= 40 {
			t.Fatalf("the scanner read the environment of only %d git processes", s.gits.Load())
		}
		g, err := repo.Clone(ctx, url, filepath.Join(t.TempDir(), "c"), env)
		if err != nil {
			t.Fatalf("clone: %v", err)
		}
		if i%2 == 1 {
			g = &repo.Git{Dir: g.Dir, Env: credEnv, Cred: cred}
		}
		if err := g.Fetch(ctx, "origin", "feature/x"); err != nil {
			t.Fatalf("fetch: %v", err)
		}
		if _, err := g.Run(ctx, "checkout", "-q", "FETCH_HEAD"); err != nil {
			t.Fatal(err)
		}
		write(t, g.Dir, "x.txt", "x "+strconv.Itoa(i)+"\n")
		if last, err = g.Commit(ctx, repo.CommitOptions{Message: "round " + strconv.Itoa(i)}); err != nil {
			t.Fatal(err)
		}
		if err := g.Push(ctx, "origin", "HEAD", "feature/x"); err != nil {
			t.Fatalf("push: %v", err)
		}
		if _, err := g.Run(ctx, "ls-remote", "origin"); err != nil {
			t.Fatalf("ls-remote: %v", err)
		}
	}
	close(stop)
	<-done
	if f, _ := s.found.Load().(string); f != "" {
		t.Fatalf("the token was readable in %s", f)
	}
	st, err := hub.PR("acme", "calc", n)
	if err != nil {
		t.Fatal(err)
	}
	if st.HeadSHA != last {
		t.Errorf("the PR's head is %s, want the last push %s", st.HeadSHA, last)
	}
	t.Logf("read the environment of %d git processes", s.gits.Load())
}
