package prwork

import (
	"context"
	"fmt"
	"strings"

	"github.com/convergeloop/converge/internal/agent"
	"github.com/convergeloop/converge/internal/forge"
	"github.com/convergeloop/converge/internal/prloop"
	"github.com/convergeloop/converge/internal/text"
)

// PR-S10: a red build after the round's fixes goes back to the fixers,
// within the round: the failing output, quoted as data like every
// rejection (agent.Task.Rejected), for one more try of the whole round's
// change from a clean head. Only if that is red too are the fixes tried
// one at a time (applyEach) and the failing ones handed off.

// Bounds of the output a red build feeds back.
const (
	redTailLines = 60
	redTailBytes = 8 << 10
)

// redFeedback is what the fixers are told of a red run: why converge
// rejects it and the end of its output.
func redFeedback(tr testRun, bad string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "the repository's build and tests failed with the change (a round never pushes a red build): %s", text.OneLine(bad))
	if lines := nonEmptyLines(tr.out); len(lines) > 0 && !tr.timedOut {
		lines = lines[max(0, len(lines)-redTailLines):]
		fmt.Fprintf(&b, "\nThe end of their output:\n%s", text.Clip(strings.Join(lines, "\n"), redTailBytes))
	}
	return b.String()
}

// setRed sets the red build's feedback every fixer dispatched until it is
// cleared gets with its task ("" clears it).
func (w *GitWorkspace) setRed(feedback string) {
	w.vs.mu.Lock()
	defer w.vs.mu.Unlock()
	w.vs.red = feedback
}

// retryRed is the one more try after red: the round's fixers again from a
// clean head, each told why their change was rejected, then the tests.
// It returns the try's outcomes and its test run when that is acceptable
// against base, else why not ("" with a nil run when no fix applied).
func (w *GitWorkspace) retryRed(ctx context.Context, pr *forge.PullRequest, round int, fs []prloop.Finding, test []string, base *testRun, red testRun, bad string) (map[string]agent.FindingOutcome, *testRun, string, error) {
	if err := w.reset(ctx, pr.HeadSHA); err != nil {
		return nil, nil, "", err
	}
	w.setRed(redFeedback(red, bad))
	outs, err := w.apply(ctx, pr, round, fs)
	w.setRed("")
	if err != nil {
		return nil, nil, "", err
	}
	if len(appliedIDs(outs)) == 0 {
		return outs, nil, red.redReason("tests fail with this fix: ", bad) + " (given the failing output, the fixer's second try changed nothing)", nil
	}
	tr, err := w.runTests(ctx, test)
	if err != nil {
		return nil, nil, "", err
	}
	if again := judge(base, tr); again != "" {
		return outs, nil, tr.redReason("tests still fail with the fix after converge gave the fixer the failing output: ", again), nil
	}
	return outs, &tr, "", nil
}
