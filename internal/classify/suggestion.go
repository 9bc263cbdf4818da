package classify

import (
	"fmt"
	"path"
	"slices"
	"strings"
	"unicode"

	"github.com/convergeloop/converge/internal/text"
)

// A ```suggestion block is the reviewer's exact replacement for the lines
// the comment is on, so what it changes is the best evidence of what the
// reviewer asks for. The suggestion rules lex the replaced lines (the last
// lines of the diff hunk) and the suggestion, and compare them:
//
//   - only whitespace or comments differ: a cosmetic change (c002 fixes a
//     typo in a comment, c022 adds a doc comment, c088 rewords one, c056
//     drops a blank line), except indentation where it is syntax (c008:
//     YAML);
//   - only string literals differ: wording when the string is a message
//     (a print, log or error call) and its format verbs and escapes are
//     unchanged (c095 "occured" → "occurred"); a format verb (c012 %v →
//     %w) or a Go struct tag (c069, a wire name) is structural; any other
//     string (a query, a key, a URL) is a doubt;
//   - one identifier renamed throughout: naming for an unexported Go name
//     (c039), an API change for an exported one, a doubt elsewhere;
//   - any other code token: a change to the program (c001 adds a defer,
//     c005 a default, c047 a call), structural unless the reviewer marks
//     it as a nit, which only makes it a doubt (c019, c089, c107:
//     code changes the reviewer calls nits, some of which do change
//     behaviour).
//
// A suggestion on a docs page is a docs change (c033, c054); on a prompt or
// instructions file it is what an agent reads, so a doubt.

// codeLike finds what prose rarely holds and code samples do: braces,
// semicolons, arrows, assignment, a call.
var codeLike = mustCompile(`[{};]|=>|->|:=|\s==?\s|[A-Za-z0-9_]\(`)

var suggestionBlock = mustCompile("(?ms)^[ \t]*```[ \t]*suggestion[^\n]*\n(.*?)^[ \t]*```")

// suggestions returns the contents of the ```suggestion blocks of body.
func suggestions(body string) []string {
	body = strings.ReplaceAll(body, "\r\n", "\n")
	var out []string
	for _, m := range suggestionBlock.FindAllStringSubmatch(body, -1) {
		out = append(out, strings.TrimSuffix(m[1], "\n"))
	}
	// An opening fence without its closing one: the block cannot be read,
	// which is a doubt (see suggestionHits).
	if n := strings.Count(strings.ToLower(body), "```suggestion"); n > len(out) {
		out = append(out, unreadableSuggestion)
	}
	return out
}

const unreadableSuggestion = "\x00unreadable"

func suggestionHits(c Comment, kind pathKind, p prose) []Hit {
	blocks := suggestions(c.Body)
	if len(blocks) == 0 {
		return nil
	}
	var hits []Hit
	add := func(rule string, lean Lean, ev string) {
		hits = append(hits, Hit{Rule: rule, Lean: lean, Evidence: clipEvidence(ev)})
	}
	switch kind {
	case pathDocs:
		// A code sample on a docs page is what readers copy: a change
		// to it may change what the sample does (held2-044, a
		// GenServer callback's reply), so it is a doubt, never docs.
		for _, s := range blocks {
			if m := codeLike.FindString(s); m != "" {
				add("suggestion-docs-code", LeanDoubt, m)
				return hits
			}
		}
		if orig, ok := replacedLines(c); ok {
			if m := codeLike.FindString(orig); m != "" {
				add("suggestion-docs-code", LeanDoubt, m)
				return hits
			}
		}
		add("suggestion-docs", LeanMinor, c.Path)
		return hits
	case pathAgentDocs, pathToolDocs:
		add("suggestion-instructions", LeanDoubt, c.Path)
		return hits
	case pathLocale:
		// A suggestion on a translation file that keeps every key and
		// changes only the text after it is wording (real-140); one
		// that touches a key, or cannot be read line by line, is what
		// the program looks up.
		orig, ok := replacedLines(c)
		for _, s := range blocks {
			if !ok || s == unreadableSuggestion {
				add("suggestion-locale", LeanDoubt, "cannot compare the keys")
			} else if k := changedKey(orig, s); k != "" {
				add("suggestion-locale", LeanDoubt, k)
			} else {
				add("suggestion-translation", LeanMinor, "only translated text changes")
			}
		}
		return hits
	}
	orig, ok := replacedLines(c)
	if !ok {
		add("suggestion-unknown-lines", LeanDoubt, "no diff hunk to compare with")
		return hits
	}
	lang := langOf(c.Path)
	nit := minorWords.MatchString(p.lower)
	for _, s := range blocks {
		if s == unreadableSuggestion {
			add("suggestion-unreadable", LeanDoubt, "unclosed ```suggestion block")
			continue
		}
		if s == "" && strings.TrimSpace(orig) == "" {
			// An empty suggestion deletes the lines: here a blank one.
			add("suggestion-layout", LeanMinor, "deletes a blank line")
			continue
		}
		d := compare(lang, orig, s)
		switch d.kind {
		case diffNone:
			add("suggestion-same", LeanDoubt, "the suggestion repeats the lines")
		case diffLayout:
			if d.directive != "" {
				// A comment a tool reads is code: a build constraint,
				// a lint switch, a shebang.
				add("suggestion-directive", LeanDoubt, d.directive)
			} else if d.indent {
				add("suggestion-indentation", LeanDoubt, "indentation is syntax in "+path.Base(c.Path))
			} else {
				add("suggestion-layout", LeanMinor, "only whitespace or comments change")
			}
		case diffStrings:
			for _, sd := range d.strings {
				switch {
				case sd.structTag:
					add("suggestion-struct-tag", LeanStructural, sd.new)
				case sd.verbsChanged:
					add("suggestion-format", LeanStructural, sd.old+" → "+sd.new)
				case sd.message:
					add("suggestion-message", LeanMinor, sd.new)
				default:
					add("suggestion-string", LeanDoubt, sd.old+" → "+sd.new)
				}
			}
		case diffRename:
			switch {
			case lang.goLang && isUpper(d.renamedTo) || lang.goLang && isUpper(d.renamedFrom):
				add("suggestion-rename-exported", LeanStructural, d.renamedFrom+" → "+d.renamedTo)
			case lang.goLang:
				add("suggestion-rename", LeanMinor, d.renamedFrom+" → "+d.renamedTo)
			default:
				add("suggestion-rename", LeanDoubt, d.renamedFrom+" → "+d.renamedTo)
			}
		case diffCode:
			if r := otherRange(c, lang, s); r != "" {
				// The comment's first line is not known and another
				// range of the hunk makes the suggestion no code
				// change (real-087: comments fixed above a step):
				// which lines it replaces cannot be told.
				add("suggestion-range-unknown", LeanDoubt, r)
				continue
			}
			// In a build or configuration file the tokens are
			// the configuration. In program source an equivalent
			// rewrite changes tokens as much as a fix does
			// (`open(f, encoding=…)` → `open(f, 'r', encoding=…)`,
			// real-102, spells out a default), so only an operator
			// or a number changed in place (`>` → `>=`) is
			// behaviour on its face.
			if nit || kind != pathBuild && !d.inPlace {
				add("suggestion-code", LeanDoubt, d.example)
			} else {
				add("suggestion-code", LeanStructural, d.example)
			}
		}
	}
	return hits
}

// otherRange: when the comment gives no start line and the suggestion has
// several lines, the lines it replaces are not known; it reports a range
// of the hunk's last lines that the suggestion changes only in layout,
// strings or a name, or "".
func otherRange(c Comment, l lang, sugg string) string {
	if c.StartLine > 0 || !strings.Contains(sugg, "\n") {
		return ""
	}
	for n := 2; ; n++ {
		orig, ok := replacedLinesN(c, n)
		if !ok {
			return ""
		}
		if d := compare(l, orig, sugg); d.kind != diffCode {
			return fmt.Sprintf("the last %d lines of the hunk", n)
		}
	}
}

// replacedLines are the lines a suggestion replaces: the last
// Line-StartLine+1 lines of the hunk (one when StartLine is 0), without
// their diff markers.
func replacedLines(c Comment) (string, bool) {
	n := 1
	if c.StartLine > 0 && c.Line >= c.StartLine {
		n = c.Line - c.StartLine + 1
	}
	return replacedLinesN(c, n)
}

// replacedLinesN are the last n lines of the hunk, without their diff
// markers.
func replacedLinesN(c Comment, n int) (string, bool) {
	if strings.TrimSpace(c.DiffHunk) == "" {
		return "", false
	}
	var lines []string
	for l := range strings.SplitSeq(strings.ReplaceAll(c.DiffHunk, "\r\n", "\n"), "\n") {
		if strings.HasPrefix(l, "@@") || strings.HasPrefix(l, `\ No newline`) {
			continue
		}
		lines = append(lines, l)
	}
	// A hunk ending in a newline has an empty last element that is not a
	// line of the diff.
	if n := len(lines); n > 0 && lines[n-1] == "" && strings.HasSuffix(c.DiffHunk, "\n") {
		lines = lines[:n-1]
	}
	if len(lines) == 0 {
		return "", false
	}
	if n > len(lines) {
		return "", false
	}
	out := make([]string, 0, n)
	for _, l := range lines[len(lines)-n:] {
		if l != "" {
			l = l[1:] // the +, - or space of the diff
		}
		out = append(out, l)
	}
	return strings.Join(out, "\n"), true
}

// Languages as far as lexing needs them.
type lang struct {
	slashComments bool // // and /* */
	hashComments  bool // #
	backquote     bool // `raw` or `template` strings
	tripleQuotes  bool // Python """ and '''
	indentSyntax  bool // Python, YAML, Makefile: indentation is syntax
	goLang        bool
	python        bool
}

func langOf(p string) lang {
	base := strings.ToLower(path.Base(p))
	switch ext := path.Ext(base); {
	case ext == ".go":
		return lang{slashComments: true, backquote: true, goLang: true}
	case slices.Contains([]string{".ts", ".tsx", ".js", ".jsx", ".mjs", ".cjs"}, ext):
		return lang{slashComments: true, backquote: true}
	case slices.Contains([]string{".java", ".kt", ".c", ".h", ".cc", ".cpp", ".hpp", ".cs", ".rs", ".swift", ".scala", ".css", ".scss"}, ext):
		return lang{slashComments: true}
	case ext == ".py":
		return lang{hashComments: true, tripleQuotes: true, indentSyntax: true, python: true}
	case ext == ".yml" || ext == ".yaml":
		return lang{hashComments: true, indentSyntax: true}
	case base == "makefile" || base == "gnumakefile" || ext == ".mk":
		return lang{hashComments: true, indentSyntax: true}
	case slices.Contains([]string{".sh", ".bash", ".zsh", ".rb", ".toml", ".tf", ".cfg", ".conf", ".ini", ".r", ".pl"}, ext),
		strings.HasPrefix(base, "dockerfile"), strings.HasPrefix(base, "requirements"),
		slices.Contains([]string{"codeowners", ".gitignore", ".gitattributes", ".dockerignore", ".editorconfig", ".npmrc", "procfile"}, base):
		return lang{hashComments: true}
	}
	return lang{}
}

type tokKind int

const (
	tokCode tokKind = iota
	tokString
	tokComment
)

type token struct {
	kind tokKind
	text string
	line int
}

// lex splits src into code tokens (identifiers, numbers, single
// punctuation characters), string literals (quotes included) and comments.
// Whitespace is dropped. It is a lexer for comparing, not for compiling:
// regular expression literals come out as punctuation, which still
// compares as code.
func lex(l lang, src string) []token {
	var toks []token
	line := 0
	rs := []rune(src)
	lineStart := true
	for i := 0; i < len(rs); {
		r := rs[i]
		if r == '\n' {
			line++
			i++
			lineStart = true
			continue
		}
		if unicode.IsSpace(r) {
			i++
			continue
		}
		startLine := line
		atLineStart := lineStart
		lineStart = false
		rest := string(rs[i:min(i+3, len(rs))])
		switch {
		// A line of a block comment that starts inside the comment (a
		// JSDoc or Go block line "* @param …", c065): a '*' then space,
		// '/', '@' or the end of the line. "*p = x" stays code.
		case l.slashComments && atLineStart && r == '*' && (i+1 == len(rs) || strings.ContainsRune(" \t/@\n", rs[i+1])):
			j := indexFrom(rs, i, "\n")
			toks = append(toks, token{tokComment, string(rs[i:j]), startLine})
			i = j
		case l.slashComments && strings.HasPrefix(rest, "//"), l.hashComments && r == '#':
			j := indexFrom(rs, i, "\n")
			toks = append(toks, token{tokComment, string(rs[i:j]), startLine})
			i = j
		case l.slashComments && strings.HasPrefix(rest, "/*"):
			j := indexFrom(rs, i+2, "*/")
			if j < len(rs) {
				j += 2
			}
			line += strings.Count(string(rs[i:j]), "\n")
			toks = append(toks, token{tokComment, string(rs[i:j]), startLine})
			i = j
		case l.tripleQuotes && (rest == `"""` || rest == `'''`):
			j := indexFrom(rs, i+3, rest)
			if j < len(rs) {
				j += 3
			}
			line += strings.Count(string(rs[i:j]), "\n")
			toks = append(toks, token{tokString, string(rs[i:j]), startLine})
			i = j
		case r == '"' || r == '\'' || r == '`' && l.backquote:
			j := i + 1
			for j < len(rs) && rs[j] != r {
				if rs[j] == '\n' && r != '`' {
					break // unterminated on this line
				}
				if rs[j] == '\\' && r != '`' && j+1 < len(rs) {
					j += 2
					continue
				}
				j++
			}
			if j < len(rs) && rs[j] == r {
				j++
			}
			j = min(j, len(rs))
			line += strings.Count(string(rs[i:j]), "\n")
			toks = append(toks, token{tokString, string(rs[i:j]), startLine})
			i = j
		case isIdentStart(r):
			j := i + 1
			for j < len(rs) && isIdentPart(rs[j]) {
				j++
			}
			toks = append(toks, token{tokCode, string(rs[i:j]), startLine})
			i = j
		case unicode.IsDigit(r):
			j := i + 1
			for j < len(rs) && (isIdentPart(rs[j]) || rs[j] == '.') {
				j++
			}
			toks = append(toks, token{tokCode, string(rs[i:j]), startLine})
			i = j
		case strings.ContainsRune(operatorChars, r):
			// A run of operator characters is one token ("==", ":=",
			// "===", ">="), so a log shows "== → ===", not "0 → =".
			j := i + 1
			for j < len(rs) && strings.ContainsRune(operatorChars, rs[j]) {
				j++
			}
			toks = append(toks, token{tokCode, string(rs[i:j]), startLine})
			i = j
		default:
			toks = append(toks, token{tokCode, string(r), startLine})
			i++
		}
	}
	if l.python {
		// A string that is a statement on its own lines is a docstring:
		// documentation, like a comment (c061-like docstring edits).
		for k, t := range toks {
			if t.kind != tokString {
				continue
			}
			prevOK := k == 0 || toks[k-1].line < t.line || toks[k-1].kind == tokComment
			nextOK := k == len(toks)-1 || toks[k+1].line > t.line+strings.Count(t.text, "\n")
			if prevOK && nextOK {
				toks[k].kind = tokComment
			}
		}
	}
	return toks
}

const operatorChars = "=<>!&|+-*/%^:?~"

func indexFrom(rs []rune, from int, sub string) int {
	if from > len(rs) {
		return len(rs)
	}
	if k := strings.Index(string(rs[from:]), sub); k >= 0 {
		return from + len([]rune(string(rs[from:])[:k]))
	}
	return len(rs)
}

func isIdentStart(r rune) bool { return r == '_' || r == '$' || unicode.IsLetter(r) }
func isIdentPart(r rune) bool  { return isIdentStart(r) || unicode.IsDigit(r) }
func isUpper(s string) bool {
	for _, r := range s {
		return unicode.IsUpper(r)
	}
	return false
}

type diffKind int

const (
	diffNone    diffKind = iota // identical
	diffLayout                  // whitespace or comments only
	diffStrings                 // string literals only
	diffRename                  // one identifier renamed
	diffCode                    // anything else
)

type stringDiff struct {
	old, new     string
	structTag    bool
	verbsChanged bool
	message      bool
}

type diff struct {
	kind        diffKind
	indent      bool   // layout: the indentation of a line changed
	directive   string // layout: a changed comment is a directive
	strings     []stringDiff
	renamedFrom string
	renamedTo   string
	example     string // for the log: the first differing code
	// inPlace: code only; every token that differs is an operator or a
	// number replaced by another.
	inPlace bool
}

func compare(l lang, orig, sugg string) diff {
	if orig == sugg {
		return diff{kind: diffNone}
	}
	a, b := lex(l, orig), lex(l, sugg)
	ca, cb := filterKind(a, tokCode, tokString), filterKind(b, tokCode, tokString)
	if sameTexts(ca, cb) {
		d := diff{kind: diffLayout}
		if l.indentSyntax && indents(orig) != indents(sugg) {
			d.indent = true
		}
		d.directive = changedDirective(a, b)
		return d
	}
	if len(ca) == len(cb) {
		var sds []stringDiff
		var from, to string
		onlyStrings, rename, declared := true, true, false
		// renames maps each identifier that differs to its replacement:
		// several names renamed consistently (a React state pair,
		// real-007) are still only names.
		renames := map[string]string{}
		for k := range ca {
			x, y := ca[k], cb[k]
			if x.text == y.text {
				continue
			}
			if x.kind == tokString && y.kind == tokString {
				rename = false
				sds = append(sds, stringDiffOf(l, ca, k, x.text, y.text))
				continue
			}
			onlyStrings = false
			if x.kind != tokCode || y.kind != tokCode || !isIdentStart([]rune(x.text)[0]) || !isIdentStart([]rune(y.text)[0]) {
				rename = false
				continue
			}
			if r, seen := renames[x.text]; seen && r != y.text {
				rename = false
				continue
			}
			renames[x.text] = y.text
			if from == "" {
				from, to = x.text, y.text
			}
			if declares(ca, k) {
				declared = true
			}
		}
		switch {
		case onlyStrings && len(sds) > 0:
			return diff{kind: diffStrings, strings: sds}
		case rename && len(renames) > 1 && !l.goLang:
			// Outside Go a rename is only a doubt (suggestion-rename),
			// so several at once can be one too: never minor.
			return diff{kind: diffRename, renamedFrom: from, renamedTo: to}
		case rename && len(renames) > 1:
			return diff{kind: diffCode, example: firstDifference(ca, cb), inPlace: inPlace(ca, cb)}
		case rename && from != "" && (declared || l.goLang && (isUpper(from) || isUpper(to))):
			// A name swapped where it is declared is a rename. Swapped
			// where it is used, it names another function or value (a
			// different call: t.Log → t.Fatal), which is code —
			// except for an exported Go name, which is structural
			// either way (an API rename or another exported call).
			return diff{kind: diffRename, renamedFrom: from, renamedTo: to}
		}
	}
	return diff{kind: diffCode, example: firstDifference(ca, cb), inPlace: inPlace(ca, cb)}
}

// inPlace reports whether a and b differ only in operators or numbers
// replaced one for one.
func inPlace(a, b []token) bool {
	if len(a) != len(b) {
		return false
	}
	differ := false
	for k := range a {
		x, y := a[k], b[k]
		if x.text == y.text {
			continue
		}
		differ = true
		if x.kind != tokCode || y.kind != tokCode || !(isOperator(x.text) && isOperator(y.text) || isNumber(x.text) && isNumber(y.text)) {
			return false
		}
	}
	return differ
}

func isOperator(s string) bool { return strings.Trim(s, operatorChars) == "" }
func isNumber(s string) bool   { r := []rune(s); return len(r) > 0 && unicode.IsDigit(r[0]) }

// declares reports whether the identifier code[k] is declared there: after
// var, const, let, type, func, def, class or function, or on the left of a
// Go short variable declaration ("a, b := …").
func declares(code []token, k int) bool {
	if k > 0 && slices.Contains([]string{"var", "const", "let", "type", "func", "def", "class", "function"}, code[k-1].text) {
		return true
	}
	for i := k + 1; i < len(code); i++ {
		switch t := code[i].text; {
		case t == ":=":
			return true
		case t == "," || code[i].kind == tokCode && isIdentStart([]rune(t)[0]):
			continue
		}
		return false
	}
	return false
}

// directive matches comments that tools read: build constraints, embeds,
// cgo exports, linter and type-checker switches, shebangs, coding lines.
var directive = mustCompile(`^(?://go:|//\s*\+build|//export |//line |//\s*nolint|//\s*(?:eslint|@ts-|prettier-ignore|istanbul|biome-ignore)|/\*\s*(?:eslint|istanbul|webpack)|#\s*(?:type:|noqa|pragma|pylint:|mypy:|fmt:|isort:|yamllint|shellcheck)|#!|#\s*-\*-|#\s*(?:syntax|escape)=)`)

// changedDirective is a directive among the comments that differ.
func changedDirective(a, b []token) string {
	ca, cb := filterKind(a, tokComment), filterKind(b, tokComment)
	count := map[string]int{}
	for _, t := range ca {
		count[t.text]++
	}
	for _, t := range cb {
		count[t.text]--
	}
	for _, t := range append(ca, cb...) {
		if count[t.text] != 0 && directive.MatchString(strings.TrimSpace(t.text)) {
			return t.text
		}
	}
	return ""
}

func filterKind(ts []token, kinds ...tokKind) []token {
	var out []token
	for _, t := range ts {
		if slices.Contains(kinds, t.kind) {
			out = append(out, t)
		}
	}
	return out
}

func sameTexts(a, b []token) bool {
	return slices.EqualFunc(a, b, func(x, y token) bool { return x.kind == y.kind && x.text == y.text })
}

// indents lists the leading whitespace of the non-blank lines.
func indents(s string) string {
	var b strings.Builder
	for l := range strings.SplitSeq(s, "\n") {
		if strings.TrimSpace(l) == "" {
			continue
		}
		b.WriteString(l[:len(l)-len(strings.TrimLeft(l, " \t"))])
		b.WriteByte('|')
	}
	return b.String()
}

func firstDifference(a, b []token) string {
	for k := 0; k < max(len(a), len(b)); k++ {
		switch {
		case k >= len(a):
			return "adds " + b[k].text
		case k >= len(b):
			return "drops " + a[k].text
		case a[k].text != b[k].text:
			return a[k].text + " → " + b[k].text
		}
	}
	return ""
}

// verbs are the parts of a string a program reads: printf verbs, Python
// and template placeholders, escapes.
var verbs = mustCompile(`%[-+# 0-9.*]*[a-zA-Z%]|\{[^{}]*\}|\$\{[^}]*\}|\\.`)

// messageCall names the calls whose string argument is text for a person:
// prints, logs, errors, test failures, exceptions.
var messageCall = mustCompile(`(?i)^(?:fmt\.(?:print|fprint|sprint)?(?:f|ln)?|fmt\.errorf|errors\.new|errors\.errorf|log\.\w+|slog\.\w+|logger\.\w+|logging\.\w+|log|t\.(?:error|errorf|fatal|fatalf|log|logf|skip|skipf)|b\.(?:fatal|fatalf|log|logf)|console\.\w+|print|println|printf|eprintln|panic|warn|warning|warnings\.warn|\w*(?:error|exception|warning))$`)

func stringDiffOf(l lang, code []token, k int, old, new string) stringDiff {
	sd := stringDiff{old: old, new: new}
	if l.goLang && strings.HasPrefix(old, "`") && strings.Contains(old, `:"`) {
		sd.structTag = true
		return sd
	}
	if strings.Join(verbs.FindAllString(old, -1), "\x00") != strings.Join(verbs.FindAllString(new, -1), "\x00") {
		sd.verbsChanged = true
		return sd
	}
	// fmt.Sprintf builds a value, not a message. fmt.Fprintf writes a
	// message only to a standard or error stream: to any other writer (an
	// HTTP response, a file) it may write a protocol.
	name, open := enclosingCall(code, k)
	lower := strings.ToLower(name)
	switch {
	case name == "" || strings.HasSuffix(lower, "sprintf") || strings.HasSuffix(lower, "sprint") || !messageCall.MatchString(name):
	case strings.HasPrefix(lower, "fmt.fprint"):
		sd.message = open+1 < k && stdStream.MatchString(firstArg(code, open))
	default:
		sd.message = true
	}
	return sd
}

var stdStream = mustCompile(`(?i)^(?:os\.)?std(?:err|out)$|err(?:or)?(?:out|w|writer)?$|^\w+\.(?:err|stderr|errout)$`)

// firstArg is the first argument of the call whose "(" is code[open], as
// the text of its tokens.
func firstArg(code []token, open int) string {
	var b strings.Builder
	for i := open + 1; i < len(code) && code[i].text != "," && code[i].text != ")"; i++ {
		b.WriteString(code[i].text)
	}
	return b.String()
}

// enclosingCall is the dotted name of the call whose argument list holds
// code[k] ("errors.New", "fmt.Fprintf", "logger.info") and the index of
// its "(", or "".
func enclosingCall(code []token, k int) (string, int) {
	depth := 0
	for i := k - 1; i >= 0; i-- {
		switch code[i].text {
		case ")", "]", "}":
			depth++
			continue
		case "(":
			if depth > 0 {
				depth--
				continue
			}
		case "[", "{":
			if depth > 0 {
				depth--
			}
			continue
		default:
			continue
		}
		// code[i] is the unmatched "(": read the name before it.
		var parts []string
		for j := i - 1; j >= 0; j -= 2 {
			if code[j].kind != tokCode || !isIdentStart([]rune(code[j].text)[0]) {
				break
			}
			parts = append([]string{code[j].text}, parts...)
			if j == 0 || code[j-1].text != "." {
				break
			}
		}
		return strings.Join(parts, "."), i
	}
	return "", -1
}

func clipEvidence(s string) string {
	s = text.OneLine(s)
	if r := []rune(s); len(r) > 60 {
		return string(r[:59]) + "…"
	}
	return s
}

// changedKey compares the lines of a translation file with a suggestion for
// them: it returns "" when both have the same lines with the same keys (the
// text before the first ':' or '=') and the same placeholders, and what
// differs otherwise.
func changedKey(orig, sugg string) string {
	a, b := strings.Split(orig, "\n"), strings.Split(sugg, "\n")
	if len(a) != len(b) {
		return "the number of lines changes"
	}
	for i := range a {
		ka, va, oka := cutKey(a[i])
		kb, vb, okb := cutKey(b[i])
		if oka != okb || ka != kb {
			return strings.TrimSpace(a[i]) + " → " + strings.TrimSpace(b[i])
		}
		if !slices.Equal(placeholder.FindAllString(va, -1), placeholder.FindAllString(vb, -1)) {
			return "placeholders " + va + " → " + vb
		}
	}
	return ""
}

// cutKey splits a translation line at its first ':' or '='.
func cutKey(line string) (key, value string, ok bool) {
	i := strings.IndexAny(line, ":=")
	if i < 0 {
		return strings.TrimSpace(line), "", false
	}
	return strings.TrimSpace(line[:i]), line[i+1:], true
}

// placeholder: what a translation library substitutes into the text.
var placeholder = mustCompile(`\{\{?\s*[\w.]*\s*\}?\}|%[-+ 0#]*\d*(?:\.\d+)?[sdfiu@]|%\d+\$[sd@]|\$\{\w*\}|:\w+\b`)
