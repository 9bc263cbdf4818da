package fleet_test

import (
	"context"
	"net"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/convergeloop/converge/internal/emulator/fakehub"
	"github.com/convergeloop/converge/internal/temporal"
	"github.com/convergeloop/converge/internal/testutil"
	"github.com/convergeloop/converge/internal/testutil/hubtest"
)

// TestPR_S2_ServeOnTemporalSignalsWorkflowsByWebhooks: `converge serve
// --engine temporal` is one webhook receiver for a fleet. Three PRs,
// polled only every ten minutes, all end two-stable within the test's
// time on one worker, so the webhooks the server received became
// signals that woke the workflows. serve is SIGKILLed mid-way and
// started again with no PR named: the workflows went on without it, and
// the new serve's signals still reach them.
func TestPR_S2_ServeOnTemporalSignalsWorkflowsByWebhooks(t *testing.T) {
	if testing.Short() {
		t.Skip("runs PR loops end to end on a Temporal server")
	}
	hostPort := testutil.TemporalDevServer(t)
	bin := buildConverge(t)
	hub := hubtest.Start(t, 100*time.Millisecond)
	numbers, urls := hubtest.DemoPRs(t, hub, 3)
	const secret = "fleet-serve-secret"
	addr := freeAddr(t)
	if err := hub.SetWebhook(fakehub.WebhookConfig{URL: "http://" + addr + "/webhook", Secret: secret}); err != nil {
		t.Fatal(err)
	}
	queue := "serve-" + t.Name()
	temporalFlags := []string{"--temporal-address", hostPort, "--namespace", testutil.TemporalNamespace, "--task-queue", queue}
	env := []string{"CONVERGE_TOKEN=" + hub.Tokens().Author, "CONVERGE_WEBHOOK_SECRET=" + secret}
	w := start(t, bin, env, append([]string{"worker", "--ca-file", hub.CAFile(), "--state", t.TempDir()}, temporalFlags...)...)
	waitOutput(t, w, "worker on task queue", time.Minute)
	state := t.TempDir()
	serve := func(args ...string) *proc {
		return start(t, bin, env, append(append([]string{"serve", "--engine", "temporal", "--listen", addr,
			"--api-url", hub.APIURL(), "--ca-file", hub.CAFile(), "--state", state,
			"--poll-min", "10m", "--poll-max", "10m"}, temporalFlags...), args...)...)
	}
	first := serve(urls...)
	waitOutput(t, first, "serving on", time.Minute)
	waitHub(t, hub, w, 5*time.Minute, "a PR ready", func() bool { return converged(t, hub, numbers) >= 1 })
	if err := first.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-first.done
	if converged(t, hub, numbers) == len(numbers) {
		t.Fatal("every PR converged before the kill; the test proves nothing of the restart")
	}
	// While no serve listens, the loops still running either make events
	// whose webhooks are lost, or already wait on one whose wake died
	// with serve (received, not yet signalled): a ten-minute poll away
	// either way. The restart must make them read the world. Serve stays
	// down until a delivery is lost, or ten seconds.
	down := time.After(10 * time.Second)
	for lost := false; !lost; {
		for _, d := range hub.Deliveries() {
			lost = lost || (d.Done && !d.Delivered)
		}
		select {
		case <-down:
			lost = true
		case <-time.After(100 * time.Millisecond):
		}
	}
	second := serve()
	waitOutput(t, second, "serving on", time.Minute)
	waitHub(t, hub, second, 8*time.Minute, "every PR ready", func() bool { return converged(t, hub, numbers) == len(numbers) })
	if strings.Contains(second.out.String(), "resumed") {
		t.Errorf("serve on Temporal resumed runs itself; the workflows needed none:\n%s", second.out.String())
	}
	// The label is the terminal's first action; the workflow ends after.
	c, err := client.Dial(client.Options{HostPort: hostPort, Namespace: testutil.TemporalNamespace, Logger: testutil.TemporalLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, u := range urls {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		err := c.GetWorkflow(ctx, temporal.WorkflowID("pr", u), "").Get(ctx, nil)
		cancel()
		if err != nil {
			t.Fatalf("workflow of %s: %v", u, err)
		}
	}
	// status reads the workflows from the cluster. A webhook GitHub
	// delivers after a PR's run ended (its last review's, say) starts a
	// new run that checks the verdict still holds (PR-T14): it ends
	// two-stable again, so status is read until every PR's newest run
	// has ended, not once.
	var out []byte
	deadline := time.Now().Add(3 * time.Minute)
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	for ; ; <-tick.C {
		out, err = exec.Command(bin, "status", "--engine", "temporal", "--temporal-address", hostPort, "--namespace", testutil.TemporalNamespace).CombinedOutput()
		if err == nil && strings.Count(string(out), "two-stable") == len(numbers) {
			break
		}
		if time.Now().After(deadline) || (err == nil && !strings.Contains(string(out), "running")) {
			t.Errorf("converge status --engine temporal: %v\n%s", err, out)
			break
		}
	}
	if err := second.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	<-second.done
	if second.err != nil {
		t.Errorf("serve after SIGTERM: %v\n%s", second.err, second.out.String())
	}
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}
