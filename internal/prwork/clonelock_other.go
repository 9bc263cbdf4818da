//go:build !unix

package prwork

// lockFile is the cross-process lock where the system has flock; elsewhere
// only the in-process mutex serializes a clone's updates.
func lockFile(string) (release func()) { return func() {} }
