package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/convergeloop/converge/internal/exitcode"
	"github.com/convergeloop/converge/internal/proc"
	"github.com/convergeloop/converge/internal/store"
)

// BusyError is a target another live process already runs a loop on
// (PR-G5: one loop per target).
type BusyError struct{ Target, Holder string }

func (e *BusyError) Error() string {
	return fmt.Sprintf("a loop is already running on %s (run %s)", e.Target, e.Holder)
}

// Claim is a run's hold on its target in the store: the run to drive, new
// or resumed, and the target's lock.
type Claim[S any] struct {
	RunID string
	// Resumed is the stored state a resumed run continues from (PR-G3);
	// nil for a new run.
	Resumed *S
	// Prior are the target's runs, newest first, this one included.
	Prior []store.Run
	// Orphans is how many processes converge processes that died had left
	// running (an agent's shell, a build), killed before this run starts:
	// they would go on writing to the tree this run resets (REL-2).
	Orphans int

	db     *store.Store
	target string
}

// newRunID draws a run id; a test makes it draw one taken.
var newRunID = store.NewRunID

// ClaimRun starts, or resumes, the run of kind on target. Unless fresh,
// the newest run on target resumes when it is unfinished and its stored
// state decodes and is resumable (a run killed mid-way keeps its round
// count, wall clock and baseline). Holding the lock proves earlier
// unfinished runs dead: they are recorded interrupted. A target a live
// process holds is a *BusyError.
func ClaimRun[S any](ctx context.Context, db *store.Store, kind, target string, fresh bool, resumable func(S) bool) (*Claim[S], error) {
	c := &Claim[S]{db: db, target: target}
	if !fresh {
		last, err := db.LatestRunFor(ctx, target)
		if err == nil && !last.Finished() && len(last.State) > 0 {
			var st S
			if json.Unmarshal(last.State, &st) == nil && resumable(st) {
				holder, live, err := db.LockLive(ctx, target)
				if err != nil {
					return nil, fmt.Errorf("lock %s: %w", target, err)
				}
				if live {
					return nil, &BusyError{Target: target, Holder: holder}
				}
				c.RunID, c.Resumed = last.ID, &st
			}
		}
	}
	if c.Resumed == nil {
		// A run id is random within its day (24 bits): among a server's
		// thousands of runs of a day two draw the same one now and then,
		// and the second draws again.
		for try := 0; ; try++ {
			c.RunID = newRunID(time.Now())
			err := db.CreateRun(ctx, store.Run{ID: c.RunID, Kind: kind, Target: target})
			if err == nil {
				break
			}
			if _, gerr := db.GetRun(ctx, c.RunID); gerr != nil || try == 4 {
				return nil, fmt.Errorf("record run: %w", err)
			}
		}
	}
	holder, ok, err := db.AcquireLock(ctx, target, c.RunID, os.Getpid())
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", target, err)
	}
	if !ok {
		if c.Resumed == nil {
			_ = db.FinishRun(ctx, c.RunID, "refused", exitcode.Usage, nil)
		}
		return nil, &BusyError{Target: target, Holder: holder}
	}
	c.Orphans = proc.ReapOrphans()
	runs, err := db.ListRuns(ctx, store.ListOptions{Target: target})
	if err != nil {
		c.Release(ctx)
		return nil, fmt.Errorf("list runs of %s: %w", target, err)
	}
	for i, r := range runs {
		if r.ID != c.RunID && !r.Finished() {
			_ = db.FinishRun(ctx, r.ID, "interrupted", exitcode.Error, nil)
			runs[i].Status = "interrupted"
		}
	}
	c.Prior = runs
	return c, nil
}

// Reopener is an Adapter whose kind resumes some finished runs: a run a
// human stopped (a signal, `converge stop`) continues with its counts and
// clock when the same command runs again, unless it is Fresh.
type Reopener[S any] interface {
	Reopens(S) bool
}

// ReopenStopped makes target's newest run unfinished again when it is
// finished and reopens says its state resumes; ClaimRun then resumes it.
// A target a live process holds is left alone (ClaimRun refuses it).
func ReopenStopped[S any](ctx context.Context, db *store.Store, target string, reopens func(S) bool) error {
	last, err := db.LatestRunFor(ctx, target)
	if err != nil || !last.Finished() || len(last.State) == 0 {
		return nil
	}
	var st S
	if json.Unmarshal(last.State, &st) != nil || !reopens(st) {
		return nil
	}
	if err := db.ReopenRun(ctx, last.ID); err != nil {
		return fmt.Errorf("resume stopped run %s: %w", last.ID, err)
	}
	return nil
}

// Release lets go of the target's lock; the run's record stays.
func (c *Claim[S]) Release(ctx context.Context) {
	_ = c.db.ReleaseLock(context.WithoutCancel(ctx), c.target, c.RunID)
}

// Finish records the run's end: its status (a terminal reason), exit code
// and proof.
func (c *Claim[S]) Finish(ctx context.Context, status string, code exitcode.Code, proof any) error {
	var b []byte
	if proof != nil {
		var err error
		if b, err = json.Marshal(proof); err != nil {
			return fmt.Errorf("encode proof: %w", err)
		}
	}
	return c.db.FinishRun(context.WithoutCancel(ctx), c.RunID, status, code, b)
}

// StopRequested reports a `converge stop` of the run.
func (c *Claim[S]) StopRequested(ctx context.Context) bool {
	stop, err := c.db.StopRequested(ctx, c.RunID)
	return err == nil && stop
}

// ActionRecord names one action in a run's action journal.
type ActionRecord struct {
	Key    string // deterministic: the same action keeps its key across crashes
	Round  int
	Kind   string
	Target string
}

// StoreJournal persists a run's state and its actions in the store.
type StoreJournal[S any] struct {
	DB    *store.Store
	RunID string
	// Status names the run's status for a state: store.StatusRunning, or
	// its terminal reason once it has one.
	Status func(S) string
	// Ledger, when set, records what a state says per round (PR-M5), so
	// status and the decision log need not decode state.
	Ledger func(ctx context.Context, s S) error
}

var _ Journal[int] = (*StoreJournal[int])(nil)

// SaveState stores s as JSON, then its ledger.
func (j *StoreJournal[S]) SaveState(ctx context.Context, s S) error {
	b, err := json.Marshal(s)
	if err != nil {
		return fmt.Errorf("encode state: %w", err)
	}
	status := store.StatusRunning
	if j.Status != nil {
		status = j.Status(s)
	}
	if err := j.DB.SaveState(ctx, j.RunID, b, status); err != nil {
		return err
	}
	if j.Ledger != nil {
		return j.Ledger(ctx, s)
	}
	return nil
}

// BeginAction records an action about to run; done is true when an
// earlier attempt with the same key finished, so it must not repeat.
func (j *StoreJournal[S]) BeginAction(ctx context.Context, a ActionRecord) (done bool, err error) {
	got, existed, err := j.DB.BeginAction(ctx, store.Action{
		Key: j.RunID + "/" + a.Key, RunID: j.RunID, Round: a.Round, Kind: a.Kind, Target: a.Target,
	})
	if err != nil {
		return false, err
	}
	return existed && got.Status == store.ActionDone, nil
}

// FinishAction records how the action ended; a failed one may run again.
func (j *StoreJournal[S]) FinishAction(ctx context.Context, key string, failed bool, result any) error {
	var b []byte
	if result != nil {
		var err error
		if b, err = json.Marshal(result); err != nil {
			return err
		}
	}
	status := store.ActionDone
	if failed {
		status = store.ActionFailed
	}
	return j.DB.FinishAction(ctx, j.RunID+"/"+key, status, b)
}
