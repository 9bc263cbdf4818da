package repo

import (
	"os"

	"golang.org/x/sys/unix"
)

// credentialFile is a sealed memory file holding b (SEC-8): it lives on
// no file system, is closed on exec (only the git it is handed to as an
// extra file gets it), and no one can change it once written. Opening
// /dev/fd/N on it starts at its beginning, so git's helper can read it as
// often as git asks.
func credentialFile(b []byte) (*os.File, error) {
	fd, err := unix.MemfdCreate("converge-git-credential", unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	if err != nil {
		return pipeFile(b)
	}
	f := os.NewFile(uintptr(fd), "converge-git-credential")
	if _, err := f.Write(b); err != nil {
		f.Close()
		return nil, err
	}
	const seals = unix.F_SEAL_SHRINK | unix.F_SEAL_GROW | unix.F_SEAL_WRITE | unix.F_SEAL_SEAL
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_ADD_SEALS, seals); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}
