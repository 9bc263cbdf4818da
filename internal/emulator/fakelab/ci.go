package fakelab

import (
	"context"
	"fmt"

	"github.com/convergeloop/converge/internal/emulator/fakegit"
)

// CIJobName is the pipeline job that runs the project's test command.
const CIJobName = "test"

// startPipelineLocked runs the project's test command on sha in a new
// pipeline (one job, CIJobName, stage "test"), cancelling a pipeline still
// running for the same ref, as GitLab's auto-cancel of redundant
// pipelines does.
func (l *Lab) startPipelineLocked(p *project, ref, sha string) {
	if len(p.testCommand) == 0 || l.closed {
		return
	}
	for _, pl := range p.pipelines {
		if pl.ref == ref && (pl.status == "running" || pl.status == "pending") {
			if cancel := p.ci[pl.id]; cancel != nil {
				cancel()
			}
		}
	}
	now := l.now()
	pl := &pipeline{id: l.newIDLocked(), iid: len(p.pipelines) + 1, sha: sha, ref: ref, status: "running", createdAt: now, updatedAt: now, source: "push"}
	j := &job{id: l.newIDLocked(), name: CIJobName, stage: "test", status: "running", createdAt: now, started: now}
	pl.jobs = []*job{j}
	p.pipelines = append(p.pipelines, pl)
	ctx, cancel := context.WithCancel(l.Context())
	p.ci[pl.id] = cancel
	l.publishLocked(Event{Kind: "pipeline", Project: p.path, SHA: sha, Detail: "running"})
	cmd := append([]string(nil), p.testCommand...)
	l.Go(func(context.Context) {
		defer cancel()
		out, err := fakegit.RunCI(ctx, p.dir, sha, cmd)
		l.mu.Lock()
		defer l.mu.Unlock()
		delete(p.ci, pl.id)
		status := "success"
		switch {
		case ctx.Err() != nil:
			status = "canceled"
		case err != nil:
			status = "failed"
		}
		now := l.now()
		j.status, j.finished, j.trace = status, now, fakegit.Tail(out, 60)
		pl.status, pl.updatedAt = status, now
		l.publishLocked(Event{Kind: "pipeline", Project: p.path, SHA: sha, Detail: status})
	})
}

// WaitPipeline waits until the newest pipeline on sha finishes and
// returns its status (success, failed, canceled).
func (l *Lab) WaitPipeline(ctx context.Context, path, sha string) (string, error) {
	events, cancel := l.Subscribe()
	defer cancel()
	for {
		l.mu.Lock()
		p := l.projectLocked(path)
		var last *pipeline
		if p != nil {
			for _, pl := range p.pipelines {
				if pl.sha == sha {
					last = pl
				}
			}
		}
		var st string
		if last != nil && last.status != "running" && last.status != "pending" {
			st = last.status
		}
		l.mu.Unlock()
		if p == nil {
			return "", fmt.Errorf("wait pipeline: no project %s", path)
		}
		if st != "" {
			return st, nil
		}
		select {
		case <-ctx.Done():
			return "", fmt.Errorf("wait pipeline on %.8s: %w", sha, ctx.Err())
		case _, ok := <-events:
			if !ok {
				return "", fmt.Errorf("wait pipeline: lab closed")
			}
		}
	}
}

// headPipelineLocked is the newest pipeline on the MR's head.
func headPipelineLocked(m *mr) *pipeline {
	var last *pipeline
	for _, pl := range m.proj.pipelines {
		if pl.sha == m.headSHA {
			last = pl
		}
	}
	return last
}
