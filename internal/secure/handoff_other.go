//go:build !linux

package secure

// Harden is a no-op off Linux: the re-exec through /proc/self/exe and
// PR_SET_DUMPABLE are Linux's, and other systems are not yet covered.
func Harden(args []string) (*Start, error) {
	return &Start{Args: args}, nil
}
