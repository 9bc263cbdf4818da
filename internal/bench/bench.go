// Package bench is `converge bench`: scripted PR scenarios on the GitHub
// emulator with no-op agents, converge side by side with a baseline that
// talks to GitHub as the source documents' loop does, every request
// counted at the emulator. The figures are issue 18's targets; the full
// scale is what BENCHMARKS.md records.
package bench

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/convergeloop/converge/internal/emulator/fakehub"
	"github.com/convergeloop/converge/internal/forge"
	"github.com/convergeloop/converge/internal/prloop"
	"github.com/convergeloop/converge/internal/prloop/prlooptest"
	"github.com/convergeloop/converge/internal/store"
)

// Scale is how much a run measures: small runs in `make test`, full is
// what BENCHMARKS.md records.
type Scale string

const (
	Small Scale = "small"
	Full  Scale = "full"
)

// Options configure a run.
type Options struct {
	Scale Scale
	// Dir holds the emulators' state; a temporary directory when empty.
	Dir string
	// Progress, when set, is told what runs (one line per figure).
	Progress func(string)
	// OpenStore opens, or creates, the state store at path, as converge's
	// commands open theirs (cli.Factory): the loops measured journal to it.
	OpenStore func(ctx context.Context, path string) (*store.Store, error)
}

// Requests are what one operation cost, counted at the emulator.
type Requests struct {
	Total         int `json:"requests"`
	REST          int `json:"rest"`
	NotModified   int `json:"rest_304"`
	GraphQL       int `json:"graphql"`
	Writes        int `json:"write_requests"`
	Mutations     int `json:"mutations"`
	PrimaryPoints int `json:"primary_points"`
}

// Side is one figure for converge and for the baseline.
type Side struct {
	Converge Requests `json:"converge"`
	Baseline Requests `json:"baseline"`
}

// WriteRound is a round's replies and resolves at a number of threads.
type WriteRound struct {
	Threads int `json:"threads"`
	Side
}

// IdleLoops is the memory of waiting loops in one process.
type IdleLoops struct {
	Loops       int     `json:"loops"`
	RSSMiB      float64 `json:"rss_mib"`
	PeakRSSMiB  float64 `json:"peak_rss_mib"` // the process's, while they started
	KiBPerLoop  float64 `json:"rss_kib_per_loop"`
	HeapKiBLoop float64 `json:"heap_stack_kib_per_loop"`
}

// DecideTime is one Decide at a number of threads.
type DecideTime struct {
	Threads int     `json:"threads"`
	Step    string  `json:"step"` // "reviewed round" (every thread new, classified at observation) or "waiting"
	Micros  float64 `json:"microseconds"`
}

// Report is every figure of one run.
type Report struct {
	Scale       Scale        `json:"scale"`
	GoVersion   string       `json:"go"`
	CPUs        int          `json:"cpus"`
	Observation Side         `json:"observation_idle_pr"`
	Writes      []WriteRound `json:"writes_per_round"`
	IdleLoops   []IdleLoops  `json:"idle_loops"`
	Decide      []DecideTime `json:"decide"`
	Latency     *Latency     `json:"webhook_to_decision"`
	ConvergedPR ConvergedPR  `json:"requests_per_converged_pr"`
	// ClassifyNew is what the reviewed round's observation costs once to
	// classify its new comments (prloop.ClassifyObserved): paid when a
	// comment is first observed, not on every Decide.
	ClassifyNew DecideTime `json:"classify_new_comments"`
}

// Run measures everything its scale asks for.
func Run(ctx context.Context, opt Options) (*Report, error) {
	if opt.Scale == "" {
		opt.Scale = Small
	}
	if opt.Scale != Small && opt.Scale != Full {
		return nil, fmt.Errorf("unknown scale %q (small or full)", opt.Scale)
	}
	if opt.Dir == "" {
		d, err := os.MkdirTemp("", "converge-bench-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(d)
		opt.Dir = d
	}
	say := func(f string, a ...any) {
		if opt.Progress != nil {
			opt.Progress(fmt.Sprintf(f, a...))
		}
	}
	r := &Report{Scale: opt.Scale, GoVersion: runtime.Version(), CPUs: runtime.NumCPU()}

	say("observation of an idle PR")
	obs, err := observation(ctx, opt.Dir+"/observe")
	if err != nil {
		return nil, fmt.Errorf("observation: %w", err)
	}
	r.Observation = obs

	for _, n := range []int{5, 20, 50} {
		say("a round's replies and resolves at %d threads", n)
		wr, err := writes(ctx, fmt.Sprintf("%s/writes-%d", opt.Dir, n), n)
		if err != nil {
			return nil, fmt.Errorf("writes at %d threads: %w", n, err)
		}
		r.Writes = append(r.Writes, wr)
	}

	say("requests per converged PR")
	if r.ConvergedPR, err = convergedPR(ctx, opt.Dir+"/converged"); err != nil {
		return nil, fmt.Errorf("converged PR: %w", err)
	}

	loops := []int{200}
	if opt.Scale == Full {
		loops = []int{1000, 10000}
	}
	for _, n := range loops {
		say("%d idle loops", n)
		il, err := idleLoops(ctx, opt.OpenStore, fmt.Sprintf("%s/idle-%d", opt.Dir, n), n)
		if err != nil {
			return nil, fmt.Errorf("idle loops: %w", err)
		}
		r.IdleLoops = append(r.IdleLoops, il)
	}

	say("Decide at 500 threads")
	r.Decide = decideTimes(500)
	r.ClassifyNew = classifyTime(500)

	say("webhook-to-decision latency")
	if r.Latency, err = latency(ctx, opt.OpenStore, opt.Dir+"/latency", opt.Scale); err != nil {
		return nil, fmt.Errorf("webhook-to-decision latency: %w", err)
	}
	return r, nil
}

func requests(c fakehub.Counts) Requests {
	return Requests{
		Total: c.Requests(), REST: c.RESTGet + c.RESTWrite, NotModified: c.NotModified,
		GraphQL: c.GraphQLQuery + c.GraphQLMutation, Writes: c.Writes(), Mutations: c.Mutations,
		PrimaryPoints: c.PrimaryPoints(),
	}
}

// observation counts one poll of a PR nothing changed on since the last.
func observation(ctx context.Context, dir string) (Side, error) {
	w, err := newWorld(ctx, dir)
	if err != nil {
		return Side{}, err
	}
	defer w.close()
	if err := w.review(ctx, 3); err != nil {
		return Side{}, err
	}
	var s Side
	// An idle PR is one whose CI on the head has finished: wait for it.
	// Then the first polls read the PR as it is and take the probe's
	// ETags; the last finds it unchanged, which is what an idle PR costs
	// on every poll. converge polls a waiting loop's PR through its change
	// probe (PR-O1).
	if err := w.ciSettled(ctx); err != nil {
		return s, err
	}
	// An idle PR's last change is seconds old at least when it is polled;
	// the probe keeps no ETag dated within a second or two of one.
	w.hub.AdvanceClock(time.Minute)
	pctx := forge.WithProbe(ctx)
	for range 2 {
		if _, err := w.client.Observe(pctx, w.ref); err != nil {
			return s, err
		}
	}
	var unchanged bool
	c, err := w.counted(func() error {
		pr, err := w.client.Observe(pctx, w.ref)
		unchanged = err == nil && pr.Unchanged
		return err
	})
	if err != nil {
		return s, err
	}
	if !unchanged {
		return s, fmt.Errorf("the second poll of an unchanged PR was not answered by the probe")
	}
	s.Converge = requests(c)
	if err := w.baseline.Observe(ctx, w.ref); err != nil {
		return s, err
	}
	c, err = w.counted(func() error { return w.baseline.Observe(ctx, w.ref) })
	s.Baseline = requests(c)
	return s, err
}

// writes counts a round's replies and resolves of n threads: converge
// answers one review's n threads, the baseline another's.
func writes(ctx context.Context, dir string, n int) (WriteRound, error) {
	wr := WriteRound{Threads: n}
	w, err := newWorld(ctx, dir)
	if err != nil {
		return wr, err
	}
	defer w.close()
	if err := w.review(ctx, n); err != nil {
		return wr, err
	}
	pr, err := w.client.Observe(ctx, w.ref)
	if err != nil {
		return wr, err
	}
	c, err := w.counted(func() error { return answerAll(ctx, w.client, pr) })
	if err != nil {
		return wr, err
	}
	wr.Converge = requests(c)
	if err := w.review(ctx, n); err != nil {
		return wr, err
	}
	ts, err := w.baseline.threads(ctx, w.ref)
	if err != nil {
		return wr, err
	}
	if len(ts) != n {
		return wr, fmt.Errorf("baseline sees %d open threads, want %d", len(ts), n)
	}
	c, err = w.counted(func() error { return w.baseline.Answer(ctx, w.ref, ts, "Done.") })
	if err != nil {
		return wr, err
	}
	wr.Baseline = requests(c)
	return wr, nil
}

// answerAll is converge's reply-then-resolve of every unresolved thread:
// one batch of replies, then one batch of resolves of the threads whose
// reply is proven (PR-S12), as the PR loop writes a round.
func answerAll(ctx context.Context, f forge.Forge, pr *forge.PullRequest) error {
	b, ok := f.(forge.ThreadBatcher)
	if !ok {
		return fmt.Errorf("the forge client does not batch thread writes")
	}
	var replies []forge.ThreadReply
	for _, t := range pr.Threads {
		if !t.IsResolved {
			replies = append(replies, forge.ThreadReply{ThreadID: t.ID, Body: "Done."})
		}
	}
	var proven []string
	for i, r := range b.ReplyToThreads(ctx, pr.Ref, replies) {
		if r.Err != nil {
			return r.Err
		}
		proven = append(proven, replies[i].ThreadID)
	}
	for _, err := range b.ResolveThreads(ctx, pr.Ref, proven) {
		if err != nil {
			return err
		}
	}
	return nil
}

// decideTimes times Decide on the two steps that matter at n threads.
func decideTimes(n int) []DecideTime {
	var out []DecideTime
	for _, step := range []struct {
		name    string
		fixture func(int) (prloop.State, prloop.Observation, prloop.Config)
	}{{"reviewed round", prlooptest.ReviewedRound}, {"waiting", prlooptest.WaitingRound}} {
		s, o, c := step.fixture(n)
		res := testing.Benchmark(func(b *testing.B) {
			for b.Loop() {
				prloop.Decide(s, o, c)
			}
		})
		out = append(out, DecideTime{Threads: n, Step: step.name, Micros: float64(res.NsPerOp()) / float64(time.Microsecond)})
	}
	return out
}

// classifyTime times classifying the n new comments of the reviewed
// round's observation, as the loop's Observe does the first time it sees
// them.
func classifyTime(n int) DecideTime {
	s, o, c := prlooptest.ReviewedRound(n)
	res := testing.Benchmark(func(b *testing.B) {
		for b.Loop() {
			prloop.ClassifyObserved(s, o, c, nil)
		}
	})
	return DecideTime{Threads: n, Step: "classify new comments at observation", Micros: float64(res.NsPerOp()) / float64(time.Microsecond)}
}
