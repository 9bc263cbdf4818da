//go:build unix

package term

import "golang.org/x/sys/unix"

// Width is the column count of the terminal on fd; 0 when fd is none.
func Width(fd uintptr) int {
	ws, err := unix.IoctlGetWinsize(int(fd), unix.TIOCGWINSZ)
	if err != nil {
		return 0
	}
	return int(ws.Col)
}
