package prwork_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/convergeloop/converge/internal/emulator/fakehub"
	"github.com/convergeloop/converge/internal/forge"
	"github.com/convergeloop/converge/internal/recap"
	"github.com/convergeloop/converge/internal/testutil/hubtest"
)

// TestPR_G2_RecapScopeIsThePRBeforeTheLoop: on a real repository at the
// emulator, the recap's original scope is the PR's diff from its base to
// the head before the loop's first commit: the PR's own files with their
// lines, not the file a loop commit added since, nor a file the base
// gained; a file too long for the recap is cut with a note.
func TestPR_G2_RecapScopeIsThePRBeforeTheLoop(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	hub := hubtest.Start(t, 0)
	if err := hub.CreateRepo("acme", "calc", map[string]string{"go.mod": "module example.com/calc\n\ngo 1.22\n", "calc.go": calcGo}, fakehub.RepoOptions{}); err != nil {
		t.Fatal(err)
	}
	var long strings.Builder
	long.WriteString("package calc\n\n")
	for i := range 600 {
		fmt.Fprintf(&long, "// Table line %d of the lookup table the PR adds.\n", i)
	}
	n, err := hub.CreatePR("acme", "calc", fakehub.NewPR{Head: "feature/third", Title: "Third", Files: map[string]string{
		"third.go": "package calc\n\n// Third thirds n.\nfunc Third(n int) int { return n / 3 }\n", "table.go": long.String()}})
	if err != nil {
		t.Fatal(err)
	}
	ref, _ := forge.ParsePRURL(hub.PRURL("acme", "calc", n))
	tok := hub.Tokens().Author
	client := hubtest.Client(t, hub, tok)
	pr, err := client.Observe(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	before := pr.HeadSHA
	if _, err := hub.PushFiles("acme", "calc", "feature/third", map[string]string{"util.go": "package calc\n\n// Util is the loop's.\nfunc Util() {}\n"}, "converge: round 1\n\nConverge-Round: 1\n"); err != nil {
		t.Fatal(err)
	}
	if _, err := hub.PushFiles("acme", "calc", "main", map[string]string{"base.go": "package calc\n"}, "feat: base moves"); err != nil {
		t.Fatal(err)
	}
	if pr, err = client.Observe(ctx, ref); err != nil {
		t.Fatal(err)
	}
	ws := calcWorkspace(hub, tok, t.TempDir(), "r-recap")
	in := recap.Input{ScopeHead: before, BaseRef: pr.BaseRef}
	if err := ws.RecapScope(ctx, pr, &in); err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(in.ScopeFiles); got != "[{table.go 602 0} {third.go 4 0}]" || in.BaseDiffLines != 606 || in.ScopeHead != before {
		t.Fatalf("scope files %s, %d lines, head %s", got, in.BaseDiffLines, in.ScopeHead)
	}
	for _, want := range []string{"diff --git a/third.go b/third.go", "+func Third(n int) int { return n / 3 }", "more lines of this file's diff left out]"} {
		if !strings.Contains(in.BaseDiff, want) {
			t.Errorf("the base diff lacks %q:\n%s", want, in.BaseDiff)
		}
	}
	if strings.Contains(in.BaseDiff, "util.go") || strings.Contains(in.BaseDiff, "base.go") || len(in.BaseDiff) > recap.MaxDiff {
		t.Errorf("the base diff holds more than the PR's own work (%d chars):\n%s", len(in.BaseDiff), in.BaseDiff)
	}
}
