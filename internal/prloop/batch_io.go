package prloop

import (
	"context"
	"errors"
	"fmt"

	"github.com/convergeloop/converge/internal/engine"
	"github.com/convergeloop/converge/internal/forge"
)

// Batched replies and resolves (PR-S12, issue 18): a step's replies and
// resolves go to a forge that batches (forge.ThreadBatcher) together —
// every reply in one request, then the resolves in one more — instead of
// a request each. The rules of PR-S12 hold item by item:
//
//   - reply before resolve: a thread is resolved only when its reply is
//     proven — GitHub returned the comment now, an earlier attempt
//     finished (the journal), or the observation shows converge's marker
//     (Decide then plans the resolve alone);
//   - idempotence: each item is journalled as an action of its own, and a
//     reply the batch may have posted before a crash or a failed request
//     shows as its marker at the next observation, so Decide does not ask
//     for it again.
//
// Only a contiguous run of replies and resolves in the step's plan is
// batched, from its first item, so every action planned before them has
// run; a forge without the capability gets them one by one.

// threadBatch is one step's batched replies and resolves: each item's
// outcome by action key, for Act to hand back as the engine reaches it.
type threadBatch struct {
	results map[string]error
}

// Planned tells the loop a step's actions that were decided elsewhere
// (the Temporal workflow runs Decide on a loop of its own), so Act
// batches them as it does after its own Decide.
func (l *Loop) Planned(actions []Action) { l.planned(actions) }

// planned is told each step's actions: a batch of an earlier step is
// forgotten.
func (l *Loop) planned(actions []Action) {
	l.plan = actions
	l.batch = nil
}

// batched performs a — a reply or a resolve — with the run of replies and
// resolves it starts in the step's plan, once, and returns a's outcome;
// ok is false when a is not batched and Act does it alone.
func (l *Loop) batched(ctx context.Context, round int, pr *forge.PullRequest, a Action) (ok bool, err error) {
	if a.Kind != ActReply && a.Kind != ActResolve {
		return false, nil
	}
	tb, can := l.Forge.(forge.ThreadBatcher)
	if !can {
		return false, nil
	}
	if l.batch != nil {
		if err, in := l.batch.results[a.Key]; in {
			return true, err
		}
	}
	run := l.threadRun(a)
	if len(run) < 2 {
		return false, nil
	}
	l.batch = l.runBatch(ctx, round, pr, tb, run)
	err, in := l.batch.results[a.Key]
	return in, err
}

// threadRun is the run of replies and resolves in the plan that starts at
// a; just a when the plan does not hold it.
func (l *Loop) threadRun(a Action) []Action {
	for i, p := range l.plan {
		if p.Key != a.Key {
			continue
		}
		j := i
		for j < len(l.plan) && (l.plan[j].Kind == ActReply || l.plan[j].Kind == ActResolve) {
			j++
		}
		return l.plan[i:j]
	}
	return []Action{a}
}

// runBatch does the run's replies in one batch and then resolves, in one
// more, the threads whose reply is proven, journalling every item.
func (l *Loop) runBatch(ctx context.Context, round int, pr *forge.PullRequest, tb forge.ThreadBatcher, run []Action) *threadBatch {
	b := &threadBatch{results: map[string]error{}}
	finish := func(a Action, err error) {
		if err != nil {
			_ = l.Journal.FinishAction(ctx, a.Key, true, err.Error())
			b.results[a.Key] = fmt.Errorf("%s: %w", a.Kind, err)
			return
		}
		if jerr := l.Journal.FinishAction(ctx, a.Key, false, nil); jerr != nil {
			b.results[a.Key] = fmt.Errorf("journal %s: %w", a.Key, jerr)
			return
		}
		b.results[a.Key] = nil
	}
	replied := map[string]bool{} // a reply of the run is proven
	inRun := map[string]bool{}   // the run holds a reply to the thread
	var todo []Action
	for i, a := range run {
		if a.Kind == ActReply {
			inRun[a.ThreadID] = true
		}
		done, err := l.Journal.BeginAction(ctx, record(round, a))
		if err != nil {
			// Nothing is written without its journal entry.
			for _, r := range run[i:] {
				b.results[r.Key] = fmt.Errorf("journal %s: %w", r.Key, err)
			}
			break
		}
		if done {
			b.results[a.Key] = nil
			if a.Kind == ActReply {
				replied[a.ThreadID] = true
			}
			continue
		}
		todo = append(todo, a)
	}

	var replies []forge.ThreadReply
	var replyActs []Action
	for _, a := range todo {
		if a.Kind == ActReply {
			replies = append(replies, forge.ThreadReply{ThreadID: a.ThreadID, Body: fitBody(a.Body, MaxBodyChars)})
			replyActs = append(replyActs, a)
		}
	}
	if len(replies) > 0 {
		for i, r := range tb.ReplyToThreads(ctx, pr.Ref, replies) {
			a := replyActs[i]
			err := r.Err
			if err == nil && r.Comment.ID == "" {
				err = errors.New("the forge returned no comment")
			}
			if err == nil {
				replied[a.ThreadID] = true
				l.report(engine.Event{Kind: "reply", Round: round, Message: "replied to " + a.ThreadID})
			}
			finish(a, err)
		}
	}

	var ids []string
	var resolveActs []Action
	for _, a := range todo {
		if a.Kind != ActResolve {
			continue
		}
		if inRun[a.ThreadID] && !replied[a.ThreadID] {
			// Never resolved without a reply: the next observation shows
			// whether it landed.
			finish(a, fmt.Errorf("not resolved: the reply to %s is not proven posted", a.ThreadID))
			continue
		}
		ids = append(ids, a.ThreadID)
		resolveActs = append(resolveActs, a)
	}
	if len(ids) > 0 {
		for i, err := range tb.ResolveThreads(ctx, pr.Ref, ids) {
			if err == nil {
				l.report(engine.Event{Kind: "resolve", Round: round, Message: "resolved " + ids[i]})
			}
			finish(resolveActs[i], err)
		}
	}
	return b
}
