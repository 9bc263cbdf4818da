//go:build unix

package proc

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestAG_T1_RunStopsAtBudget: a process that never ends and ignores
// SIGTERM is stopped by its budget, on the real clock: the result says
// timed out and killed. The context is only a backstop, minutes past the
// budget, against a budget that is not enforced: had it ended the run,
// Interrupted would say so, and TimedOut would not.
func TestAG_T1_RunStopsAtBudget(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	r, err := Run(ctx, Spec{
		Argv: []string{"sh", "-c", "echo started; trap '' TERM; while :; do sleep 0.05; done"}, Budget: 200 * time.Millisecond, Grace: 200 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	if r.Interrupted != nil || r.Aborted || r.Flooded {
		t.Fatalf("result %+v: ended by the backstop context, not by its budget", r)
	}
	if !r.TimedOut || r.ExitCode != -1 || !strings.Contains(r.Stdout, "started") {
		t.Fatalf("result %+v", r)
	}
}

func TestAG_T5_RunCombinedKeepsOrderAndExitCode(t *testing.T) {
	r, err := Run(context.Background(), Spec{Argv: []string{"sh", "-c", "echo a; echo b >&2; echo c; exit 3"}, Combined: true})
	if err != nil {
		t.Fatal(err)
	}
	if r.Stdout != "a\nb\nc\n" || r.Stderr != "" || r.ExitCode != 3 || r.TimedOut {
		t.Fatalf("result %+v", r)
	}
}

func TestRunContextEndedAndStartFailure(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	r, err := Run(ctx, Spec{Argv: []string{"sleep", "30"}, Grace: time.Second})
	if err != nil || !errors.Is(r.Interrupted, context.DeadlineExceeded) || r.TimedOut {
		t.Fatalf("result %+v err %v", r, err)
	}
	r, err = Run(context.Background(), Spec{Argv: []string{"/nonexistent/program"}})
	if err == nil || r.Started {
		t.Fatalf("missing program: %+v %v", r, err)
	}
}

func TestRunNegativeMaxOutputKeepsEverything(t *testing.T) {
	r, err := Run(context.Background(), Spec{Argv: []string{"sh", "-c", "head -c 3000000 /dev/zero; echo end >&2"}, MaxOutput: -1})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Stdout) != 3000000 || r.StdoutDropped != 0 || r.Stderr != "end\n" {
		t.Fatalf("kept %d bytes (dropped %d), stderr %q", len(r.Stdout), r.StdoutDropped, r.Stderr)
	}
}

func TestTail(t *testing.T) {
	b := &Tail{Max: 5}
	for _, s := range []string{"ab", "cd", "efg", "h", "0123456789"} {
		b.Write([]byte(s))
	}
	if s, dropped := b.Content(); s != "56789" || dropped != 13 {
		t.Errorf("tail = %q dropped %d", s, dropped)
	}
	b = &Tail{Max: 5}
	b.Write([]byte("abc"))
	b.Write([]byte("defg"))
	if b.String() != "[… 2 earlier bytes dropped]\ncdefg" {
		t.Errorf("tail = %q", b.String())
	}
	// The head is kept across writes, beside the tail.
	b = &Tail{Max: 3, Head: 4}
	for _, s := range []string{"ab", "cdef", "ghij"} {
		b.Write([]byte(s))
	}
	if h, s := b.HeadContent(), b.String(); h != "abcd" || s != "[… 7 earlier bytes dropped]\nhij" {
		t.Errorf("head %q, tail %q", h, s)
	}
}

// TestAG_T1_RunKeepsStdoutsHead: what a process prints first survives a
// long output that pushed it out of the tail.
func TestAG_T1_RunKeepsStdoutsHead(t *testing.T) {
	r, err := Run(context.Background(), Spec{Argv: []string{"sh", "-c", "echo session-S1; head -c 100000 /dev/zero | tr '\\0' x; echo; echo done"}, MaxOutput: 1000, StdoutHead: 20})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(r.StdoutHead, "session-S1\nxxxxxxxxx") || len(r.StdoutHead) != 20 || strings.Contains(r.Stdout, "session") || !strings.HasSuffix(r.Stdout, "done\n") {
		t.Fatalf("head %q, tail ends %q", r.StdoutHead, r.Stdout[max(0, len(r.Stdout)-20):])
	}
}

func TestOnLineSeesEachLineAndAbortStops(t *testing.T) {
	abort := make(chan struct{})
	var got []string
	res, err := Run(context.Background(), Spec{
		Argv: []string{"sh", "-c", `echo one; printf 'two\r\n' >&2; echo stop; exec sleep 30`},
		OnLine: func(stderr bool, line string) {
			got = append(got, fmt.Sprintf("%v:%s", stderr, line))
			if line == "stop" {
				close(abort)
			}
		},
		Abort: abort,
		Grace: time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Aborted || res.TimedOut {
		t.Errorf("aborted=%v timedOut=%v, want an abort", res.Aborted, res.TimedOut)
	}
	want := map[string]bool{"false:one": true, "true:two": true, "false:stop": true}
	if len(got) != 3 {
		t.Fatalf("lines = %q", got)
	}
	for _, g := range got {
		if !want[g] {
			t.Errorf("unexpected line %q in %q", g, got)
		}
	}
	if res.Stdout != "one\nstop\n" {
		t.Errorf("stdout = %q", res.Stdout)
	}
}

func TestOnLinePassesALastLineWithoutNewline(t *testing.T) {
	var got []string
	_, err := Run(context.Background(), Spec{
		Argv:   []string{"printf", "a\nb"},
		OnLine: func(_ bool, line string) { got = append(got, line) },
	})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(got, "|") != "a|b" {
		t.Errorf("lines = %q", got)
	}
}

// A process that writes past MaxRead is killed at once, its Result says
// Flooded, and what was kept is the bound's worth at most.
func TestSEC_7_AFloodIsStopped(t *testing.T) {
	res, err := Run(context.Background(), Spec{
		Argv:    []string{"sh", "-c", "yes flood; sleep 100"},
		MaxRead: 1 << 20, Budget: time.Minute,
	})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Flooded || res.TimedOut {
		t.Fatalf("flooded=%v timed out=%v, want flooded", res.Flooded, res.TimedOut)
	}
	if len(res.Stdout)+int(res.StdoutDropped) > 1<<20 {
		t.Fatalf("read %d bytes past the 1 MiB bound", len(res.Stdout)+int(res.StdoutDropped))
	}
	calm, err := Run(context.Background(), Spec{Argv: []string{"sh", "-c", "echo calm"}, MaxRead: 1 << 20})
	if err != nil || calm.Flooded || calm.Stdout != "calm\n" {
		t.Fatalf("a calm process: %+v %v", calm, err)
	}
}
