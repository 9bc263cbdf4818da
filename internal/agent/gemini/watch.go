package gemini

import (
	"encoding/json"
	"regexp"
	"strings"

	"github.com/convergeloop/converge/internal/agent"
)

// How Gemini CLI 0.61 reports what goes wrong with its model, as seen
// with the real CLI against fakemodel:
//
//   - A request the API refused is printed to stderr as it happens, e.g.
//     `Error when talking to Gemini API Full report available at:
//     /tmp/….json _ApiError: {"error":{"code":401,"message":"…",
//     "status":"UNAUTHENTICATED"}}` (the router's classifier request says
//     "Error generating content via API."). A 401, 403 or 400 is not
//     retried: the CLI ends with a result event {"status":"error",
//     "error":{"message":"[API Error: …]"}} and exits with the status.
//   - A 429, a 5xx or a network error (connection refused: "fetch
//     failed") is retried with back-off, up to 10 attempts over minutes,
//     each retry on stderr: `Attempt 2 failed with status 503. Retrying
//     with backoff... _ApiError: …`, `Attempt 1 failed. Retrying with
//     backoff... Error: exception TypeError: fetch failed sending request`
//     (packages/core/src/utils/retry.ts). No line names the endpoint.
//   - Before any request, a missing credential ends the CLI with exit 41
//     and its reason on stderr only: "When using Gemini API, you must
//     specify the GEMINI_API_KEY environment variable.", "Invalid auth
//     method selected.", "Could not load the default credentials…",
//     "Error authenticating: FatalAuthenticationError: Manual
//     authorization is required but the current session is
//     non-interactive…".
//
// On stdout, the model's answers are message (assistant), tool_use and
// tool_result events.

// authPatterns are what says the CLI's credentials are missing or were
// rejected.
var authPatterns = regexp.MustCompile(`"code":\s*40[13]\b|UNAUTHENTICATED|PERMISSION_DENIED|API_KEY_INVALID|` +
	`API key not valid|API key expired|must specify the GEMINI_API_KEY|When using Vertex AI, you must specify|Invalid auth method selected|` +
	`Please set an Auth method|Could not load the default credentials|Error authenticating|FatalAuthenticationError|` +
	`Manual authorization is required|enforced authentication type|is enforced, but no authentication`)

// endpointPatterns are what says the model endpoint could not be reached
// or kept failing.
var endpointPatterns = regexp.MustCompile(`fetch failed|ECONNREFUSED|ENOTFOUND|ETIMEDOUT|ECONNRESET|EAI_AGAIN|` +
	`"code":\s*5\d\d\b|\bstatus:? 5\d\d\b|"status":\s*"(?:UNAVAILABLE|INTERNAL)"|Retry attempts exhausted`)

// retryLine is the CLI's report of a request it will try again.
var retryLine = regexp.MustCompile(`^Attempt \d+ failed`)

var (
	ansi       = regexp.MustCompile(`\x1b\[[0-9;]*[A-Za-z]`)
	fullReport = regexp.MustCompile(`\s*Full report available at: \S+`)
)

// cleanLine is a line of the CLI's stderr as converge quotes it: without
// colours and without the path of the CLI's own error report.
func cleanLine(line string) string {
	line = ansi.ReplaceAllString(line, "")
	return strings.TrimSpace(fullReport.ReplaceAllString(line, ""))
}

// failKind is the kind of a failure the CLI reported in message.
func failKind(message string) agent.FailKind {
	switch {
	case authPatterns.MatchString(message):
		return agent.FailAuth
	case endpointPatterns.MatchString(message):
		return agent.FailEndpoint
	}
	return agent.FailCLI
}

// watcher is CLIRun.Watch for a run whose model is at endpoint: a
// rejected or missing credential stops the run at once, a retried
// request starts the retry bound, a model answer ends it.
func watcher(endpoint string) func(stderr bool, line string) agent.Signal {
	return func(stderr bool, line string) agent.Signal {
		if !stderr {
			return stdoutSignal(line)
		}
		line = cleanLine(line)
		switch {
		case retryLine.MatchString(line):
			if failKind(line) == agent.FailAuth {
				return agent.Signal{Fail: &agent.CLIError{Kind: agent.FailAuth, Message: line}}
			}
			return agent.Signal{Retry: &agent.CLIError{Kind: agent.FailEndpoint, Message: line, Endpoint: endpoint}}
		case authPatterns.MatchString(line):
			return agent.Signal{Fail: &agent.CLIError{Kind: agent.FailAuth, Message: line}}
		}
		return agent.Signal{}
	}
}

// stdoutSignal reads one stream-json event: the model's text and tool
// calls are progress, as is a result that succeeded; a result that failed
// on credentials is an authentication failure.
func stdoutSignal(line string) agent.Signal {
	line = strings.TrimSpace(line)
	if !strings.HasPrefix(line, "{") {
		return agent.Signal{}
	}
	var ev event
	if json.Unmarshal([]byte(line), &ev) != nil {
		return agent.Signal{}
	}
	switch ev.Type {
	case "message":
		if ev.Role == "assistant" {
			return agent.Signal{Progress: true}
		}
	case "tool_use", "tool_result":
		return agent.Signal{Progress: true}
	case "result":
		if ev.Status == "success" {
			return agent.Signal{Progress: true}
		}
		if msg := ev.Error.Message; msg != "" && failKind(msg) == agent.FailAuth {
			return agent.Signal{Fail: &agent.CLIError{Kind: agent.FailAuth, Message: msg}}
		}
	}
	return agent.Signal{}
}
