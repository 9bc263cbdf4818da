//go:build unix

package review

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/convergeloop/converge/internal/agent/command"
)

// recording is an agent program that keeps each angle's input in
// $D/in.<angle>.json and finds nothing.
const recording = `in=$(cat)
angle=$(printf '%s' "$in" | sed -n 's/.*"angle":"\([^"]*\)".*/\1/p')
printf '%s' "$in" > "$D/in.$angle.json"
echo '[]'`

// inputs reads what each angle of a review got, by angle.
func inputs(t *testing.T, d string) map[string]command.Input {
	t.Helper()
	out := map[string]command.Input{}
	files, _ := filepath.Glob(filepath.Join(d, "in.*.json"))
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var in command.Input
		if err := json.Unmarshal(raw, &in); err != nil {
			t.Fatal(err)
		}
		out[in.Angle] = in
		os.Remove(f)
	}
	return out
}

// TestPR_S4_EscalatedReviewLooksHarder: a review escalated after rounds
// whose review found structural items runs the configured angles and the
// escalation's, every one told to work at its highest effort, on the
// ladder's model for its level (the last past the ladder's end); level 0
// is the configured review on the ladder's default model. The summary
// says so, and a cached unescalated review never stands in for it.
// Escalation off: every level is the configured review.
func TestPR_S4_EscalatedReviewLooksHarder(t *testing.T) {
	wt, headSHA := gitRepo(t)
	d := t.TempDir()
	base := reviewer(t, script(t, d, recording), nil)
	base.CacheDir = t.TempDir()
	base.Escalation = Escalation{Angles: EscalationAngles(), Models: []string{"small", "large"}}
	in := Input{Workdir: wt, BaseRef: "main", Head: headSHA, Round: 2}
	names := func(m map[string]command.Input) []string {
		var out []string
		for n := range m {
			out = append(out, n)
		}
		slices.Sort(out)
		return out
	}
	for _, tt := range []struct {
		name      string
		off       bool
		level     int
		angles    []string
		model     string
		escalated bool
	}{
		{"level 0: the configured review", false, 0, []string{"correctness-leak", "edge-cases", "test-quality"}, "small", false},
		{"level 1: more angles, the next model", false, 1, []string{"correctness-leak", "edge-cases", "regressions", "test-quality"}, "large", true},
		{"level 3: the ladder's last model", false, 3, []string{"correctness-leak", "edge-cases", "regressions", "test-quality"}, "large", true},
		{"escalation off", true, 2, []string{"correctness-leak", "edge-cases", "test-quality"}, "small", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rv := *base
			rv.Escalation.Off = tt.off
			if tt.off {
				// The same review as level 0's: the shared cache would
				// serve it without running any angle.
				rv.CacheDir = t.TempDir()
			}
			rv = rv.Escalate(tt.level)
			res, err := rv.Review(context.Background(), in)
			if err != nil {
				t.Fatal(err)
			}
			got := inputs(t, d)
			if res.Cached || !slices.Equal(names(got), tt.angles) {
				t.Fatalf("angles run %v (cached %v), want %v", names(got), res.Cached, tt.angles)
			}
			for name, a := range got {
				if a.Model != tt.model {
					t.Errorf("angle %s ran on model %q, want %q", name, a.Model, tt.model)
				}
				if hard := strings.Contains(a.AngleFocus, "highest effort") && strings.Contains(a.Prompt, "highest effort"); hard != tt.escalated {
					t.Errorf("angle %s told to work at its highest effort: %v, want %v", name, hard, tt.escalated)
				}
			}
			s := Summary(res, 2)
			if strings.Contains(s, "Escalated review") != tt.escalated || (tt.escalated && !strings.Contains(s, "on model large")) {
				t.Errorf("summary of an escalated (%v) review:\n%s", tt.escalated, s)
			}
		})
	}
}

// TestPR_S4_EscalationAnglesAreKnown: the escalation's built-in angle
// keeps its focus when named in a configuration.
func TestPR_S4_EscalationAnglesAreKnown(t *testing.T) {
	as, err := ParseAngles(DefaultEscalationAngleNames())
	if err != nil || !slices.Equal(as, EscalationAngles()) {
		t.Fatalf("ParseAngles(%q) = %+v, %v", DefaultEscalationAngleNames(), as, err)
	}
}
