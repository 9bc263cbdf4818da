package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/convergeloop/converge/internal/agent"
	"github.com/convergeloop/converge/internal/exitcode"
	"github.com/convergeloop/converge/internal/forge"
	"github.com/convergeloop/converge/internal/prloop"
	"github.com/convergeloop/converge/internal/review"
	"github.com/convergeloop/converge/internal/store"
)

// loopParams is everything one PR loop run needs, however it was started
// (`converge pr` or `converge demo`).
type loopParams struct {
	Ref      forge.PRRef
	Forge    forge.Forge
	CloneURL string
	GitEnv   []string
	// Remote, when set, replaces CloneURL and GitEnv with what it makes
	// of the clone URL the pre-flight observation reports (SEC-6).
	Remote   func(reported string) (cloneURL string, gitEnv []string, err error)
	StateDir string // holds converge.db and work/
	Agent    agent.Agent
	// Reviewer runs the local multi-angle review (PR-S4); nil when the
	// review agent cannot review.
	Reviewer *review.Reviewer
	TestCmd  []string
	Config   prloop.Config
	PollMin  time.Duration
	PollMax  time.Duration
	Wake     <-chan struct{}
	JSON     bool
	Keep     bool
	Secrets  []string
	Author   string
	Email    string

	// Fresh starts a new run even when an unfinished one could resume.
	Fresh bool
	// FaultBudget bounds how long forge faults are ridden out (REL-1).
	FaultBudget time.Duration

	// AgentBudget and TestBudget time-box each agent and build/test run
	// (AG-T1, AG-T5); zero means the defaults.
	AgentBudget time.Duration
	TestBudget  time.Duration
}

// runLoop runs one PR loop to its terminal: lock, record, run, persist,
// print the proof. The returned error carries the terminal's exit code.
func runLoop(ctx context.Context, ios *IOStreams, p loopParams) (*prloop.Terminal, error) {
	// Bad input fails before anything is recorded: the token must work
	// and the PR must exist.
	self, err := p.Forge.Viewer(ctx)
	if err != nil {
		return nil, err
	}
	pre, err := p.Forge.Observe(ctx, p.Ref)
	if err != nil {
		if forge.KindOf(err) == forge.KindNotFound {
			return nil, usageErr("no pull request %d in %s on %s visible to %s; check the PR URL", p.Ref.Number, p.Ref.FullName(), p.Ref.Host, self)
		}
		return nil, err
	}
	if p.Remote != nil {
		if p.CloneURL, p.GitEnv, err = p.Remote(pre.CloneURL); err != nil {
			return nil, err
		}
	}
	p.Config.Self = self

	db, err := store.Open(ctx, filepath.Join(p.StateDir, "converge.db"), store.WithSecrets(p.Secrets...))
	if err != nil {
		return nil, fmt.Errorf("open state store: %w", err)
	}
	defer db.Close()

	target := p.Ref.String()
	initial := prloop.State{Phase: prloop.PhaseStart}
	runID, resumed, err := resumableRun(ctx, db, target, p.Fresh)
	if err != nil {
		return nil, err
	}
	if resumed != nil {
		// PR-G3: a run killed mid-way continues where it stood, with its
		// round count, wall clock and diff baseline; Decide re-reads the
		// world before trusting any of it.
		initial = *resumed
	} else {
		runID = store.NewRunID(time.Now())
		if err := db.CreateRun(ctx, store.Run{ID: runID, Kind: "pr", Target: target}); err != nil {
			return nil, fmt.Errorf("record run: %w", err)
		}
	}
	holder, ok, err := db.AcquireLock(ctx, target, runID, os.Getpid())
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", target, err)
	}
	if !ok {
		if resumed == nil {
			_ = db.FinishRun(ctx, runID, "refused", exitcode.Usage, nil)
		}
		return nil, usageErr("a loop is already running on %s (run %s); wait for it to end (converge status shows it)", target, holder)
	}
	defer db.ReleaseLock(context.WithoutCancel(ctx), target, runID)
	// Holding the lock proves earlier unfinished runs on this PR are dead
	// (killed or crashed): record them as interrupted so status tells.
	var prior []string
	if runs, err := db.ListRuns(ctx, store.ListOptions{Target: target}); err == nil {
		for _, r := range runs {
			if r.ID != runID && !r.Finished() {
				_ = db.FinishRun(ctx, r.ID, "interrupted", exitcode.Error, nil)
			}
			prior = append(prior, observedResolved(r.State)...)
		}
	}

	out := newReporter(ios, p.JSON, db, runID)
	if resumed != nil {
		out.Report(prloop.Event{Kind: "start", Round: resumed.Round, Message: fmt.Sprintf("run %s on %s resumed at round %d (%s); --fresh starts a new run", runID, target, resumed.Round, resumed.Phase)})
	} else {
		out.Report(prloop.Event{Kind: "start", Message: fmt.Sprintf("run %s on %s", runID, target)})
	}
	if p.Reviewer == nil {
		// Pre-flight says it plainly (PR-S4): Copilot is the only
		// independent review this run can have.
		out.Report(prloop.Event{Kind: "note", Message: "no local review: the " + p.Agent.Name() + " agent cannot review; only a Copilot review of the head can prove two-stable (--review-agent command adds one)"})
	}

	ws := &prloop.GitWorkspace{
		Root:     filepath.Join(p.StateDir, "work"),
		RunID:    runID,
		CloneURL: p.CloneURL,
		GitEnv:   p.GitEnv,
		Agent:    p.Agent,
		Reviewer: p.Reviewer,
		AgentEnv: agent.ScrubEnv(os.Environ()),
		Budget:   p.AgentBudget,
		TestCmd:  p.TestCmd,
		Author:   p.Author,
		Email:    p.Email,
		Logf: func(format string, args ...any) {
			out.Report(prloop.Event{Kind: "note", Message: fmt.Sprintf(format, args...)})
		},
		TestBudget: p.TestBudget,
	}
	runner := &prloop.Runner{
		Forge:       p.Forge,
		Workspace:   ws,
		Journal:     &storeJournal{db: db, runID: runID},
		FaultBudget: p.FaultBudget,
		Reporter:    out,
		Config:      p.Config,
		PollMin:     p.PollMin,
		PollMax:     p.PollMax,
		Wake:        p.Wake,
		StopRequested: func(ctx context.Context) bool {
			stop, err := db.StopRequested(ctx, runID)
			return err == nil && stop
		},
	}
	// Threads earlier runs saw resolved after converge resolved them: open
	// now, a human reopened them, which the forge alone cannot tell from a
	// resolve a crash kept from happening (PR-S12, REL-2).
	initial.PriorResolved = prior
	term, runErr := runner.Run(ctx, p.Ref, initial)
	fin := context.WithoutCancel(ctx)
	if !p.Keep {
		_ = ws.Cleanup(fin)
	}
	if runErr != nil {
		if errors.Is(runErr, context.Canceled) {
			// Interrupted (Ctrl-C, SIGTERM): the run stays unfinished, with
			// its state, so the next `converge pr` resumes it (PR-G3).
			return nil, fmt.Errorf("run %s interrupted; run converge pr again to resume it (--fresh starts over): %w", runID, runErr)
		}
		_ = db.FinishRun(fin, runID, string(prloop.ReasonErrored), ExitCodeOf(runErr), nil)
		return nil, fmt.Errorf("run %s: %w", runID, runErr)
	}
	var proof []byte
	if term.Proof != nil {
		proof, _ = json.Marshal(term.Proof)
	}
	if err := db.FinishRun(fin, runID, string(term.Reason), term.ExitCode, proof); err != nil {
		return term, fmt.Errorf("record terminal: %w", err)
	}
	printTerminal(ios, p.JSON, runID, term)
	if term.ExitCode != exitcode.OK {
		return term, &silentExit{code: term.ExitCode}
	}
	return term, nil
}

// resumableRun finds the run to continue on target (PR-G3): the newest
// run, unfinished, with a stored state that holds no terminal, whose lock
// no live process holds (a live one is refused by the lock as before).
func resumableRun(ctx context.Context, db *store.Store, target string, fresh bool) (string, *prloop.State, error) {
	if fresh {
		return "", nil, nil
	}
	last, err := db.LatestRunFor(ctx, target)
	if err != nil || last.Finished() || len(last.State) == 0 {
		return "", nil, nil
	}
	st, err := prloop.UnmarshalState(last.State)
	if err != nil || st.Terminal != nil || st.Phase == "" || st.StartedAt.IsZero() {
		return "", nil, nil
	}
	holder, live, err := db.LockLive(ctx, target)
	if err != nil {
		return "", nil, err
	}
	if live {
		return "", nil, usageErr("a loop is already running on %s (run %s); wait for it to end (converge status shows it)", target, holder)
	}
	return last.ID, &st, nil
}

// observedResolved reads, from a stored run state, the threads that run saw
// resolved after converge resolved them.
func observedResolved(raw []byte) []string {
	if len(raw) == 0 {
		return nil
	}
	st, err := prloop.UnmarshalState(raw)
	if err != nil {
		return nil
	}
	var ids []string
	for _, t := range st.Threads {
		if t.ObservedResolved {
			ids = append(ids, prloop.PriorResolvedKey(t.ThreadID, t.HeadSHA, t.Disposition))
		}
	}
	ids = append(ids, st.PriorResolved...)
	slices.Sort(ids)
	return slices.Compact(ids)
}

// storeJournal adapts the SQLite store to the runner's Journal.
type storeJournal struct {
	db    *store.Store
	runID string
	// ledger is the last round ledger written, so a step rewrites only
	// the rounds whose record changed (PR-M5).
	ledger map[int]string
}

func (j *storeJournal) SaveState(ctx context.Context, s prloop.State) error {
	b, err := prloop.MarshalState(s)
	if err != nil {
		return err
	}
	status := store.StatusRunning
	if s.Terminal != nil {
		status = string(s.Terminal.Reason)
	}
	if err := j.db.SaveState(ctx, j.runID, b, status); err != nil {
		return err
	}
	return j.saveLedger(ctx, s)
}

// saveLedger records each round and its findings with their dispositions,
// so status and the decision log read rounds without decoding state.
func (j *storeJournal) saveLedger(ctx context.Context, s prloop.State) error {
	if j.ledger == nil {
		j.ledger = map[int]string{}
	}
	disp := map[string]string{}
	for _, t := range s.Threads {
		disp[fmt.Sprintf("%d/%s", t.Round, t.ThreadID)] = string(t.Disposition)
	}
	for _, r := range s.Rounds {
		var fs []store.Finding
		for _, f := range r.Findings {
			fs = append(fs, store.Finding{
				ID: f.ID, ThreadID: f.ThreadID, Path: f.Path, StartLine: f.StartLine, EndLine: f.EndLine,
				Summary: f.Summary, Verdict: string(f.Verdict), Source: f.Source, Author: f.Author,
				Disposition: disp[fmt.Sprintf("%d/%s", r.N, f.ThreadID)],
			})
		}
		key, err := json.Marshal(struct {
			R prloop.RoundRecord
			F []store.Finding
		}{r, fs})
		if err != nil {
			return err
		}
		if j.ledger[r.N] == string(key) {
			continue
		}
		summary, _ := json.Marshal(r)
		if err := j.db.AddRound(ctx, store.Round{
			RunID: j.runID, N: r.N, HeadSHA: r.HeadSHA, StartedAt: r.StartedAt,
			CommitSHA: r.CommitSHA, Structural: r.Structural, Summary: summary,
		}); err != nil {
			return fmt.Errorf("record round %d: %w", r.N, err)
		}
		if err := j.db.AddFindings(ctx, j.runID, r.N, fs); err != nil {
			return fmt.Errorf("record findings of round %d: %w", r.N, err)
		}
		j.ledger[r.N] = string(key)
	}
	return nil
}

func (j *storeJournal) BeginAction(ctx context.Context, round int, a prloop.Action) (bool, error) {
	got, existed, err := j.db.BeginAction(ctx, store.Action{
		Key: j.runID + "/" + a.Key, RunID: j.runID, Round: round, Kind: string(a.Kind), Target: a.ThreadID + a.Label + a.SHA,
	})
	if err != nil {
		return false, err
	}
	return existed && got.Status == store.ActionDone, nil
}

func (j *storeJournal) FinishAction(ctx context.Context, a prloop.Action, outcome string, result any) error {
	var b []byte
	if result != nil {
		var err error
		if b, err = json.Marshal(result); err != nil {
			return err
		}
	}
	status := store.ActionDone
	if outcome == "failed" {
		status = store.ActionFailed
	}
	return j.db.FinishAction(ctx, j.runID+"/"+a.Key, status, b)
}

// reporter prints progress (UX-1) and appends it to the run's event log.
type reporter struct {
	mu    sync.Mutex
	ios   *IOStreams
	json  bool
	db    *store.Store
	runID string
	live  bool // a status line is on screen without its newline
}

func newReporter(ios *IOStreams, asJSON bool, db *store.Store, runID string) *reporter {
	return &reporter{ios: ios, json: asJSON, db: db, runID: runID}
}

func (r *reporter) Report(e prloop.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if e.Time.IsZero() {
		e.Time = time.Now()
	}
	var data json.RawMessage
	if e.Data != nil {
		data, _ = json.Marshal(e.Data)
	}
	_ = r.db.AppendEvent(context.Background(), r.runID, store.Event{Time: e.Time, Kind: e.Kind, Round: e.Round, Message: e.Message, Data: data})
	if r.json {
		b, _ := json.Marshal(e)
		fmt.Fprintln(r.ios.Out, string(b))
		return
	}
	if e.Kind == "terminal" {
		if r.live {
			fmt.Fprintln(r.ios.Out)
			r.live = false
		}
		return // printed with the proof
	}
	prefix := "       "
	if e.Round > 0 {
		prefix = fmt.Sprintf("round %d", e.Round)
	}
	line := fmt.Sprintf("%s  %-8s %s", prefix, e.Kind, e.Message)
	if !r.ios.IsTTY {
		fmt.Fprintln(r.ios.Out, line)
		return
	}
	// On a terminal, waits share one live status line (UX-1) that the
	// next event overwrites, instead of scrolling a line per poll.
	if r.live {
		fmt.Fprint(r.ios.Out, "\r\033[K")
	}
	r.live = e.Kind == "wait"
	if r.live {
		fmt.Fprintf(r.ios.Out, "%s (%s)", line, e.Time.Local().Format(time.TimeOnly))
		return
	}
	fmt.Fprintln(r.ios.Out, line)
}

// printTerminal prints the terminal and, at success, the proof (PR-T9).
func printTerminal(ios *IOStreams, asJSON bool, runID string, t *prloop.Terminal) {
	if asJSON {
		b, _ := json.Marshal(map[string]any{"kind": "result", "run": runID, "terminal": t})
		fmt.Fprintln(ios.Out, string(b))
		return
	}
	fmt.Fprintf(ios.Out, "\nconverge: %s (exit %d) — %s\n", t.Reason, t.ExitCode, t.Message)
	if t.Proof != nil {
		printProof(ios, runID, t.Proof)
	}
}

func printProof(ios *IOStreams, runID string, p *prloop.Proof) {
	none := func(xs []string) string {
		if len(xs) == 0 {
			return "none"
		}
		return strings.Join(xs, ", ")
	}
	w := ios.Out
	fmt.Fprintf(w, "proof (run %s)\n", runID)
	fmt.Fprintf(w, "  pr                           %s\n", p.PR)
	fmt.Fprintf(w, "  head                         %s\n", p.HeadSHA)
	fmt.Fprintf(w, "  reviewed commit              %s (%s review %s at %s)\n", p.ReviewedCommit, p.ReviewSource, p.ReviewID, p.ReviewedAt.UTC().Format(time.RFC3339))
	fmt.Fprintf(w, "  ci                           %s\n", p.CIState)
	fmt.Fprintf(w, "  merge state                  %s\n", p.MergeState)
	fmt.Fprintf(w, "  open threads awaiting reply  %d\n", p.OpenThreadsAwaitingReply)
	fmt.Fprintf(w, "  escalated threads            %s\n", none(p.EscalatedThreads))
	fmt.Fprintf(w, "  hand-offs                    %s\n", none(p.HandOffs))
	fmt.Fprintf(w, "  rounds run                   %d\n", p.RoundsRun)
	if len(p.RevertedRounds) > 0 {
		fmt.Fprintf(w, "  reverted rounds              %v\n", p.RevertedRounds)
	}
	for _, n := range p.Notes {
		fmt.Fprintf(w, "  note                         %s\n", n)
	}
}
