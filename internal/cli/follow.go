package cli

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/convergeloop/converge/internal/checkloop"
	"github.com/convergeloop/converge/internal/cmdutil"
	"github.com/convergeloop/converge/internal/engine"
	"github.com/convergeloop/converge/internal/exitcode"
)

// followPoll is how often `converge status --follow` reads the store.
const followPoll = 300 * time.Millisecond

// followGone is how many reads in a row must find an unfinished run that
// no converge holds before --follow gives up on it: a run is claimed
// before its lock shows, and a resume takes it again.
const followGone = 3

// followRun follows one run from another terminal (UX-1): it prints the
// run's events as the store gets them — the lines converge prints, a
// status line on a terminal, NDJSON with --json — until the run ends, and
// exits with the run's IF-1 exit code. A run no converge holds any more
// (killed, or left for a human) ends the follow with exit 1: the same
// command resumes it.
func followRun(ctx context.Context, ios *cmdutil.IOStreams, opts *statusOptions) error {
	id := opts.Follow
	if opts.engine.temporal() {
		return cmdutil.UsageErr("status --follow reads the local state store; with --engine temporal the command that started the run follows it")
	}
	db, r, err := opts.factory.OrDefault(ios).OpenRun(ctx, opts.StateDir, id)
	if err != nil {
		return err
	}
	defer db.Close()
	rl := &runLine{db: db, runID: r.ID, label: r.Target}
	var seen int64
	gone := 0
	for {
		// The run first, then its events: every event of a run read as
		// ended is printed before the end.
		if r, err = db.GetRun(ctx, id); err != nil {
			return err
		}
		evs, err := db.Events(ctx, id)
		if err != nil {
			return fmt.Errorf("read events of %s: %w", id, err)
		}
		for _, se := range evs {
			if se.Seq <= seen {
				continue
			}
			seen = se.Seq
			e := engine.Event{Time: se.Time, Kind: se.Kind, Round: se.Round, Message: se.Message}
			if len(se.Data) > 0 {
				e.Data = se.Data
			}
			if opts.JSON {
				writeEvent(ios.Out, e, r.ID, r.Kind, r.Target, "")
				continue
			}
			showEvent(ios, rl, e, eventLine(r.Kind, e))
		}
		if r.Finished() {
			if b := boardOf(ios); b != nil {
				b.Remove(r.ID)
			}
			if !opts.JSON {
				fmt.Fprintf(ios.Out, "converge: run %s ended %s (exit %d)\n", r.ID, r.Status, r.ExitCode)
			}
			if r.ExitCode != exitcode.OK {
				return &cmdutil.SilentExit{Code: r.ExitCode}
			}
			return nil
		}
		if holder, live, err := db.LockLive(ctx, r.Target); err == nil && (!live || holder != r.ID) {
			if gone++; gone >= followGone {
				return &cmdutil.ExitErr{Code: exitcode.Error, Err: fmt.Errorf("run %s is not running (no converge holds it) and has not ended; the command that started it resumes it", r.ID)}
			}
		} else {
			gone = 0
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(followPoll):
		}
	}
}

// eventLine is an event as the command that runs the loop prints it.
func eventLine(kind string, e engine.Event) string {
	prefix := "       "
	if kind == checkloop.Kind {
		if e.Round > 0 {
			prefix = fmt.Sprintf("iter.%02d", e.Round)
		}
		return fmt.Sprintf("%s  %-9s %s", prefix, e.Kind, e.Message)
	}
	if e.Round > 0 {
		prefix = fmt.Sprintf("round %d", e.Round)
	}
	return strings.TrimRight(fmt.Sprintf("%s  %-8s %s", prefix, e.Kind, e.Message), " ")
}
