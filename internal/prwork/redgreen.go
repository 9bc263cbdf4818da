package prwork

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/convergeloop/converge/internal/agent"
	"github.com/convergeloop/converge/internal/census"
	"github.com/convergeloop/converge/internal/forge"
	"github.com/convergeloop/converge/internal/prloop"
	"github.com/convergeloop/converge/internal/repo"
	"github.com/convergeloop/converge/internal/text"
	"github.com/convergeloop/converge/internal/verify"
)

// Red-green proof (PR-V7): a structural finding is addressed only when
// proven — (a) by a test converge ran that fails on the round's base with
// only the fix's test changes applied and passes with the whole fix (the
// round's test run, which must be green for anything to be pushed); (b)
// where no test shows it, by the verifier's agreement (the judge, or, for
// an LLM fixer with no judge, the fixer's backend in a fresh context);
// (c) by a trusted reviewer's suggestion applied verbatim. `proof: lines`
// takes changed lines alone, and says so.

// Proof modes (GitWorkspace.Proof).
const (
	ProofRedGreen = "red-green"
	ProofLines    = "lines"
)

// notProven is the evidence suffix of a structural finding under
// `proof: lines`.
const notProven = "changed lines, not proven"

// proveStructural says how f, a structural finding whose change touches
// its lines (evidence), is proven, or why it is not ("no proof: …").
// agreed is the judge's agreement already given (PR-V1(b)), "" when none
// was asked.
func (w *GitWorkspace) proveStructural(ctx context.Context, pr *forge.PullRequest, f prloop.Finding, vf verify.Finding, r fixerRun, from string, change []verify.FileDiff, agreed string) (proof string, ok bool, err error) {
	if w.Proof == ProofLines {
		return notProven, true, nil
	}
	if w.Agent != nil && w.Agent.Name() == "suggest" {
		return "the reviewer's suggestion, applied verbatim", true, nil
	}
	var tests []string
	for _, p := range r.files {
		if verify.IsTestFile(p) && !verify.IsTestInfraName(p) && verify.File(change, p) != nil {
			tests = append(tests, p)
		}
	}
	var whyNot []string
	if len(tests) > 0 {
		names, red, err := w.redAtBase(ctx, pr, tests)
		if err != nil {
			return "", false, err
		}
		if red {
			return "proven by " + names + ": failed before the fix, passes with it", true, nil
		}
		whyNot = append(whyNot, "the fix's test changes ("+strings.Join(tests, ", ")+") pass without the fix too, so they do not show the finding")
	} else {
		whyNot = append(whyNot, "the fix adds or changes no test that shows the finding")
	}
	if agreed != "" {
		return "the verifier judge agreed (no test shows it): " + agreed, true, nil
	}
	if v := w.proofVerifier(); v != nil {
		verdict := w.askVerifierWith(ctx, v, f, vf, from, change)
		if err := ctx.Err(); err != nil {
			return "", false, err
		}
		if verdict.Addressed {
			return "the verifier agreed in a fresh context (no test shows it): " + verdict.Why, true, nil
		}
		whyNot = append(whyNot, "the verifier did not agree: "+cmpOr(verdict.Why, "no valid answer"))
	} else {
		whyNot = append(whyNot, "no verifier is configured (a judge, or an LLM fixer)")
	}
	return "no proof: " + strings.Join(whyNot, "; "), false, nil
}

// proofVerifier is who agrees to a fix no test shows (PR-V7(b)): the
// judge when configured, else FreshVerifier (an LLM fixer's backend,
// asked in a task of its own); a command fixer has none.
func (w *GitWorkspace) proofVerifier() agent.Agent {
	if w.Verifier != nil {
		return w.Verifier
	}
	return w.FreshVerifier
}

// redAtBase runs the test command on the round's base (the PR's head)
// with only the fix's changes to tests (the staged change of those
// paths) applied, in a worktree of its own: red (a failing test, or a
// test that does not build without the fix) means the tests show the
// finding. names says which tests.
func (w *GitWorkspace) redAtBase(ctx context.Context, pr *forge.PullRequest, tests []string) (names string, red bool, err error) {
	test := w.testCommand(ctx, pr)
	if len(test) == 0 {
		return "", false, nil
	}
	args := append([]string{"diff", "--cached", "--binary", "--no-color", "--no-ext-diff", "--no-renames", pr.HeadSHA, "--"}, literal(tests)...)
	diff, err := w.worktree.Run(ctx, args...)
	if err != nil {
		return "", false, fmt.Errorf("red-green: %w", err)
	}
	dir, err := filepath.Abs(filepath.Join(w.Root, "worktrees", w.RunID+".proof"))
	if err != nil {
		return "", false, err
	}
	unlock := lockClone(w.clone.Dir)
	_ = removeWorktree(ctx, w.clone, dir)
	_, err = gitLocked(ctx, w.clone.Dir, w.clone, "worktree", "add", "--quiet", "--detach", dir, pr.HeadSHA)
	unlock()
	if err != nil {
		return "", false, fmt.Errorf("red-green: %w", err)
	}
	defer func() {
		defer lockClone(w.clone.Dir)()
		_ = removeWorktree(context.WithoutCancel(ctx), w.clone, dir)
	}()
	g, err := (&repo.Git{Dir: dir, Env: w.GitEnv}).PinWorktree(ctx)
	if err != nil {
		return "", false, fmt.Errorf("red-green: %w", err)
	}
	patch := filepath.Join(filepath.Dir(dir), w.RunID+".proof.patch")
	if err := os.WriteFile(patch, []byte(diff+"\n"), 0o600); err != nil {
		return "", false, err
	}
	defer os.Remove(patch)
	if _, err := g.Run(ctx, "apply", "--whitespace=nowarn", patch); err != nil {
		return "", false, fmt.Errorf("red-green: the fix's tests do not apply to the base: %w", err)
	}
	tr, err := w.runTestsIn(ctx, g.Dir, test)
	if err != nil {
		return "", false, err
	}
	if tr.ok() {
		return "", false, nil
	}
	if fs := tr.census.Failing(); len(fs) > 0 {
		return testNames(fs), true, nil
	}
	if fs := census.Failures(tr.out); len(fs) > 0 {
		var keys []string
		for _, f := range fs {
			keys = append(keys, f.Key)
		}
		return "the tests of " + strings.Join(tests, ", ") + " (" + text.Clip(strings.Join(keys, "; "), 200) + ")", true, nil
	}
	return "the tests of " + strings.Join(tests, ", ") + " (red without the fix: " + text.Clip(strings.Join(tr.excerpt(nil), " | "), 200) + ")", true, nil
}

// testNames names tests by their own names ("TestX"), at most three.
func testNames(ids []string) string {
	var names []string
	for _, id := range ids {
		n := id
		for _, sep := range []string{" > ", "::", "."} {
			if i := strings.LastIndex(n, sep); i >= 0 && !strings.Contains(n[i:], "/") {
				n = n[i+len(sep):]
			}
		}
		if !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	if len(names) > 3 {
		return strings.Join(names[:3], ", ") + fmt.Sprintf(" and %d more", len(names)-3)
	}
	return strings.Join(names, ", ")
}

func literal(paths []string) []string {
	out := make([]string, len(paths))
	for i, p := range paths {
		out[i] = ":(literal)" + p
	}
	return out
}
