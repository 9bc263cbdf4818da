package fakemodel

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync/atomic"
	"time"
)

// The OpenAI Chat Completions API (POST /v1/chat/completions), as far as
// an OpenAI-compatible client uses it — OpenCode's custom providers
// (@ai-sdk/openai-compatible) talk it to any base URL: a request with
// model, messages (system/user/assistant/tool, content a string or text
// parts; an assistant's tool_calls; a tool message's tool_call_id), tools
// ({type: function, function: {name}}) and stream; a reply that is a
// chat.completion, or with stream set chat.completion.chunk events (a
// role delta, content deltas, tool_calls deltas by index with the id and
// name first and the arguments in pieces, a last chunk with the
// finish_reason, with stream_options.include_usage a chunk with usage and
// no choices) and "data: [DONE]" (openai-node
// src/resources/chat/completions/completions.ts ChatCompletionChunk;
// ai-sdk packages/openai-compatible
// src/chat/openai-compatible-chat-language-model.ts reads the same).

type chatRequest struct {
	Model         string `json:"model"`
	Stream        bool   `json:"stream"`
	StreamOptions struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	Messages []chatMessage `json:"messages"`
	Tools    []struct {
		Type     string `json:"type"`
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	} `json:"tools"`
}

type chatMessage struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	ToolCallID string          `json:"tool_call_id"`
}

var chatSeq atomic.Int64

func (s *Server) serveChat(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	rec := Request{API: "openai", Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone(), Body: body, Script: -1}
	var req chatRequest
	if err == nil {
		err = json.Unmarshal(body, &req)
	}
	if err != nil {
		s.record(rec)
		s.fail("chat: unreadable request: %v", err)
		writeJSON(w, http.StatusBadRequest, map[string]any{"error": map[string]any{"type": "invalid_request_error", "message": err.Error()}})
		return
	}

	var user []said
	turn := 0
	prevAssistant := false
	for _, m := range req.Messages {
		// A model turn is a run of assistant messages; the tool messages
		// that answer its calls end it.
		isAssistant := m.Role == "assistant"
		if isAssistant && !prevAssistant {
			turn++
		}
		prevAssistant = isAssistant
		switch m.Role {
		case "user":
			user = append(user, said{responsesText(m.Content), turn})
		case "tool":
			rec.Results = append(rec.Results, ToolResult{ID: m.ToolCallID, Content: responsesText(m.Content)})
		}
	}

	model := req.Model
	if model == "" {
		model = s.Model
	}
	var tools []string
	for _, tl := range req.Tools {
		tools = append(tools, tl.Function.Name)
	}
	t, turn := s.answer(&rec, tools, user, turn)
	at := s.record(rec)

	if !wait(r, t.Delay) {
		return
	}
	type call struct{ id, name, args string }
	var calls []call
	for i, c := range t.Calls {
		name, input := c.Name, mustJSON(c.Input)
		if c.Shell != "" {
			// OpenCode's shell tool is bash {"command", "description"}.
			name = "bash"
			input = mustJSON(map[string]string{"command": c.Shell, "description": "run a command"})
			if !slices.Contains(tools, name) {
				s.fail("chat: shell call but the request offers no bash tool (tools %v)", tools)
			}
		}
		id := callID("call", rec.Script, turn, i)
		calls = append(calls, call{id: id, name: name, args: string(input)})
		s.addCall(Call{API: "openai", ID: id, Name: name, Input: input, Script: rec.Script, Turn: turn})
	}

	u := t.Usage.orDefault()
	s.served(at, u)
	// Chat Completions counts cached tokens inside prompt_tokens.
	prompt := u.InputTokens + u.CacheReadTokens
	usage := map[string]any{
		"prompt_tokens": prompt, "completion_tokens": u.OutputTokens, "total_tokens": prompt + u.OutputTokens,
		"prompt_tokens_details":     map[string]any{"cached_tokens": u.CacheReadTokens},
		"completion_tokens_details": map[string]any{"reasoning_tokens": 0},
	}
	finish := "stop"
	if len(calls) > 0 {
		finish = "tool_calls"
	}
	id := fmt.Sprintf("chatcmpl-fm%d", chatSeq.Add(1))
	created := time.Now().Unix()

	if !req.Stream {
		msg := map[string]any{"role": "assistant", "content": nil, "refusal": nil}
		if t.Text != "" {
			msg["content"] = t.Text
		}
		if len(calls) > 0 {
			var tc []any
			for _, c := range calls {
				tc = append(tc, map[string]any{"id": c.id, "type": "function", "function": map[string]any{"name": c.name, "arguments": c.args}})
			}
			msg["tool_calls"] = tc
		}
		writeJSON(w, http.StatusOK, map[string]any{
			"id": id, "object": "chat.completion", "created": created, "model": model,
			"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish, "logprobs": nil}},
			"usage":   usage,
		})
		return
	}

	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	chunk := func(delta map[string]any, finish any) {
		data(w, map[string]any{
			"id": id, "object": "chat.completion.chunk", "created": created, "model": model,
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": nil}},
		})
	}
	chunk(map[string]any{"role": "assistant", "content": ""}, nil)
	for _, c := range chunks(t.Text, 24) {
		chunk(map[string]any{"content": c}, nil)
	}
	for i, c := range calls {
		chunk(map[string]any{"tool_calls": []any{map[string]any{"index": i, "id": c.id, "type": "function",
			"function": map[string]any{"name": c.name, "arguments": ""}}}}, nil)
		for _, a := range chunks(c.args, 24) {
			chunk(map[string]any{"tool_calls": []any{map[string]any{"index": i, "function": map[string]any{"arguments": a}}}}, nil)
		}
	}
	chunk(map[string]any{}, finish)
	if req.StreamOptions.IncludeUsage {
		data(w, map[string]any{"id": id, "object": "chat.completion.chunk", "created": created, "model": model,
			"choices": []any{}, "usage": usage})
	}
	fmt.Fprint(w, "data: [DONE]\n\n")
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
}

// data writes one server-sent event without an event name, as Chat
// Completions streams are, and flushes it.
func data(w http.ResponseWriter, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // only our own maps are written
	}
	fmt.Fprintf(w, "data: %s\n\n", b)
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
}
