package proctest

import (
	"io"
	"os"
	"path/filepath"
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
