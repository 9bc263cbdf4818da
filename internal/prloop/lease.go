package prloop

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/convergeloop/converge/internal/forge"
	"github.com/convergeloop/converge/internal/text"
)

// One driver per PR, across machines and state stores (PR-T14): a run's
// `converge` pending verdict on the head — the commit status, or the
// in-progress check run — carries a lease: the run's id and when the
// lease lapses, by the forge's clock. A run refreshes it while it works;
// another converge reads it before it drives the PR and refuses, unless
// told to take over; a run that finds a newer lease of another run on the
// head yields at once and writes nothing. A lease not refreshed lapses:
// a driver that died does not hold the PR for ever.

// LeaseTTL is how long a lease holds unless refreshed; leaseRefresh is
// how much of it left makes the run write it again (a run observes at
// least every poll-max, ten minutes by default).
const (
	LeaseTTL     = 30 * time.Minute
	leaseRefresh = 20 * time.Minute
)

// Lease is a run's hold on a PR as the head's verdict carries it. A
// commit status is the commit's, not the PR's: two PRs may share a head
// (the same branch into two bases), so a lease names its PR's number.
type Lease struct {
	Run   string
	PR    int
	Until time.Time
}

var leaseRE = regexp.MustCompile(`\[lease (\S+) #(\d+) until (\S+)\]`)

// leaseText is a lease as the verdict's description says it.
func leaseText(run string, pr int, until time.Time) string {
	return fmt.Sprintf("[lease %s #%d until %s]", markerField(run), pr, until.UTC().Format(time.RFC3339))
}

// HeadLease reads the PR's lease on its head: the `converge` verdict's
// description (a status) or title (a check run), while it is pending and
// names this PR (another PR with the same head leases only itself).
func HeadLease(pr *forge.PullRequest) (Lease, bool) {
	if pr == nil || convergeStatus(pr.Checks) != forge.StatusPending {
		return Lease{}, false
	}
	for _, cx := range pr.Checks.Contexts {
		if !strings.EqualFold(cx.Name, StatusContext) {
			continue
		}
		for _, s := range []string{cx.Description, cx.Title} {
			if m := leaseRE.FindStringSubmatch(s); m != nil {
				until, err := time.Parse(time.RFC3339, m[3])
				num, nerr := strconv.Atoi(m[2])
				if err != nil || nerr != nil || num != pr.Number {
					return Lease{}, false
				}
				return Lease{Run: m[1], PR: num, Until: until}, true
			}
		}
	}
	return Lease{}, false
}

// Live reports whether the lease still holds at the forge's time now.
func (l Lease) Live(now time.Time) bool { return l.Until.After(now) }

// String says who holds the PR, for the one line a refused start prints.
func (l Lease) String() string {
	return fmt.Sprintf("converge run %s (its lease lapses at %s unless it keeps working)", l.Run, l.Until.UTC().Format(time.RFC3339))
}

// takenOver is the lease of another run that appeared on the head after
// this run started: someone took the PR over (`--take-over`).
func (d *step) takenOver() (Lease, bool) {
	l, ok := HeadLease(d.pr)
	if !ok || !l.takesOver(d.s, d.forgeNow()) {
		return Lease{}, false
	}
	return l, true
}

// takesOver reports whether l is another run's live hold on the PR that
// appeared after the run in st started: not its own lease, nor the one it
// started over (--take-over), nor one lapsed at the forge's time now.
func (l Lease) takesOver(st State, now time.Time) bool {
	return st.RunID != "" && l.Run != st.RunID && l.Run != st.LeaseAtStart && l.Live(now)
}

// leaseReason is a pending verdict's description with this run's lease.
func (d *step) leaseReason(reason string) string {
	if d.s.RunID == "" {
		return reason
	}
	// GitHub keeps 140 characters of a status's description: the lease
	// is whole, the words before it give way.
	l := leaseText(d.s.RunID, d.pr.Number, d.forgeNow().Add(LeaseTTL))
	return text.Clip(reason, max(0, 140-len(l)-1)) + " " + l
}

// ownLeaseFresh reports the head's pending verdict carries this run's
// lease with more than leaseRefresh left.
func (d *step) ownLeaseFresh() bool {
	l, ok := HeadLease(d.pr)
	return ok && l.Run == d.s.RunID && l.Until.Sub(d.forgeNow()) > leaseRefresh
}

// keepLease writes the lease again while the run works and it nears its
// end (a long wait for a review), unless this step writes the head's
// verdict anyway.
func (d *step) keepLease() {
	if d.term != nil || d.s.RunID == "" || d.head == "" || d.setsStatus() {
		return
	}
	if l, ok := HeadLease(d.pr); !ok || l.Run != d.s.RunID || d.ownLeaseFresh() {
		return
	}
	d.acts = append(d.acts, Action{
		Kind: ActSetStatus, Key: fmt.Sprintf("status/%s/pending/lease-%d", d.head, d.forgeNow().Unix()), SHA: d.head, State: forge.StatusPending,
		Round: d.s.Round, Reason: d.leaseReason(fmt.Sprintf("converge: round %d running", d.s.Round)),
	})
}

// ErrTakenOver is a push withheld because another run's live lease
// appeared on the head while the round worked: nothing was pushed, and a
// new observation ends the run taken-over (PR-T14).
type ErrTakenOver struct{ Lease Lease }

func (e *ErrTakenOver) Error() string {
	return fmt.Sprintf("not pushed: the pull request was taken over by %s while the round worked", e.Lease)
}

// ObserveNow tells the engine a new observation answers this fault.
func (e *ErrTakenOver) ObserveNow() bool { return true }
