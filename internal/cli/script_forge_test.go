package cli

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/convergeloop/converge/internal/emulator/fakehub"
	"github.com/convergeloop/converge/internal/forge"
	ghclient "github.com/convergeloop/converge/internal/forge/github"
)

// The scenario table (issue 21): the PR loop's scenarios in
// testdata/bothforges, written only with converge's command line and the
// forge-neutral `forge` command below, run once per forge emulator.
//
//	forge start [DELAY] [no-ci]   the forge's emulator and its demo PR; DELAY paces the review
//	                              bot (default 100ms); no-ci: no CI runner. Sets PR_URL,
//	                              CONVERGE_TOKEN (the author's), what converge needs to reach
//	                              the forge (API URL, CA), BOT (the review bot's login) and
//	                              REPLY_WRITTEN (the crash boundary right after converge's
//	                              thread replies reach the forge, for CONVERGE_TEST_CRASH_AT_NAME)
//	forge review-thread PATH LINE BODY  the reviewer opens a thread on a line of the head
//	forge request-changes BODY    the reviewer requests changes
//	forge unresolve SUBSTR        the reviewer reopens the thread whose first comment holds SUBSTR
//	forge human-push              the author pushes a commit without converge's trailer
//	forge push base|head PATH FILE  the author pushes FILE (from the script) as PATH to the
//	                              PR's base or head branch (a head so pushed is the run's start)
//	forge close                   the author closes the PR
//	forge await bot-started       wait until the review bot has started a review
//	forge bot-round N OPT…        the bot's Nth review from now on (1-based; past the demo's
//	                              three, a clean one): none (no findings), error (the bot
//	                              fails), delay=D
//	forge threads open|outdated-open|resolved N   the forge shows exactly N such threads
//	forge thread-open SUBSTR      that thread is not resolved (! : it is)
//	forge thread-answered SUBSTR WORD  the thread is resolved, and converge's last reply holds WORD
//	forge thread-replied SUBSTR WORD   converge's last reply in the thread holds WORD
//	forge thread-replies SUBSTR N converge replied exactly N times in the thread
//	forge last-reply SUBSTR WORD  the thread's last comment is converge's reply, holding WORD
//	forge never-addressed SUBSTR  no reply of converge in the thread says "Addressed"; it is open
//	forge no-reply-says WORD      no reply of converge in any thread holds WORD (! : one does)
//	forge merge-state STATE       the PR's merge state in converge's vocabulary (CLEAN, DIRTY, …)
//	forge verdict LABEL STATE     the PR carries LABEL and converge's verdict on the head is
//	                              STATE (success, failure, error)
//	forge proven [no-ci]          the forge proves two-stable (! : it does not)
//	forge head-unchanged          the PR's head is still the one the run started on
//	forge head-has PATH SUBSTR    PATH at the head holds SUBSTR (! : it does not)
//	forge head-lacks PATH         the head has no file PATH
//	forge head-diff-has PATH      the head still differs from the base in PATH
//	forge every-head-has PATH SUBSTR  every commit from the start head to the head holds it
//	forge writes-by author|reviewer N  the forge logged exactly N writes by that actor
//	forge rate-limits SEED RATE   from now on the forge answers that share of converge's (the
//	                              author's) API requests, drawn from SEED, rate-limited as it
//	                              does today (GitHub: REST 403 and GraphQL 200 with type
//	                              RATE_LIMIT or the older RATE_LIMITED; GitLab: 429), each
//	                              limit lasting a second
//	forge rate-limits-met MIN     the forge answered at least MIN of converge's requests in its
//	                              rate limit's current shape (GitHub: GraphQL type RATE_LIMIT)
//
// Every check reads the forge through converge's own backend for it, with
// the reviewer's token, and through a fresh git clone (forgeReader).

// scriptForge is one forge's emulator as the table drives it: the reads
// every check needs (forgeReader) and the other actors' moves, each on the
// wire with the actor's own token. The GitHub emulator's is hubForge; a
// forge's adapter is registered in scriptForges.
type scriptForge interface {
	forgeReader
	// bot is the review bot's login on this forge ($BOT).
	bot() string
	// replyWritten is the crash boundary (package crashpoint) converge
	// passes right after its thread replies reach this forge, before any
	// resolve ($REPLY_WRITTEN).
	replyWritten() string
	// writes is how many write requests (API writes, pushes) the forge
	// logged by actor ("author": converge's token, or "reviewer"), each
	// described for a failure message.
	writes(actor string) []string
	// await blocks until the event has happened on the PR ("bot-started":
	// the review bot began a review), or fails the script.
	await(ts *testscript.TestScript, event string)

	// reviewThread: the reviewer opens a thread on line of path at the head.
	reviewThread(ts *testscript.TestScript, path string, line int, body string)
	// requestChanges: the reviewer requests changes with body.
	requestChanges(ts *testscript.TestScript, body string)
	// setResolved: the reviewer resolves or reopens the thread threadID
	// (the forge.Thread ID observe gives).
	setResolved(ts *testscript.TestScript, threadID string, resolved bool)
	// push: the author pushes files to the PR's base or head ("base",
	// "head") in one commit with msg, and a head so pushed is startHead.
	push(ts *testscript.TestScript, which string, files map[string]string, msg string)
	// humanPush: the author pushes a commit without converge's trailer.
	humanPush(ts *testscript.TestScript)
	// closePR: the author closes the PR.
	closePR(ts *testscript.TestScript)
	// botRound sets the review bot's nth review from now on (1-based) by
	// opts: none, error, delay=D.
	botRound(ts *testscript.TestScript, n int, opts []string)
	// rateLimits: from now on the forge answers a share rate of the
	// author's API requests, drawn from seed, with its rate limit (a
	// second long) as it answers today.
	rateLimits(ts *testscript.TestScript, seed int64, rate float64)
	// rateLimitsMet is how many of the author's requests the forge has
	// answered with its rate limit's current shape, each described.
	rateLimitsMet() []string
}

// forgeStart is how a scenario starts a forge.
type forgeStart struct {
	// BotDelay paces the review bot's reviews.
	BotDelay time.Duration
	// NoCI: the repository has no CI.
	NoCI bool
}

// scriptForges are the forges the table runs on, by kind: a constructor
// that starts the forge's emulator for the script, seeds the demo PR,
// sets the script's environment (PR_URL, CONVERGE_TOKEN and what converge
// needs to reach the forge; `forge start` sets BOT and REPLY_WRITTEN), and
// stops it all when the script ends (ts.Defer).
//
// GitLab's adapter (script_lab_test.go, over internal/emulator/fakelab,
// observing through internal/forge/gitlab) registers itself in an init
// func:
//
//	scriptForges[forge.GitLab] = startScriptLab
//
// What the rows take for granted of every forge: the demo is the same
// textstats repository and merge request as fakehub's (SeedDemoWith), its
// bot's first two reviews raise the demo's findings with the same bodies
// (the rows find threads by "divides by zero", "Off by one", "stops before
// the last window") and suggestions, and the third is clean; CI runs
// `go test -vet=off ./...` on each head unless NoCI; observe maps the forge into
// converge's vocabulary (forge.PullRequest, its merge state, the
// "converge" check context); and converge's client of the forge passes a
// crash boundary (package crashpoint) around each write, replyWritten
// naming the one after its reply batch. A forge without an adapter has
// its run of the table skipped.
var scriptForges = map[forge.Kind]func(ts *testscript.TestScript, opts forgeStart) scriptForge{
	forge.GitHub: startHubForge,
}

// forgeKindKey is the script variable the table's Setup sets to the
// forge the script runs on.
const forgeKindKey = "FORGE"

var scriptForgeOf sync.Map // *testscript.TestScript → scriptForge

func cmdForge(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) == 0 {
		ts.Fatalf("usage: forge start|review-thread|request-changes|unresolve|human-push|push|close|await|bot-round|threads|thread-…|proven|head-…|writes-by …")
	}
	if args[0] == "start" {
		startScriptForge(ts, neg, args[1:])
		return
	}
	v, ok := scriptForgeOf.Load(ts)
	if !ok {
		ts.Fatalf("forge %s: no forge started", args[0])
	}
	f := v.(scriptForge)
	usage := func(n int, u string) {
		if len(args) != n {
			ts.Fatalf("usage: forge %s %s", args[0], u)
		}
	}
	negatable := false
	switch args[0] {
	case "review-thread":
		if len(args) < 4 {
			ts.Fatalf("usage: forge review-thread PATH LINE BODY")
		}
		line, err := strconv.Atoi(args[2])
		ts.Check(err)
		f.reviewThread(ts, args[1], line, strings.Join(args[3:], " "))
	case "request-changes":
		if len(args) < 2 {
			ts.Fatalf("usage: forge request-changes BODY")
		}
		f.requestChanges(ts, strings.Join(args[1:], " "))
	case "unresolve":
		usage(2, "SUBSTR")
		f.setResolved(ts, threadWith(ts, f, args[1]).ID, false)
	case "human-push":
		usage(1, "")
		f.humanPush(ts)
	case "push":
		if len(args) != 4 || (args[1] != "base" && args[1] != "head") {
			ts.Fatalf("usage: forge push base|head PATH FILE")
		}
		f.push(ts, args[1], map[string]string{args[2]: ts.ReadFile(args[3])}, "chore: "+args[2])
	case "close":
		usage(1, "")
		f.closePR(ts)
	case "await":
		usage(2, "bot-started")
		f.await(ts, args[1])
	case "bot-round":
		if len(args) < 3 {
			ts.Fatalf("usage: forge bot-round N none|error|delay=D …")
		}
		n, err := strconv.Atoi(args[1])
		ts.Check(err)
		f.botRound(ts, n, args[2:])
	case "rate-limits":
		usage(3, "SEED RATE")
		seed, err := strconv.ParseInt(args[1], 10, 64)
		ts.Check(err)
		rate, err := strconv.ParseFloat(args[2], 64)
		ts.Check(err)
		f.rateLimits(ts, seed, rate)
	case "rate-limits-met":
		usage(2, "MIN")
		least, err := strconv.Atoi(args[1])
		ts.Check(err)
		met := f.rateLimitsMet()
		ts.Logf("rate limits met in today's shape: %d\n%s", len(met), strings.Join(met, "\n"))
		if len(met) < least {
			ts.Fatalf("forge rate-limits-met: %d rate-limited answer(s) in today's shape, want at least %d", len(met), least)
		}
	case "threads":
		usage(3, "open|outdated-open|resolved N")
		checkThreads(ts, f, args[1], args[2])
	case "thread-open":
		usage(2, "SUBSTR")
		checkThreadOpen(ts, neg, f, args[1])
		negatable = true
	case "thread-answered", "thread-replied":
		usage(3, "SUBSTR WORD")
		threadAnswered(ts, f, args[1], args[2], args[0] == "thread-answered")
	case "thread-replies":
		usage(3, "SUBSTR N")
		want, err := strconv.Atoi(args[2])
		ts.Check(err)
		if got := repliesIn(ts, f, args[1]); got != want {
			ts.Fatalf("converge replied %d time(s) in the thread %q, want %d", got, args[1], want)
		}
	case "last-reply":
		usage(3, "SUBSTR WORD")
		checkLastReply(ts, f, args[1], args[2])
	case "never-addressed":
		usage(2, "SUBSTR")
		checkNeverAddressed(ts, f, args[1])
	case "no-reply-says":
		usage(2, "WORD")
		checkNoReplySays(ts, neg, f, args[1])
		negatable = true
	case "merge-state":
		usage(2, "STATE")
		checkMergeState(ts, f, args[1])
	case "verdict":
		usage(3, "LABEL STATE")
		checkVerdict(ts, f, args[1], args[2])
	case "proven":
		if len(args) > 2 || (len(args) == 2 && args[1] != "no-ci") {
			ts.Fatalf("usage: forge proven [no-ci]")
		}
		checkProven(ts, neg, f, len(args) == 2)
		negatable = true
	case "head-unchanged":
		usage(1, "")
		checkHeadUnchanged(ts, f)
	case "head-has":
		usage(3, "PATH SUBSTR")
		checkHeadHas(ts, neg, f, args[1], args[2])
		negatable = true
	case "head-lacks":
		usage(2, "PATH")
		checkHeadLacks(ts, f, args[1])
	case "head-diff-has":
		usage(2, "PATH")
		checkHeadDiffHas(ts, f, args[1])
	case "every-head-has":
		usage(3, "PATH SUBSTR")
		everyHeadHas(ts, f, args[1], args[2])
	case "writes-by":
		usage(3, "author|reviewer N")
		want, err := strconv.Atoi(args[2])
		ts.Check(err)
		if got := f.writes(args[1]); len(got) != want {
			ts.Fatalf("want %d write(s) by %s, the forge logged %d: %s", want, args[1], len(got), strings.Join(got, "; "))
		}
	default:
		ts.Fatalf("forge: unknown subcommand %q", args[0])
	}
	if neg && !negatable {
		ts.Fatalf("forge %s cannot be negated", args[0])
	}
}

func startScriptForge(ts *testscript.TestScript, neg bool, args []string) {
	if neg {
		ts.Fatalf("forge start cannot be negated")
	}
	opts := forgeStart{BotDelay: 100 * time.Millisecond}
	for _, a := range args {
		if a == "no-ci" {
			opts.NoCI = true
			continue
		}
		d, err := time.ParseDuration(a)
		if err != nil {
			ts.Fatalf("usage: forge start [DELAY] [no-ci]: %v", err)
		}
		opts.BotDelay = d
	}
	kind := forge.Kind(ts.Getenv(forgeKindKey))
	start, ok := scriptForges[kind]
	if !ok {
		ts.Fatalf("forge start: no emulator for forge %q", kind)
	}
	f := start(ts, opts)
	scriptForgeOf.Store(ts, f)
	ts.Defer(func() { scriptForgeOf.Delete(ts) })
	ts.Setenv("BOT", f.bot())
	ts.Setenv("REPLY_WRITTEN", f.replyWritten())
}

// hubForge is the table's GitHub: the `hub` command's emulator
// (scriptHub), whose moves and reads it reuses.
type hubForge struct{ *scriptHub }

func startHubForge(ts *testscript.TestScript, opts forgeStart) scriptForge {
	var args []string
	if opts.BotDelay > 0 {
		args = append(args, opts.BotDelay.String())
	}
	if opts.NoCI {
		args = append(args, "no-ci")
	}
	startScriptHub(ts, args)
	v, _ := scriptHubs.Load(ts)
	return hubForge{v.(*scriptHub)}
}

func (h hubForge) bot() string { return "copilot" }

// replyWritten: converge's GitHub client batches its replies in one
// aliased mutation, BatchReply (internal/forge/github/batch.go).
func (h hubForge) replyWritten() string { return "forge graphql BatchReply: after" }

func (h hubForge) writes(actor string) []string {
	var out []string
	for _, w := range h.writesBy(actor) {
		out = append(out, fmt.Sprintf("%+v", w))
	}
	return out
}

func (h hubForge) await(ts *testscript.TestScript, event string) {
	kind, ok := map[string]string{"bot-started": "copilot_started"}[event]
	if !ok {
		ts.Fatalf("forge await: unknown event %q (bot-started)", event)
	}
	h.scriptHub.await(ts, kind)
}

func (h hubForge) reviewThread(ts *testscript.TestScript, path string, line int, body string) {
	h.threadAs(ts, h.hub.Tokens().Reviewer, path, line, body)
}

// setResolved: the reviewer (un)resolves the thread through converge's
// own GitHub client, as hub resolve-thread-as does.
func (h hubForge) setResolved(ts *testscript.TestScript, threadID string, resolved bool) {
	c, err := ghclient.New(ghclient.Options{APIURL: h.hub.APIURL(), GraphQLURL: h.hub.GraphQLURL(), Token: h.hub.Tokens().Reviewer, CAFile: h.hub.CAFile()})
	ts.Check(err)
	ref, err := forge.ParsePRURL(h.demo.PRURL)
	ts.Check(err)
	if resolved {
		ts.Check(c.ResolveThread(context.Background(), ref, threadID))
		return
	}
	ts.Check(c.UnresolveThread(context.Background(), ref, threadID))
}

func (h hubForge) botRound(ts *testscript.TestScript, n int, opts []string) {
	h.copilotRound(ts, n, opts)
}

// rateLimits: GitHub's primary limit (fakehub.FaultPrimary), which the
// emulator answers on GraphQL in today's shape and the older one in turn.
func (h hubForge) rateLimits(_ *testscript.TestScript, seed int64, rate float64) {
	h.hub.SetFaults(fakehub.Faults{Seed: seed, Rate: rate, Kinds: []fakehub.FaultKind{fakehub.FaultPrimary},
		Logins: []string{fakehub.LoginAuthor}, ResetIn: time.Second})
}

// rateLimitsMet: the GraphQL answers of type RATE_LIMIT (fakehub answers
// a drawn primary limit so on every even draw, RATE_LIMITED on odd ones).
func (h hubForge) rateLimitsMet() []string {
	var out []string
	for _, hit := range h.hub.FaultHits() {
		if hit.Kind == fakehub.FaultPrimary && strings.HasPrefix(hit.Path, "/api/graphql") && hit.N%2 == 0 {
			out = append(out, hit.String())
		}
	}
	return out
}

// TestPR_T1_ScenarioTableOnBothForges runs the scenario table
// (testdata/bothforges) once per forge: the same rows, the same command
// lines, the same checks at the forge (issue 21).
func TestPR_T1_ScenarioTableOnBothForges(t *testing.T) {
	t.Parallel() // each script has its own emulator and work directory
	kinds := []forge.Kind{forge.GitHub, forge.GitLab}
	for _, kind := range kinds {
		name := string(kind)
		if kind == forge.GitHub {
			name = "github" // forge.GitHub is the zero value
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if _, ok := scriptForges[kind]; !ok {
				var have []string
				for k := range scriptForges {
					have = append(have, fmt.Sprintf("%q", k))
				}
				sort.Strings(have)
				t.Skipf("no %s emulator adapter is registered in scriptForges yet (have %s): the table runs on GitHub only until the GitLab adapter lands", name, strings.Join(have, ", "))
			}
			testscript.Run(t, testscript.Params{
				Dir:  "testdata/bothforges",
				Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){"forge": cmdForge},
				Setup: func(env *testscript.Env) error {
					if err := scriptSetup(env); err != nil {
						return err
					}
					env.Setenv(forgeKindKey, string(kind))
					return nil
				},
			})
		})
	}
}
