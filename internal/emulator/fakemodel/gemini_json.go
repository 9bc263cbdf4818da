package fakemodel

import (
	"encoding/json"
	"slices"
	"strings"
)

// Gemini CLI's side requests that ask for JSON (its BaseLlmClient.
// generateJson: the model router's classifier, the next-speaker check,
// the edit corrector, …) set generationConfig.responseMimeType to
// application/json and give the answer's shape as responseJsonSchema (or
// responseSchema): an OpenAPI-style schema whose types are upper case
// ("OBJECT", "STRING", "INTEGER") or JSON Schema's lower case. The real
// API answers with a text part holding JSON of that shape; a plain "OK"
// makes the CLI retry the request with back-off (about 100 s for the
// router) and then fall back.
//
// The router's two classifiers (packages/core/src/routing/strategies):
// ClassifierStrategy asks for {reasoning, model_choice: "flash"|"pro"},
// NumericalClassifierStrategy for {complexity_reasoning,
// complexity_score: 1..100}, a score under its threshold choosing Flash.
// fakemodel routes every task to Flash: a test sees the routed model in
// the main request's path.

// RoutedScore and RoutedChoice are fakemodel's answers to Gemini CLI's
// model router: a low complexity score and the "flash" choice.
const (
	RoutedScore  = 10
	RoutedChoice = "flash"
)

// geminiJSONRequest is the part of a request that asks for JSON.
type geminiJSONRequest struct {
	GenerationConfig struct {
		ResponseMimeType   string          `json:"responseMimeType"`
		ResponseJSONSchema json.RawMessage `json:"responseJsonSchema"`
		ResponseSchema     json.RawMessage `json:"responseSchema"`
	} `json:"generationConfig"`
}

// geminiJSONAnswer is the text answering a side request that asks for
// JSON: a value of the request's schema (see schemaValue); ok is false
// when the request does not ask for JSON.
func geminiJSONAnswer(body []byte) (text string, ok bool) {
	var req geminiJSONRequest
	if json.Unmarshal(body, &req) != nil || req.GenerationConfig.ResponseMimeType != "application/json" {
		return "", false
	}
	raw := req.GenerationConfig.ResponseJSONSchema
	if len(raw) == 0 || string(raw) == "null" {
		raw = req.GenerationConfig.ResponseSchema
	}
	var schema map[string]any
	if len(raw) > 0 {
		_ = json.Unmarshal(raw, &schema)
	}
	b, err := json.Marshal(schemaValue("", schema))
	if err != nil {
		return "", false
	}
	return string(b), true
}

// schemaValue is a value schema admits, for the property name: an
// object with every property, an enum's first value (the router's
// "flash"), a number at the schema's minimum (RoutedScore for the
// router's complexity_score), an empty array, a short string.
func schemaValue(name string, schema map[string]any) any {
	if enum, ok := schema["enum"].([]any); ok && len(enum) > 0 {
		if name == "model_choice" && slices.Contains(enum, any(RoutedChoice)) {
			return RoutedChoice
		}
		return enum[0]
	}
	typ, _ := schema["type"].(string)
	switch strings.ToLower(typ) {
	case "object", "":
		props, _ := schema["properties"].(map[string]any)
		if typ == "" && props == nil {
			return "fakemodel"
		}
		out := map[string]any{}
		for k, v := range props {
			sub, _ := v.(map[string]any)
			out[k] = schemaValue(k, sub)
		}
		return out
	case "array":
		return []any{}
	case "integer", "number":
		if name == "complexity_score" {
			return RoutedScore
		}
		if m, ok := schema["minimum"].(float64); ok {
			return m
		}
		return 1
	case "boolean":
		return false
	}
	return "fakemodel: " + name
}
