package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/convergeloop/converge/internal/emulator/fakehub"
	"github.com/convergeloop/converge/internal/exitcode"
)

// faultSeeds is how many seeds TestREL1_SeededFaultsEndAsFaultFree runs;
// CONVERGE_REL1_SEEDS=N runs N (RELIABILITY.md).
func faultSeeds(t *testing.T) int {
	// make test runs 8 seeds (every fault kind is met in them: seeds 1-5
	// alone meet all six); `make soak` runs 20.
	n := 8
	if s := os.Getenv("CONVERGE_REL1_SEEDS"); s != "" {
		if _, err := fmt.Sscan(s, &n); err != nil || n < 1 {
			t.Fatalf("CONVERGE_REL1_SEEDS=%q: want a positive number", s)
		}
	}
	if testing.Short() {
		n = min(n, 3)
	}
	return n
}

// The short test settings: every fault is met within a second or two.
var faultArgs = []string{"--forge-timeout", "1s", "--forge-backoff", "20ms", "--fault-budget", "2m"}

// faultConfig is the seeded faults of one run: one API request of
// converge's in ten, every kind, short waits.
func faultConfig(seed int64) fakehub.Faults {
	return fakehub.Faults{Seed: seed, Rate: 0.1, Logins: []string{fakehub.LoginAuthor},
		Slow: 2 * time.Second, RetryAfter: time.Second, ResetIn: time.Second}
}

// TestREL1_SeededFaultsEndAsFaultFree: the demo PR driven under seeded
// faults at a 10% rate (5xx, resets, slow answers past the client's
// timeout, partial GraphQL errors, primary and secondary limits), one run
// per seed, ends with the same terminal and the same proof as the run
// without faults, and leaves the forge as that run does: the same
// threads with the same replies (one per thread and round), the same
// labels, statuses, comments and tree, and the same writes — none
// repeated.
func TestREL1_SeededFaultsEndAsFaultFree(t *testing.T) {
	t.Parallel() // each run has its own emulator and state
	want := faultRun(t, nil)
	if want.code != 0 {
		t.Fatalf("the fault-free run ended %d:\n%s", want.code, want.out)
	}
	seeds := faultSeeds(t)
	met := make(chan int, seeds)
	t.Run("seeds", func(t *testing.T) {
		for seed := 1; seed <= seeds; seed++ {
			t.Run(fmt.Sprint(seed), func(t *testing.T) {
				t.Parallel()
				f := faultConfig(int64(seed))
				got := faultRun(t, &f)
				met <- got.faults
				t.Logf("seed %d: %d fault(s) met (%s), exit %d", seed, got.faults, got.kinds, got.code)
				if got.code != want.code || got.terminal != want.terminal {
					t.Errorf("seed %d: exit %d %q, want %d %q\nfaults:\n%s\n%s", seed, got.code, got.terminal, want.code, want.terminal, got.hits, got.out)
				}
				for _, c := range []struct{ what, got, want string }{
					{"proof", got.proof, want.proof},
					{"forge", got.forge, want.forge},
				} {
					if c.got != c.want {
						t.Errorf("seed %d: the %s differs from the fault-free run's\nfaults:\n%s\n%s", seed, c.what, got.hits, lineDiff(c.want, c.got))
					}
				}
				// A write refused before it landed is not logged; one
				// that landed is, whatever its answer: none may land
				// more often than in the fault-free run.
				if extra := moreOften(got.writes, want.writes); extra != "" {
					t.Errorf("seed %d: writes landed more often than without faults:\n%s\nfaults:\n%s\nwrites:\n%s", seed, extra, got.hits, got.writes)
				}
			})
		}
	})
	close(met)
	total := 0
	for n := range met {
		total += n
	}
	if total == 0 {
		t.Error("no seed met a fault: the faults were not exercised")
	}
	t.Logf("%d seeds, %d faults met in all", seeds, total)
}

// faultOutcome is one run's outcome, normalized so runs on different
// emulators compare: commit ids, node ids, hosts and times masked.
type faultOutcome struct {
	code     exitcode.Code
	out      string
	terminal string // the "converge: …" line
	proof    string // the stored proof, as JSON, without its times
	forge    string // the PR as the forge shows it
	writes   string // converge's write requests as the forge logged them, sorted
	faults   int
	hits     string
	kinds    string // faults met by kind, writes' faults apart
}

// faultRun drives the demo PR once, with faults when f is set.
func faultRun(t *testing.T, f *fakehub.Faults) faultOutcome {
	t.Helper()
	hub, demo := startHub(t, 100*time.Millisecond)
	if f != nil {
		hub.SetFaults(*f)
	}
	state := t.TempDir()
	code, out := runBin(t, authorEnv(hub), append(prArgs(hub, demo, state), faultArgs...)...)
	var o faultOutcome
	o.code, o.out = code, out
	for _, h := range hub.FaultHits() {
		o.hits += h.String() + "\n"
	}
	o.faults = len(hub.FaultHits()) + hub.FaultRefusals()
	byKind := map[string]int{}
	for _, h := range hub.FaultHits() {
		k := string(h.Kind)
		if h.Write {
			k += " on a write"
			if h.After {
				k += " that landed"
			}
		}
		byKind[k]++
	}
	if n := hub.FaultRefusals(); n > 0 {
		byKind["refused in a spent window"] = n
	}
	var kinds []string
	for k, n := range byKind {
		kinds = append(kinds, fmt.Sprintf("%d %s", n, k))
	}
	slices.Sort(kinds)
	o.kinds = strings.Join(kinds, ", ")
	hub.SetFaults(fakehub.Faults{}) // the test's own reads meet none
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "converge: ") {
			o.terminal = normalize(l)
		}
	}
	o.proof = storedProof(t, state, code, out)
	o.forge = forgeFingerprint(t, hub, demo)
	var ws []string
	for _, w := range hub.Writes() {
		if !strings.EqualFold(w.Actor, fakehub.LoginAuthor) {
			continue
		}
		if len(w.Fields) > 0 {
			// A write of each mutation: a batched request resolving three
			// threads and three requests resolving one each are the same
			// writes, and a thread resolved twice is one too many either
			// way.
			for _, f := range w.Fields {
				ws = append(ws, normalize(w.Surface+" "+f))
			}
			continue
		}
		ws = append(ws, normalize(w.Surface+" "+w.What))
	}
	slices.Sort(ws)
	o.writes = strings.Join(ws, "\n")
	return o
}

// storedProof is the run's proof from the state store (converge proof
// --json), without the fields that are times or ids by nature.
func storedProof(t *testing.T, state string, runCode exitcode.Code, runOut string) string {
	t.Helper()
	ios, out, errOut := testIO(nil)
	if code := Run(context.Background(), []string{"status", "--json", "--state", state}, ios); code != 0 {
		t.Fatalf("status exit %d: %s\nthe run ended %d:\n%s", code, errOut, runCode, runOut)
	}
	var runs []runView
	if err := json.Unmarshal([]byte(out.String()), &runs); err != nil || len(runs) != 1 {
		t.Fatalf("status --json: %v\n%s", err, out)
	}
	ios, out, _ = testIO(nil)
	if code := Run(context.Background(), []string{"proof", runs[0].ID, "--json", "--state", state}, ios); code != 0 {
		t.Fatalf("proof exit %d", code)
	}
	var v struct {
		Proof map[string]any `json:"proof"`
	}
	if err := json.Unmarshal([]byte(out.String()), &v); err != nil {
		t.Fatalf("proof --json: %v\n%s", err, out)
	}
	delete(v.Proof, "reviewed_at")
	delete(v.Proof, "observed_at")
	b, err := json.MarshalIndent(v.Proof, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	return normalize(string(b))
}

// forgeFingerprint is what the forge shows of the PR, converge's part of
// it in full: threads and every comment in them, reviews, labels,
// statuses and checks of the head, issue comments, the head's tree and
// the branch's length.
func forgeFingerprint(t *testing.T, hub *fakehub.Hub, demo fakehub.DemoInfo) string {
	t.Helper()
	st, err := hub.PR(demo.Owner, demo.Repo, demo.Number)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "state %s labels %v requested %v reviews %d copilot rounds %d rollup %s\n",
		st.State, st.Labels, st.Requested, st.Reviews, st.CopilotRounds, st.Rollup)
	for _, th := range st.ThreadList {
		fmt.Fprintf(&b, "thread %s resolved=%v\n", th.Path, th.Resolved)
		for i := range th.Bodies {
			fmt.Fprintf(&b, "  %s: %s\n", th.Authors[i], th.Bodies[i])
		}
	}
	for _, rv := range st.ReviewList {
		fmt.Fprintf(&b, "review %s %s comments=%d\n", rv.Author, rv.State, rv.Comments)
	}
	pr := observe(t, hub, demo.PRURL)
	for _, ic := range pr.IssueComments {
		fmt.Fprintf(&b, "issue comment %s: %s\n", ic.Author, ic.Body)
	}
	for _, cx := range pr.Checks.Contexts {
		fmt.Fprintf(&b, "check %s %s %s\n", cx.Name, cx.Status, cx.Conclusion)
	}
	bare := filepath.Join(hub.StateDir(), "repos", demo.Owner, demo.Repo+".git")
	git := func(args ...string) string {
		out, err := exec.Command("git", append([]string{"-C", bare}, args...)...).Output()
		if err != nil {
			t.Fatalf("git %v: %v", args, err)
		}
		return strings.TrimSpace(string(out))
	}
	// The tree, not the commit: commit ids hold times.
	fmt.Fprintf(&b, "head tree %s commits %s merges %s\n", git("rev-parse", st.HeadSHA+"^{tree}"),
		git("rev-list", "--count", st.HeadSHA), git("rev-list", "--count", "--merges", st.HeadSHA))
	return normalize(b.String())
}

var (
	reHost  = regexp.MustCompile(`127\.0\.0\.1:\d+`)
	reRun   = regexp.MustCompile(`r-\d{8}-[0-9a-f]+`)
	reTime  = regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)`)
	reSHA   = regexp.MustCompile(`\b[0-9a-f]{7,40}\b`)
	reNode  = regexp.MustCompile(`\b(PRRT|PRRC|PRR|PR|IC|C|S)_[A-Za-z0-9]+\b`)
	reDigit = regexp.MustCompile(`/\d{3,}\b`)
)

// normalize masks what differs between two emulators by nature.
func normalize(s string) string {
	s = reHost.ReplaceAllString(s, "HOST")
	s = reRun.ReplaceAllString(s, "RUN")
	s = reTime.ReplaceAllString(s, "TIME")
	s = reNode.ReplaceAllString(s, "NODE")
	s = reDigit.ReplaceAllString(s, "/ID")
	// A tree id is content, and equal content has an equal id: only
	// commit ids are masked, and a tree line keeps its own.
	var b strings.Builder
	for _, l := range strings.SplitAfter(s, "\n") {
		if strings.HasPrefix(l, "head tree ") {
			b.WriteString(l)
			continue
		}
		b.WriteString(reSHA.ReplaceAllString(l, "SHA"))
	}
	return b.String()
}

// moreOften lists the lines got holds more often than want.
func moreOften(got, want string) string {
	count := func(s string) map[string]int {
		m := map[string]int{}
		for _, l := range strings.Split(s, "\n") {
			m[l]++
		}
		return m
	}
	g, w := count(got), count(want)
	var out []string
	for l, n := range g {
		if n > w[l] {
			out = append(out, fmt.Sprintf("%dx (want at most %d) %s", n, w[l], l))
		}
	}
	slices.Sort(out)
	return strings.Join(out, "\n")
}

// lineDiff shows the lines of got that want lacks (+) and the reverse (-).
func lineDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	var b bytes.Buffer
	for _, l := range w {
		if !slices.Contains(g, l) {
			fmt.Fprintf(&b, "- %s\n", l)
		}
	}
	for _, l := range g {
		if !slices.Contains(w, l) {
			fmt.Fprintf(&b, "+ %s\n", l)
		}
	}
	if b.Len() == 0 {
		fmt.Fprintf(&b, "(the same lines in another order or number)\nwant:\n%s\ngot:\n%s", want, got)
	}
	return b.String()
}

// TestREL1_FaultFreeRunsCompareEqual: two runs without faults compare
// equal, so a difference under faults is the faults' doing.
func TestREL1_FaultFreeRunsCompareEqual(t *testing.T) {
	t.Parallel()
	a, b := faultRun(t, nil), faultRun(t, nil)
	if a.code != exitcode.OK || a.terminal != b.terminal || a.proof != b.proof || a.forge != b.forge || a.writes != b.writes {
		t.Fatalf("two fault-free runs differ:\nterminal %q / %q\nproof:\n%s\nforge:\n%s\nwrites:\n%s",
			a.terminal, b.terminal, lineDiff(a.proof, b.proof), lineDiff(a.forge, b.forge), lineDiff(a.writes, b.writes))
	}
	t.Logf("terminal %s\nproof:\n%s\nforge:\n%s\nwrites:\n%s", a.terminal, a.proof, a.forge, a.writes)
}
