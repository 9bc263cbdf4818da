package cli

import (
	"context"
	"testing"
	"time"

	"github.com/convergeloop/converge/internal/emulator/fakehub"
)

// BenchmarkScenario_DemoPRToTwoStable is the scenario bench: one converged
// demo PR per op (three review rounds, two pushes), driven by `converge pr`
// against the emulator. It reports the forge requests converge spent per
// converged PR, by kind, beside the wall time.
func BenchmarkScenario_DemoPRToTwoStable(b *testing.B) {
	var rest, graphql, notModified, git float64
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		ctx, cancel := context.WithCancel(context.Background())
		hub, err := fakehub.New(fakehub.Options{StateDir: b.TempDir(), CopilotDelay: 50 * time.Millisecond})
		if err != nil {
			b.Fatal(err)
		}
		if err := hub.Start(ctx); err != nil {
			b.Fatal(err)
		}
		demo, err := fakehub.SeedDemo(ctx, hub)
		if err != nil {
			b.Fatal(err)
		}
		hub.ResetRequestCounts()
		ios, out, errOut := testIO(map[string]string{"CONVERGE_TOKEN": hub.Tokens().Author})
		b.StartTimer()
		code := Run(ctx, []string{"pr", demo.PRURL, "--api-url", hub.APIURL(), "--ca-file", hub.CAFile(),
			"--state", b.TempDir(), "--poll-min", "50ms", "--poll-max", "400ms"}, ios)
		b.StopTimer()
		if code != 0 {
			b.Fatalf("exit %d\n%s%s", code, out, errOut)
		}
		// The emulator's Copilot and CI act in-process, so every API
		// request it counted is converge's.
		c := hub.RequestCount()
		rest += float64(c.REST)
		graphql += float64(c.GraphQL)
		notModified += float64(c.NotModified)
		git += float64(c.Git)
		hub.Close()
		cancel()
		b.StartTimer()
	}
	n := float64(b.N)
	b.ReportMetric(graphql/n, "graphql-req/op")
	b.ReportMetric(rest/n, "rest-req/op")
	b.ReportMetric(notModified/n, "rest-304/op")
	b.ReportMetric(git/n, "git-req/op")
}

// BenchmarkDemo times `converge demo` as users run it (IF-6: under 60 s),
// with its default one-second scripted Copilot.
func BenchmarkDemo(b *testing.B) {
	for i := 0; i < b.N; i++ {
		ios, out, errOut := testIO(nil)
		if code := Run(context.Background(), []string{"demo", "--state", b.TempDir()}, ios); code != 0 {
			b.Fatalf("exit %d\n%s%s", code, out, errOut)
		}
	}
}
