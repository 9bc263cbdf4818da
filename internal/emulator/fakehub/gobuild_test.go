package fakehub

import "github.com/convergeloop/converge/internal/testutil/gobuild"

// The seeded repositories' `go test ./...`, run in fresh worktrees and by
// the emulator's CI on every pushed head, share the build cache instead of
// compiling and linking again per directory (see gobuild).
func init() { gobuild.ShareCache() }
