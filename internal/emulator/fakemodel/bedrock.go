package fakemodel

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"hash/crc32"
	"net/http"
	"net/url"
	"strings"
)

// Claude on Amazon Bedrock, as Claude Code talks to it with
// CLAUDE_CODE_USE_BEDROCK=1 (the Anthropic SDK's Bedrock client,
// anthropic-sdk-typescript packages/bedrock-sdk, over the Bedrock Runtime
// API):
//
//	POST {base}/model/{modelId}/invoke-with-response-stream
//	POST {base}/model/{modelId}/invoke
//	POST {base}/model/{modelId}/count-tokens
//	GET  {base}/inference-profiles?type=SYSTEM_DEFINED
//
// where {base} is ANTHROPIC_BEDROCK_BASE_URL
// (https://bedrock-runtime.{region}.amazonaws.com by default) and modelId
// is path-escaped (an inference profile such as
// us.anthropic.claude-opus-4-1, or an ARN). The body is a Messages
// request without model or stream, with anthropic_version
// "bedrock-2023-05-31". invoke answers with a Message;
// invoke-with-response-stream with an AWS event stream
// (application/vnd.amazon.eventstream) whose every message is an event of
// type "chunk" carrying {"bytes": base64 of one Messages stream event}.
// Bedrock's own errors are {"message"} with the exception's name in
// x-amzn-ErrorType: Refuse's api is "bedrock".

// BedrockRoute is a Bedrock request's model and operation ("invoke",
// "invoke-with-response-stream", "count-tokens", or
// "list-inference-profiles" of the control plane, which Claude Code asks
// at the same base URL).
type BedrockRoute struct {
	Model, Op string
}

func bedrockRoute(path string) (BedrockRoute, bool) {
	if path == "/inference-profiles" {
		return BedrockRoute{Op: "list-inference-profiles"}, true
	}
	rest, ok := strings.CutPrefix(path, "/model/")
	if !ok {
		return BedrockRoute{}, false
	}
	i := strings.LastIndex(rest, "/")
	if i <= 0 {
		return BedrockRoute{}, false
	}
	model, op := rest[:i], rest[i+1:]
	switch op {
	case "invoke", "invoke-with-response-stream", "count-tokens":
	default:
		return BedrockRoute{}, false
	}
	if m, err := url.PathUnescape(model); err == nil {
		model = m
	}
	return BedrockRoute{Model: model, Op: op}, true
}

func (s *Server) serveBedrock(w http.ResponseWriter, r *http.Request, b BedrockRoute) {
	switch {
	case b.Op == "list-inference-profiles" && r.Method == http.MethodGet:
		// Claude Code lists the region's inference profiles (the Bedrock
		// control plane's ListInferenceProfiles) before it picks a model
		// id; a region without any is a valid answer, and it then uses
		// its own default profile id.
		s.record(Request{API: "bedrock", Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone(), Side: true, Script: -1})
		writeJSON(w, http.StatusOK, map[string]any{"inferenceProfileSummaries": []any{}})
		return
	case r.Method != http.MethodPost || b.Op == "list-inference-profiles":
		s.record(Request{API: "bedrock", Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone(), Script: -1})
		s.fail("unexpected request %s %s", r.Method, r.URL)
		bedrockError(w, http.StatusNotFound, "fakemodel: no such operation")
		return
	case b.Op == "count-tokens":
		s.countTokens(w, r, "bedrock")
		return
	}
	stream := b.Op == "invoke-with-response-stream"
	s.serveMessages(w, r, messagesRoute{api: "bedrock", model: b.Model, stream: &stream, events: bedrockEvents})
}

// bedrockEvents starts an event stream and returns the writer of its
// chunks.
func bedrockEvents(w http.ResponseWriter) func(event string, data any) {
	w.Header().Set("Content-Type", "application/vnd.amazon.eventstream")
	w.Header().Set("X-Amzn-Bedrock-Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	return func(_ string, data any) {
		inner, err := json.Marshal(data)
		if err != nil {
			panic(err) // only our own maps are written
		}
		payload, _ := json.Marshal(map[string]string{"bytes": base64.StdEncoding.EncodeToString(inner)})
		_, _ = w.Write(EventStreamMessage([][2]string{
			{":event-type", "chunk"},
			{":content-type", "application/json"},
			{":message-type", "event"},
		}, payload))
		if f, ok := w.(http.Flusher); ok {
			f.Flush()
		}
	}
}

// EventStreamMessage is one message of the AWS event stream encoding
// (application/vnd.amazon.eventstream): total length and headers length
// (big-endian uint32), the CRC-32 of those 8 bytes, the headers (each a
// 1-byte name length, the name, type 7 for a string, a 2-byte value
// length, the value), the payload, and the CRC-32 of all before it.
func EventStreamMessage(headers [][2]string, payload []byte) []byte {
	var hb bytes.Buffer
	for _, h := range headers {
		hb.WriteByte(byte(len(h[0])))
		hb.WriteString(h[0])
		hb.WriteByte(7)
		_ = binary.Write(&hb, binary.BigEndian, uint16(len(h[1])))
		hb.WriteString(h[1])
	}
	total := 12 + hb.Len() + len(payload) + 4
	var m bytes.Buffer
	_ = binary.Write(&m, binary.BigEndian, uint32(total))
	_ = binary.Write(&m, binary.BigEndian, uint32(hb.Len()))
	_ = binary.Write(&m, binary.BigEndian, crc32.ChecksumIEEE(m.Bytes()))
	m.Write(hb.Bytes())
	m.Write(payload)
	_ = binary.Write(&m, binary.BigEndian, crc32.ChecksumIEEE(m.Bytes()))
	return m.Bytes()
}

// bedrockError answers as Bedrock Runtime does: {"message"} and the
// exception's name in x-amzn-ErrorType.
func bedrockError(w http.ResponseWriter, status int, message string) {
	typ := map[int]string{400: "ValidationException", 401: "UnrecognizedClientException", 403: "AccessDeniedException",
		404: "ResourceNotFoundException", 429: "ThrottlingException", 503: "ServiceUnavailableException"}[status]
	if typ == "" {
		typ = "InternalServerException"
	}
	w.Header().Set("X-Amzn-ErrorType", typ)
	writeJSON(w, status, map[string]any{"message": message})
}
