package config_test

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/convergeloop/converge/internal/config"
)

// FuzzREL_3_ConfigFile: a .converge.yaml that parses holds only known
// keys with normalized values (each reads back as itself by its field),
// written back as YAML it parses to the same values, and the typed
// readers take each; one that fails says which file.
func FuzzREL_3_ConfigFile(f *testing.F) {
	for _, s := range []string{
		"max_iterations: 5\nci_wait: 45m\npoll_min: 2s\ntrusted_bots:\n  - copilot\n  - \"renovate[bot]\"\n",
		"max_iterations: 3\nmax_rounds: 9\n", "review_wait: 20\n", "\n\nmax_iterations: 0\n", "expects_copilot: sometimes\n",
		"max_wall_clock: [1h]\n", "trusted_bots: {a: b}\n", "ci_wait:\n", "ci_wait: 1m\nci_wait: 2m\n", "- a\n- b\n",
		"review_angles: [correctness-leak, \"no spaces please\"]\n", "review_instructions: ../../etc/passwd\n", "sync_base: yes\n",
		"max_iterations: [\n", "trusted_bots: ' a , ,b '\nexpects_copilot: TRUE\nci_wait: 90s\n", "# only a comment\n", "---\n",
		"&a max_iterations: *a\n", "max_iterations: !!str 4\n", "trusted_bots: [\"x,y\"]\n",
	} {
		f.Add(s)
	}
	fields := config.PRFields()
	f.Fuzz(func(t *testing.T, data string) {
		file, err := config.ParseFile(fields, "repo/.converge.yaml", []byte(data))
		if err != nil {
			if !strings.HasPrefix(err.Error(), "repo/.converge.yaml") {
				t.Fatalf("error for %q does not name the file: %v", data, err)
			}
			return
		}
		var yaml strings.Builder
		for _, k := range slices.Sorted(maps.Keys(file.Values)) {
			fv := file.Values[k]
			field, ok := config.Lookup(fields, k)
			if !ok {
				t.Fatalf("%q: unknown key %q taken", data, k)
			}
			if again, err := field.Parse(fv.Value); err != nil || again != fv.Value {
				t.Fatalf("%q: %s = %q is not normalized: %q, %v", data, k, fv.Value, again, err)
			}
			q, _ := json.Marshal(fv.Value)
			fmt.Fprintf(&yaml, "%s: %s\n", k, q)
		}
		back, err := config.ParseFile(fields, "again.yaml", []byte(yaml.String()))
		if err != nil {
			t.Fatalf("%q parsed, but its values written back do not: %v\n%s", data, err, yaml.String())
		}
		if len(back.Values) != len(file.Values) {
			t.Fatalf("%q: %d values, %d read back", data, len(file.Values), len(back.Values))
		}
		for k, fv := range file.Values {
			if back.Values[k].Value != fv.Value {
				t.Fatalf("%q: %s = %q reads back as %q", data, k, fv.Value, back.Values[k].Value)
			}
		}
		ss, err := config.Resolve(fields, config.Inputs{File: file, Getenv: func(string) string { return "" }})
		if err != nil {
			t.Fatalf("%q parsed but does not resolve: %v", data, err)
		}
		v := config.ValuesOf(ss)
		for _, fd := range fields {
			switch fd.Kind {
			case config.Int:
				_ = v.Int(fd.Key)
			case config.Duration:
				_ = v.Duration(fd.Key)
			case config.List:
				for _, it := range v.List(fd.Key) {
					if it == "" || it != strings.TrimSpace(it) || strings.Contains(it, ",") {
						t.Fatalf("%q: %s holds item %q", data, fd.Key, it)
					}
				}
			}
		}
	})
}
