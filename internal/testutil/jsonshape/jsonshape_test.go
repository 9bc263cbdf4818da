package jsonshape

import (
	"encoding/json"
	"maps"
	"slices"
	"testing"
)

func TestREL_4_ShapeDiff(t *testing.T) {
	var want, got any
	_ = json.Unmarshal([]byte(`{"a":1,"b":{"c":"x","d":null},"e":[{"f":true}],"g":"s","h":null}`), &want)
	_ = json.Unmarshal([]byte(`{"a":"1","b":{"c":"y"},"e":[{}],"g":null,"h":3,"extra":1}`), &got)
	d := Diff(want, got)
	if keys := slices.Sorted(maps.Keys(d)); !slices.Equal(keys, []string{"$.a", "$.b.d", "$.e[].f"}) {
		t.Fatalf("differences at %v: want $.a (a type), $.b.d (absent), $.e[].f (absent in an element); null goes with any type", keys)
	}
}
