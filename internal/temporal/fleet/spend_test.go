package fleet_test

import (
	"context"
	"encoding/json"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/convergeloop/converge/internal/emulator/fakehub"
	"github.com/convergeloop/converge/internal/exitcode"
	"github.com/convergeloop/converge/internal/testutil"
	"github.com/convergeloop/converge/internal/testutil/hubtest"
)

// TestUX_2_FleetRunKeepsItsForgeSpend: a run on the fleet keeps what its
// forge calls cost as a local run does, in the workflow (its activities
// meter the calls, the workflow sums them): `converge pr --engine
// temporal` ends with the spend under the proof, and `converge proof` and
// `converge status` on the cluster show it. The GraphQL limit the run
// last read is what the emulator charged the token to the point, so the
// worker's calls were counted, not guessed.
func TestUX_2_FleetRunKeepsItsForgeSpend(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a PR loop on a Temporal server")
	}
	hostPort := testutil.TemporalDevServer(t)
	bin := buildConverge(t)
	hub := hubtest.Start(t, 100*time.Millisecond)
	_, urls := hubtest.DemoPRs(t, hub, 1)
	queue := "spend-" + t.Name()
	temporalFlags := []string{"--temporal-address", hostPort, "--namespace", testutil.TemporalNamespace}
	worker := start(t, bin, []string{"CONVERGE_TOKEN=" + hub.Tokens().Author},
		append([]string{"worker", "--ca-file", hub.CAFile(), "--state", t.TempDir(), "--task-queue", queue}, temporalFlags...)...)
	waitOutput(t, worker, "worker on task queue", time.Minute)
	pr := start(t, bin, nil, append([]string{"pr", "--engine", "temporal", "--api-url", hub.APIURL(), "--poll-min", "200ms", "--poll-max", "1s", "--task-queue", queue, urls[0]}, temporalFlags...)...)
	waitEnd(t, pr, 5*time.Minute)
	if c := exitCode(pr); c != exitcode.OK {
		t.Fatalf("the fleet run: exit %d, want two-stable:\n%s", c, pr.out.String())
	}
	if !regexp.MustCompile(`forge spend\s+\d+ point\(s\)( \(\d+ estimated\))? in \d+ call\(s\), \d+ answered 304`).MatchString(pr.out.String()) {
		t.Errorf("the fleet run's end shows no forge spend:\n%s", pr.out.String())
	}
	charged := hub.CountsFor(fakehub.LoginAuthor)

	proof := output(t, bin, append([]string{"proof", "--engine", "temporal", urls[0], "--json"}, temporalFlags...)...)
	var v struct {
		ForgeSpend *struct {
			Calls  int `json:"calls"`
			Points int `json:"points"`
			Limits []struct {
				Identity  string `json:"identity"`
				Resource  string `json:"resource"`
				Limit     int    `json:"limit"`
				Remaining *int   `json:"remaining"`
			} `json:"limits"`
		} `json:"forge_spend"`
	}
	if err := json.Unmarshal([]byte(proof), &v); err != nil || v.ForgeSpend == nil {
		t.Fatalf("proof --engine temporal --json: %v, no forge_spend:\n%s", err, proof)
	}
	sp := v.ForgeSpend
	served := charged.RESTGet + charged.RESTWrite + charged.GraphQLQuery + charged.GraphQLMutation
	if sp.Calls < 5 || sp.Calls > served || sp.Points < 5 {
		t.Errorf("the workflow's spend: %d call(s), %d point(s); the emulator served the token %d request(s) (%+v)", sp.Calls, sp.Points, served, charged)
	}
	found := false
	for _, l := range sp.Limits {
		if strings.Contains(l.Identity, hub.Tokens().Author) {
			t.Fatalf("an identity holds the token: %+v", l)
		}
		if l.Resource == "graphql" && l.Remaining != nil {
			found = true
			if !strings.HasSuffix(l.Identity, "/"+fakehub.LoginAuthor) || l.Limit != 5000 || *l.Remaining != 5000-charged.GraphQLPoints {
				t.Errorf("GraphQL at the run's last read: %s %d of %d left; the emulator charged %s %d points", l.Identity, *l.Remaining, l.Limit, fakehub.LoginAuthor, charged.GraphQLPoints)
			}
		}
	}
	if !found {
		t.Errorf("no GraphQL limit read in the workflow's spend: %+v", sp.Limits)
	}

	status := output(t, bin, append([]string{"status", "--engine", "temporal"}, temporalFlags...)...)
	if !regexp.MustCompile(`\d+ pts, \d+ calls\s+\d+/5000 (graphql|core)`).MatchString(status) {
		t.Errorf("status --engine temporal lacks the run's spend:\n%s", status)
	}
}

// output runs converge to its end and returns its standard output.
func output(t *testing.T, bin string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = scrubbed()
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("converge %s: %v\n%s%s", strings.Join(args, " "), err, out, stderr.String())
	}
	return string(out)
}
