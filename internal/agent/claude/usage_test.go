package claude

import (
	"strings"
	"testing"

	"github.com/convergeloop/converge/internal/agent"
)

// A run's stream with --include-partial-messages, as Claude Code 2.1.328
// printed it (cut to the fields read): each model message's
// message_start (input usage, output_tokens a placeholder), one assistant
// event per content block with message_start's usage, then message_delta
// with the final output_tokens. The third message is the one the run was
// stopped in: its message_start came, its end did not.
var partialStream = lines(
	`{"type":"system","subtype":"init","session_id":"s"}`,
	`{"type":"stream_event","event":{"type":"message_start","message":{"id":"msg_1","usage":{"input_tokens":100,"output_tokens":1,"cache_read_input_tokens":0,"cache_creation_input_tokens":0}}},"parent_tool_use_id":null,"session_id":"s"}`,
	`{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hello"}},"parent_tool_use_id":null,"session_id":"s"}`,
	`{"type":"assistant","message":{"id":"msg_1","model":"m","usage":{"input_tokens":100,"output_tokens":1},"content":[{"type":"text","text":"Hello"}]},"parent_tool_use_id":null,"session_id":"s"}`,
	`{"type":"assistant","message":{"id":"msg_1","model":"m","usage":{"input_tokens":100,"output_tokens":1},"content":[{"type":"tool_use","id":"t1","name":"Bash","input":{}}]},"parent_tool_use_id":null,"session_id":"s"}`,
	`{"type":"stream_event","event":{"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"input_tokens":100,"output_tokens":10,"cache_read_input_tokens":0,"cache_creation_input_tokens":0}},"parent_tool_use_id":null,"session_id":"s"}`,
	`{"type":"stream_event","event":{"type":"message_stop"},"parent_tool_use_id":null,"session_id":"s"}`,
	`{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t1","content":"ok"}]},"parent_tool_use_id":null,"session_id":"s"}`,
	`{"type":"stream_event","event":{"type":"message_start","message":{"id":"msg_2","usage":{"input_tokens":200,"output_tokens":1,"cache_read_input_tokens":50,"cache_creation_input_tokens":7}}},"parent_tool_use_id":null,"session_id":"s"}`,
	`{"type":"assistant","message":{"id":"msg_2","model":"m","usage":{"input_tokens":200,"output_tokens":1,"cache_read_input_tokens":50,"cache_creation_input_tokens":7},"content":[{"type":"text","text":"More"}]},"parent_tool_use_id":null,"session_id":"s"}`,
	`{"type":"stream_event","event":{"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"input_tokens":200,"output_tokens":20,"cache_read_input_tokens":50,"cache_creation_input_tokens":7}},"parent_tool_use_id":null,"session_id":"s"}`,
	`{"type":"stream_event","event":{"type":"message_start","message":{"id":"msg_3","usage":{"input_tokens":300,"output_tokens":1}}},"parent_tool_use_id":null,"session_id":"s"}`,
)

// AG-B1: a run's usage is read from every model message it streamed,
// each counted once by its id (Claude Code repeats a message's usage in
// an assistant event per content block), with the output tokens of
// message_delta: a run stopped at its budget, which prints no result
// event, counts every token its model served. The CLI reported no cost
// for it, so none is claimed.
func TestAG_B1_UsageOfAStoppedRunCountsEveryMessage(t *testing.T) {
	u := ParseStream(partialStream).Usage()
	want := agent.Usage{InputTokens: 600, OutputTokens: 31, CacheReadTokens: 50, CacheWriteTokens: 7, Turns: 3}
	if u != want {
		t.Errorf("usage = %+v\nwant   %+v", u, want)
	}

	// Without stream events (a summary turn's output, an older CLI) the
	// assistant events still count each message once.
	var assistantOnly []string
	for _, l := range strings.Split(strings.TrimSpace(partialStream), "\n") {
		if !strings.Contains(l, `"stream_event"`) {
			assistantOnly = append(assistantOnly, l)
		}
	}
	if u := ParseStream(lines(assistantOnly...)).Usage(); u.InputTokens != 300 || u.CacheReadTokens != 50 || u.Turns != 2 {
		t.Errorf("assistant-only usage = %+v, want input 300 (msg_1 and msg_2 once each)", u)
	}
}

// AG-B1: with a result event, its totals are taken when they cover what
// the stream showed (they also count requests the stream does not show);
// a result that counts less than the stream showed is not believed for
// the tokens. The cost is the result's.
func TestAG_B1_UsageResultTotalsOnlyWhenConsistent(t *testing.T) {
	consistent := partialStream + lines(`{"type":"result","subtype":"success","is_error":false,"num_turns":3,"result":"x","total_cost_usd":0.0036,"usage":{"input_tokens":700,"output_tokens":60,"cache_read_input_tokens":50,"cache_creation_input_tokens":7}}`)
	u := ParseStream(consistent).Usage()
	if want := (agent.Usage{InputTokens: 700, OutputTokens: 60, CacheReadTokens: 50, CacheWriteTokens: 7, CostUSD: 0.0036, CostReported: true, Turns: 3}); u != want {
		t.Errorf("usage = %+v\nwant   %+v", u, want)
	}
	short := partialStream + lines(`{"type":"result","subtype":"success","is_error":false,"num_turns":1,"result":"x","total_cost_usd":0.001,"usage":{"input_tokens":300,"output_tokens":30}}`)
	u = ParseStream(short).Usage()
	if want := (agent.Usage{InputTokens: 600, OutputTokens: 31, CacheReadTokens: 50, CacheWriteTokens: 7, CostUSD: 0.001, CostReported: true, Turns: 1}); u != want {
		t.Errorf("usage = %+v\nwant   %+v", u, want)
	}
}

// AG-B1: the watcher counts usage from every line as it comes, so a run
// whose output outgrew the tail converge keeps still counts its first
// messages; a summary turn's output (not watched) is counted from itself.
func TestAG_B1_WatcherCountsBeyondTheTail(t *testing.T) {
	w := newWatcher("", "")
	all := strings.Split(strings.TrimSpace(partialStream), "\n")
	for _, l := range all {
		w.line(false, l)
	}
	tail := lines(all[len(all)-3:]...)
	s := ParseStream(tail)
	if u := s.usage(w.tokensOf(tail, s.Tokens)); u.InputTokens != 600 || u.OutputTokens != 31 {
		t.Errorf("usage of the watched run = %+v, want input 600, output 31", u)
	}
	if u := s.Usage(); u.InputTokens == 600 {
		t.Errorf("the tail alone counts %+v: the test does not cut", u)
	}
	summary := lines(`{"type":"assistant","message":{"id":"msg_9","model":"m","usage":{"input_tokens":5,"output_tokens":1},"content":[{"type":"text","text":"{}"}]},"parent_tool_use_id":null,"session_id":"s"}`)
	ss := ParseStream(summary)
	if u := ss.usage(w.tokensOf(summary, ss.Tokens)); u.InputTokens != 5 {
		t.Errorf("summary turn usage = %+v, want its own (input 5)", u)
	}
}
