package prloop

import (
	"fmt"
	"slices"

	"github.com/convergeloop/converge/internal/forge"
)

// Disposal is what a --dispose-only run did (PR-M2): the threads it
// replied to, the threads it resolved, and the open threads it left as
// they were, with why.
type Disposal struct {
	Replied  []string          `json:"replied"`
	Resolved []string          `json:"resolved"`
	Skipped  []string          `json:"skipped"`
	Why      map[string]string `json:"why,omitempty"` // skipped thread → reason
}

// Dispose is PR-M2 as a pure function: every open thread gets its
// disposition from the same rules a round uses (PR-S12), is replied to
// once and, when the disposition resolves it, resolved; nothing is fixed.
// A thread whose fix a loop commit carries is addressed; one converge
// resolved before is stale; one converge replied to but did not resolve
// is resolved under that reply; any other trusted open thread is deferred
// to a human and stays open. Hand-offs and untrusted threads are skipped.
func Dispose(s State, o Observation, c Config) (Disposal, []Action) {
	c = c.observed(o)
	out := Disposal{Replied: []string{}, Resolved: []string{}, Skipped: []string{}, Why: map[string]string{}}
	if o.PR == nil {
		return out, nil
	}
	inGit := addressedInGit(o.PR)
	var acts []Action
	reply := func(t ThreadRecord) {
		if !hasMarker(threadByID(o, t.ThreadID), t.HeadSHA, t.Disposition, c) {
			acts = append(acts, Action{
				Kind: ActReply, Key: fmt.Sprintf("dispose/reply/%s/%s", t.ThreadID, t.Disposition),
				ThreadID: t.ThreadID, SHA: t.HeadSHA, Reason: string(t.Disposition),
				Body: replyBody(t, o.PR.URL, o.PR.Author),
			})
			out.Replied = append(out.Replied, t.ThreadID)
		}
		if resolves(t.Disposition) {
			acts = append(acts, Action{Kind: ActResolve, Key: "dispose/resolve/" + t.ThreadID, ThreadID: t.ThreadID})
			out.Resolved = append(out.Resolved, t.ThreadID)
		}
	}
	skip := func(id, why string) {
		out.Skipped = append(out.Skipped, id)
		out.Why[id] = why
	}
	for _, v := range classifyThreads(s, o, c) {
		id := v.T.ID
		switch v.Kind {
		case thResolved, thOwn:
		case thUntrusted:
			skip(id, "its author is not trusted (SEC-1)")
		case thEscalated, thDeferred:
			skip(id, "already handed to a human; no one spoke since")
		case thDropped:
			skip(id, "resolved as addressed by a commit no longer on the branch; a loop run reopens it")
		case thStale:
			disp, reason := disposition(id, nil, v.StaleFrom)
			reply(ThreadRecord{ThreadID: id, Disposition: disp, HeadSHA: s.LastLoopSHA, Reason: reason})
		case thPendingResolve:
			reply(ThreadRecord{ThreadID: id, Disposition: v.Marker.Disposition, HeadSHA: v.Marker.Head})
		case thFinding:
			if v.T.IsResolved {
				// PR-V6: it stays as the reviewer left it; only a loop
				// run, which can fix, takes the new comment up.
				skip(id, "resolved, but a trusted reviewer commented after converge's reply; a loop run takes it up")
				continue
			}
			if sha, ok := inGit[id]; ok {
				reply(ThreadRecord{ThreadID: id, Disposition: DispAddressed, HeadSHA: sha})
				continue
			}
			reply(ThreadRecord{ThreadID: id, Disposition: DispDeferred, HeadSHA: o.PR.HeadSHA,
				Reason: "not addressed by any converge commit on the branch (a dispose-only run fixes nothing)"})
		}
	}
	slices.Sort(out.Skipped)
	if len(out.Why) == 0 {
		// None is nil, as the terminal reads back from JSON (the
		// Temporal engine's Decide sees only the JSON copy).
		out.Why = nil
	}
	return out, acts
}

func threadByID(o Observation, id string) forge.Thread {
	for _, t := range o.PR.Threads {
		if t.ID == id {
			return t
		}
	}
	return forge.Thread{}
}
