package classify

import (
	"slices"
	"strings"
	"testing"
)

// Synthetic comments, none from the data set: each pins one rule.

func goComment(hunkLast, body string) Comment {
	return Comment{ID: "x", Source: SourceCopilot, Path: "internal/x/x.go", Line: 10,
		DiffHunk: "@@ -8,3 +8,4 @@ func f() {\n \tctx := context.Background()\n+" + hunkLast, Body: body}
}

func suggest(s string) string { return "\n\n```suggestion\n" + s + "\n```" }

func hasRule(r Result, rule string) bool { return slices.Contains(r.Rules(), rule) }

// TestPR_S5_SecurityIsNeverMinor: a security point is structural however
// cosmetic its phrasing or its suggestion looks (mutant: "the classifier
// calling a security comment minor").
func TestPR_S5_SecurityIsNeverMinor(t *testing.T) {
	for _, c := range []Comment{
		goComment(`log.Printf("auth header %s", h)`, "[nitpick] Inconsistent naming in this log line, and it prints the API token in clear text."),
		goComment(`// TODO`, "nit: typo — also this file is written world-readable (0644) and holds the credentials."+suggest("// TODO: fix")),
		goComment(`q := "SELECT * FROM t WHERE name = '" + name + "'"`, "nit: formatting; SQL injection here though."),
		{ID: "y", Source: SourceHuman, Path: "web/a.ts", Line: 3, DiffHunk: "@@ -1 +1,3 @@\n+el.innerHTML = body;", Body: "nit: prefer textContent, innerHTML allows XSS."},
	} {
		if r := Heuristic(c); r.Verdict != Structural || !hasRule(r, "security") {
			t.Errorf("%q: %s", c.Body, r)
		}
	}
	// On a docs page a security word rules minor out but cannot decide
	// (it usually describes the text); the judge decides.
	docs := Comment{ID: "d", Path: "SECURITY.md", Line: 2, DiffHunk: "@@ -1 +1,2 @@\n+Mail sec@x.example.", Body: "nit: typo in the security address."}
	if r := Heuristic(docs); r.Verdict != Borderline {
		t.Errorf("docs security: %s", r)
	}
}

// TestPR_S5_NitPhrasingDoesNotMakeMinor: "nit"/"consider" phrasing in
// front of a behavioural request never yields minor.
func TestPR_S5_NitPhrasingDoesNotMakeMinor(t *testing.T) {
	for body, want := range map[string]Verdict{
		"nit: this should be `<-ctx.Done()`":                                         Borderline, // code in prose
		"nit: `i < n` should be `i <= n`":                                            Borderline, // code replacement
		"nit: the file is never closed":                                              Structural, // defect
		"nit: please add a test for the empty case":                                  Structural, // tests
		"Consider wrapping the error with %w so callers can use errors.Is":           Structural, // api (callers)
		"nit: rename `Run` to `Start`":                                               Borderline, // exported Go name
		"nit: otherwise the loop keeps going one round too long":                     Borderline, // consequence
		"+1 to the Copilot comment above":                                            Borderline, // refers elsewhere
		"nit: is this right?":                                                        Borderline, // question
		"nit: handle the error":                                                      Borderline, // behaviour words
		"Consider renaming this":                                                     Minor,
		"nit: typo in the comment":                                                   Minor,
		"The doc comment says it returns nil, but it returns an empty map":           Borderline, // which side moves?
		"The doc comment says it returns nil, but it returns {}; update the comment": Minor,
	} {
		if r := Heuristic(goComment("x := f()", body)); r.Verdict != want {
			t.Errorf("%q: %s, want %s", body, r, want)
		}
	}
}

// TestPR_S5_Suggestions: what a ```suggestion block changes decides.
func TestPR_S5_Suggestions(t *testing.T) {
	for _, c := range []struct {
		path, last, sugg, prose string
		want                    Verdict
		rule                    string
	}{
		{"a.go", "\t// retrun the value", "\t// return the value", "typo", Minor, "suggestion-layout"},
		{"a.go", "\tx := f( a,b )", "\tx := f(a, b)", "", Minor, "suggestion-layout"},
		{"a.go", "func F() {", "// F does it.\nfunc F() {", "", Minor, "suggestion-layout"},
		{"a.ts", "   * @param o opts", "   * @param opts options", "", Minor, "suggestion-layout"},
		{"a.py", `    """returns x"""`, `    """Return x."""`, "docstring", Minor, "suggestion-layout"},
		{"a.go", `	return errors.New("Bad input.")`, `	return errors.New("bad input")`, "", Minor, "suggestion-message"},
		{"a.py", `    raise ValueError("bad valeu")`, `    raise ValueError("bad value")`, "", Minor, "suggestion-message"},
		{"a.go", `	return fmt.Errorf("read: %v", err)`, `	return fmt.Errorf("read: %w", err)`, "nit", Structural, "suggestion-format"},
		{"a.go", "\tID string `json:\"Id\"`", "\tID string `json:\"id\"`", "nit: style", Structural, "suggestion-struct-tag"},
		{"a.go", `	key := "user_id"`, `	key := "userId"`, "nit", Borderline, "suggestion-string"},
		{"a.go", `	s := fmt.Sprintf("x-%s", id)`, `	s := fmt.Sprintf("y-%s", id)`, "", Borderline, "suggestion-string"},
		{"a.go", "\tcfgg := load()", "\tcfg := load()", "", Minor, "suggestion-rename"},
		{"a.go", "\tcfgg, err := load()", "\tcfg, err := load()", "", Minor, "suggestion-rename"},
		{"a.go", "\tif err := validate(x); err != nil {", "\tif err := validateAll(x); err != nil {", "nit", Borderline, "suggestion-code"},
		// Another call in program source may be an equivalent
		// rewrite: only an operator or a number changed in place
		// decides (and any code change in a build file).
		{"a.go", "\tif err := validate(x); err != nil {", "\tif err := validateAll(x); err != nil {", "", Borderline, "suggestion-code"},
		{"a.py", `    with open(p, encoding="utf8") as f:`, `    with open(p, 'r', encoding="utf8") as f:`, "", Borderline, "suggestion-code"},
		{"a.go", "\ttimeout := 30", "\ttimeout := 60", "", Structural, "suggestion-code"},
		{"Dockerfile", "RUN apt-get install -y git", "RUN apt-get install -y --no-install-recommends git", "", Structural, "suggestion-code"},
		{"a.go", "\tt.Log(err)", "\tt.Fatal(err)", "nit", Structural, "suggestion-rename-exported"},
		{"a.go", `	fmt.Fprintf(os.Stderr, "cant open %s\n", p)`, `	fmt.Fprintf(os.Stderr, "cannot open %s\n", p)`, "", Minor, "suggestion-message"},
		{"a.go", `	fmt.Fprintf(w, "status: ok\n")`, `	fmt.Fprintf(w, "status: OK\n")`, "nit", Borderline, "suggestion-string"},
		{"a.go", "//go:build linux", "//go:build linux && amd64", "nit", Borderline, "suggestion-directive"},
		{"a.py", "x = f()  # noqa: E501", "x = f()", "nit", Borderline, "suggestion-directive"},
		{"a.go", "\tfunc (s *S) Recieve() {", "\tfunc (s *S) Receive() {", "typo", Structural, "suggestion-rename-exported"},
		{"a.ts", "  const tmp = load();", "  const data = load();", "", Borderline, "suggestion-rename"},
		{"a.go", "\tif n > max {", "\tif n >= max {", "", Structural, "suggestion-code"},
		{"a.go", "\tif n > max {", "\tif n >= max {", "nit", Borderline, "suggestion-code"},
		{"a.yml", "      interval: weekly", "    interval: weekly", "nit: indentation", Borderline, "suggestion-indentation"},
		{"a.py", "        return x", "    return x", "nit: indentation", Borderline, "suggestion-indentation"},
		{"a.go", "\tx := 1", "\tx := 1", "", Borderline, "suggestion-same"},
		{"README.md", "Run it with --dryrun.", "Run it with `--dry-run`.", "", Minor, "suggestion-docs"},
	} {
		com := Comment{ID: "s", Path: c.path, Line: 5, DiffHunk: "@@ -4,2 +4,2 @@\n context\n+" + c.last, Body: c.prose + suggest(c.sugg)}
		r := Heuristic(com)
		if r.Verdict != c.want || !hasRule(r, c.rule) {
			t.Errorf("%s %q → %q (%q): %s, want %s by %s", c.path, c.last, c.sugg, c.prose, r, c.want, c.rule)
		}
	}
	// An empty suggestion deletes the line: a blank one is layout.
	blank := Comment{ID: "b", Path: "a.go", Line: 5, DiffHunk: "@@ -4,2 +4,3 @@\n x\n+", Body: "Extra blank line.\n```suggestion\n```"}
	if r := Heuristic(blank); r.Verdict != Minor {
		t.Errorf("blank line: %s", r)
	}
	// A multi-line comment: the suggestion replaces StartLine..Line.
	multi := Comment{ID: "m", Path: "a.go", StartLine: 4, Line: 5, DiffHunk: "@@ -3,3 +3,3 @@\n x\n+\t// one\n+\t// two", Body: suggest("\t// One.\n\t// Two.")}
	if r := Heuristic(multi); r.Verdict != Minor {
		t.Errorf("multi-line comment: %s", r)
	}
	// Without the hunk there is nothing to compare with; an unclosed
	// block cannot be read.
	for _, c := range []Comment{
		{ID: "n", Path: "a.go", Body: "typo" + suggest("// fixed")},
		{ID: "u", Path: "a.go", DiffHunk: "@@ -1 +1 @@\n+// x", Body: "typo\n```suggestion\n// y\n"},
	} {
		if r := Heuristic(c); r.Verdict != Borderline {
			t.Errorf("%q: %s", c.Body, r)
		}
	}
}

// TestPR_S5_Paths: docs pages lean minor unless the comment talks about
// behaviour; tests, build files and agent instructions are never minor
// on the heuristic's word alone.
func TestPR_S5_Paths(t *testing.T) {
	for _, c := range []struct {
		path, body string
		want       Verdict
	}{
		{"docs/guide.md", "This paragraph reads better as a list.", Minor},
		// Something missing is never minor, on docs pages too (issue
		// 36): the judge decides.
		{"README.md", "The table is missing a row for opencode.", Borderline},
		{"docs/cli.md", "Instead of documenting this, can the CLI accept both spellings", Borderline},
		{"docs/config.md", "The default here should honour 0 like the code does", Borderline},
		{"internal/x/x_test.go", "typo: Idel → Idle", Borderline},
		{"tools/test_x.py", "nit: wording", Borderline},
		{".github/workflows/ci.yml", "nit: trailing whitespace", Borderline},
		{"Makefile", "nit: indentation", Borderline},
		{"config/app.yaml", "nit: trailing spaces", Borderline},
		{".github/review-instructions.md", "nit: wording", Borderline},
		{"internal/x/x.go", "nit: trailing whitespace", Minor},
	} {
		r := Heuristic(Comment{ID: "p", Path: c.path, Line: 1, DiffHunk: "@@ -1 +1 @@\n+x", Body: c.body})
		if r.Verdict != c.want {
			t.Errorf("%s %q: %s, want %s", c.path, c.body, r, c.want)
		}
	}
	// The local review reports defects, not style.
	local := Comment{ID: "l", Source: SourceLocal, Path: "a.go", Body: "The loop reports clean when the diff is empty."}
	if r := Heuristic(local); r.Verdict != Borderline || !hasRule(r, "local-review") {
		t.Errorf("local: %s", r)
	}
	// Praise asks for nothing; praise with a condition may.
	for body, want := range map[string]Verdict{"LGTM, thanks!": Minor, "LGTM once the nil check is in": Borderline, "": Borderline} {
		if r := Heuristic(Comment{ID: "a", Path: "a.go", Body: body}); r.Verdict != want {
			t.Errorf("%q: %s, want %s", body, r, want)
		}
	}
}

// TestPR_S5_HeuristicIsPureAndLogged: the same comment always gets the
// same result, and the result names the rules for the decision log.
func TestPR_S5_HeuristicIsPureAndLogged(t *testing.T) {
	for _, l := range loadDataSet(t) {
		a, b := Heuristic(l.Comment), Heuristic(l.Comment)
		if a.String() != b.String() {
			t.Fatalf("%s: %s then %s", l.ID, a, b)
		}
		if a.Verdict != Borderline && len(a.Hits) == 0 {
			t.Errorf("%s: decided %s with no rule", l.ID, a.Verdict)
		}
		for _, h := range a.Hits {
			if h.Rule == "" || h.Lean < LeanStructural || h.Lean > LeanMinor || len([]rune(h.Evidence)) > 60 {
				t.Errorf("%s: hit %+v", l.ID, h)
			}
		}
	}
	r := Heuristic(goComment("x := 1", "nit: the file is never closed"))
	if s := r.String(); !strings.HasPrefix(s, "structural (") || !strings.Contains(s, "defect(structural: never closed)") ||
		!strings.Contains(s, "minor-words(minor: nit)") {
		t.Errorf("String() = %s", s)
	}
	if s := Heuristic(Comment{ID: "e"}).String(); s != "borderline (no rule fired)" {
		t.Errorf("empty: %s", s)
	}
}
