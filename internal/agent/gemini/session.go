package gemini

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"

	"github.com/convergeloop/converge/internal/agent"
)

// Gemini CLI's stream-json output reports usage only in its final result
// event, which a run stopped at its budget never prints (SIGTERM ends the
// CLI without one). What it does keep as it goes is its session: a JSONL
// file, GEMINI_CLI_HOME (else HOME)/.gemini/tmp/PROJECT/chats/
// session-TIME-ID8.jsonl, appended with appendFileSync after every model
// answer, each "gemini" message carrying the answer's usageMetadata as
// tokens {input, output, cached, thoughts, tool, total}
// (packages/core/src/services/chatRecordingService.ts). A message is
// appended again when it changes, and {"$set": {"messages": […]}} rewrites
// the list; every version carries an id. The router's classifier and
// other side requests are not in the session: a stopped run's usage read
// from it lacks them (one small request a prompt with auto routing).

// sessionMessage is the part of a session record sessionUsage reads.
type sessionMessage struct {
	ID     string `json:"id"`
	Type   string `json:"type"`
	Tokens *struct {
		Input  int64 `json:"input"`
		Output int64 `json:"output"`
		Cached int64 `json:"cached"`
		Total  int64 `json:"total"`
	} `json:"tokens"`
}

type sessionRecord struct {
	SessionID string `json:"sessionId"`
	sessionMessage
	Set *struct {
		Messages []sessionMessage `json:"messages"`
	} `json:"$set"`
}

// sessionFiles are the session files of session id under home.
func sessionFiles(home, id string) []string {
	if home == "" || len(id) < 8 {
		return nil
	}
	files, _ := filepath.Glob(filepath.Join(home, ".gemini", "tmp", "*", "chats", "session-*-"+id[:8]+".jsonl"))
	return files
}

// sessionUsage is the usage of the model answers recorded in session id's
// file under home, leaving out the messages in counted and adding those
// it counts to it (a resumed session's file holds the earlier run's
// answers too). Found is false when no file of the session was found.
func sessionUsage(home, id string, counted map[string]bool) (u agent.Usage, found bool) {
	for _, file := range sessionFiles(home, id) {
		msgs, ok := readSession(file, id)
		if !ok {
			continue
		}
		found = true
		for _, m := range msgs {
			if m.Type != "gemini" || m.Tokens == nil || counted[m.ID] {
				continue
			}
			counted[m.ID] = true
			u.Add(tokenUsage(m.Tokens.Input, m.Tokens.Output, m.Tokens.Cached, m.Tokens.Total))
		}
	}
	return u, found
}

// readSession reads the messages of a session file, the last version of
// each; ok is false when the file is not session id's.
func readSession(file, id string) (msgs []sessionMessage, ok bool) {
	f, err := os.Open(file)
	if err != nil {
		return nil, false
	}
	defer f.Close()
	at := map[string]int{}
	keep := func(m sessionMessage) {
		if m.ID == "" {
			return
		}
		if i, seen := at[m.ID]; seen {
			msgs[i] = m
			return
		}
		at[m.ID] = len(msgs)
		msgs = append(msgs, m)
	}
	r := bufio.NewReader(f)
	first := true
	for {
		line, err := r.ReadBytes('\n')
		if line = bytes.TrimSpace(line); len(line) > 0 && line[0] == '{' {
			var rec sessionRecord
			if json.Unmarshal(line, &rec) == nil {
				if first {
					// The first record is the session's metadata.
					if rec.SessionID != id {
						return nil, false
					}
					first = false
				}
				if rec.Set != nil {
					// A rewrite drops messages from the history, not
					// from what the model served: keep them all.
					for _, m := range rec.Set.Messages {
						keep(m)
					}
				}
				keep(rec.sessionMessage)
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			break
		}
	}
	return msgs, !first
}

// tokenUsage is agent.Usage of Gemini's token counts: input (the prompt,
// cached tokens included), output (the candidates), cached, and total,
// whose rest beyond input and output is the model's thinking (and tool
// prompts), counted as output (ReasoningTokens).
func tokenUsage(input, output, cached, total int64) agent.Usage {
	reasoning := max(0, total-input-output)
	return agent.Usage{
		InputTokens:     max(0, input-cached),
		CacheReadTokens: cached,
		OutputTokens:    output + reasoning,
		ReasoningTokens: reasoning,
	}
}

// cliHome is the home directory Gemini CLI uses in env: GEMINI_CLI_HOME,
// else HOME, else converge's.
func cliHome(env []string) string {
	if h := agent.EnvValue(env, "GEMINI_CLI_HOME"); h != "" {
		return h
	}
	if h := agent.EnvValue(env, "HOME"); h != "" {
		return h
	}
	h, _ := os.UserHomeDir()
	return h
}
