package codex

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"

	"github.com/convergeloop/converge/internal/agent"
)

// What Codex 0.169 prints when its model requests fail, on stdout with
// --json (codex-rs exec event_processor_with_jsonl_output.rs):
//
//	{"type":"error","message":"Reconnecting... 2/5 (unexpected status 401 Unauthorized: …, url: http://…/v1/responses)"}
//	{"type":"error","message":"Reconnecting... waiting for network (Connection failed: error sending request)"}
//	{"type":"error","message":"Missing environment variable: `MYCO_LLM_KEY`."}
//	{"type":"turn.failed","error":{"message":"unexpected status 401 Unauthorized: …"}}
//
// It retries a request that failed (a 401 too) five times, then ends the
// turn; one it cannot connect at all it retries without end. The built-in
// provider tries a WebSocket (ws:// or wss:// in the message) five times
// first, then falls back to HTTP ("Falling back from WebSockets to HTTPS
// transport", an error item): a WebSocket's 401 or 403 is not yet the
// endpoint's answer (a proxy may refuse WebSockets only), the HTTP one's
// is.

// reconnecting matches Codex's retry message and captures its cause.
var reconnecting = regexp.MustCompile(`^Reconnecting\.\.\.(?:\s+\d+/\d+|\s+waiting for network)?\s*(?:\((.*)\))?\s*$`)

// authWords mark an authentication failure: a rejected key, a missing
// one, a login that is gone. Matched lowercased.
var authWords = []string{
	"401 unauthorized", "403 forbidden", "status 401", "status 403", "unauthorized", "forbidden",
	"invalid_api_key", "incorrect api key", "invalid api key", "missing environment variable",
	"not logged in", "log in again", "login again", "sign in again", "please log in", "please login",
	"could not be refreshed", "authentication",
}

// endpointWords mark a model endpoint that is unreachable or failing.
var endpointWords = []string{
	"stream disconnected", "error sending request", "connection failed", "connection refused",
	"connection reset", "timed out", "timeout", "unexpected status 5", "lookup address", "dns",
	"network", "reconnecting", "server error", "service unavailable", "bad gateway", "overloaded",
}

var messageURL = regexp.MustCompile(`url: ((?:https?|wss?)://[^\s,)]+)`)

func hasAny(s string, words []string) bool {
	s = strings.ToLower(s)
	for _, w := range words {
		if strings.Contains(s, w) {
			return true
		}
	}
	return false
}

// viaWebSocket: the message is about a WebSocket attempt.
func viaWebSocket(msg string) bool {
	m := messageURL.FindStringSubmatch(msg)
	return m != nil && (strings.HasPrefix(m[1], "ws://") || strings.HasPrefix(m[1], "wss://"))
}

// unwrap is the cause of a retry message, the message itself otherwise.
func unwrap(msg string) (cause string, retry bool) {
	msg = strings.TrimSpace(msg)
	if m := reconnecting.FindStringSubmatch(msg); m != nil {
		if m[1] != "" {
			return m[1], true
		}
		return msg, true
	}
	return msg, false
}

// classify is a failure Codex reported, as a *agent.CLIError: FailAuth
// for a rejected or missing credential, FailEndpoint (naming endpoint,
// else the URL in the message) for an unreachable or failing endpoint,
// FailCLI for anything else (an unknown model, a quota, a bad request).
func classify(msg, endpoint string) *agent.CLIError {
	cause, _ := unwrap(msg)
	e := &agent.CLIError{Kind: agent.FailCLI, Message: cause, Endpoint: endpoint}
	if e.Endpoint == "" {
		if m := messageURL.FindStringSubmatch(msg); m != nil {
			e.Endpoint = m[1]
		}
	}
	switch {
	case hasAny(cause, authWords):
		e.Kind = agent.FailAuth
	case hasAny(msg, endpointWords):
		e.Kind = agent.FailEndpoint
	}
	return e
}

// watcher reads a run's output as it comes (agent.CLIRun.Watch): what it
// says of the model connection, and the thread's id for the rollout and
// the summary turn even when the kept output lost it.
type watcher struct {
	endpoint string
	mu       sync.Mutex
	threadID string
}

func (w *watcher) thread() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.threadID
}

// line is the Signal of one output line: an error event about the
// credential (not a WebSocket attempt's) fails the run at once; a retry
// is a Retry naming the endpoint; an item or a completed turn is the
// model answering. stderr has Codex's log lines, which say nothing its
// events do not.
func (w *watcher) line(stderr bool, line string) agent.Signal {
	if stderr || !strings.HasPrefix(strings.TrimSpace(line), "{") {
		return agent.Signal{}
	}
	var ev event
	if json.Unmarshal([]byte(line), &ev) != nil {
		return agent.Signal{}
	}
	switch ev.Type {
	case "thread.started":
		w.mu.Lock()
		w.threadID = ev.ThreadID
		w.mu.Unlock()
	case "error", "turn.failed":
		msg := ev.Message
		if ev.Type == "turn.failed" {
			msg = ev.Error.Message
		}
		e := classify(msg, w.endpoint)
		_, retry := unwrap(msg)
		switch {
		case e.Kind == agent.FailAuth && !viaWebSocket(msg):
			return agent.Signal{Fail: e}
		case retry && ev.Type == "error":
			e.Kind, e.Message = agent.FailEndpoint, strings.TrimSpace(msg)
			return agent.Signal{Retry: e}
		}
	case "item.started", "item.updated", "item.completed":
		if ev.Item.Type != "error" {
			return agent.Signal{Progress: true}
		}
	case "turn.completed":
		return agent.Signal{Progress: true}
	}
	return agent.Signal{}
}

// RolloutUsage is the token count of thread as its rollout under home
// ($CODEX_HOME/sessions/YYYY/MM/DD/rollout-…-THREAD.jsonl) last recorded
// it: Codex writes a token_count event with the thread's total after
// every model response, so a run stopped mid-turn, which printed no
// usage, has its completed responses counted there. ok is false when
// there is no such rollout (an --ephemeral run) or it holds no count.
func RolloutUsage(home, thread string) (u agent.Usage, ok bool) {
	if home == "" || thread == "" || strings.ContainsAny(thread, `/\*?[`) {
		return agent.Usage{}, false
	}
	files, _ := filepath.Glob(filepath.Join(home, "sessions", "*", "*", "*", "rollout-*"+thread+".jsonl"))
	for _, f := range files {
		if got, found := rolloutTotal(f); found {
			u, ok = got, true
		}
	}
	return u, ok
}

func rolloutTotal(path string) (u agent.Usage, ok bool) {
	f, err := os.Open(path)
	if err != nil {
		return agent.Usage{}, false
	}
	defer f.Close()
	r := bufio.NewReader(f)
	for {
		line, err := r.ReadBytes('\n')
		if bytes.Contains(line, []byte(`"token_count"`)) {
			var rec struct {
				Type    string `json:"type"`
				Payload struct {
					Type string `json:"type"`
					Info *struct {
						Total *tokenUsage `json:"total_token_usage"`
					} `json:"info"`
				} `json:"payload"`
			}
			if json.Unmarshal(line, &rec) == nil && rec.Type == "event_msg" && rec.Payload.Type == "token_count" &&
				rec.Payload.Info != nil && rec.Payload.Info.Total != nil {
				u, ok = rec.Payload.Info.Total.usage(), true
			}
		}
		if err != nil {
			return u, ok
		}
	}
}
