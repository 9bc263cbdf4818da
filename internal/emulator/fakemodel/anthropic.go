package fakemodel

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
)

// The Anthropic Messages API, as far as Claude Code uses it: a request with
// model, messages (user/assistant, content a string or blocks), tools and
// stream; a reply that is a Message, or with stream set the events
// message_start, content_block_start / _delta / _stop per block, message_delta
// (stop_reason, usage) and message_stop (anthropic-sdk-typescript
// src/resources/messages/messages.ts, RawMessageStreamEvent).

type anthropicRequest struct {
	Model    string `json:"model"`
	Stream   bool   `json:"stream"`
	Messages []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
	Tools []struct {
		Name string `json:"name"`
	} `json:"tools"`
}

type anthropicBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
	IsError   bool            `json:"is_error"`
}

// blocks reads a message's content: a string is one text block.
func anthropicBlocks(raw json.RawMessage) []anthropicBlock {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return []anthropicBlock{{Type: "text", Text: s}}
	}
	var bs []anthropicBlock
	_ = json.Unmarshal(raw, &bs)
	return bs
}

// textOf is the text of a tool_result's content (a string or text blocks).
func textOf(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	var parts []string
	for _, b := range anthropicBlocks(raw) {
		if b.Type == "text" {
			parts = append(parts, b.Text)
		}
	}
	return strings.Join(parts, "\n")
}

var msgSeq atomic.Int64

func (s *Server) serveAnthropic(w http.ResponseWriter, r *http.Request) {
	s.serveMessages(w, r, messagesRoute{api: "anthropic"})
}

// messagesRoute is how a provider carries the Messages API: Anthropic's
// own endpoint, or a cloud's (vertex.go, bedrock.go) that names the model
// in its URL, says in its URL whether to stream, and frames the stream
// its own way.
type messagesRoute struct {
	api string
	// model is the model the URL names; "" means the body's.
	model string
	// stream, when set, overrides the body's stream field.
	stream *bool
	// events, when set, starts a stream and returns the function that
	// writes each of its events; nil means server-sent events.
	events func(w http.ResponseWriter) func(event string, data any)
}

func (s *Server) serveMessages(w http.ResponseWriter, r *http.Request, route messagesRoute) {
	api := route.api
	body, err := io.ReadAll(r.Body)
	rec := Request{API: api, Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone(), Body: body, Script: -1}
	var req anthropicRequest
	if err == nil {
		err = json.Unmarshal(body, &req)
	}
	if err != nil {
		s.record(rec)
		s.fail("%s: unreadable request: %v", api, err)
		writeJSON(w, http.StatusBadRequest, map[string]any{"type": "error", "error": map[string]any{"type": "invalid_request_error", "message": err.Error()}})
		return
	}
	if route.model != "" {
		req.Model = route.model
	}
	if route.stream != nil {
		req.Stream = *route.stream
	}

	var user []said
	turn := 0
	prevAssistant := false
	for _, m := range req.Messages {
		isAssistant := m.Role == "assistant"
		if isAssistant && !prevAssistant {
			turn++
		}
		prevAssistant = isAssistant
		if m.Role != "user" {
			continue
		}
		for _, b := range anthropicBlocks(m.Content) {
			switch b.Type {
			case "text":
				user = append(user, said{b.Text, turn})
			case "tool_result":
				rec.Results = append(rec.Results, ToolResult{ID: b.ToolUseID, Content: textOf(b.Content), IsError: b.IsError})
			}
		}
	}

	model := req.Model
	if model == "" {
		model = s.Model
	}
	tools := make([]string, 0, len(req.Tools))
	for _, tl := range req.Tools {
		tools = append(tools, tl.Name)
	}
	t, turn := s.answer(&rec, tools, user, turn)
	at := s.record(rec)

	if !wait(r, t.Delay) {
		return
	}
	type toolUse struct {
		id, name string
		input    json.RawMessage
	}
	var uses []toolUse
	for i, c := range t.Calls {
		name, input := c.Name, mustJSON(c.Input)
		if c.Shell != "" {
			// Claude Code's shell tool is Bash, OpenCode's bash; both take
			// {"command"}.
			name = "Bash"
			if !slices.Contains(tools, "Bash") && slices.Contains(tools, "bash") {
				name = "bash"
			}
			input = mustJSON(map[string]string{"command": c.Shell})
			if !slices.Contains(tools, name) {
				s.fail("%s: shell call but the request offers no Bash tool (tools %v)", api, tools)
			}
		}
		u := toolUse{id: callID("toolu", rec.Script, turn, i), name: name, input: input}
		uses = append(uses, u)
		s.addCall(Call{API: api, ID: u.id, Name: u.name, Input: u.input, Script: rec.Script, Turn: turn})
	}

	usage := t.Usage.orDefault()
	s.served(at, usage)
	stop := "end_turn"
	if len(uses) > 0 {
		stop = "tool_use"
	}
	id := fmt.Sprintf("msg_fm%d_%d_%d", rec.Script+1, turn, msgSeq.Add(1))

	if !req.Stream {
		content := []map[string]any{}
		if t.Text != "" {
			content = append(content, map[string]any{"type": "text", "text": t.Text, "citations": nil})
		}
		for _, u := range uses {
			content = append(content, map[string]any{"type": "tool_use", "id": u.id, "name": u.name, "input": u.input})
		}
		writeJSON(w, http.StatusOK, map[string]any{
			"id": id, "type": "message", "role": "assistant", "model": model,
			"content": content, "stop_reason": stop, "stop_sequence": nil,
			"usage": anthropicUsage(usage, usage.OutputTokens),
		})
		return
	}

	send := func(event string, data any) { sse(w, event, data) }
	if route.events != nil {
		send = route.events(w)
	} else {
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("Cache-Control", "no-cache")
		w.WriteHeader(http.StatusOK)
	}
	send("message_start", map[string]any{"type": "message_start", "message": map[string]any{
		"id": id, "type": "message", "role": "assistant", "model": model,
		"content": []any{}, "stop_reason": nil, "stop_sequence": nil,
		"usage": anthropicUsage(usage, 1),
	}})
	send("ping", map[string]any{"type": "ping"})
	index := 0
	if t.Text != "" {
		send("content_block_start", map[string]any{"type": "content_block_start", "index": index,
			"content_block": map[string]any{"type": "text", "text": ""}})
		for _, c := range chunks(t.Text, 24) {
			send("content_block_delta", map[string]any{"type": "content_block_delta", "index": index,
				"delta": map[string]any{"type": "text_delta", "text": c}})
		}
		send("content_block_stop", map[string]any{"type": "content_block_stop", "index": index})
		index++
	}
	for _, u := range uses {
		send("content_block_start", map[string]any{"type": "content_block_start", "index": index,
			"content_block": map[string]any{"type": "tool_use", "id": u.id, "name": u.name, "input": map[string]any{}}})
		for _, c := range chunks(string(u.input), 24) {
			send("content_block_delta", map[string]any{"type": "content_block_delta", "index": index,
				"delta": map[string]any{"type": "input_json_delta", "partial_json": c}})
		}
		send("content_block_stop", map[string]any{"type": "content_block_stop", "index": index})
		index++
	}
	send("message_delta", map[string]any{"type": "message_delta",
		"delta": map[string]any{"stop_reason": stop, "stop_sequence": nil},
		"usage": map[string]any{
			"output_tokens":               usage.OutputTokens,
			"input_tokens":                usage.InputTokens,
			"cache_read_input_tokens":     usage.CacheReadTokens,
			"cache_creation_input_tokens": 0,
		}})
	send("message_stop", map[string]any{"type": "message_stop"})
}

// anthropicUsage is a Usage object; output is the output_tokens to report
// (message_start carries a placeholder, message_delta the total).
func anthropicUsage(u Usage, output int) map[string]any {
	return map[string]any{
		"input_tokens":                u.InputTokens,
		"output_tokens":               output,
		"cache_creation_input_tokens": 0,
		"cache_read_input_tokens":     u.CacheReadTokens,
		"service_tier":                "standard",
	}
}

func (s *Server) serveCountTokens(w http.ResponseWriter, r *http.Request) {
	s.countTokens(w, r, "anthropic")
}

func (s *Server) countTokens(w http.ResponseWriter, r *http.Request, api string) {
	body, _ := io.ReadAll(r.Body)
	s.record(Request{API: api, Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone(), Body: body, Side: true, Script: -1})
	// A rough count, as the real endpoint's only use here is an estimate.
	writeJSON(w, http.StatusOK, map[string]any{"input_tokens": len(body)/4 + 1})
}
