package fakemodel

import (
	"bufio"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// readChatStream reads a Chat Completions stream the way an
// OpenAI-compatible client accumulates it: "data:" lines, each a
// chat.completion.chunk (content deltas appended, tool_calls deltas
// merged by index: id and name first, arguments concatenated), the
// finish_reason of the last choice, usage from a chunk without choices,
// and "data: [DONE]" last.
func readChatStream(t *testing.T, resp *http.Response) (text string, calls []map[string]string, finish string, usage map[string]any) {
	t.Helper()
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("Content-Type = %q", ct)
	}
	sc := bufio.NewScanner(resp.Body)
	done := false
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			continue
		}
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			t.Fatalf("not a data line: %q", line)
		}
		if done {
			t.Fatalf("data after [DONE]: %q", line)
		}
		if data == "[DONE]" {
			done = true
			continue
		}
		var chunk struct {
			Object  string `json:"object"`
			Choices []struct {
				Delta struct {
					Content   string `json:"content"`
					ToolCalls []struct {
						Index    int    `json:"index"`
						ID       string `json:"id"`
						Function struct {
							Name      string `json:"name"`
							Arguments string `json:"arguments"`
						} `json:"function"`
					} `json:"tool_calls"`
				} `json:"delta"`
				FinishReason *string `json:"finish_reason"`
			} `json:"choices"`
			Usage map[string]any `json:"usage"`
		}
		if err := json.Unmarshal([]byte(data), &chunk); err != nil {
			t.Fatalf("chunk is not JSON: %v: %s", err, data)
		}
		if chunk.Object != "chat.completion.chunk" {
			t.Fatalf("object %q", chunk.Object)
		}
		if chunk.Usage != nil {
			usage = chunk.Usage
		}
		for _, c := range chunk.Choices {
			text += c.Delta.Content
			for _, tc := range c.Delta.ToolCalls {
				for len(calls) <= tc.Index {
					calls = append(calls, map[string]string{})
				}
				if tc.ID != "" {
					calls[tc.Index]["id"] = tc.ID
					calls[tc.Index]["name"] = tc.Function.Name
				}
				calls[tc.Index]["arguments"] += tc.Function.Arguments
			}
			if c.FinishReason != nil {
				finish = *c.FinishReason
			}
		}
	}
	if !done {
		t.Fatal("the stream did not end with [DONE]")
	}
	return text, calls, finish, usage
}

func TestChatCompletionsToolTurnsResultsAndUsage(t *testing.T) {
	srv := New(Script{Match: "chat-finding", Turns: []Turn{
		{Text: "Reading.", Calls: []ToolCall{{Name: "read", Input: map[string]any{"filePath": "/w/a.go"}}, {Shell: "go test ./..."}},
			Usage: Usage{InputTokens: 40, OutputTokens: 7, CacheReadTokens: 3}},
		{Calls: []ToolCall{{Name: "read", Input: map[string]any{"filePath": "/w/b.go"}}}},
		{Text: "All good."},
	}})
	hs := httptest.NewServer(srv)
	defer hs.Close()
	tools := []any{
		map[string]any{"type": "function", "function": map[string]any{"name": "read", "parameters": map[string]any{}}},
		map[string]any{"type": "function", "function": map[string]any{"name": "bash", "parameters": map[string]any{}}},
	}
	user := map[string]any{"role": "user", "content": []any{map[string]any{"type": "text", "text": "fix chat-finding"}}}
	text, calls, finish, usage := readChatStream(t, post(t, hs.URL+"/v1/chat/completions", map[string]any{
		"model": "myco-coder", "stream": true, "stream_options": map[string]any{"include_usage": true},
		"messages": []any{map[string]any{"role": "system", "content": "be good"}, user}, "tools": tools,
	}))
	if text != "Reading." || finish != "tool_calls" || len(calls) != 2 {
		t.Fatalf("text %q finish %q calls %v", text, finish, calls)
	}
	if calls[0]["name"] != "read" || calls[0]["arguments"] != `{"filePath":"/w/a.go"}` {
		t.Errorf("read call %v", calls[0])
	}
	var shell map[string]string
	if calls[1]["name"] != "bash" || json.Unmarshal([]byte(calls[1]["arguments"]), &shell) != nil || shell["command"] != "go test ./..." {
		t.Errorf("shell call %v", calls[1])
	}
	// Cached tokens are counted inside prompt_tokens.
	if usage["prompt_tokens"] != 43.0 || usage["completion_tokens"] != 7.0 ||
		usage["prompt_tokens_details"].(map[string]any)["cached_tokens"] != 3.0 {
		t.Errorf("usage %v", usage)
	}

	// The next request carries the assistant's calls and the tool
	// results: the script's second turn.
	assistant := func(text string, calls []map[string]string) map[string]any {
		var tcs []any
		for _, c := range calls {
			tcs = append(tcs, map[string]any{"id": c["id"], "type": "function", "function": map[string]any{"name": c["name"], "arguments": c["arguments"]}})
		}
		return map[string]any{"role": "assistant", "content": text, "tool_calls": tcs}
	}
	history := []any{user, assistant("Reading.", calls),
		map[string]any{"role": "tool", "tool_call_id": calls[0]["id"], "content": "package a"},
		map[string]any{"role": "tool", "tool_call_id": calls[1]["id"], "content": "ok"},
	}
	_, calls2, finish, _ := readChatStream(t, post(t, hs.URL+"/v1/chat/completions", map[string]any{
		"model": "myco-coder", "stream": true, "tools": tools, "messages": history,
	}))
	if len(calls2) != 1 || calls2[0]["arguments"] != `{"filePath":"/w/b.go"}` || finish != "tool_calls" {
		t.Fatalf("second turn: calls %v finish %q", calls2, finish)
	}
	// The third, in plain JSON: each assistant message after tool
	// results is a turn of its own.
	history = append(history, assistant("", calls2),
		map[string]any{"role": "tool", "tool_call_id": calls2[0]["id"], "content": "package b"})
	resp := post(t, hs.URL+"/v1/chat/completions", map[string]any{
		"model": "myco-coder", "tools": tools, "messages": history,
	})
	defer resp.Body.Close()
	var done struct {
		Object  string `json:"object"`
		Choices []struct {
			Message struct {
				Content string `json:"content"`
			} `json:"message"`
			FinishReason string `json:"finish_reason"`
		} `json:"choices"`
		Usage map[string]any `json:"usage"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&done); err != nil {
		t.Fatal(err)
	}
	if done.Object != "chat.completion" || len(done.Choices) != 1 || done.Choices[0].Message.Content != "All good." ||
		done.Choices[0].FinishReason != "stop" || done.Usage["completion_tokens"] != 5.0 {
		t.Errorf("third turn %+v", done)
	}
	if got, want := srv.Served(), (Usage{InputTokens: 40 + 10 + 10, OutputTokens: 7 + 5 + 5, CacheReadTokens: 3}); got != want {
		t.Errorf("served %+v, want %+v", got, want)
	}
	if len(srv.Unanswered()) != 0 || len(srv.Errors()) != 0 {
		t.Errorf("unanswered %v, errors %v", srv.Unanswered(), srv.Errors())
	}
	if r, ok := srv.Result(calls[0]["id"]); !ok || r.Content != "package a" {
		t.Errorf("result of the read: %+v", r)
	}

	// A request without tools is a side request; a stream without
	// include_usage has no usage chunk.
	text, _, _, usage = readChatStream(t, post(t, hs.URL+"/v1/chat/completions", map[string]any{
		"model": "small", "stream": true, "messages": []any{map[string]any{"role": "user", "content": "title?"}},
	}))
	if text != "OK" || usage != nil {
		t.Errorf("side request: text %q usage %v", text, usage)
	}
}

func TestChatCompletionsRefusedInOpenAIsErrorShape(t *testing.T) {
	srv := New()
	srv.Refuse = func(api string, r *http.Request) (int, string) { return 401, "bad key for " + api }
	hs := httptest.NewServer(srv)
	defer hs.Close()
	resp := post(t, hs.URL+"/v1/chat/completions", map[string]any{"model": "m", "messages": []any{}})
	defer resp.Body.Close()
	var body struct {
		Error struct {
			Message string `json:"message"`
			Code    string `json:"code"`
		} `json:"error"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil || resp.StatusCode != 401 ||
		body.Error.Message != "bad key for openai" || body.Error.Code != "invalid_api_key" {
		t.Errorf("status %d body %+v err %v", resp.StatusCode, body, err)
	}
}
