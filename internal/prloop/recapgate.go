package prloop

import (
	"fmt"
	"slices"
	"strings"

	"github.com/convergeloop/converge/internal/forge"
	"github.com/convergeloop/converge/internal/recap"
	"github.com/convergeloop/converge/internal/review"
	"github.com/convergeloop/converge/internal/text"
)

// RecapRecord is one recap gate held (PR-G2): the count that triggered it
// and the verdict, as shown to the user.
type RecapRecord struct {
	Count   int           `json:"count"`
	Verdict recap.Verdict `json:"verdict"`
	// Reverted is the revert commit of a REVERT-AND-SHIP verdict, once
	// pushed.
	Reverted string `json:"reverted,omitempty"`
}

// RecapResult is what the recap action reports: the input the judge saw
// and its verdict.
type RecapResult struct {
	Count   int           `json:"count"`
	Input   recap.Input   `json:"input"`
	Verdict recap.Verdict `json:"verdict"`
}

// forgeRoundCount is PR-G2's count, read from the forge's history and not
// from memory: the review bot's submitted reviews on the PR, or, where no
// bot reviews (single-iteration mode), the local review summaries converge
// posted. A run that resumed, or started over, counts the same.
func forgeRoundCount(s State, pr *forge.PullRequest, c Config) int {
	n := 0
	if !s.SingleIteration && c.Bot != nil {
		for _, r := range pr.Reviews {
			if isBot(r.Author, c) && r.State != forge.ReviewPending {
				n++
			}
		}
		return n
	}
	heads := map[string]bool{}
	for _, ic := range pr.IssueComments {
		if !selfComment(ic.Author, c) {
			continue
		}
		if head, _, ok := review.ParseSummaryMarker(ic.Body); ok && !heads[head] {
			heads[head] = true
			n++
		}
	}
	return n
}

// recapGate is PR-G2 at the top of a round: every RecapInterval rounds by
// the forge's count, the loop stops and a judge recaps all prior rounds
// before the next one starts. It reports whether the round may start.
func (d *step) recapGate() bool {
	s, c := &d.s, d.c
	if c.RecapInterval <= 0 {
		return true
	}
	count := forgeRoundCount(*s, d.pr, c)
	// Two fix-caused rounds in a row hold the gate early (fixcaused.go).
	if count == 0 || (count%c.RecapInterval != 0 && !d.fixCausedChain()) {
		return true
	}
	i := slices.IndexFunc(s.Recaps, func(r RecapRecord) bool { return r.Count == count })
	if i < 0 {
		if r := d.o.Result; r != nil && r.Recap != nil && r.Recap.Count == count {
			s.Recaps = append(s.Recaps, RecapRecord{Count: count, Verdict: r.Recap.Verdict})
			if s.Round > 0 {
				d.round().Usage.Add(r.Recap.Verdict.Usage)
			}
			i = len(s.Recaps) - 1
			if !recapPosted(d.pr, count, r.Recap.Verdict.Decision, c) {
				d.acts = append(d.acts, Action{Kind: ActComment, Key: fmt.Sprintf("recap-comment/%d", count), Round: s.Round, Reason: recapReason,
					Body: recap.Markdown(r.Recap.Input, r.Recap.Verdict) + "\n" + recapMarker(count)})
			}
		} else {
			in := d.recapInput(count)
			d.acts = append(d.acts, Action{Kind: ActRecap, Key: fmt.Sprintf("recap/%d", count), Round: s.Round, Reason: recapReason, Recap: &in})
			d.wait(fmt.Sprintf("recap gate after %d rounds: awaiting the judge's verdict", count))
			return false
		}
	}
	rec := &s.Recaps[i]
	switch rec.Verdict.Decision {
	case recap.Continue:
		return true
	case recap.RevertAndShip:
		if rec.Reverted != "" {
			return true
		}
		if r := d.o.Result; r != nil && r.Revert != nil {
			res := r.Revert
			if res.CommitSHA == "" || !res.TestsPassed {
				d.end(ReasonHandedOff, fmt.Sprintf("recap after %d rounds: REVERT-AND-SHIP of rounds %v could not ship: the revert %s; a human takes it from here", count, rec.Verdict.RevertRounds, revertWhy(res)), nil)
				return false
			}
			rec.Reverted = res.CommitSHA
			s.RevertedRounds = append(s.RevertedRounds, rec.Verdict.RevertRounds...)
			s.LastLoopSHA, s.PushedAt, s.PushedForgeAt = res.CommitSHA, d.o.Now, d.forgeNow()
			s.LoopDiffLines += res.LinesChanged
			// The reverted head is reviewed like any other: the next round
			// starts once the forge shows it.
			d.again("the revert is pushed; the next round reviews it")
			return false
		}
		var commits []string
		for _, n := range rec.Verdict.RevertRounds {
			for _, r := range s.Rounds {
				if r.N == n && r.CommitSHA != "" {
					commits = append(commits, r.CommitSHA)
				}
			}
		}
		d.acts = append(d.acts, Action{Kind: ActRevert, Key: fmt.Sprintf("revert/%d", count), Round: s.Round, SHA: d.head,
			Reason: fmt.Sprintf("recap after %d rounds: revert rounds %v", count, rec.Verdict.RevertRounds), Reverts: commits, RevertRounds: rec.Verdict.RevertRounds})
		d.wait("reverting the drifted rounds")
		return false
	default: // HAND-OFF, and any verdict that is not usable
		msg := fmt.Sprintf("recap after %d rounds: HAND-OFF: %s", count, text.OneLine(rec.Verdict.Reason))
		if a := rec.Verdict.Advice(); a != "" {
			msg += "; recommendation: " + a
		}
		d.acts = append(d.acts, d.handOffReplies(count, msg)...)
		d.end(ReasonHandedOff, msg, nil)
		return false
	}
}

// handOffReplies answer every open thread that still awaits converge when
// a recap hands the PR off (PR-G2: stop, reply, escalate with the recap):
// each is told it is escalated to a human, and left open. Threads already
// handed off, converge's own, untrusted ones (SEC-1) and resolved ones get
// nothing; a thread that holds this hand-off's reply on the head is not
// answered twice.
func (d *step) handOffReplies(count int, why string) []Action {
	pr := d.pr
	var acts []Action
	for _, v := range classifyThreads(d.s, d.o, d.c) {
		if v.Kind != thFinding || hasMarker(v.T, pr.HeadSHA, DispEscalated, d.c) {
			continue
		}
		rec := ThreadRecord{ThreadID: v.T.ID, Disposition: DispEscalated, HeadSHA: pr.HeadSHA,
			Reason: why + " (the recap is in the pull request's comments)"}
		acts = append(acts, Action{Kind: ActReply, Key: fmt.Sprintf("recap-handoff/%d/%s", count, v.T.ID),
			ThreadID: v.T.ID, Round: d.s.Round, SHA: pr.HeadSHA, Reason: recapReason, Body: replyBody(rec, pr.URL, pr.Author)})
	}
	return acts
}

func revertWhy(res *FixResult) string {
	if res.CommitSHA == "" {
		return "made no commit (the rounds' commits do not revert cleanly)"
	}
	return "fails the tests"
}

// recapReason marks the recap's actions; its comment is posted even when
// its verdict ends the run.
const recapReason = "recap"

// recapPosted reports whether converge's recap after count rounds with
// that decision is already on the PR (a later run on the same PR holds
// the same recap): it is not posted twice. A recap whose verdict changed
// is posted, so the PR shows the verdict that holds.
func recapPosted(pr *forge.PullRequest, count int, decision string, c Config) bool {
	for _, ic := range pr.IssueComments {
		if selfComment(ic.Author, c) && strings.Contains(ic.Body, recapMarker(count)) &&
			strings.Contains(ic.Body, "**Verdict: "+decision+"**") {
			return true
		}
	}
	return false
}

// recapMarker marks the recap comment, so it is posted once per count.
func recapMarker(count int) string {
	return fmt.Sprintf("<!-- converge:recap count=%d -->", count)
}

// recapInput is what the judge sees: the PR's scope, every round's
// findings and dispositions with the change its commit made, and the
// signals the ledger shows. The base diff and the PR's original files are
// read when the recap runs (RecapScoper), and the signals again then.
func (d *step) recapInput(count int) recap.Input {
	s := d.s
	disp := map[string]string{}
	for _, t := range s.Threads {
		disp[fmt.Sprintf("%d/%s", t.Round, t.ThreadID)] = string(t.Disposition)
	}
	in := recap.Input{PR: prName(d.pr), Title: d.pr.Title, Body: text.Clip(d.pr.Body, recap.MaxBody), BaseDiffLines: s.InitialDiffLines,
		LoopDiffLines: s.LoopDiffLines, RoundCount: count, BaseRef: d.pr.BaseRef, ScopeHead: scopeHead(s, d.pr)}
	for i, r := range s.Rounds {
		rd := recap.Round{N: r.N, Commit: r.CommitSHA, Findings: []recap.Entry{}, Reverted: slices.Contains(s.RevertedRounds, r.N)}
		for _, f := range r.Findings {
			where := f.Path
			if f.EndLine > 0 {
				where = fmt.Sprintf("%s:%d", f.Path, f.EndLine)
			}
			key := f.ThreadID
			if key == "" {
				key = f.ID
			}
			dp := disp[fmt.Sprintf("%d/%s", r.N, key)]
			if dp == "" {
				dp = "open"
			}
			rd.Findings = append(rd.Findings, recap.Entry{ID: f.ID, Source: f.Source, Path: f.Path, Where: where, Verdict: string(f.Verdict), Disposition: dp, Summary: FirstLine(f.Summary)})
		}
		var files []recap.FileStat
		if r.CommitSHA != "" {
			files = hunkFiles(r.Hunks)
			for _, f := range files {
				rd.Files = append(rd.Files, f.Path)
				rd.Added += f.Added
				rd.Deleted += f.Deleted
			}
			rd.Reworks = reworks(r, s.Rounds[:i])
		}
		rd.Change = recap.ChangeLine(rd, files)
		in.Rounds = append(in.Rounds, rd)
	}
	in.Signals = recap.Signals(in)
	addFixCaused(&in, s.Rounds)
	return in
}

// scopeHead is the PR's head before the loop's first commit, as the
// forge's commits show it (the first parent of the oldest commit carrying
// the loop's round trailer), so that a run that started over on a PR the
// loop already changed still measures against the PR's own work; without
// a loop commit in sight, the head the run started on.
func scopeHead(s State, pr *forge.PullRequest) string {
	for _, c := range pr.Commits {
		if _, ok := roundTrailer(c.Message); ok && len(c.Parents) > 0 {
			return c.Parents[0]
		}
	}
	return s.InitialHead
}

// hunkFiles sums a commit's hunks per file, in the order they come.
func hunkFiles(hs []Hunk) []recap.FileStat {
	var out []recap.FileStat
	for _, h := range hs {
		i := slices.IndexFunc(out, func(f recap.FileStat) bool { return f.Path == h.Path })
		if i < 0 {
			out = append(out, recap.FileStat{Path: h.Path})
			i = len(out) - 1
		}
		out[i].Added += h.NewCount
		out[i].Deleted += h.OldCount
	}
	return out
}

// minReworkLine is the shortest removed line (without blanks) that
// counts as evidence of undoing an earlier round: a lone "}" or "return
// nil" proves nothing about whose work it was.
const minReworkLine = 12

// reworks are the earlier rounds whose commits added a line, in the same
// file, that r's commit removed: the loop undoing or rewriting its own
// work (PR-G2's wrong direction), read from the diffs.
func reworks(r RoundRecord, earlier []RoundRecord) []int {
	var out []int
	for _, h := range r.Hunks {
		for _, line := range h.Removed {
			line = strings.TrimSpace(line)
			if len(line) < minReworkLine {
				continue
			}
			for _, e := range earlier {
				if e.CommitSHA == "" || slices.Contains(out, e.N) {
					continue
				}
				if slices.ContainsFunc(e.Hunks, func(eh Hunk) bool {
					return eh.Path == h.Path && slices.ContainsFunc(eh.Added, func(a string) bool { return strings.TrimSpace(a) == line })
				}) {
					out = append(out, e.N)
				}
			}
		}
	}
	slices.Sort(out)
	return out
}
