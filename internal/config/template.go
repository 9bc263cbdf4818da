package config

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// HostKeys are the settings converge pr takes from flags, the environment
// and --config only: one forge client serves every PR of a host, so a
// repository's own file does not change them.
var HostKeys = []string{"forge_timeout", "forge_backoff", "forge_concurrency"}

// Template is the .converge.yaml `converge init` writes: every field of
// fs, each with its help and its default, commented out. Written from the
// table itself, it names every key converge knows and each default as
// converge has it; a file that sets nothing keeps later defaults.
func Template(fs []Field) string {
	var b strings.Builder
	b.WriteString(`# converge settings (PR-M4), written by converge init.
#
# converge pr reads this file from the pull request's BASE branch (a pull
# request cannot change the rules it is driven by); flags (--max-iterations
# 5) and CONVERGE_* variables (CONVERGE_MAX_ITERATIONS=5) override it.
# Every key is listed below with its default, commented out: uncomment a
# line to change it. An unknown key or a bad value is an error naming this
# file and line. converge config prints the effective values.
`)
	for _, f := range fs {
		b.WriteString("\n")
		help := f.Help
		if slices.Contains(HostKeys, f.Key) {
			help += ". Read from flags, CONVERGE_* and --config only: converge pr ignores it in a repository's own file"
		}
		help = strings.TrimSuffix(help, ".") + " (" + kindNote(f) + ")."
		for _, l := range wrap(help, 74) {
			b.WriteString("# " + l + "\n")
		}
		b.WriteString(commentedValue(f))
	}
	return b.String()
}

// kindNote says what a value of f must be.
func kindNote(f Field) string {
	note := "a " + f.Kind.String()
	if f.Kind == Int {
		note = "an integer"
	}
	if f.Min == 0 && f.Kind != Duration {
		if f.Kind == Int || f.Kind == Float {
			note += ", at least 0"
		}
		return note
	}
	switch f.Kind {
	case Int, Float:
		note += ", at least " + strconv.FormatFloat(f.Min, 'g', -1, 64)
	case Duration:
		note += " such as 90s, 20m or 4h"
		if f.Min > 0 {
			note += ", at least " + time.Duration(f.Min*float64(time.Second)).String()
		}
	}
	return note
}

// commentedValue is f's key and default as YAML, each line commented out.
func commentedValue(f Field) string {
	if f.Kind == List {
		items := strings.Split(f.Default, ",")
		if f.Default == "" {
			return "# " + f.Key + ": []\n"
		}
		s := "# " + f.Key + ":\n"
		for _, it := range items {
			s += "#   - " + yamlScalar(it) + "\n"
		}
		return s
	}
	v := f.Default
	if f.Kind == String {
		v = yamlScalar(v)
	}
	return fmt.Sprintf("# %s: %s\n", f.Key, v)
}

// yamlScalar is s as a YAML scalar that reads back as the string s,
// quoted where a plain one would not.
func yamlScalar(s string) string {
	out, err := yaml.Marshal(s)
	if err != nil {
		return strconv.Quote(s)
	}
	return strings.TrimSuffix(string(out), "\n")
}

// wrap breaks s into lines of at most width characters at spaces.
func wrap(s string, width int) []string {
	var lines []string
	line := ""
	for _, w := range strings.Fields(s) {
		if line != "" && len(line)+1+len(w) > width {
			lines = append(lines, line)
			line = ""
		}
		if line != "" {
			line += " "
		}
		line += w
	}
	if line != "" {
		lines = append(lines, line)
	}
	return lines
}
