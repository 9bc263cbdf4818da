package opencode

import (
	"encoding/json"
	"regexp"
	"strings"
	"sync"

	"github.com/convergeloop/converge/internal/agent"
)

// How OpenCode 1.18 says that it cannot use its model, read as a run
// goes (agent.CLIRun.Watch) and from its whole output afterwards:
//
//   - stdout, an error event (the session's session.error): {"type":
//     "error", "error": {"name", "data": {"message", "statusCode",
//     "isRetryable", "metadata": {"url"}, "providerID"}}}. A rejected key is
//     an APIError with statusCode 401 or 403, a missing one a
//     ProviderAuthError ("Anthropic API key is missing. …"); OpenCode does
//     not try either again, and ends the run. An UnknownError's message
//     ("Unexpected server error. Check server logs for details.") names a
//     ref whose error its log holds.
//   - stderr, its log (--print-logs): a model request that failed is a line
//     `level=ERROR … message="stream error" providerID=P … small=false …
//     error.error="AI_APICallError: Cannot connect to API: …"` — connection
//     refused, a 5xx, a 429 — and OpenCode tries it again, with a growing
//     delay, printing nothing on stdout, for a minute or more before it
//     gives up with an error event (whose URL is the request's).
//     small=true is its title request, which the run does not need.
//   - stdout, any step_start, text, reasoning, tool_use or step_finish
//     event: the model answered.

// ErrorInfo is an error event's error.
type ErrorInfo struct {
	// Name is OpenCode's error class (APIError, ProviderAuthError,
	// UnknownError …); Message its message (the name when it has none).
	Name, Message string
	// StatusCode is the HTTP status of an APIError, 0 when none.
	StatusCode int
	Retryable  bool
	// URL is the request's URL of an APIError; Provider the provider of a
	// ProviderAuthError; Ref the log's reference of an UnknownError.
	URL, Provider, Ref string
}

// parseError reads an error event's error (an object with a name and
// data), or keeps its JSON as the message.
func parseError(raw json.RawMessage) ErrorInfo {
	var v struct {
		Name    string `json:"name"`
		Message string `json:"message"`
		Data    struct {
			Message     string `json:"message"`
			StatusCode  int    `json:"statusCode"`
			IsRetryable bool   `json:"isRetryable"`
			ProviderID  string `json:"providerID"`
			Ref         string `json:"ref"`
			Metadata    struct {
				URL string `json:"url"`
			} `json:"metadata"`
		} `json:"data"`
	}
	if json.Unmarshal(raw, &v) != nil {
		return ErrorInfo{Message: string(raw)}
	}
	msg := v.Data.Message
	if msg == "" {
		msg = v.Message
	}
	if msg == "" {
		msg = v.Name
	}
	if msg == "" {
		msg = string(raw)
	}
	return ErrorInfo{Name: v.Name, Message: msg, StatusCode: v.Data.StatusCode, Retryable: v.Data.IsRetryable,
		URL: v.Data.Metadata.URL, Provider: v.Data.ProviderID, Ref: v.Data.Ref}
}

// kind is what an error event says of the run: an authentication
// failure, a failing endpoint (a 5xx, a 429, or what OpenCode calls
// retryable), or another error of the CLI.
func (e ErrorInfo) kind() agent.FailKind {
	switch {
	case e.Name == "ProviderAuthError" || e.StatusCode == 401 || e.StatusCode == 403:
		return agent.FailAuth
	case e.StatusCode >= 500 || e.StatusCode == 429 || e.Retryable:
		return agent.FailEndpoint
	}
	return agent.FailCLI
}

// watcher reads one run's output as it comes, and keeps what its log
// said for the read afterwards.
type watcher struct {
	endpoint func(provider string) string
	mu       sync.Mutex
	refs     map[string]string // an UnknownError's ref → the error its log gave
}

func newWatcher(endpoint func(string) string) *watcher {
	return &watcher{endpoint: endpoint, refs: map[string]string{}}
}

// line is the run's agent.CLIRun.Watch.
func (w *watcher) line(stderr bool, line string) agent.Signal {
	if stderr {
		return w.logLine(line)
	}
	line = strings.TrimSpace(line)
	if !strings.HasPrefix(line, "{") {
		return agent.Signal{}
	}
	var ev event
	if json.Unmarshal([]byte(line), &ev) != nil {
		return agent.Signal{}
	}
	switch ev.Type {
	case "step_start", "text", "reasoning", "tool_use", "step_finish":
		return agent.Signal{Progress: true}
	case "error":
		// Only an authentication failure is worth stopping for: OpenCode
		// ends the run after any error event, which the read afterwards
		// reports (failure).
		info := parseError(ev.Error)
		if info.kind() == agent.FailAuth {
			return agent.Signal{Fail: w.cliError(info)}
		}
	}
	return agent.Signal{}
}

// logLine reads one line of OpenCode's log.
func (w *watcher) logLine(line string) agent.Signal {
	if !strings.Contains(line, "level=ERROR") {
		return agent.Signal{}
	}
	f := logfmt(line)
	switch f["message"] {
	case "failed":
		if f["ref"] != "" && f["error"] != "" {
			w.mu.Lock()
			w.refs[f["ref"]] = f["error"]
			w.mu.Unlock()
		}
	case "stream error":
		if f["small"] == "true" {
			return agent.Signal{}
		}
		msg := f["error.error"]
		if strings.HasPrefix(msg, "AI_LoadAPIKeyError") {
			// No key: the error event that follows says so too.
			return agent.Signal{Fail: &agent.CLIError{Kind: agent.FailAuth, Message: trimClass(msg)}}
		}
		return agent.Signal{Retry: &agent.CLIError{Kind: agent.FailEndpoint, Message: trimClass(msg),
			Endpoint: w.endpoint(f["providerID"])}}
	}
	return agent.Signal{}
}

// failure is the run's error that events report, nil when none.
func (w *watcher) failure(e Events) *agent.CLIError {
	if e.Error == nil {
		return nil
	}
	info := *e.Error
	if info.Ref != "" {
		w.mu.Lock()
		logged := w.refs[info.Ref]
		w.mu.Unlock()
		if logged != "" {
			info.Message = trimClass(logged)
		}
	}
	return w.cliError(info)
}

func (w *watcher) cliError(info ErrorInfo) *agent.CLIError {
	f := &agent.CLIError{Kind: info.kind(), Message: info.Message, Endpoint: info.URL}
	if f.Endpoint == "" && f.Kind == agent.FailEndpoint {
		f.Endpoint = w.endpoint(info.Provider)
	}
	return f
}

// errorClass is the class name an error's text in OpenCode's log starts
// with ("AI_APICallError: ", "TypeError [ERR_INVALID_URL]: ").
var errorClass = regexp.MustCompile(`^[A-Za-z_]*Error(?: \[[A-Z_]+\])?: `)

func trimClass(msg string) string {
	return errorClass.ReplaceAllString(strings.TrimSpace(msg), "")
}

// logfmt reads a line of OpenCode's log: key=value pairs, a value
// double-quoted (with backslash escapes) when it holds a space.
func logfmt(line string) map[string]string {
	out := map[string]string{}
	i := 0
	for i < len(line) {
		for i < len(line) && line[i] == ' ' {
			i++
		}
		eq := strings.IndexByte(line[i:], '=')
		if eq < 0 {
			break
		}
		key := line[i : i+eq]
		i += eq + 1
		if strings.ContainsRune(key, ' ') {
			// Not a key: skip to the next space.
			sp := strings.IndexByte(key, ' ')
			i = i - eq - 1 + sp + 1
			continue
		}
		var val strings.Builder
		if i < len(line) && line[i] == '"' {
			i++
			for i < len(line) && line[i] != '"' {
				if line[i] == '\\' && i+1 < len(line) {
					i++
					switch line[i] {
					case 'n':
						val.WriteByte('\n')
					case 't':
						val.WriteByte('\t')
					default:
						val.WriteByte(line[i])
					}
				} else {
					val.WriteByte(line[i])
				}
				i++
			}
			i++ // the closing quote
		} else {
			for i < len(line) && line[i] != ' ' {
				val.WriteByte(line[i])
				i++
			}
		}
		out[key] = val.String()
	}
	return out
}
