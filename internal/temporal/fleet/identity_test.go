package fleet_test

import (
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/convergeloop/converge/internal/emulator/fakehub"
	"github.com/convergeloop/converge/internal/prloop"
	"github.com/convergeloop/converge/internal/testutil"
	"github.com/convergeloop/converge/internal/testutil/hubtest"
)

// TestSEC_1_FleetWorkerOfAnotherIdentityRefusesTheRun: a run set up by a
// worker acting as the PR's author is taken over by a worker acting as
// someone else. Markers are believed only from converge's own login, so
// that worker would read the run's replies as a human's; it refuses the
// run, which ends errored saying why, and nothing is written to the PR
// under the other identity.
func TestSEC_1_FleetWorkerOfAnotherIdentityRefusesTheRun(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a PR loop on a Temporal server")
	}
	hostPort := testutil.TemporalDevServer(t)
	bin := buildConverge(t)
	hub := hubtest.Start(t, 100*time.Millisecond)
	numbers, urls := hubtest.DemoPRs(t, hub, 1)
	queue := "identity-" + t.Name()
	temporalFlags := []string{"--temporal-address", hostPort, "--namespace", testutil.TemporalNamespace, "--task-queue", queue}
	worker := func(token, name string) *proc {
		return start(t, bin, []string{"CONVERGE_TOKEN=" + token}, append([]string{"worker", "--ca-file", hub.CAFile(), "--state", t.TempDir()}, temporalFlags...)...)
	}
	a := worker(hub.Tokens().Author, "a")
	waitOutput(t, a, "worker on task queue", time.Minute)
	pr := start(t, bin, nil, append(append([]string{"pr", "--engine", "temporal", "--api-url", hub.APIURL(), "--poll-min", "1s", "--poll-max", "5s"}, temporalFlags...), urls...)...)
	waitOutput(t, a, "bound pr", time.Minute)
	// The run acts as a's login once the workflow has recorded a's
	// binding, which a round's start shows. Before that nothing was
	// written as anyone, and a worker of another identity that binds
	// the run first rightly runs it as itself: killing a as soon as it
	// printed "bound pr" let that happen on a loaded machine.
	waitOutput(t, pr, "round 1 on ", 2*time.Minute)
	if err := a.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-a.done
	b := worker(hub.Tokens().Reviewer, "b")
	select {
	case <-pr.done:
	case <-time.After(5 * time.Minute):
		t.Fatalf("the run did not end:\n%s\n--- b ---\n%s", pr.out.String(), b.out.String())
	}
	if pr.err == nil {
		t.Fatalf("the run ended exit 0 on a worker of another identity:\n%s", pr.out.String())
	}
	if !strings.Contains(pr.out.String(), "every worker of a fleet must use the same forge identity") {
		t.Errorf("the run's end does not say why:\n%s", pr.out.String())
	}
	st, err := hub.PR(fakehub.DemoOwner, fakehub.DemoRepo, numbers[0])
	if err != nil {
		t.Fatal(err)
	}
	for _, th := range st.ThreadList {
		for _, body := range th.Bodies {
			if len(prloop.ParseMarkers(body)) > 1 {
				t.Errorf("thread %s has a reply with several markers: %q", th.ID, body)
			}
		}
	}
	if slices := st.Labels; len(slices) > 0 {
		for _, l := range slices {
			if l == prloop.LabelReady {
				t.Errorf("the PR is labelled ready: %v", st.Labels)
			}
		}
	}
}
