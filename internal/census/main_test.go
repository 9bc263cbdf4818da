package census

import (
	"os"
	"testing"

	"github.com/convergeloop/converge/internal/proc"
)

// TestMain supervises this binary's runs as converge's main does: the
// census's test runs are contained (SEC-7), as converge runs them, and
// their reports still reach the census.
func TestMain(m *testing.M) {
	proc.Supervise()
	os.Exit(m.Run())
}
