package fakemodel

import (
	"encoding/json"
	"net/http/httptest"
	"testing"
)

// geminiAnswer posts body to :generateContent and returns the text of the
// answer.
func geminiAnswer(t *testing.T, url string, body any) string {
	t.Helper()
	resp := post(t, url, body)
	defer resp.Body.Close()
	var r struct {
		Candidates []struct {
			Content struct {
				Parts []struct{ Text string } `json:"parts"`
			} `json:"content"`
		} `json:"candidates"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil || resp.StatusCode != 200 {
		t.Fatalf("status %d: %v", resp.StatusCode, err)
	}
	if len(r.Candidates) != 1 || len(r.Candidates[0].Content.Parts) != 1 {
		t.Fatalf("answer = %+v", r)
	}
	return r.Candidates[0].Content.Parts[0].Text
}

// TestAG_B1_GeminiRouterGetsAJSONAnswer: Gemini CLI's model router asks
// its classifier for JSON of a given schema (no tools: a side request);
// fakemodel answers with JSON of that schema choosing Flash, as the real
// API would, so the CLI routes at once instead of retrying an "OK" for
// about 100 s. Other JSON side requests get a value of their schema;
// plain side requests still get SideText.
func TestAG_B1_GeminiRouterGetsAJSONAnswer(t *testing.T) {
	srv := New()
	hs := httptest.NewServer(srv)
	defer hs.Close()
	user := []any{map[string]any{"role": "user", "parts": []any{map[string]any{"text": "fix the greeting"}}}}
	url := hs.URL + "/v1beta/models/gemini-3.5-flash-lite:generateContent"

	// NumericalClassifierStrategy, as Gemini CLI 0.61 sends it.
	numerical := map[string]any{"contents": user, "generationConfig": map[string]any{
		"temperature": 1, "responseMimeType": "application/json",
		"responseJsonSchema": map[string]any{"type": "OBJECT", "properties": map[string]any{
			"complexity_reasoning": map[string]any{"type": "STRING", "description": "Brief explanation for the score."},
			"complexity_score":     map[string]any{"type": "INTEGER", "description": "Complexity score from 1-100."},
		}, "required": []any{"complexity_reasoning", "complexity_score"}},
	}}
	var score struct {
		Reasoning *string `json:"complexity_reasoning"`
		Score     int     `json:"complexity_score"`
	}
	if text := geminiAnswer(t, url, numerical); json.Unmarshal([]byte(text), &score) != nil || score.Reasoning == nil || score.Score != RoutedScore {
		t.Errorf("numerical classifier answer %q", text)
	}

	// ClassifierStrategy.
	choice := map[string]any{"contents": user, "generationConfig": map[string]any{
		"responseMimeType": "application/json",
		"responseJsonSchema": map[string]any{"type": "OBJECT", "properties": map[string]any{
			"reasoning":    map[string]any{"type": "STRING"},
			"model_choice": map[string]any{"type": "STRING", "enum": []any{"pro", "flash"}},
		}, "required": []any{"reasoning", "model_choice"}},
	}}
	var picked struct {
		Reasoning *string `json:"reasoning"`
		Choice    string  `json:"model_choice"`
	}
	if text := geminiAnswer(t, url, choice); json.Unmarshal([]byte(text), &picked) != nil || picked.Reasoning == nil || picked.Choice != RoutedChoice {
		t.Errorf("classifier answer %q", text)
	}

	// The next-speaker check (lower-case JSON Schema): the enum's first.
	next := map[string]any{"contents": user, "generationConfig": map[string]any{
		"responseMimeType": "application/json",
		"responseSchema": map[string]any{"type": "object", "properties": map[string]any{
			"reasoning": map[string]any{"type": "string"}, "next_speaker": map[string]any{"type": "string", "enum": []any{"user", "model"}},
		}},
	}}
	if text := geminiAnswer(t, url, next); text != `{"next_speaker":"user","reasoning":"fakemodel: reasoning"}` {
		t.Errorf("next-speaker answer %q", text)
	}

	if text := geminiAnswer(t, url, map[string]any{"contents": user}); text != "OK" {
		t.Errorf("plain side answer %q", text)
	}
	for i, r := range srv.Requests() {
		if !r.Side || r.Usage != DefaultUsage {
			t.Errorf("request %d: side %v, usage %+v", i, r.Side, r.Usage)
		}
	}
	if got := srv.Served(); got != (Usage{InputTokens: 40, OutputTokens: 20}) {
		t.Errorf("served %+v", got)
	}
	if e := srv.Errors(); len(e) != 0 {
		t.Errorf("errors %v", e)
	}
}

// TestAG_B1_GeminiVertexPaths: Vertex AI's paths for GenerateContent
// (project and location, or express mode) are answered like the Gemini
// API's; other paths are not Vertex's.
func TestAG_B1_GeminiVertexPaths(t *testing.T) {
	for path, want := range map[string]VertexRoute{
		"/v1beta1/projects/p/locations/us-central1/publishers/google/models/gemini-x:streamGenerateContent": {Project: "p", Location: "us-central1", Model: "gemini-x", Method: "streamGenerateContent"},
		"/v1/projects/p/locations/global/publishers/google/models/gemini-x:generateContent":                 {Project: "p", Location: "global", Model: "gemini-x", Method: "generateContent"},
		"/v1beta1/publishers/google/models/gemini-x:countTokens":                                            {Model: "gemini-x", Method: "countTokens"},
	} {
		if got, ok := ParseVertexPath(path); !ok || got != want {
			t.Errorf("%s: %+v %v, want %+v", path, got, ok, want)
		}
	}
	for _, path := range []string{
		"/v1beta/models/gemini-x:generateContent", "/v1beta1/projects/p/publishers/google/models/m:generateContent",
		"/v1beta1/publishers/google/models/m:embedContent", "/v1beta1/publishers/other/models/m:generateContent",
	} {
		if _, ok := ParseVertexPath(path); ok {
			t.Errorf("%s read as a Vertex path", path)
		}
	}

	srv := New(Script{Turns: []Turn{{Text: "from vertex", Usage: Usage{InputTokens: 7, OutputTokens: 3}}}})
	hs := httptest.NewServer(srv)
	defer hs.Close()
	tools := []any{map[string]any{"functionDeclarations": []any{map[string]any{"name": "read_file"}}}}
	user := []any{map[string]any{"role": "user", "parts": []any{map[string]any{"text": "hi"}}}}
	text := geminiAnswer(t, hs.URL+"/v1beta1/projects/p/locations/us-central1/publishers/google/models/gemini-x:generateContent",
		map[string]any{"contents": user, "tools": tools})
	if text != "from vertex" {
		t.Errorf("answer %q", text)
	}
	if reqs := srv.Requests(); len(reqs) != 1 || reqs[0].API != "gemini" || reqs[0].Usage != (Usage{InputTokens: 7, OutputTokens: 3}) {
		t.Errorf("requests %+v", reqs)
	}
}
