package codex

import (
	"testing"

	"github.com/convergeloop/converge/internal/agent/agenttest"
)

func TestMain(m *testing.M) { agenttest.Main(m) }
