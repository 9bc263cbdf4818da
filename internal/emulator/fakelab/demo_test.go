package fakelab

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/convergeloop/converge/internal/emulator/fakehub"
)

// The demo seeds a project whose tests pass, and Duo's first round
// comments on the two first defects with multi-line suggestions.
func TestDemo_Seed(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("go not on PATH")
	}
	l := newLab(t, Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	info, err := SeedDemo(ctx, l)
	if err != nil {
		t.Fatal(err)
	}
	if info.MRURL != l.MRURL(DemoProject, info.IID) {
		t.Fatalf("url %s", info.MRURL)
	}
	events, stop := l.Subscribe()
	defer stop()
	if err := l.AddReviewer(DemoProject, info.IID, UserDuo); err != nil {
		t.Fatal(err)
	}
	waitEvent(t, events, 20*time.Second, func(e Event) bool { return e.Kind == "duo_finished" })
	st, _ := l.MR(DemoProject, info.IID)
	var diffs []DiscussionState
	for _, d := range st.Discussions {
		if d.Position != nil {
			diffs = append(diffs, d)
		}
	}
	if len(diffs) != 2 || !strings.Contains(diffs[0].Notes[0], "```suggestion:-0+") {
		t.Fatalf("duo round 1: %+v", st.Discussions)
	}
	if c, err := l.WaitPipeline(ctx, DemoProject, st.HeadSHA); err != nil || c != "success" {
		t.Fatalf("demo pipeline %q %v", c, err)
	}
	_ = fakehub.DemoBranch
}
