package store_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/convergeloop/converge/internal/store"
)

// TestLOOP_3_TicketLifecycle: a ticket is created once, claimed once in
// its owner's name, finished only by its owner, and never handed out
// again once claimed, not even after its owner was interrupted.
func TestLOOP_3_TicketLifecycle(t *testing.T) {
	ctx := context.Background()
	s := openT(t, filepath.Join(t.TempDir(), "t.db"))
	newRun(t, s, "r-1", "loop:/repo")

	tk, created, err := s.CreateTicket(ctx, store.Ticket{ID: "r-1.iter.01", RunID: "r-1", N: 1})
	if err != nil || !created || tk.Status != store.TicketOpen || tk.Owner != "" {
		t.Fatalf("create = %+v %v %v", tk, created, err)
	}
	if _, again, err := s.CreateTicket(ctx, store.Ticket{ID: "r-1.iter.01", RunID: "r-1", N: 1}); err != nil || again {
		t.Fatalf("second create: created=%v err=%v; want an idempotent no-op", again, err)
	}
	if err := s.FinishTicket(ctx, "r-1.iter.01", "child-a", store.TicketDone, nil); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("finishing an unclaimed ticket: %v", err)
	}
	holder, ok, err := s.ClaimTicket(ctx, "r-1.iter.01", "child-a", 11)
	if err != nil || !ok || holder != "child-a" {
		t.Fatalf("claim = %q %v %v", holder, ok, err)
	}
	if holder, ok, _ := s.ClaimTicket(ctx, "r-1.iter.01", "child-a", 11); !ok || holder != "child-a" {
		t.Fatalf("the owner's second claim = %q %v; want held", holder, ok)
	}
	if holder, ok, err := s.ClaimTicket(ctx, "r-1.iter.01", "child-b", 12); err != nil || ok || holder != "child-a" {
		t.Fatalf("a second owner's claim = %q %v %v; want refused, held by child-a", holder, ok, err)
	}
	if err := s.FinishTicket(ctx, "r-1.iter.01", "child-b", store.TicketDone, []byte(`{}`)); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a non-owner finished the ticket: %v", err)
	}
	if err := s.FinishTicket(ctx, "r-1.iter.01", "child-a", store.TicketDone, []byte(`{"ok":true}`)); err != nil {
		t.Fatal(err)
	}
	got, err := s.GetTicket(ctx, "r-1.iter.01")
	if err != nil || got.Status != store.TicketDone || string(got.Result) != `{"ok":true}` || got.PID != 11 || got.ClaimedAt.IsZero() || got.FinishedAt.IsZero() {
		t.Fatalf("finished ticket = %+v, %v", got, err)
	}

	// An owner that died: the ticket is interrupted and stays its.
	if _, _, err := s.CreateTicket(ctx, store.Ticket{ID: "r-1.iter.02", RunID: "r-1", N: 2}); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := s.ClaimTicket(ctx, "r-1.iter.02", "child-c", 13); !ok {
		t.Fatal("claim")
	}
	if err := s.InterruptTicket(ctx, "r-1.iter.02"); err != nil {
		t.Fatal(err)
	}
	if holder, ok, _ := s.ClaimTicket(ctx, "r-1.iter.02", "child-d", 14); ok || holder != "child-c" {
		t.Fatalf("an interrupted ticket was handed out again: %q %v", holder, ok)
	}
	if holder, ok, _ := s.ClaimTicket(ctx, "r-1.iter.02", "child-c", 13); ok {
		t.Fatalf("an interrupted ticket was reclaimed by its dead owner: %q", holder)
	}
	if err := s.InterruptTicket(ctx, "r-1.iter.99"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("interrupting a missing ticket: %v", err)
	}
	all, err := s.Tickets(ctx, "r-1")
	if err != nil || len(all) != 2 || all[0].N != 1 || all[1].Status != store.TicketInterrupted {
		t.Fatalf("tickets = %+v, %v", all, err)
	}
}

// claimantEnv makes this test binary a claimant process (see
// TestLOOP_3_TicketClaimHelper).
const claimantEnv = "CONVERGE_TEST_TICKET_CLAIMANT"

// TestLOOP_3_TicketClaimHelper is a claimant process, not a test: run by
// TestLOOP_3_TwoProcessesClaimOneTicket with claimantEnv set to
// "DB OWNER N SEED". It opens the store, prints "ready", waits for a line
// on stdin, then claims tickets t00..tN-1 in the order SEED shuffles them
// to and prints one line per ticket: "TICKET won" or "TICKET lost HOLDER".
func TestLOOP_3_TicketClaimHelper(t *testing.T) {
	spec := os.Getenv(claimantEnv)
	if spec == "" {
		t.Skip("a helper process for TestLOOP_3_TwoProcessesClaimOneTicket")
	}
	var (
		db, owner string
		n         int
		seed      int64
	)
	if _, err := fmt.Sscan(spec, &db, &owner, &n, &seed); err != nil {
		t.Fatalf("bad %s %q: %v", claimantEnv, spec, err)
	}
	ctx := context.Background()
	s, err := store.Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	fmt.Println("ready")
	if _, err := bufio.NewReader(os.Stdin).ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	for _, i := range rand.New(rand.NewPCG(uint64(seed), 0)).Perm(n) {
		id := fmt.Sprintf("t%02d", i)
		holder, ok, err := s.ClaimTicket(ctx, id, owner, os.Getpid())
		switch {
		case err != nil:
			fmt.Printf("%s error %v\n", id, err)
		case ok:
			fmt.Printf("%s won\n", id)
		default:
			fmt.Printf("%s lost %s\n", id, holder)
		}
	}
}

// TestLOOP_3_TwoProcessesClaimOneTicket: two real processes claim the same
// tickets at the same moment, each in its own shuffled order so that they
// collide all along; every ticket ends with exactly one owner,
// the one process that was told it won, and the other was told who holds
// it.
func TestLOOP_3_TwoProcessesClaimOneTicket(t *testing.T) {
	if os.Getenv(claimantEnv) != "" {
		t.Skip("inside a claimant")
	}
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "claim.db")
	s := openT(t, path)
	newRun(t, s, "r-1", "loop:/repo")
	const n = 30
	for i := 0; i < n; i++ {
		if _, _, err := s.CreateTicket(ctx, store.Ticket{ID: fmt.Sprintf("t%02d", i), RunID: "r-1", N: i}); err != nil {
			t.Fatal(err)
		}
	}
	type claimant struct {
		owner string
		cmd   *exec.Cmd
		in    io.WriteCloser
		out   *bufio.Reader
		lines map[string]string // ticket → what the claimant printed
	}
	var cs []*claimant
	for seed, owner := range []string{"child-a", "child-b"} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestLOOP_3_TicketClaimHelper$", "-test.count=1", "-test.v=false")
		cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s %s %d %d", claimantEnv, path, owner, n, seed+1))
		cmd.Stderr = os.Stderr
		in, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		outPipe, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		c := &claimant{owner: owner, cmd: cmd, in: in, out: bufio.NewReader(outPipe), lines: map[string]string{}}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		cs = append(cs, c)
	}
	// Both are ready before either may claim.
	for _, c := range cs {
		line, err := c.out.ReadString('\n')
		if err != nil || strings.TrimSpace(line) != "ready" {
			t.Fatalf("%s: %q %v", c.owner, line, err)
		}
	}
	for _, c := range cs {
		if _, err := io.WriteString(c.in, "go\n"); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range cs {
		rest, err := io.ReadAll(c.out)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.cmd.Wait(); err != nil {
			t.Fatalf("%s: %v\n%s", c.owner, err, rest)
		}
		for _, l := range strings.Split(strings.TrimSpace(string(rest)), "\n") {
			if id, _, ok := strings.Cut(l, " "); ok && strings.HasPrefix(id, "t") {
				c.lines[id] = l
			}
		}
		if len(c.lines) != n {
			t.Fatalf("%s printed %d claim lines, want %d:\n%s", c.owner, len(c.lines), n, rest)
		}
	}
	wins := map[string]int{}
	for i := 0; i < n; i++ {
		id := fmt.Sprintf("t%02d", i)
		tk, err := s.GetTicket(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		winners := 0
		for _, c := range cs {
			switch l := c.lines[id]; l {
			case id + " won":
				winners++
				wins[c.owner]++
				if tk.Owner != c.owner {
					t.Errorf("%s: %s was told it won, the store says %q owns it", id, c.owner, tk.Owner)
				}
			case id + " lost " + tk.Owner:
			default:
				t.Errorf("%s: %s printed %q; owner is %q", id, c.owner, l, tk.Owner)
			}
		}
		if winners != 1 || tk.Status != store.TicketClaimed {
			t.Errorf("%s: %d winners, status %s; want exactly one owner", id, winners, tk.Status)
		}
	}
	t.Logf("wins per process: %v", wins)
}
