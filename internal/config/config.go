// Package config is PR-M4: every tunable of the PR loop in one table, with
// its default, its key in `.converge.yaml`, its environment variable and
// its flag; a strict reader for the file (an unknown key or a bad value is
// an error naming the file and line); and the resolution of one effective
// value per key, remembering where it came from: a flag beats the
// environment, which beats the file, which beats the default.
package config

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// FileName is the config file converge reads from a repository's root.
const FileName = ".converge.yaml"

// Kind is a value's type; it decides how a value is parsed and checked.
type Kind int

// The kinds of values.
const (
	Int Kind = iota
	Float
	Duration
	Bool
	String
	List // comma-separated in flags and the environment, a sequence in YAML
)

func (k Kind) String() string {
	return [...]string{"integer", "number", "duration", "boolean", "string", "list"}[k]
}

// Field is one tunable.
type Field struct {
	Key     string // in .converge.yaml; the flag is --key-with-dashes
	Kind    Kind
	Default string
	Help    string
	// Min, for Int, Float and Duration, is the smallest value allowed.
	Min float64
	// Check, when set, refuses values the kind allows but converge does not.
	Check func(v string) error
	// Repeatable, for a List, makes its flag add to the list each time it
	// is given (--agent-env A --agent-env B) instead of replacing it.
	Repeatable bool
}

// Flag is the field's command-line flag.
func (f Field) Flag() string { return strings.ReplaceAll(f.Key, "_", "-") }

// Env is the field's environment variable.
func (f Field) Env() string { return "CONVERGE_" + strings.ToUpper(f.Key) }

// Lookup finds a field of fs by key.
func Lookup(fs []Field, key string) (Field, bool) {
	i := slices.IndexFunc(fs, func(f Field) bool { return f.Key == key })
	if i < 0 {
		return Field{}, false
	}
	return fs[i], true
}

// Parse checks v as a value of f and returns it normalized (durations as
// Go prints them, lists without blanks), or an error saying what is wrong.
func (f Field) Parse(v string) (string, error) {
	v = strings.TrimSpace(v)
	switch f.Kind {
	case Int:
		n, err := strconv.Atoi(v)
		if err != nil {
			return "", fmt.Errorf("%q is not an integer", v)
		}
		if float64(n) < f.Min {
			return "", fmt.Errorf("%d is below the minimum %v", n, f.Min)
		}
		v = strconv.Itoa(n)
	case Float:
		x, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return "", fmt.Errorf("%q is not a number", v)
		}
		if x < f.Min {
			return "", fmt.Errorf("%v is below the minimum %v", x, f.Min)
		}
		v = strconv.FormatFloat(x, 'g', -1, 64)
	case Duration:
		d, err := time.ParseDuration(v)
		if err != nil {
			return "", fmt.Errorf("%q is not a duration (e.g. 90s, 20m, 4h)", v)
		}
		if d.Seconds() < f.Min {
			return "", fmt.Errorf("%s is below the minimum %s", d, time.Duration(f.Min*float64(time.Second)))
		}
		v = d.String()
	case Bool:
		b, err := strconv.ParseBool(v)
		if err != nil {
			return "", fmt.Errorf("%q is not true or false", v)
		}
		v = strconv.FormatBool(b)
	case List:
		var items []string
		for _, it := range strings.Split(v, ",") {
			if it = strings.TrimSpace(it); it != "" {
				items = append(items, it)
			}
		}
		v = strings.Join(items, ",")
	}
	if f.Check != nil {
		if err := f.Check(v); err != nil {
			return "", err
		}
	}
	return v, nil
}

// Source says where an effective value came from.
type Source string

// Sources, weakest first.
const (
	FromDefault Source = "default"
	FromFile    Source = "file"
	FromEnv     Source = "env"
	FromFlag    Source = "flag"
)

// Setting is one effective value and where it came from.
type Setting struct {
	Key    string `json:"key"`
	Value  string `json:"value"`
	Source Source `json:"source"`
	// Where names the file and line, the variable or the flag.
	Where string `json:"where,omitempty"`
}

// FileValue is a value read from a config file, with its line.
type FileValue struct {
	Value string
	Line  int
}

// File is a parsed config file.
type File struct {
	Name   string
	Values map[string]FileValue
}

// ParseFile reads a config file strictly: the top level must be a mapping
// of known keys to values of their kind. Every problem is an error that
// names the file and the line, and says how to fix it.
func ParseFile(fs []Field, name string, data []byte) (*File, error) {
	f := &File{Name: name, Values: map[string]FileValue{}}
	if len(bytes.TrimSpace(data)) == 0 {
		return f, nil
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("%s: %s", name, strings.TrimPrefix(err.Error(), "yaml: "))
	}
	if len(doc.Content) == 0 {
		return f, nil
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("%s:%d: the file must be a mapping of settings (key: value)", name, root.Line)
	}
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		field, ok := Lookup(fs, k.Value)
		if !ok {
			return nil, fmt.Errorf("%s:%d: unknown key %q; known keys: %s (converge config lists them)", name, k.Line, k.Value, keys(fs))
		}
		if _, dup := f.Values[k.Value]; dup {
			return nil, fmt.Errorf("%s:%d: %s is set twice", name, k.Line, k.Value)
		}
		raw, err := scalar(field, v)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %s: %v", name, v.Line, k.Value, err)
		}
		val, err := field.Parse(raw)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %s: %v", name, v.Line, k.Value, err)
		}
		f.Values[k.Value] = FileValue{Value: val, Line: k.Line}
	}
	return f, nil
}

// scalar is a node's value as text; a list may be a YAML sequence.
func scalar(f Field, n *yaml.Node) (string, error) {
	switch n.Kind {
	case yaml.ScalarNode:
		if n.Tag == "!!null" {
			return "", fmt.Errorf("a %s is needed, the value is empty", f.Kind)
		}
		return n.Value, nil
	case yaml.SequenceNode:
		if f.Kind != List {
			return "", fmt.Errorf("a %s is needed, not a list", f.Kind)
		}
		var items []string
		for _, it := range n.Content {
			if it.Kind != yaml.ScalarNode {
				return "", errors.New("list items must be plain values")
			}
			if strings.Contains(it.Value, ",") {
				return "", fmt.Errorf("list item %q holds a comma", it.Value)
			}
			items = append(items, it.Value)
		}
		return strings.Join(items, ","), nil
	}
	return "", fmt.Errorf("a %s is needed, not a mapping", f.Kind)
}

func keys(fs []Field) string {
	var ks []string
	for _, f := range fs {
		ks = append(ks, f.Key)
	}
	return strings.Join(ks, ", ")
}

// ReadFile parses the config file at path; a missing file is no file.
func ReadFile(fs []Field, path string) (*File, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read config: %w", err)
	}
	return ParseFile(fs, path, data)
}

// Inputs are the layers above the defaults.
type Inputs struct {
	File *File // nil: no file
	// Getenv reads the environment.
	Getenv func(string) string
	// Flags are the values of flags given on the command line, by key.
	Flags map[string]string
}

// Resolve picks each field's effective value: the flag, else the
// environment, else the file, else the default. An environment or flag
// value of the wrong kind is an error naming the variable or flag.
func Resolve(fs []Field, in Inputs) ([]Setting, error) {
	out := make([]Setting, 0, len(fs))
	for _, f := range fs {
		s := Setting{Key: f.Key, Value: f.Default, Source: FromDefault}
		if in.File != nil {
			if v, ok := in.File.Values[f.Key]; ok {
				s = Setting{Key: f.Key, Value: v.Value, Source: FromFile, Where: fmt.Sprintf("%s:%d", in.File.Name, v.Line)}
			}
		}
		if in.Getenv != nil {
			if raw := in.Getenv(f.Env()); raw != "" {
				v, err := f.Parse(raw)
				if err != nil {
					return nil, fmt.Errorf("%s: %v", f.Env(), err)
				}
				s = Setting{Key: f.Key, Value: v, Source: FromEnv, Where: f.Env()}
			}
		}
		if raw, ok := in.Flags[f.Key]; ok {
			v, err := f.Parse(raw)
			if err != nil {
				return nil, fmt.Errorf("--%s: %v", f.Flag(), err)
			}
			s = Setting{Key: f.Key, Value: v, Source: FromFlag, Where: "--" + f.Flag()}
		}
		out = append(out, s)
	}
	return out, nil
}

// Values reads typed values out of resolved settings.
type Values map[string]string

// ValuesOf indexes settings by key.
func ValuesOf(ss []Setting) Values {
	v := Values{}
	for _, s := range ss {
		v[s.Key] = s.Value
	}
	return v
}

// Int is key's value as an int; the value was checked when resolved.
func (v Values) Int(key string) int { n, _ := strconv.Atoi(v.must(key)); return n }

// Float is key's value as a float64.
func (v Values) Float(key string) float64 { x, _ := strconv.ParseFloat(v.must(key), 64); return x }

// Duration is key's value as a time.Duration.
func (v Values) Duration(key string) time.Duration { d, _ := time.ParseDuration(v.must(key)); return d }

// Bool is key's value as a bool.
func (v Values) Bool(key string) bool { b, _ := strconv.ParseBool(v.must(key)); return b }

// String is key's value.
func (v Values) String(key string) string { return v.must(key) }

// List is key's value as a list.
func (v Values) List(key string) []string {
	s := v.must(key)
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}

func (v Values) must(key string) string {
	s, ok := v[key]
	if !ok {
		panic("config: no setting " + key) // a programming error: the table names every key
	}
	return s
}
