package fakemodel

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"time"
)

// The OpenAI Responses API, as far as Codex uses it: a request with model,
// input (message, function_call, function_call_output, custom_tool_call,
// custom_tool_call_output … items), tools and stream; a reply that is a
// Response, or with stream set the events response.created,
// response.in_progress, per output item response.output_item.added /
// .done with the text, arguments or custom tool input deltas in between,
// and response.completed with usage (openai-node
// src/resources/responses/responses.ts; codex-rs codex-api
// src/sse/responses.rs reads output_item.added/.done, output_text.delta,
// response.created, .failed and .completed).
//
// Codex's default model (0.169: gpt-6.1-sol through the built-in openai
// provider) sends no tools field: its tools come as an input item of type
// additional_tools, in namespaces, and its one way to run anything is the
// freeform (custom) tool exec, whose input is JavaScript that calls the
// nested tools (tools.exec_command({cmd}) …). A Shell call then becomes a
// custom_tool_call of exec whose input runs the command through
// exec_command; its result comes back as a custom_tool_call_output.
//
// The built-in provider tries a WebSocket first (GET /v1/responses with
// Upgrade: websocket); the server answers 426 Upgrade Required, on which
// Codex goes over to HTTP at once.

type responsesRequest struct {
	Model  string          `json:"model"`
	Stream bool            `json:"stream"`
	Input  json.RawMessage `json:"input"`
	Tools  []responsesTool `json:"tools"`
}

// responsesTool is a tool a request offers: a function, a custom
// (freeform) tool, a built-in one (web_search …), or a namespace holding
// more.
type responsesTool struct {
	Type  string          `json:"type"`
	Name  string          `json:"name"`
	Tools []responsesTool `json:"tools"`
}

type responsesItem struct {
	Type    string          `json:"type"`
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
	CallID  string          `json:"call_id"`
	Output  json.RawMessage `json:"output"`
	// Tools are an additional_tools item's.
	Tools []responsesTool `json:"tools"`
}

// offered is what a request offers the model: each tool's name and type
// ("function", "custom" …), in order, namespaces flattened.
type offered struct {
	names []string
	types map[string]string
}

func (o *offered) add(tools []responsesTool) {
	for _, t := range tools {
		if t.Type == "namespace" {
			o.add(t.Tools)
			continue
		}
		if t.Name == "" {
			continue // a built-in tool (web_search …)
		}
		if _, dup := o.types[t.Name]; !dup {
			o.names = append(o.names, t.Name)
		}
		o.types[t.Name] = t.Type
	}
}

// codeModeTool is Codex's freeform tool that runs JavaScript calling its
// nested tools; codeModeShell is the input that runs cmd through its
// exec_command and returns the command's output.
const codeModeTool = "exec"

func codeModeShell(cmd string) string {
	arg, _ := json.Marshal(map[string]any{"cmd": cmd})
	return "const r = await tools.exec_command(" + string(arg) + ");\n" +
		"text(typeof r === \"string\" ? r : r.output);\n"
}

// responsesText is the text of a content or output field: a string, or
// parts with a text field (input_text, output_text).
func responsesText(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct {
		Text string `json:"text"`
	}
	_ = json.Unmarshal(raw, &parts)
	var out []string
	for _, p := range parts {
		out = append(out, p.Text)
	}
	return strings.Join(out, "\n")
}

// modelItem tells the items the model produced (its earlier turns) from
// what the client sent.
func modelItem(it responsesItem) bool {
	switch it.Type {
	case "function_call", "custom_tool_call", "local_shell_call", "reasoning", "web_search_call":
		return true
	case "message", "":
		return it.Role == "assistant"
	}
	return false
}

// shellTools are Codex's shell tools, most preferred first, and how each
// takes a command line (codex-protocol src/models.rs ShellToolCallParams,
// ShellCommandToolCallParams; the exec_command schema Codex 0.169 sends:
// {"cmd": string, …}).
var shellTools = []struct {
	name string
	args func(cmd string) any
}{
	{"exec_command", func(cmd string) any { return map[string]any{"cmd": cmd} }},
	{"shell_command", func(cmd string) any { return map[string]any{"command": cmd} }},
	{"shell", func(cmd string) any { return map[string]any{"command": []string{"bash", "-lc", cmd}} }},
}

var respSeq atomic.Int64

func (s *Server) serveResponses(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	rec := Request{API: "openai", Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone(), Body: body, Script: -1}
	var req responsesRequest
	if err == nil {
		err = json.Unmarshal(body, &req)
	}
	var items []responsesItem
	if err == nil {
		var text string
		if json.Unmarshal(req.Input, &text) == nil {
			items = []responsesItem{{Type: "message", Role: "user", Content: req.Input}}
		} else if len(req.Input) > 0 {
			err = json.Unmarshal(req.Input, &items)
		}
	}
	if err != nil {
		s.record(rec)
		s.fail("openai: unreadable request: %v", err)
		writeJSON(w, http.StatusBadRequest, map[string]any{"error": map[string]any{"type": "invalid_request_error", "message": err.Error()}})
		return
	}

	var user []said
	turn := 0
	prevModel := false
	for _, it := range items {
		m := modelItem(it)
		if m && !prevModel {
			turn++
		}
		prevModel = m
		switch {
		case (it.Type == "message" || it.Type == "") && it.Role == "user":
			user = append(user, said{responsesText(it.Content), turn})
		case it.Type == "function_call_output", it.Type == "custom_tool_call_output":
			rec.Results = append(rec.Results, ToolResult{ID: it.CallID, Content: responsesText(it.Output)})
		}
	}

	model := req.Model
	if model == "" {
		model = s.Model
	}
	offer := offered{types: map[string]string{}}
	offer.add(req.Tools)
	for _, it := range items {
		if it.Type == "additional_tools" {
			offer.add(it.Tools)
		}
	}
	tools := offer.names
	t, turn := s.answer(&rec, tools, user, turn)
	s.record(rec)

	if !wait(r, t.Delay) {
		return
	}
	seq := respSeq.Add(1)
	respID := fmt.Sprintf("resp_fm%d", seq)
	var output []map[string]any
	if t.Text != "" {
		output = append(output, map[string]any{
			"id": fmt.Sprintf("msg_fm%d", seq), "type": "message", "role": "assistant", "status": "completed",
			"content": []any{map[string]any{"type": "output_text", "text": t.Text, "annotations": []any{}}},
		})
	}
	for i, c := range t.Calls {
		name, args := c.Name, c.Input
		custom, freeform := offer.types[name] == "custom", ""
		if c.Shell != "" {
			name, custom = "", false
			for _, st := range shellTools {
				if offer.types[st.name] == "function" {
					name, args = st.name, st.args(c.Shell)
					break
				}
			}
			if name == "" && offer.types[codeModeTool] == "custom" {
				name, custom, freeform = codeModeTool, true, codeModeShell(c.Shell)
			}
			if name == "" {
				s.fail("openai: shell call but the request offers no shell tool (tools %v)", tools)
				name, args = shellTools[0].name, shellTools[0].args(c.Shell)
			}
		} else if str, ok := args.(string); custom && ok {
			freeform = str
		} else if custom {
			freeform = string(mustJSON(args))
		}
		id := callID("call", rec.Script, turn, i)
		if custom {
			// A custom tool's input is free text; Call.Input holds it
			// as a JSON string.
			s.addCall(Call{API: "openai", ID: id, Name: name, Input: mustJSON(freeform), Script: rec.Script, Turn: turn})
			output = append(output, map[string]any{
				"id": fmt.Sprintf("ctc_fm%d_%d", seq, i), "type": "custom_tool_call", "status": "completed",
				"call_id": id, "name": name, "input": freeform,
			})
			continue
		}
		input := mustJSON(args)
		s.addCall(Call{API: "openai", ID: id, Name: name, Input: input, Script: rec.Script, Turn: turn})
		output = append(output, map[string]any{
			"id": fmt.Sprintf("fc_fm%d_%d", seq, i), "type": "function_call", "status": "completed",
			"call_id": id, "name": name, "arguments": string(input),
		})
	}

	usage := t.Usage.orDefault()
	response := func(status string, out []map[string]any, withUsage bool) map[string]any {
		resp := map[string]any{
			"id": respID, "object": "response", "created_at": time.Now().Unix(), "status": status,
			"model": model, "output": out, "error": nil, "incomplete_details": nil,
			"instructions": nil, "metadata": map[string]any{}, "parallel_tool_calls": true,
			"temperature": nil, "top_p": nil, "tool_choice": "auto", "tools": []any{},
		}
		if withUsage {
			// OpenAI counts cached tokens inside input_tokens.
			input := usage.InputTokens + usage.CacheReadTokens
			resp["usage"] = map[string]any{
				"input_tokens":          input,
				"input_tokens_details":  map[string]any{"cached_tokens": usage.CacheReadTokens},
				"output_tokens":         usage.OutputTokens,
				"output_tokens_details": map[string]any{"reasoning_tokens": 0},
				"total_tokens":          input + usage.OutputTokens,
			}
		}
		return resp
	}

	if !req.Stream {
		writeJSON(w, http.StatusOK, response("completed", output, true))
		return
	}

	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	n := 0
	ev := func(typ string, fields map[string]any) {
		fields["type"] = typ
		fields["sequence_number"] = n
		n++
		sse(w, typ, fields)
	}
	ev("response.created", map[string]any{"response": response("in_progress", []map[string]any{}, false)})
	ev("response.in_progress", map[string]any{"response": response("in_progress", []map[string]any{}, false)})
	for oi, item := range output {
		id := item["id"].(string)
		switch item["type"] {
		case "message":
			text := t.Text
			ev("response.output_item.added", map[string]any{"output_index": oi, "item": map[string]any{
				"id": id, "type": "message", "role": "assistant", "status": "in_progress", "content": []any{}}})
			part := map[string]any{"type": "output_text", "text": "", "annotations": []any{}}
			ev("response.content_part.added", map[string]any{"output_index": oi, "item_id": id, "content_index": 0, "part": part})
			for _, c := range chunks(text, 24) {
				ev("response.output_text.delta", map[string]any{"output_index": oi, "item_id": id, "content_index": 0, "delta": c, "logprobs": []any{}})
			}
			ev("response.output_text.done", map[string]any{"output_index": oi, "item_id": id, "content_index": 0, "text": text, "logprobs": []any{}})
			ev("response.content_part.done", map[string]any{"output_index": oi, "item_id": id, "content_index": 0,
				"part": map[string]any{"type": "output_text", "text": text, "annotations": []any{}}})
		case "function_call":
			args := item["arguments"].(string)
			ev("response.output_item.added", map[string]any{"output_index": oi, "item": map[string]any{
				"id": id, "type": "function_call", "status": "in_progress",
				"call_id": item["call_id"], "name": item["name"], "arguments": ""}})
			for _, c := range chunks(args, 24) {
				ev("response.function_call_arguments.delta", map[string]any{"output_index": oi, "item_id": id, "delta": c})
			}
			ev("response.function_call_arguments.done", map[string]any{"output_index": oi, "item_id": id, "name": item["name"], "arguments": args})
		case "custom_tool_call":
			input := item["input"].(string)
			ev("response.output_item.added", map[string]any{"output_index": oi, "item": map[string]any{
				"id": id, "type": "custom_tool_call", "status": "in_progress",
				"call_id": item["call_id"], "name": item["name"], "input": ""}})
			for _, c := range chunks(input, 24) {
				ev("response.custom_tool_call_input.delta", map[string]any{"output_index": oi, "item_id": id, "delta": c})
			}
			ev("response.custom_tool_call_input.done", map[string]any{"output_index": oi, "item_id": id, "input": input})
		}
		ev("response.output_item.done", map[string]any{"output_index": oi, "item": item})
	}
	ev("response.completed", map[string]any{"response": response("completed", output, true)})
}

// serveResponsesUpgrade answers the WebSocket handshake of Codex's
// built-in provider: 426 Upgrade Required, no WebSocket here, on which
// Codex uses HTTP (POST /v1/responses) at once instead of retrying.
func (s *Server) serveResponsesUpgrade(w http.ResponseWriter, r *http.Request) {
	if !strings.EqualFold(r.Header.Get("Upgrade"), "websocket") {
		s.record(Request{API: "openai", Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone(), Script: -1})
		s.fail("unexpected request %s %s", r.Method, r.URL)
		http.Error(w, `{"error":{"type":"invalid_request_error","message":"fakemodel: no such endpoint"}}`, http.StatusNotFound)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusUpgradeRequired)
	fmt.Fprint(w, `{"error":{"type":"invalid_request_error","message":"fakemodel: use HTTP, not a WebSocket","param":null,"code":null}}`)
}
