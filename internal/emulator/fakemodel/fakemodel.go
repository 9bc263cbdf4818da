// Package fakemodel is a scripted model server for tests of real coding-agent
// CLIs (DESIGN.md, testing layer 4). It speaks three wire protocols on one
// http.Handler:
//
//   - the Anthropic Messages API (POST /v1/messages, streaming SSE or plain
//     JSON; POST /v1/messages/count_tokens), which Claude Code talks to when
//     ANTHROPIC_BASE_URL names this server;
//   - the OpenAI Responses API (POST /v1/responses, streaming SSE or plain
//     JSON), which Codex talks to through a custom model provider whose
//     base_url names this server's /v1;
//   - the Gemini API (POST /v1beta/models/MODEL:streamGenerateContent with
//     alt=sse, :generateContent, :countTokens), which Gemini CLI talks to
//     when GOOGLE_GEMINI_BASE_URL names this server, and Vertex AI's paths
//     for the same (vertex.go) when GOOGLE_VERTEX_BASE_URL does.
//
// What the model "says" is a Script: a list of turns, each some text and
// tool calls. The server is stateless about conversations: the turn a
// request gets is the number of assistant turns already in its history, so
// a retried request gets the same answer, and conversations that run at
// once (the local review's angles) do not steal each other's turns when
// each has its own Script, told apart by Script.Match.
//
// A request without tools is a CLI's side request (a title, a quota check):
// it gets Server.SideText as plain text and does not advance any script;
// a Gemini side request that asks for JSON (Gemini CLI's model router)
// gets a value of its schema (gemini_json.go).
//
// Every request is recorded, with the tool results it carries, so a test
// can assert that every tool call the server made got a result
// (Server.Unanswered) and that nothing went wrong on the wire
// (Server.Errors).
//
// The wire formats follow the public SDK types and the CLIs' own clients:
// anthropic-sdk-typescript src/resources/messages/messages.ts (Raw*Event,
// Message, Usage, ToolUseBlock, ToolResultBlockParam) and its
// MessageStream accumulator; openai-node src/resources/responses/
// responses.ts (Response*Event, ResponseFunctionToolCall,
// ResponseOutputMessage, ResponseUsage); codex-rs codex-api
// src/sse/responses.rs (which events Codex reads) and codex-protocol
// src/models.rs (function_call / function_call_output items).
package fakemodel

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"
)

// ToolCall is one tool call the model makes in a turn.
type ToolCall struct {
	// Name is the tool's name as the CLI declares it ("Edit", "Read",
	// "exec_command", …). Leave it empty and set Shell to run a shell
	// command with whatever shell tool the request offers.
	Name string
	// Input is the tool's input: any value encoding/json can marshal to an
	// object. The Anthropic API sends it as the tool_use input; the
	// Responses API as the function call's arguments string.
	Input any
	// Shell is a shell command line. The server picks the shell tool from
	// the request's tools and encodes the command for it: Anthropic Bash
	// (Claude Code) or bash (OpenCode) {"command"}; Codex exec_command {"cmd"}, shell_command {"command"} or
	// shell {"command": ["bash", "-lc", …]}, or with Codex's default model
	// only its freeform exec tool, JavaScript calling exec_command.
	Shell string
}

// Usage is the token count a turn reports, each API in its own terms:
// InputTokens is the input read without a cache, CacheReadTokens the input
// read from one. Anthropic reports them apart (input_tokens,
// cache_read_input_tokens); OpenAI (input_tokens with
// input_tokens_details.cached_tokens) and Gemini (promptTokenCount with
// cachedContentTokenCount) count the cached tokens inside their input
// figure.
type Usage struct {
	InputTokens     int
	OutputTokens    int
	CacheReadTokens int
}

// DefaultUsage is what a turn with a zero Usage reports.
var DefaultUsage = Usage{InputTokens: 10, OutputTokens: 5}

// Turn is one assistant turn: text, then tool calls. A turn without calls
// ends the conversation (stop_reason end_turn; a Responses reply without
// function calls).
type Turn struct {
	Text  string
	Calls []ToolCall
	Usage Usage // zero means DefaultUsage
	// Delay holds the reply back (a slow or hung model); the request's
	// end (the client gave up) ends the wait.
	Delay time.Duration
}

// Script is the turns of one conversation.
type Script struct {
	// Match selects the conversations this script answers: a request is
	// answered by the first script whose Match occurs in the text of the
	// request's user messages (tool results excluded). "" matches every
	// conversation.
	Match string
	// Also are more strings the user text must hold, each of them, for
	// the script to answer: one script per (angle, state of the code)
	// when the angle's name and the diff sit apart in one prompt.
	Also []string
	// FromMatch counts the script's turns from the last user message whose
	// text holds Match, not from the conversation's start: a message a
	// CLI adds to a resumed session (the summary request at the budget)
	// gets the script's first turn whatever the session said before.
	FromMatch bool
	Turns     []Turn
}

// said is the text of one user message of a request's history and the
// number of model turns before it.
type said struct {
	text  string
	turns int
}

// Call is a tool call the server made.
type Call struct {
	API    string // "anthropic", "openai" or "gemini"
	ID     string // tool_use id, call_id or functionCall id
	Name   string
	Input  json.RawMessage
	Script int // index into the server's scripts
	Turn   int
}

// ToolResult is a tool result a request carried back.
type ToolResult struct {
	ID      string
	Content string // text content, concatenated
	IsError bool   // Anthropic is_error
}

// Request is one recorded request.
type Request struct {
	API    string // "anthropic", "openai", "gemini", "vertex", "bedrock", or "" for an unknown path
	Method string
	Path   string
	Header http.Header
	Body   []byte
	// Tools are the names of the tools the request offered the model, in
	// every API's shape; Side is a request without any, answered with
	// SideText.
	Tools []string
	Side  bool
	// Script and Turn are what answered it; Script is -1 when none did.
	Script, Turn int
	Results      []ToolResult
	// Usage is what the reply reported, zero until it was sent (a
	// delayed reply the client gave up on served nothing). The Gemini
	// API's and the Messages API's (Anthropic, Vertex, Bedrock) handlers
	// set it.
	Usage Usage
}

// Server is the scripted model. Create it with New and serve it with
// httptest.NewServer (or any http.Server).
type Server struct {
	// SideText answers side requests; default "OK".
	SideText string
	// Model is reported in responses when a request names none.
	Model string
	// Refuse, when set, is asked first about every request (api is
	// "anthropic", "openai" or "gemini"); a non-zero status answers the
	// request with that HTTP status and the API's own error body (see
	// apiError) instead of a turn: 401 a rejected key, 429 a rate limit,
	// 503 a failing endpoint. The request is recorded with Script -1.
	Refuse func(api string, r *http.Request) (status int, message string)

	scripts []Script

	mu       sync.Mutex
	requests []Request
	calls    []Call
	callIDs  map[string]bool
	results  map[string]ToolResult
	errors   []string
}

// New returns a server answering with scripts.
func New(scripts ...Script) *Server {
	return &Server{
		SideText: "OK",
		Model:    "fakemodel",
		scripts:  scripts,
		callIDs:  map[string]bool{},
		results:  map[string]ToolResult{},
	}
}

// ServeHTTP routes the Anthropic and OpenAI endpoints.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	path := r.URL.Path
	if s.Refuse != nil {
		if api := apiOf(r); api != "" {
			if status, msg := s.Refuse(api, r); status != 0 {
				s.record(Request{API: api, Method: r.Method, Path: path, Header: r.Header.Clone(), Script: -1})
				apiError(w, api, status, msg)
				return
			}
		}
	}
	switch {
	case r.Method == http.MethodPost && path == "/v1/messages":
		s.serveAnthropic(w, r)
	case r.Method == http.MethodPost && path == "/v1/messages/count_tokens":
		s.serveCountTokens(w, r)
	case r.Method == http.MethodPost && path == "/v1/responses":
		s.serveResponses(w, r)
	case r.Method == http.MethodGet && path == "/v1/responses":
		s.serveResponsesUpgrade(w, r)
	case r.Method == http.MethodPost && path == "/v1/chat/completions":
		s.serveChat(w, r) // chat.go
	default:
		if model, method, ok := geminiRoute(path); ok && r.Method == http.MethodPost {
			s.serveGemini(w, r, model, method)
			return
		}
		if v, ok := anthropicVertexRoute(path); ok && r.Method == http.MethodPost {
			s.serveVertex(w, r, v)
			return
		}
		if b, ok := bedrockRoute(path); ok {
			s.serveBedrock(w, r, b)
			return
		}
		s.record(Request{Method: r.Method, Path: path, Header: r.Header.Clone(), Script: -1})
		s.fail("unexpected request %s %s", r.Method, r.URL)
		http.Error(w, `{"error":{"type":"not_found_error","message":"fakemodel: no such endpoint"}}`, http.StatusNotFound)
	}
}

// Requests returns every request so far, in arrival order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.requests)
}

// Calls returns every distinct tool call the server made, in order.
func (s *Server) Calls() []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.calls)
}

// Result returns the tool result that came back for a call id.
func (s *Server) Result(id string) (ToolResult, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.results[id]
	return r, ok
}

// Unanswered returns the tool calls no later request carried a result for.
func (s *Server) Unanswered() []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Call
	for _, c := range s.calls {
		if _, ok := s.results[c.ID]; !ok {
			out = append(out, c)
		}
	}
	return out
}

// Errors returns what went wrong on the wire: unknown endpoints, requests
// that could not be read, scripts without the turn asked for, tool
// results for calls the server never made, shell calls without a shell
// tool.
func (s *Server) Errors() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.errors)
}

func (s *Server) fail(format string, args ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.errors = append(s.errors, fmt.Sprintf(format, args...))
}

// record records r and returns its index in Requests.
func (s *Server) record(r Request) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests = append(s.requests, r)
	for _, res := range r.Results {
		if !s.callIDs[res.ID] {
			s.errors = append(s.errors, fmt.Sprintf("tool result for unknown call %q", res.ID))
		}
		s.results[res.ID] = res
	}
	return len(s.requests) - 1
}

func (s *Server) addCall(c Call) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.callIDs[c.ID] {
		return // a retried request made the same call again
	}
	s.callIDs[c.ID] = true
	s.calls = append(s.calls, c)
}

// pick finds the script for a conversation whose user messages are user,
// after turns model turns, and the script's turn it is at (turns, or for
// a FromMatch script the model turns since its match); ok is false (and
// an error recorded) when no script matches or the script has no such
// turn.
func (s *Server) pick(user []said, turns int) (script, turn int, t Turn, ok bool) {
	texts := make([]string, len(user))
	for i, u := range user {
		texts[i] = u.text
	}
	userText := strings.Join(texts, "\n")
	for i, sc := range s.scripts {
		if sc.Match != "" && !strings.Contains(userText, sc.Match) {
			continue
		}
		if slices.ContainsFunc(sc.Also, func(a string) bool { return !strings.Contains(userText, a) }) {
			continue
		}
		turn = turns
		if sc.FromMatch {
			for j := len(user) - 1; j >= 0; j-- {
				if strings.Contains(user[j].text, sc.Match) {
					turn = turns - user[j].turns
					break
				}
			}
		}
		if turn >= len(sc.Turns) {
			s.fail("script %d (match %q) has %d turns; asked for turn %d", i, sc.Match, len(sc.Turns), turn+1)
			return i, turn, Turn{}, false
		}
		return i, turn, sc.Turns[turn], true
	}
	s.fail("no script matches the conversation (user text %q)", clip(userText, 200))
	return -1, turns, Turn{}, false
}

// exhausted is the turn a request gets when the script has none: a final
// answer that names the problem, so the CLI ends instead of retrying.
// answer is the turn a request offering tools gets, and the turn number
// it answers: a request without tools is a side request, answered with
// SideText; any other gets its script's turn (pick), or the exhausted
// turn when no script has one. It records the choice in rec.
func (s *Server) answer(rec *Request, tools []string, user []said, turn int) (Turn, int) {
	rec.Tools = tools
	if len(tools) == 0 {
		rec.Side = true
		return Turn{Text: s.SideText}, turn
	}
	script, turn, t, ok := s.pick(user, turn)
	rec.Script, rec.Turn = script, turn
	if !ok {
		t = exhausted(turn)
	}
	return t, turn
}

func exhausted(turn int) Turn {
	return Turn{Text: fmt.Sprintf("fakemodel: the script has no turn %d", turn+1)}
}

// wait holds a reply back for d, or until the client is gone; ok is false
// then.
func wait(r *http.Request, d time.Duration) (ok bool) {
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-r.Context().Done():
		return false
	}
}

func (u Usage) orDefault() Usage {
	if u == (Usage{}) {
		return DefaultUsage
	}
	return u
}

// callID is a stable id for call i of a turn: a retried request gets the
// same ids.
func callID(prefix string, script, turn, i int) string {
	return fmt.Sprintf("%s_fm%d_%d_%d", prefix, script, turn, i)
}

// chunks splits s into pieces of at most n bytes, never inside a UTF-8
// sequence, so that streams carry real deltas.
func chunks(s string, n int) []string {
	var out []string
	for len(s) > n {
		cut := n
		for cut > 0 && !utf8Start(s[cut]) {
			cut--
		}
		if cut == 0 {
			cut = n
		}
		out = append(out, s[:cut])
		s = s[cut:]
	}
	if s != "" {
		out = append(out, s)
	}
	return out
}

func utf8Start(b byte) bool { return b&0xC0 != 0x80 }

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// sse writes one server-sent event and flushes it.
func sse(w http.ResponseWriter, event string, data any) {
	b, err := json.Marshal(data)
	if err != nil {
		panic(err) // only our own maps and structs are written
	}
	fmt.Fprintf(w, "event: %s\ndata: %s\n\n", event, b)
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func mustJSON(v any) json.RawMessage {
	if v == nil {
		return json.RawMessage("{}")
	}
	if raw, ok := v.(json.RawMessage); ok {
		return raw
	}
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("fakemodel: tool input: %v", err))
	}
	return b
}

// apiOf is the API a request is for, "" for an unknown path.
func apiOf(r *http.Request) string {
	switch p := r.URL.Path; {
	case strings.HasPrefix(p, "/v1/messages"):
		return "anthropic"
	case p == "/v1/responses" || p == "/v1/chat/completions":
		return "openai"
	default:
		if _, _, ok := geminiRoute(p); ok {
			return "gemini"
		}
		if _, ok := anthropicVertexRoute(p); ok {
			return "vertex"
		}
		if _, ok := bedrockRoute(p); ok {
			return "bedrock"
		}
	}
	return ""
}

// apiError answers with status and each API's own error body: Anthropic's
// {"type":"error","error":{"type","message"}}, OpenAI's
// {"error":{"message","type","code"}}, Gemini's (Google's)
// {"error":{"code","message","status"}}.
func apiError(w http.ResponseWriter, api string, status int, message string) {
	if message == "" {
		message = http.StatusText(status)
	}
	switch api {
	case "bedrock":
		bedrockError(w, status, message)
	case "anthropic":
		typ := map[int]string{401: "authentication_error", 403: "permission_error", 404: "not_found_error",
			429: "rate_limit_error", 529: "overloaded_error"}[status]
		if typ == "" {
			typ = "api_error"
			if status < 500 {
				typ = "invalid_request_error"
			}
		}
		writeJSON(w, status, map[string]any{"type": "error", "error": map[string]any{"type": typ, "message": message}})
	case "openai":
		typ, code := "server_error", any(nil)
		switch status {
		case 401:
			typ, code = "invalid_request_error", "invalid_api_key"
		case 429:
			typ, code = "rate_limit_exceeded", "rate_limit_exceeded"
		}
		writeJSON(w, status, map[string]any{"error": map[string]any{"message": message, "type": typ, "param": nil, "code": code}})
	default:
		st := map[int]string{400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED", 404: "NOT_FOUND",
			429: "RESOURCE_EXHAUSTED", 503: "UNAVAILABLE"}[status]
		if st == "" {
			st = "INTERNAL"
		}
		writeJSON(w, status, map[string]any{"error": map[string]any{"code": status, "message": message, "status": st}})
	}
}
