package fleet_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/convergeloop/converge/internal/emulator/fakehub"
	"github.com/convergeloop/converge/internal/prloop"
	"github.com/convergeloop/converge/internal/temporal"
	"github.com/convergeloop/converge/internal/testutil"
	"github.com/convergeloop/converge/internal/testutil/hubtest"
)

// TestREL_2_FleetOnTemporalFinishesEveryLoopAfterAWorkerIsKilled is issue
// 19's acceptance: ten PR loops started with `converge pr --engine
// temporal` run on two `converge worker` processes against a real
// Temporal dev server; one worker is SIGKILLed mid-way, and every loop
// finishes two-stable on the other, with no duplicate side effect at the
// emulator.
func TestREL_2_FleetOnTemporalFinishesEveryLoopAfterAWorkerIsKilled(t *testing.T) {
	if testing.Short() {
		t.Skip("runs ten PR loops end to end on a Temporal server")
	}
	hostPort := testutil.TemporalDevServer(t)
	bin := buildConverge(t)
	hub := hubtest.Start(t, 100*time.Millisecond)
	numbers, urls := hubtest.DemoPRs(t, hub, 10)
	queue := "fleet-" + strings.ReplaceAll(t.Name(), "/", "-")
	temporalFlags := []string{"--temporal-address", hostPort, "--namespace", testutil.TemporalNamespace, "--task-queue", queue}
	env := []string{"CONVERGE_TOKEN=" + hub.Tokens().Author}

	worker := func(name string) *proc {
		return start(t, bin, env, append([]string{"worker", "--ca-file", hub.CAFile(), "--state", filepath.Join(t.TempDir(), name)}, temporalFlags...)...)
	}
	a, b := worker("a"), worker("b")
	waitOutput(t, a, "worker on task queue", time.Minute)
	waitOutput(t, b, "worker on task queue", time.Minute)
	pr := start(t, bin, nil, append(append([]string{"pr", "--engine", "temporal", "--api-url", hub.APIURL(), "--poll-min", "1s", "--poll-max", "5s"}, temporalFlags...), urls...)...)

	c, err := client.Dial(client.Options{HostPort: hostPort, Namespace: testutil.TemporalNamespace, Logger: testutil.TemporalLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// Mid-round: worker a is running a fix (the server names the worker
	// of each attempt). Waiting for a PR to have converged first, too,
	// missed every fix on a loaded machine, where the loops move in step
	// and the first finish comes after the last fix.
	waitHub(t, hub, pr, 10*time.Minute, "a fix running on worker a", func() bool {
		return runningOn(t, c, urls, a.cmd.Process.Pid) != ""
	})
	if converged(t, hub, numbers) == len(numbers) {
		t.Fatal("every PR converged before the kill; the test proves no take-over")
	}
	heldByA := bound(a)
	if err := a.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-a.done

	select {
	case <-pr.done:
	case <-time.After(15 * time.Minute):
		t.Fatalf("converge pr --engine temporal did not end:\n%s\n--- worker b ---\n%s", pr.out.String(), b.out.String())
	}
	if pr.err != nil {
		t.Fatalf("converge pr --engine temporal: %v\n%s\n--- worker b ---\n%s", pr.err, pr.out.String(), b.out.String())
	}
	if n := strings.Count(pr.out.String(), "converge: two-stable (exit 0)"); n != len(numbers) {
		t.Errorf("%d two-stable terminals printed, want %d:\n%s", n, len(numbers), pr.out.String())
	}
	// Worker b took over loops worker a held when it died.
	tookOver := 0
	for _, target := range heldByA {
		if slices.Contains(bound(b), target) {
			tookOver++
		}
	}
	if tookOver == 0 {
		t.Errorf("worker b bound none of the loops worker a held (%v): no take-over happened\n--- b ---\n%s", heldByA, b.out.String())
	}
	t.Logf("worker a held %d loops when killed; worker b bound %d of them", len(heldByA), tookOver)

	// At the forge: every PR ready once, every thread answered once, and
	// the same threads and comments on every PR.
	var shape []string
	for _, num := range numbers {
		st, err := hub.PR(fakehub.DemoOwner, fakehub.DemoRepo, num)
		if err != nil {
			t.Fatal(err)
		}
		ready := 0
		for _, l := range st.Labels {
			if l == prloop.LabelReady {
				ready++
			}
		}
		if ready != 1 {
			t.Errorf("PR %d: labels %v", num, st.Labels)
		}
		for _, th := range st.ThreadList {
			replies := 0
			for _, body := range th.Bodies {
				if len(prloop.ParseMarkers(body)) > 0 {
					replies++
				}
			}
			if replies != 1 || !th.Resolved {
				t.Errorf("PR %d thread %s: %d converge replies, resolved %v", num, th.ID, replies, th.Resolved)
			}
		}
		shape = append(shape, fmt.Sprintf("%d threads, %d comments", st.Threads, st.IssueComments))
	}
	for i, s := range shape {
		if s != shape[0] {
			t.Errorf("PR %d has %s, PR %d %s: a duplicate write or a lost one", numbers[i], s, numbers[0], shape[0])
		}
	}
	if lost := checkHistories(t, c, urls, hub.Tokens().Author); lost == 0 {
		t.Errorf("no activity attempt was lost with worker a and retried: the kill was not mid-round")
	}
}

// runningOn names an activity a worker of pid is running, "" for none.
func runningOn(t *testing.T, c client.Client, urls []string, pid int) string {
	t.Helper()
	for _, u := range urls {
		d, err := c.DescribeWorkflow(context.Background(), temporal.WorkflowID("pr", u), "")
		if err != nil {
			continue // not started yet
		}
		for _, pa := range d.RawResponse.GetPendingActivities() {
			// An act running for a while is a fix (an agent, a build, the
			// tests): it is still running when the kill lands.
			if pa.GetState() == enums.PENDING_ACTIVITY_STATE_STARTED && strings.HasPrefix(pa.GetLastWorkerIdentity(), fmt.Sprintf("%d@", pid)) &&
				pa.GetActivityType().GetName() == "converge.pr.act" && time.Since(pa.GetLastStartedTime().AsTime()) > 500*time.Millisecond {
				return pa.GetActivityType().GetName() + " of " + u
			}
		}
	}
	return ""
}

// checkHistories reads every loop's workflow history: none holds the
// worker's token (SEC-3: the history is a store), and each replays on
// today's code. With CONVERGE_RECORD_HISTORIES=DIR they are written
// there, for internal/temporal/testdata/histories.
//
// It returns how many activity attempts were retried after a heartbeat
// timeout: attempts lost with a worker.
func checkHistories(t *testing.T, c client.Client, urls []string, token string) (lost int) {
	t.Helper()
	dir := os.Getenv("CONVERGE_RECORD_HISTORIES")
	for i, u := range urls {
		id := temporal.WorkflowID("pr", u)
		it := c.GetWorkflowHistory(context.Background(), id, "", false, enums.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		var buf strings.Builder
		buf.WriteString(`{"events":[`)
		n := 0
		for it.HasNext() {
			ev, err := it.Next()
			if err != nil {
				t.Fatalf("history of %s: %v", id, err)
			}
			if st := ev.GetActivityTaskStartedEventAttributes(); st != nil && st.GetAttempt() > 1 &&
				st.GetLastFailure().GetTimeoutFailureInfo().GetTimeoutType() == enums.TIMEOUT_TYPE_HEARTBEAT {
				lost++
			}
			b, err := protojson.Marshal(ev)
			if err != nil {
				t.Fatal(err)
			}
			if n > 0 {
				buf.WriteString(",")
			}
			buf.Write(b)
			n++
		}
		buf.WriteString("]}")
		if strings.Contains(buf.String(), token) {
			t.Errorf("the history of %s holds the worker's token", id)
		}
		if dir != "" {
			f := filepath.Join(dir, fmt.Sprintf("pr-fleet-worker-killed-%02d.json", i+1))
			if err := os.WriteFile(f, []byte(buf.String()), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	return lost
}

type proc struct {
	cmd  *exec.Cmd
	out  *syncBuffer
	done chan struct{}
	err  error
}

func start(t *testing.T, bin string, env []string, args ...string) *proc {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(scrubbed(), env...)
	out := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &proc{cmd: cmd, out: out, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-p.done
		if t.Failed() {
			t.Logf("--- %v ---\n%s", args[:1], out.String())
		}
	})
	return p
}

// scrubbed is the test's environment without forge credentials.
func scrubbed() []string {
	var out []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "CONVERGE_TOKEN", "GH_TOKEN", "GITHUB_TOKEN", "GH_ENTERPRISE_TOKEN", "GITHUB_ENTERPRISE_TOKEN", "GITHUB_API_URL", "TEMPORAL_ADDRESS", "TEMPORAL_NAMESPACE":
			continue
		}
		if strings.HasPrefix(k, "CONVERGE_RECORD_") {
			continue // the test's, not converge's
		}
		out = append(out, kv)
	}
	return out
}

var boundRE = regexp.MustCompile(`converge: worker: bound pr (\S+) \(run`)

// bound are the PRs a worker bound a loop of, in order.
func bound(p *proc) []string {
	var out []string
	for _, m := range boundRE.FindAllStringSubmatch(p.out.String(), -1) {
		if !slices.Contains(out, m[1]) {
			out = append(out, m[1])
		}
	}
	return out
}

func waitOutput(t *testing.T, p *proc, what string, limit time.Duration) {
	t.Helper()
	deadline := time.After(limit)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for !strings.Contains(p.out.String(), what) {
		select {
		case <-p.done:
			t.Fatalf("process ended before %q:\n%s", what, p.out.String())
		case <-deadline:
			t.Fatalf("no %q after %s:\n%s", what, limit, p.out.String())
		case <-tick.C:
		}
	}
}

// waitHub waits, on the emulator's events, until ok holds.
func waitHub(t *testing.T, hub *fakehub.Hub, p *proc, limit time.Duration, what string, ok func() bool) {
	t.Helper()
	events, cancel := hub.Subscribe()
	defer cancel()
	deadline := time.After(limit)
	tick := time.NewTicker(time.Second) // a worker's output is no hub event
	defer tick.Stop()
	for !ok() {
		select {
		case <-events:
		case <-tick.C:
		case <-p.done:
			t.Fatalf("process ended before %s:\n%s", what, p.out.String())
		case <-deadline:
			t.Fatalf("no %s after %s:\n%s", what, limit, p.out.String())
		}
	}
}

func converged(t *testing.T, hub *fakehub.Hub, numbers []int) int {
	return len(readyTargets(t, hub, numbers))
}

// readyTargets are the PRs (as the workers name them) labelled ready.
func readyTargets(t *testing.T, hub *fakehub.Hub, numbers []int) []string {
	t.Helper()
	var out []string
	for _, num := range numbers {
		st, err := hub.PR(fakehub.DemoOwner, fakehub.DemoRepo, num)
		if err != nil {
			t.Fatal(err)
		}
		if slices.Contains(st.Labels, prloop.LabelReady) {
			out = append(out, hub.PRURL(fakehub.DemoOwner, fakehub.DemoRepo, num))
		}
	}
	return out
}

var built struct {
	once sync.Once
	bin  string
	out  []byte
	err  error
}

// buildConverge builds the converge binary once for the test binary.
func buildConverge(t *testing.T) string {
	t.Helper()
	built.once.Do(func() {
		dir, err := os.MkdirTemp("", "converge-fleet-bin-")
		if err != nil {
			built.err = err
			return
		}
		built.bin = filepath.Join(dir, "converge")
		built.out, built.err = exec.Command("go", "build", "-o", built.bin, "github.com/convergeloop/converge/cmd/converge").CombinedOutput()
	})
	if built.err != nil {
		t.Fatalf("go build: %v\n%s", built.err, built.out)
	}
	return built.bin
}

type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
