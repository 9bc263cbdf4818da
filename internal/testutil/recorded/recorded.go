// Package recorded loads the corpus of real forge answers kept under
// testdata/recorded (its README says the format; REL-4): what converge's
// clients and the emulators are held to.
package recorded

import (
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// Answer is one recorded answer of a forge.
type Answer struct {
	File     string          `json:"-"`
	Forge    string          `json:"forge"`
	Kind     string          `json:"kind"`
	Source   json.RawMessage `json:"source"`
	Recorded *string         `json:"recorded"`
	Request  struct {
		Method           string          `json:"method"`
		Path             string          `json:"path"`
		Query            string          `json:"query"`
		Body             json.RawMessage `json:"body"`
		GraphQLDocument  string          `json:"graphql_document"`
		GraphQLVariables map[string]any  `json:"graphql_variables"`
	} `json:"request"`
	Response struct {
		Status   int               `json:"status"`
		Headers  map[string]string `json:"headers"`
		Body     json.RawMessage   `json:"body"`
		BodyText *string           `json:"body_text"`
	} `json:"response"`
}

// Dir is the corpus's directory of forge ("github", "gitlab").
func Dir(forge string) string {
	_, here, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(here), "..", "..", "..", "testdata", "recorded", forge)
}

// Load reads every answer of forge's corpus by file name, failing t on a
// file that is not a well-formed recording.
func Load(t testing.TB, forge string) map[string]*Answer {
	t.Helper()
	dir := Dir(forge)
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatalf("read the corpus: %v", err)
	}
	out := map[string]*Answer{}
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".json") {
			t.Errorf("%s/%s: not a recording (the corpus holds .json files only)", forge, e.Name())
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		r := &Answer{File: e.Name()}
		if err := json.Unmarshal(b, r); err != nil {
			t.Errorf("%s: %v", e.Name(), err)
			continue
		}
		switch {
		case r.Forge != forge:
			t.Errorf("%s: forge %q, want %q", e.Name(), r.Forge, forge)
		case !slices.Contains([]string{"recorded traffic", "docs example", "reported answer"}, r.Kind):
			t.Errorf("%s: kind %q is not one of the README's", e.Name(), r.Kind)
		case len(r.Source) == 0 || string(r.Source) == "null":
			t.Errorf("%s: no source", e.Name())
		case r.Request.Method == "" || r.Request.Path == "":
			t.Errorf("%s: no request method or path", e.Name())
		case r.Response.Status < 100:
			t.Errorf("%s: no response status", e.Name())
		}
		out[e.Name()] = r
	}
	return out
}

// Header is the recorded response header named, any case.
func (a *Answer) Header(name string) string {
	for k, v := range a.Response.Headers {
		if strings.EqualFold(k, name) {
			return v
		}
	}
	return ""
}

// Decode is the recorded response body decoded.
func (a *Answer) Decode(t testing.TB) any {
	t.Helper()
	var v any
	if err := json.Unmarshal(a.Response.Body, &v); err != nil {
		t.Fatalf("%s: body: %v", a.File, err)
	}
	return v
}

// At walks a decoded body by keys and array indexes ("user.login",
// "0.id", "check_runs.0.app.id").
func At(t testing.TB, v any, dotted string) any {
	t.Helper()
	for _, k := range strings.Split(dotted, ".") {
		switch x := v.(type) {
		case map[string]any:
			v = x[k]
		case []any:
			i, err := strconv.Atoi(k)
			if err != nil || i >= len(x) {
				t.Fatalf("no element %q in %v", k, dotted)
			}
			v = x[i]
		default:
			t.Fatalf("%s: %q is not in the body", dotted, k)
		}
	}
	return v
}

// Str is At's non-empty string.
func Str(t testing.TB, v any, dotted string) string {
	t.Helper()
	s, ok := At(t, v, dotted).(string)
	if !ok || s == "" {
		t.Fatalf("%s: not a non-empty string in the recording", dotted)
	}
	return s
}

// Int is At's number.
func Int(t testing.TB, v any, dotted string) int64 {
	t.Helper()
	f, ok := At(t, v, dotted).(float64)
	if !ok {
		t.Fatalf("%s: not a number in the recording", dotted)
	}
	return int64(f)
}
