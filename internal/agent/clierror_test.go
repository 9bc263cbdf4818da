//go:build unix

package agent

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/convergeloop/converge/internal/proc/proctest"
)

// lineWatch reads the test scripts' lines: AUTH fails at once, RETRY is a
// failed request the CLI retries, OK is the model answering.
func lineWatch(_ bool, line string) Signal {
	switch {
	case strings.HasPrefix(line, "AUTH"):
		return Signal{Fail: &CLIError{Kind: FailAuth, Message: strings.TrimPrefix(line, "AUTH ")}}
	case strings.HasPrefix(line, "RETRY"):
		return Signal{Retry: &CLIError{Message: strings.TrimPrefix(line, "RETRY "), Endpoint: "http://127.0.0.1:9"}}
	case line == "OK":
		return Signal{Progress: true}
	}
	return Signal{}
}

// TestAG_T4_AuthFailureStopsTheRunAtOnce: a CLI that says its credentials
// failed is stopped then, not at its budget, and the run's error is the
// CLI's own words.
func TestAG_T4_AuthFailureStopsTheRunAtOnce(t *testing.T) {
	t.Parallel()
	clock := proctest.NewManualClock()
	out := make(chan CmdResult, 1)
	go func() {
		r, err := RunWithBudget(context.Background(), Cmd{
			Argv: script(t, `echo starting; echo 'AUTH Not logged in · Please run /login' >&2; exec sleep 60`),
			// The budget never fires in this test: only the watch ends it.
			Budget: 5 * time.Minute, Grace: time.Second, Clock: clock, Watch: lineWatch,
		})
		if err != nil {
			t.Error(err)
		}
		out <- r
	}()
	// The budget's timer is never fired: only the watch ends the run.
	var r CmdResult
	select {
	case r = <-out:
	case <-time.After(60 * time.Second):
		t.Fatal("an authentication failure did not stop the run")
	}
	if r.Failure == nil || r.Failure.Kind != FailAuth || r.Failure.Message != "Not logged in · Please run /login" {
		t.Fatalf("failure = %+v", r.Failure)
	}
	if r.Record.Status != StatusBlocked || r.Record.Reason != ReasonCLIError || !strings.Contains(r.Record.Summary, "Not logged in") {
		t.Errorf("record = %+v", r.Record)
	}
	if r.TimedOut {
		t.Error("timed out: the budget stopped it, not the watch")
	}
}

// TestAG_T4_FailingEndpointStopsAtTheRetryBound: retries of a failing
// model request go on while the bound runs; when it runs out with no
// answer from the model, the run stops with the endpoint named. An
// answer in between turns the bound off.
func TestAG_T4_FailingEndpointStopsAtTheRetryBound(t *testing.T) {
	t.Parallel()
	clock := proctest.NewManualClock()
	out := make(chan CmdResult, 1)
	go func() {
		r, err := RunWithBudget(context.Background(), Cmd{
			Argv:   script(t, `echo 'RETRY Connection refused'; echo OK; echo 'RETRY API Error: 503'; exec sleep 60`),
			Budget: 5 * time.Minute, Grace: time.Second, Clock: clock, Watch: lineWatch, RetryBound: 7 * time.Second,
		})
		if err != nil {
			t.Error(err)
		}
		out <- r
	}()
	// The budget's timer and the bounds' are made in either order; the
	// bounds in the order of the failures.
	var bounds []proctest.Timer
	for range 3 {
		if tm := clock.Next(t); tm.D != 5*time.Minute {
			bounds = append(bounds, tm)
		}
	}
	if len(bounds) != 2 || bounds[0].D != 7*time.Second || bounds[1].D != 7*time.Second {
		t.Fatalf("retry bounds = %+v, want two of 7s", bounds)
	}
	first, second := bounds[0], bounds[1]
	// The model answered (OK) before the first bound ran out, so a
	// second failure starts a new bound; firing the old one changes
	// nothing.
	first.Fire()
	select {
	case r := <-out:
		t.Fatalf("a bound the model's answer turned off stopped the run: %+v", r.Failure)
	case <-time.After(300 * time.Millisecond):
	}
	second.Fire()
	var r CmdResult
	select {
	case r = <-out:
	case <-time.After(60 * time.Second):
		t.Fatal("the run went on after its retry bound")
	}
	if r.Failure == nil || r.Failure.Kind != FailEndpoint || r.Failure.Endpoint != "http://127.0.0.1:9" ||
		!strings.Contains(r.Failure.Message, "API Error: 503") {
		t.Fatalf("failure = %+v", r.Failure)
	}
	if msg := r.Failure.Error(); !strings.Contains(msg, "model endpoint http://127.0.0.1:9 unreachable or failing") {
		t.Errorf("error = %q", msg)
	}
}

// TestAG_T4_CLIErrorReachesTheRunFailure: a run the CLI refused is a
// RunFailure that quotes the CLI, is not retried when it is about
// credentials, and whose kind errors.As finds (exit 6 for FailAuth).
func TestAG_T4_CLIErrorReachesTheRunFailure(t *testing.T) {
	cli := &CLIError{Agent: "claude", Kind: FailAuth, Message: "Invalid API key · Fix external API key"}
	f := FailureOf("claude", Result{}, cli)
	if f == nil || f.Retryable() || KindOf(f) != FailAuth {
		t.Fatalf("failure = %+v", f)
	}
	if !strings.Contains(f.Error(), `"Invalid API key · Fix external API key"`) {
		t.Errorf("error = %q", f.Error())
	}
	var got *CLIError
	if !errors.As(error(f), &got) || got != cli {
		t.Error("errors.As does not find the CLI's error")
	}
	if (&RunFailure{CLI: &CLIError{Kind: FailCLI}}).Retryable() != true {
		t.Error("another CLI error is retried once as before")
	}
}

// TestAG_T3_GarbageQuotesTheModelsLastLine: a run without a valid record
// names what the model said last.
func TestAG_T3_GarbageQuotesTheModelsLastLine(t *testing.T) {
	r := Result{Record: unparseable("last line is not a JSON object"), Output: "Thinking.\nI can't help with that request.\n"}
	f := FailureOf("claude", r, nil)
	if f == nil || !strings.Contains(f.Error(), `its last line: "I can't help with that request."`) {
		t.Fatalf("failure = %v", f)
	}
}
