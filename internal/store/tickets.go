package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Ticket statuses.
const (
	// TicketOpen: created, no child has claimed it.
	TicketOpen = "open"
	// TicketClaimed: a child run owns it and is (or was) working on it.
	TicketClaimed = "claimed"
	// TicketDone: its owner finished it and stored its result.
	TicketDone = "done"
	// TicketInterrupted: its owner died before finishing it; it is never
	// handed out again.
	TicketInterrupted = "interrupted"
)

// Ticket is one unit of work a loop hands to a child run (LOOP-3): for
// `converge loop`, one iteration, <run>.iter.NN. A ticket is claimed once,
// by one owner: the claim is a compare-and-swap on an empty owner, so two
// processes claiming the same ticket end with one owner.
type Ticket struct {
	ID     string
	RunID  string // the loop run the ticket belongs to
	N      int    // its number within the run
	Status string // TicketOpen, TicketClaimed, TicketDone, TicketInterrupted
	// Owner names the child run that claimed it; "" while open.
	Owner string
	PID   int    // the process that claimed it
	Host  string // the host of that process
	// Result is what the owner stored when it finished (opaque JSON).
	Result     json.RawMessage
	CreatedAt  time.Time
	ClaimedAt  time.Time
	FinishedAt time.Time
}

const ticketCols = `id, run_id, n, status, owner, pid, host, result, created_at, claimed_at, finished_at`

func scanTicket(sc interface{ Scan(...any) error }) (Ticket, error) {
	var (
		t                          Ticket
		result                     sql.NullString
		created, claimed, finished sql.NullString
	)
	if err := sc.Scan(&t.ID, &t.RunID, &t.N, &t.Status, &t.Owner, &t.PID, &t.Host, &result, &created, &claimed, &finished); err != nil {
		return Ticket{}, err
	}
	t.Result = bytesOf(result)
	t.CreatedAt, t.ClaimedAt, t.FinishedAt = parseTime(created), parseTime(claimed), parseTime(finished)
	return t, nil
}

// CreateTicket records t as open unless a ticket with its id exists; it
// returns the stored ticket and whether this call created it. Creating is
// idempotent: a loop that crashed after creating a ticket may ask again.
func (s *Store) CreateTicket(ctx context.Context, t Ticket) (Ticket, bool, error) {
	if t.ID == "" || t.RunID == "" {
		return Ticket{}, false, errors.New("create ticket: empty id or run")
	}
	res, err := s.db.ExecContext(ctx, `INSERT INTO tickets(id, run_id, n, status, created_at)
		VALUES (?, ?, ?, ?, ?) ON CONFLICT(id) DO NOTHING`,
		s.red(t.ID), s.red(t.RunID), t.N, TicketOpen, fmtTime(s.now()))
	if err != nil {
		return Ticket{}, false, fmt.Errorf("create ticket %s: %w", t.ID, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return Ticket{}, false, fmt.Errorf("create ticket %s: %w", t.ID, err)
	}
	got, err := s.GetTicket(ctx, t.ID)
	if err != nil {
		return Ticket{}, false, fmt.Errorf("create ticket %s: %w", t.ID, err)
	}
	return got, n == 1, nil
}

// ClaimTicket claims an open ticket in owner's name, for the process pid.
// ok is true when owner holds the ticket after the call: it won the claim
// now, or held it already. Otherwise the ticket is someone else's (holder)
// or no longer open; the caller must not work on it. Only an open ticket
// can be claimed, so a claimed ticket is never handed out twice, not even
// after its owner died.
func (s *Store) ClaimTicket(ctx context.Context, id, owner string, pid int) (holder string, ok bool, err error) {
	if owner == "" {
		return "", false, fmt.Errorf("claim ticket %s: empty owner", id)
	}
	o := s.red(owner)
	res, err := s.db.ExecContext(ctx, `UPDATE tickets SET status = ?, owner = ?, pid = ?, host = ?, claimed_at = ?
		WHERE id = ? AND owner = '' AND status = ?`,
		TicketClaimed, o, pid, s.host, fmtTime(s.now()), s.red(id), TicketOpen)
	if err != nil {
		return "", false, fmt.Errorf("claim ticket %s: %w", id, err)
	}
	if n, _ := res.RowsAffected(); n == 1 {
		return owner, true, nil
	}
	t, err := s.GetTicket(ctx, id)
	if err != nil {
		return "", false, fmt.Errorf("claim ticket %s: %w", id, err)
	}
	return t.Owner, t.Owner == o && t.Status == TicketClaimed, nil
}

// FinishTicket stores the owner's result and the ticket's final status
// (TicketDone or TicketInterrupted). Only the owner can finish a claimed
// ticket; anyone else gets a *NotFoundError and changes nothing.
func (s *Store) FinishTicket(ctx context.Context, id, owner, status string, result []byte) error {
	if status != TicketDone && status != TicketInterrupted {
		return fmt.Errorf("finish ticket %s: bad status %q", id, status)
	}
	now := fmtTime(s.now())
	res, err := s.db.ExecContext(ctx, `UPDATE tickets SET status = ?, result = ?, finished_at = ?
		WHERE id = ? AND owner = ? AND status = ?`,
		status, s.redJSON(result), now, s.red(id), s.red(owner), TicketClaimed)
	return s.checkOne(res, err, "finish ticket", "claimed ticket", id)
}

// InterruptTicket records that a ticket's owner died before finishing it:
// a claimed ticket (whoever owns it) becomes TicketInterrupted, keeping
// its owner. It is never handed out again. An open ticket is closed the
// same way, so it cannot be claimed later either.
func (s *Store) InterruptTicket(ctx context.Context, id string) error {
	res, err := s.db.ExecContext(ctx, `UPDATE tickets SET status = ?, finished_at = ?
		WHERE id = ? AND status IN (?, ?)`,
		TicketInterrupted, fmtTime(s.now()), s.red(id), TicketOpen, TicketClaimed)
	if err != nil {
		return fmt.Errorf("interrupt ticket %s: %w", id, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		if _, err := s.GetTicket(ctx, id); err != nil {
			return err
		}
	}
	return nil
}

// GetTicket returns the ticket with the given id, or a *NotFoundError.
func (s *Store) GetTicket(ctx context.Context, id string) (Ticket, error) {
	t, err := scanTicket(s.db.QueryRowContext(ctx, `SELECT `+ticketCols+` FROM tickets WHERE id = ?`, s.red(id)))
	if errors.Is(err, sql.ErrNoRows) {
		return Ticket{}, &NotFoundError{What: "ticket", ID: id}
	}
	if err != nil {
		return Ticket{}, fmt.Errorf("get ticket %s: %w", id, err)
	}
	return t, nil
}

// Tickets returns the run's tickets in order.
func (s *Store) Tickets(ctx context.Context, runID string) ([]Ticket, error) {
	return queryAll(ctx, s, "tickets of "+runID, scanTicket, `SELECT `+ticketCols+` FROM tickets WHERE run_id = ? ORDER BY n, id`, s.red(runID))
}
