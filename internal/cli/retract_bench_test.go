package cli

import (
	"context"
	"net/http"
	"slices"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-github/v93/github"

	"github.com/convergeloop/converge/internal/bench"
	"github.com/convergeloop/converge/internal/emulator/fakehub"
	"github.com/convergeloop/converge/internal/prloop"
	"github.com/convergeloop/converge/internal/testutil/hubtest"
)

// BenchmarkPR_T14_FactChangedToVerdictRetracted times, under `converge
// serve` on the emulator (polls ten minutes apart: webhooks only), how
// long a ready PR's verdict outlives a fact that broke it: from CI
// reporting red on the proven head (the status write sent) to the ready
// label gone at the emulator. Each iteration then puts CI back to green,
// registers the PR again through the API and waits for it to be ready
// again, which is not timed.
//
//	go test ./internal/cli -run '^$' -bench FactChangedToVerdictRetracted -benchtime 20x
func BenchmarkPR_T14_FactChangedToVerdictRetracted(b *testing.B) {
	hub := hubtest.Start(b, 100*time.Millisecond)
	numbers, urls := hubtest.DemoPRs(b, hub, 1)
	num := numbers[0]
	const secret = "retract-bench-secret"
	addr := freeAddr(b)
	if err := hub.SetWebhook(fakehub.WebhookConfig{URL: "http://" + addr + "/webhook", Secret: secret}); err != nil {
		b.Fatal(err)
	}
	env := map[string]string{"CONVERGE_TOKEN": hub.Tokens().Author, "CONVERGE_WEBHOOK_SECRET": secret}
	sp := startServe(b, env, append([]string{"--api-url", hub.APIURL(), "--ca-file", hub.CAFile(), "--state", b.TempDir(),
		"--poll-min", "10m", "--poll-max", "10m", "--listen", addr}, urls...)...)
	ready := func() bool {
		st, err := hub.PR(fakehub.DemoOwner, fakehub.DemoRepo, num)
		if err != nil {
			b.Fatal(err)
		}
		return slices.Contains(st.Labels, prloop.LabelReady)
	}
	wait := func(limit time.Duration, what string, ok func() bool) {
		events, cancel := hub.Subscribe()
		defer cancel()
		deadline := time.After(limit)
		for !ok() {
			select {
			case <-events:
			case <-time.After(20 * time.Millisecond):
			case <-sp.done:
				b.Fatalf("serve ended before %s:\n%s", what, sp.out.String())
			case <-deadline:
				b.Fatalf("no %s after %s:\n%s", what, limit, sp.out.String())
			}
		}
	}
	wait(5*time.Minute, "a ready PR", ready)
	ci := restAs(b, hub, hub.Tokens().CI)
	setCI := func(state string) {
		st, err := hub.PR(fakehub.DemoOwner, fakehub.DemoRepo, num)
		if err != nil {
			b.Fatal(err)
		}
		if _, _, err := ci.Repositories.CreateStatus(context.Background(), fakehub.DemoOwner, fakehub.DemoRepo, st.HeadSHA, github.RepoStatus{
			State: new(state), Context: new("ci/integration"), Description: new("integration tests: " + state),
		}); err != nil {
			b.Fatal(err)
		}
	}
	var took []time.Duration
	b.ResetTimer()
	for b.Loop() {
		start := time.Now()
		setCI("failure")
		wait(2*time.Minute, "the verdict withdrawn", func() bool { return !ready() })
		took = append(took, time.Since(start))
		b.StopTimer()
		// The run the news started hands the red CI to a human; once it
		// ended, CI goes green and the PR is registered again (a human
		// asking serve to look again), whose run proves it ready.
		wait(2*time.Minute, "the retracting run's end", func() bool { return !strings.Contains(getRuns(b, sp.addr), urls[0]+`"`) })
		setCI("success")
		resp, err := http.Post("http://"+sp.addr+"/api/prs", "application/json", strings.NewReader(`{"url":"`+urls[0]+`"}`))
		if err != nil {
			b.Fatal(err)
		}
		resp.Body.Close()
		wait(5*time.Minute, "the PR ready again", ready)
		b.StartTimer()
	}
	b.StopTimer()
	sort.Slice(took, func(i, j int) bool { return took[i] < took[j] })
	pct := func(p float64) float64 {
		return float64(took[min(len(took)-1, int(p*float64(len(took))))]) / float64(time.Millisecond)
	}
	b.ReportMetric(pct(0.5), "p50-ms")
	b.ReportMetric(pct(0.99), "p99-ms")
	b.ReportMetric(bench.LoadAvg(), "load-1m")
	_ = sp.cmd.Process.Signal(syscall.SIGTERM)
	<-sp.done
}
