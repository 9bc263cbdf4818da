//go:build unix

package prwork

import (
	"os"
	"path/filepath"
	"syscall"
)

// lockFile takes an exclusive advisory lock on path, made if missing, and
// returns its release. The kernel releases it when the process dies, so a
// SIGKILLed converge never leaves a clone locked. Without the file (a
// read-only state directory) only the in-process mutex holds; the
// operation under it then fails on its own with a clear error.
func lockFile(path string) (release func()) {
	_ = os.MkdirAll(filepath.Dir(path), 0o755)
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return func() {}
	}
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		f.Close()
		return func() {}
	}
	return func() {
		syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}
}
