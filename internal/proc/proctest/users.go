package proctest

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// WorldDir is a fresh directory every user may enter and write, for a
// test that runs something as another user (nobody); removed after.
func WorldDir(t testing.TB) string {
	t.Helper()
	d, err := os.MkdirTemp("", "converge-world-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(d) })
	if err := os.Chmod(d, 0o777); err != nil {
		t.Fatal(err)
	}
	return d
}

// CopyExecutable copies the program at path into a WorldDir, where
// another user can run it: go test's own build directory is root's alone.
func CopyExecutable(t testing.TB, path string) string {
	t.Helper()
	dst := filepath.Join(WorldDir(t), filepath.Base(path))
	src, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, src); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
	return dst
}

// AsNobody runs this test binary again as nobody (uid and gid 65534,
// no groups, no inheritable capability) with -test.run run, in a home
// of its own that is also its TMPDIR, with env and more; it fails t
// unless the run passes and passed want. A test that calls it skips
// unless run as root.
func AsNobody(t testing.TB, run, want string, env []string, more ...string) string {
	t.Helper()
	if os.Getuid() != 0 {
		t.Skip("runs as root only: it starts tests again as nobody")
	}
	setpriv, err := exec.LookPath("setpriv")
	if err != nil {
		t.Fatalf("setpriv (util-linux) is needed to run as nobody: %v", err)
	}
	bin := CopyExecutable(t, os.Args[0])
	home := WorldDir(t)
	cmd := exec.Command(setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", "--inh-caps=-all", bin,
		"-test.run", run, "-test.count=1", "-test.v")
	cmd.Env = append(append(env, "HOME="+home, "TMPDIR="+home), more...)
	cmd.Dir = home
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("as nobody: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "--- PASS: "+want) {
		t.Fatalf("as nobody, %s did not run:\n%s", want, out)
	}
	return string(out)
}
