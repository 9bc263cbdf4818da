package claude

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"github.com/convergeloop/converge/internal/agent"
)

// watcher reads one run's stream-json output as it comes
// (agent.CLIRun.Watch), for two things:
//
//   - what it says of the model connection (agent.Signal): an api_retry
//     about a refused credential (401, 403, authentication_failed) is a
//     Fail from the second one on — the first may be an expired OAuth
//     login the CLI refreshes before it tries again — and a Retry before;
//     an api_retry about anything else (no HTTP answer, 5xx, 429) is a
//     Retry naming the endpoint, which converge ends after its retry
//     bound; the CLI's own API error message after it gave up is a Fail
//     of its kind, in its words; anything the model sent is Progress;
//   - the usage of every model message, counted as it streams, so that a
//     run whose output outgrew the kept tail, or was stopped at its
//     budget, still counts every token its model served.
type watcher struct {
	endpoint string
	// credential names where the run's credential comes from, for the
	// message of an auth failure (never its value).
	credential string

	mu          sync.Mutex
	authRetries int
	tokens      tokens
	last        string // the last stdout line seen
}

func newWatcher(endpoint, credential string) *watcher {
	return &watcher{endpoint: endpoint, credential: credential}
}

func (w *watcher) line(stderr bool, line string) agent.Signal {
	line = strings.TrimSpace(line)
	if stderr || !strings.HasPrefix(line, "{") {
		return agent.Signal{}
	}
	var ev streamEvent
	if json.Unmarshal([]byte(line), &ev) != nil {
		return agent.Signal{}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.last = line
	w.tokens.count(&ev)
	switch {
	case ev.Type == "system" && ev.Subtype == "api_retry":
		return w.retry(&ev)
	case ev.isAPIError():
		e := ev.apiError()
		kind := kindOf(e.Category, e.Status, e.Cause)
		if kind == agent.FailCLI {
			// An unknown model, a request the API refused: the result
			// event that follows says so (Stream.Failure).
			return agent.Signal{}
		}
		return agent.Signal{Fail: &agent.CLIError{Kind: kind, Message: w.withCredential(kind, e.Text), Endpoint: w.endpoint}}
	case ev.Type == "assistant", ev.Type == "stream_event" && ev.Event.Type == "message_start":
		return agent.Signal{Progress: true}
	}
	return agent.Signal{}
}

func (w *watcher) retry(ev *streamEvent) agent.Signal {
	status := 0
	if ev.ErrorStatus != nil {
		status = *ev.ErrorStatus
	}
	what := fmt.Sprintf("HTTP %d", status)
	if status == 0 {
		what = "no HTTP response"
	}
	msg := fmt.Sprintf("API request failed: %s, error %q (Claude Code api_retry, attempt %d of %d)", what, ev.Error, ev.Attempt, ev.MaxRetries)
	if kindOf(ev.Error, status, "") == agent.FailAuth {
		e := &agent.CLIError{Kind: agent.FailAuth, Message: w.withCredential(agent.FailAuth, msg), Endpoint: w.endpoint}
		w.authRetries++
		if w.authRetries >= 2 {
			return agent.Signal{Fail: e}
		}
		return agent.Signal{Retry: e}
	}
	return agent.Signal{Retry: &agent.CLIError{Kind: agent.FailEndpoint, Message: msg, Endpoint: w.endpoint}}
}

func (w *watcher) withCredential(kind agent.FailKind, msg string) string {
	if kind != agent.FailAuth || w.credential == "" {
		return msg
	}
	return msg + " (credential from " + w.credential + ")"
}

// tokensOf is the usage the watcher counted when stdout is the output it
// watched (the run's tail ends with the last line it saw), else the
// usage stdout itself shows (a summary turn's, which is not watched).
func (w *watcher) tokensOf(stdout string, shown tokens) tokens {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.last == "" || !strings.HasSuffix(strings.TrimSpace(stdout), w.last) {
		return shown
	}
	return w.tokens
}
