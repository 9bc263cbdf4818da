package fakemodel

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"hash/crc32"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// Claude on Vertex: the Messages API under a model's resource path, the
// model from the path, streamed or not by the method; a Vertex request is
// recorded as api "vertex", and refused in Google's error shape.
func TestVertexRawPredictRoutes(t *testing.T) {
	srv := New(Script{Turns: []Turn{{Text: "from vertex", Calls: []ToolCall{{Shell: "true"}}, Usage: Usage{InputTokens: 9, OutputTokens: 4}}}})
	hs := httptest.NewServer(srv)
	defer hs.Close()
	base := hs.URL + "/v1/projects/proj/locations/us-east5/publishers/anthropic/models/claude-x"
	body := map[string]any{"anthropic_version": "vertex-2023-10-16", "stream": true, "tools": bashTool,
		"messages": []any{map[string]any{"role": "user", "content": "hi"}}}

	msg := anthropicMessage(t, readSSE(t, post(t, base+":streamRawPredict", body)))
	if msg["model"] != "claude-x" || msg["content"].([]map[string]any)[0]["text"] != "from vertex" ||
		msg["usage"].(map[string]any)["output_tokens"] != 4.0 {
		t.Errorf("streamed message = %v", msg)
	}

	body["stream"] = false
	resp := post(t, base+":rawPredict", body)
	var plain map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&plain); err != nil || resp.StatusCode != 200 {
		t.Fatalf("rawPredict: %d %v", resp.StatusCode, err)
	}
	resp.Body.Close()
	if plain["type"] != "message" || plain["model"] != "claude-x" || plain["stop_reason"] != "tool_use" {
		t.Errorf("rawPredict message = %v", plain)
	}
	resp = post(t, hs.URL+"/v1/projects/proj/locations/us-east5/publishers/anthropic/models/count-tokens:rawPredict", body)
	var count map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&count)
	resp.Body.Close()
	if resp.StatusCode != 200 || count["input_tokens"] == nil {
		t.Errorf("count-tokens: %d %v", resp.StatusCode, count)
	}
	if u := srv.Served(); u != (Usage{InputTokens: 18, OutputTokens: 8}) {
		t.Errorf("served %+v, want the two replies' usage", u)
	}
	for _, r := range srv.Requests() {
		if r.API != "vertex" {
			t.Errorf("request %s recorded as api %q", r.Path, r.API)
		}
	}
	if e := srv.Errors(); len(e) != 0 {
		t.Errorf("errors = %v", e)
	}

	srv.Refuse = func(api string, _ *http.Request) (int, string) { return 403, "denied for " + api }
	resp = post(t, base+":streamRawPredict", body)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 403 || !strings.Contains(string(b), `"status":"PERMISSION_DENIED"`) || !strings.Contains(string(b), "denied for vertex") {
		t.Errorf("refused: %d %s", resp.StatusCode, b)
	}
	for _, p := range []string{"/v1/projects/p/locations/r/publishers/google/models/gemini:streamRawPredict",
		"/v1/projects/p/locations/r/publishers/anthropic/models/m:predict", "/v1/projects/p/models/m:rawPredict"} {
		if _, ok := anthropicVertexRoute(p); ok {
			t.Errorf("anthropicVertexRoute(%s) ok", p)
		}
	}
}

// readEventStream decodes AWS event-stream messages, checking each
// length and both CRCs, and returns each message's headers and payload.
func readEventStream(t *testing.T, b []byte) (headers []map[string]string, payloads [][]byte) {
	t.Helper()
	for len(b) > 0 {
		if len(b) < 16 {
			t.Fatalf("%d bytes left, less than a message", len(b))
		}
		total := binary.BigEndian.Uint32(b[0:4])
		hlen := binary.BigEndian.Uint32(b[4:8])
		if crc32.ChecksumIEEE(b[0:8]) != binary.BigEndian.Uint32(b[8:12]) {
			t.Fatal("prelude CRC mismatch")
		}
		if int(total) > len(b) {
			t.Fatalf("message of %d bytes, %d left", total, len(b))
		}
		m := b[:total]
		if crc32.ChecksumIEEE(m[:total-4]) != binary.BigEndian.Uint32(m[total-4:]) {
			t.Fatal("message CRC mismatch")
		}
		h := map[string]string{}
		hb := m[12 : 12+hlen]
		for len(hb) > 0 {
			n := int(hb[0])
			name := string(hb[1 : 1+n])
			if hb[1+n] != 7 {
				t.Fatalf("header %s of type %d, want 7 (string)", name, hb[1+n])
			}
			vl := int(binary.BigEndian.Uint16(hb[2+n : 4+n]))
			h[name] = string(hb[4+n : 4+n+vl])
			hb = hb[4+n+vl:]
		}
		headers = append(headers, h)
		payloads = append(payloads, m[12+hlen:total-4])
		b = b[total:]
	}
	return headers, payloads
}

// Claude on Bedrock: invoke-with-response-stream answers with the
// Messages stream's events, each base64 in a "chunk" event of the AWS
// event stream; invoke with a Message; the region's inference profiles
// are listed (none); a refusal is Bedrock's {"message"} with its
// exception's name in X-Amzn-ErrorType.
func TestBedrockInvokeRoutes(t *testing.T) {
	srv := New(Script{Turns: []Turn{{Text: "from bedrock", Calls: []ToolCall{{Shell: "true"}}, Usage: Usage{InputTokens: 8, OutputTokens: 3}}}})
	hs := httptest.NewServer(srv)
	defer hs.Close()
	model := "us.anthropic.claude-x-v1%3A0"
	body := map[string]any{"anthropic_version": "bedrock-2023-05-31", "tools": bashTool,
		"messages": []any{map[string]any{"role": "user", "content": "hi"}}}

	resp := post(t, hs.URL+"/model/"+model+"/invoke-with-response-stream", body)
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/vnd.amazon.eventstream" {
		t.Fatalf("stream: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	headers, payloads := readEventStream(t, raw)
	var evs []sseEvent
	for i, p := range payloads {
		if h := headers[i]; h[":event-type"] != "chunk" || h[":message-type"] != "event" || h[":content-type"] != "application/json" {
			t.Errorf("headers %v", h)
		}
		var chunk struct {
			Bytes string `json:"bytes"`
		}
		if err := json.Unmarshal(p, &chunk); err != nil {
			t.Fatalf("payload %s: %v", p, err)
		}
		inner, err := base64.StdEncoding.DecodeString(chunk.Bytes)
		if err != nil {
			t.Fatal(err)
		}
		var data map[string]any
		if err := json.Unmarshal(inner, &data); err != nil {
			t.Fatal(err)
		}
		evs = append(evs, sseEvent{Name: data["type"].(string), Data: data})
	}
	msg := anthropicMessage(t, evs)
	if msg["model"] != "us.anthropic.claude-x-v1:0" || msg["content"].([]map[string]any)[0]["text"] != "from bedrock" ||
		msg["usage"].(map[string]any)["output_tokens"] != 3.0 || msg["stop_reason"] != "tool_use" {
		t.Errorf("streamed message = %v", msg)
	}

	resp = post(t, hs.URL+"/model/"+model+"/invoke", body)
	var plain map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&plain)
	resp.Body.Close()
	if resp.StatusCode != 200 || plain["type"] != "message" || plain["model"] != "us.anthropic.claude-x-v1:0" {
		t.Errorf("invoke: %d %v", resp.StatusCode, plain)
	}

	resp, err := http.Get(hs.URL + "/inference-profiles?type=SYSTEM_DEFINED")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !bytes.Contains(b, []byte(`"inferenceProfileSummaries":[]`)) {
		t.Errorf("inference profiles: %d %s", resp.StatusCode, b)
	}
	for _, r := range srv.Requests() {
		if r.API != "bedrock" {
			t.Errorf("request %s recorded as api %q", r.Path, r.API)
		}
	}
	if e := srv.Errors(); len(e) != 0 {
		t.Errorf("errors = %v", e)
	}

	srv.Refuse = func(api string, _ *http.Request) (int, string) { return 403, "denied for " + api }
	resp = post(t, hs.URL+"/model/"+model+"/invoke-with-response-stream", body)
	b, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 403 || resp.Header.Get("X-Amzn-ErrorType") != "AccessDeniedException" || string(bytes.TrimSpace(b)) != `{"message":"denied for bedrock"}` {
		t.Errorf("refused: %d %s %s", resp.StatusCode, resp.Header.Get("X-Amzn-ErrorType"), b)
	}
}

// The event-stream encoding of one message: its lengths as the encoding
// defines them, and CRCs that check. (That the real Bedrock client reads
// it is TestAG_B1_RealClaude_Bedrock's, in the claude package.)
func TestEventStreamMessageFraming(t *testing.T) {
	m := EventStreamMessage([][2]string{{":event-type", "chunk"}}, []byte("{}"))
	hlen := 1 + len(":event-type") + 1 + 2 + len("chunk")
	if got := binary.BigEndian.Uint32(m[0:4]); int(got) != len(m) || len(m) != 12+hlen+2+4 {
		t.Errorf("total length %d, message %d bytes, want %d", got, len(m), 12+hlen+2+4)
	}
	if got := binary.BigEndian.Uint32(m[4:8]); int(got) != hlen {
		t.Errorf("headers length %d, want %d", got, hlen)
	}
	h, p := readEventStream(t, m)
	if len(h) != 1 || h[0][":event-type"] != "chunk" || string(p[0]) != "{}" {
		t.Errorf("decoded %v %q", h, p)
	}
}
