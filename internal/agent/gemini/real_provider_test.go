package gemini

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/convergeloop/converge/internal/agent"
	"github.com/convergeloop/converge/internal/agent/agenttest"
	"github.com/convergeloop/converge/internal/emulator/fakemodel"
)

// The real Gemini CLI set up as its users set it up: the provider's
// variables in converge's own environment (passed by DefaultPassEnv, not
// by a test-only option), the CLI's settings in HOME as its /auth dialog
// writes them, and the model left to the CLI unless a test pins it.

// apiKeySettings is ~/.gemini/settings.json after choosing "Use Gemini API
// key" in the CLI's /auth dialog. A GEMINI_API_KEY alone needs no
// settings, but a GOOGLE_GEMINI_BASE_URL without them is a "gateway" that
// Gemini CLI 0.61 refuses ("Invalid auth method selected.").
const apiKeySettings = `{"security":{"auth":{"selectedType":"gemini-api-key"}},"privacy":{"usageStatisticsEnabled":false},"general":{"disableAutoUpdate":true}}`

// plainSettings chooses nothing: the environment picks the provider.
const plainSettings = `{"privacy":{"usageStatisticsEnabled":false},"general":{"disableAutoUpdate":true}}`

// userAgent is the backend run as a user would: converge's environment is
// the test's, less any Google or Gemini variable of the machine, plus
// HOME (holding settings as ~/.gemini/settings.json) and environ; model
// "" leaves the CLI's default.
func userAgent(t *testing.T, bin, settings, model string, environ ...string) *Agent {
	t.Helper()
	home := t.TempDir()
	if err := os.MkdirAll(filepath.Join(home, ".gemini"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, ".gemini", "settings.json"), []byte(settings), 0o644); err != nil {
		t.Fatal(err)
	}
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if !slices.Contains(DefaultPassEnv, name) && name != "HOME" {
			env = append(env, kv)
		}
	}
	env = append(env, "HOME="+home, "GH_TOKEN=ghp_"+strings.Repeat("x", 36))
	env = append(env, environ...)
	a, err := New(Options{CLIOptions: agent.CLIOptions{
		Binary: bin, Model: model, Grace: 2 * time.Second,
		Environ: func() []string { return env },
		Getenv:  func(string) string { return "" },
	}})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// checkAnswered runs agent.Check and fails t unless the model answered.
func checkAnswered(t *testing.T, a *Agent) {
	t.Helper()
	res, err := agent.Check(context.Background(), a, nil, 5*time.Minute)
	if err != nil || !res.Usable || res.Answer != "OK" {
		t.Fatalf("check = %+v, %v", res, err)
	}
}

// TestAG_B1_RealGemini_ProviderGeminiAPIKey: GEMINI_API_KEY from
// converge's environment reaches the Gemini API as the key the CLI sends
// (x-goog-api-key), and the read-only check (agent.Check) is usable when
// the model answered.
func TestAG_B1_RealGemini_ProviderGeminiAPIKey(t *testing.T) {
	bin := realCLI(t)
	t.Parallel()
	srv, url := agenttest.Serve(t, fakemodel.Script{Turns: []fakemodel.Turn{{Text: "OK"}}})
	a := userAgent(t, bin, apiKeySettings, "", "GEMINI_API_KEY=gm-key-for-the-test", "GOOGLE_GEMINI_BASE_URL="+url)
	checkAnswered(t, a)
	agenttest.CheckWire(t, srv)
	// converge doctor's view of the same setup.
	if d := a.Describe(context.Background()); d.Version == "" || d.Model != "auto" ||
		!strings.HasPrefix(d.Credential, "GEMINI_API_KEY (gemini-api-key from ") || d.Problem != "" || !slices.Contains(d.PassEnv, "GEMINI_API_KEY") {
		t.Errorf("describe = %+v", d)
	}
	reqs := srv.Requests()
	if len(reqs) == 0 {
		t.Fatal("fakemodel got no request")
	}
	for _, r := range reqs {
		if r.Header.Get("X-Goog-Api-Key") != "gm-key-for-the-test" || !strings.HasPrefix(r.Path, "/v1beta/models/") {
			t.Errorf("%s: key %q", r.Path, r.Header.Get("X-Goog-Api-Key"))
		}
	}
}

// serviceAccount writes a service account key file for project. Its
// universe_domain is not Google's, so the auth library signs its own
// token (a self-signed JWT) instead of asking oauth2.googleapis.com for
// one: the run talks to fakemodel only.
func serviceAccount(t *testing.T, project, email string) string {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(map[string]string{
		"type": "service_account", "project_id": project, "private_key_id": "fakemodel-key",
		"private_key":  string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})),
		"client_email": email, "client_id": "1", "token_uri": "https://oauth2.googleapis.com/token",
		"universe_domain": "fakemodel.test",
	})
	file := filepath.Join(t.TempDir(), "service-account.json")
	if err := os.WriteFile(file, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return file
}

// jwtIssuer is the iss claim of a bearer JWT in an Authorization header.
func jwtIssuer(auth string) string {
	tok, ok := strings.CutPrefix(auth, "Bearer ")
	parts := strings.Split(tok, ".")
	if !ok || len(parts) != 3 {
		return ""
	}
	b, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return ""
	}
	var claims struct {
		Iss string `json:"iss"`
	}
	_ = json.Unmarshal(b, &claims)
	return claims.Iss
}

// TestAG_B1_RealGemini_ProviderVertexAI: Vertex AI as its users set it
// up — GOOGLE_GENAI_USE_VERTEXAI=true, GOOGLE_CLOUD_PROJECT,
// GOOGLE_CLOUD_LOCATION and a service account in
// GOOGLE_APPLICATION_CREDENTIALS, or GOOGLE_API_KEY alone (express
// mode) — from converge's environment, with GOOGLE_VERTEX_BASE_URL
// naming fakemodel: the CLI calls Vertex AI's route for the project and
// location with a token signed by the service account, or the express
// route with the key; fix runs edit, the check is usable. One fix run
// leaves the model to the CLI.
func TestAG_B1_RealGemini_ProviderVertexAI(t *testing.T) {
	bin := realCLI(t)
	t.Parallel()
	const email = "converge@fakemodel-project.iam.gserviceaccount.com"
	creds := serviceAccount(t, "fakemodel-project", email)
	for _, c := range []struct {
		name, model string
		env         []string
		path        string
		auth        func(h http.Header) bool
	}{
		{"service-account", "", []string{"GOOGLE_CLOUD_PROJECT=fakemodel-project", "GOOGLE_CLOUD_LOCATION=europe-west4",
			"GOOGLE_APPLICATION_CREDENTIALS=" + creds},
			"/v1beta1/projects/fakemodel-project/locations/europe-west4/publishers/google/models/",
			func(h http.Header) bool { return jwtIssuer(h.Get("Authorization")) == email }},
		{"express", "gemini-fakemodel", []string{"GOOGLE_API_KEY=vertex-express-key"},
			"/v1beta1/publishers/google/models/gemini-fakemodel:",
			func(h http.Header) bool { return h.Get("X-Goog-Api-Key") == "vertex-express-key" }},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			dir := agenttest.Repo(t, map[string]string{"greet.txt": "hello world\n"})
			file := filepath.Join(dir, "greet.txt")
			srv, url := agenttest.Serve(t,
				fakemodel.Script{Match: agent.CheckPrompt, Turns: []fakemodel.Turn{{Text: "OK"}}},
				fakemodel.Script{Match: "greet-finding", Turns: []fakemodel.Turn{
					{Calls: []fakemodel.ToolCall{{Name: "replace", Input: map[string]any{"file_path": file,
						"old_string": "hello world", "new_string": "hello vertex", "instruction": "Greet Vertex AI."}}}},
					{Text: "Done.\n" + statusRecord("greeting changed", "greet.txt")},
				}})
			env := append([]string{"GOOGLE_GENAI_USE_VERTEXAI=true", "GOOGLE_VERTEX_BASE_URL=" + url}, c.env...)
			a := userAgent(t, bin, plainSettings, c.model, env...)
			res, err := a.Run(context.Background(), agent.Task{Kind: agent.TaskKindFix, Workdir: dir, Budget: 5 * time.Minute,
				Findings: []agent.Finding{{ID: "greet-finding", Path: "greet.txt", EndLine: 1, Body: "Greet Vertex AI."}}})
			if err != nil || res.Record.Status != agent.StatusComplete {
				t.Fatalf("run: %v, record %+v\nstderr: %s", err, res.Record, res.Stderr)
			}
			if got, _ := os.ReadFile(file); string(got) != "hello vertex\n" {
				t.Errorf("greet.txt = %q", got)
			}
			checkAnswered(t, a)
			agenttest.CheckWire(t, srv)
			for _, r := range srv.Requests() {
				if !strings.HasPrefix(r.Path, c.path) || !c.auth(r.Header) {
					t.Errorf("request %s (authorization %q, key %q), want Vertex AI's %s… with the credential",
						r.Path, r.Header.Get("Authorization"), r.Header.Get("X-Goog-Api-Key"), c.path)
				}
			}
			if u := res.Usage; u.TotalTokens() == 0 || u != usageOf(srvServedDuring(srv, agent.CheckPrompt, false)) {
				t.Errorf("usage %+v, want what fakemodel served the fix run", u)
			}
		})
	}
}

// statusRecord is a complete status record changing files.
func statusRecord(summary string, files ...string) string {
	b, _ := json.Marshal(map[string]any{"status": "complete", "next_action": "", "needs_extension_minutes": 0,
		"summary": summary, "files_changed": files})
	return string(b)
}

// srvServedDuring is the usage fakemodel served to the requests whose
// body holds marker (with) or does not (!with).
func srvServedDuring(srv *fakemodel.Server, marker string, with bool) fakemodel.Usage {
	var u fakemodel.Usage
	for _, r := range srv.Requests() {
		if strings.Contains(string(r.Body), marker) == with {
			u.InputTokens += r.Usage.InputTokens
			u.OutputTokens += r.Usage.OutputTokens
			u.CacheReadTokens += r.Usage.CacheReadTokens
		}
	}
	return u
}

// usageOf is what a CLI that counts to the last token reports for u: the
// Gemini API's input counts its cached tokens, agent.Usage's does not.
func usageOf(u fakemodel.Usage) agent.Usage {
	return agent.Usage{InputTokens: int64(u.InputTokens), CacheReadTokens: int64(u.CacheReadTokens), OutputTokens: int64(u.OutputTokens)}
}

// TestAG_T4_RealGemini_RejectedKeyFailsAuthAtOnce: the API answers 401;
// the run (fix, review, the check) ends with a *agent.CLIError FailAuth
// quoting the CLI's words, the record blocked with reason cli-error —
// ended by the CLI or the watch, not by the several-minute budget.
func TestAG_T4_RealGemini_RejectedKeyFailsAuthAtOnce(t *testing.T) {
	bin := realCLI(t)
	t.Parallel()
	srv, url := agenttest.Serve(t, fakemodel.Script{Turns: []fakemodel.Turn{{Text: "never sent"}}})
	srv.Refuse = func(string, *http.Request) (int, string) {
		return 401, "API key not valid. Please pass a valid API key. (fakemodel)"
	}
	a := userAgent(t, bin, apiKeySettings, "", "GEMINI_API_KEY=revoked-key", "GOOGLE_GEMINI_BASE_URL="+url)
	dir := agenttest.Repo(t, map[string]string{"a.go": "package a\n"})
	for _, kind := range []string{agent.TaskKindFix, agent.TaskKindReview} {
		res, err := a.Run(context.Background(), agent.Task{Kind: kind, Workdir: dir, Budget: 5 * time.Minute, Angle: "edge-cases",
			Diff: "diff --git a/a.go b/a.go\n", Findings: []agent.Finding{{ID: "f", Body: "fix it"}}})
		var ce *agent.CLIError
		if !errors.As(err, &ce) || ce.Kind != agent.FailAuth || !strings.Contains(ce.Message, "API key not valid. Please pass a valid API key. (fakemodel)") {
			t.Fatalf("%s: error %v (%T), want FailAuth quoting the CLI\nstderr: %s", kind, err, err, res.Stderr)
		}
		if res.Record.Reason != agent.ReasonCLIError || res.Record.Status != agent.StatusBlocked {
			t.Errorf("%s: record %+v, want blocked cli-error (not stopped at the budget)", kind, res.Record)
		}
		if agent.KindOf(err) != agent.FailAuth || strings.Contains(err.Error(), "revoked-key") {
			t.Errorf("%s: error %q", kind, err)
		}
	}
	_, err := agent.Check(context.Background(), a, nil, 5*time.Minute)
	if agent.KindOf(err) != agent.FailAuth {
		t.Errorf("check: %v, want FailAuth", err)
	}

	// No key at all: the CLI says so on stderr only, before any request.
	a = userAgent(t, bin, apiKeySettings, "", "GOOGLE_GEMINI_BASE_URL="+url)
	res, err := a.Run(context.Background(), agent.Task{Kind: agent.TaskKindFix, Workdir: dir, Budget: 5 * time.Minute,
		Findings: []agent.Finding{{ID: "f", Body: "fix it"}}})
	var ce *agent.CLIError
	if !errors.As(err, &ce) || ce.Kind != agent.FailAuth || !strings.Contains(ce.Message, "you must specify the GEMINI_API_KEY environment variable") ||
		res.Record.Reason != agent.ReasonCLIError {
		t.Errorf("no key: error %v, record %+v\nstderr: %s", err, res.Record, res.Stderr)
	}
}

// TestAG_T4_RealGemini_FailingEndpointNamedWithinTheRetryBound: a model
// endpoint that refuses connections (a closed local port) or answers 503
// is retried by the CLI for minutes; converge stops the run when the
// retry bound (5 s here) runs out without an answer, with a
// *agent.CLIError FailEndpoint naming the endpoint and quoting the CLI's
// last retry.
func TestAG_T4_RealGemini_FailingEndpointNamedWithinTheRetryBound(t *testing.T) {
	bin := realCLI(t)
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + l.Addr().String()
	l.Close()
	srv, unavailable := agenttest.Serve(t, fakemodel.Script{Turns: []fakemodel.Turn{{Text: "never sent"}}})
	srv.Refuse = func(string, *http.Request) (int, string) { return 503, "The model is overloaded. (fakemodel)" }
	for _, c := range []struct{ name, url, says string }{
		{"connection-refused", closed, "fetch failed"},
		{"503", unavailable, "The model is overloaded. (fakemodel)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			a := userAgent(t, bin, apiKeySettings, "", "GEMINI_API_KEY=k", "GOOGLE_GEMINI_BASE_URL="+c.url)
			a.opts.RetryBound = 5 * time.Second
			dir := agenttest.Repo(t, map[string]string{"a.txt": "x\n"})
			res, err := a.Run(context.Background(), agent.Task{Kind: agent.TaskKindFix, Workdir: dir, Budget: 5 * time.Minute,
				Findings: []agent.Finding{{ID: "f", Body: "fix it"}}})
			var ce *agent.CLIError
			if !errors.As(err, &ce) || ce.Kind != agent.FailEndpoint || ce.Endpoint != c.url ||
				!strings.Contains(ce.Message, c.says) || !strings.Contains(ce.Message, "still failing after 5s") {
				t.Fatalf("error %v, want FailEndpoint naming %s quoting %q\nstderr: %s", err, c.url, c.says, res.Stderr)
			}
			if !strings.Contains(err.Error(), "model endpoint "+c.url+" unreachable or failing") {
				t.Errorf("error %q", err)
			}
			if res.Record.Reason != agent.ReasonCLIError {
				t.Errorf("record %+v, want cli-error (not stopped at the budget)", res.Record)
			}
		})
	}
}

// TestAG_B1_RealGemini_StoppedAtBudgetCountsEveryServedToken: a fix run
// stopped at its budget while the model stalls prints no result event,
// yet its usage is every token fakemodel served it — read from the
// session the CLI kept as it went — plus the summary turn's at the
// budget (AG-T1), counted once though that turn resumes the same
// session. The model is pinned: the router's classifier request, which
// the session does not record, would otherwise be missing from a run
// stopped before its result.
func TestAG_B1_RealGemini_StoppedAtBudgetCountsEveryServedToken(t *testing.T) {
	bin := realCLI(t)
	t.Parallel()
	var (
		srv *fakemodel.Server
		res agent.Result
	)
	agenttest.UntilStalled(t, 20*time.Second, func(budget time.Duration) bool {
		dir := agenttest.Repo(t, map[string]string{"a.txt": "x\n"})
		var url string
		srv, url = agenttest.Serve(t,
			fakemodel.Script{Match: agent.SummaryRequest, FromMatch: true, Turns: []fakemodel.Turn{
				{Text: "Stopped.\n" + `{"status":"partial","next_action":"finish a.txt","needs_extension_minutes":2,"summary":"half done","files_changed":[]}`,
					Usage: fakemodel.Usage{InputTokens: 400, OutputTokens: 40, CacheReadTokens: 300}},
			}},
			fakemodel.Script{Match: "budget-finding", Turns: []fakemodel.Turn{
				{Calls: []fakemodel.ToolCall{{Name: "read_file", Input: map[string]any{"file_path": filepath.Join(dir, "a.txt")}}},
					Usage: fakemodel.Usage{InputTokens: 100, OutputTokens: 10}},
				{Text: "Looking further.", Calls: []fakemodel.ToolCall{{Shell: "true"}},
					Usage: fakemodel.Usage{InputTokens: 200, OutputTokens: 20, CacheReadTokens: 50}},
				{Text: "never sent", Delay: agenttest.Stall},
			}})
		a := newAgent(t, bin, url)
		a.opts.SummaryBudget = time.Minute
		var err error
		res, err = a.Run(context.Background(), agent.Task{Kind: agent.TaskKindFix, Workdir: dir, Budget: budget,
			Findings: []agent.Finding{{ID: "budget-finding", Body: "fix a.txt"}}})
		if err != nil {
			t.Fatalf("run: %v\nstderr: %s", err, res.Stderr)
		}
		return slices.ContainsFunc(srv.Requests(), func(r fakemodel.Request) bool { return r.Script == 1 && r.Turn == 2 })
	})
	if !slices.Contains(res.Record.Concerns, agent.SummaryConcern) {
		t.Errorf("record %+v, want the summary turn's", res.Record)
	}
	want := usageOf(srv.Served())
	if res.Usage != want || want != (agent.Usage{InputTokens: 700, CacheReadTokens: 350, OutputTokens: 70}) {
		t.Errorf("usage %+v, want every token served: %+v", res.Usage, want)
	}
}
