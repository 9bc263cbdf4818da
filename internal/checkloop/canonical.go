package checkloop

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
)

// CodeNoncanonical is the refusal code of a record that is not canonical
// JSON (LOOP-4).
const CodeNoncanonical = "input-json-noncanonical"

// NoncanonicalError is a record refused at the door (LOOP-4): it is not
// JSON, has a duplicate key, or does not round-trip byte for byte through
// the canonical form.
type NoncanonicalError struct{ Reason string }

func (e *NoncanonicalError) Error() string { return CodeNoncanonical + ": " + e.Reason }

// Code is the refusal's machine-readable code.
func (e *NoncanonicalError) Code() string { return CodeNoncanonical }

// Canonical JSON, as records passed to a child must be (LOOP-4):
//
//   - object keys sorted by their UTF-8 bytes, each key once;
//   - no whitespace outside strings;
//   - strings as encoding/json writes them without HTML escaping: `"` and
//     `\` escaped, control characters as \n, \r, \t or \u00XX, U+2028 and
//     U+2029 as \u2028 and \u2029, everything else literal UTF-8;
//   - integers in plain decimal (no sign on zero, no exponent); other
//     numbers as encoding/json writes a float64;
//   - true, false, null.
//
// Canonicalize parses any JSON text and writes that form; a record is
// canonical when it is byte for byte its own canonical form.

// Canonicalize returns b's canonical form. It fails on text that is not
// one JSON value, and on an object with a duplicate key: such a record
// has no single meaning.
func Canonicalize(b []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	v, err := parseValue(dec)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("data after the JSON value")
	}
	var out bytes.Buffer
	if err := writeValue(&out, v); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

// CheckCanonical refuses (a *NoncanonicalError) a record that is not
// canonical JSON.
func CheckCanonical(b []byte) error {
	c, err := Canonicalize(b)
	if err != nil {
		return &NoncanonicalError{Reason: err.Error()}
	}
	if !bytes.Equal(c, b) {
		return &NoncanonicalError{Reason: fmt.Sprintf("does not round-trip byte for byte (differs at byte %d)", firstDiff(b, c))}
	}
	return nil
}

// DecodeRecord is the door of a child (LOOP-4): it refuses a record that
// is not canonical, then decodes it into v.
func DecodeRecord(b []byte, v any) error {
	if err := CheckCanonical(b); err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

// MarshalCanonical encodes v as canonical JSON.
func MarshalCanonical(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return Canonicalize(buf.Bytes())
}

func firstDiff(a, b []byte) int {
	n := min(len(a), len(b))
	for i := 0; i < n; i++ {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}

// member is one key of a parsed object, in input order.
type member struct {
	key string
	val any
}

// parseValue reads one value: string, json.Number, bool, nil, []any or
// []member.
func parseValue(dec *json.Decoder) (any, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, fmt.Errorf("not JSON: %v", err)
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			var ms []member
			seen := map[string]bool{}
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, fmt.Errorf("not JSON: %v", err)
				}
				k, ok := kt.(string)
				if !ok {
					return nil, errors.New("not JSON: object key is not a string")
				}
				if seen[k] {
					return nil, fmt.Errorf("duplicate key %q", k)
				}
				seen[k] = true
				v, err := parseValue(dec)
				if err != nil {
					return nil, err
				}
				ms = append(ms, member{k, v})
			}
			if _, err := dec.Token(); err != nil {
				return nil, fmt.Errorf("not JSON: %v", err)
			}
			if ms == nil {
				ms = []member{}
			}
			return ms, nil
		case '[':
			arr := []any{}
			for dec.More() {
				v, err := parseValue(dec)
				if err != nil {
					return nil, err
				}
				arr = append(arr, v)
			}
			if _, err := dec.Token(); err != nil {
				return nil, fmt.Errorf("not JSON: %v", err)
			}
			return arr, nil
		}
		return nil, fmt.Errorf("not JSON: unexpected %v", t)
	default:
		return tok, nil
	}
}

func writeValue(w *bytes.Buffer, v any) error {
	switch t := v.(type) {
	case nil:
		w.WriteString("null")
	case bool:
		w.WriteString(strconv.FormatBool(t))
	case string:
		writeString(w, t)
	case json.Number:
		s, err := canonicalNumber(string(t))
		if err != nil {
			return err
		}
		w.WriteString(s)
	case []any:
		w.WriteByte('[')
		for i, x := range t {
			if i > 0 {
				w.WriteByte(',')
			}
			if err := writeValue(w, x); err != nil {
				return err
			}
		}
		w.WriteByte(']')
	case []member:
		ms := append([]member(nil), t...)
		sort.Slice(ms, func(i, j int) bool { return ms[i].key < ms[j].key })
		w.WriteByte('{')
		for i, m := range ms {
			if i > 0 {
				w.WriteByte(',')
			}
			writeString(w, m.key)
			w.WriteByte(':')
			if err := writeValue(w, m.val); err != nil {
				return err
			}
		}
		w.WriteByte('}')
	default:
		return fmt.Errorf("unexpected %T", v)
	}
	return nil
}

func writeString(w *bytes.Buffer, s string) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	w.Write(bytes.TrimSuffix(buf.Bytes(), []byte("\n")))
}

func canonicalNumber(s string) (string, error) {
	if !strings.ContainsAny(s, ".eE") {
		if i, err := strconv.ParseInt(s, 10, 64); err == nil {
			return strconv.FormatInt(i, 10), nil
		}
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return "", fmt.Errorf("number %s out of range", s)
	}
	if f == float64(int64(f)) && f >= -1<<53 && f <= 1<<53 {
		return strconv.FormatInt(int64(f), 10), nil
	}
	b, err := json.Marshal(f)
	if err != nil {
		return "", fmt.Errorf("number %s: %v", s, err)
	}
	return string(b), nil
}
