package config_test

import (
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/convergeloop/converge/internal/config"
)

// uncomment makes the template's commented-out settings live: each
// "# key: value" line of a known key and each "#   - item" under one.
func uncomment(fs []config.Field, tpl string) string {
	keyRE := regexp.MustCompile(`^# ([a-z_]+):( |$)`)
	var out []string
	inList := false
	for _, l := range strings.Split(tpl, "\n") {
		if m := keyRE.FindStringSubmatch(l); m != nil {
			if _, ok := config.Lookup(fs, m[1]); ok {
				out = append(out, strings.TrimPrefix(l, "# "))
				inList = strings.HasSuffix(l, ":")
				continue
			}
		}
		if inList && strings.HasPrefix(l, "#   - ") {
			out = append(out, strings.TrimPrefix(l, "# "))
			continue
		}
		inList = false
	}
	return strings.Join(out, "\n") + "\n"
}

// TestPR_M4_InitTemplateHasEveryDefault: the file converge init writes
// sets nothing (a repository keeps later defaults), and names every key
// converge knows with its default exactly: uncommented, it reads back,
// strictly, as the defaults.
func TestPR_M4_InitTemplateHasEveryDefault(t *testing.T) {
	fs := config.PRFields()
	tpl := config.Template(fs)
	f, err := config.ParseFile(fs, ".converge.yaml", []byte(tpl))
	if err != nil {
		t.Fatalf("the template as written: %v", err)
	}
	if len(f.Values) != 0 {
		t.Fatalf("the template sets %v; want every key commented out", f.Values)
	}
	live := uncomment(fs, tpl)
	f, err = config.ParseFile(fs, ".converge.yaml", []byte(live))
	if err != nil {
		t.Fatalf("the template uncommented: %v\n%s", err, live)
	}
	for _, fd := range fs {
		v, ok := f.Values[fd.Key]
		if !ok {
			t.Errorf("%s: not in the template", fd.Key)
			continue
		}
		if v.Value != fd.Default {
			t.Errorf("%s: the template says %q, the default is %q", fd.Key, v.Value, fd.Default)
		}
		if !strings.Contains(tpl, strings.Join(strings.Fields(fd.Help)[:min(3, len(strings.Fields(fd.Help)))], " ")) {
			t.Errorf("%s: its help is not in the template", fd.Key)
		}
	}
	if len(f.Values) != len(fs) {
		t.Errorf("the template sets %d keys, converge knows %d", len(f.Values), len(fs))
	}
	for _, k := range config.HostKeys {
		if _, ok := config.Lookup(fs, k); !ok {
			t.Errorf("HostKeys names %s, which is no setting", k)
		}
	}
}

// TestPR_M4_InitTemplateFollowsTheTable: a default changed in the table
// (or a key added to it) changes the template: the file cannot drift
// from what converge reads.
func TestPR_M4_InitTemplateFollowsTheTable(t *testing.T) {
	fs := config.PRFields()
	base := config.Template(fs)
	changed := slices.Clone(fs)
	i := slices.IndexFunc(changed, func(f config.Field) bool { return f.Key == "max_iterations" })
	changed[i].Default = "7"
	if tpl := config.Template(changed); tpl == base || !strings.Contains(tpl, "\n# max_iterations: 7\n") {
		t.Fatalf("a changed default did not change the template:\n%s", tpl)
	}
	changed = append(slices.Clone(fs), config.Field{Key: "new_knob", Kind: config.List, Default: "a,b[bot]", Help: "a new knob"})
	tpl := config.Template(changed)
	f, err := config.ParseFile(changed, "x", []byte(uncomment(changed, tpl)))
	if err != nil {
		t.Fatal(err)
	}
	if got := f.Values["new_knob"].Value; got != "a,b[bot]" {
		t.Fatalf("a new key reads back as %q from:\n%s", got, tpl)
	}
}
