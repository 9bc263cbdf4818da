package fakemodel

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
)

// The Gemini API, as far as Gemini CLI uses it (through @google/genai):
// POST /v1beta/models/MODEL:streamGenerateContent?alt=sse (or
// :generateContent; Vertex AI's paths for the same, see vertex.go) with contents (role user/model, parts of text,
// functionCall {id, name, args} and functionResponse {id, name,
// response}), tools [{functionDeclarations: [{name …}]}]; the reply is a
// GenerateContentResponse — candidates[0].content.parts, finishReason,
// usageMetadata — or, streaming, several of them as "data: {…}" events
// that the SDK joins. Gemini CLI echoes a functionCall's id in its
// functionResponse.

type geminiPart struct {
	Text         string `json:"text"`
	FunctionCall *struct {
		ID   string `json:"id"`
		Name string `json:"name"`
	} `json:"functionCall"`
	FunctionResponse *struct {
		ID       string          `json:"id"`
		Name     string          `json:"name"`
		Response json.RawMessage `json:"response"`
	} `json:"functionResponse"`
}

type geminiRequest struct {
	Contents []struct {
		Role  string       `json:"role"`
		Parts []geminiPart `json:"parts"`
	} `json:"contents"`
	Tools []struct {
		FunctionDeclarations []struct {
			Name string `json:"name"`
		} `json:"functionDeclarations"`
	} `json:"tools"`
}

// geminiResponseText is a functionResponse's response as a tool result:
// {"output": …} is the text; {"error": …} is an error.
func geminiResponseText(raw json.RawMessage) (string, bool) {
	var r struct {
		Output json.RawMessage `json:"output"`
		Error  json.RawMessage `json:"error"`
	}
	if json.Unmarshal(raw, &r) != nil {
		return string(raw), false
	}
	if len(r.Error) > 0 && string(r.Error) != "null" {
		return string(r.Error), true
	}
	var s string
	if json.Unmarshal(r.Output, &s) == nil {
		return s, false
	}
	return string(r.Output), false
}

func (s *Server) serveGemini(w http.ResponseWriter, r *http.Request, model, method string) {
	body, err := io.ReadAll(r.Body)
	rec := Request{API: "gemini", Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone(), Body: body, Script: -1}
	var req geminiRequest
	if err == nil {
		err = json.Unmarshal(body, &req)
	}
	if err != nil {
		s.record(rec)
		s.fail("gemini: unreadable request: %v", err)
		writeJSON(w, http.StatusBadRequest, map[string]any{"error": map[string]any{"code": 400, "message": err.Error(), "status": "INVALID_ARGUMENT"}})
		return
	}
	if method == "countTokens" {
		rec.Side = true
		s.record(rec)
		writeJSON(w, http.StatusOK, map[string]any{"totalTokens": len(body)/4 + 1})
		return
	}

	var user []said
	turn := 0
	prevModel := false
	for _, c := range req.Contents {
		isModel := c.Role == "model"
		if isModel && !prevModel {
			turn++
		}
		prevModel = isModel
		if isModel {
			continue
		}
		for _, p := range c.Parts {
			switch {
			case p.FunctionResponse != nil:
				text, isErr := geminiResponseText(p.FunctionResponse.Response)
				rec.Results = append(rec.Results, ToolResult{ID: p.FunctionResponse.ID, Content: text, IsError: isErr})
			case p.FunctionCall == nil && p.Text != "":
				user = append(user, said{p.Text, turn})
			}
		}
	}
	var tools []string
	for _, t := range req.Tools {
		for _, f := range t.FunctionDeclarations {
			tools = append(tools, f.Name)
		}
	}

	t, turn := s.answer(&rec, tools, user, turn)
	if rec.Side {
		if text, ok := geminiJSONAnswer(body); ok {
			t.Text = text
		}
	}
	at := s.record(rec)
	if !wait(r, t.Delay) {
		return
	}
	s.served(at, t.Usage.orDefault())

	var calls []map[string]any
	for i, c := range t.Calls {
		name, input := c.Name, mustJSON(c.Input)
		if c.Shell != "" {
			// Gemini CLI's shell tool.
			name, input = "run_shell_command", mustJSON(map[string]string{"command": c.Shell})
			if !slices.Contains(tools, name) {
				s.fail("gemini: shell call but the request offers no run_shell_command tool (tools %v)", tools)
			}
		}
		id := callID("call", rec.Script, turn, i)
		s.addCall(Call{API: "gemini", ID: id, Name: name, Input: input, Script: rec.Script, Turn: turn})
		calls = append(calls, map[string]any{"functionCall": map[string]any{"id": id, "name": name, "args": input}})
	}

	usage := t.Usage.orDefault()
	usageMeta := map[string]any{
		"promptTokenCount":        usage.InputTokens + usage.CacheReadTokens,
		"candidatesTokenCount":    usage.OutputTokens,
		"totalTokenCount":         usage.InputTokens + usage.CacheReadTokens + usage.OutputTokens,
		"cachedContentTokenCount": usage.CacheReadTokens,
	}
	chunk := func(parts []map[string]any, final bool) map[string]any {
		cand := map[string]any{"content": map[string]any{"role": "model", "parts": parts}, "index": 0}
		resp := map[string]any{"candidates": []any{cand}, "modelVersion": model, "responseId": fmt.Sprintf("fm%d", respSeq.Add(1))}
		if final {
			cand["finishReason"] = "STOP"
			resp["usageMetadata"] = usageMeta
		}
		return resp
	}

	if method == "generateContent" {
		var parts []map[string]any
		if t.Text != "" {
			parts = append(parts, map[string]any{"text": t.Text})
		}
		writeJSON(w, http.StatusOK, chunk(append(parts, calls...), true))
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	data := func(v any) {
		b, _ := json.Marshal(v)
		fmt.Fprintf(w, "data: %s\r\n\r\n", b)
		if f, ok := w.(http.Flusher); ok {
			f.Flush()
		}
	}
	// The last chunk carries the last text, the calls, finishReason and
	// usage, as the real API's does.
	pieces := chunks(t.Text, 24)
	last := []map[string]any{}
	if n := len(pieces); n > 0 {
		for _, c := range pieces[:n-1] {
			data(chunk([]map[string]any{{"text": c}}, false))
		}
		last = append(last, map[string]any{"text": pieces[n-1]})
	}
	data(chunk(append(last, calls...), true))
}

// geminiRoute splits /v1beta/models/MODEL:METHOD, or a Vertex AI path
// (ParseVertexPath).
func geminiRoute(path string) (model, method string, ok bool) {
	rest, ok := strings.CutPrefix(path, "/v1beta/models/")
	if !ok {
		if v, ok := ParseVertexPath(path); ok {
			return v.Model, v.Method, true
		}
		return "", "", false
	}
	model, method, ok = strings.Cut(rest, ":")
	switch method {
	case "streamGenerateContent", "generateContent", "countTokens":
		return model, method, ok
	}
	return "", "", false
}

// served sets the usage the reply to request i reported.
func (s *Server) served(i int, u Usage) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests[i].Usage = u
}

// Served is the usage of every reply sent so far, summed: what a CLI that
// counts to the last token reports.
func (s *Server) Served() Usage {
	s.mu.Lock()
	defer s.mu.Unlock()
	var sum Usage
	for _, r := range s.requests {
		sum.InputTokens += r.Usage.InputTokens
		sum.OutputTokens += r.Usage.OutputTokens
		sum.CacheReadTokens += r.Usage.CacheReadTokens
	}
	return sum
}
