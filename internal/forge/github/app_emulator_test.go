package github_test

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/convergeloop/converge/internal/emulator/fakehub"
	"github.com/convergeloop/converge/internal/forge"
	ghclient "github.com/convergeloop/converge/internal/forge/github"
)

// appClock is a test clock the App judges token expiry by.
type appClock struct {
	mu  sync.Mutex
	off time.Duration
}

func (c *appClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Now().Add(c.off)
}

func (c *appClock) advance(d time.Duration) {
	c.mu.Lock()
	c.off += d
	c.mu.Unlock()
}

// appClient is a converge client on ref's repository acting as a new App
// registered with the hub, its key read from the PEM file the hub wrote.
func appClient(t *testing.T, hub *fakehub.Hub, ref forge.PRRef, clock *appClock) (*ghclient.Client, *ghclient.App, fakehub.App) {
	t.Helper()
	reg, err := hub.CreateApp("converge-app")
	if err != nil {
		t.Fatal(err)
	}
	key, err := ghclient.LoadAppKey(reg.KeyFile)
	if err != nil {
		t.Fatal(err)
	}
	app, c := appClientWith(t, hub, ref, reg.ID, key, clock)
	return c, app, reg
}

func appClientWith(t *testing.T, hub *fakehub.Hub, ref forge.PRRef, id int64, key *rsa.PrivateKey, clock *appClock) (*ghclient.App, *ghclient.Client) {
	t.Helper()
	opts := ghclient.AppOptions{ID: id, Key: key, APIURL: hub.APIURL(), HTTPClient: hub.HTTPClient()}
	if clock != nil {
		opts.Now = clock.now
	}
	app, err := ghclient.NewApp(opts)
	if err != nil {
		t.Fatal(err)
	}
	c, err := ghclient.New(ghclient.Options{APIURL: hub.APIURL(), GraphQLURL: hub.GraphQLURL(), App: app, AppRepo: ref.Owner + "/" + ref.Repo, CAFile: hub.CAFile()})
	if err != nil {
		t.Fatal(err)
	}
	return app, c
}

// gitLsRemote runs git ls-remote on the repository with token.
func gitLsRemote(t *testing.T, hub *fakehub.Hub, ref forge.PRRef, token string) error {
	t.Helper()
	cmd := exec.Command("git", "ls-remote", hub.GitURL(ref.Owner, ref.Repo))
	cmd.Env = append(os.Environ(), hub.GitEnv(token)...)
	cmd.Dir = t.TempDir()
	out, err := cmd.CombinedOutput()
	if err != nil {
		return &gitErr{out: string(out)}
	}
	return nil
}

type gitErr struct{ out string }

func (e *gitErr) Error() string { return e.out }

// rawStatus is the status the hub answers a bare REST GET with token.
func rawStatus(t *testing.T, hub *fakehub.Hub, token, method, url, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "token "+token)
	resp, err := hub.HTTPClient().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b := make([]byte, 4096)
	n, _ := resp.Body.Read(b)
	return resp.StatusCode, string(b[:n])
}

// TestSEC5_AppJWTToInstallationToken: with only the App's id and private
// key (the JWT backdated for a clock behind ours, expiring within GitHub's
// ten minutes), the client finds the repository's installation, mints one
// installation token and uses it for GraphQL reads, REST writes and as
// converge's identity; the token works for git; further requests reuse
// it.
func TestSEC5_AppJWTToInstallationToken(t *testing.T) {
	hub, _, ref := emulatorPR(t)
	ctx := context.Background()
	c, app, reg := appClient(t, hub, ref, nil)
	// The API's clock is half a minute behind converge's: a JWT issued
	// "now" would be from the API's future; converge's is backdated.
	hub.AdvanceAppClock(-30 * time.Second)

	self, err := c.Viewer(ctx)
	if err != nil || self != reg.Login() {
		t.Fatalf("Viewer = %q, %v; want the App's bot %q", self, err, reg.Login())
	}
	pr, err := c.Observe(ctx, ref)
	if err != nil {
		t.Fatalf("observe as the App: %v", err)
	}
	if err := c.AddLabels(ctx, ref, "sec5"); err != nil {
		t.Fatalf("add label as the App: %v", err)
	}
	if _, err := c.CreateIssueComment(ctx, ref, "hello from the App"); err != nil {
		t.Fatalf("comment as the App: %v", err)
	}
	if n := hub.AppTokensMinted(); n != 1 {
		t.Fatalf("%d installation tokens minted for four requests, want 1 (cached)", n)
	}
	pr2, err := c.Observe(ctx, ref)
	if err != nil || len(pr2.Labels) != len(pr.Labels)+1 {
		t.Fatalf("observe after the label: %v, labels %v", err, pr2.Labels)
	}
	var byApp bool
	for _, ic := range pr2.IssueComments {
		byApp = byApp || (ic.Author == reg.Login() && ic.Body == "hello from the App")
	}
	if !byApp {
		t.Fatalf("the App's comment is not authored by %s: %+v", reg.Login(), pr2.IssueComments)
	}
	tok, err := app.Token(ctx, ref.Owner, ref.Repo)
	if err != nil || !strings.HasPrefix(tok, "ghs_") {
		t.Fatalf("Token = %q, %v", tok, err)
	}
	if err := gitLsRemote(t, hub, ref, tok); err != nil {
		t.Fatalf("git with the installation token: %v", err)
	}
	if n := hub.AppTokensMinted(); n != 1 {
		t.Fatalf("%d installation tokens minted, want 1", n)
	}
}

// TestSEC5_ExpiredTokenIsRefreshed: a token is replaced before it expires
// by the client's clock; one the hub refuses as expired although the
// client's clock thinks it fresh (revoked, ended early) is replaced
// after the 401 and the request goes through. The hub refuses an expired
// token on REST, GraphQL and git with GitHub's 401.
func TestSEC5_ExpiredTokenIsRefreshed(t *testing.T) {
	hub, _, ref := emulatorPR(t)
	ctx := context.Background()
	clock := &appClock{}
	c, app, _ := appClient(t, hub, ref, clock)
	if _, err := c.Observe(ctx, ref); err != nil {
		t.Fatal(err)
	}
	first, _ := app.Token(ctx, ref.Owner, ref.Repo)

	// 56 minutes on: within AppTokenRefresh of the hour, so renewed
	// before use although the hub would still take it.
	clock.advance(56 * time.Minute)
	hub.AdvanceAppClock(56 * time.Minute)
	if _, err := c.Observe(ctx, ref); err != nil {
		t.Fatalf("observe near expiry: %v", err)
	}
	second, _ := app.Token(ctx, ref.Owner, ref.Repo)
	if hub.AppTokensMinted() != 2 || second == first {
		t.Fatalf("minted %d, token renewed %v: want a new token 4 minutes before expiry", hub.AppTokensMinted(), second != first)
	}

	// The hub ends the second token early (revoked; or the clocks
	// disagree): the client's clock still calls it fresh.
	hub.ExpireAppTokens()
	if code, body := rawStatus(t, hub, second, http.MethodGet, hub.APIURL()+"/repos/"+ref.Owner+"/"+ref.Repo, ""); code != 401 || !strings.Contains(body, "Bad credentials") {
		t.Fatalf("REST with an expired installation token: %d %s; want 401 Bad credentials", code, body)
	}
	if code, body := rawStatus(t, hub, second, http.MethodPost, hub.GraphQLURL(), `{"query":"{viewer{login}}"}`); code != 401 || !strings.Contains(body, "Bad credentials") {
		t.Fatalf("GraphQL with an expired installation token: %d %s; want 401 Bad credentials", code, body)
	}
	if err := gitLsRemote(t, hub, ref, second); err == nil {
		t.Fatal("git accepted an expired installation token")
	}
	if err := c.AddLabels(ctx, ref, "after-expiry"); err != nil {
		t.Fatalf("a write after the hub expired the token: %v", err)
	}
	if _, err := c.Observe(ctx, ref); err != nil {
		t.Fatalf("a GraphQL read after the hub expired the token: %v", err)
	}
	third, _ := app.Token(ctx, ref.Owner, ref.Repo)
	if hub.AppTokensMinted() != 3 || third == second {
		t.Fatalf("minted %d: want one new token after the 401", hub.AppTokensMinted())
	}
}

// TestSEC5_WrongKeyIsRefused: a JWT signed with another key, or naming
// another App, mints nothing; the error is an auth error (exit 6) naming
// the fix, and no token reaches the API.
func TestSEC5_WrongKeyIsRefused(t *testing.T) {
	hub, _, ref := emulatorPR(t)
	reg, err := hub.CreateApp("converge-app")
	if err != nil {
		t.Fatal(err)
	}
	other, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	for name, id := range map[string]int64{"wrong key": reg.ID, "unknown app": reg.ID + 7} {
		t.Run(name, func(t *testing.T) {
			_, c := appClientWith(t, hub, ref, id, other, nil)
			_, err := c.Observe(context.Background(), ref)
			if forge.KindOf(err) != forge.KindAuth || !strings.Contains(err.Error(), "--app-key") {
				t.Fatalf("observe with a wrong App key: %v (kind %v); want an auth error naming --app-key", err, forge.KindOf(err))
			}
		})
	}
	if n := hub.AppTokensMinted(); n != 0 {
		t.Fatalf("%d tokens minted for wrong keys", n)
	}
}

// TestSEC5_AppKeyFileErrors: a missing, unreadable or invalid key file is
// one line naming the file and the fix, never the file's content.
func TestSEC5_AppKeyFileErrors(t *testing.T) {
	dir := t.TempDir()
	garbage := filepath.Join(dir, "garbage.pem")
	os.WriteFile(garbage, []byte("not a key SECRETCONTENT"), 0o600)
	ecKey := filepath.Join(dir, "ec.pem")
	os.WriteFile(ecKey, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: []byte("SECRETCONTENT")}), 0o600)
	rsaKey, _ := rsa.GenerateKey(rand.Reader, 1024)
	good := filepath.Join(dir, "good.pem")
	os.WriteFile(good, pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(rsaKey)}), 0o600)
	for _, tt := range []struct{ path, want string }{
		{filepath.Join(dir, "missing.pem"), "does not exist"},
		{dir, "cannot read"},
		{garbage, "not a PEM RSA private key"},
		{ecKey, "not a PEM RSA private key"},
		{"", "--app-key"},
	} {
		_, err := ghclient.LoadAppKey(tt.path)
		if err == nil || !strings.Contains(err.Error(), tt.want) || strings.Contains(err.Error(), "SECRETCONTENT") || strings.Contains(err.Error(), "\n") {
			t.Errorf("LoadAppKey(%q) = %v; want one line saying %q", tt.path, err, tt.want)
		}
	}
	if _, err := ghclient.LoadAppKey(good); err != nil {
		t.Errorf("LoadAppKey of a good key: %v", err)
	}
}

// TestPR_T10_VerdictIsOneCheckRunWithApp: with an App the verdict is the
// head's `converge` check run, in progress, then completed with the
// proof as its output; publishing again, or from a new process after a
// crash, updates that one run; the rollup shows it; an output past
// GitHub's limit is clipped.
func TestPR_T10_VerdictIsOneCheckRunWithApp(t *testing.T) {
	hub, _, ref := emulatorPR(t)
	ctx := context.Background()
	c, _, reg := appClient(t, hub, ref, nil)
	st, _ := hub.PR(ref.Owner, ref.Repo, ref.Number)
	head := st.HeadSHA
	pub := forge.VerdictPublisher(c)
	if err := pub.PublishVerdict(ctx, ref, forge.Verdict{Name: "converge", SHA: head, State: forge.StatusPending, Title: "round 1 running", Summary: "working"}); err != nil {
		t.Fatal(err)
	}
	runs := ownRuns(t, hub, ref, head)
	if len(runs) != 1 || runs[0].Status != "in_progress" || runs[0].AppID != reg.ID {
		t.Fatalf("after the pending verdict: %+v; want one in_progress converge run by the App", runs)
	}
	proof := "**two-stable** (exit 0)\n\n### Proof\n| head | " + head + " |\n" + strings.Repeat("x", 70000)
	v := forge.Verdict{Name: "converge", SHA: head, State: forge.StatusSuccess, Conclusion: "success", Title: "two-stable", Summary: proof}
	if err := pub.PublishVerdict(ctx, ref, v); err != nil {
		t.Fatal(err)
	}
	// A new process (a rerun after a crash) finds the run by name and App.
	_, c2 := appClientWith(t, hub, ref, reg.ID, mustKey(t, reg.KeyFile), nil)
	if err := c2.PublishVerdict(ctx, ref, v); err != nil {
		t.Fatal(err)
	}
	runs = ownRuns(t, hub, ref, head)
	if len(runs) != 1 || runs[0].Status != "completed" || runs[0].Conclusion != "success" || runs[0].Title != "two-stable" {
		t.Fatalf("after the verdict: %+v; want the one run completed success", runs)
	}
	if n := len([]rune(runs[0].Summary)); n > 65535 || !strings.HasPrefix(runs[0].Summary, "**two-stable** (exit 0)") || !strings.Contains(runs[0].Summary, head) {
		t.Fatalf("summary of %d characters, starting %q: want the proof, clipped to 65535", n, runs[0].Summary[:min(60, len(runs[0].Summary))])
	}
	pr, err := c.Observe(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, cx := range pr.Checks.Contexts {
		if cx.Name == "converge" {
			found = !cx.IsStatus && cx.Status == forge.CheckCompleted && strings.EqualFold(string(cx.Conclusion), "success")
		}
	}
	if !found {
		t.Fatalf("the rollup does not show the converge check run completed success: %+v", pr.Checks.Contexts)
	}
	// Another App's check of the same name is not converge's.
	if sts, _ := hub.Statuses(ref.Owner, ref.Repo, head); len(sts) != 0 {
		t.Fatalf("an App verdict also posted statuses: %+v", sts)
	}
}

// TestPR_T10_VerdictIsAStatusWithToken: with a personal token the same
// verdict is the `converge` commit status, and no check run is made.
func TestPR_T10_VerdictIsAStatusWithToken(t *testing.T) {
	hub, c, ref := emulatorPR(t)
	ctx := context.Background()
	st, _ := hub.PR(ref.Owner, ref.Repo, ref.Number)
	v := forge.Verdict{Name: "converge", SHA: st.HeadSHA, State: forge.StatusFailure, Conclusion: "failure", Title: "convergence-failure: 3 structural rounds", Summary: "proof"}
	if err := c.PublishVerdict(ctx, ref, v); err != nil {
		t.Fatal(err)
	}
	sts, _ := hub.Statuses(ref.Owner, ref.Repo, st.HeadSHA)
	if len(sts) != 1 || sts[0].Context != "converge" || sts[0].State != "failure" || sts[0].Description != v.Title {
		t.Fatalf("statuses %+v; want one converge failure", sts)
	}
	if runs, _ := hub.CheckRuns(ref.Owner, ref.Repo, st.HeadSHA); len(ownRunsOf(runs)) != 0 {
		t.Fatalf("a token verdict made check runs: %+v", runs)
	}
}

func mustKey(t *testing.T, path string) *rsa.PrivateKey {
	t.Helper()
	k, err := ghclient.LoadAppKey(path)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func ownRuns(t *testing.T, hub *fakehub.Hub, ref forge.PRRef, sha string) []fakehub.CheckRunState {
	t.Helper()
	runs, err := hub.CheckRuns(ref.Owner, ref.Repo, sha)
	if err != nil {
		t.Fatal(err)
	}
	return ownRunsOf(runs)
}

func ownRunsOf(runs []fakehub.CheckRunState) []fakehub.CheckRunState {
	var out []fakehub.CheckRunState
	for _, r := range runs {
		if r.Name == "converge" {
			out = append(out, r)
		}
	}
	return out
}
