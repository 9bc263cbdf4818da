package prloop

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/convergeloop/converge/internal/engine"
	"github.com/convergeloop/converge/internal/store"
)

// TestPR_M5_LedgerRecordsTheDispositionOfThreadlessFindings: a local
// review finding, which has no thread, is in the round's ledger with the
// disposition the round gave it, as a thread's finding is. Before, it was
// always recorded without one ("open" in the decision log), fixed or not.
func TestPR_M5_LedgerRecordsTheDispositionOfThreadlessFindings(t *testing.T) {
	ctx := context.Background()
	db, err := store.Open(ctx, filepath.Join(t.TempDir(), "converge.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	claim, err := engine.ClaimRun(ctx, db, "pr", "github.com/o/r#1", false, Resumable)
	if err != nil {
		t.Fatal(err)
	}
	defer claim.Release(ctx)

	local := Finding{ID: "local:edge-cases:a.go:3-3:0123456789ab", Path: "a.go", EndLine: 3, Summary: "off by one", Verdict: VerdictStructural, Source: "local"}
	fromThread := Finding{ID: "T1", ThreadID: "T1", Path: "a.go", EndLine: 9, Summary: "leaks", Verdict: VerdictStructural, Source: "copilot"}
	s := started("h1")
	s.Round = 1
	s.Rounds = []RoundRecord{{N: 1, HeadSHA: "h1", Findings: []Finding{local, fromThread}}}
	s.Threads = []ThreadRecord{
		{ThreadID: local.ID, Round: 1, Disposition: DispAddressed, HeadSHA: "h2"},
		{ThreadID: "T1", Round: 1, Disposition: DispDeferred, HeadSHA: "h2"},
	}
	if err := StoreJournal(db, claim.RunID).SaveState(ctx, s); err != nil {
		t.Fatal(err)
	}
	fs, err := db.Findings(ctx, claim.RunID)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, f := range fs {
		got[f.ID] = f.Disposition
	}
	if got[local.ID] != string(DispAddressed) || got["T1"] != string(DispDeferred) || len(got) != 2 {
		t.Errorf("ledger dispositions %v, want %s addressed and T1 deferred", got, local.ID)
	}
}
