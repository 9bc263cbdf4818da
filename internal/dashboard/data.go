package dashboard

import (
	"cmp"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/convergeloop/converge/internal/agent"
	"github.com/convergeloop/converge/internal/checkloop"
	"github.com/convergeloop/converge/internal/exitcode"
	"github.com/convergeloop/converge/internal/plan"
	"github.com/convergeloop/converge/internal/prloop"
	"github.com/convergeloop/converge/internal/store"
)

// RunSummary is one row of the runs list.
type RunSummary struct {
	ID     string `json:"id"`
	Kind   string `json:"kind"`
	Target string `json:"target"`
	// URL is Target when it is an http(s) address the page may link to.
	URL string `json:"url,omitempty"`
	// State is "running" or "ended".
	State string `json:"state"`
	// Terminal is the terminal reason of an ended run ("two-stable",
	// "errored", ...); Message its words, ExitCode its IF-1 code.
	Terminal string         `json:"terminal,omitempty"`
	ExitCode *exitcode.Code `json:"exit_code,omitempty"`
	Message  string         `json:"message,omitempty"`
	Rounds   int            `json:"rounds"`
	Started  time.Time      `json:"started_at"`
	Updated  time.Time      `json:"updated_at"`
	Ended    time.Time      `json:"ended_at,omitzero"`
	// Cost is the agents' reported spend: CostUSD only when some agent
	// reported a price; Coverage says whether all of them did.
	CostUSD  *float64 `json:"cost_usd,omitempty"`
	Coverage string   `json:"cost_coverage,omitempty"`
	Tokens   int64    `json:"tokens"`
}

// RoundPoint is one round of the timeline chart.
type RoundPoint struct {
	N          int            `json:"n"`
	HeadSHA    string         `json:"head_sha"`
	CommitSHA  string         `json:"commit_sha,omitempty"`
	Started    time.Time      `json:"started_at"`
	Structural bool           `json:"structural"`
	ByVerdict  map[string]int `json:"by_verdict"`
	BySource   map[string]int `json:"by_source"`
	// ThreadsOpen are the review threads the round found open (its
	// findings' threads); ThreadsResolved those converge resolved in it.
	ThreadsOpen     int `json:"threads_open"`
	ThreadsResolved int `json:"threads_resolved"`
	// DiffLines are the lines the round's commit changed; CumDiffLines
	// the loop's total so far, the figure PR-T6 bounds.
	DiffLines    int     `json:"diff_lines"`
	CumDiffLines int     `json:"cum_diff_lines"`
	CostUSD      float64 `json:"cost_usd"`
	CumCostUSD   float64 `json:"cum_cost_usd"`
}

// Thread is one row of the thread table: a finding as the run last saw
// it, with what converge did about it.
type Thread struct {
	ID          string   `json:"id"`
	ThreadID    string   `json:"thread_id,omitempty"`
	Round       int      `json:"round"`
	Path        string   `json:"path,omitempty"`
	Line        int      `json:"line,omitempty"`
	Source      string   `json:"source"`
	Author      string   `json:"author,omitempty"`
	Verdict     string   `json:"verdict"`
	Disposition string   `json:"disposition"`
	Reason      string   `json:"reason,omitempty"`
	Resolved    bool     `json:"resolved"`
	Summary     string   `json:"summary"`
	Actions     []string `json:"actions,omitempty"` // "reply done", "resolve done"
	URL         string   `json:"url,omitempty"`
}

// Decision is one entry of the decision log.
type Decision struct {
	Time    time.Time `json:"time"`
	Kind    string    `json:"kind"`
	Round   int       `json:"round,omitempty"`
	Message string    `json:"message"`
}

// RunDetail is everything the run page shows.
type RunDetail struct {
	Run    RunSummary   `json:"run"`
	Rounds []RoundPoint `json:"rounds"`
	// DiffLimit is the line PR-T6 draws: the PR's lines at start times
	// the multiplier (3 by default); 0 when the start is unknown.
	DiffLimit  int             `json:"diff_limit"`
	Threads    []Thread        `json:"threads"`
	Decisions  []Decision      `json:"decisions"`
	Proof      json.RawMessage `json:"proof,omitempty"`
	ProofEmpty string          `json:"proof_empty,omitempty"`
}

// diffMultiplier is PR-T6's default bound on the loop's diff growth; the
// run's own configuration is not stored, so the chart draws the default.
var diffMultiplier = prloop.DefaultConfig().DiffMultiplier

// quietEvents are progress, not decisions: the decision log leaves them
// out, as `converge log` does.
var quietEvents = map[string]bool{"wait": true, "observe": true, "start": true}

func listRuns(ctx context.Context, src Source) ([]RunSummary, error) {
	runs, err := src.ListRuns(ctx, store.ListOptions{})
	if err != nil {
		return nil, err
	}
	counts, err := roundCounts(ctx, src, runs)
	if err != nil {
		return nil, err
	}
	out := make([]RunSummary, 0, len(runs))
	for _, r := range runs {
		out = append(out, summarize(r, counts[r.ID]))
	}
	return out, nil
}

// reporter is a Source that lends its SQL handle for read-only reporting
// (store.Store.DB): the runs list and the stream's poll then read what
// they need in one or two queries, not a query per run and every run's
// state twice a second.
type reporter interface{ DB() *sql.DB }

// roundCounts are the rounds recorded per run.
func roundCounts(ctx context.Context, src Source, runs []store.Run) (map[string]int, error) {
	out := map[string]int{}
	if rp, ok := src.(reporter); ok {
		rows, err := rp.DB().QueryContext(ctx, `SELECT run_id, count(*) FROM rounds GROUP BY run_id`)
		if err != nil {
			return nil, fmt.Errorf("count rounds: %w", err)
		}
		defer rows.Close()
		for rows.Next() {
			var id string
			var n int
			if err := rows.Scan(&id, &n); err != nil {
				return nil, fmt.Errorf("count rounds: %w", err)
			}
			out[id] = n
		}
		return out, rows.Err()
	}
	for _, r := range runs {
		rounds, err := src.Rounds(ctx, r.ID)
		if err != nil {
			return nil, err
		}
		out[r.ID] = len(rounds)
	}
	return out, nil
}

func summarize(r store.Run, rounds int) RunSummary {
	s := RunSummary{ID: r.ID, Kind: r.Kind, Target: r.Target, URL: webURL(r.Target), State: "running",
		Rounds: rounds, Started: r.StartedAt, Updated: r.UpdatedAt}
	if r.Finished() {
		code := r.ExitCode
		s.State, s.Terminal, s.ExitCode, s.Ended = "ended", r.Status, &code, r.EndedAt
	}
	var st struct {
		Round    int `json:"round"`
		Terminal *struct {
			Message string `json:"message"`
		} `json:"terminal"`
	}
	if json.Unmarshal(r.State, &st) == nil {
		if st.Terminal != nil {
			s.Message = st.Terminal.Message
		}
		// A loop or plan run keeps no round rows: its state counts.
		s.Rounds = max(s.Rounds, st.Round)
	}
	if sp, ok := spendOf(r); ok {
		s.CostUSD, s.Coverage, s.Tokens = sp.CostUSD, sp.Cost, sp.TotalTokens
	}
	return s
}

// spendOf is the run's reported agent spend, read from its state as
// `converge proof` reads it.
func spendOf(r store.Run) (agent.Spend, bool) {
	if len(r.State) == 0 {
		return agent.Spend{}, false
	}
	switch {
	case r.Kind == checkloop.Kind:
		var st checkloop.State
		if json.Unmarshal(r.State, &st) != nil {
			return agent.Spend{}, false
		}
		return checkloop.BuildResult(st, r.UpdatedAt).Usage, true
	case r.Kind == plan.Kind:
		var st plan.State
		if json.Unmarshal(r.State, &st) != nil {
			return agent.Spend{}, false
		}
		return plan.BuildResult(st, r.UpdatedAt).Usage, true
	case strings.HasPrefix(r.Kind, "pr"):
		var st prloop.State
		if json.Unmarshal(r.State, &st) != nil {
			return agent.Spend{}, false
		}
		rep := prloop.UsageOf(st)
		if t := st.Terminal; t != nil && t.Usage != nil {
			rep = t.Usage
		}
		if rep == nil {
			return agent.Spend{}, false
		}
		return rep.Total, true
	}
	return agent.Spend{}, false
}

func runDetail(ctx context.Context, src Source, id string) (RunDetail, error) {
	r, err := src.GetRun(ctx, id)
	if err != nil {
		return RunDetail{}, err
	}
	rounds, err := src.Rounds(ctx, id)
	if err != nil {
		return RunDetail{}, err
	}
	findings, err := src.Findings(ctx, id)
	if err != nil {
		return RunDetail{}, err
	}
	events, err := src.Events(ctx, id)
	if err != nil {
		return RunDetail{}, err
	}
	actions, err := src.Actions(ctx, id)
	if err != nil {
		return RunDetail{}, err
	}
	var st prloop.State
	if strings.HasPrefix(r.Kind, "pr") && len(r.State) > 0 {
		_ = json.Unmarshal(r.State, &st) // a state it cannot read shows the store's rows only
	}
	d := RunDetail{Run: summarize(r, len(rounds)), Rounds: []RoundPoint{}, Threads: []Thread{}, Decisions: []Decision{}, Proof: r.Proof}
	if st.InitialDiffLines > 0 {
		d.DiffLimit = int(diffMultiplier * float64(st.InitialDiffLines))
	}
	d.Rounds = points(rounds, findings, st)
	d.Threads = threads(r, findings, actions, st)
	for _, e := range events {
		if quietEvents[e.Kind] {
			continue
		}
		d.Decisions = append(d.Decisions, Decision{Time: e.Time, Kind: e.Kind, Round: e.Round, Message: strings.TrimSpace(e.Message)})
	}
	if len(r.Proof) == 0 {
		d.ProofEmpty = "no proof: only a two-stable finish has one"
		if !r.Finished() {
			d.ProofEmpty = "no proof yet: the run goes on"
		}
	}
	return d, nil
}

// points are the rounds as the chart plots them.
func points(rounds []store.Round, findings []store.Finding, st prloop.State) []RoundPoint {
	resolved := map[int]int{}
	for _, t := range st.Threads {
		if t.Resolved {
			resolved[t.Round]++
		}
	}
	out := make([]RoundPoint, 0, len(rounds))
	cumDiff, cumCost := 0, 0.0
	for _, rd := range rounds {
		var rr prloop.RoundRecord
		_ = json.Unmarshal(rd.Summary, &rr)
		p := RoundPoint{N: rd.N, HeadSHA: rd.HeadSHA, CommitSHA: rd.CommitSHA, Started: rd.StartedAt, Structural: rd.Structural,
			ByVerdict: map[string]int{}, BySource: map[string]int{}, ThreadsResolved: resolved[rd.N]}
		open := map[string]bool{}
		for _, f := range findings {
			if f.Round != rd.N {
				continue
			}
			p.ByVerdict[cmp.Or(f.Verdict, "unclassified")]++
			p.BySource[cmp.Or(f.Source, "unknown")]++
			if f.ThreadID != "" {
				open[f.ThreadID] = true
			}
		}
		p.ThreadsOpen = len(open)
		// The hunks are read with --unified=0: their counts are the
		// lines the commit added and removed.
		for _, h := range rr.Hunks {
			p.DiffLines += h.OldCount + h.NewCount
		}
		cumDiff += p.DiffLines
		p.CumDiffLines = cumDiff
		if rr.Usage.CostReported {
			p.CostUSD = rr.Usage.CostUSD
		}
		cumCost += p.CostUSD
		p.CumCostUSD = cumCost
		out = append(out, p)
	}
	return out
}

// threads are the run's findings, each as the last round that saw it
// left it, with converge's disposition and actions on it.
func threads(r store.Run, findings []store.Finding, actions []store.Action, st prloop.State) []Thread {
	recs := map[string]prloop.ThreadRecord{}
	for _, t := range st.Threads {
		recs[t.ThreadID] = t // later records win: the latest round's
	}
	acts := map[string][]string{}
	for _, a := range actions {
		if a.Target != "" {
			acts[a.Target] = append(acts[a.Target], a.Kind+" "+a.Status)
		}
	}
	var order []string
	last := map[string]store.Finding{}
	for _, f := range findings {
		if _, seen := last[f.ID]; !seen {
			order = append(order, f.ID)
		}
		last[f.ID] = f
	}
	base := webURL(r.Target)
	out := make([]Thread, 0, len(order))
	for _, id := range order {
		f := last[id]
		key := cmp.Or(f.ThreadID, f.ID)
		t := Thread{ID: f.ID, ThreadID: f.ThreadID, Round: f.Round, Path: f.Path, Line: f.EndLine, Source: f.Source,
			Author: f.Author, Verdict: f.Verdict, Disposition: cmp.Or(f.Disposition, "open"), Summary: prloop.FirstLine(f.Summary),
			Actions: slices.Clone(acts[key])}
		if rec, ok := recs[key]; ok {
			t.Reason, t.Resolved = rec.Reason, rec.Resolved || rec.ObservedResolved
			if f.Disposition == "" && rec.Disposition != "" {
				t.Disposition = string(rec.Disposition)
			}
		}
		if base != "" {
			t.URL = base
			if f.ThreadID != "" {
				t.URL = base + "/files" // review threads are read beside the diff
			}
		}
		out = append(out, t)
	}
	return out
}

// webURL is target when it is an absolute http(s) URL: nothing else is
// ever made a link (a javascript: target stays text).
func webURL(target string) string {
	u, err := url.Parse(target)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return ""
	}
	return strings.TrimRight(u.String(), "/")
}

// version fingerprints what a page shows: every run's id, status and
// update time, and with run set that run's rounds, findings, decisions
// and actions. A round or finding written without a state save (so
// without a new update time) changes it too.
func version(ctx context.Context, src Source, run string) (string, error) {
	h := sha256.New()
	if err := listVersion(ctx, src, h); err != nil {
		return "", err
	}
	if run != "" {
		d, err := runDetail(ctx, src, run)
		if err != nil && !isNotFound(err) {
			return "", err
		}
		_ = json.NewEncoder(h).Encode(d)
	}
	return hex.EncodeToString(h.Sum(nil)[:12]), nil
}

func isNotFound(err error) bool { return errors.Is(err, store.ErrNotFound) }

// listVersion writes what the runs list shows of each run into h: its
// id, status, update time, proof and count of rounds.
func listVersion(ctx context.Context, src Source, h io.Writer) error {
	if rp, ok := src.(reporter); ok {
		rows, err := rp.DB().QueryContext(ctx, `SELECT r.id, r.status, r.updated_at, length(r.proof),
			(SELECT count(*) FROM rounds WHERE run_id = r.id) FROM runs r ORDER BY r.rowid`)
		if err != nil {
			return fmt.Errorf("read runs: %w", err)
		}
		defer rows.Close()
		for rows.Next() {
			var id, status string
			var updated sql.NullString
			var proof sql.NullInt64
			var rounds int
			if err := rows.Scan(&id, &status, &updated, &proof, &rounds); err != nil {
				return fmt.Errorf("read runs: %w", err)
			}
			fmt.Fprintf(h, "%s\x00%s\x00%s\x00%d\x00%d\n", id, status, updated.String, proof.Int64, rounds)
		}
		return rows.Err()
	}
	runs, err := src.ListRuns(ctx, store.ListOptions{})
	if err != nil {
		return err
	}
	counts, err := roundCounts(ctx, src, runs)
	if err != nil {
		return err
	}
	for _, r := range runs {
		fmt.Fprintf(h, "%s\x00%s\x00%s\x00%d\x00%d\n", r.ID, r.Status, r.UpdatedAt.Format(time.RFC3339Nano), len(r.Proof), counts[r.ID])
	}
	return nil
}
