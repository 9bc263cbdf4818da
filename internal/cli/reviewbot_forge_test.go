package cli

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/convergeloop/converge/internal/cmdutil"
	"github.com/convergeloop/converge/internal/exitcode"
	"github.com/convergeloop/converge/internal/forge"
	"github.com/convergeloop/converge/internal/prloop"
	"github.com/convergeloop/converge/internal/review/copilot"
	"github.com/convergeloop/converge/internal/review/duo"
)

// TestReviewBotForEachForge: GitHub's bot is Copilot, GitLab's is Duo,
// an unknown forge is refused; each travels in a loop's configuration and
// reads back as itself (PR-M4).
func TestReviewBotForEachForge(t *testing.T) {
	for kind, want := range map[forge.Kind]string{forge.GitHub: copilot.Name, forge.GitLab: duo.Name} {
		site, err := forgeOf(kind)
		if err != nil {
			t.Fatal(err)
		}
		b := site.ReviewBot()
		if b == nil || b.Name() != want {
			t.Fatalf("forge %s's review bot = %v, want %s", kind, b, want)
		}
		c := prloop.DefaultConfig()
		c.Bot = b
		raw, err := json.Marshal(c)
		if err != nil {
			t.Fatal(err)
		}
		var back prloop.Config
		if err := json.Unmarshal(raw, &back); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(back, c) {
			t.Fatalf("%s read back %+v, want %+v", want, back.Bot, c.Bot)
		}
	}
	if site, err := forgeOf(forge.Kind("gitea")); err == nil || cmdutil.ExitCodeOf(err) != exitcode.Usage {
		t.Fatalf("an unknown forge: got %v, %v; want a usage error", site, err)
	}
}
