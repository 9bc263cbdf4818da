package fakemodel

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// sseEvent is one server-sent event as a client reads it.
type sseEvent struct {
	Name string
	Data map[string]any
}

func post(t *testing.T, url string, body any) *http.Response {
	t.Helper()
	b, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Post(url, "application/json", strings.NewReader(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// readSSE reads an event stream: "event:" and "data:" lines, a blank line
// ending each event; every data is a JSON object whose "type" is the
// event's name.
func readSSE(t *testing.T, resp *http.Response) []sseEvent {
	t.Helper()
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("Content-Type = %q", ct)
	}
	var out []sseEvent
	var cur sseEvent
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			cur.Name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &cur.Data); err != nil {
				t.Fatalf("data is not JSON: %v: %s", err, line)
			}
		case line == "":
			if cur.Data["type"] != cur.Name {
				t.Fatalf("event %q carries type %v", cur.Name, cur.Data["type"])
			}
			out = append(out, cur)
			cur = sseEvent{}
		}
	}
	return out
}

// anthropicMessage accumulates a Messages stream the way the SDK's
// MessageStream does: message_start first, blocks by index, text deltas
// appended, input_json_delta partial_json concatenated and parsed at the
// end, stop_reason and usage.output_tokens from message_delta,
// message_stop last.
func anthropicMessage(t *testing.T, evs []sseEvent) map[string]any {
	t.Helper()
	if len(evs) < 2 || evs[0].Name != "message_start" || evs[len(evs)-1].Name != "message_stop" {
		t.Fatalf("stream does not run message_start … message_stop: %v", names(evs))
	}
	msg := evs[0].Data["message"].(map[string]any)
	var content []map[string]any
	jsonBuf := map[int]string{}
	for _, ev := range evs[1:] {
		switch ev.Name {
		case "content_block_start":
			idx := int(ev.Data["index"].(float64))
			if idx != len(content) {
				t.Fatalf("block index %d out of order", idx)
			}
			content = append(content, ev.Data["content_block"].(map[string]any))
		case "content_block_delta":
			idx := int(ev.Data["index"].(float64))
			d := ev.Data["delta"].(map[string]any)
			switch d["type"] {
			case "text_delta":
				content[idx]["text"] = content[idx]["text"].(string) + d["text"].(string)
			case "input_json_delta":
				jsonBuf[idx] += d["partial_json"].(string)
			default:
				t.Fatalf("delta type %v", d["type"])
			}
		case "content_block_stop":
			idx := int(ev.Data["index"].(float64))
			if buf, ok := jsonBuf[idx]; ok {
				var input any
				if err := json.Unmarshal([]byte(buf), &input); err != nil {
					t.Fatalf("tool input %q: %v", buf, err)
				}
				content[idx]["input"] = input
			}
		case "message_delta":
			d := ev.Data["delta"].(map[string]any)
			msg["stop_reason"] = d["stop_reason"]
			usage := msg["usage"].(map[string]any)
			usage["output_tokens"] = ev.Data["usage"].(map[string]any)["output_tokens"]
		case "ping", "message_stop":
		default:
			t.Fatalf("unexpected event %s", ev.Name)
		}
	}
	msg["content"] = content
	return msg
}

func names(evs []sseEvent) []string {
	var out []string
	for _, e := range evs {
		out = append(out, e.Name)
	}
	return out
}

var bashTool = []map[string]any{{"name": "Bash", "input_schema": map[string]any{"type": "object"}}, {"name": "Edit"}}

func TestAnthropicToolTurnsAndResults(t *testing.T) {
	srv := New(Script{Turns: []Turn{
		{Text: "Let me look, at some length so that the text comes in several deltas.", Calls: []ToolCall{
			{Name: "Edit", Input: map[string]any{"file_path": "/w/a.go", "old_string": "a", "new_string": "b"}},
			{Shell: "go test ./..."},
		}, Usage: Usage{InputTokens: 7, OutputTokens: 3}},
		{Text: "done"},
	}})
	hs := httptest.NewServer(srv)
	defer hs.Close()

	user := map[string]any{"role": "user", "content": "fix it"}
	msg := anthropicMessage(t, readSSE(t, post(t, hs.URL+"/v1/messages", map[string]any{
		"model": "m", "stream": true, "tools": bashTool, "messages": []any{user},
	})))
	if msg["stop_reason"] != "tool_use" || msg["role"] != "assistant" || msg["type"] != "message" {
		t.Errorf("message = %v", msg)
	}
	if u := msg["usage"].(map[string]any); u["input_tokens"] != 7.0 || u["output_tokens"] != 3.0 {
		t.Errorf("usage = %v", u)
	}
	content := msg["content"].([]map[string]any)
	if len(content) != 3 || content[0]["text"] != "Let me look, at some length so that the text comes in several deltas." {
		t.Fatalf("content = %v", content)
	}
	edit, bash := content[1], content[2]
	if edit["type"] != "tool_use" || edit["name"] != "Edit" || edit["input"].(map[string]any)["new_string"] != "b" {
		t.Errorf("edit = %v", edit)
	}
	if bash["name"] != "Bash" || bash["input"].(map[string]any)["command"] != "go test ./..." {
		t.Errorf("bash = %v", bash)
	}
	if len(srv.Unanswered()) != 2 {
		t.Errorf("unanswered = %v, want both calls", srv.Unanswered())
	}

	// The next request carries the history and one result per call.
	assistant := map[string]any{"role": "assistant", "content": []any{
		map[string]any{"type": "text", "text": "Let me look"},
		map[string]any{"type": "tool_use", "id": edit["id"], "name": "Edit", "input": edit["input"]},
		map[string]any{"type": "tool_use", "id": bash["id"], "name": "Bash", "input": bash["input"]},
	}}
	results := map[string]any{"role": "user", "content": []any{
		map[string]any{"type": "tool_result", "tool_use_id": edit["id"], "content": "edited"},
		map[string]any{"type": "tool_result", "tool_use_id": bash["id"], "is_error": true,
			"content": []any{map[string]any{"type": "text", "text": "FAIL"}}},
	}}
	msg = anthropicMessage(t, readSSE(t, post(t, hs.URL+"/v1/messages", map[string]any{
		"model": "m", "stream": true, "tools": bashTool, "messages": []any{user, assistant, results},
	})))
	if msg["stop_reason"] != "end_turn" || msg["content"].([]map[string]any)[0]["text"] != "done" {
		t.Errorf("second turn = %v", msg)
	}
	if u := srv.Unanswered(); len(u) != 0 {
		t.Errorf("unanswered = %v", u)
	}
	if r, _ := srv.Result(bash["id"].(string)); !r.IsError || r.Content != "FAIL" {
		t.Errorf("bash result = %+v", r)
	}
	if e := srv.Errors(); len(e) != 0 {
		t.Errorf("errors = %v", e)
	}
}

func TestAnthropicSideRequestAndPlainJSON(t *testing.T) {
	srv := New(Script{Turns: []Turn{{Text: "main answer"}}})
	srv.SideText = "a title"
	hs := httptest.NewServer(srv)
	defer hs.Close()

	// No tools: a side request, answered with SideText, not a turn.
	msg := anthropicMessage(t, readSSE(t, post(t, hs.URL+"/v1/messages", map[string]any{
		"model": "m", "stream": true, "messages": []any{map[string]any{"role": "user", "content": "title?"}},
	})))
	if msg["content"].([]map[string]any)[0]["text"] != "a title" {
		t.Errorf("side answer = %v", msg)
	}
	// Without stream: one Message object.
	resp := post(t, hs.URL+"/v1/messages", map[string]any{
		"model": "m", "tools": bashTool, "messages": []any{map[string]any{"role": "user", "content": "go"}},
	})
	defer resp.Body.Close()
	var m struct {
		Type       string `json:"type"`
		StopReason string `json:"stop_reason"`
		Content    []struct {
			Type, Text string
		} `json:"content"`
		Usage struct {
			InputTokens  int `json:"input_tokens"`
			OutputTokens int `json:"output_tokens"`
		} `json:"usage"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&m); err != nil {
		t.Fatal(err)
	}
	if m.Type != "message" || m.StopReason != "end_turn" || len(m.Content) != 1 || m.Content[0].Text != "main answer" ||
		m.Usage.InputTokens != DefaultUsage.InputTokens || m.Usage.OutputTokens != DefaultUsage.OutputTokens {
		t.Errorf("message = %+v", m)
	}
	reqs := srv.Requests()
	if len(reqs) != 2 || !reqs[0].Side || reqs[1].Side || reqs[1].Turn != 0 {
		t.Errorf("requests = %+v", reqs)
	}
}

func TestScriptsMatchConcurrentConversations(t *testing.T) {
	srv := New(
		Script{Match: "angle=edge-cases", Turns: []Turn{{Text: "[]"}}},
		Script{Match: "angle=tests", Turns: []Turn{{Text: `[{"x":1}]`}}},
	)
	hs := httptest.NewServer(srv)
	defer hs.Close()
	var wg sync.WaitGroup
	got := make([]string, 2)
	for i, angle := range []string{"edge-cases", "tests"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp := post(t, hs.URL+"/v1/messages", map[string]any{"model": "m", "tools": bashTool,
				"messages": []any{map[string]any{"role": "user", "content": []any{map[string]any{"type": "text", "text": "review angle=" + angle}}}}})
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			got[i] = string(b)
		}()
	}
	wg.Wait()
	if !strings.Contains(got[0], `"text":"[]"`) || !strings.Contains(got[1], `"text":"[{\"x\":1}]"`) {
		t.Errorf("answers = %q", got)
	}
}

// A script with Also answers only a conversation whose user text holds
// its Match and every one of Also: one angle's review of one state of the
// code, where the angle and the diff are apart in the prompt.
func TestAlsoNeedsEveryString(t *testing.T) {
	srv := New(
		Script{Match: "angle=edge-cases", Also: []string{"i < n", "x := 1"}, Turns: []Turn{{Text: "finding"}}},
		Script{Match: "angle=edge-cases", Turns: []Turn{{Text: "[]"}}},
	)
	hs := httptest.NewServer(srv)
	defer hs.Close()
	ask := func(prompt string) string {
		resp := post(t, hs.URL+"/v1/messages", map[string]any{"model": "m", "tools": bashTool,
			"messages": []any{map[string]any{"role": "user", "content": []any{map[string]any{"type": "text", "text": prompt}}}}})
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	if got := ask("review angle=edge-cases\ndiff: i < n\nx := 1"); !strings.Contains(got, `"text":"finding"`) {
		t.Errorf("with Match and every Also: %s", got)
	}
	if got := ask("review angle=edge-cases\ndiff: i <= n\nx := 1"); !strings.Contains(got, `"text":"[]"`) {
		t.Errorf("with one Also missing, the next script answers: %s", got)
	}
	if errs := srv.Errors(); len(errs) > 0 {
		t.Errorf("errors: %q", errs)
	}
}

// A message added to a resumed conversation (the summary request at the
// budget) gets its FromMatch script's first turn, whatever turns came
// before it; the conversation before it keeps its own script's turns.
func TestFromMatchCountsTurnsFromTheMatch(t *testing.T) {
	srv := New(
		Script{Match: "time is up", FromMatch: true, Turns: []Turn{{Text: "summary"}}},
		Script{Turns: []Turn{{Text: "one", Calls: []ToolCall{{Shell: "true"}}}, {Text: "two"}}},
	)
	hs := httptest.NewServer(srv)
	defer hs.Close()
	user := func(blocks ...any) any { return map[string]any{"role": "user", "content": blocks} }
	text := func(s string) any { return map[string]any{"type": "text", "text": s} }
	assistant := map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "tool_use", "id": "toolu_fm1_0_0", "name": "Bash", "input": map[string]any{"command": "true"}}}}
	result := map[string]any{"type": "tool_result", "tool_use_id": "toolu_fm1_0_0", "content": "ok"}
	ask := func(msgs ...any) string {
		resp := post(t, hs.URL+"/v1/messages", map[string]any{"model": "m", "tools": bashTool, "messages": msgs})
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	if got := ask(user(text("task"))); !strings.Contains(got, `"text":"one"`) {
		t.Errorf("first turn = %s", got)
	}
	if got := ask(user(text("task")), assistant, user(result)); !strings.Contains(got, `"text":"two"`) {
		t.Errorf("second turn = %s", got)
	}
	// Resumed after one model turn, with the summary request beside the
	// tool result: the summary script's first turn.
	if got := ask(user(text("task")), assistant, user(result, text("time is up, report"))); !strings.Contains(got, `"text":"summary"`) {
		t.Errorf("summary turn = %s", got)
	}
	reqs := srv.Requests()
	if last := reqs[len(reqs)-1]; last.Script != 0 || last.Turn != 0 {
		t.Errorf("summary request answered by script %d turn %d, want 0, 0", last.Script, last.Turn)
	}
	if errs := srv.Errors(); len(errs) > 0 {
		t.Errorf("errors: %q", errs)
	}
}

func TestProtocolErrorsAreRecorded(t *testing.T) {
	srv := New(Script{Match: "known", Turns: []Turn{{Text: "one"}}})
	hs := httptest.NewServer(srv)
	defer hs.Close()
	user := map[string]any{"role": "user", "content": "known task"}
	// Turn 2 of a one-turn script: a final answer naming the problem.
	msg := anthropicMessage(t, readSSE(t, post(t, hs.URL+"/v1/messages", map[string]any{"stream": true, "tools": bashTool,
		"messages": []any{user, map[string]any{"role": "assistant", "content": "one"}, map[string]any{"role": "user", "content": "more"}}})))
	if txt := msg["content"].([]map[string]any)[0]["text"].(string); !strings.Contains(txt, "no turn 2") {
		t.Errorf("exhausted answer = %q", txt)
	}
	// No script matches; a result for a call never made; an unknown path.
	post(t, hs.URL+"/v1/messages", map[string]any{"tools": bashTool, "messages": []any{map[string]any{"role": "user", "content": []any{
		map[string]any{"type": "text", "text": "stranger"},
		map[string]any{"type": "tool_result", "tool_use_id": "toolu_nope", "content": "x"},
	}}}}).Body.Close()
	resp, err := http.Get(hs.URL + "/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("unknown path status = %d", resp.StatusCode)
	}
	errs := strings.Join(srv.Errors(), "\n")
	for _, want := range []string{"asked for turn 2", "no script matches", `unknown call "toolu_nope"`, "unexpected request GET /v1/models"} {
		if !strings.Contains(errs, want) {
			t.Errorf("errors lack %q:\n%s", want, errs)
		}
	}
}

// responsesOutput checks a Responses stream the way Codex reads it
// (codex-api src/sse/responses.rs): response.created first,
// output_item.done items, response.completed with id and usage last; and
// as the SDK types it: sequence_number counting up from 0.
func responsesOutput(t *testing.T, evs []sseEvent) (items []map[string]any, completed map[string]any) {
	t.Helper()
	if len(evs) < 2 || evs[0].Name != "response.created" || evs[len(evs)-1].Name != "response.completed" {
		t.Fatalf("stream does not run response.created … response.completed: %v", names(evs))
	}
	text := map[string]string{}
	for i, ev := range evs {
		if ev.Data["sequence_number"] != float64(i) {
			t.Fatalf("event %d has sequence_number %v", i, ev.Data["sequence_number"])
		}
		switch ev.Name {
		case "response.output_text.delta":
			text[ev.Data["item_id"].(string)] += ev.Data["delta"].(string)
		case "response.output_item.done":
			item := ev.Data["item"].(map[string]any)
			if item["type"] == "message" {
				part := item["content"].([]any)[0].(map[string]any)
				if part["text"] != text[item["id"].(string)] {
					t.Errorf("deltas %q != done text %q", text[item["id"].(string)], part["text"])
				}
			}
			items = append(items, item)
		}
	}
	return items, evs[len(evs)-1].Data["response"].(map[string]any)
}

func TestResponsesShellCallsAndResults(t *testing.T) {
	srv := New(Script{Turns: []Turn{
		{Text: "Running the tests now, then editing.", Calls: []ToolCall{{Shell: "go test ./..."}, {Name: "view_image", Input: map[string]any{"path": "x.png"}}},
			Usage: Usage{InputTokens: 40, OutputTokens: 4, CacheReadTokens: 10}},
		{Text: "all done"},
	}})
	hs := httptest.NewServer(srv)
	defer hs.Close()

	tools := []any{
		map[string]any{"type": "function", "name": "shell"},
		map[string]any{"type": "function", "name": "exec_command"},
		map[string]any{"type": "function", "name": "view_image"},
		map[string]any{"type": "web_search"},
	}
	user := map[string]any{"type": "message", "role": "user", "content": []any{map[string]any{"type": "input_text", "text": "fix"}}}
	items, completed := responsesOutput(t, readSSE(t, post(t, hs.URL+"/v1/responses", map[string]any{
		"model": "gpt", "stream": true, "tools": tools, "input": []any{user},
	})))
	if len(items) != 3 || items[0]["type"] != "message" || items[1]["type"] != "function_call" || items[2]["type"] != "function_call" {
		t.Fatalf("items = %v", items)
	}
	call := items[1]
	var args map[string]any
	if err := json.Unmarshal([]byte(call["arguments"].(string)), &args); err != nil {
		t.Fatal(err)
	}
	// exec_command is preferred over shell, and takes {"cmd"}.
	if call["name"] != "exec_command" || args["cmd"] != "go test ./..." || call["call_id"] == "" {
		t.Errorf("shell call = %v", call)
	}
	usage := completed["usage"].(map[string]any)
	if completed["id"] == "" || completed["status"] != "completed" || usage["input_tokens"] != 50.0 ||
		usage["output_tokens"] != 4.0 || usage["total_tokens"] != 54.0 ||
		usage["input_tokens_details"].(map[string]any)["cached_tokens"] != 10.0 {
		t.Errorf("completed = %v", completed)
	}

	history := []any{user, call, items[2],
		map[string]any{"type": "function_call_output", "call_id": call["call_id"], "output": "ok"},
		map[string]any{"type": "function_call_output", "call_id": items[2]["call_id"],
			"output": []any{map[string]any{"type": "input_text", "text": "an image"}}},
	}
	items, _ = responsesOutput(t, readSSE(t, post(t, hs.URL+"/v1/responses", map[string]any{
		"model": "gpt", "stream": true, "tools": tools, "input": history,
	})))
	if len(items) != 1 || items[0]["content"].([]any)[0].(map[string]any)["text"] != "all done" {
		t.Errorf("second turn = %v", items)
	}
	if u := srv.Unanswered(); len(u) != 0 {
		t.Errorf("unanswered = %v", u)
	}
	if r, _ := srv.Result(secondCallID(t, srv)); r.Content != "an image" {
		t.Errorf("result = %+v", r)
	}
	if e := srv.Errors(); len(e) != 0 {
		t.Errorf("errors = %v", e)
	}
}

func secondCallID(t *testing.T, srv *Server) string {
	t.Helper()
	calls := srv.Calls()
	if len(calls) != 2 {
		t.Fatalf("calls = %v", calls)
	}
	return calls[1].ID
}

func TestResponsesShellToolShapes(t *testing.T) {
	for _, c := range []struct {
		tool, want string
	}{
		{"shell_command", `{"command":"ls"}`},
		{"shell", `{"command":["bash","-lc","ls"]}`},
	} {
		srv := New(Script{Turns: []Turn{{Calls: []ToolCall{{Shell: "ls"}}}}})
		hs := httptest.NewServer(srv)
		resp := post(t, hs.URL+"/v1/responses", map[string]any{"input": "go", "tools": []any{map[string]any{"type": "function", "name": c.tool}}})
		var r struct {
			Output []struct {
				Name, Arguments string
			} `json:"output"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		hs.Close()
		if len(r.Output) != 1 || r.Output[0].Name != c.tool || r.Output[0].Arguments != c.want {
			t.Errorf("%s: output = %+v, want arguments %s", c.tool, r.Output, c.want)
		}
	}
}

func TestChunksKeepUTF8(t *testing.T) {
	s := strings.Repeat("héllo wörld ✓ ", 10)
	var joined strings.Builder
	for _, c := range chunks(s, 5) {
		if strings.ToValidUTF8(c, "?") != c {
			t.Fatalf("chunk %q splits a character", c)
		}
		joined.WriteString(c)
	}
	if joined.String() != s {
		t.Error("chunks do not join back")
	}
}

// readGeminiSSE reads a Gemini stream: "data: {GenerateContentResponse}"
// events with no names, which the SDK joins.
func readGeminiSSE(t *testing.T, resp *http.Response) []map[string]any {
	t.Helper()
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]any
	for _, ev := range strings.Split(string(b), "\r\n\r\n") {
		if ev == "" {
			continue
		}
		data, ok := strings.CutPrefix(ev, "data: ")
		if !ok {
			t.Fatalf("event %q is not a data line", ev)
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(data), &m); err != nil {
			t.Fatal(err)
		}
		out = append(out, m)
	}
	return out
}

func TestGeminiFunctionCallsAndResponses(t *testing.T) {
	srv := New(Script{Turns: []Turn{
		{Text: "Running the tests now, at some length.", Calls: []ToolCall{{Shell: "go test ./..."}},
			Usage: Usage{InputTokens: 40, OutputTokens: 4, CacheReadTokens: 10}},
		{Text: "done"},
	}})
	hs := httptest.NewServer(srv)
	defer hs.Close()
	tools := []any{map[string]any{"functionDeclarations": []any{map[string]any{"name": "run_shell_command"}, map[string]any{"name": "read_file"}}}}
	user := map[string]any{"role": "user", "parts": []any{map[string]any{"text": "fix"}}}
	chunks := readGeminiSSE(t, post(t, hs.URL+"/v1beta/models/gem:streamGenerateContent?alt=sse", map[string]any{
		"contents": []any{user}, "tools": tools,
	}))
	var text string
	var call map[string]any
	for i, c := range chunks {
		cand := c["candidates"].([]any)[0].(map[string]any)
		for _, p := range cand["content"].(map[string]any)["parts"].([]any) {
			p := p.(map[string]any)
			if s, ok := p["text"].(string); ok {
				text += s
			}
			if fc, ok := p["functionCall"].(map[string]any); ok {
				call = fc
			}
		}
		last := i == len(chunks)-1
		if _, ok := cand["finishReason"]; ok != last {
			t.Errorf("chunk %d: finishReason present %v", i, ok)
		}
		if last {
			um := c["usageMetadata"].(map[string]any)
			if um["promptTokenCount"] != 50.0 || um["candidatesTokenCount"] != 4.0 || um["cachedContentTokenCount"] != 10.0 {
				t.Errorf("usage = %v", um)
			}
		}
	}
	if text != "Running the tests now, at some length." || call["name"] != "run_shell_command" ||
		call["args"].(map[string]any)["command"] != "go test ./..." || call["id"] == "" {
		t.Fatalf("text %q, call %v", text, call)
	}
	history := []any{user,
		map[string]any{"role": "model", "parts": []any{map[string]any{"functionCall": call}}},
		map[string]any{"role": "user", "parts": []any{map[string]any{"functionResponse": map[string]any{
			"id": call["id"], "name": "run_shell_command", "response": map[string]any{"error": "exit 1"}}}}},
	}
	resp := post(t, hs.URL+"/v1beta/models/gem:generateContent", map[string]any{"contents": history, "tools": tools})
	var r struct {
		Candidates []struct {
			Content struct {
				Parts []struct{ Text string } `json:"parts"`
			} `json:"content"`
			FinishReason string `json:"finishReason"`
		} `json:"candidates"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if len(r.Candidates) != 1 || r.Candidates[0].Content.Parts[0].Text != "done" || r.Candidates[0].FinishReason != "STOP" {
		t.Errorf("second turn = %+v", r)
	}
	if res, ok := srv.Result(call["id"].(string)); !ok || !res.IsError || res.Content != `"exit 1"` {
		t.Errorf("result = %+v", res)
	}
	if u, e := srv.Unanswered(), srv.Errors(); len(u)+len(e) != 0 {
		t.Errorf("unanswered %v, errors %v", u, e)
	}
}

func TestRefuseAnswersInEachAPIsErrorShape(t *testing.T) {
	srv := New()
	srv.Refuse = func(api string, _ *http.Request) (int, string) { return 401, "bad key for " + api }
	ts := httptest.NewServer(srv)
	defer ts.Close()
	for path, want := range map[string]string{
		"/v1/messages":  `"type":"authentication_error"`,
		"/v1/responses": `"code":"invalid_api_key"`,
		"/v1beta/models/gemini-x:streamGenerateContent": `"status":"UNAUTHENTICATED"`,
	} {
		resp := post(t, ts.URL+path, map[string]any{})
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 401 || !strings.Contains(string(b), want) || !strings.Contains(string(b), "bad key for") {
			t.Errorf("%s: %d %s, want 401 with %s", path, resp.StatusCode, b, want)
		}
	}
	if n := len(srv.Requests()); n != 3 {
		t.Errorf("recorded %d requests, want 3", n)
	}
}

// Codex's default model offers its tools in an additional_tools input item
// (no tools field), in namespaces, and runs anything through the freeform
// exec tool: a Shell call becomes a custom_tool_call of exec whose
// JavaScript runs the command with exec_command, streamed as custom tool
// input deltas; its result comes back as a custom_tool_call_output.
func TestResponsesCodeModeExecFromAdditionalTools(t *testing.T) {
	srv := New(Script{Turns: []Turn{
		{Text: "Looking.", Calls: []ToolCall{{Shell: `grep -n "x > 1" a.go`}, {Name: "apply_patch", Input: "*** Begin Patch\n*** End Patch\n"}}},
		{Text: "all done"},
	}})
	hs := httptest.NewServer(srv)
	defer hs.Close()

	tools := map[string]any{"type": "additional_tools", "role": "developer", "tools": []any{
		map[string]any{"type": "namespace", "name": "functions", "tools": []any{
			map[string]any{"type": "custom", "name": "exec", "format": map[string]any{"type": "grammar"}},
			map[string]any{"type": "function", "name": "wait"},
			map[string]any{"type": "custom", "name": "apply_patch"},
		}},
		map[string]any{"type": "namespace", "name": "clock", "tools": []any{map[string]any{"type": "function", "name": "sleep"}}},
	}}
	user := map[string]any{"type": "message", "role": "user", "content": []any{map[string]any{"type": "input_text", "text": "fix"}}}
	evs := readSSE(t, post(t, hs.URL+"/v1/responses", map[string]any{"model": "gpt", "stream": true, "input": []any{tools, user}}))
	items, _ := responsesOutput(t, evs)
	if len(items) != 3 || items[1]["type"] != "custom_tool_call" || items[2]["type"] != "custom_tool_call" {
		t.Fatalf("items = %v", items)
	}
	exec := items[1]
	input, _ := exec["input"].(string)
	if exec["name"] != "exec" || exec["call_id"] == "" ||
		!strings.Contains(input, `await tools.exec_command({"cmd":"grep -n \"x \u003e 1\" a.go"})`) || !strings.Contains(input, "text(") {
		t.Errorf("shell call = %v", exec)
	}
	if items[2]["name"] != "apply_patch" || items[2]["input"] != "*** Begin Patch\n*** End Patch\n" {
		t.Errorf("freeform call = %v", items[2])
	}
	// The input streams as custom tool input deltas, as the Responses API
	// sends a custom tool call.
	var deltas, done string
	for _, ev := range evs {
		switch ev.Name {
		case "response.custom_tool_call_input.delta":
			if ev.Data["item_id"] == exec["id"] {
				deltas += ev.Data["delta"].(string)
			}
		case "response.custom_tool_call_input.done":
			if ev.Data["item_id"] == exec["id"] {
				done = ev.Data["input"].(string)
			}
		}
	}
	if deltas != input || done != input {
		t.Errorf("deltas %q, done %q, want %q", deltas, done, input)
	}
	reqs := srv.Requests()
	if got := strings.Join(reqs[0].Tools, ","); reqs[0].Side || got != "exec,wait,apply_patch,sleep" {
		t.Errorf("request tools %q (side %v), want those of additional_tools", got, reqs[0].Side)
	}

	history := []any{tools, user, items[1], items[2],
		map[string]any{"type": "custom_tool_call_output", "call_id": exec["call_id"],
			"output": []any{map[string]any{"type": "input_text", "text": "Script completed\n"}, map[string]any{"type": "input_text", "text": "3: if x > 1 {"}}},
		map[string]any{"type": "custom_tool_call_output", "call_id": items[2]["call_id"], "output": "patch applied"},
	}
	items, _ = responsesOutput(t, readSSE(t, post(t, hs.URL+"/v1/responses", map[string]any{"model": "gpt", "stream": true, "input": history})))
	if len(items) != 1 || items[0]["content"].([]any)[0].(map[string]any)["text"] != "all done" {
		t.Errorf("second turn = %v", items)
	}
	calls := srv.Calls()
	if len(calls) != 2 || calls[0].Name != "exec" {
		t.Fatalf("calls = %v", calls)
	}
	if r, _ := srv.Result(calls[0].ID); !strings.Contains(r.Content, "3: if x > 1 {") {
		t.Errorf("exec result = %+v", r)
	}
	if u, e := srv.Unanswered(), srv.Errors(); len(u) != 0 || len(e) != 0 {
		t.Errorf("unanswered %v, errors %v", u, e)
	}
}

// The built-in provider's WebSocket handshake gets 426 Upgrade Required
// (Codex then uses HTTP at once); any other GET is an unknown endpoint.
func TestResponsesWebSocketHandshakeGets426(t *testing.T) {
	srv := New()
	hs := httptest.NewServer(srv)
	defer hs.Close()
	req, _ := http.NewRequest(http.MethodGet, hs.URL+"/v1/responses", nil)
	req.Header.Set("Connection", "Upgrade")
	req.Header.Set("Upgrade", "websocket")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUpgradeRequired || len(srv.Errors()) != 0 {
		t.Errorf("handshake: %d, errors %v; want 426 and no error", resp.StatusCode, srv.Errors())
	}
	resp, err = http.Get(hs.URL + "/v1/responses")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound || len(srv.Errors()) != 1 {
		t.Errorf("plain GET: %d, errors %v; want 404 recorded", resp.StatusCode, srv.Errors())
	}
}
