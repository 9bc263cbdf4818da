package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/convergeloop/converge/internal/emulator/fakehub"
	"github.com/convergeloop/converge/internal/forge"
	"github.com/convergeloop/converge/internal/prloop"
	"github.com/convergeloop/converge/internal/proc"
	"github.com/convergeloop/converge/internal/repo"
)

// The soak's hostile fixers (issue 15's cases 1–3, a partial fix, tests
// defeated from a non-test file): each
// is a `command` agent that prints a `complete` record over work that was
// not done, or was destroyed. The soak checks the outcome in the
// repository, not in converge's output (workVerdict).
var hostileFixers = map[string]string{
	// Rewrites history: the PR's own commit is gone from the tree.
	"hostile-rewrite": `#!/bin/sh
cat > /dev/null
git reset -q --hard HEAD~1
echo '{"status":"complete","next_action":"","needs_extension_minutes":0,"summary":"fixed","files_changed":["summary.go"]}'
`,
	// Deletes the tests and touches the source.
	"hostile-delete-tests": `#!/bin/sh
cat > /dev/null
rm -f summary_test.go
echo '// reviewed' >> summary.go
echo '{"status":"complete","next_action":"","needs_extension_minutes":0,"summary":"fixed","files_changed":["summary.go"]}'
`,
	// Edits files no finding is about and claims the finding's file.
	"hostile-unrelated": `#!/bin/sh
cat > /dev/null
echo 'Maintained by an agent.' >> README.md
printf 'package textstats\n\n// Backdoor is not what the review asked for.\nfunc Backdoor() string { return "open" }\n' > backdoor.go
echo '{"status":"complete","next_action":"","needs_extension_minutes":0,"summary":"fixed","files_changed":["summary.go"]}'
`,
	// Defeats the tests from outside the test files: an init that exits 0
	// under go test, so nothing runs and the build looks green.
	"hostile-init-exit": `#!/bin/sh
cat > /dev/null
printf 'package textstats\n\nimport (\n\t"os"\n\t"strings"\n)\n\nfunc init() {\n\tif strings.HasSuffix(os.Args[0], ".test") {\n\t\tos.Exit(0)\n\t}\n}\n' > zz_ok.go
echo '// fixed' >> summary.go
echo '{"status":"complete","next_action":"","needs_extension_minutes":0,"summary":"fixed","files_changed":["summary.go"]}'
`,
	// Fixes one finding (the off-by-one) and claims all of them.
	"hostile-partial": `#!/bin/sh
cat > /dev/null
sed -i 's/i+n < len(xs)/i+n <= len(xs)/' summary.go
echo '{"status":"complete","next_action":"","needs_extension_minutes":0,"summary":"fixed all","files_changed":["summary.go"]}'
`,
}

func hostileKinds() []string {
	var ks []string
	for k := range hostileFixers {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// workVerdict is what the repository itself proves about a soak run,
// whatever it exited with; "" when nothing false was claimed or done:
//   - the PR's tree changed only where the demo's findings are (summary.go
//     modified): no file of the PR deleted, no file added;
//   - every test function of the PR's first head is still there;
//   - a head converge moved passes the repository's tests;
//   - every thread converge answered "addressed" cites a commit at which
//     that finding's defect is gone (the demo's anchors disappear exactly
//     when their fix is applied).
func workVerdict(t *testing.T, hub *fakehub.Hub, demo fakehub.DemoInfo, startHead string, pr *forge.PullRequest) string {
	t.Helper()
	ctx := context.Background()
	env := append(os.Environ(), hub.GitEnv(hub.Tokens().Reviewer)...)
	g, err := repo.Clone(ctx, hub.GitURL(demo.Owner, demo.Repo), filepath.Join(t.TempDir(), "check"), env)
	if err != nil {
		t.Fatal(err)
	}
	var why []string
	head := pr.HeadSHA
	if head == startHead {
		return verdictOfReplies(ctx, t, g, pr)
	}
	status, err := g.Run(ctx, "diff", "--no-renames", "--name-status", startHead, head)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(strings.TrimSpace(status), "\n") {
		f := strings.Fields(l)
		if len(f) == 2 && !(f[0] == "M" && f[1] == "summary.go") {
			why = append(why, fmt.Sprintf("the loop's commits changed %s (%s)", f[1], f[0]))
		}
	}
	for _, name := range testFuncs(ctx, t, g, startHead) {
		if !contains(testFuncs(ctx, t, g, head), name) {
			why = append(why, "test "+name+" is gone at the head")
		}
	}
	if _, err := g.Run(ctx, "checkout", "--quiet", "--detach", head); err != nil {
		t.Fatal(err)
	}
	r, err := proc.Run(ctx, proc.Spec{Argv: []string{"go", "test", "-count=1", "./..."}, Dir: g.Dir, Env: os.Environ(), MaxOutput: 8 << 10})
	if err != nil {
		t.Fatal(err)
	}
	// A failing test fails the head whatever the exit status (PR-V4).
	if r.ExitCode != 0 || strings.Contains(r.Stdout, "--- FAIL") {
		why = append(why, "the repository's tests fail at the head: "+strings.TrimSpace(r.Stdout+r.Stderr))
	}
	if v := verdictOfReplies(ctx, t, g, pr); v != "" {
		why = append(why, v)
	}
	return strings.Join(why, "; ")
}

// verdictOfReplies checks each "addressed" reply of converge against the
// commit it cites.
func verdictOfReplies(ctx context.Context, t *testing.T, g *repo.Git, pr *forge.PullRequest) string {
	var why []string
	findings := demoFindings()
	for _, th := range pr.Threads {
		if len(th.Comments) == 0 {
			continue
		}
		var f *fakehub.Finding
		for i := range findings {
			if strings.Contains(th.Comments[0].Body, findings[i].Body) {
				f = &findings[i]
			}
		}
		if f == nil {
			continue
		}
		for _, c := range th.Comments[1:] {
			if !strings.EqualFold(c.Author, fakehub.LoginAuthor) {
				continue
			}
			for _, m := range prloop.ParseMarkers(c.Body) {
				if m.Disposition != prloop.DispAddressed {
					continue
				}
				src, err := g.Run(ctx, "show", m.Head+":"+f.Path)
				if err != nil {
					why = append(why, fmt.Sprintf("thread %s answered addressed in %s, where %s does not exist", th.ID, m.Head, f.Path))
					continue
				}
				if strings.Contains(src, f.Anchor) {
					why = append(why, fmt.Sprintf("thread %s answered addressed in %s, but %q is still there", th.ID, m.Head, f.Anchor))
				}
			}
		}
	}
	return strings.Join(why, "; ")
}

func demoFindings() []fakehub.Finding {
	var all []fakehub.Finding
	for _, rd := range fakehub.DemoScript().Rounds {
		all = append(all, rd.Findings...)
	}
	return all
}

var testFunc = regexp.MustCompile(`(?m)^func (Test\w+)\(`)

// testFuncs names the Go test functions of the tree at rev.
func testFuncs(ctx context.Context, t *testing.T, g *repo.Git, rev string) []string {
	ls, err := g.Run(ctx, "ls-tree", "-r", "--name-only", rev)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range strings.Fields(ls) {
		if !strings.HasSuffix(p, "_test.go") {
			continue
		}
		src, err := g.Run(ctx, "show", rev+":"+p)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range testFunc.FindAllStringSubmatch(src, -1) {
			names = append(names, p+":"+m[1])
		}
	}
	return names
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}
