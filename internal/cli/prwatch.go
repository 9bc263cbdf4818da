package cli

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/convergeloop/converge/internal/cmdutil"
	"github.com/convergeloop/converge/internal/engine"
	"github.com/convergeloop/converge/internal/forge"
	"github.com/convergeloop/converge/internal/prloop"
	"github.com/convergeloop/converge/internal/store"
)

// watchPR waits for the run h of job to end and, with --watch, holds the
// PR after it (PR-T14): it polls the PR through the change probe (one
// free request while nothing changed) and on any change starts a new
// run, whose first observation withdraws a verdict whose facts broke, or
// ends two-stable again writing nothing. It ends when a run ends
// otherwise than with a verdict to keep (the PR closed, an error, a
// stop), or when converge is stopped; it returns the last run's job and
// outcome.
func watchPR(ctx context.Context, ios *cmdutil.IOStreams, m *engine.Manager, db *store.Store, p loopParams, shared *sync.Mutex, job *prJob, h *engine.Handle) (*prJob, engine.Outcome) {
	stop := stopOnInterrupt(ctx)
	for {
		o := h.Wait()
		if !p.Watch || !keepsWatching(job, o) {
			return job, o
		}
		fmt.Fprintf(ios.ErrOut, "converge: watching %s: the verdict is kept current until the pull request closes or converge is stopped\n", p.Ref)
		var seen *forge.PullRequest
		if job.loop != nil {
			seen = job.loop.LastObserved()
		}
		if !waitPRChange(ctx, p, job.term, seen, stop) {
			return job, o
		}
		fmt.Fprintf(ios.ErrOut, "converge: %s changed: checking the verdict\n", p.Ref)
		next := newPRJob(ios, db, m.WorkDir(), p, shared)
		nh, err := m.Add(ctx, engine.NewSpec(next))
		if err != nil {
			return job, o
		}
		job, h = next, nh
	}
}

// keepsWatching: a run that ended with a verdict on an open PR, two-stable
// or one that needs a human, is watched on; a closed PR, an interrupted
// or refused run and a stop are not.
func keepsWatching(job *prJob, o engine.Outcome) bool {
	t := job.term
	if o.Unfinished || o.Status == engine.StatusRefused || t == nil {
		return false
	}
	switch t.Reason {
	case prloop.ReasonPRClosed, prloop.ReasonStoppedByHuman, prloop.ReasonErrored, prloop.ReasonDryRun, prloop.ReasonDisposed:
		return false
	}
	return true
}

// waitPRChange polls the PR every poll interval until it changed (true),
// or ctx ends or converge is stopped (false). Its first read is whole and
// is compared with seen, the PR as the run's last observation read it:
// news that came after that observation and before this read (a comment
// in the moment the run ended) counts, though no later poll would see it
// change. converge's own writes after that observation (its labels, its
// status, its comments) are not news. Without seen, a head or CI already
// unlike the verdict's counts. After that the change probe answers an
// unchanged PR for one free request, and a whole read counts as a change
// only when a fact a verdict reads differs (prFacts). A forge fault is
// waited out: the next poll tries again.
func waitPRChange(ctx context.Context, p loopParams, term *prloop.Terminal, seen *forge.PullRequest, stop <-chan struct{}) bool {
	every := max(p.PollMin, 50*time.Millisecond)
	base := ""
	for {
		if base != "" {
			select {
			case <-ctx.Done():
				return false
			case <-stop:
				return false
			case <-time.After(every):
			}
		}
		pr, err := p.Forge.Observe(forge.WithProbe(ctx), p.Ref)
		if err != nil {
			if ctx.Err() != nil {
				return false
			}
			if base == "" {
				base = "-" // read whole on the next poll
			}
			continue
		}
		if pr.Unchanged && base != "" && base != "-" {
			continue
		}
		facts := prFacts(pr, p.selfLogin)
		switch {
		case base == "" || base == "-":
			base = facts
			if seen != nil && prFacts(seen, p.selfLogin) != facts {
				return true
			}
			if t := term; t != nil && t.Reason == prloop.ReasonTwoStable && t.Proof != nil &&
				(pr.HeadSHA != t.Proof.HeadSHA || pr.Checks.State != forge.CISuccess && len(pr.Checks.Contexts) > 0) {
				return true
			}
		case facts != base:
			return true
		}
	}
}

// prFacts is what a verdict reads of a PR, as one comparable string: its
// state, head, labels, checks, reviews, threads and comments, less what
// converge itself writes when it publishes a verdict: its verdict labels,
// its own status and the top-level comments of self, its identity (all
// of them when self is unknown).
func prFacts(pr *forge.PullRequest, self string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s %s\n", pr.State, pr.HeadSHA, pr.BaseSHA)
	labels := slices.Sorted(slices.Values(slices.DeleteFunc(slices.Clone(pr.Labels), func(l string) bool {
		return l == prloop.LabelReady || l == prloop.LabelNeedsAttention
	})))
	fmt.Fprintf(&b, "labels %q\n", labels)
	for _, c := range pr.Checks.Contexts {
		if c.Name != prloop.StatusContext {
			fmt.Fprintf(&b, "check %s %s %s\n", c.Name, c.Status, c.Conclusion)
		}
	}
	for _, r := range pr.Reviews {
		fmt.Fprintf(&b, "review %s %s %s\n", r.ID, r.State, r.CommitSHA)
	}
	for _, t := range pr.Threads {
		fmt.Fprintf(&b, "thread %s %v %d\n", t.ID, t.IsResolved, len(t.Comments))
	}
	for _, c := range pr.IssueComments {
		if self == "" || !strings.EqualFold(c.Author, self) {
			fmt.Fprintf(&b, "comment %d\n", c.ID)
		}
	}
	return b.String()
}
