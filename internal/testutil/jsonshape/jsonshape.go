// Package jsonshape compares the shape of two JSON values: a forge's
// recorded answer and an emulator's answer to the same request (REL-4).
package jsonshape

import (
	"fmt"
	"sort"
)

// Diff reports where got's shape differs from want's, by path ($.a.b[]):
// a field want has that got lacks, or a value of another JSON type (null
// goes with any type, as the forges' nullable fields do). Arrays compare
// their first elements; fields got has beyond want's are no difference.
func Diff(want, got any) map[string]string {
	diffs := map[string]string{}
	diff("$", want, got, diffs)
	return diffs
}

func diff(path string, want, got any, diffs map[string]string) {
	if want == nil || got == nil {
		return
	}
	if Kind(want) != Kind(got) {
		diffs[path] = fmt.Sprintf("%s in the forge's answer, %s in the emulator's", Kind(want), Kind(got))
		return
	}
	switch w := want.(type) {
	case map[string]any:
		g := got.(map[string]any)
		for k, wv := range w {
			gv, ok := g[k]
			if !ok {
				diffs[path+"."+k] = "absent from the emulator's answer"
				continue
			}
			diff(path+"."+k, wv, gv, diffs)
		}
	case []any:
		g := got.([]any)
		if len(w) > 0 && len(g) > 0 {
			diff(path+"[]", w[0], g[0], diffs)
		}
	}
}

// Kind is v's JSON type, as encoding/json decodes into any.
func Kind(v any) string {
	switch v.(type) {
	case map[string]any:
		return "object"
	case []any:
		return "array"
	case string:
		return "string"
	case float64:
		return "number"
	case bool:
		return "boolean"
	}
	return "null"
}

// Unexplained holds diffs to the differences known to be left (path →
// why it cannot matter): those not listed ("path: what differs"), and
// those listed that no longer occur, each sorted.
func Unexplained(diffs, known map[string]string) (unlisted, gone []string) {
	for p, d := range diffs {
		if _, ok := known[p]; !ok {
			unlisted = append(unlisted, p+": "+d)
		}
	}
	for p := range known {
		if _, ok := diffs[p]; !ok {
			gone = append(gone, p)
		}
	}
	sort.Strings(unlisted)
	sort.Strings(gone)
	return unlisted, gone
}
