package cli

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/convergeloop/converge/internal/agent"
	"github.com/convergeloop/converge/internal/agent/suggest"
	"github.com/convergeloop/converge/internal/checkloop"
	"github.com/convergeloop/converge/internal/cmdutil"
	"github.com/convergeloop/converge/internal/engine"
	"github.com/convergeloop/converge/internal/exitcode"
	"github.com/convergeloop/converge/internal/forge"
	"github.com/convergeloop/converge/internal/plan"
	"github.com/convergeloop/converge/internal/prloop"
	"github.com/convergeloop/converge/internal/repo"
	"github.com/convergeloop/converge/internal/review/copilot"
	"github.com/convergeloop/converge/internal/store"
	"github.com/convergeloop/converge/internal/testutil/hubtest"
)

// A lifecycleRig is one loop kind, ready to run through an engine.Manager
// as its command runs it: its adapter, on a real world (the emulator, a
// git repository, agents that are programs).
type lifecycleRig struct {
	db     *store.Store
	ios    *cmdutil.IOStreams
	target string
	// spec makes a new adapter of the kind on the rig's target.
	spec func() engine.Spec
	// seed records an unfinished run id on the target, with a state the
	// kind resumes.
	seed func(t *testing.T, id string)
	// stopped is the kind's terminal for a stop request, and its code.
	stopped string
	// fail makes the next run end on a fault with the kind's errored
	// terminal, whose status and code it returns.
	fail func(t *testing.T) (status string, code exitcode.Code)
	// human, for a kind that has the end, seeds an unfinished run id that
	// cannot go on without a human (nil: the kind has none).
	human func(t *testing.T, id string)
}

func newStore(t *testing.T, dir string) *store.Store {
	t.Helper()
	db, err := store.Open(context.Background(), filepath.Join(dir, "converge.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func seedState(t *testing.T, db *store.Store, kind, target, id string, st any) {
	t.Helper()
	ctx := context.Background()
	if err := db.CreateRun(ctx, store.Run{ID: id, Kind: kind, Target: target}); err != nil {
		t.Fatal(err)
	}
	j := &engine.StoreJournal[any]{DB: db, RunID: id}
	if err := j.SaveState(ctx, st); err != nil {
		t.Fatal(err)
	}
}

// prRig: the emulator's demo PR, a suggestion fixer; a fault is an
// outage past a fault budget of a millisecond (REL-1).
func prRig(t *testing.T) *lifecycleRig {
	hub, demo := startHub(t, 100*time.Millisecond)
	state := t.TempDir()
	ios, _, _ := testIO(nil)
	r := &lifecycleRig{db: newStore(t, state), ios: ios, target: demo.PRURL, stopped: string(prloop.ReasonStoppedByHuman)}
	ref, err := forge.ParsePRURL(demo.PRURL)
	if err != nil {
		t.Fatal(err)
	}
	r.target = ref.String()
	token := hub.Tokens().Author
	cfg := prloop.DefaultConfig()
	cfg.Bot, cfg.TrustedBots = copilot.New(), copilot.DefaultAllowlist()
	p := loopParams{
		Ref: ref, Forge: hubtest.Client(t, hub, token),
		CloneURL: hub.GitURL(demo.Owner, demo.Repo),
		GitEnv:   repo.AuthEnvFor(hub.GitURL(demo.Owner, demo.Repo), token, hub.CAFile()),
		StateDir: state, Agent: suggest.New(), Config: cfg,
		PollMin: 50 * time.Millisecond, PollMax: 500 * time.Millisecond,
		Secrets: repo.Secrets(token), Author: "converge", Email: "converge@users.noreply.github.com",
	}
	if err := preflight(context.Background(), &p); err != nil {
		t.Fatal(err)
	}
	r.spec = func() engine.Spec {
		return engine.NewSpec(newPRJob(r.ios, r.db, filepath.Join(state, "work"), p, nil))
	}
	r.seed = func(t *testing.T, id string) {
		seedState(t, r.db, "pr", r.target, id, prloop.State{Phase: prloop.PhaseStart, StartedAt: time.Now()})
	}
	r.fail = func(t *testing.T) (string, exitcode.Code) {
		hub.Outage(time.Hour)
		t.Cleanup(func() { hub.Outage(0) })
		p.FaultBudget = time.Millisecond
		return string(prloop.ReasonErrored), exitcode.Unreachable
	}
	return r
}

// localRepo is a git repository with one commit, and a directory beside
// it for the agents' scripts.
func localRepo(t *testing.T) (dir, scripts string) {
	t.Helper()
	dir, scripts = t.TempDir(), t.TempDir()
	for _, args := range [][]string{
		{"init", "-q"},
		{"-c", "user.name=tester", "-c", "user.email=tester@example.com", "commit", "-q", "--allow-empty", "-m", "init"},
	} {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	return dir, scripts
}

func writeScript(t *testing.T, path, body string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
}

// loopRig: `converge loop` on a repository; a fault is a body agent that
// cannot run (AG-T4).
func loopRig(t *testing.T) *lifecycleRig {
	dir, scripts := localRepo(t)
	state := t.TempDir()
	ios, _, _ := testIO(nil)
	r := &lifecycleRig{db: newStore(t, state), ios: ios, stopped: string(checkloop.StatusBlocked)}
	agentPath := filepath.Join(scripts, "agent.sh")
	writeScript(t, agentPath, "cat >/dev/null; touch done\n")
	opts := &loopOptions{
		Goal: "make done exist", Check: "test -f done", Agent: "command", AgentCmd: "sh " + agentPath,
		MaxIterations: 3, StallAfter: checkloop.DefaultStallIterations, Confirm: 1,
		Workdir: dir, StateDir: state, AgentTimeout: time.Minute, CheckTimeout: time.Minute,
		agents: &cmdutil.AgentFlags{},
	}
	s, err := prepareLoop(context.Background(), ios, r.db, opts)
	if err != nil {
		t.Fatal(err)
	}
	r.target = localTarget(checkloop.Kind, s.ws.Dir())
	r.spec = func() engine.Spec {
		return engine.NewSpec(&loopJob{ios: r.ios, db: r.db, opts: opts, s: s, env: agent.ScrubEnv(os.Environ())})
	}
	r.seed = func(t *testing.T, id string) {
		seedState(t, r.db, checkloop.Kind, r.target, id, checkloop.NewState(id, s.cfg))
	}
	r.fail = func(t *testing.T) (string, exitcode.Code) {
		writeScript(t, agentPath, "cat >/dev/null; exit 1\n")
		return string(checkloop.StatusFailed), exitcode.Error
	}
	return r
}

// planRig: `converge plan run` of one task; a fault is an implementer
// that cannot run (AG-T4).
func planRig(t *testing.T) *lifecycleRig {
	dir, scripts := localRepo(t)
	state := t.TempDir()
	ios, _, _ := testIO(nil)
	r := &lifecycleRig{db: newStore(t, state), ios: ios, stopped: string(plan.StatusBlocked)}
	impl, review, file := filepath.Join(scripts, "impl.sh"), filepath.Join(scripts, "review.sh"), filepath.Join(scripts, "plan.yaml")
	writeScript(t, impl, `cat >/dev/null; echo a > a.txt; echo '{"status":"complete","next_action":"","needs_extension_minutes":0,"summary":"wrote it","files_changed":[],"implementer_status":"DONE"}'`+"\n")
	writeScript(t, review, `cat >/dev/null; echo '{"status":"complete","next_action":"","needs_extension_minutes":0,"summary":"fine","files_changed":[],"approved":true,"issues":[]}'`+"\n")
	writeScript(t, file, "groups:\n  - tasks:\n      - {id: a, prompt: Write a.txt., files: [a.txt]}\n")
	opts := &planOptions{
		Agent: "command", AgentCmd: "sh " + impl, ReviewAgent: "command", ReviewAgentCmd: "sh " + review,
		StateDir: state, Workdir: dir, AgentTimeout: time.Minute, Parallel: 1, agents: &cmdutil.AgentFlags{},
	}
	s, err := preparePlan(context.Background(), ios, opts, file)
	if err != nil {
		t.Fatal(err)
	}
	r.target = localTarget(plan.Kind, s.ws.Dir())
	r.spec = func() engine.Spec {
		return engine.NewSpec(&planJob{ios: r.ios, db: r.db, opts: opts, s: s, file: file, workDir: filepath.Join(state, "work")})
	}
	r.seed = func(t *testing.T, id string) {
		seedState(t, r.db, plan.Kind, r.target, id, plan.NewState(id, s.cfg))
	}
	r.fail = func(t *testing.T) (string, exitcode.Code) {
		writeScript(t, impl, "cat >/dev/null; exit 1\n")
		return string(plan.StatusFailed), exitcode.Error
	}
	// A converge was killed after it committed task a's change, before it
	// recorded it, and a human committed on top (REL-2): dispatching a
	// again would land its change twice, taking it off would rewrite the
	// human's commit.
	r.human = func(t *testing.T, id string) {
		ctx := context.Background()
		from, err := s.ws.Git.HeadSHA(ctx)
		if err != nil {
			t.Fatal(err)
		}
		git := func(args ...string) {
			t.Helper()
			cmd := exec.Command("git", append([]string{"-c", "user.name=tester", "-c", "user.email=tester@example.com"}, args...)...)
			cmd.Dir = dir
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("git %v: %v\n%s", args, err, out)
			}
		}
		git("commit", "-q", "--allow-empty", "-m", "task a", "-m", plan.TrailerKey+": "+plan.TaskRef(id, "a"))
		git("commit", "-q", "--allow-empty", "-m", "a human commit")
		st := plan.NewState(id, s.cfg)
		ticket := plan.TicketID(id, "a", 1)
		st.Seq = 1
		st.Tasks[0].Phase, st.Tasks[0].Base = plan.PhaseRunning, from
		st.Tasks[0].Dispatches = []plan.Dispatch{{N: 1, Ticket: ticket, Kind: plan.DispatchFirst, Agent: "command", From: from}}
		seedState(t, r.db, plan.Kind, r.target, id, st)
		if _, _, err := r.db.CreateTicket(ctx, store.Ticket{ID: ticket, RunID: id, N: 1}); err != nil {
			t.Fatal(err)
		}
		if _, ok, err := r.db.ClaimTicket(ctx, ticket, id, 1<<22); err != nil || !ok {
			t.Fatalf("claim %s for a dead converge: %v %v", ticket, ok, err)
		}
	}
	return r
}

// TestPR_G3_G5_REL1_REL2_LifecycleOnEveryKind runs one run's lifecycle cases
// on each loop kind through the engine.Manager, as `converge pr`, `loop`
// and `plan run` do: a new run claimed (PR-G3), an unfinished run resumed
// (PR-G3), a target another live process holds refused (PR-G5), a stop
// (the first SIGINT, or the Manager's Stop) and `converge stop RUN`
// (PR-G5), a fault that ends the run errored (REL-1), and, for the plan
// executor, a run that cannot go on without a human, left unfinished
// (REL-2; end to end: plan_1_kill_after_commit_human_on_top).
func TestPR_G3_G5_REL1_REL2_LifecycleOnEveryKind(t *testing.T) {
	t.Parallel()
	kinds := []struct {
		name string
		rig  func(t *testing.T) *lifecycleRig
	}{{"pr", prRig}, {"loop", loopRig}, {"plan", planRig}}
	type run struct {
		o   engine.Outcome
		err error // the command's error, as End made it
	}
	start := func(t *testing.T, r *lifecycleRig, stop bool) run {
		t.Helper()
		m := engine.NewManager(engine.Config{Store: r.db, CodeOf: cmdutil.ExitCodeOf})
		h, err := m.Add(context.Background(), r.spec())
		if err != nil {
			t.Fatal(err)
		}
		if stop {
			m.Stop(h.Target())
		}
		o := h.Wait()
		return run{o: o, err: o.Err}
	}
	recorded := func(t *testing.T, r *lifecycleRig, id, status string) {
		t.Helper()
		got, err := r.db.GetRun(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if !got.Finished() || got.Status != status {
			t.Errorf("run %s recorded %q (finished %v), want %q", id, got.Status, got.Finished(), status)
		}
		if holder, live, _ := r.db.LockLive(context.Background(), r.target); live {
			t.Errorf("the target's lock is still held by %s", holder)
		}
	}
	cases := []struct {
		name string
		test func(t *testing.T, r *lifecycleRig)
	}{
		{"PR-G3 claim new", func(t *testing.T, r *lifecycleRig) {
			got := start(t, r, true)
			if got.o.Resumed || got.o.RunID == "" || got.o.Status != r.stopped || cmdutil.ExitCodeOf(got.err) != exitcode.Human {
				t.Fatalf("want a new run ended %s (exit 3), got %+v (%v)", r.stopped, got.o, got.err)
			}
			recorded(t, r, got.o.RunID, r.stopped)
		}},
		{"PR-G3 resume", func(t *testing.T, r *lifecycleRig) {
			r.seed(t, "r-seeded")
			got := start(t, r, true)
			if !got.o.Resumed || got.o.RunID != "r-seeded" {
				t.Fatalf("want run r-seeded resumed, got %+v (%v)", got.o, got.err)
			}
			recorded(t, r, "r-seeded", r.stopped)
		}},
		{"PR-G5 refuse busy", func(t *testing.T, r *lifecycleRig) {
			r.seed(t, "r-live")
			if _, ok, err := r.db.AcquireLock(context.Background(), r.target, "r-live", os.Getppid()); err != nil || !ok {
				t.Fatalf("hold the lock for a live process: %v %v", ok, err)
			}
			got := start(t, r, false)
			if got.o.Status != engine.StatusRefused || cmdutil.ExitCodeOf(got.err) != exitcode.Usage || !strings.Contains(got.err.Error(), "already running on "+r.target+" (run r-live)") {
				t.Fatalf("want refused, exit 2, naming run r-live; got %+v (%v)", got.o, got.err)
			}
			if runs, _ := r.db.ListRuns(context.Background(), store.ListOptions{Target: r.target}); len(runs) != 1 || runs[0].Finished() {
				t.Errorf("the live run was touched: %+v", runs)
			}
		}},
		{"PR-G5 converge stop RUN", func(t *testing.T, r *lifecycleRig) {
			r.seed(t, "r-stop")
			if err := r.db.RequestStop(context.Background(), "r-stop"); err != nil {
				t.Fatal(err)
			}
			got := start(t, r, false)
			if got.o.RunID != "r-stop" || got.o.Status != r.stopped || cmdutil.ExitCodeOf(got.err) != exitcode.Human {
				t.Fatalf("want run r-stop ended %s (exit 3), got %+v (%v)", r.stopped, got.o, got.err)
			}
			recorded(t, r, "r-stop", r.stopped)
		}},
		{"REL-1 errored", func(t *testing.T, r *lifecycleRig) {
			status, code := r.fail(t)
			got := start(t, r, false)
			if got.o.Status != status || cmdutil.ExitCodeOf(got.err) != code || got.o.Unfinished {
				t.Fatalf("want %s (exit %d), got %+v (%v)", status, code, got.o, got.err)
			}
			recorded(t, r, got.o.RunID, status)
		}},
		{"REL-2 human-needed", func(t *testing.T, r *lifecycleRig) {
			if r.human == nil {
				t.Skip("the kind has no human-needed end")
			}
			r.human(t, "r-human")
			got := start(t, r, false)
			if got.o.Status != engine.StatusHumanNeeded || !got.o.Unfinished || cmdutil.ExitCodeOf(got.err) != exitcode.Human || !strings.Contains(got.err.Error(), "run r-human needs a human") {
				t.Fatalf("want run r-human left for a human (exit 3), got %+v (%v)", got.o, got.err)
			}
			if run, err := r.db.GetRun(context.Background(), "r-human"); err != nil || run.Finished() {
				t.Errorf("want r-human left unfinished, got %+v (%v)", run, err)
			}
			// The same command, once more, still hands it to a human: the
			// run was left resumable, not recorded ended.
			if again := start(t, r, false); again.o.RunID != "r-human" || again.o.Status != engine.StatusHumanNeeded {
				t.Errorf("the rerun did not resume r-human for the human: %+v (%v)", again.o, again.err)
			}
		}},
	}
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) {
			t.Parallel()
			for _, c := range cases {
				t.Run(c.name, func(t *testing.T) { c.test(t, k.rig(t)) })
			}
		})
	}
}

// TestREL2_PRLoopsDrainedThenResumedByANewManager: a PR loop drained
// mid-run (serve's shutdown) is left unfinished with its state; a new
// Manager's Resume (serve's restart) continues that run, which ends
// two-stable, proven at the forge.
func TestREL2_PRLoopsDrainedThenResumedByANewManager(t *testing.T) {
	t.Parallel()
	hub, demo := startHub(t, 100*time.Millisecond)
	state := t.TempDir()
	ios, out, _ := testIO(nil)
	db := newStore(t, state)
	token := hub.Tokens().Author
	params := func(_ context.Context, ref forge.PRRef) (loopParams, error) {
		cfg := prloop.DefaultConfig()
		cfg.Bot, cfg.TrustedBots = copilot.New(), copilot.DefaultAllowlist()
		return loopParams{
			Ref: ref, Forge: hubtest.Client(t, hub, token),
			CloneURL: hub.GitURL(demo.Owner, demo.Repo),
			GitEnv:   repo.AuthEnvFor(hub.GitURL(demo.Owner, demo.Repo), token, hub.CAFile()),
			StateDir: state, Agent: suggest.New(), Config: cfg,
			PollMin: 50 * time.Millisecond, PollMax: 500 * time.Millisecond,
			Secrets: repo.Secrets(token), Author: "converge", Email: "converge@users.noreply.github.com",
		}, nil
	}
	ctx := context.Background()
	workDir := filepath.Join(state, "work")
	revive := map[string]engine.Reviver{"pr": prReviver(ios, db, workDir, nil, params)}
	m := engine.NewManager(engine.Config{Store: db, WorkDir: workDir, CodeOf: cmdutil.ExitCodeOf, Revive: revive})
	ref, err := forge.ParsePRURL(demo.PRURL)
	if err != nil {
		t.Fatal(err)
	}
	p, _ := params(ctx, ref)
	if err := preflight(ctx, &p); err != nil {
		t.Fatal(err)
	}
	h, err := m.Add(ctx, engine.NewSpec(newPRJob(ios, db, workDir, p, nil)))
	if err != nil {
		t.Fatal(err)
	}
	// Drain once the loop is past its start: it waits for the review it
	// requested.
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for deadline := time.Now().Add(time.Minute); ; {
		if i := h.Info(); i.Phase != "starting" && i.Phase != string(prloop.PhaseStart) && i.RunID != "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the loop never left its start: %+v\n%s", h.Info(), out)
		}
		<-tick.C
	}
	runID := h.Info().RunID
	if err := m.Drain(ctx); err != nil {
		t.Fatal(err)
	}
	if o := h.Wait(); o.Status != engine.StatusInterrupted || !o.Unfinished {
		t.Fatalf("want the drained run unfinished, got %+v", o)
	}
	if r, err := db.GetRun(ctx, runID); err != nil || r.Finished() {
		t.Fatalf("the drained run %s is not unfinished in the store: %+v %v", runID, r, err)
	}

	m2 := engine.NewManager(engine.Config{Store: db, WorkDir: workDir, CodeOf: cmdutil.ExitCodeOf, Revive: revive})
	started, err := m2.Resume(ctx)
	if err != nil || len(started) != 1 {
		t.Fatalf("want one loop resumed, got %d (%v)", len(started), err)
	}
	o := started[0].Wait()
	if o.RunID != runID || !o.Resumed || o.Status != string(prloop.ReasonTwoStable) || o.Err != nil {
		t.Fatalf("want run %s resumed to two-stable, got %+v\n%s", runID, o, out)
	}
	assertProven(t, observe(t, hub, demo.PRURL), false, out.String())
}
