package cli

import (
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/convergeloop/converge/internal/emulator/fakehub"
)

// TestUX_2_StatusAndProofShowTheRunsForgeSpend: a run's forge calls are
// kept in the store as they are made, at what the forge said they cost:
// `converge pr` ends with the run's spend under its proof, `converge
// status` shows per run the points spent, the calls, and the limit left at
// the last read with when it resets, and `converge proof` the run's spend
// per identity and limit. The GraphQL limit the run last read is what the
// emulator charged the token to the point (GitHub's arithmetic), so the
// points are known, not guessed.
func TestUX_2_StatusAndProofShowTheRunsForgeSpend(t *testing.T) {
	t.Parallel()
	hub, demo := startHub(t, 200*time.Millisecond)
	state := t.TempDir()
	env := map[string]string{"CONVERGE_TOKEN": hub.Tokens().Author}
	ctx := context.Background()

	ios, out, errOut := testIO(env)
	if code := Run(ctx, prArgs(hub, demo, state), ios); code != 0 {
		t.Fatalf("converge pr exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	if !regexp.MustCompile(`forge spend\s+\d+ point\(s\)( \(\d+ estimated\))? in \d+ call\(s\), \d+ answered 304`).MatchString(out.String()) {
		t.Errorf("the run's end shows no forge spend:\n%s", out)
	}
	id := regexp.MustCompile(`r-\d{8}-[0-9a-f]{6}`).FindString(out.String())
	charged := hub.CountsFor(fakehub.LoginAuthor)

	ios, out, errOut = testIO(nil)
	if code := Run(ctx, []string{"status", "--state", state, "--json"}, ios); code != 0 {
		t.Fatalf("status --json exit %d: %s", code, errOut)
	}
	var runs []struct {
		ID         string          `json:"id"`
		ForgeSpend *forgeSpendView `json:"forge_spend"`
	}
	if err := json.Unmarshal([]byte(out.String()), &runs); err != nil || len(runs) != 1 || runs[0].ID != id || runs[0].ForgeSpend == nil {
		t.Fatalf("status --json: %v\n%s", err, out)
	}
	sp := runs[0].ForgeSpend
	if sp.Calls < 5 || sp.Points < 5 || sp.NotModified < 0 || sp.EstimatedPoints > charged.GraphQLMutation {
		t.Errorf("the run's spend %+v; the emulator charged the token %+v", sp, charged)
	}
	// Every call the command made is the run's, pre-flight's included:
	// the emulator served the token nothing converge did not count.
	if served := charged.RESTGet + charged.RESTWrite + charged.GraphQLQuery + charged.GraphQLMutation; sp.Calls != served {
		t.Errorf("the run counted %d call(s); the emulator served the token %d (%+v)", sp.Calls, served, charged)
	}
	var gql *forgeLimitView
	for i, l := range sp.Limits {
		if strings.Contains(l.Identity, hub.Tokens().Author) {
			t.Fatalf("an identity holds the token: %+v", l)
		}
		if l.Resource == "graphql" {
			gql = &sp.Limits[i]
		}
	}
	if gql == nil || gql.Remaining == nil || gql.ResetAt == nil || !strings.HasSuffix(gql.Identity, "/"+fakehub.LoginAuthor) {
		t.Fatalf("no GraphQL limit read, under the token's user: %+v", sp.Limits)
	}
	if want := 5000 - charged.GraphQLPoints; *gql.Remaining != want || gql.Limit != 5000 {
		t.Errorf("GraphQL left at the run's last read: %d of %d; the emulator charged %d points: want %d left", *gql.Remaining, gql.Limit, charged.GraphQLPoints, want)
	}

	ios, out, errOut = testIO(nil)
	if code := Run(ctx, []string{"status", "--state", state}, ios); code != 0 {
		t.Fatalf("status exit %d: %s", code, errOut)
	}
	if !regexp.MustCompile(`FORGE\s+LEFT`).MatchString(out.String()) ||
		!regexp.MustCompile(id+`.*\s\d+ pts, \d+ calls\s+\d+/5000 (graphql|core) to \d\d:\d\d:\d\d`).MatchString(out.String()) {
		t.Errorf("status lacks the run's spend and limit left:\n%s", out)
	}

	ios, out, errOut = testIO(nil)
	if code := Run(ctx, []string{"proof", id, "--state", state}, ios); code != 0 {
		t.Fatalf("proof exit %d: %s", code, errOut)
	}
	if !strings.Contains(out.String(), "forge spend") || !regexp.MustCompile(`graphql\s+\d+ point\(s\) in \d+ call\(s\); \d+ of 5000 left, resets `).MatchString(out.String()) {
		t.Errorf("proof lacks the run's spend:\n%s", out)
	}
	ios, out, errOut = testIO(nil)
	if code := Run(ctx, []string{"proof", id, "--state", state, "--json"}, ios); code != 0 {
		t.Fatalf("proof --json exit %d: %s", code, errOut)
	}
	var pv struct {
		ForgeSpend *forgeSpendView `json:"forge_spend"`
	}
	if err := json.Unmarshal([]byte(out.String()), &pv); err != nil || pv.ForgeSpend == nil || pv.ForgeSpend.Points != sp.Points || pv.ForgeSpend.Calls != sp.Calls {
		t.Errorf("proof --json forge_spend %+v, status said %+v (%v)", pv.ForgeSpend, sp, err)
	}
}
