package cli

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-github/v93/github"

	"github.com/convergeloop/converge/internal/emulator/fakehub"
	"github.com/convergeloop/converge/internal/exitcode"
)

// proofFailing reads the failed count of the proof's test census.
var proofFailing = regexp.MustCompile(`\d+ ran \(\d+ passed, (\d+) failed\)`)

// TestSoak_NoFalseSuccess drives the whole loop against the emulator under
// randomized Copilot delays and bodies, lag faults, finding counts, human
// reviewers and agent outcomes (hostile fixers among them), one seed per
// run. Every run that exits 0 is checked at the forge (forgeVerdict); a
// run that does not exit 0 must not leave the PR labelled ready; and every
// run is checked in the repository at its final head (workVerdict): no
// destroyed PR, no lost test, no red build pushed, no false "addressed".
// CONVERGE_SOAK_SEEDS sets the number of seeds (4 by default, what
// `make test` runs; `make soak` runs 200), CONVERGE_SOAK_SEED0 the first.
func TestSoak_NoFalseSuccess(t *testing.T) {
	t.Parallel() // each seed has its own emulator and state
	seeds := envInt("CONVERGE_SOAK_SEEDS", 4)
	seed0 := envInt("CONVERGE_SOAK_SEED0", 1)
	var runs, falseSuccess, successes atomic.Int64
	var byExit [8]atomic.Int64 // how the runs ended, by IF-1 exit code
	t.Run("seeds", func(t *testing.T) {
		for i := range seeds {
			seed := uint64(seed0 + i)
			t.Run(fmt.Sprintf("seed-%d", seed), func(t *testing.T) {
				t.Parallel()
				sc := newSoakCase(seed)
				code, out, verdict := sc.run(t)
				if os.Getenv("CONVERGE_SOAK_VERBOSE") != "" {
					t.Log(out)
				}
				runs.Add(1)
				if code == 0 {
					successes.Add(1)
				}
				if code >= 0 && int(code) < len(byExit) {
					byExit[code].Add(1)
				}
				if code != 0 && sc.agent != "crash" {
					// Not a false success, but worth reading: why it yielded.
					lines := strings.Split(strings.TrimSpace(out), "\n")
					t.Logf("seed %d (%s) exit %d: %s", seed, sc, code, lines[len(lines)-1])
				}
				if verdict != "" {
					falseSuccess.Add(1)
					t.Errorf("FALSE SUCCESS (seed %d, %s): exit %d: %s\n%s", seed, sc, code, verdict, out)
				}
			})
		}
	})
	var exits []string
	for code := range byExit {
		if n := byExit[code].Load(); n > 0 {
			exits = append(exits, fmt.Sprintf("exit%d=%d", code, n))
		}
	}
	summary := fmt.Sprintf("false_success=%d runs=%d two_stable=%d %s", falseSuccess.Load(), runs.Load(), successes.Load(), strings.Join(exits, " "))
	t.Log(summary)
	fmt.Println(summary)
}

func envInt(key string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(key)); err == nil && v > 0 {
		return v
	}
	return def
}

// soakCase is one seed's world.
type soakCase struct {
	seed      uint64
	delay     time.Duration
	lagMax    int
	script    fakehub.CopilotScript
	agent     string // suggest, blocked, crash, local, local-suggest, hostile-*
	humanNote bool   // a reviewer thread no fixer can address
	changes   bool   // a reviewer requests changes
	desc      []string
}

func newSoakCase(seed uint64) *soakCase {
	r := rand.New(rand.NewPCG(seed, 0x5eed))
	sc := &soakCase{seed: seed, delay: time.Duration(r.IntN(200)) * time.Millisecond, lagMax: r.IntN(7)}
	var all []fakehub.Finding
	for _, rd := range fakehub.DemoScript().Rounds {
		all = append(all, rd.Findings...)
	}
	bodies := []string{fakehub.CopilotNoFilesBody, fakehub.CopilotQuotaBody, fakehub.CopilotUnavailableBody, "", "LGTM"}
	for range 1 + r.IntN(4) {
		var rd fakehub.CopilotRound
		switch p := r.Float64(); {
		case p < 0.1:
			rd.Error = true
		case p < 0.2:
			rd.Body = fakehub.Text(bodies[r.IntN(len(bodies))])
		case p < 0.25:
			rd.NoStart = true
		default:
			for _, f := range all {
				if r.IntN(2) == 0 {
					rd.Findings = append(rd.Findings, f)
				}
			}
		}
		if r.IntN(3) == 0 {
			rd.Delay = time.Duration(1+r.IntN(400)) * time.Millisecond
		}
		sc.script.Rounds = append(sc.script.Rounds, rd)
	}
	switch p := r.Float64(); {
	case p < 0.55:
		sc.agent = "suggest"
	case p < 0.6:
		// The local review finds what the suggest fixer cannot fix.
		sc.agent = "local-suggest"
	case p < 0.67:
		sc.agent = "blocked"
	case p < 0.72:
		sc.agent = "crash"
	case p < 0.8:
		sc.agent = "local"
	default:
		// A hostile fixer: history rewrite, test deletion, unrelated
		// edits, a partial fix, tests defeated from a non-test file, each
		// claiming complete.
		ks := hostileKinds()
		sc.agent = ks[r.IntN(len(ks))]
	}
	sc.humanNote = r.IntN(5) == 0
	sc.changes = r.IntN(8) == 0
	sc.desc = []string{fmt.Sprintf("delay=%s lag<=%d rounds=%d agent=%s human-note=%v changes=%v", sc.delay, sc.lagMax, len(sc.script.Rounds), sc.agent, sc.humanNote, sc.changes)}
	return sc
}

func (sc *soakCase) String() string { return strings.Join(sc.desc, " ") }

// run plays the seed and returns the exit code, the output and, when the
// outcome is a false success, why.
func (sc *soakCase) run(t *testing.T) (exitcode.Code, string, string) {
	hub, demo := startHub(t, sc.delay)
	hub.SetReviewLagSeeded(int64(sc.seed), sc.lagMax)
	if err := hub.SetCopilotScript(demo.Owner, demo.Repo, demo.Number, sc.script); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	gh := restAs(t, hub, hub.Tokens().Reviewer)
	if sc.humanNote {
		if _, _, err := gh.PullRequests.CreateReview(ctx, demo.Owner, demo.Repo, demo.Number, &github.PullRequestReviewRequest{
			Event: new("COMMENT"),
			Comments: []*github.DraftReviewComment{{
				Path: new("summary.go"), Line: new(3), Side: new("RIGHT"), Body: new("Is errors the right dependency here?"),
			}},
		}); err != nil {
			t.Fatal(err)
		}
	}
	if sc.changes {
		if _, _, err := gh.PullRequests.CreateReview(ctx, demo.Owner, demo.Repo, demo.Number, &github.PullRequestReviewRequest{
			Event: new("REQUEST_CHANGES"), Body: new("Not before the API is agreed."),
		}); err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	// GitHub's minutes scaled down: a review that never starts is given
	// up on in seconds, not twenty minutes.
	args := append(prArgs(hub, demo, filepath.Join(dir, "state")), "--poll-min", "20ms", "--poll-max", "200ms",
		"--review-start-window", "2s", "--review-wait", "8s", "--ci-wait", "60s")
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	local := false
	startHead := observe(t, hub, demo.PRURL).HeadSHA
	switch sc.agent {
	case "blocked":
		args = append(args, "--review-agent", "suggest", "--agent", "command", "--agent-cmd", write("blocked.sh", `#!/bin/sh
cat > /dev/null
echo '{"status":"blocked","next_action":"ask the author","needs_extension_minutes":0,"summary":"cannot","files_changed":[],"reason":"needs a human"}'
`))
	case "crash":
		args = append(args, "--review-agent", "suggest", "--agent", "command", "--agent-cmd", write("crash.sh", "#!/bin/sh\necho boom >&2\nexit 2\n"))
	case "hostile-rewrite", "hostile-delete-tests", "hostile-unrelated", "hostile-partial", "hostile-init-exit":
		args = append(args, "--review-agent", "suggest", "--agent", "command", "--agent-cmd", write("hostile.sh", hostileFixers[sc.agent]))
	case "local", "local-suggest":
		// No Copilot: command angles review the head for real, and one
		// angle sometimes answers garbage (a degraded review).
		local = true
		r := rand.New(rand.NewPCG(sc.seed, 0x10ca1))
		garbage := r.IntN(4) == 0 && sc.agent == "local"
		review := `#!/bin/sh
cat > /dev/null
if grep -q 'i+n < len(xs)' summary.go; then
  echo '[{"file":"summary.go","line_range":[27,27],"summary":"MovingSum drops the last window","verdict":"structural"}]'
else
  echo '[]'
fi
`
		if garbage {
			review = "#!/bin/sh\ncat > /dev/null\necho 'Looks fine to me!'\n"
		}
		fixer := []string{"--agent", "command", "--agent-cmd", write("fix.sh", `#!/bin/sh
cat > /dev/null
sed -i 's/i+n < len(xs)/i+n <= len(xs)/' summary.go
echo '{"status":"complete","next_action":"","needs_extension_minutes":0,"summary":"fixed","files_changed":["summary.go"]}'
`)}
		if sc.agent == "local-suggest" {
			fixer = []string{"--agent", "suggest"}
		}
		args = append(append(args, "--no-copilot"), fixer...)
		args = append(args, "--review-agent", "command", "--review-agent-cmd", write("review.sh", review), "--review-angles", "correctness-leak,edge-cases")
		sc.desc = append(sc.desc, fmt.Sprintf("garbage-angle=%v", garbage))
	}
	code, out := runBin(t, authorEnv(hub), args...)
	pr := observe(t, hub, demo.PRURL)
	// The repository's verdict holds whatever the exit: a false
	// "addressed" or a destroyed PR is a false claim at the forge.
	work := workVerdict(t, hub, demo, startHead, pr)
	if code == 0 {
		// A proof never shows a failing test beside two-stable (PR-V4).
		if m := proofFailing.FindStringSubmatch(out); m != nil && m[1] != "0" {
			work = strings.Trim(work+"; the proof shows "+m[1]+" failing test(s) beside two-stable", "; ")
		}
		return code, out, strings.Trim(forgeVerdict(pr, local)+"; "+work, "; ")
	}
	for _, l := range pr.Labels {
		if l == "converge:ready-for-merge" {
			return code, out, strings.Trim("exit "+strconv.Itoa(int(code))+" but the PR is labelled ready-for-merge; "+work, "; ")
		}
	}
	return code, out, work
}
