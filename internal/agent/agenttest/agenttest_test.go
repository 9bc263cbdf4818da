package agenttest

import (
	"fmt"
	"os"
	"os/exec"
	"slices"
	"testing"
	"time"
)

func TestProcessesWithEnvFindsALiveProcess(t *testing.T) {
	if _, err := os.Stat("/proc/self/environ"); err != nil {
		t.Skip("no /proc")
	}
	marker := fmt.Sprintf("agenttest-marker-%d", time.Now().UnixNano())
	cmd := exec.Command("sleep", "30")
	cmd.Env = append(os.Environ(), "CONVERGE_TEST_MARKER="+marker)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if got := ProcessesWithEnv(marker); !slices.Contains(got, cmd.Process.Pid) {
		t.Errorf("ProcessesWithEnv = %v, want it to hold %d", got, cmd.Process.Pid)
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	if got := ProcessesWithEnv(marker); len(got) > 0 {
		t.Errorf("after the kill ProcessesWithEnv = %v", got)
	}
}
