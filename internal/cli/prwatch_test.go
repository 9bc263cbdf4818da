package cli

import (
	"context"
	"sync"
	"testing"

	"github.com/convergeloop/converge/internal/forge"
	"github.com/convergeloop/converge/internal/prloop"
)

// scriptedPR answers every Observe with its PR and closes stop after
// stopAfter reads.
type scriptedPR struct {
	forge.Forge
	pr        *forge.PullRequest
	stopAfter int
	stop      chan struct{}
	once      sync.Once
	reads     int
}

func (s *scriptedPR) Observe(context.Context, forge.PRRef) (*forge.PullRequest, error) {
	s.reads++
	if s.reads >= s.stopAfter {
		s.once.Do(func() { close(s.stop) })
	}
	cp := *s.pr
	return &cp, nil
}

// TestPR_T14_AWatchCountsNewsThatCameAsTheRunEnded: the first read of a
// watch is compared with the run's last observation, so a trusted
// comment that came between that observation and the watch's first read
// starts a new run; converge's own writes after the observation (its
// ready label, its status, its summary comment) do not.
func TestPR_T14_AWatchCountsNewsThatCameAsTheRunEnded(t *testing.T) {
	const self = "converge-bot"
	ci := forge.CheckContext{Name: "ci/test", IsStatus: true, Conclusion: "SUCCESS"}
	seen := &forge.PullRequest{State: forge.StateOpen, HeadSHA: "h1", BaseSHA: "b1",
		Checks: forge.CheckRollup{State: forge.CISuccess, Contexts: []forge.CheckContext{ci}}}
	published := *seen
	published.Labels = []string{prloop.LabelReady}
	published.Checks.Contexts = []forge.CheckContext{ci, {Name: prloop.StatusContext, IsStatus: true, Conclusion: "SUCCESS"}}
	published.IssueComments = []forge.IssueComment{{ID: 1, Author: self, Body: "converged"}}
	term := &prloop.Terminal{Reason: prloop.ReasonTwoStable, Proof: &prloop.Proof{HeadSHA: "h1"}}

	own := &scriptedPR{pr: &published, stopAfter: 3, stop: make(chan struct{})}
	p := loopParams{Forge: own, selfLogin: self}
	if waitPRChange(t.Context(), p, term, seen, own.stop) {
		t.Fatal("converge's own label, status and comment after its last observation counted as news")
	}
	news := published
	news.IssueComments = append(news.IssueComments, forge.IssueComment{ID: 2, Author: "octo-reviewer", Body: "Print the median too."})
	other := &scriptedPR{pr: &news, stopAfter: 3, stop: make(chan struct{})}
	p.Forge = other
	if !waitPRChange(t.Context(), p, term, seen, other.stop) || other.reads != 1 {
		t.Fatalf("a trusted comment posted before the watch's first read was not news (%d reads)", other.reads)
	}
}
