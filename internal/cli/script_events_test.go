package cli

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/rogpeppe/go-internal/testscript"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// The scenarios' converge checks its own --json output against the
// documented schema (UX-1): every NDJSON line any scenario makes converge
// print is validated against docs/events.schema.json. A line that fails
// is written to the file eventsInvalidEnv names and the scenario fails at
// its end, even one that expects converge to fail; each valid line's kind
// is appended to the file eventsValidEnv names, so a scenario can show
// its events were checked.
const (
	eventsSchemaEnv  = "CONVERGE_TEST_EVENTS_SCHEMA"
	eventsInvalidEnv = "CONVERGE_TEST_EVENTS_INVALID"
	eventsValidEnv   = "CONVERGE_TEST_EVENTS_VALID"
)

// checkEvents arms the check for one scenario: its Setup calls it.
func checkEvents(env *testscript.Env) {
	schema, err := filepath.Abs(filepath.Join("..", "..", EventsSchemaPath))
	if err != nil {
		env.T().Fatal(err)
	}
	invalid := filepath.Join(env.WorkDir, ".events-invalid")
	env.Setenv(eventsSchemaEnv, schema)
	env.Setenv(eventsInvalidEnv, invalid)
	env.Setenv(eventsValidEnv, filepath.Join(env.WorkDir, ".events-valid"))
	env.Defer(func() {
		if b, err := os.ReadFile(invalid); err == nil && len(b) > 0 {
			env.T().Fatal("converge printed --json lines that fail " + EventsSchemaPath + ":\n" + string(b))
		}
	})
}

// printsEvents reports whether a command line prints NDJSON events on
// stdout: a loop's --json, or status --follow --json.
func printsEvents(args []string) bool {
	if !slices.Contains(args, "--json") || slices.Contains(args, "--dispose-only") || len(args) == 0 {
		return false
	}
	switch args[0] {
	case "pr", "loop", "demo":
		return true
	case "plan":
		return len(args) > 1 && args[1] == "run"
	case "status":
		return slices.ContainsFunc(args, func(a string) bool { return a == "--follow" || strings.HasPrefix(a, "--follow=") })
	}
	return false
}

// convergeMain is the scenarios' converge: Main, its stdout checked
// line by line when it prints events.
func convergeMain() {
	schemaPath := os.Getenv(eventsSchemaEnv)
	if schemaPath == "" || !printsEvents(os.Args[1:]) {
		os.Exit(Main())
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	schema, err := c.Compile(schemaPath)
	if err != nil {
		fmt.Fprintf(os.Stderr, "converge (test): %s does not compile: %v\n", schemaPath, err)
		os.Exit(99)
	}
	r, w, err := os.Pipe()
	if err != nil {
		os.Exit(Main())
	}
	stdout := os.Stdout
	os.Stdout = w
	done := make(chan struct{})
	go func() {
		defer close(done)
		checkLines(r, stdout, schema, os.Getenv(eventsInvalidEnv), os.Getenv(eventsValidEnv))
	}()
	code := Main()
	w.Close()
	<-done
	os.Exit(code)
}

// checkLines copies in to out, validating each line as it goes.
func checkLines(in io.Reader, out io.Writer, schema *jsonschema.Schema, invalidPath, validPath string) {
	note := func(path, s string) {
		f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			return
		}
		defer f.Close()
		fmt.Fprintln(f, s)
	}
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 0, 1<<20), 64<<20)
	for sc.Scan() {
		line := sc.Bytes()
		out.Write(append(slices.Clone(line), '\n'))
		if err := validateEventLine(schema, line); err != nil {
			note(invalidPath, fmt.Sprintf("%s\n  %v", line, err))
			continue
		}
		var k struct{ Kind string }
		_ = json.Unmarshal(line, &k)
		note(validPath, k.Kind)
	}
}

// validateEventLine checks one stdout line against the schema.
func validateEventLine(schema *jsonschema.Schema, line []byte) error {
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(line))
	if err != nil {
		return fmt.Errorf("not one JSON value: %v", err)
	}
	return schema.Validate(inst)
}

// assertEvents fails t unless every line of out, the stdout of an
// in-process run with --json, is valid against docs/events.schema.json.
func assertEvents(t interface {
	Helper()
	Errorf(string, ...any)
	Fatal(...any)
}, out string) {
	t.Helper()
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	schema, err := c.Compile(filepath.Join("..", "..", EventsSchemaPath))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
		if err := validateEventLine(schema, []byte(line)); err != nil {
			t.Errorf("--json line fails %s: %s\n%v", EventsSchemaPath, line, err)
		}
	}
}
