package agent

import (
	"fmt"
	"reflect"
	"strings"
)

// ExactKeys checks a JSON document, as parsed by the schema library
// (objects as map[string]any, arrays as []any), against the Go value v it
// is about to be decoded into: no object key may name one of v's fields
// in other letter case. encoding/json matches keys ignoring case, so
// without this a line whose "status" the schema checked as "blocked" could
// decode as the "STATUS": "complete" beside it — the schema and the
// decoder would read two different answers from one line (fail-closed:
// such a line is refused). Keys that name no field in any case are left
// alone: the contracts allow extra detail.
func ExactKeys(doc any, v any) error {
	return exactKeys(doc, reflect.TypeOf(v), "")
}

func exactKeys(doc any, t reflect.Type, at string) error {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil {
		return nil
	}
	switch d := doc.(type) {
	case map[string]any:
		if t.Kind() != reflect.Struct {
			return nil
		}
		fields := jsonFields(t)
		for k, val := range d {
			if ft, ok := fields[k]; ok {
				if err := exactKeys(val, ft, at+"/"+k); err != nil {
					return err
				}
				continue
			}
			for name := range fields {
				if strings.EqualFold(name, k) {
					return fmt.Errorf("key %q at %q is %q in other letter case", k, at+"/", name)
				}
			}
		}
	case []any:
		if t.Kind() != reflect.Slice && t.Kind() != reflect.Array {
			return nil
		}
		for i, val := range d {
			if err := exactKeys(val, t.Elem(), fmt.Sprintf("%s/%d", at, i)); err != nil {
				return err
			}
		}
	}
	return nil
}

// jsonFields maps the JSON names of t's fields (as encoding/json names
// them, embedded structs flattened) to their types.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" {
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				for k, v := range jsonFields(ft) {
					out[k] = v
				}
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		out[name] = f.Type
	}
	return out
}
