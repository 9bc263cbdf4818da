package fakemodel

import (
	"net/http"
	"strings"
)

// Claude on Google Vertex AI (publisher anthropic; Gemini's paths, under
// publisher google, are vertex.go's), as Claude Code talks to it with
// CLAUDE_CODE_USE_VERTEX=1 (the Anthropic SDK's Vertex client,
// anthropic-sdk-typescript packages/vertex-sdk): the Messages API under
// a Vertex model's resource path,
//
//	POST {base}/projects/P/locations/R/publishers/anthropic/models/M:streamRawPredict
//	POST {base}/projects/P/locations/R/publishers/anthropic/models/M:rawPredict
//	POST {base}/projects/P/locations/R/publishers/anthropic/models/count-tokens:rawPredict
//
// where {base} is ANTHROPIC_VERTEX_BASE_URL (https://R-aiplatform.googleapis.com/v1
// by default). The body is a Messages request without its model (the
// path names it) and with anthropic_version "vertex-2023-10-16";
// streamRawPredict answers with the Messages API's server-sent events,
// rawPredict with a Message. Vertex's own errors (a rejected credential, a
// quota) are Google's {"error":{"code","message","status"}}: Refuse's api
// is "vertex".

// AnthropicVertexRoute is what the path of a Vertex request for a Claude
// model names: project, region, model and method ("streamRawPredict",
// "rawPredict"). (Gemini's Vertex paths are VertexRoute's.)
type AnthropicVertexRoute struct {
	Project, Region, Model, Method string
}

func anthropicVertexRoute(path string) (AnthropicVertexRoute, bool) {
	i := strings.Index(path, "/projects/")
	if i < 0 {
		return AnthropicVertexRoute{}, false
	}
	parts := strings.Split(path[i+1:], "/")
	// projects P locations R publishers anthropic models M:method
	if len(parts) != 8 || parts[0] != "projects" || parts[2] != "locations" ||
		parts[4] != "publishers" || parts[5] != "anthropic" || parts[6] != "models" {
		return AnthropicVertexRoute{}, false
	}
	model, method, ok := strings.Cut(parts[7], ":")
	if !ok || model == "" || (method != "streamRawPredict" && method != "rawPredict") {
		return AnthropicVertexRoute{}, false
	}
	return AnthropicVertexRoute{Project: parts[1], Region: parts[3], Model: model, Method: method}, true
}

func (s *Server) serveVertex(w http.ResponseWriter, r *http.Request, v AnthropicVertexRoute) {
	if v.Model == "count-tokens" {
		s.countTokens(w, r, "vertex")
		return
	}
	stream := v.Method == "streamRawPredict"
	s.serveMessages(w, r, messagesRoute{api: "vertex", model: v.Model, stream: &stream})
}
