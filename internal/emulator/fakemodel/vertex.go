package fakemodel

import "strings"

// Vertex AI serves the same GenerateContent API as the Gemini API under
// its own paths, which @google/genai builds when Gemini CLI runs with
// GOOGLE_GENAI_USE_VERTEXAI=true (its base URL from GOOGLE_VERTEX_BASE_URL,
// else https://LOCATION-aiplatform.googleapis.com):
//
//	/v1beta1/projects/PROJECT/locations/LOCATION/publishers/google/models/MODEL:METHOD
//	(GOOGLE_CLOUD_PROJECT and GOOGLE_CLOUD_LOCATION, Google credentials as
//	a bearer token)
//	/v1beta1/publishers/google/models/MODEL:METHOD
//	(express mode: GOOGLE_API_KEY in x-goog-api-key)
//
// and /v1/… for the API version v1. Requests, answers and errors have the
// Gemini API's shapes, so fakemodel answers them as "gemini".

// VertexRoute is what a Vertex AI path names: the project and location
// ("" in express mode), the model and the method.
type VertexRoute struct {
	Project, Location, Model, Method string
}

// ParseVertexPath reads a Vertex AI GenerateContent path; ok is false for
// any other path.
func ParseVertexPath(path string) (r VertexRoute, ok bool) {
	rest, found := strings.CutPrefix(path, "/v1beta1/")
	if !found {
		if rest, found = strings.CutPrefix(path, "/v1/"); !found {
			return VertexRoute{}, false
		}
	}
	seg := strings.Split(rest, "/")
	if len(seg) == 8 && seg[0] == "projects" && seg[2] == "locations" && seg[1] != "" && seg[3] != "" {
		r.Project, r.Location = seg[1], seg[3]
		seg = seg[4:]
	}
	if len(seg) != 4 || seg[0] != "publishers" || seg[1] != "google" || seg[2] != "models" {
		return VertexRoute{}, false
	}
	r.Model, r.Method, ok = strings.Cut(seg[3], ":")
	if !ok || r.Model == "" {
		return VertexRoute{}, false
	}
	switch r.Method {
	case "streamGenerateContent", "generateContent", "countTokens":
		return r, true
	}
	return VertexRoute{}, false
}
