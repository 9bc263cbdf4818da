package prloop

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/convergeloop/converge/internal/engine"
	"github.com/convergeloop/converge/internal/store"
)

// StoreJournal persists a PR run in the store: its State, its actions,
// and a ledger row per round with its findings and their dispositions.
func StoreJournal(db *store.Store, runID string) *engine.StoreJournal[State] {
	l := &ledger{db: db, runID: runID, written: map[int]string{}}
	return &engine.StoreJournal[State]{
		DB: db, RunID: runID,
		Status: func(s State) string {
			if s.Terminal != nil {
				return string(s.Terminal.Reason)
			}
			return store.StatusRunning
		},
		Ledger: l.save,
	}
}

var _ Journal = (*engine.StoreJournal[State])(nil)

// Resumable reports whether a stored state can continue (PR-G3): it was
// started, and holds no terminal or one whose labels and status a crash
// may have cut short (REL-2): the run resumes to write what the forge
// lacks and to record its terminal and proof, where a new run would
// start over. An errored terminal is not resumed: the next run retries.
func Resumable(s State) bool {
	if s.Phase == "" || s.StartedAt.IsZero() {
		return false
	}
	return s.Terminal == nil || (s.Phase == PhaseDone && s.Terminal.Reason != ReasonErrored)
}

// Reopens reports whether a finished run's state is one the same command
// resumes rather than starts over (PR-G3): a run a human stopped with a
// signal or `converge stop`, which keeps its round count and wall clock.
// The PR's stop label is not such a stop: a later run stops on it again.
func Reopens(s State) bool {
	return s.Phase == PhaseDone && s.Terminal != nil && s.Terminal.Reason == ReasonStoppedByHuman && s.StoppedPhase != ""
}

// Reopen is a stopped run's state resumed (Reopens): its terminal gone,
// back in the phase it stopped in; Decide reads the world again before
// trusting any of it.
func Reopen(s State) State {
	if !Reopens(s) {
		return s
	}
	s = s.clone()
	s.Phase, s.Terminal, s.StoppedPhase = s.StoppedPhase, nil, ""
	return s
}

// PriorResolved reads, from earlier runs' stored states, the threads those
// runs saw resolved after converge resolved them: open now, a human
// reopened them (PR-S12, REL-2).
func PriorResolved(runs []store.Run) []string {
	var ids []string
	for _, r := range runs {
		if len(r.State) == 0 {
			continue
		}
		var st State
		if json.Unmarshal(r.State, &st) != nil {
			continue
		}
		for _, t := range st.Threads {
			if t.ObservedResolved {
				ids = append(ids, PriorResolvedKey(t.ThreadID, t.HeadSHA, t.Disposition))
			}
		}
		ids = append(ids, st.PriorResolved...)
	}
	slices.Sort(ids)
	return slices.Compact(ids)
}

// ledger writes each round and its findings, rewriting only the rounds
// whose record changed since the last step (PR-M5).
type ledger struct {
	db      *store.Store
	runID   string
	written map[int]string
}

func (j *ledger) save(ctx context.Context, s State) error {
	disp := map[string]string{}
	for _, t := range s.Threads {
		disp[fmt.Sprintf("%d/%s", t.Round, t.ThreadID)] = string(t.Disposition)
	}
	for _, r := range s.Rounds {
		var fs []store.Finding
		for _, f := range r.Findings {
			// A finding without a thread (the local review's) has its
			// disposition under its own id, as step.targets records it.
			key := f.ThreadID
			if key == "" {
				key = f.ID
			}
			fs = append(fs, store.Finding{
				ID: f.ID, ThreadID: f.ThreadID, Path: f.Path, StartLine: f.StartLine, EndLine: f.EndLine,
				Summary: f.Summary, Verdict: string(f.Verdict), Source: f.Source, Author: f.Author,
				Disposition: disp[fmt.Sprintf("%d/%s", r.N, key)],
			})
		}
		key, err := json.Marshal(struct {
			R RoundRecord
			F []store.Finding
		}{r, fs})
		if err != nil {
			return err
		}
		if j.written[r.N] == string(key) {
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
		j.written[r.N] = string(key)
	}
	return nil
}
