package gemini

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/convergeloop/converge/internal/agent"
)

// fakeCLI is a program that answers --version as Gemini CLI does.
func fakeCLI(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "gemini")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\necho 0.61.0\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return bin
}

// describeWith describes the backend run by bin in converge's
// environment env, with HOME a new directory holding files (path under
// HOME → content); "@HOME" in a value of env is that directory.
func describeWith(t *testing.T, bin, model string, files map[string]string, env ...string) agent.Description {
	t.Helper()
	home := t.TempDir()
	for p, content := range files {
		p = filepath.Join(home, p)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	env = append([]string{"PATH=/usr/bin:/bin", "HOME=" + home, "GH_TOKEN=ghp_secretforgetoken0000000000000000000",
		"GEMINI_CLI_SYSTEM_SETTINGS_PATH=" + filepath.Join(home, "none.json"),
		"GEMINI_CLI_SYSTEM_DEFAULTS_PATH=" + filepath.Join(home, "none.json")}, env...)
	for i, kv := range env {
		env[i] = strings.ReplaceAll(kv, "@HOME", home)
	}
	a, err := New(Options{CLIOptions: agent.CLIOptions{Binary: bin, Model: model,
		Environ: func() []string { return env }, Getenv: func(string) string { return "" }}})
	if err != nil {
		t.Fatal(err)
	}
	return a.Describe(context.Background())
}

// TestAG_B1_GeminiDescribe: converge doctor's view of the backend: the
// CLI's version, the model a run would use and where it comes from, the
// credential's source (a variable's or a file's name, never a value) for
// each provider as Gemini CLI picks it, the variables passed through that
// are set, and the problem that would stop a run.
func TestAG_B1_GeminiDescribe(t *testing.T) {
	bin := fakeCLI(t)
	const secret = "AIza-secret-value"
	for _, c := range []struct {
		name       string
		model      string
		files      map[string]string
		env        []string
		wantModel  string
		modelFrom  string
		credential string
		problem    string
		passEnv    []string
	}{
		{name: "api key, default model", env: []string{"GEMINI_API_KEY=" + secret},
			wantModel: "auto", modelFrom: "the CLI's default", credential: "GEMINI_API_KEY (gemini-api-key from GEMINI_API_KEY)",
			passEnv: []string{"GEMINI_API_KEY"}},
		{name: "api key in ~/.gemini/.env, settings' model", files: map[string]string{
			".gemini/.env":          "GEMINI_API_KEY=" + secret + "\n",
			".gemini/settings.json": "{\n  // chosen with /auth\n  \"security\": {\"auth\": {\"selectedType\": \"gemini-api-key\"}},\n  \"model\": {\"name\": \"gemini-2.5-flash\"}\n}\n"},
			wantModel: "gemini-2.5-flash", modelFrom: ".gemini/settings.json", credential: "GEMINI_API_KEY in ", problem: ""},
		{name: "pinned, GEMINI_MODEL ignored", model: "gemini-x", env: []string{"GEMINI_API_KEY=" + secret, "GEMINI_MODEL=gemini-y"},
			wantModel: "gemini-x", modelFrom: "passed as -m", credential: "GEMINI_API_KEY", passEnv: []string{"GEMINI_API_KEY", "GEMINI_MODEL"}},
		{name: "GEMINI_MODEL", env: []string{"GEMINI_API_KEY=" + secret, "GEMINI_MODEL=gemini-y"},
			wantModel: "gemini-y", modelFrom: "GEMINI_MODEL", credential: "GEMINI_API_KEY"},
		{name: "vertex service account", files: map[string]string{"sa.json": "{}"},
			env:       []string{"GOOGLE_GENAI_USE_VERTEXAI=true", "GOOGLE_CLOUD_PROJECT=p", "GOOGLE_CLOUD_LOCATION=us-central1", "GOOGLE_APPLICATION_CREDENTIALS=@HOME/sa.json"},
			wantModel: "auto", credential: "GOOGLE_APPLICATION_CREDENTIALS (vertex-ai from GOOGLE_GENAI_USE_VERTEXAI)",
			passEnv: []string{"GOOGLE_GENAI_USE_VERTEXAI", "GOOGLE_CLOUD_PROJECT", "GOOGLE_CLOUD_LOCATION", "GOOGLE_APPLICATION_CREDENTIALS"}},
		{name: "vertex gcloud login", files: map[string]string{".config/gcloud/application_default_credentials.json": "{}"},
			env:       []string{"GOOGLE_GENAI_USE_VERTEXAI=true", "GOOGLE_CLOUD_PROJECT=p", "GOOGLE_CLOUD_LOCATION=global"},
			wantModel: "auto", credential: "gcloud application-default login"},
		{name: "vertex express", env: []string{"GOOGLE_GENAI_USE_VERTEXAI=true", "GOOGLE_API_KEY=" + secret},
			wantModel: "auto", credential: "GOOGLE_API_KEY (Vertex AI express mode)"},
		{name: "vertex without project", env: []string{"GOOGLE_GENAI_USE_VERTEXAI=true"},
			wantModel: "auto", problem: "Vertex AI needs GOOGLE_CLOUD_PROJECT and GOOGLE_CLOUD_LOCATION"},
		{name: "login with google", files: map[string]string{".gemini/settings.json": `{"security":{"auth":{"selectedType":"oauth-personal"}}}`,
			".gemini/oauth_creds.json": `{"refresh_token":"` + secret + `"}`},
			wantModel: "auto", credential: "Login with Google ("},
		{name: "login with google, not logged in", files: map[string]string{".gemini/settings.json": `{"security":{"auth":{"selectedType":"oauth-personal"}}}`},
			wantModel: "auto", problem: "not logged in"},
		{name: "nothing", wantModel: "auto", problem: "no auth method"},
		{name: "api key chosen, none set", files: map[string]string{".gemini/settings.json": `{"security":{"auth":{"selectedType":"gemini-api-key"}}}`},
			wantModel: "auto", problem: "no GEMINI_API_KEY"},
		{name: "base URL without settings", env: []string{"GEMINI_API_KEY=" + secret, "GOOGLE_GEMINI_BASE_URL=http://127.0.0.1:9"},
			wantModel: "auto", credential: "GEMINI_API_KEY (gateway from GOOGLE_GEMINI_BASE_URL)", problem: "Invalid auth method selected."},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := describeWith(t, bin, c.model, c.files, slices.Clone(c.env)...)
			if d.Version != "0.61.0" || d.Model != c.wantModel || !strings.Contains(d.ModelFrom, c.modelFrom) {
				t.Errorf("version %q, model %q from %q", d.Version, d.Model, d.ModelFrom)
			}
			if !strings.Contains(d.Credential, c.credential) || (c.credential == "") != (d.Credential == "") {
				t.Errorf("credential %q, want %q", d.Credential, c.credential)
			}
			if !strings.Contains(d.Problem, c.problem) || (c.problem == "") != (d.Problem == "") {
				t.Errorf("problem %q, want %q", d.Problem, c.problem)
			}
			for _, name := range c.passEnv {
				if !slices.Contains(d.PassEnv, name) {
					t.Errorf("pass_env %q lacks %s", d.PassEnv, name)
				}
			}
			b, _ := json.Marshal(d)
			if strings.Contains(string(b), secret) || strings.Contains(string(b), "GH_TOKEN") || strings.Contains(string(b), "ghp_") {
				t.Errorf("the description tells a secret: %s", b)
			}
		})
	}

	// A program that is not Gemini CLI is a problem, whatever else.
	d := describeWith(t, "/bin/false", "", nil, "GEMINI_API_KEY="+secret)
	if d.Version != "" || !strings.Contains(d.Problem, "gave no version") {
		t.Errorf("/bin/false: %+v", d)
	}
}
