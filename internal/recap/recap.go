// Package recap is the recap gate's judgment (PR-G2): what a recap shows a
// judge (the PR's original scope, a ledger of every round, the drift
// signals converge computes itself) and the judge's verdict, validated
// against a JSON Schema and read fail-closed. When to recap is the loop's
// (a count from the forge's history); what to do with the verdict too.
package recap

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/convergeloop/converge/internal/agent"
	"github.com/convergeloop/converge/internal/quote"
	"github.com/convergeloop/converge/internal/text"
)

// TaskKind is the agent.Task kind of a recap judge run.
const TaskKind = "recap"

// The verdicts of SPEC PR-G2.
const (
	Continue      = "CONTINUE"
	RevertAndShip = "REVERT-AND-SHIP"
	HandOff       = "HAND-OFF"
)

// Input is what a recap shows: everything the loop did, measured against
// what the PR set out to do.
type Input struct {
	PR    string `json:"pr"`
	Title string `json:"title"`
	Body  string `json:"body"` // clipped to MaxBody
	// BaseDiffLines is the PR's size in added and deleted lines: of the
	// original scope when it was read (ScopeFiles), else at run start.
	BaseDiffLines int `json:"base_diff_lines"`
	// The PR's original scope: base...ScopeHead, where ScopeHead is the
	// PR's head before the loop's first commit (as the forge's commits
	// show it; else the head the run started on). ScopeFiles and BaseDiff
	// are read from the repository when the recap runs; ScopeFiles nil:
	// not read (ScopeError says why), and the signals that need them are
	// not computed.
	BaseRef       string     `json:"base_ref,omitempty"`
	ScopeHead     string     `json:"scope_head,omitempty"`
	ScopeFiles    []FileStat `json:"scope_files,omitempty"`
	BaseDiff      string     `json:"base_diff,omitempty"` // ClipDiff'ed
	ScopeError    string     `json:"scope_error,omitempty"`
	LoopDiffLines int        `json:"loop_diff_lines"` // what the loop's commits added and removed
	RoundCount    int        `json:"round_count"`     // from the forge's history, not memory
	Rounds        []Round    `json:"rounds"`
	Signals       []Signal   `json:"signals"`
}

// FileStat is one file of a diff with its added and deleted lines.
type FileStat struct {
	Path    string `json:"path"`
	Added   int    `json:"added"`
	Deleted int    `json:"deleted"`
}

// Round is one round of the ledger: each finding with its disposition,
// and the change the round's commit made.
type Round struct {
	N      int    `json:"n"`
	Commit string `json:"commit,omitempty"`
	// Change is the round's change in one line: the commit's files and
	// lines, and what it addressed (ChangeLine).
	Change  string   `json:"change"`
	Files   []string `json:"files,omitempty"` // the files the commit changed
	Added   int      `json:"added,omitempty"`
	Deleted int      `json:"deleted,omitempty"`
	// Reworks are earlier rounds whose added lines this round's commit
	// removed or rewrote: the loop undoing its own work.
	Reworks []int `json:"reworks,omitempty"`
	// Reverted: an earlier recap's REVERT-AND-SHIP reverted this round.
	Reverted bool    `json:"reverted,omitempty"`
	Findings []Entry `json:"findings"`
}

// Entry is one finding of a round, with what the loop did about it.
type Entry struct {
	ID          string `json:"id"`
	Source      string `json:"source"`
	Path        string `json:"path,omitempty"`
	Where       string `json:"where"`
	Verdict     string `json:"verdict"`
	Disposition string `json:"disposition"`
	Summary     string `json:"summary"`
}

// Signal is one drift signal converge computed from the ledger.
type Signal struct {
	Kind   string `json:"kind"` // one of the Signal* kinds
	Rounds []int  `json:"rounds,omitempty"`
	Detail string `json:"detail"`
}

// The drift signals of SPEC PR-G2, each computed from the ledger and the
// diffs (Signals).
const (
	SignalOutOfScope      = "out-of-scope"
	SignalOverEngineering = "over-engineering"
	SignalWrongDirection  = "wrong-direction"
	SignalSeparatePR      = "belongs-in-separate-pr"
	SignalScopeGrowth     = "scope-growth"
)

// A HAND-OFF's recommendation (PR-G2: "escalate with the recap and a
// recommendation (separate PR / redesign)").
const (
	RecommendSeparatePR = "separate-pr"
	RecommendRedesign   = "redesign"
)

// Verdict is the judge's decision. Valid is false when no usable answer
// came: then Decision is HAND-OFF, fail-closed (a loop that cannot tell
// whether it drifted stops and hands the PR to a human), and Why says
// what was wrong.
type Verdict struct {
	Decision     string `json:"decision"`
	RevertRounds []int  `json:"revert_rounds,omitempty"`
	// Recommendation is a valid HAND-OFF's advice to the human:
	// RecommendSeparatePR or RecommendRedesign; "" for every other verdict.
	Recommendation string `json:"recommendation,omitempty"`
	Reason         string `json:"reason"`
	Valid          bool   `json:"valid"`
	Why            string `json:"why,omitempty"`
	Agent          string `json:"agent,omitempty"`
	// Usage is what the judge's run reported consuming (PR-M5).
	Usage agent.Usage `json:"usage,omitzero"`
}

// Advice is the recommendation in words, "" when there is none.
func (v Verdict) Advice() string {
	switch v.Recommendation {
	case RecommendSeparatePR:
		return "move the drifted work to a separate PR"
	case RecommendRedesign:
		return "redesign the change before more review rounds"
	}
	return ""
}

// Limits of what a recap quotes of the PR: the body, the base diff in
// all, and any one file's part of it.
const (
	MaxBody     = 8000
	MaxDiff     = 24000
	MaxDiffFile = 6000
)

// ClipDiff is a unified diff cut to at most about max characters: whole
// files first, each file's part cut at maxFile on a line boundary with a
// note of the lines left out, and the files that do not fit named at the
// end. The file list with counts (the recap's ScopeFiles) is never cut.
func ClipDiff(diff string, max, maxFile int) string {
	if len(diff) <= max {
		return diff
	}
	var files []string
	for rest := diff; rest != ""; {
		i := strings.Index(rest[1:], "\ndiff --git ")
		if i < 0 {
			files = append(files, rest)
			break
		}
		files = append(files, rest[:i+2])
		rest = rest[i+2:]
	}
	var b strings.Builder
	var left []string
	for _, f := range files {
		part := f
		if len(part) > maxFile {
			cut := strings.LastIndex(part[:maxFile], "\n") + 1
			part = part[:cut] + fmt.Sprintf("[… %d more lines of this file's diff left out]\n", strings.Count(part[cut:], "\n"))
		}
		if b.Len()+len(part) > max {
			left = append(left, fileOf(f))
			continue
		}
		b.WriteString(part)
	}
	if len(left) > 0 {
		fmt.Fprintf(&b, "[… the diff of %d more file(s) left out: %s]\n", len(left), strings.Join(left, ", "))
	}
	return b.String()
}

// fileOf is the path a file's part of a diff names ("diff --git a/P b/P").
func fileOf(part string) string {
	head, _, _ := strings.Cut(strings.TrimPrefix(part, "diff --git "), "\n")
	if _, b, ok := strings.Cut(head, " b/"); ok {
		return b
	}
	return text.Clip(head, 80)
}

// ChangeLine is a round's change in one line: the commit, its files with
// the lines each added and removed, and what it addressed; or why the
// round made no commit.
func ChangeLine(r Round, perFile []FileStat) string {
	var addressed, other []string
	counts := map[string]int{}
	for _, e := range r.Findings {
		if e.Disposition == "addressed" {
			addressed = append(addressed, text.Clip(text.OneLine(e.Summary), 60))
		} else {
			counts[e.Disposition]++
		}
	}
	for _, d := range slices.Sorted(maps.Keys(counts)) {
		other = append(other, fmt.Sprintf("%d %s", counts[d], d))
	}
	if r.Commit == "" {
		if len(other) == 0 {
			return "no commit"
		}
		return "no commit: " + strings.Join(other, ", ")
	}
	var fs []string
	for _, f := range perFile {
		fs = append(fs, fmt.Sprintf("%s +%d −%d", f.Path, f.Added, f.Deleted))
	}
	line := text.ShortSHA(r.Commit)
	if len(fs) > 0 {
		line += " " + strings.Join(fs, ", ")
	}
	if len(addressed) > 0 {
		line += ": addressed " + strings.Join(addressed, "; ")
	}
	if len(other) > 0 {
		line += " (" + strings.Join(other, ", ") + ")"
	}
	if r.Reverted {
		line += " [reverted by a recap]"
	}
	return text.Clip(line, 300)
}

// Signals computes the five drift signals of PR-G2 from the ledger and
// the diffs, each a fact a judge weighs, not a verdict:
//
//   - out-of-scope: a round's commit changed files outside the PR's
//     original diff;
//   - over-engineering: a round's commit grew the code (added more lines
//     than it removed) to address minor findings only;
//   - wrong-direction: a round has findings where an earlier round's fix
//     already went (the same place), or its commit removed lines an
//     earlier round's commit added: the loop re-fixing or undoing its
//     own work;
//   - belongs-in-separate-pr: findings on files the PR's original diff
//     does not touch: a reviewer asking for work this PR never set out
//     to do;
//   - scope-growth: the loop's commits changed more lines than the PR had,
//     or touched files beyond the PR's original ones numbering at least
//     half of those (the PR's file count climbing).
//
// Rounds a recap reverted count for none. The two that need the PR's
// original files are not computed when those were not read.
func Signals(in Input) []Signal {
	var out []Signal
	scoped := in.ScopeFiles != nil
	inScope := map[string]bool{}
	for _, f := range in.ScopeFiles {
		inScope[f.Path] = true
	}
	live := slices.DeleteFunc(slices.Clone(in.Rounds), func(r Round) bool { return r.Reverted })

	// out-of-scope, and the files that make the PR's file count climb.
	var outRounds []int
	var outWhat []string
	outside := map[string]bool{}
	for _, r := range live {
		var fs []string
		for _, f := range r.Files {
			if scoped && !inScope[f] {
				fs = append(fs, f)
				outside[f] = true
			}
		}
		if len(fs) > 0 {
			outRounds = append(outRounds, r.N)
			outWhat = append(outWhat, fmt.Sprintf("round %d changed %s", r.N, strings.Join(fs, ", ")))
		}
	}
	if len(outRounds) > 0 {
		out = append(out, Signal{Kind: SignalOutOfScope, Rounds: outRounds,
			Detail: strings.Join(outWhat, "; ") + ": files outside the PR's original diff"})
	}

	// over-engineering.
	var overRounds []int
	var overWhat []string
	for _, r := range live {
		minor, other := 0, 0
		for _, e := range r.Findings {
			if e.Disposition != "addressed" {
				continue
			}
			if e.Verdict == "minor" {
				minor++
			} else {
				other++
			}
		}
		if r.Commit != "" && minor > 0 && other == 0 && r.Added > r.Deleted {
			overRounds = append(overRounds, r.N)
			overWhat = append(overWhat, fmt.Sprintf("round %d +%d line(s)", r.N, r.Added-r.Deleted))
		}
	}
	if len(overRounds) > 0 {
		out = append(out, Signal{Kind: SignalOverEngineering, Rounds: overRounds,
			Detail: "the code grew to address minor findings only: " + strings.Join(overWhat, ", ")})
	}

	// wrong-direction, one signal per round that re-fixed or undid.
	type at struct {
		round int
		where string
	}
	var fixed []at
	for _, r := range live {
		var again []int
		for _, e := range r.Findings {
			for _, f := range fixed {
				if f.round < r.N && e.Where != "" && e.Where == f.where && !slices.Contains(again, f.round) {
					again = append(again, f.round)
				}
			}
		}
		var undid []int
		for _, n := range r.Reworks {
			if n < r.N && slices.ContainsFunc(live, func(x Round) bool { return x.N == n }) && !slices.Contains(undid, n) {
				undid = append(undid, n)
			}
		}
		if len(again)+len(undid) > 0 {
			slices.Sort(again)
			slices.Sort(undid)
			var why []string
			if len(again) > 0 {
				why = append(why, "has findings where "+roundsWord(again)+" already fixed")
			}
			if len(undid) > 0 {
				why = append(why, "removed lines "+roundsWord(undid)+" added")
			}
			rounds := slices.Compact(slices.Sorted(slices.Values(append(append(slices.Clone(again), undid...), r.N))))
			out = append(out, Signal{Kind: SignalWrongDirection, Rounds: rounds,
				Detail: fmt.Sprintf("round %d %s", r.N, strings.Join(why, " and "))})
		}
		for _, e := range r.Findings {
			if e.Disposition == "addressed" && e.Where != "" {
				fixed = append(fixed, at{r.N, e.Where})
			}
		}
	}

	// belongs-in-separate-pr.
	if scoped {
		var sepRounds []int
		var sepWhat []string
		for _, r := range live {
			for _, e := range r.Findings {
				if e.Path == "" || inScope[e.Path] {
					continue
				}
				if !slices.Contains(sepRounds, r.N) {
					sepRounds = append(sepRounds, r.N)
				}
				sepWhat = append(sepWhat, fmt.Sprintf("round %d %s (%s)", r.N, e.Where, e.Disposition))
			}
		}
		if len(sepRounds) > 0 {
			out = append(out, Signal{Kind: SignalSeparatePR, Rounds: sepRounds,
				Detail: "findings on files the PR does not change: " + strings.Join(sepWhat, ", ")})
		}
	}

	// scope-growth.
	var growth []string
	if in.BaseDiffLines > 0 && in.LoopDiffLines > in.BaseDiffLines {
		growth = append(growth, fmt.Sprintf("the loop's commits changed %d lines; the PR had %d", in.LoopDiffLines, in.BaseDiffLines))
	}
	if scoped && len(outside) > 0 && 2*len(outside) >= max(len(in.ScopeFiles), 1) {
		growth = append(growth, fmt.Sprintf("the loop's commits touched %d file(s) beyond the PR's %d: %s",
			len(outside), len(in.ScopeFiles), strings.Join(slices.Sorted(maps.Keys(outside)), ", ")))
	}
	if len(growth) > 0 {
		out = append(out, Signal{Kind: SignalScopeGrowth, Detail: strings.Join(growth, "; ")})
	}
	return out
}

// roundsWord names rounds: "round 3", "rounds 1, 2".
func roundsWord(ns []int) string {
	var s []string
	for _, n := range ns {
		s = append(s, fmt.Sprint(n))
	}
	if len(ns) == 1 {
		return "round " + s[0]
	}
	return "rounds " + strings.Join(s, ", ")
}

//go:embed recap.schema.json
var schemaJSON []byte

// Schema is the JSON Schema a recap judge's answer validates against.
func Schema() []byte { return bytes.Clone(schemaJSON) }

var schema = agent.EmbeddedSchema("recap-judge.json", schemaJSON)

// Judge asks an agent for the recap's verdict.
type Judge struct {
	Agent   agent.Agent
	Budget  time.Duration
	Workdir string
	Env     []string
}

// Run shows the judge the recap and reads its verdict. It returns an
// error only when ctx ends; every other failure is a HAND-OFF verdict
// that is not Valid, with Why.
func (j *Judge) Run(ctx context.Context, in Input) (Verdict, error) {
	if j == nil || j.Agent == nil {
		return invalid("", "no recap judge agent is configured (--judge-agent)"), nil
	}
	res, err := j.Agent.Run(ctx, j.task(in))
	if ctx.Err() != nil {
		return invalid(j.Agent.Name(), "stopped: "+ctx.Err().Error()), ctx.Err()
	}
	if err != nil {
		v := invalid(j.Agent.Name(), "the judge could not run: "+err.Error())
		v.Usage = res.Usage.Counted()
		return v, nil
	}
	v := Parse(res.Output, in)
	v.Agent = j.Agent.Name()
	if v.Valid && res.Record.Status != agent.StatusComplete {
		v = invalid(v.Agent, fmt.Sprintf("the run ended %s: %s", res.Record.Status, res.Record.Summary))
	}
	v.Usage = res.Usage.Counted()
	return v, nil
}

func (j *Judge) task(in Input) agent.Task {
	t := agent.Task{Kind: TaskKind, Workdir: j.Workdir, Budget: j.Budget, Env: j.Env, Round: in.RoundCount}
	t.Prompt = Prompt(in)
	return t
}

// Parse reads a judge's answer: the last non-empty line of output, a JSON
// object valid against Schema whose REVERT-AND-SHIP names only rounds of
// the ledger that have a commit. Anything else is not Valid (HAND-OFF).
func Parse(output string, in Input) Verdict {
	lines := strings.Split(strings.TrimSpace(output), "\n")
	last := strings.TrimSpace(lines[len(lines)-1])
	if last == "" {
		return invalid("", "no answer")
	}
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(last))
	if err != nil {
		return invalid("", "the last line is not JSON: "+text.Clip(last, 120))
	}
	if err := schema().Validate(doc); err != nil {
		return invalid("", "the answer does not match the recap schema: "+text.Clip(strings.ReplaceAll(err.Error(), "\n", " "), 300))
	}
	var a struct {
		Recap struct {
			Verdict        string `json:"verdict"`
			RevertRounds   []int  `json:"revert_rounds"`
			Recommendation string `json:"recommendation"`
			Reason         string `json:"reason"`
		} `json:"recap"`
	}
	if err := agent.ExactKeys(doc, a); err != nil {
		return invalid("", "the answer: "+err.Error())
	}
	if err := json.Unmarshal([]byte(last), &a); err != nil {
		return invalid("", "the answer does not decode: "+err.Error())
	}
	v := Verdict{Decision: a.Recap.Verdict, Reason: a.Recap.Reason, Valid: true}
	// The schema says the same; kept here so that a schema edit cannot
	// make a HAND-OFF without advice, or advice on another verdict, valid.
	switch rec := a.Recap.Recommendation; {
	case v.Decision == HandOff && rec != RecommendSeparatePR && rec != RecommendRedesign:
		return invalid("", "HAND-OFF recommends neither a separate PR nor a redesign")
	case v.Decision != HandOff && rec != "":
		return invalid("", v.Decision+" carries a recommendation, which only a HAND-OFF does")
	default:
		v.Recommendation = rec
	}
	switch v.Decision {
	case RevertAndShip:
		if len(a.Recap.RevertRounds) == 0 {
			return invalid("", "REVERT-AND-SHIP names no round to revert")
		}
		for _, n := range a.Recap.RevertRounds {
			i := slices.IndexFunc(in.Rounds, func(r Round) bool { return r.N == n })
			if i < 0 || in.Rounds[i].Commit == "" {
				return invalid("", fmt.Sprintf("REVERT-AND-SHIP names round %d, which has no commit of the loop", n))
			}
		}
		v.RevertRounds = slices.Sorted(slices.Values(a.Recap.RevertRounds))
	default:
		if len(a.Recap.RevertRounds) > 0 {
			return invalid("", v.Decision+" names rounds to revert")
		}
	}
	return v
}

func invalid(agentName, why string) Verdict {
	return Verdict{Decision: HandOff, Reason: "no usable recap verdict: " + why, Why: why, Agent: agentName}
}

// Prompt renders the recap for a model. The PR's title, body and base
// diff, and the ledger (findings, summaries, paths), are data written by
// others: quoted (internal/quote), never instructions.
func Prompt(in Input) string {
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	w("You are the recap gate of a review loop that has run %d rounds on a pull request (SPEC PR-G2).\n", in.RoundCount)
	w("Decide whether the loop still serves the PR's original scope. The yardstick is what the PR set out to do: its title, its body and its base diff (the PR before the loop's first commit). ")
	w("Measure against it the ledger of every round (each finding, its disposition, the round's change in one line) and the drift signals converge computed from the ledger and the diffs:\n")
	w("- %s: a round's commit changed files outside the PR's original diff.\n", SignalOutOfScope)
	w("- %s: a round's commit grew the code to satisfy minor findings only (defensive layers, abstractions, config the PR's goal does not need).\n", SignalOverEngineering)
	w("- %s: a round re-fixed, worked around or undid what an earlier round's fix did (self-revert, oscillation).\n", SignalWrongDirection)
	w("- %s: findings on files the PR does not change: an improvement unrelated to this PR's stated change.\n", SignalSeparatePR)
	w("- %s: the loop's changes outgrew the PR, in lines or in files.\n", SignalScopeGrowth)
	w("The signals are evidence, not verdicts; weigh also what no count shows (a change that does not trace back to the PR's goal). Verdicts:\n")
	w("- CONTINUE: every round traces to the original scope, no drift; the reviews still surface in-scope findings.\n")
	w("- REVERT-AND-SHIP: some rounds drifted (over-engineering, wrong direction, out of scope) but the in-scope fixes are sound; name the drifted rounds to revert (only rounds with a commit).\n")
	w("- HAND-OFF: drift is entangled with in-scope work, the right fix is a redesign, or the work belongs in a separate PR. Give a recommendation: %q (the drifted work is a change of its own: split it out) or %q (the approach needs rethinking: more rounds will not converge).\n", RecommendSeparatePR, RecommendRedesign)
	w("Edit nothing. End your output with one line of JSON: your status record with a \"recap\" member: ")
	w(`{"status":"complete","next_action":"","needs_extension_minutes":0,"summary":"…","files_changed":[],"recap":{"verdict":"CONTINUE|REVERT-AND-SHIP|HAND-OFF","revert_rounds":[…],"recommendation":"separate-pr|redesign","reason":"…"}}`)
	w(" (revert_rounds with REVERT-AND-SHIP only; recommendation with HAND-OFF only).\n")

	ledger := in
	ledger.Title, ledger.Body, ledger.BaseDiff = "", "", ""
	data, _ := json.MarshalIndent(ledger, "", "  ")
	diff := in.BaseDiff
	diffAttrs := quote.Attr("base", in.BaseRef) + quote.Attr("head", in.ScopeHead)
	switch {
	case in.ScopeError != "":
		diff = "(the base diff could not be read: " + in.ScopeError + ")"
	case in.ScopeFiles == nil:
		diff = "(the base diff was not read)"
	}
	nonce := quote.Nonce(in.Title, in.Body, diff, in.BaseRef, in.ScopeHead, string(data))
	w("\nThe PR's original scope and the ledger are quoted below. %s", quote.Rules(nonce))
	w("%s", quote.Block("PR-TITLE", "", nonce, in.Title))
	w("%s", quote.Block("PR-BODY", "", nonce, in.Body))
	w("%s", quote.Block("BASE-DIFF", diffAttrs, nonce, diff))
	w("The ledger, as JSON (scope_files are the PR's original files; rounds with their findings and change; signals):\n")
	w("%s", quote.Block("LEDGER", "", nonce, string(data)))
	return b.String()
}

// Markdown renders a recap and its verdict for the PR and the log: the
// verdict with a HAND-OFF's recommendation, the original scope, the drift
// signals and the ledger, one line per round.
func Markdown(in Input, v Verdict) string {
	var b strings.Builder
	cell := func(s string) string { return strings.ReplaceAll(text.OneLine(s), "|", `\|`) }
	fmt.Fprintf(&b, "### converge recap after %d rounds\n\n", in.RoundCount)
	fmt.Fprintf(&b, "**Verdict: %s**: %s\n\n", v.Decision, text.OneLine(v.Reason))
	switch {
	case v.Advice() != "":
		fmt.Fprintf(&b, "**Recommendation: %s** (`%s`).\n\n", v.Advice(), v.Recommendation)
	case v.Decision == HandOff:
		b.WriteString("**Recommendation: none**: the judge gave no usable verdict; a human decides.\n\n")
	}
	if len(v.RevertRounds) > 0 {
		fmt.Fprintf(&b, "Rounds reverted: %v\n\n", v.RevertRounds)
	}
	fmt.Fprintf(&b, "Original scope: %q", text.Clip(text.OneLine(in.Title), 120))
	if in.ScopeFiles != nil {
		fmt.Fprintf(&b, ", %d file(s), %d changed lines", len(in.ScopeFiles), in.BaseDiffLines)
	} else {
		fmt.Fprintf(&b, ", %d changed lines", in.BaseDiffLines)
	}
	if in.ScopeHead != "" {
		fmt.Fprintf(&b, " (%s...%s)", in.BaseRef, text.ShortSHA(in.ScopeHead))
	}
	fmt.Fprintf(&b, "; the loop's commits changed %d.\n\n", in.LoopDiffLines)
	if len(in.Signals) > 0 {
		b.WriteString("Drift signals:\n")
		for _, s := range in.Signals {
			fmt.Fprintf(&b, "- **%s**: %s\n", s.Kind, text.Clip(text.OneLine(s.Detail), 600))
		}
		b.WriteString("\n")
	} else {
		b.WriteString("Drift signals: none in the ledger and the diffs.\n\n")
	}
	b.WriteString("| round | findings (disposition) | change |\n|---|---|---|\n")
	for _, r := range in.Rounds {
		var fs []string
		for _, e := range r.Findings {
			fs = append(fs, fmt.Sprintf("%s %s %s (%s)", e.Where, e.Verdict, text.Clip(text.OneLine(e.Summary), 60), e.Disposition))
		}
		change := r.Change
		if change == "" {
			change = ChangeLine(r, nil)
		}
		fmt.Fprintf(&b, "| %d | %s | %s |\n", r.N, cell(strings.Join(fs, "; ")), cell(change))
	}
	return b.String()
}
