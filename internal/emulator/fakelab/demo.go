package fakelab

import (
	"context"
	"fmt"

	"github.com/convergeloop/converge/internal/emulator/fakehub"
)

// Demo project coordinates: the GitHub demo's repository, in a subgroup.
const (
	DemoProject = "demo-group/tools/textstats"
	DemoBranch  = fakehub.DemoBranch
)

// DemoInfo names the seeded demo merge request.
type DemoInfo struct {
	Project string
	IID     int
	MRURL   string
}

// DemoOptions vary the demo project.
type DemoOptions struct {
	// NoCI seeds the project without pipelines.
	NoCI bool
}

// DemoScript is Duo's script on the demo MR: the GitHub demo's Copilot
// findings, round by round (two, then one, then a clean review).
func DemoScript() DuoScript {
	var s DuoScript
	for _, r := range fakehub.DemoScript().Rounds {
		var fs []Finding
		for _, f := range r.Findings {
			fs = append(fs, Finding{Path: f.Path, Anchor: f.Anchor, AnchorEnd: f.AnchorEnd, Body: f.Body, Suggestion: f.Suggestion})
		}
		s.Rounds = append(s.Rounds, DuoRound{Findings: fs})
	}
	return s
}

// SeedDemo creates the demo project (the GitHub demo's small Go module,
// pipelines running `go test -vet=off ./...`) and its merge request, with Duo
// scripted by DemoScript.
func SeedDemo(ctx context.Context, l *Lab) (DemoInfo, error) {
	return SeedDemoWith(ctx, l, DemoOptions{})
}

// SeedDemoWith is SeedDemo with options.
func SeedDemoWith(ctx context.Context, l *Lab, o DemoOptions) (DemoInfo, error) {
	if err := ctx.Err(); err != nil {
		return DemoInfo{}, err
	}
	po := ProjectOptions{TestCommand: []string{"go", "test", "-vet=off", "./..."}}
	if o.NoCI {
		po.TestCommand = nil
	}
	if _, err := l.CreateProject(DemoProject, fakehub.DemoBaseFiles(), po); err != nil {
		return DemoInfo{}, fmt.Errorf("seed demo: %w", err)
	}
	iid, err := l.CreateMR(DemoProject, NewMR{
		Source:      DemoBranch,
		Title:       "Add summary statistics",
		Description: "Adds Mean, MovingSum, ParseScores and Describe for summarising numbers.",
		Author:      UserAuthor,
		Files:       fakehub.DemoPRFiles(),
		Message:     "Add summary statistics",
	})
	if err != nil {
		return DemoInfo{}, fmt.Errorf("seed demo: %w", err)
	}
	if err := l.SetDuoScript(DemoProject, iid, DemoScript()); err != nil {
		return DemoInfo{}, fmt.Errorf("seed demo: %w", err)
	}
	return DemoInfo{Project: DemoProject, IID: iid, MRURL: l.MRURL(DemoProject, iid)}, nil
}
