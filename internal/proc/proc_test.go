//go:build unix

package proc

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestAG_T1_RunStopsAtBudget(t *testing.T) {
	start := time.Now()
	r, err := Run(context.Background(), Spec{
		Argv: []string{"sh", "-c", "echo started; trap '' TERM; while :; do sleep 0.05; done"}, Budget: 200 * time.Millisecond, Grace: 200 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	if !r.TimedOut || r.ExitCode != -1 || !strings.Contains(r.Stdout, "started") {
		t.Fatalf("result %+v", r)
	}
	if el := time.Since(start); el > 3*time.Second {
		t.Errorf("took %s", el)
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
}
