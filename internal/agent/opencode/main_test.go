package opencode

import (
	"os"
	"testing"

	"github.com/convergeloop/converge/internal/proc"
)

// TestMain supervises this binary's runs as converge's main does, so the
// real CLI's tests run it contained (SEC-7), as converge runs it.
func TestMain(m *testing.M) {
	proc.Supervise()
	os.Exit(m.Run())
}
