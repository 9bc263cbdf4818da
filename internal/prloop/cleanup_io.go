package prloop

import (
	"context"
	"fmt"

	"github.com/convergeloop/converge/internal/engine"
	"github.com/convergeloop/converge/internal/forge"
)

// cleanupActions is PR-S13, once the run is two-stable: an outdated thread
// still open is replied to and resolved, once.
//
// Which threads: every trusted thread was answered in the rounds (PR-S12;
// conjunct 3 of two-stable proves none is left awaiting a reply), and a
// hand-off keeps the run from success (PR-T11). What can still be open at
// success is a thread no round acts on: converge's own, opened under its
// identity (the author's self-review when converge runs with the author's
// token), and an untrusted one, which SEC-1 and PR-T1(3) leave untouched.
// So the cleanup resolves converge's own outdated threads, and nothing
// that a human may still be waiting on.
//
// The reply rules of PR-S12 hold: never resolved without a reply, replied
// to once. A thread that holds converge's cleanup reply on the current
// head only lacks the resolve (a crash between the two); one that holds it
// on an earlier head and is open again was reopened by a human, and stays
// open.
func cleanupActions(s State, o Observation, c Config) []Action {
	pr := o.PR
	if pr == nil {
		return nil
	}
	var acts []Action
	for _, v := range classifyThreads(s, o, c) {
		t := v.T
		if v.Kind != thOwn || !t.IsOutdated || t.IsResolved {
			continue
		}
		a := Action{Kind: ActCleanup, Key: "cleanup/" + t.ID, ThreadID: t.ID, SHA: pr.HeadSHA, Round: s.Round, Reason: string(DispOutdated)}
		switch {
		case hasMarker(t, pr.HeadSHA, DispOutdated, c):
			// Replied, never resolved: resolve under that reply.
		case repliedAs(t, DispOutdated, c):
			continue
		default:
			a.Body = replyBody(ThreadRecord{ThreadID: t.ID, Disposition: DispOutdated, HeadSHA: pr.HeadSHA}, pr.URL, pr.Author)
		}
		acts = append(acts, a)
	}
	return acts
}

// cleanup performs one ActCleanup: the reply (unless the forge already
// shows it), then the resolve, never the resolve without the reply. The
// run is already proven; a cleanup the forge refuses is logged and never
// turns that success into an error. The next run on the PR tries again.
func (l *Loop) cleanup(ctx context.Context, pr *forge.PullRequest, round int, a Action) (outcome string, detail any) {
	if a.Body != "" {
		if _, err := l.Forge.ReplyToThread(ctx, pr.Ref, a.ThreadID, fitBody(a.Body, MaxBodyChars)); err != nil {
			l.report(engine.Event{Kind: "note", Round: round, Message: fmt.Sprintf("cleanup: could not reply to outdated thread %s: %v", a.ThreadID, err)})
			return "failed", err.Error()
		}
	}
	if err := l.Forge.ResolveThread(ctx, pr.Ref, a.ThreadID); err != nil {
		l.report(engine.Event{Kind: "note", Round: round, Message: fmt.Sprintf("cleanup: could not resolve outdated thread %s: %v", a.ThreadID, err)})
		return "failed", err.Error()
	}
	l.report(engine.Event{Kind: "resolve", Round: round, Message: "cleanup: replied to and resolved outdated thread " + a.ThreadID})
	return "ok", nil
}
