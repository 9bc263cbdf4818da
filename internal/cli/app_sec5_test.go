package cli

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/convergeloop/converge/internal/config"
	"github.com/convergeloop/converge/internal/engine"
	"github.com/convergeloop/converge/internal/forge"
	ghclient "github.com/convergeloop/converge/internal/forge/github"
	"github.com/convergeloop/converge/internal/repo"
	"github.com/convergeloop/converge/internal/secure"
	"github.com/convergeloop/converge/internal/store"
)

// TestSEC_5_RenewedAppTokenIsRedacted: a GitHub App's installation token
// minted after start (the first one refused mid-run, a new one minted
// after the 401) joins the redaction as it is minted: a log line and a
// state write holding it, as the token or as git's header credential,
// reach the store, and the terminal's stored log, redacted; so does the
// first token.
func TestSEC_5_RenewedAppTokenIsRedacted(t *testing.T) {
	hub, demo := startHub(t, 100*time.Millisecond)
	ctx := context.Background()
	reg, err := hub.CreateApp("converge-app")
	if err != nil {
		t.Fatal(err)
	}
	ref, err := forge.ParsePRURL(demo.PRURL)
	if err != nil {
		t.Fatal(err)
	}
	ios, _, _ := testIO(nil)
	ss, err := config.Resolve(config.PRFields(), config.Inputs{Getenv: ios.Getenv})
	if err != nil {
		t.Fatal(err)
	}
	opts := &prOptions{CAFile: hub.CAFile()}
	opts.App = appOptions{ID: strconv.FormatInt(reg.ID, 10), KeyFile: reg.KeyFile}
	webHost, err := ghclient.WebHost(hub.APIURL())
	if err != nil {
		t.Fatal(err)
	}
	minted := &secure.Secrets{}
	forges, creds, err := prAuth(ctx, ios, opts, hub.APIURL(), hub.GraphQLURL(), webHost, []forge.PRRef{ref}, config.ValuesOf(ss), minted)
	if err != nil {
		t.Fatal(err)
	}
	first := hub.AppTokens()
	if len(first) != 1 {
		t.Fatalf("%d tokens minted at start, want 1", len(first))
	}
	// The hub ends the first token; the next request mints a new one.
	hub.ExpireAppTokens()
	if _, err := forges[0].Observe(ctx, ref); err != nil {
		t.Fatalf("observe after the first token expired: %v", err)
	}
	renewed, err := creds[0].gitToken(ref)(ctx, "")
	if err != nil || renewed == first[0] || hub.AppTokensMinted() != 2 {
		t.Fatalf("renewed token: %v, minted %d; want a second token", err, hub.AppTokensMinted())
	}

	p := loopParams{Ref: ref, Secrets: repo.Secrets(creds[0].Token), Minted: minted}
	path := filepath.Join(t.TempDir(), "converge.db")
	db, err := store.Open(ctx, path, storeSecrets(p.Secrets, []loopParams{p})...)
	if err != nil {
		t.Fatal(err)
	}
	const runID = "r-20261201-a5ec5a"
	leak := "token " + renewed + " header " + repo.BasicAuth(renewed) + " first " + first[0]
	if err := db.CreateRun(ctx, store.Run{ID: runID, Kind: "pr", Target: ref.String(), Status: "running", StartedAt: time.Now(), State: []byte(`{"note":"` + leak + `"}`)}); err != nil {
		t.Fatal(err)
	}
	newReporter(ios, false, db, runID).Report(engine.Event{Kind: "note", Message: "git said: " + leak})
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, sec := range append(repo.Secrets(renewed), repo.Secrets(first[0])...) {
		if strings.Contains(string(b), sec) {
			t.Fatalf("the store holds an App token (%d chars)", len(sec))
		}
	}
	if !strings.Contains(string(b), "git said: token [REDACTED] header [REDACTED]") {
		t.Fatal("the log line is not in the store, redacted")
	}
}
