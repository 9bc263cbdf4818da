// Package review is the local multi-angle review (PR-S4): independent agent
// runs, one per angle, over git diff base...head, each answering with a JSON
// array of findings read fail-closed; the summary comment of a round; and a
// cache of results per head.
package review

import (
	"context"
	"errors"
	"time"

	"github.com/convergeloop/converge/internal/agent"
)

// Angle is one point of view the review takes.
type Angle struct {
	Name  string // e.g. correctness-leak
	Focus string // what the angle looks for, told to the agent
}

// Finding is one point an angle raised.
type Finding struct {
	Angle     string `json:"angle"`
	File      string `json:"file"`
	StartLine int    `json:"start_line"`
	EndLine   int    `json:"end_line"`
	Summary   string `json:"summary"`
	Verdict   string `json:"verdict"` // structural | minor
}

// AngleResult is what one angle's run produced.
type AngleResult struct {
	Angle    string    `json:"angle"`
	Parsed   bool      `json:"parsed"` // the output held a valid JSON array
	Findings []Finding `json:"findings,omitempty"`
}

// Result is one whole local review of a head.
type Result struct {
	Head   string        `json:"head"`
	Angles []AngleResult `json:"angles"`
	// Findings of every angle; an unparsed angle adds one structural
	// "review could not be parsed" finding without a file.
	Findings []Finding `json:"findings,omitempty"`
	Degraded bool      `json:"degraded"` // some angle was not parsed
	Cached   bool      `json:"-"`
}

// Input is what a review looks at.
type Input struct {
	Workdir      string // a worktree checked out at Head
	BaseRef      string // the ref to diff against, e.g. origin/main
	Head         string
	Instructions string // the repo's review instructions, if any (data)
	Round        int
	RunID        string
}

// Reviewer runs the angles through an agent.
type Reviewer struct {
	Agent    agent.Agent
	Angles   []Angle
	Budget   time.Duration
	Env      []string
	CacheDir string // results per head are cached here when set
}

// Review runs every angle on in.Head.
func (r *Reviewer) Review(ctx context.Context, in Input) (Result, error) {
	return Result{}, errors.New("local review: not implemented")
}
