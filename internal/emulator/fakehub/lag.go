package fakehub

import (
	"hash/fnv"
	"math/rand/v2"
)

// ReviewLag is the lag fault: GitHub is eventually consistent, and a review
// can be visible before its inline comments are (PR-O2). Under it, for the
// first K GraphQL reads of a PR after a review with inline comments is
// created, that review is listed with its body (which states its count)
// but the threads it opened are absent from reviewThreads (and from its
// totalCount), and the review's comments connection reports totalCount 0
// with no nodes — unless the review drew "count current", in which case
// only the threads lag. From read K+1 on everything is visible.
//
// A read is one GraphQL request that touches the PR, by any token; the
// review's creation is not a read. REST answers lag the same comments at
// the PR's current read without advancing the clock: GET pulls/{n}'s
// review_comments count and GET pulls/{n}/comments leave out a lagging
// review's comments, so the PR's ETag moves when they show, as GitHub's
// does when a review comment lands (updated_at and review_comments are in
// the answer it digests). node(id) lookups of a thread are not lagged.
// The zero value is off.
type ReviewLag struct {
	// Reads is a fixed K for every review, used when MaxReads is 0; the
	// comment count lags together with the threads.
	Reads int
	// MaxReads > 0 draws K per review uniformly from [0, MaxReads], and
	// whether the count lags with the threads, from Seed, the PR and the
	// review's position on it: a seed replays the same lags.
	MaxReads int
	Seed     int64
}

// SetReviewLag makes every later review's comments visible k reads after
// the review itself (fixed K, count lagging too); 0 turns the fault off.
func (h *Hub) SetReviewLag(k int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.lag = ReviewLag{Reads: max(k, 0)}
}

// SetReviewLagSeeded draws each later review's K from [0, maxReads] with
// seed (see ReviewLag); maxReads 0 turns the fault off.
func (h *Hub) SetReviewLagSeeded(seed int64, maxReads int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.lag = ReviewLag{MaxReads: max(maxReads, 0), Seed: seed}
}

// drawLagLocked arms the fault on a review about to join p.reviews.
func (h *Hub) drawLagLocked(p *pr, rv *review) {
	if rv.comments == 0 {
		return
	}
	l := h.lag
	k, countCurrent := l.Reads, false
	if l.MaxReads > 0 {
		f := fnv.New64a()
		f.Write([]byte(p.repo.fullName()))
		stream := f.Sum64() ^ uint64(p.number)<<32 ^ uint64(len(p.reviews))
		r := rand.New(rand.NewPCG(uint64(l.Seed), stream))
		k = r.IntN(l.MaxReads + 1)
		countCurrent = r.IntN(2) == 0
	}
	if k <= 0 {
		return
	}
	rv.lagUntil = p.reads.Load() + int64(k)
	rv.countCurrent = countCurrent
}
