package prloop

import (
	"fmt"
	"strings"

	"github.com/convergeloop/converge/internal/forge"
	"github.com/convergeloop/converge/internal/text"
)

// disposition is the one place a thread's disposition is chosen (PR-S12):
// never hand-judged elsewhere. staleFrom > 0 means converge resolved the
// thread in that round and the resolve never landed. A finding the fix did
// not report on gets no disposition: it stays open and actionable, and the
// next round takes it up again, which is the fail-closed reading of
// silence (and of a push recovered after a crash, whose outcome is unknown).
// held is triage's hand-off of the finding before any fix (a conflict,
// PR-S7, or an oscillation, PR-S8): it wins over what the fix reported.
func disposition(id string, fix *FixResult, staleFrom int, held ...Hold) (disp Disposition, reason string) {
	if staleFrom > 0 {
		return DispStale, fmt.Sprintf("resolved in round %d", staleFrom)
	}
	for _, h := range held {
		switch h.Disposition {
		case DispDeferred, DispEscalated, DispSettled:
			return h.Disposition, h.Reason
		}
	}
	if fix == nil {
		return "", ""
	}
	for _, b := range fix.Blocked {
		if b.ID == id {
			r := strings.TrimSpace(b.Reason)
			if r == "" {
				r = "the fixers could not address it"
			}
			return DispEscalated, r
		}
	}
	for _, a := range fix.Addressed {
		if a == id {
			// What was proven of the fix (PR-V1), for the reply.
			return DispAddressed, fix.Proven[id]
		}
	}
	return "", ""
}

// resolves reports whether a disposition closes its thread; escalated and
// deferred threads stay open for the human (PR-S12).
func resolves(disp Disposition) bool {
	return disp == DispAddressed || disp == DispStale || disp == DispOutdated || disp == DispSettled
}

// replyBody renders a reply: the disposition in words, the signature, and
// the hidden marker last so the next observation can see the reply exists.
func replyBody(rec ThreadRecord, prURL, author string) string {
	var b strings.Builder
	switch rec.Disposition {
	case DispAddressed:
		fmt.Fprintf(&b, "Addressed in %s%s.", commitLink(prURL, rec.HeadSHA), provenWords(rec.Reason))
	case DispStale:
		fmt.Fprintf(&b, "Stale: converge already addressed this and %s; resolving it again.", defang(rec.Reason))
	case DispDeferred:
		fmt.Fprintf(&b, "Deferred to a human: %s. Leaving this thread open.", defang(rec.Reason))
	case DispEscalated:
		fmt.Fprintf(&b, "Escalated to a human: %s. Leaving this thread open.", defang(rec.Reason))
	case DispSettled:
		// Answered from an earlier decision (memory.go): the reason is
		// the whole answer, quoting it.
		fmt.Fprintf(&b, "%s.", defang(rec.Reason))
	case DispOutdated:
		fmt.Fprintf(&b, "Outdated: the lines this thread was written on have changed since, and converge reached two-stable on %s; resolving it.", commitLink(prURL, rec.HeadSHA))
	}
	b.WriteString("\n\n— converge")
	if author != "" {
		fmt.Fprintf(&b, ", on behalf of @%s", author)
	}
	b.WriteString("\n\n")
	b.WriteString(Marker(rec.ThreadID, rec.HeadSHA, rec.Disposition))
	return b.String()
}

// provenWords is what converge proved of an addressed finding's fix
// (PR-V1), as the reply quotes it: ": summary.go lines 18-21 changed
// (…)", or nothing when the record has none (a fix recovered after a
// crash, whose proof was not recorded).
func provenWords(proven string) string {
	proven = strings.TrimSpace(proven)
	if proven == "" {
		return ""
	}
	return ": proven by the change, " + defang(text.Clip(text.OneLine(proven), 500))
}

// commitLink links the fixing commit to the change in the PR, where its
// forge shows a PR's commit (forge.PRRef.CommitURL). Without a URL a bare
// SHA still autolinks.
func commitLink(prURL, sha string) string {
	if prURL == "" {
		return sha
	}
	link := strings.TrimSuffix(prURL, "/") + "/commits/" + sha
	if ref, err := forge.ParsePRURL(prURL); err == nil {
		link = ref.CommitURL(sha)
	}
	return fmt.Sprintf("[%s](%s)", text.ShortSHA(sha), link)
}

// abbrev is text.ShortSHA for decide.go, until it calls that itself;
// remove it with its last caller.
