package cli

import (
	"fmt"
	"strings"

	"github.com/convergeloop/converge/internal/emulator/fakehub"
)

// copilotProfileFlag is `converge sandbox --copilot-profile`: fast (the
// demo's pace, --copilot-delay) or real (github.com's: Copilot starts
// about 30 s after it is requested and posts its review about 2 minutes
// later).
type copilotProfileFlag struct{ profile *string }

func (f copilotProfileFlag) String() string {
	if f.profile == nil || *f.profile == "" {
		return fakehub.CopilotProfileFast
	}
	return *f.profile
}

func (f copilotProfileFlag) Set(s string) error {
	switch p := strings.ToLower(strings.TrimSpace(s)); p {
	case fakehub.CopilotProfileFast, fakehub.CopilotProfileReal:
		*f.profile = p
		return nil
	}
	return fmt.Errorf("unknown Copilot profile %q: want %s or %s", s, fakehub.CopilotProfileFast, fakehub.CopilotProfileReal)
}

func (copilotProfileFlag) Type() string { return "profile" }
