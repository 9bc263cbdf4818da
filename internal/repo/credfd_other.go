//go:build !linux

package repo

import "os"

// credentialFile is a pipe holding b (SEC-8): off Linux there are no
// sealed memory files, and git's helper reads the credential once.
func credentialFile(b []byte) (*os.File, error) { return pipeFile(b) }
