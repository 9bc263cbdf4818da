package fleet_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/convergeloop/converge/internal/emulator/fakehub"
	"github.com/convergeloop/converge/internal/exitcode"
	"github.com/convergeloop/converge/internal/prloop"
	"github.com/convergeloop/converge/internal/testutil"
	"github.com/convergeloop/converge/internal/testutil/hubtest"
)

// TestPR_T14_FleetRefusesAPRAnotherConvergeHolds: a laptop (the author's
// token, its own state store) drives the demo PR. A fleet run of the same
// PR (`converge pr --engine temporal`, a worker with the reviewer's
// token) reads the laptop's lease on the head at its setup and refuses
// with exit 2, naming the holder and --take-over, writing nothing. With
// --take-over the fleet drives the PR two-stable and the laptop yields
// (taken-over, exit 3). Then a human pushes, and the next fleet run knows
// the verdict the last one proved: it withdraws it for "a new head"
// naming the head that verdict was for (PriorVerdictHead seeded from the
// workflow's last run, as a local run seeds it from its store).
func TestPR_T14_FleetRefusesAPRAnotherConvergeHolds(t *testing.T) {
	if testing.Short() {
		t.Skip("runs PR loops on a Temporal server")
	}
	hostPort := testutil.TemporalDevServer(t)
	bin := buildConverge(t)
	hub := hubtest.Start(t, 2*time.Second) // Copilot slow: the laptop is mostly waiting
	numbers, urls := hubtest.DemoPRs(t, hub, 1)
	queue := "lease-" + t.Name()
	temporalFlags := []string{"--temporal-address", hostPort, "--namespace", testutil.TemporalNamespace, "--task-queue", queue}
	fleetPR := func(extra ...string) *proc {
		args := append([]string{"pr", "--engine", "temporal", "--api-url", hub.APIURL(), "--poll-min", "1s", "--poll-max", "5s"}, temporalFlags...)
		return start(t, bin, nil, append(append(args, extra...), urls[0])...)
	}
	laptop := start(t, bin, []string{"CONVERGE_TOKEN=" + hub.Tokens().Author}, "pr", "--api-url", hub.APIURL(), "--ca-file", hub.CAFile(),
		"--state", t.TempDir(), "--poll-min", "1s", "--poll-max", "5s", urls[0])
	waitHub(t, hub, laptop, 2*time.Minute, "a lease on the head", func() bool { return leaseOnHead(t, hub, numbers[0]) })

	worker := start(t, bin, []string{"CONVERGE_TOKEN=" + hub.Tokens().Reviewer},
		append([]string{"worker", "--ca-file", hub.CAFile(), "--state", t.TempDir()}, temporalFlags...)...)
	waitOutput(t, worker, "worker on task queue", time.Minute)
	before := writesBy(hub, fakehub.LoginReviewer)
	refused := fleetPR()
	waitEnd(t, refused, 3*time.Minute)
	if c := exitCode(refused); c != exitcode.Usage || !strings.Contains(refused.out.String(), "is driven by converge run") || !strings.Contains(refused.out.String(), "--take-over") {
		t.Fatalf("a fleet run of a PR the laptop holds: exit %d, want 2 naming the holder and --take-over:\n%s", c, refused.out.String())
	}
	if n := writesBy(hub, fakehub.LoginReviewer); n != before {
		t.Fatalf("the refused fleet run wrote %d time(s) at the forge", n-before)
	}

	taker := fleetPR("--take-over")
	waitEnd(t, taker, 5*time.Minute)
	if c := exitCode(taker); c != exitcode.OK {
		t.Fatalf("the fleet's take-over: exit %d, want two-stable:\n%s\n--- laptop ---\n%s", c, taker.out.String(), laptop.out.String())
	}
	waitEnd(t, laptop, 2*time.Minute)
	if c := exitCode(laptop); c != exitcode.Human || !strings.Contains(laptop.out.String(), "taken-over") {
		t.Fatalf("the laptop: exit %d, want taken-over (3):\n%s", c, laptop.out.String())
	}
	st, err := hub.PR(fakehub.DemoOwner, fakehub.DemoRepo, numbers[0])
	if err != nil {
		t.Fatal(err)
	}
	proven := st.HeadSHA
	if !strings.Contains(taker.out.String(), "two-stable on "+proven[:12]) {
		t.Fatalf("the take-over's verdict is not on the head %s:\n%s", proven, taker.out.String())
	}

	if _, err := hub.PushFiles(fakehub.DemoOwner, fakehub.DemoRepo, st.HeadRef, map[string]string{"NOTES.md": "a human's note\n"}, "a human's push"); err != nil {
		t.Fatal(err)
	}
	again := fleetPR()
	waitHub(t, hub, again, 3*time.Minute, "a retraction", func() bool { return len(retractionBodies(t, hub, numbers[0])) > 0 })
	bodies := retractionBodies(t, hub, numbers[0])
	if want := "(the verdict was for " + proven[:12] + ")"; !strings.Contains(bodies[0], want) {
		t.Fatalf("the retraction does not name the head the verdict was for (%s):\n%s", want, bodies[0])
	}
}

// leaseOnHead reports a pending `converge` status with a lease on the PR's
// head.
func leaseOnHead(t *testing.T, hub *fakehub.Hub, number int) bool {
	t.Helper()
	st, err := hub.PR(fakehub.DemoOwner, fakehub.DemoRepo, number)
	if err != nil {
		t.Fatal(err)
	}
	sts, err := hub.Statuses(fakehub.DemoOwner, fakehub.DemoRepo, st.HeadSHA)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range sts {
		if s.Context == prloop.StatusContext && s.State == "pending" && strings.Contains(s.Description, "[lease ") {
			return true
		}
	}
	return false
}

func writesBy(hub *fakehub.Hub, login string) int {
	n := 0
	for _, w := range hub.Writes() {
		if w.Actor == login {
			n++
		}
	}
	return n
}

func waitEnd(t *testing.T, p *proc, limit time.Duration) {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(limit):
		t.Fatalf("did not end after %s:\n%s", limit, p.out.String())
	}
}

func exitCode(p *proc) exitcode.Code {
	var ee *exec.ExitError
	if errors.As(p.err, &ee) {
		return exitcode.Code(ee.ExitCode())
	}
	if p.err != nil {
		return -1
	}
	return 0
}

// retractionBodies are converge's retraction comments on the demo PR,
// read through the REST API as an outsider reads them.
func retractionBodies(t *testing.T, hub *fakehub.Hub, number int) []string {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, fmt.Sprintf("%s/repos/%s/%s/issues/%d/comments?per_page=100", hub.APIURL(), fakehub.DemoOwner, fakehub.DemoRepo, number), nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+hub.Tokens().Outsider)
	resp, err := hub.HTTPClient().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var cs []struct {
		Body string `json:"body"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&cs); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, c := range cs {
		if strings.Contains(c.Body, "<!-- converge:retracted") {
			out = append(out, c.Body)
		}
	}
	return out
}
