package copilot

import (
	"strings"
	"testing"
)

// TestPR_O2_IsLowerCasesAsBefore: Is compares logins lower-cased, as
// strings.ToLower does, whether or not the login is ASCII.
func TestPR_O2_IsLowerCasesAsBefore(t *testing.T) {
	ref := func(b Bot, login string) bool {
		list := b.Allowlist
		if len(list) == 0 {
			list = DefaultAllowlist()
		}
		l := strings.ToLower(login)
		for _, a := range list {
			if strings.ToLower(a) == l {
				return strings.Contains(l, "copilot")
			}
		}
		return false
	}
	bots := []Bot{New(), {Allowlist: []string{"Copilot-Team", "ſcopilot", "\u212Acopilot", "ÄCopilot"}}}
	logins := []string{"", "Copilot", "copilot", "COPILOT[BOT]", "copilot-pull-request-reviewer", "Copilot-Fan", "copilot-team",
		"scopilot", "Scopilot", "ſcopilot", "kcopilot", "\u212Acopilot", "äcopilot", "ÄCOPILOT", "copilot\u0130", "github-copilot[bot]"}
	for _, b := range bots {
		for _, l := range logins {
			if got, want := b.Is(l), ref(b, l); got != want {
				t.Errorf("%v.Is(%q) = %v, want %v", b.Allowlist, l, got, want)
			}
		}
	}
	if !New().Is("Copilot") || New().Is("copilot-fan") {
		t.Fatal("Is no longer tells Copilot")
	}
}
