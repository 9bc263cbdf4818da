package replaytest

import (
	"encoding"
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

var (
	marshalerT   = reflect.TypeFor[json.Marshaler]()
	unmarshalerT = reflect.TypeFor[json.Unmarshaler]()
	textT        = reflect.TypeFor[encoding.TextMarshaler]()
	timeT        = reflect.TypeFor[time.Time]()
)

// Carried fails t for every field reachable from T's type that JSON would
// not carry to a workflow's Decide: unexported fields, fields tagged
// json:"-", interfaces, funcs and channels, and maps whose keys are not
// text. A type with its own MarshalJSON and UnmarshalJSON is taken at its
// word. allow names the fields (Type.Field) a loop kind keeps out of JSON
// on purpose, each with its reason in the caller. It then fills every
// field with a value that is not zero and checks it comes back equal.
func Carried[T any](t testing.TB, allow ...string) {
	t.Helper()
	var problems []string
	walkType(reflect.TypeFor[T](), map[reflect.Type]bool{}, func(where string, why string) {
		if !slices.Contains(allow, where) {
			problems = append(problems, where+": "+why)
		}
	})
	for _, p := range problems {
		t.Errorf("%s does not survive JSON: %s", reflect.TypeFor[T](), p)
	}
	if len(problems) > 0 || hasFuncOrChan(reflect.TypeFor[T]()) {
		return
	}
	v := reflect.New(reflect.TypeFor[T]()).Elem()
	fill(v, 0, allow)
	RoundTrip(t, reflect.TypeFor[T]().String()+" filled", v.Interface().(T))
}

func custom(t reflect.Type) bool {
	return (t.Implements(marshalerT) || reflect.PointerTo(t).Implements(marshalerT)) &&
		reflect.PointerTo(t).Implements(unmarshalerT) || t == timeT
}

func walkType(t reflect.Type, seen map[reflect.Type]bool, bad func(where, why string)) {
	if seen[t] {
		return
	}
	seen[t] = true
	if custom(t) {
		return
	}
	switch t.Kind() {
	case reflect.Pointer, reflect.Slice, reflect.Array:
		walkType(t.Elem(), seen, bad)
	case reflect.Map:
		if k := t.Key(); k.Kind() != reflect.String && !k.Implements(textT) && !isInt(k) {
			bad(t.String(), "map key "+k.String()+" is not text")
		}
		walkType(t.Elem(), seen, bad)
	case reflect.Struct:
		for i := range t.NumField() {
			f := t.Field(i)
			where := t.Name() + "." + f.Name
			switch {
			case !f.IsExported() && !f.Anonymous:
				bad(where, "unexported")
				continue
			case strings.Split(f.Tag.Get("json"), ",")[0] == "-":
				bad(where, `tagged json:"-"`)
				continue
			}
			switch f.Type.Kind() {
			case reflect.Interface:
				if !custom(f.Type) {
					bad(where, "an interface")
				}
				continue
			case reflect.Func, reflect.Chan:
				bad(where, "a "+f.Type.Kind().String())
				continue
			}
			walkType(f.Type, seen, bad)
		}
	}
}

func isInt(k reflect.Type) bool {
	switch k.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64, reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return true
	}
	return false
}

// fill sets v to a value that is not zero, as deep as depth allows
// (recursive types stop there).
func fill(v reflect.Value, depth int, allow []string) {
	if depth > 6 || !v.CanSet() {
		return
	}
	t := v.Type()
	if t == timeT {
		v.Set(reflect.ValueOf(time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)))
		return
	}
	switch t.Kind() {
	case reflect.String:
		v.SetString("x")
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(7)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(7)
	case reflect.Float32, reflect.Float64:
		v.SetFloat(1.5)
	case reflect.Pointer:
		p := reflect.New(t.Elem())
		fill(p.Elem(), depth+1, allow)
		v.Set(p)
	case reflect.Slice:
		s := reflect.MakeSlice(t, 1, 1)
		fill(s.Index(0), depth+1, allow)
		v.Set(s)
	case reflect.Map:
		m := reflect.MakeMap(t)
		k := reflect.New(t.Key()).Elem()
		fill(k, depth+1, allow)
		e := reflect.New(t.Elem()).Elem()
		fill(e, depth+1, allow)
		m.SetMapIndex(k, e)
		v.Set(m)
	case reflect.Struct:
		for i := range t.NumField() {
			f := t.Field(i)
			if !f.IsExported() || strings.Split(f.Tag.Get("json"), ",")[0] == "-" {
				continue
			}
			switch f.Type.Kind() {
			case reflect.Interface, reflect.Func, reflect.Chan:
				continue
			}
			fill(v.Field(i), depth+1, allow)
		}
	}
}

// hasFuncOrChan reports a field JSON cannot marshal at all, allowed or
// not: the filled round trip would only fail on it again.
func hasFuncOrChan(t reflect.Type) bool {
	found := false
	walkType(t, map[reflect.Type]bool{}, func(_, why string) {
		if why == "a func" || why == "a chan" {
			found = true
		}
	})
	return found
}
