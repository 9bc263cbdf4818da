package claude

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/convergeloop/converge/internal/agent"
)

// What Claude Code's stream-json output says (as 2.1 prints it with
// --verbose --include-partial-messages):
//
//   - {"type":"system","subtype":"init",…} first;
//   - {"type":"stream_event","event":E,"parent_tool_use_id":…} for each
//     event E of the Messages API stream as the model sends it:
//     message_start (the message id and its input usage), content block
//     deltas, message_delta (the message's final usage: output_tokens is
//     only known here), message_stop;
//   - {"type":"assistant","message":M,…} once for each content block of a
//     model message M as the block ends, each with the same id and the
//     usage of message_start (output_tokens a placeholder);
//   - {"type":"system","subtype":"api_retry","attempt":N,"max_retries":M,
//     "error_status":401|null,"error":"authentication_failed"|"server_error"|
//     "rate_limit"|"unknown"|…} when a model request failed and is tried
//     again (error_status null: no HTTP answer, e.g. connection refused);
//   - an assistant message the CLI made itself when it gave up on the
//     API: model "<synthetic>", "is_api_error_message":true, "error" the
//     category as in api_retry, "api_error_status", and its text the
//     CLI's message ("Not logged in · Please run /login", "Invalid API key
//     · Fix external API key", "API Error: Connection refused …");
//   - {"type":"result","subtype":"success"|"error_max_turns"|…,
//     "is_error":B,"result":TEXT,"usage":{…},"total_cost_usd":X,
//     "num_turns":N,"api_error_status":…,"terminal_reason":…} last. An
//     API failure ends with subtype "success", is_error true and the
//     CLI's message as TEXT.
//
// A run stopped at its budget (SIGTERM) prints no result event.

// Result is the stream's final event.
type Result struct {
	Subtype        string   `json:"subtype"`
	IsError        bool     `json:"is_error"`
	Result         string   `json:"result"`
	NumTurns       int      `json:"num_turns"`
	TotalCostUSD   float64  `json:"total_cost_usd"`
	Usage          msgUsage `json:"usage"`
	APIErrorStatus *int     `json:"api_error_status"`
	TerminalReason string   `json:"terminal_reason"`
	// Errors are the messages of an error result that is not the
	// model's (a startup failure).
	Errors []string `json:"errors"`
}

// APIError is the message Claude Code made itself when it gave up on a
// model request.
type APIError struct {
	// Category is the CLI's: authentication_failed, server_error,
	// rate_limit, invalid_request, …
	Category string
	// Status is the HTTP status, 0 when there was no HTTP answer.
	Status int
	// Cause is the CLI's api_error ("connection_failed"), when it gives
	// one.
	Cause string
	Text  string
}

// Stream is what a run's stream-json output says.
type Stream struct {
	// Final is the agent's final message: the result event's text, or the
	// text of the last assistant message when there is no result event.
	Final string
	// Result is the final event; nil when the run printed none.
	Result *Result
	// Assistant counts the run's own model messages (its content blocks
	// each come as an event; a subagent's and the CLI's own error
	// messages are not counted).
	Assistant int
	// SessionID is the session the events name (each carries it), for
	// --resume.
	SessionID string
	// APIError is the CLI's own error message when it is the run's last
	// assistant message: the CLI gave up on its model.
	APIError *APIError
	// Tokens is the usage of every model message the stream showed,
	// whatever the result says.
	Tokens tokens
}

// msgUsage is a Messages API Usage object.
type msgUsage struct {
	InputTokens              int64 `json:"input_tokens"`
	OutputTokens             int64 `json:"output_tokens"`
	CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
	CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
}

// max keeps the larger of each figure: the API's usage figures of one
// message only grow (message_delta's are cumulative), and the CLI
// repeats message_start's in each of the message's assistant events.
func (u msgUsage) max(o msgUsage) msgUsage {
	return msgUsage{
		InputTokens:              max(u.InputTokens, o.InputTokens),
		OutputTokens:             max(u.OutputTokens, o.OutputTokens),
		CacheReadInputTokens:     max(u.CacheReadInputTokens, o.CacheReadInputTokens),
		CacheCreationInputTokens: max(u.CacheCreationInputTokens, o.CacheCreationInputTokens),
	}
}

func (u msgUsage) covers(o msgUsage) bool {
	return u.InputTokens >= o.InputTokens && u.OutputTokens >= o.OutputTokens &&
		u.CacheReadInputTokens >= o.CacheReadInputTokens && u.CacheCreationInputTokens >= o.CacheCreationInputTokens
}

func (u msgUsage) usage() agent.Usage {
	return agent.Usage{
		InputTokens:      u.InputTokens,
		OutputTokens:     u.OutputTokens,
		CacheReadTokens:  u.CacheReadInputTokens,
		CacheWriteTokens: u.CacheCreationInputTokens,
	}
}

// tokens adds up the usage of the model messages of a stream, each
// counted once by its id: from message_start and message_delta where
// the stream has them (--include-partial-messages), else from the
// message's assistant events.
type tokens struct {
	byID  map[string]msgUsage
	order []string
	// open is the message a stream_event belongs to, by
	// parent_tool_use_id ("" for the run's own): message_delta does not
	// name its message.
	open map[string]string
}

func (t *tokens) add(id string, u msgUsage) {
	if id == "" {
		return
	}
	if t.byID == nil {
		t.byID = map[string]msgUsage{}
	}
	old, seen := t.byID[id]
	if !seen {
		t.order = append(t.order, id)
	}
	t.byID[id] = old.max(u)
}

// Messages is the number of distinct model messages seen.
func (t tokens) Messages() int { return len(t.order) }

// Sum is the usage of all messages seen.
func (t tokens) Sum() msgUsage {
	var s msgUsage
	for _, id := range t.order {
		u := t.byID[id]
		s.InputTokens += u.InputTokens
		s.OutputTokens += u.OutputTokens
		s.CacheReadInputTokens += u.CacheReadInputTokens
		s.CacheCreationInputTokens += u.CacheCreationInputTokens
	}
	return s
}

// streamEvent is the part of a stream-json event ParseStream reads.
type streamEvent struct {
	Type    string `json:"type"`
	Subtype string `json:"subtype"`
	Message struct {
		ID      string   `json:"id"`
		Model   string   `json:"model"`
		Usage   msgUsage `json:"usage"`
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
	} `json:"message"`
	ParentToolUseID *string `json:"parent_tool_use_id"`
	SessionID       string  `json:"session_id"`
	// An assistant message the CLI made of an API error.
	IsAPIErrorMessage bool   `json:"is_api_error_message"`
	Error             string `json:"error"`
	APIErrorStatus    *int   `json:"api_error_status"`
	APIError          string `json:"api_error"`
	// A stream_event's API event.
	Event struct {
		Type    string `json:"type"`
		Message struct {
			ID    string   `json:"id"`
			Usage msgUsage `json:"usage"`
		} `json:"message"`
		Usage msgUsage `json:"usage"`
	} `json:"event"`
	// An api_retry event's figures (Error is its category).
	Attempt     int  `json:"attempt"`
	MaxRetries  int  `json:"max_retries"`
	ErrorStatus *int `json:"error_status"`
}

// count feeds the usage an event shows to t.
func (t *tokens) count(ev *streamEvent) {
	parent := ""
	if ev.ParentToolUseID != nil {
		parent = *ev.ParentToolUseID
	}
	switch ev.Type {
	case "stream_event":
		switch ev.Event.Type {
		case "message_start":
			if t.open == nil {
				t.open = map[string]string{}
			}
			t.open[parent] = ev.Event.Message.ID
			t.add(ev.Event.Message.ID, ev.Event.Message.Usage)
		case "message_delta":
			t.add(t.open[parent], ev.Event.Usage)
		}
	case "assistant":
		if !ev.IsAPIErrorMessage {
			t.add(ev.Message.ID, ev.Message.Usage)
		}
	}
}

func (ev *streamEvent) apiError() *APIError {
	e := &APIError{Category: ev.Error, Cause: ev.APIError}
	if ev.APIErrorStatus != nil {
		e.Status = *ev.APIErrorStatus
	}
	var parts []string
	for _, c := range ev.Message.Content {
		if c.Type == "text" {
			parts = append(parts, c.Text)
		}
	}
	e.Text = strings.Join(parts, "\n")
	return e
}

// isAPIError says whether an assistant event is the CLI's own report of
// a failed model request rather than the model's message.
func (ev *streamEvent) isAPIError() bool {
	return ev.Type == "assistant" && (ev.IsAPIErrorMessage || (ev.Error != "" && ev.Message.Model == "<synthetic>"))
}

// ParseStream reads stream-json output. Lines that are not JSON objects
// (a tail cut mid-line, stray text) are skipped.
func ParseStream(stdout string) Stream {
	var s Stream
	var lastText string
	agent.EachJSONLine(stdout, func(ev *streamEvent, line string) {
		if ev.SessionID != "" {
			s.SessionID = ev.SessionID
		}
		s.Tokens.count(ev)
		switch ev.Type {
		case "assistant":
			if ev.ParentToolUseID != nil {
				return // a subagent's message, not the run's answer
			}
			if ev.isAPIError() {
				s.APIError = ev.apiError()
				return
			}
			s.APIError = nil
			s.Assistant++
			var parts []string
			for _, c := range ev.Message.Content {
				if c.Type == "text" {
					parts = append(parts, c.Text)
				}
			}
			if len(parts) > 0 {
				lastText = strings.Join(parts, "\n")
			}
		case "result":
			var r Result
			if json.Unmarshal([]byte(line), &r) == nil {
				s.Result = &r
			}
		}
	})
	s.Final = lastText
	if s.Result != nil && s.Result.Subtype == "success" && !s.Result.IsError {
		s.Final = s.Result.Result
	}
	return s
}

// Record is the status record of the final message (IF-5, fail-closed),
// with a concern when Claude Code reported the run as an error.
func (s Stream) Record() agent.StatusRecord {
	rec := agent.ParseStatus(s.Final)
	if s.Result != nil && s.Result.IsError && rec.Reason != agent.ReasonUnparseable {
		rec.Concerns = append(rec.Concerns, "claude reported an error: "+s.Result.Subtype)
	}
	if s.Result == nil && rec.Reason == agent.ReasonUnparseable {
		rec.Summary += " (claude printed no result event)"
	}
	return rec
}

// Usage is the run's tokens and cost. The tokens are the result event's
// totals when it has them and they cover every message the stream showed
// (they also count requests the stream does not show, e.g. a compaction);
// otherwise — no result event (a run stopped at its budget), or a result
// that counts less than the stream showed — the sum over the stream's
// messages, each counted once. The cost is the result's total_cost_usd;
// without a result the CLI reported none (CostReported false): converge
// does not price tokens itself.
func (s Stream) Usage() agent.Usage {
	return s.usage(s.Tokens)
}

func (s Stream) usage(seen tokens) agent.Usage {
	sum := seen.Sum()
	if s.Result == nil {
		u := sum.usage()
		u.Turns = seen.Messages()
		return u
	}
	r := s.Result
	u := sum.usage()
	if r.Usage.covers(sum) {
		u = r.Usage.usage()
	}
	u.CostUSD, u.CostReported = r.TotalCostUSD, true
	u.Turns = r.NumTurns
	return u
}

// authCategories are the CLI's error categories (api_retry's and an API
// error message's "error") that say its credential was refused or is
// missing: trying again does not help.
var authCategories = map[string]bool{
	"authentication_failed": true, "oauth_org_not_allowed": true, "account_on_hold": true,
	"verification_required": true, "cloud_credential_error": true,
}

// endpointCategories say the model endpoint did not answer or kept
// failing.
var endpointCategories = map[string]bool{
	"server_error": true, "overloaded": true, "rate_limit": true,
}

// kindOf is the FailKind of a failed model request: its category, HTTP
// status (0: none) and cause as the CLI reports them.
func kindOf(category string, status int, cause string) agent.FailKind {
	switch {
	case authCategories[category] || status == 401 || status == 403:
		return agent.FailAuth
	case endpointCategories[category] || status == 429 || status >= 500 || cause == "connection_failed" ||
		(status == 0 && category == "unknown"):
		return agent.FailEndpoint
	}
	return agent.FailCLI
}

// Failure is the CLI's own report that it could not do the run, nil when
// there is none: its result is an error and its last message is the
// CLI's API error (not logged in, key refused, endpoint down, model
// unknown) or the model never answered (a startup failure). An error
// result after the model worked (error_max_turns) is not one: that run's
// record stands. endpoint is the model endpoint the run used.
func (s Stream) Failure(endpoint string) *agent.CLIError {
	r := s.Result
	switch {
	case s.APIError != nil:
		msg := s.APIError.Text
		if r != nil && r.IsError && strings.TrimSpace(r.Result) != "" {
			msg = r.Result
		}
		return &agent.CLIError{Kind: kindOf(s.APIError.Category, s.APIError.Status, s.APIError.Cause), Message: msg, Endpoint: endpoint}
	case r == nil || !r.IsError || s.Tokens.Messages() > 0 || s.Assistant > 0:
		return nil
	}
	status := 0
	if r.APIErrorStatus != nil {
		status = *r.APIErrorStatus
	}
	msg := strings.TrimSpace(r.Result)
	if msg == "" {
		msg = strings.Join(r.Errors, "; ")
	}
	if msg == "" {
		msg = fmt.Sprintf("claude ended with %s (%s) before its model answered", r.Subtype, r.TerminalReason)
	}
	return &agent.CLIError{Kind: kindOf("", status, ""), Message: msg, Endpoint: endpoint}
}
