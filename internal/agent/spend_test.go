package agent

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// priced answers each run with the next usage; a run past its list fails
// without a record.
type priced struct{ usage []Usage }

func (p *priced) Name() string { return "priced" }

func (p *priced) Run(_ context.Context, t Task) (Result, error) {
	u := p.usage[0]
	p.usage = p.usage[1:]
	if len(p.usage) > 0 && t.Kind == "fail-first" {
		return Result{Usage: u}, errors.New("crashed")
	}
	rec := StatusRecord{Status: StatusComplete, Summary: "ok", FilesChanged: []string{}}
	return Result{Record: rec, Usage: u}, nil
}

// TestAG_B1_UsageCountsRunsAndWhetherEveryOneReportedItsPrice: a sum of
// runs knows how many runs it holds and how many reported a price, so a
// cost is "reported" only when every run reported one, "partial" when
// some did, and "not reported" (never $0) when none did; a sum added
// again is not counted twice; a Runner's failed attempts are paid for.
func TestAG_B1_UsageCountsRunsAndWhetherEveryOneReportedItsPrice(t *testing.T) {
	claude := Usage{InputTokens: 100, CacheReadTokens: 50, OutputTokens: 10, CostUSD: 0.01, CostReported: true}
	codex := Usage{InputTokens: 200, OutputTokens: 20} // tokens, no price
	var none Usage
	none.AddRun(Usage{})
	none.AddRun(codex)
	if none.Coverage() != CostNotReported || none.Spend().CostUSD != nil || strings.Contains(none.String(), "$") {
		t.Errorf("no run priced itself: %s, %+v", none, none.Spend())
	}
	var all Usage
	all.AddRun(claude)
	all.AddRun(claude)
	if all.Coverage() != CostKnown || all.Runs != 2 || all.PricedRuns != 2 || *all.Spend().CostUSD != 0.02 {
		t.Errorf("every run priced itself: %s", all)
	}
	var part Usage
	part.AddRun(claude)
	part.AddRun(codex)
	if part.Coverage() != CostPartial || !strings.Contains(part.String(), "1 of 2") {
		t.Errorf("one of two priced itself: %s", part)
	}
	var total Usage
	total.AddRun(part) // a sum: its runs are counted already
	total.Add(all)
	if total.Runs != 4 || total.PricedRuns != 3 || total.Coverage() != CostPartial || total.TotalTokens() != 3*160+220 {
		t.Errorf("sum of sums: %+v", total)
	}
	if got := (Usage{}).String(); !strings.Contains(got, "not reported") {
		t.Errorf("empty usage: %q", got)
	}

	// Runner.Run: the attempt that could not run is paid for too, and a
	// run that fails twice still brings its usage back.
	p := &priced{usage: []Usage{codex, claude}}
	res, err := Runner{Agent: p}.Run(context.Background(), Task{Kind: "fail-first"})
	if err != nil || res.Usage.Runs != 2 || res.Usage.PricedRuns != 1 || res.Usage.OutputTokens != 30 {
		t.Fatalf("retried run: usage %+v err %v", res.Usage, err)
	}
	f := &failing{u: claude}
	res, err = Runner{Agent: f}.Run(context.Background(), Task{})
	var rf *RunFailure
	if !errors.As(err, &rf) || res.Usage.Runs != 2 || res.Usage.CostUSD != 0.02 {
		t.Fatalf("failed run: usage %+v err %v, want both attempts' usage with the failure", res.Usage, err)
	}
}

type failing struct{ u Usage }

func (f *failing) Name() string { return "failing" }

func (f *failing) Run(context.Context, Task) (Result, error) {
	return Result{Usage: f.u}, errors.New("crashed")
}
