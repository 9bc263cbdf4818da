package claude

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/convergeloop/converge/internal/agent"
	"github.com/convergeloop/converge/internal/agent/agenttest"
	"github.com/convergeloop/converge/internal/emulator/fakemodel"
)

// The providers as Claude Code's users set them up (issue 16, 4): the
// variables in converge's environment, passed by DefaultPassEnv (no
// Options.Env), the CLI's default model (no --model, no ANTHROPIC_MODEL),
// and one fix run — a tool call that edits, then the status record —
// through each.

// userAgent is the backend as a user runs it: converge's environment is
// environ plus a forge token, PassEnv the default.
func userAgent(t *testing.T, bin string, environ ...string) *Agent {
	t.Helper()
	environ = append([]string{"PATH=" + os.Getenv("PATH"), "GH_TOKEN=ghp_" + strings.Repeat("y", 36)}, environ...)
	a, err := New(Options{CLIOptions: agent.CLIOptions{
		Binary: bin, Grace: 2 * time.Second,
		Environ: func() []string { return environ },
	}})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// providerFix runs one fix through a and checks that it edited the file,
// reported its record and counted fakemodel's tokens; it returns the
// model requests (those fakemodel answered from the script).
func providerFix(t *testing.T, a *Agent, srv *fakemodel.Server, dir string) []fakemodel.Request {
	t.Helper()
	file := filepath.Join(dir, "greet.txt")
	res, err := a.Run(context.Background(), agent.Task{
		Kind: agent.TaskKindFix, Workdir: dir, Budget: 3 * time.Minute,
		Findings: []agent.Finding{{ID: "greet-finding", Path: "greet.txt", EndLine: 1, Body: "Say hello to converge."}},
	})
	if err != nil {
		t.Fatalf("run: %v\nstderr: %s", err, res.Stderr)
	}
	agenttest.CheckWire(t, srv)
	if got, _ := os.ReadFile(file); string(got) != "hello converge\n" {
		t.Errorf("greet.txt = %q", got)
	}
	if res.Record.Status != agent.StatusComplete || res.Record.Summary != "greeting changed" {
		t.Errorf("record = %+v", res.Record)
	}
	if u := res.Usage; u.InputTokens != 300 || u.OutputTokens != 30 || !u.CostReported {
		t.Errorf("usage = %+v, want fakemodel's 300 in, 30 out, a cost", u)
	}
	var model []fakemodel.Request
	for _, r := range srv.Requests() {
		if r.Script == 0 {
			model = append(model, r)
		}
	}
	if len(model) < 2 {
		t.Fatalf("fakemodel answered %d model requests, want 2", len(model))
	}
	return model
}

func greetScript(dir string) fakemodel.Script {
	file := filepath.Join(dir, "greet.txt")
	status := `{"status":"complete","next_action":"","needs_extension_minutes":0,"summary":"greeting changed","files_changed":["greet.txt"],"implementer_status":"DONE"}`
	return fakemodel.Script{Match: "greet-finding", Turns: []fakemodel.Turn{
		{Calls: []fakemodel.ToolCall{{Name: "Edit", Input: map[string]any{"file_path": file, "old_string": "hello world", "new_string": "hello converge"}}},
			Usage: fakemodel.Usage{InputTokens: 100, OutputTokens: 10}},
		{Text: "Done.\n" + status, Usage: fakemodel.Usage{InputTokens: 200, OutputTokens: 20}},
	}}
}

func bodyField(t *testing.T, r fakemodel.Request, field string) any {
	t.Helper()
	var b map[string]any
	if err := json.Unmarshal(r.Body, &b); err != nil {
		t.Fatalf("request body: %v", err)
	}
	return b[field]
}

// AG-B1: a Claude login kept in HOME (~/.claude/.credentials.json, as
// `claude` /login writes it on Linux) is what the run uses: Claude Code
// sends its OAuth token as a bearer token to ANTHROPIC_BASE_URL.
func TestAG_B1_RealClaude_LoginInHome(t *testing.T) {
	bin := realCLI(t)
	t.Parallel()
	home := t.TempDir()
	if err := os.MkdirAll(filepath.Join(home, ".claude"), 0o700); err != nil {
		t.Fatal(err)
	}
	const token = "sk-ant-oat01-fakemodel-login"
	login := `{"claudeAiOauth":{"accessToken":"` + token + `","refreshToken":"sk-ant-ort01-fakemodel","expiresAt":4102444800000,` +
		`"scopes":["user:inference","user:profile","user:sessions:claude_code"],"subscriptionType":"max"}}`
	if err := os.WriteFile(filepath.Join(home, ".claude", ".credentials.json"), []byte(login), 0o600); err != nil {
		t.Fatal(err)
	}
	dir := repo(t, "greet.txt", "hello world\n")
	srv, url := agenttest.Serve(t, greetScript(dir))
	a := userAgent(t, bin, "HOME="+home, "ANTHROPIC_BASE_URL="+url)
	if d := a.Describe(context.Background()); d.Credential != "the Claude login in "+filepath.Join(home, ".claude", ".credentials.json") || d.Problem != "" {
		t.Errorf("describe = %+v", d)
	}
	for _, r := range providerFix(t, a, srv, dir) {
		if r.API != "anthropic" || r.Header.Get("Authorization") != "Bearer "+token || r.Header.Get("X-Api-Key") != "" {
			t.Errorf("request %s: api %s, Authorization %q, X-Api-Key %q; want the login's bearer token", r.Path, r.API, r.Header.Get("Authorization"), r.Header.Get("X-Api-Key"))
		}
	}
}

// AG-B1, SEC-2: Claude on Vertex AI as its users set it up
// (CLAUDE_CODE_USE_VERTEX, ANTHROPIC_VERTEX_PROJECT_ID, CLOUD_ML_REGION,
// ANTHROPIC_VERTEX_BASE_URL), with Google's application default
// credentials (GOOGLE_APPLICATION_CREDENTIALS naming a workload identity
// federation file, whose token exchange a local STS answers: the CLI
// reads the file, trades its subject token for an access token and sends
// that as a bearer token), or none for a gateway that adds it
// (CLAUDE_CODE_SKIP_VERTEX_AUTH). The variables pass, and the CLI's
// default model is asked at the project's regional path.
func TestAG_B1_RealClaude_Vertex(t *testing.T) {
	bin := realCLI(t)
	t.Parallel()
	t.Run("gateway", func(t *testing.T) {
		t.Parallel()
		dir := repo(t, "greet.txt", "hello world\n")
		srv, base := agenttest.Serve(t, greetScript(dir))
		a := userAgent(t, bin, "HOME="+t.TempDir(),
			"CLAUDE_CODE_USE_VERTEX=1", "ANTHROPIC_VERTEX_PROJECT_ID=proj-fm", "CLOUD_ML_REGION=europe-west1",
			"ANTHROPIC_VERTEX_BASE_URL="+base+"/v1", "CLAUDE_CODE_SKIP_VERTEX_AUTH=1")
		vertexFix(t, a, srv, dir, "")
	})
	t.Run("application default credentials", func(t *testing.T) {
		t.Parallel()
		dir := repo(t, "greet.txt", "hello world\n")
		srv := fakemodel.New(greetScript(dir))
		const access = "ya29.fakemodel-access"
		var exchanged []url.Values
		var mu sync.Mutex
		hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != "/sts/v1/token" {
				srv.ServeHTTP(w, r)
				return
			}
			// Google's STS token exchange (RFC 8693), as
			// google-auth-library's external account client calls it.
			if err := r.ParseForm(); err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			mu.Lock()
			exchanged = append(exchanged, r.PostForm)
			mu.Unlock()
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"access_token":"` + access + `","issued_token_type":"urn:ietf:params:oauth:token-type:access_token","token_type":"Bearer","expires_in":3600}`))
		}))
		t.Cleanup(hs.Close)
		creds := t.TempDir()
		subject := filepath.Join(creds, "subject-token")
		if err := os.WriteFile(subject, []byte("fakemodel-subject-jwt"), 0o600); err != nil {
			t.Fatal(err)
		}
		file := filepath.Join(creds, "adc.json")
		adc := `{"type":"external_account","audience":"//iam.googleapis.com/projects/1/locations/global/workloadIdentityPools/p/providers/q",` +
			`"subject_token_type":"urn:ietf:params:oauth:token-type:jwt","token_url":"` + hs.URL + `/sts/v1/token",` +
			`"credential_source":{"file":"` + subject + `"}}`
		if err := os.WriteFile(file, []byte(adc), 0o600); err != nil {
			t.Fatal(err)
		}
		a := userAgent(t, bin, "HOME="+t.TempDir(),
			"CLAUDE_CODE_USE_VERTEX=1", "ANTHROPIC_VERTEX_PROJECT_ID=proj-fm", "CLOUD_ML_REGION=europe-west1",
			"ANTHROPIC_VERTEX_BASE_URL="+hs.URL+"/v1", "GOOGLE_APPLICATION_CREDENTIALS="+file)
		if d := a.Describe(context.Background()); d.Credential != "GOOGLE_APPLICATION_CREDENTIALS" {
			t.Errorf("describe = %+v", d)
		}
		vertexFix(t, a, srv, dir, "Bearer "+access)
		mu.Lock()
		defer mu.Unlock()
		if len(exchanged) == 0 || exchanged[0].Get("subject_token") != "fakemodel-subject-jwt" ||
			exchanged[0].Get("grant_type") != "urn:ietf:params:oauth:grant-type:token-exchange" {
			t.Errorf("token exchanges = %v, want the credential file's subject token traded", exchanged)
		}
	})
}

// vertexFix runs providerFix through Vertex and checks every model
// request's path, body and Authorization (auth; "" for none).
func vertexFix(t *testing.T, a *Agent, srv *fakemodel.Server, dir, auth string) {
	t.Helper()
	if d := a.Describe(context.Background()); d.Problem != "" || d.ModelFrom != "the CLI's default" {
		t.Errorf("describe = %+v", d)
	}
	for _, r := range providerFix(t, a, srv, dir) {
		if r.API != "vertex" || !strings.HasPrefix(r.Path, "/v1/projects/proj-fm/locations/europe-west1/publishers/anthropic/models/claude-") ||
			!strings.HasSuffix(r.Path, ":streamRawPredict") || bodyField(t, r, "anthropic_version") != "vertex-2023-10-16" ||
			r.Header.Get("Authorization") != auth {
			t.Errorf("request %s %s: api %s, anthropic_version %v, Authorization %q (want %q)", r.Method, r.Path, r.API,
				bodyField(t, r, "anthropic_version"), r.Header.Get("Authorization"), auth)
		}
	}
}

// AG-B1, SEC-2: Claude on Bedrock as its users set it up
// (CLAUDE_CODE_USE_BEDROCK, AWS_REGION, ANTHROPIC_BEDROCK_BASE_URL), with
// each kind of AWS credential: a Bedrock API key
// (AWS_BEARER_TOKEN_BEDROCK, sent as a bearer token), access keys
// (AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, which sign each request
// with SigV4 for the key's id), or none for a gateway that adds it
// (CLAUDE_CODE_SKIP_BEDROCK_AUTH). The CLI's default model is asked by
// its inference profile, streamed in AWS event-stream framing.
func TestAG_B1_RealClaude_Bedrock(t *testing.T) {
	bin := realCLI(t)
	t.Parallel()
	for _, c := range []struct {
		name string
		env  []string
		auth func(string) bool
	}{
		{"api key", []string{"AWS_BEARER_TOKEN_BEDROCK=fakemodel-bedrock-key"},
			func(h string) bool { return h == "Bearer fakemodel-bedrock-key" }},
		{"access keys", []string{"AWS_ACCESS_KEY_ID=AKIAFAKEMODEL0000000", "AWS_SECRET_ACCESS_KEY=fakemodel-secret", "AWS_SESSION_TOKEN=fakemodel-session"},
			func(h string) bool {
				return strings.HasPrefix(h, "AWS4-HMAC-SHA256 Credential=AKIAFAKEMODEL0000000/") && strings.Contains(h, "/eu-central-1/bedrock/aws4_request")
			}},
		{"gateway", []string{"CLAUDE_CODE_SKIP_BEDROCK_AUTH=1"}, func(h string) bool { return h == "" }},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			dir := repo(t, "greet.txt", "hello world\n")
			srv, url := agenttest.Serve(t, greetScript(dir))
			env := append([]string{"HOME=" + t.TempDir(), "CLAUDE_CODE_USE_BEDROCK=1", "AWS_REGION=eu-central-1",
				"ANTHROPIC_BEDROCK_BASE_URL=" + url}, c.env...)
			a := userAgent(t, bin, env...)
			if d := a.Describe(context.Background()); d.Problem != "" || d.Credential == "" {
				t.Errorf("describe = %+v", d)
			}
			for _, r := range providerFix(t, a, srv, dir) {
				if r.API != "bedrock" || !strings.HasPrefix(r.Path, "/model/") || !strings.HasSuffix(r.Path, "/invoke-with-response-stream") ||
					bodyField(t, r, "anthropic_version") != "bedrock-2023-05-31" || !c.auth(r.Header.Get("Authorization")) {
					t.Errorf("request %s %s: api %s, anthropic_version %v, Authorization %q", r.Method, r.Path, r.API,
						bodyField(t, r, "anthropic_version"), r.Header.Get("Authorization"))
				}
			}
		})
	}
}
