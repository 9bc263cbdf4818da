package classify

import (
	"testing"
)

// Synthetic comments for the rules the real data set brought (issue 17,
// item 5); each pins one rule, and cites the real comment it stands for.

func onPath(path, hunkLast, body string) Comment {
	return Comment{ID: "r", Source: SourceHuman, Path: path, Line: 3,
		DiffHunk: "@@ -1,2 +1,3 @@\n context\n+" + hunkLast, Body: body}
}

// TestPR_S5_MachineReadFilesAreNotDocs: CODEOWNERS and markdown a tool reads
// are not prose, so a point about them is never minor on their path's word
// (real-106: "this should also list `maintainers-docs`" on CODEOWNERS was
// called minor; real-095: frontmatter of a .grit pattern).
func TestPR_S5_MachineReadFilesAreNotDocs(t *testing.T) {
	for _, c := range []Comment{
		onPath(".github/CODEOWNERS", "/docs/ @org/docs", "this should also list `maintainers-docs`"),
		onPath("CODEOWNERS", "* @a @b", "Should it be @org/maintainers?"),
		onPath(".gitattributes", "*.sh text eol=lf", "these should be binary"),
		onPath(".grit/patterns/python/no_null.md", "tags: #fix", "Please move tags to the frontmatter going forward."),
		onPath(".github/ISSUE_TEMPLATE/bug.md", "labels: bug", "nit: wording"),
		onPath("docs/guide.md", "title: Guide", "Put the title in the front matter instead."),
	} {
		if r := Heuristic(c); r.Verdict == Minor {
			t.Errorf("%s %q: %s", c.Path, c.Body, r)
		}
	}
	for _, p := range []string{"CODEOWNERS", ".github/CODEOWNERS", "docs/CODEOWNERS", ".gitignore", ".editorconfig"} {
		if k := kindOf(p); k != pathBuild {
			t.Errorf("kindOf(%q) = %v, want build", p, k)
		}
	}
}

// TestPR_S5_TranslationFiles: a translation file holds the program's
// wording (real-146, real-140), but its keys and placeholders are what the
// program reads.
func TestPR_S5_TranslationFiles(t *testing.T) {
	for _, c := range []struct {
		path, last, body string
		want             Verdict
	}{
		{"web/locales/es.json", `  "title": "Configuracion",`, `Missing accent on "Configuración".`, Minor},
		{"src/locales/de.yaml", "      adjusted: Eingestellt", suggest("      adjusted: Angepasst"), Minor},
		{"config/locales/en.yml", "    session: Log on", suggest("    session: Sign in"), Minor},
		{"app/src/main/res/Messages_fr.properties", "save = Enregistrer", `"Sauvegarder" reads better`, Minor},
		{"src/locales/de.yaml", "      adjusted: Eingestellt", suggest("      adjusted_value: Angepasst"), Borderline},
		{"src/locales/en.json", `  "items": "{count} items",`, suggest(`  "items": "{n} items",`), Borderline},
		{"src/locales/en.json", `  "items": "{count} items",`, "The placeholder is missing in the French file.", Borderline},
		{"src/locales/en.json", `  "items": "{count} items",`, "This breaks the JSON: trailing comma.", Borderline},
	} {
		r := Heuristic(onPath(c.path, c.last, c.body))
		if r.Verdict != c.want {
			t.Errorf("%s %q: %s, want %s", c.path, c.body, r, c.want)
		}
	}
	// Not translation files: a workflow named by two letters, an
	// exercise's config in a languages/ tree, code in a locales folder.
	for _, p := range []string{".github/workflows/ci.yml", "languages/python/exercises/concept/x/.meta/config.json", "src/locales/index.ts"} {
		if kindOf(p) == pathLocale {
			t.Errorf("kindOf(%q) = locale", p)
		}
	}
}

// TestPR_S5_CommentsAboutComments: when the comment under review is about a
// code comment, its defect and build words describe that comment (real-089
// "The inline comment mentions PyO3, but …"): they only rule minor out.
func TestPR_S5_CommentsAboutComments(t *testing.T) {
	for _, c := range []Comment{
		onPath("internal/x/x.go", "// retries three times", "The inline comment is incorrect: the loop no longer retries."),
		onPath(".github/workflows/ci.yml", "  python: ['3.11'] # latest by PyO3", "The inline comment mentions PyO3, but this repository is pure Python."),
	} {
		r := Heuristic(c)
		if r.Verdict == Structural || !hasRule(r, "comment-subject") {
			t.Errorf("%q: %s", c.Body, r)
		}
	}
	// A plain comment-about-a-comment with nothing against it is minor.
	if r := Heuristic(goComment("// Returns the name", "This comment is outdated: it still mentions the old name.")); r.Verdict != Minor {
		t.Errorf("outdated comment: %s", r)
	}
	// A review comment pointing at another review comment is not about
	// a code comment: it carries that comment's weight.
	if r := Heuristic(goComment("x := f()", "Same as the comment above.")); r.Verdict != Borderline || !hasRule(r, "refers-elsewhere") {
		t.Errorf("refers elsewhere: %s", r)
	}
}

// TestPR_S5_WordsOnlyInInlineCode: a decisive word that appears only inside
// backticks is a name the reviewer quotes (real-010 "`assert!`"), a doubt;
// a security word counts wherever it is.
func TestPR_S5_WordsOnlyInInlineCode(t *testing.T) {
	c := onPath("src/config.rs", `ConfigFile::from_str("x").expect_err("bad");`, "Stylistically, we generally use an explicit `assert!` for these checks.")
	if r := Heuristic(c); r.Verdict != Borderline || !hasRule(r, "tests") {
		t.Errorf("assert in code: %s", r)
	}
	for _, body := range []string{"nit: use `verify=False` only in the dev profile", "nit: `InsecureSkipVerify` in `tls.Config`"} {
		if r := Heuristic(goComment("x := f()", body)); r.Verdict != Structural || !hasRule(r, "security") {
			t.Errorf("%q: %s", body, r)
		}
	}
	// Style is cosmetic as code style, not as a view's style.
	for body, want := range map[string]Verdict{
		"No need for memo here. Move the style inline on the view": Borderline,
		"nit: code style":                          Minor,
		"Follow the style guide for import blocks": Minor,
	} {
		if r := Heuristic(onPath("src/Modal.js", "const style = useMemo(() => ({}), []);", body)); r.Verdict != want {
			t.Errorf("%q: %s, want %s", body, r, want)
		}
	}
}

// TestPR_S5_SeveralNamesRenamed: outside Go, several names renamed
// consistently (a React state pair, real-007) is a rename, a doubt; in Go
// it stays code.
func TestPR_S5_SeveralNamesRenamed(t *testing.T) {
	js := onPath("src/List.jsx", "  const [loadingUsers, setLoadingUsers] = useState([]);",
		suggest("  const [loadingOrLoadedUsers, setLoadingOrLoadedUsers] = useState([]);"))
	if r := Heuristic(js); r.Verdict != Borderline || !hasRule(r, "suggestion-rename") {
		t.Errorf("js: %s", r)
	}
	// Two names made one is never minor either.
	if r := Heuristic(onPath("src/a.js", "  f(a, b);", suggest("  f(c, c);"))); r.Verdict == Minor {
		t.Errorf("merge: %s", r)
	}
	// In Go two names at once stay code, which in program source is a
	// doubt (it may be an equivalent rewrite).
	goPair := onPath("a.go", "\tcfgg, errr := load()", suggest("\tcfg, err := load()"))
	if r := Heuristic(goPair); r.Verdict != Borderline || !hasRule(r, "suggestion-code") {
		t.Errorf("go: %s", r)
	}
}

// TestPR_S5_PreciseDecisions: the rules of issue 17's precision pass. A
// rule decides only where it decided rightly on every real comment seen
// (TestPR_S5_RulePrecision prints the figures); elsewhere it yields
// borderline, which the judge carries.
func TestPR_S5_PreciseDecisions(t *testing.T) {
	for _, c := range []struct {
		c    Comment
		want Verdict
		rule string
	}{
		// Build words name a topic: a React hook's dependency array,
		// praise for a new lint hook (held-028, held-017).
		{onPath("src/Modal.tsx", "  }, [close]);", "Only change I see is the `close` dependency; shall we keep the rest as it was?"), Borderline, "build"},
		{onPath(".pre-commit-config.yaml", "  - id: mypy", "This is great, thank you for adding mypy to the checks!"), Borderline, "build"},
		// A defect word in a comment that accepts and asks nothing
		// (real-130) does not decide; asking for a fix still does.
		{onPath("cmd/server/main.go", "\tpanic(err)", "I didn't want to include any panics but it seems fine"), Borderline, "defect"},
		{onPath("cmd/server/main.go", "\tpanic(err)", "This panics on a bad flag; return the error instead, thanks"), Structural, "defect"},
		{onPath("cmd/server/main.go", "\tf, _ := os.Open(p)", "nit: the file is never closed"), Structural, "defect"},
		// Security words decide even in praise (fail closed).
		{onPath("cmd/server/main.go", "\tlog.Print(token)", "Thanks, looks good: it logs the token though"), Structural, "security"},
		// Praise asks for nothing on any file (real-118, real-108).
		{onPath("package.json", `  "lint": "eslint ."`, "👍"), Minor, "approval"},
		{onPath(".github/CODEOWNERS", "/docs/ @org/docs", "I think this makes a lot of sense."), Minor, "approval"},
		{onPath("internal/x/x_test.go", "\tt.Parallel()", "LGTM"), Minor, "approval"},
		// On a translation file a question is about the text
		// (real-145); about keys or placeholders it is a doubt.
		{onPath("web/locales/de.json", `  "cancel": "Beenden",`, `Not "Abbrechen"?`), Minor, "locale-path"},
		{onPath("web/locales/de.json", `  "items": "{count} Dinge",`, "Is the {count} placeholder still passed?"), Borderline, "locale-asks-behaviour"},
	} {
		r := Heuristic(c.c)
		if r.Verdict != c.want || !hasRule(r, c.rule) {
			t.Errorf("%s %q: %s, want %s with %s", c.c.Path, c.c.Body, r, c.want, c.rule)
		}
	}
	// A multi-line suggestion on a comment with no start line: the lines
	// it replaces are not known, and a range of the hunk makes it a
	// comment fix only (real-087), so it does not decide.
	wf := Comment{ID: "w", Path: ".github/workflows/setup.yml", Line: 12,
		DiffHunk: "@@ -1,4 +1,5 @@\n+      - name: Checkout\n+        # checkout@v5\n+        uses: a/checkout@0123\n+\n+      - name: Node\n+        # setup-node@v5",
		Body:     "These inline comments are misleading." + suggest("        uses: a/checkout@0123\n\n      - name: Node")}
	if r := Heuristic(wf); r.Verdict != Borderline || !hasRule(r, "suggestion-range-unknown") {
		t.Errorf("range unknown: %s", r)
	}
	// With the start line given the range is known.
	wf.StartLine = 9
	if r := Heuristic(wf); hasRule(r, "suggestion-range-unknown") {
		t.Errorf("range known: %s", r)
	}
}
