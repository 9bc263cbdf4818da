package prloop

import (
	"os/exec"
	"strings"
	"testing"
)

// TestPRLoopIsForgeNeutral: the PR loop depends on no GitHub, GitLab,
// Copilot or Duo package (DESIGN: Decide stays pure and forge-neutral);
// a forge reaches it through forge.Forge, its bot through ReviewBot.
func TestPRLoopIsForgeNeutral(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	for _, dep := range strings.Fields(string(out)) {
		for _, banned := range []string{"/forge/github", "/emulator/fakehub", "/review/copilot", "google/go-github",
			"/forge/gitlab", "/emulator/fakelab", "/review/duo", "gitlab.com/gitlab-org/"} {
			if strings.Contains(dep, banned) {
				t.Errorf("prloop depends on %s", dep)
			}
		}
	}
}
