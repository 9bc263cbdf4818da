package temporal

import (
	"context"
	"testing"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"

	"github.com/convergeloop/converge/internal/testutil"
)

// TestPR_G5_TemporalTwoStartsRunOneWorkflow: on a real server, a second
// start on a target whose workflow runs attaches to it; once it ended, a
// start runs the target again.
func TestPR_G5_TemporalTwoStartsRunOneWorkflow(t *testing.T) {
	hostPort := testutil.TemporalDevServer(t)
	c, err := client.Dial(client.Options{HostPort: hostPort, Namespace: testutil.TemporalNamespace, Logger: testutil.TemporalLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	w := &world{}
	k := counterKind(w)
	wk := worker.New(c, "g5", worker.Options{})
	k.Register(wk, &Activities[cParams, cSetup, cState, cObs, cAction, int]{})
	if err := wk.Start(); err != nil {
		t.Fatal(err)
	}
	defer wk.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	o := Options{PollMin: time.Hour}
	first, err := k.Start(ctx, c, "g5", cParams{Name: "t", Goal: 1}, o)
	if err != nil {
		t.Fatal(err)
	}
	second, err := k.Start(ctx, c, "g5", cParams{Name: "t", Goal: 1}, o)
	if err != nil {
		t.Fatal(err)
	}
	if first.GetID() != second.GetID() || first.GetRunID() != second.GetRunID() {
		t.Fatalf("two starts ran %s/%s and %s/%s", first.GetID(), first.GetRunID(), second.GetID(), second.GetRunID())
	}
	if err := Stop(ctx, c, "counter", "t"); err != nil {
		t.Fatal(err)
	}
	var r Result[cState]
	if err := first.Get(ctx, &r); err != nil || r.Terminal.Status != "stopped" {
		t.Fatalf("first run: %v %+v", err, r)
	}
	third, err := k.Start(ctx, c, "g5", cParams{Name: "t", Goal: 1}, o)
	if err != nil {
		t.Fatal(err)
	}
	if third.GetRunID() == first.GetRunID() {
		t.Fatal("a start after the run ended attached to the ended run")
	}
	if err := Stop(ctx, c, "counter", "t"); err != nil {
		t.Fatal(err)
	}
	if err := third.Get(ctx, &r); err != nil {
		t.Fatal(err)
	}
}
