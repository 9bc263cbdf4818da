package fakehub

import (
	"context"
	"fmt"

	"github.com/convergeloop/converge/internal/emulator/fakegit"
)

// CICheckName is the check run the CI runner reports.
const CICheckName = "ci/test"

// startCI runs the repository's test command on the PR's head, superseding
// any run still going for an older head of the same PR.
func (h *Hub) startCI(rp *repo, p *pr) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(rp.testCommand) == 0 || p.state != "OPEN" || h.closed {
		return
	}
	if cancel := rp.ci[p.number]; cancel != nil {
		cancel()
	}
	ctx, cancel := context.WithCancel(h.Context())
	rp.ci[p.number] = cancel
	now := h.now()
	cr := &checkRun{id: h.newIDLocked(), sha: p.headSHA, name: CICheckName, status: "in_progress", app: h.ciUser(),
		startedAt: now, title: "Running tests", detailsURL: fmt.Sprintf("%s/%s/actions/runs/%d", h.BaseURL(), rp.fullName(), h.nextID)}
	rp.checkRuns = append(rp.checkRuns, cr)
	h.nodes[cr.nodeID()] = cr
	h.publishLocked(Event{Kind: "check", Owner: rp.owner, Repo: rp.name, Number: p.number, SHA: cr.sha, Actor: LoginCIREST, Detail: "in_progress"})
	cmd := append([]string(nil), rp.testCommand...)
	h.Go(func(context.Context) {
		defer cancel()
		out, err := runCI(ctx, rp.dir, cr.sha, cmd)
		h.mu.Lock()
		defer h.mu.Unlock()
		conclusion := "success"
		switch {
		case ctx.Err() != nil:
			conclusion = "cancelled"
		case err != nil:
			conclusion = "failure"
		}
		cr.status, cr.conclusion, cr.completedAt = "completed", conclusion, h.now()
		cr.title = map[string]string{"success": "Tests passed", "failure": "Tests failed", "cancelled": "Superseded by a newer push"}[conclusion]
		cr.summary = "```\n" + tail(out, 60) + "\n```"
		if err != nil && ctx.Err() == nil {
			cr.text = err.Error()
		}
		h.publishLocked(Event{Kind: "check", Owner: rp.owner, Repo: rp.name, Number: p.number, SHA: cr.sha, Actor: LoginCIREST, Detail: conclusion})
	})
}

// runCI checks sha out into a throwaway directory and runs cmd there.
func runCI(ctx context.Context, gitDir, sha string, cmd []string) (string, error) {
	return fakegit.RunCI(ctx, gitDir, sha, cmd)
}

func tail(s string, lines int) string { return fakegit.Tail(s, lines) }

// WaitCI waits until the newest ci/test check run on sha completes and
// returns its conclusion.
func (h *Hub) WaitCI(ctx context.Context, owner, repoName, sha string) (string, error) {
	events, cancel := h.Subscribe()
	defer cancel()
	for {
		h.mu.Lock()
		rp := h.repoLocked(owner, repoName)
		var last *checkRun
		if rp != nil {
			for _, c := range rp.checkRuns {
				if c.sha == sha && c.name == CICheckName {
					last = c
				}
			}
		}
		var concl string
		if last != nil && last.status == "completed" {
			concl = last.conclusion
		}
		h.mu.Unlock()
		if rp == nil {
			return "", fmt.Errorf("wait ci: no repo %s/%s", owner, repoName)
		}
		if concl != "" {
			return concl, nil
		}
		select {
		case <-ctx.Done():
			return "", fmt.Errorf("wait ci on %s: %w", short(sha), ctx.Err())
		case _, ok := <-events:
			if !ok {
				return "", fmt.Errorf("wait ci: hub closed")
			}
		}
	}
}

func short(sha string) string { return sha[:min(len(sha), 7)] }
