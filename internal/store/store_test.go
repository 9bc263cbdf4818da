package store_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/convergeloop/converge/internal/store"
)

func openT(t *testing.T, path string, opts ...store.Option) *store.Store {
	t.Helper()
	s, err := store.Open(context.Background(), path, opts...)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func newRun(t *testing.T, s *store.Store, id, target string) {
	t.Helper()
	if err := s.CreateRun(context.Background(), store.Run{ID: id, Kind: "pr", Target: target}); err != nil {
		t.Fatalf("CreateRun %s: %v", id, err)
	}
}

func TestDefaultPath(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	cases := []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"XDG_STATE_HOME": "/x/state", "HOME": "/home/u"}, "/x/state/converge/converge.db"},
		{map[string]string{"HOME": "/home/u"}, "/home/u/.local/state/converge/converge.db"},
		{map[string]string{"XDG_STATE_HOME": "relative", "HOME": "/home/u"}, "/home/u/.local/state/converge/converge.db"},
		{map[string]string{}, ""},
	}
	for _, c := range cases {
		if got := store.DefaultPath(env(c.env)); got != c.want {
			t.Errorf("DefaultPath(%v) = %q, want %q", c.env, got, c.want)
		}
	}
}

func TestOpenCreatesDirsAndMigrationsAreIdempotent(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "a", "b?c", "converge.db")
	s := openT(t, path)
	newRun(t, s, "r-1", "https://github.com/o/r/pull/1")
	var mode string
	if err := s.DB().QueryRowContext(ctx, `PRAGMA journal_mode`).Scan(&mode); err != nil || !strings.EqualFold(mode, "wal") {
		t.Errorf("journal_mode = %q, %v; want wal", mode, err)
	}
	var fk int
	if err := s.DB().QueryRowContext(ctx, `PRAGMA foreign_keys`).Scan(&fk); err != nil || fk != 1 {
		t.Errorf("foreign_keys = %d, %v; want 1", fk, err)
	}
	s.Close()

	// Reopen twice: migrations must not be applied again, data must survive.
	for i := 0; i < 2; i++ {
		s2 := openT(t, path)
		var n, max int
		if err := s2.DB().QueryRowContext(ctx, `SELECT COUNT(*), MAX(version) FROM schema_migrations`).Scan(&n, &max); err != nil {
			t.Fatal(err)
		}
		if n != store.SchemaVersion() || max != store.SchemaVersion() {
			t.Errorf("schema_migrations: %d rows, max %d; want %d", n, max, store.SchemaVersion())
		}
		r, err := s2.GetRun(ctx, "r-1")
		if err != nil || r.Target != "https://github.com/o/r/pull/1" || r.Status != store.StatusRunning {
			t.Errorf("after reopen GetRun = %+v, %v", r, err)
		}
		s2.Close()
	}
}

func TestOpenConcurrentFreshFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.db")
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := store.Open(context.Background(), path)
			if err != nil {
				errs <- err
				return
			}
			s.Close()
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("concurrent Open: %v", err)
	}
}

func TestRefusesNewerSchema(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "n.db")
	s := openT(t, path)
	if _, err := s.DB().ExecContext(ctx, `INSERT INTO schema_migrations(version, applied_at) VALUES (999, 'x')`); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if s2, err := store.Open(ctx, path); err == nil {
		s2.Close()
		t.Fatal("Open accepted a database from a newer converge")
	}
}

func TestRunsLifecycle(t *testing.T) {
	ctx := context.Background()
	clock := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	now := func() time.Time { return clock }
	s := openT(t, filepath.Join(t.TempDir(), "r.db"), store.WithClock(now))
	const pr = "https://github.com/o/r/pull/7"

	if _, err := s.GetRun(ctx, "nope"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("GetRun missing: %v, want ErrNotFound", err)
	}
	var nf *store.NotFoundError
	if _, err := s.LatestRunFor(ctx, pr); !errors.As(err, &nf) {
		t.Fatalf("LatestRunFor none: %v, want *NotFoundError", err)
	}

	for i, id := range []string{"r-a", "r-b", "r-c"} {
		target := pr
		if id == "r-b" {
			target = "https://github.com/o/r/pull/8"
		}
		if err := s.CreateRun(ctx, store.Run{ID: id, Kind: "pr", Target: target, StartedAt: clock.Add(time.Duration(i) * time.Minute)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.CreateRun(ctx, store.Run{ID: "r-a", Kind: "pr", Target: pr}); err == nil {
		t.Error("CreateRun accepted a duplicate id")
	}
	all, err := s.ListRuns(ctx, store.ListOptions{})
	if err != nil || len(all) != 3 || all[0].ID != "r-c" || all[2].ID != "r-a" {
		t.Fatalf("ListRuns = %v, %v; want newest first", ids(all), err)
	}
	some, _ := s.ListRuns(ctx, store.ListOptions{Target: pr, Limit: 1})
	if len(some) != 1 || some[0].ID != "r-c" {
		t.Errorf("ListRuns(target, limit 1) = %v", ids(some))
	}
	latest, err := s.LatestRunFor(ctx, pr)
	if err != nil || latest.ID != "r-c" {
		t.Errorf("LatestRunFor = %v, %v", latest.ID, err)
	}

	clock = clock.Add(time.Hour)
	if err := s.SaveState(ctx, "r-c", []byte(`{"round":2}`), "running"); err != nil {
		t.Fatal(err)
	}
	if err := s.SaveState(ctx, "nope", nil, "running"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("SaveState missing: %v", err)
	}
	r, _ := s.GetRun(ctx, "r-c")
	if string(r.State) != `{"round":2}` || !r.UpdatedAt.Equal(clock) || r.Finished() {
		t.Errorf("after SaveState: %+v", r)
	}
	clock = clock.Add(time.Minute)
	if err := s.FinishRun(ctx, "r-c", "two-stable", 0, []byte(`{"head":"abc"}`)); err != nil {
		t.Fatal(err)
	}
	if err := s.FinishRun(ctx, "r-a", "human-push", 3, nil); err != nil {
		t.Fatal(err)
	}
	r, _ = s.GetRun(ctx, "r-c")
	if r.Status != "two-stable" || r.ExitCode != 0 || !r.EndedAt.Equal(clock) || string(r.Proof) != `{"head":"abc"}` {
		t.Errorf("after FinishRun: %+v", r)
	}
	r, _ = s.GetRun(ctx, "r-a")
	if r.Status != "human-push" || r.ExitCode != 3 || r.Proof != nil {
		t.Errorf("after FinishRun: %+v", r)
	}
}

func ids(rs []store.Run) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.ID)
	}
	return out
}

func TestPR_G5_OneLoopPerPR(t *testing.T) {
	ctx := context.Background()
	s := openT(t, filepath.Join(t.TempDir(), "l.db"))
	const pr = "https://github.com/o/r/pull/1"
	newRun(t, s, "r-1", pr)
	newRun(t, s, "r-2", pr)
	me := os.Getpid()

	if h, ok, err := s.AcquireLock(ctx, pr, "r-1", me); err != nil || !ok || h != "r-1" {
		t.Fatalf("first acquire = %q %v %v", h, ok, err)
	}
	if h, ok, err := s.AcquireLock(ctx, pr, "r-1", me); err != nil || !ok || h != "r-1" {
		t.Fatalf("re-acquire by holder = %q %v %v", h, ok, err)
	}
	if h, ok, err := s.AcquireLock(ctx, pr, "r-2", me); err != nil || ok || h != "r-1" {
		t.Fatalf("second run acquire = %q %v %v; want refused, holder r-1", h, ok, err)
	}
	// Releasing someone else's lock does nothing.
	if err := s.ReleaseLock(ctx, pr, "r-2"); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := s.AcquireLock(ctx, pr, "r-2", me); ok {
		t.Fatal("r-2 got the lock after releasing a lock it did not hold")
	}
	if err := s.ReleaseLock(ctx, pr, "r-1"); err != nil {
		t.Fatal(err)
	}
	if h, ok, err := s.AcquireLock(ctx, pr, "r-2", me); err != nil || !ok || h != "r-2" {
		t.Fatalf("acquire after release = %q %v %v", h, ok, err)
	}
	// A lock on another target is independent.
	newRun(t, s, "r-3", "other")
	if _, ok, _ := s.AcquireLock(ctx, "other", "r-3", me); !ok {
		t.Fatal("lock on another target refused")
	}
}

func TestPR_G5_StaleLockFinishedRunIsTakenOver(t *testing.T) {
	ctx := context.Background()
	s := openT(t, filepath.Join(t.TempDir(), "l.db"))
	const pr = "pr"
	newRun(t, s, "r-1", pr)
	newRun(t, s, "r-2", pr)
	if _, ok, _ := s.AcquireLock(ctx, pr, "r-1", os.Getpid()); !ok {
		t.Fatal("acquire")
	}
	// Mark r-1 ended without FinishRun releasing the lock (a crash between
	// the two in an older build, or a hand edit).
	if _, err := s.DB().ExecContext(ctx, `UPDATE runs SET ended_at = '2026-01-01T00:00:00.000000000Z' WHERE id = 'r-1'`); err != nil {
		t.Fatal(err)
	}
	if h, ok, err := s.AcquireLock(ctx, pr, "r-2", os.Getpid()); err != nil || !ok || h != "r-2" {
		t.Fatalf("takeover of finished run's lock = %q %v %v", h, ok, err)
	}
	// FinishRun releases the lock itself.
	if err := s.FinishRun(ctx, "r-2", "two-stable", 0, nil); err != nil {
		t.Fatal(err)
	}
	var n int
	s.DB().QueryRowContext(ctx, `SELECT COUNT(*) FROM locks`).Scan(&n)
	if n != 0 {
		t.Errorf("FinishRun left %d locks", n)
	}
}

func TestPR_G5_StaleLockDeadPIDIsTakenOver(t *testing.T) {
	ctx := context.Background()
	s := openT(t, filepath.Join(t.TempDir(), "l.db"))
	newRun(t, s, "r-1", "pr")
	newRun(t, s, "r-2", "pr")
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Skip("cannot start a process:", err)
	}
	dead := cmd.Process.Pid // exited and reaped: not alive
	if _, ok, _ := s.AcquireLock(ctx, "pr", "r-1", dead); !ok {
		t.Fatal("acquire")
	}
	if h, ok, err := s.AcquireLock(ctx, "pr", "r-2", os.Getpid()); err != nil || !ok || h != "r-2" {
		t.Fatalf("takeover of dead pid's lock = %q %v %v", h, ok, err)
	}
}

func TestPR_G5_ConcurrentAcquireOneWins(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "l.db")
	// Two handles on one file, as two processes would have.
	s1 := openT(t, path)
	s2 := openT(t, path)
	for round := 0; round < 20; round++ {
		target := "pr-" + string(rune('a'+round))
		a, b := target+"-1", target+"-2"
		newRun(t, s1, a, target)
		newRun(t, s1, b, target)
		var wg sync.WaitGroup
		var okA, okB bool
		var errA, errB error
		start := make(chan struct{})
		wg.Add(2)
		go func() { defer wg.Done(); <-start; _, okA, errA = s1.AcquireLock(ctx, target, a, os.Getpid()) }()
		go func() { defer wg.Done(); <-start; _, okB, errB = s2.AcquireLock(ctx, target, b, os.Getpid()) }()
		close(start)
		wg.Wait()
		if errA != nil || errB != nil {
			t.Fatalf("errors: %v, %v", errA, errB)
		}
		if okA == okB {
			t.Fatalf("round %d: okA=%v okB=%v; want exactly one winner", round, okA, okB)
		}
	}
}

func TestRoundsFindingsActionsEvents(t *testing.T) {
	ctx := context.Background()
	s := openT(t, filepath.Join(t.TempDir(), "x.db"))
	newRun(t, s, "r-1", "pr")
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)

	if err := s.AddRound(ctx, store.Round{RunID: "r-1", N: 1, HeadSHA: "aaa", StartedAt: t0, Structural: true}); err != nil {
		t.Fatal(err)
	}
	if err := s.AddRound(ctx, store.Round{RunID: "r-1", N: 2, HeadSHA: "bbb", StartedAt: t0}); err != nil {
		t.Fatal(err)
	}
	// Re-recording round 1 at its end replaces it.
	if err := s.AddRound(ctx, store.Round{RunID: "r-1", N: 1, HeadSHA: "aaa", StartedAt: t0, EndedAt: t0.Add(time.Minute),
		Summary: []byte(`{"kept":2}`), CommitSHA: "ccc", Structural: true}); err != nil {
		t.Fatal(err)
	}
	if err := s.AddRound(ctx, store.Round{RunID: "no-such-run", N: 1}); err == nil {
		t.Error("AddRound accepted an unknown run (foreign keys off?)")
	}
	rs, err := s.Rounds(ctx, "r-1")
	if err != nil || len(rs) != 2 {
		t.Fatalf("Rounds = %+v, %v", rs, err)
	}
	if r := rs[0]; r.N != 1 || r.CommitSHA != "ccc" || !r.Structural || !r.StartedAt.Equal(t0) ||
		!r.EndedAt.Equal(t0.Add(time.Minute)) || string(r.Summary) != `{"kept":2}` {
		t.Errorf("round 1 = %+v", r)
	}
	if r := rs[1]; r.N != 2 || r.Structural || !r.EndedAt.IsZero() || r.Summary != nil {
		t.Errorf("round 2 = %+v", r)
	}

	f1 := store.Finding{ID: "f1", ThreadID: "T1", Path: "a.go", StartLine: 3, EndLine: 5, Summary: "nil deref",
		Verdict: "structural", Source: "copilot", Author: "copilot", Disposition: "pending"}
	if err := s.AddFindings(ctx, "r-1", 1, []store.Finding{f1, {ID: "f2", Path: "b.go"}}); err != nil {
		t.Fatal(err)
	}
	f1.Disposition = "addressed"
	if err := s.AddFindings(ctx, "r-1", 1, []store.Finding{f1}); err != nil {
		t.Fatal(err)
	}
	if err := s.AddFindings(ctx, "r-1", 2, []store.Finding{{ID: "f1", Disposition: "stale"}}); err != nil {
		t.Fatal(err)
	}
	fs, err := s.Findings(ctx, "r-1")
	if err != nil || len(fs) != 3 {
		t.Fatalf("Findings = %+v, %v", fs, err)
	}
	want := f1
	want.Round = 1
	if fs[0] != want || fs[1].ID != "f2" || fs[2].Round != 2 || fs[2].Disposition != "stale" {
		t.Errorf("Findings = %+v", fs)
	}

	key := store.ActionKey("r-1", 1, "reply", "T1")
	a, existed, err := s.BeginAction(ctx, store.Action{Key: key, RunID: "r-1", Round: 1, Kind: "reply", Target: "T1"})
	if err != nil || existed || a.Status != store.ActionStarted || a.Key != key {
		t.Fatalf("BeginAction = %+v %v %v", a, existed, err)
	}
	a, existed, err = s.BeginAction(ctx, store.Action{Key: key, RunID: "r-1", Round: 1, Kind: "reply", Target: "T1"})
	if err != nil || !existed || a.Status != store.ActionStarted {
		t.Fatalf("BeginAction again = %+v %v %v", a, existed, err)
	}
	if err := s.FinishAction(ctx, key, store.ActionDone, []byte(`{"comment":"C1"}`)); err != nil {
		t.Fatal(err)
	}
	if err := s.FinishAction(ctx, "nope", store.ActionDone, nil); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("FinishAction missing: %v", err)
	}
	a, existed, _ = s.BeginAction(ctx, store.Action{RunID: "r-1", Round: 1, Kind: "reply", Target: "T1"}) // key derived
	if !existed || a.Status != store.ActionDone || string(a.Result) != `{"comment":"C1"}` {
		t.Errorf("BeginAction after finish = %+v %v", a, existed)
	}
	if _, _, err := s.BeginAction(ctx, store.Action{RunID: "r-1", Round: 1, Kind: "push", Target: "refs/heads/x"}); err != nil {
		t.Fatal(err)
	}
	as, err := s.Actions(ctx, "r-1")
	if err != nil || len(as) != 2 || as[0].Kind != "reply" || as[1].Kind != "push" {
		t.Errorf("Actions = %+v, %v", as, err)
	}

	for i, k := range []string{"round-start", "observe", "round-end"} {
		if err := s.AppendEvent(ctx, "r-1", store.Event{Time: t0.Add(time.Duration(i) * time.Second), Kind: k, Round: 1,
			Message: "m" + k, Data: []byte(`{"i":1}`)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.AppendEvent(ctx, "r-1", store.Event{Kind: "note"}); err != nil {
		t.Fatal(err)
	}
	es, err := s.Events(ctx, "r-1")
	if err != nil || len(es) != 4 {
		t.Fatalf("Events = %+v, %v", es, err)
	}
	if es[0].Kind != "round-start" || es[2].Kind != "round-end" || !es[1].Time.Equal(t0.Add(time.Second)) ||
		es[0].Seq >= es[1].Seq || string(es[0].Data) != `{"i":1}` || es[3].Time.IsZero() || es[3].Data != nil {
		t.Errorf("Events = %+v", es)
	}
}

// TestSEC3_SecretsNeverReachTheFile writes a token through every method and
// then reads the raw database, WAL included: the token must be absent.
func TestSEC3_SecretsNeverReachTheFile(t *testing.T) {
	ctx := context.Background()
	const tok = "ghp_SeCrEtToKeN0123456789abcdefABCDEF"
	dir := t.TempDir()
	path := filepath.Join(dir, "s.db")
	s := openT(t, path, store.WithSecrets("", tok))
	in := "x " + tok + " y"
	js := []byte(`{"h":"Bearer ` + tok + `"}`)

	if err := s.CreateRun(ctx, store.Run{ID: "r-1", Kind: "pr" + tok, Target: "https://x/" + tok, State: js, Proof: js}); err != nil {
		t.Fatal(err)
	}
	must(t, s.SaveState(ctx, "r-1", js, "running "+tok))
	if _, ok, err := s.AcquireLock(ctx, "lock"+tok, "r-1", os.Getpid()); err != nil || !ok {
		t.Fatal(ok, err)
	}
	must(t, s.AddRound(ctx, store.Round{RunID: "r-1", N: 1, HeadSHA: in, Summary: js, CommitSHA: in}))
	must(t, s.AddFindings(ctx, "r-1", 1, []store.Finding{{ID: in, ThreadID: in, Path: in, Summary: in, Verdict: in,
		Source: in, Author: in, Disposition: in}}))
	if _, _, err := s.BeginAction(ctx, store.Action{Key: in, RunID: "r-1", Round: 1, Kind: in, Target: in}); err != nil {
		t.Fatal(err)
	}
	must(t, s.FinishAction(ctx, in, in, js))
	must(t, s.AppendEvent(ctx, "r-1", store.Event{Kind: in, Message: in, Data: js}))
	must(t, s.FinishRun(ctx, "r-1", in, 1, js))
	must(t, s.ReleaseLock(ctx, "lock"+tok, "r-1"))

	// Lookups by a secret-bearing key still match what was written.
	if _, existed, err := s.BeginAction(ctx, store.Action{Key: in, RunID: "r-1", Kind: "k"}); err != nil || !existed {
		t.Errorf("BeginAction by redacted key: existed=%v err=%v", existed, err)
	}
	r, err := s.GetRun(ctx, "r-1")
	if err != nil || strings.Contains(r.Target, tok) || !strings.Contains(r.Target, store.Redacted) {
		t.Errorf("GetRun target = %q, %v", r.Target, err)
	}

	checkFiles := func(when string) {
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			b, err := os.ReadFile(filepath.Join(dir, e.Name()))
			if err != nil {
				t.Fatal(err)
			}
			if bytes.Contains(b, []byte(tok)) {
				t.Errorf("%s: token found in %s", when, e.Name())
			}
		}
	}
	checkFiles("open")
	s.Close()
	checkFiles("closed")
	b, _ := os.ReadFile(path)
	if !bytes.Contains(b, []byte(store.Redacted)) {
		t.Error("database holds no redaction marker: did the writes reach the file?")
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestSecretRedactorLongestFirst(t *testing.T) {
	r := store.SecretRedactor("abc", "abcdef", "")
	if got := r("x abcdef y abc"); got != "x [REDACTED] y [REDACTED]" {
		t.Errorf("got %q", got)
	}
	if got := store.SecretRedactor()("keep"); got != "keep" {
		t.Errorf("no secrets: %q", got)
	}
}

func TestNewRunID(t *testing.T) {
	id := store.NewRunID(time.Date(2026, 11, 30, 23, 0, 0, 0, time.UTC))
	if !strings.HasPrefix(id, "r-20261130-") || len(id) != len("r-20261130-abcdef") {
		t.Errorf("NewRunID = %q", id)
	}
	if id == store.NewRunID(time.Date(2026, 11, 30, 23, 0, 0, 0, time.UTC)) {
		t.Error("NewRunID repeated")
	}
}

// TestPR_G5_StopRequestReachesTheRun: `converge stop` in one process is
// seen by the loop's handle on the same file; a finished run refuses it.
func TestPR_G5_StopRequestReachesTheRun(t *testing.T) {
	path := filepath.Join(t.TempDir(), "converge.db")
	loop, cli := openT(t, path), openT(t, path)
	ctx := context.Background()
	newRun(t, loop, "r-1", "https://example.test/o/r/pull/1")
	if stop, err := loop.StopRequested(ctx, "r-1"); err != nil || stop {
		t.Fatalf("fresh run: stop=%v err=%v", stop, err)
	}
	if err := cli.RequestStop(ctx, "r-1"); err != nil {
		t.Fatal(err)
	}
	if stop, err := loop.StopRequested(ctx, "r-1"); err != nil || !stop {
		t.Fatalf("after RequestStop: stop=%v err=%v", stop, err)
	}
	if err := cli.RequestStop(ctx, "r-nope"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("unknown run: %v", err)
	}
	if err := loop.FinishRun(ctx, "r-1", "stopped-by-human", 3, nil); err != nil {
		t.Fatal(err)
	}
	if err := cli.RequestStop(ctx, "r-1"); err == nil || !strings.Contains(err.Error(), "already ended stopped-by-human") {
		t.Fatalf("finished run: %v", err)
	}
}
