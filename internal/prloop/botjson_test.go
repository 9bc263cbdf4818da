package prloop

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	copilotbot "github.com/convergeloop/converge/internal/review/copilot"
)

func init() {
	// As the cli registers it (internal/cli/reviewbots.go).
	RegisterBot(copilotbot.Name, func() ReviewBot { return copilotbot.New() })
}

// otherBot is a bot no one registered.
type otherBot struct{ ReviewBot }

func (otherBot) Name() string { return "other" }

// TestPR_M4_ConfigRoundTripsThroughJSON: the loop's configuration crosses
// processes as JSON (the Temporal engine's workflow input) and comes back
// equal, its review bot made again from its name; a bot its name cannot
// make again is an error both ways, never a run with another bot.
func TestPR_M4_ConfigRoundTripsThroughJSON(t *testing.T) {
	full := DefaultConfig()
	full.Bot, full.Self, full.TrustedBots, full.LocalReview, full.MaxCostUSD = copilotbot.New(), "converge-bot", []string{"dependabot[bot]"}, true, 2.5
	for name, c := range map[string]Config{"copilot": full, "no bot": DefaultConfig(), "zero": {}} {
		b, err := json.Marshal(c)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var back Config
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatalf("%s: %v\n%s", name, err, b)
		}
		if !reflect.DeepEqual(back, c) {
			t.Fatalf("%s: the configuration changed on its way:\n%+v\n%+v\n%s", name, c, back, b)
		}
	}
	b, _ := json.Marshal(full)
	if !strings.Contains(string(b), `"Bot":"copilot"`) {
		t.Fatalf("the bot is not written as its name: %s", b)
	}
	var back Config
	err := json.Unmarshal([]byte(strings.Replace(string(b), `"Bot":"copilot"`, `"Bot":"nobody"`, 1)), &back)
	if err == nil || !strings.Contains(err.Error(), `unknown review bot "nobody"`) {
		t.Fatalf("an unknown bot was read back: %v (%+v)", err, back.Bot)
	}
	for name, bot := range map[string]ReviewBot{
		"unregistered": otherBot{},
		"configured":   copilotbot.Bot{Allowlist: []string{"someone"}},
	} {
		c := DefaultConfig()
		c.Bot = bot
		if b, err := json.Marshal(c); err == nil {
			t.Fatalf("%s bot written by its name alone: %s", name, b)
		}
	}
}
