package cli

import (
	"cmp"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/convergeloop/converge/internal/agent"
	"github.com/convergeloop/converge/internal/agent/backends"
	"github.com/convergeloop/converge/internal/classify"
	"github.com/convergeloop/converge/internal/cmdutil"
	"github.com/convergeloop/converge/internal/engine"
	"github.com/convergeloop/converge/internal/exitcode"
	"github.com/convergeloop/converge/internal/forge"
	"github.com/convergeloop/converge/internal/prloop"
	"github.com/convergeloop/converge/internal/prwork"
	"github.com/convergeloop/converge/internal/recap"
	"github.com/convergeloop/converge/internal/repo"
	"github.com/convergeloop/converge/internal/review"
	"github.com/convergeloop/converge/internal/secure"
	"github.com/convergeloop/converge/internal/store"
	"github.com/convergeloop/converge/internal/text"
	"github.com/convergeloop/converge/internal/verify"
)

// loopParams is everything one PR loop run needs, however it was started
// (`converge pr` or `converge demo`).
type loopParams struct {
	// factory opens the run's store; nil: the real one.
	factory *cmdutil.Factory
	// preCharges are the forge calls pre-flight made before the run had
	// an id; its meter records them first.
	preCharges *chargeLog
	Ref        forge.PRRef
	Forge      forge.Forge
	CloneURL   string
	GitEnv     []string
	// Remote, when set, replaces CloneURL and GitEnv with what it makes
	// of the clone URL the pre-flight observation reports (SEC-6).
	Remote func(reported string) (cloneURL string, gitEnv []string, err error)
	// GitToken, when set, is the token git asks for as each fetch and
	// push starts (a GitHub App's, SEC-5); preflight makes GitCred of it.
	GitToken func(ctx context.Context, refused string) (string, error)
	GitCred  *repo.Credential
	// Minted are the secrets minted as the run goes (a GitHub App's
	// tokens), redacted as they come (SEC-3); Secrets are the fixed ones.
	Minted   *secure.Secrets
	StateDir string // holds converge.db and work/
	Agent    agent.Agent
	// Judge decides the recap gate (PR-G2); nil: recaps hand off.
	Judge *recap.Judge
	// Reviewer runs the local multi-angle review (PR-S4); nil when the
	// review agent cannot review.
	Reviewer *review.Reviewer
	TestCmd  []string
	Config   prloop.Config
	PollMin  time.Duration
	PollMax  time.Duration
	Wake     <-chan struct{}
	JSON     bool
	Keep     bool
	Secrets  []string
	Author   string
	Email    string

	// NoReviewWhy says why a run has no local review (Reviewer nil), for
	// its note (empty: Agent cannot review).
	NoReviewWhy string

	// Configure, when set, makes the loop's settings once the PR is
	// observed (its base branch's config file, PR-M4).
	Configure func(ctx context.Context, p *loopParams, pr *forge.PullRequest) error
	// selfLogin is the token's login, found by pre-flight; headBranch
	// and baseBranch are the PR's branches as pre-flight saw them.
	selfLogin              string
	headBranch, baseBranch string

	// DryRun writes nothing (PR-M1); its run is recorded apart from the
	// PR's real runs and never resumed.
	DryRun bool
	// DisposeOnly replies to and resolves open threads once (PR-M2); its
	// run is recorded apart, and refused while a loop runs on the PR.
	DisposeOnly bool
	// Fresh starts a new run even when an unfinished one could resume.
	Fresh bool
	// TakeOver drives the PR although another converge's live lease is on
	// its head; heldBy is that lease, as pre-flight read it (PR-T14).
	TakeOver bool
	heldBy   *prloop.Lease
	// Watch keeps the PR after its run ends: a change to it starts a new
	// run, which retracts a verdict whose facts broke (PR-T14).
	Watch bool
	// FaultBudget bounds how long forge faults are ridden out (REL-1).
	FaultBudget time.Duration

	// AllowUntested pushes fixes with no test command found (PR-V4).
	AllowUntested bool
	// Proof is how structural fixes are proven (PR-V7): red-green or
	// lines.
	Proof string

	// AgentBudget and TestBudget time-box each agent and build/test run
	// (AG-T1, AG-T5); zero means the defaults.
	AgentBudget time.Duration
	TestBudget  time.Duration
	// Bounds are what one round may push (PR-V3); zero fields are the
	// defaults, below zero no bound.
	Bounds verify.Bounds
	// MaxFixers bounds the fixers of a round that run at once (AG-P1);
	// AgentModels is the fixer's model escalation ladder (AG-E1).
	MaxFixers   int
	AgentModels []string

	// AgentEnv is the environment every agent run starts from; nil means
	// the process's, scrubbed (agent.ScrubEnv).
	AgentEnv []string
	// Checker checks that the run's CLI agents reach their models before
	// anything is written or recorded (AG-T4); nil: no check.
	Checker *cmdutil.AgentChecker
	// agentChecks are the run's CLI backends, set with its settings.
	agentChecks []cmdutil.CheckTarget
}

// runLoop runs one PR loop to its terminal: lock, record, run, persist,
// print the proof. The returned error carries the terminal's exit code.
func runLoop(ctx context.Context, ios *cmdutil.IOStreams, p loopParams) (*prloop.Terminal, error) {
	terms, err := runLoops(ctx, ios, []loopParams{p})
	return terms[0], err
}

// runLoops runs several PR loops at once in this process through one
// engine.Manager: one store, their forge clients and the clone cache
// shared (the clones under the state directory). Every PR passes
// pre-flight before any run is recorded. The error carries the exit code
// of the first PR, in the order given, that did not end two-stable.
func runLoops(ctx context.Context, ios *cmdutil.IOStreams, ps []loopParams) ([]*prloop.Terminal, error) {
	terms := make([]*prloop.Terminal, len(ps))
	for i := range ps {
		if err := preflight(ctx, &ps[i]); err != nil {
			return terms, err
		}
		// A disposal runs no agent.
		if p := &ps[i]; p.Checker != nil && !p.DisposeOnly {
			if err := p.Checker.Check(ctx, p.agentChecks, p.agentEnv()); err != nil {
				return terms, err
			}
		}
	}
	var secrets []string
	forges := map[string]forge.Forge{}
	for _, p := range ps {
		secrets = append(secrets, p.Secrets...)
		forges[p.Ref.Host] = p.Forge
	}
	db, err := ps[0].factory.OrDefault(ios).OpenStore(ctx, ps[0].StateDir, storeSecrets(secrets, ps)...)
	if err != nil {
		return terms, err
	}
	defer db.Close()
	m := engine.NewManager(engine.Config{
		Store: db, WorkDir: filepath.Join(ps[0].StateDir, "work"), Forges: forges,
		CodeOf: cmdutil.ExitCodeOf, Stop: stopOnInterrupt(ctx),
	})
	var shared *sync.Mutex
	if len(ps) > 1 {
		// One run's terminal and proof print as one block; each line
		// names its PR.
		shared = new(sync.Mutex)
	}
	jobs := make([]*prJob, len(ps))
	runs := make([]*engine.Handle, len(ps))
	for i, p := range ps {
		jobs[i] = newPRJob(ios, db, m.WorkDir(), p, shared)
		if runs[i], err = m.Add(ctx, engine.NewSpec(jobs[i])); err != nil {
			return terms, err
		}
	}
	outcomes := make([]engine.Outcome, len(ps))
	var wg sync.WaitGroup
	for i := range ps {
		wg.Go(func() {
			jobs[i], outcomes[i] = watchPR(ctx, ios, m, db, ps[i], shared, jobs[i], runs[i])
		})
	}
	wg.Wait()
	m.Wait()
	var first error
	for i, o := range outcomes {
		terms[i] = jobs[i].term
		if o.Err != nil && first == nil {
			first = o.Err
		}
	}
	if len(ps) > 1 && first != nil {
		// Each run's own error was printed with its PR.
		return terms, &cmdutil.SilentExit{Code: cmdutil.ExitCodeOf(first)}
	}
	return terms, first
}

// preflight fails bad input before anything is recorded: the token must
// work and the PR must exist. It fixes the loop's identity and clone URL.
func preflight(ctx context.Context, p *loopParams) error {
	// Its calls are the run's too, though it has no id yet: kept, and
	// recorded first by the run's meter (forgespend.go).
	if p.preCharges == nil {
		p.preCharges = &chargeLog{}
	}
	ctx = forge.WithMeter(ctx, p.preCharges)
	var self string
	err := rideOutAtStart(ctx, p, func() (err error) {
		self, err = p.Forge.Viewer(ctx)
		return err
	})
	if err != nil {
		return err
	}
	var pre *forge.PullRequest
	err = rideOutAtStart(ctx, p, func() (err error) {
		pre, err = p.Forge.Observe(ctx, p.Ref)
		return err
	})
	if err != nil {
		if forge.KindOf(err) == forge.KindNotFound {
			return cmdutil.UsageErr("no pull request %d in %s on %s visible to %s; check the PR URL", p.Ref.Number, p.Ref.FullName(), p.Ref.Host, self)
		}
		return err
	}
	if err := rideOutAtStart(ctx, p, func() error { return canPushToHead(ctx, p.Forge, pre, self) }); err != nil && !p.DryRun && !p.DisposeOnly {
		return err
	}
	if p.Remote != nil {
		if p.CloneURL, p.GitEnv, err = p.Remote(pre.CloneURL); err != nil {
			return err
		}
	}
	if p.GitCred, err = gitCredential(p.CloneURL, p.GitToken); err != nil {
		return err
	}
	p.Config.Self, p.selfLogin = self, self
	p.headBranch, p.baseBranch = pre.HeadRef, pre.BaseRef
	p.heldBy = nil
	if l, ok := prloop.HeadLease(pre); ok && l.Live(forgeNow(pre)) {
		p.heldBy = &l
	}
	if p.Configure != nil {
		return p.Configure(ctx, p, pre)
	}
	return nil
}

// storeSecrets are the store's redactions (SEC-3): the fixed secrets,
// and each set that grows as tokens are minted, read at every write.
func storeSecrets(fixed []string, ps []loopParams) []store.Option {
	opts := []store.Option{store.WithSecrets(fixed...)}
	var seen []*secure.Secrets
	for _, p := range ps {
		if p.Minted != nil && !slices.Contains(seen, p.Minted) {
			seen = append(seen, p.Minted)
			opts = append(opts, store.WithRedactor(p.Minted.Redact))
		}
	}
	return opts
}

// rideOutAtStart calls read until it ends other than in a transient
// forge fault, backing off between tries, for as long as the run's fault
// budget allows: a fault at start is ridden out as the loop rides out
// one mid-run (REL-1), not an exit before anything is recorded.
func rideOutAtStart(ctx context.Context, p *loopParams, read func() error) error {
	budget := cmp.Or(p.FaultBudget, engine.DefaultFaultBudget)
	wait := max(p.PollMin, 50*time.Millisecond)
	var since time.Time
	for {
		err := read()
		if err == nil || !prloop.Transient(err) || neverReached(err) {
			return err
		}
		if since.IsZero() {
			since = time.Now()
		}
		if time.Since(since)+wait > budget {
			return err
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
		wait = min(2*wait, max(p.PollMax, wait))
	}
}

// neverReached reports a failure to reach the forge at all (no such
// host, nothing listening, a certificate not trusted): at start that is a
// wrong URL or CA far more often than an outage, so it fails at once
// (exit 7) rather than after the fault budget.
func neverReached(err error) bool {
	var dns *net.DNSError
	var op *net.OpError
	var cert *tls.CertificateVerificationError
	var authority x509.UnknownAuthorityError
	var hostname x509.HostnameError
	return errors.As(err, &dns) || (errors.As(err, &op) && op.Op == "dial") ||
		errors.As(err, &cert) || errors.As(err, &authority) || errors.As(err, &hostname)
}

func (p *loopParams) agentEnv() []string {
	if p.AgentEnv != nil {
		return p.AgentEnv
	}
	return agent.ScrubEnv(os.Environ())
}

// canPushToHead refuses, at start, a PR from a fork the token cannot push
// to (PR-G5): converge's fixes are commits on the PR's branch, and a run
// that learns in round one that its push is refused has already written
// to the PR.
func canPushToHead(ctx context.Context, f forge.Forge, pr *forge.PullRequest, self string) error {
	if !pr.CrossRepo {
		return nil
	}
	owner, name, ok := strings.Cut(pr.HeadRepo, "/")
	if !ok {
		return cmdutil.UsageErr("%s comes from a fork converge cannot name (head repository %q); run converge where the branch lives", pr.Ref, pr.HeadRepo)
	}
	perm, err := f.Permission(ctx, forge.PRRef{Host: pr.Ref.Host, Owner: owner, Repo: name, Number: pr.Number}, self)
	if err != nil && forge.KindOf(err) != forge.KindNotFound {
		return fmt.Errorf("permission on the fork %s: %w", pr.HeadRepo, err)
	}
	if err != nil || !perm.CanWrite() {
		return cmdutil.UsageErr("%s comes from the fork %s, which %s cannot push to: converge pushes its fixes to the PR's branch; use a token that can push to %s (--dry-run and --dispose-only still work)", pr.Ref, pr.HeadRepo, self, pr.HeadRepo)
	}
	return nil
}

// prJob is the PR loop's engine.Adapter: one PR, its run's lifecycle
// the Manager's. With several loops in one process shared is the lock
// their terminals print under, and each line names its PR.
type prJob struct {
	prloop.Adapter
	ios     *cmdutil.IOStreams
	db      *store.Store
	workDir string
	p       loopParams
	shared  *sync.Mutex

	// Set as the run goes.
	runID string
	out   *reporter
	ws    *prwork.GitWorkspace
	loop  *prloop.Loop
	term  *prloop.Terminal
}

var _ engine.Adapter[prloop.State] = (*prJob)(nil)

func newPRJob(ios *cmdutil.IOStreams, db *store.Store, workDir string, p loopParams, shared *sync.Mutex) *prJob {
	j := &prJob{ios: ios, db: db, workDir: workDir, p: p, shared: shared, Adapter: prloop.Adapter{TargetName: p.Ref.String(), KindName: "pr"}}
	if p.DryRun {
		// Its journal holds nothing done: a real run must never resume it.
		j.TargetName, j.KindName, j.p.Fresh = j.TargetName+"#dry-run", "pr-dry-run", true
	}
	if p.DisposeOnly {
		j.TargetName, j.KindName, j.p.Fresh = j.TargetName+"#dispose", "pr-dispose", true
	}
	return j
}

func (j *prJob) Fresh() bool { return j.p.Fresh }

// Progress is on the PR's branches as its pre-flight read them.
func (j *prJob) Progress(st prloop.State) engine.Progress {
	return prloop.ProgressOf(st, j.p.headBranch, j.p.baseBranch)
}

// Refuse refuses a disposal while a loop runs on the PR: the loop
// disposes its threads itself (PR-M2).
func (j *prJob) Refuse(ctx context.Context, _ bool) error {
	if err := j.refuseHeld(ctx); err != nil {
		return err
	}
	if !j.p.DisposeOnly {
		return nil
	}
	pr := j.p.Ref.String()
	if holder, live, err := j.db.LockLive(ctx, pr); err != nil {
		return err
	} else if live {
		return cmdutil.UsageErr("a loop is running on %s (run %s) and disposes its threads itself; stop it first (converge stop %s)", pr, holder, holder)
	}
	return nil
}

func (j *prJob) Begin(ctx context.Context, claim *engine.Claim[prloop.State]) (prloop.State, error) {
	p := j.p
	runID := claim.RunID
	j.runID = runID
	initial := prloop.Initial(claim)

	out := newReporter(j.ios, p.JSON, j.db, runID)
	j.out = out
	if p.DisposeOnly {
		// stdout carries only the envelope.
		out.ios = &cmdutil.IOStreams{In: j.ios.In, Out: j.ios.ErrOut, ErrOut: j.ios.ErrOut, Getenv: j.ios.Getenv}
	}
	out.kind, out.target = j.KindName, j.TargetName
	if j.shared != nil {
		out.mu, out.label = j.shared, p.Ref.String()
	}
	if r := claim.Resumed; r != nil {
		out.Report(engine.Event{Kind: "start", Round: r.Round, Message: fmt.Sprintf("run %s on %s resumed at round %d (%s); --fresh starts a new run", runID, j.TargetName, r.Round, initial.Phase)})
	} else {
		out.Report(engine.Event{Kind: "start", Message: fmt.Sprintf("run %s on %s", runID, j.TargetName)})
	}
	reportOrphans(out, claim.Orphans)
	if p.Reviewer == nil && !p.DisposeOnly {
		// Pre-flight says it plainly (PR-S4): the forge's review bot is
		// the only independent review this run can have.
		bot := "the review bot"
		if p.Config.Bot != nil {
			bot = p.Config.Bot.Name()
		}
		out.Report(engine.Event{Kind: "note", Message: "no local review: " + cmp.Or(p.NoReviewWhy, "the "+p.Agent.Name()+" agent cannot review") + "; only a review of the head by " + bot + " can prove two-stable (--review-agent command adds one)"})
	}

	j.loop, j.ws = newPRLoop(p, j.workDir, runID, out, prloop.StoreJournal(j.db, runID))
	return initial, nil
}

// newPRLoop binds the PR loop of p to its workspace under workDir, as
// both engines run it: the local one (prJob) and a Temporal worker.
func newPRLoop(p loopParams, workDir, runID string, out engine.Reporter, journal prloop.Journal) (*prloop.Loop, *prwork.GitWorkspace) {
	ws := &prwork.GitWorkspace{
		Checkout: prwork.Checkout{
			Root:     workDir,
			RunID:    runID,
			CloneURL: p.CloneURL,
			GitEnv:   p.GitEnv,
			GitCred:  p.GitCred,
		},
		Agent:      p.Agent,
		Reviewer:   p.Reviewer,
		RecapJudge: p.Judge,
		AgentEnv:   p.agentEnv(),
		Budget:     p.AgentBudget,
		TestCmd:    p.TestCmd,
		Author:     p.Author,
		Email:      p.Email,
		Logf: func(format string, args ...any) {
			out.Report(engine.Event{Kind: "note", Message: fmt.Sprintf(format, args...)})
		},
		TestBudget: p.TestBudget,
		MaxFixers:  p.MaxFixers,
		Models:     p.AgentModels,
	}
	ws.AllowUntested = p.AllowUntested // PR-V4
	ws.Proof = p.Proof                 // PR-V7
	ws.Bounds = p.Bounds               // PR-V3
	// --keep keeps the worktree for a person to look at, even while the
	// loop waits (PR-G6).
	ws.KeepWorktree = p.Keep
	if p.Judge != nil && p.Judge.Agent != nil {
		// The judge agent also verifies each fix against its finding
		// (PR-V1(b)).
		ws.Verifier = p.Judge.Agent
	} else if p.Agent != nil && backends.Known(p.Agent.Name()) {
		// With no judge, an LLM fixer's backend, in a fresh context,
		// agrees to a structural fix no test shows (PR-V7(b)).
		ws.FreshVerifier = p.Agent
	}
	var classifier *classify.Judge
	if p.Judge != nil && p.Judge.Agent != nil {
		// The judge agent also decides the comments the classifier's
		// heuristic leaves borderline (PR-S5); without one they are
		// structural.
		classifier = &classify.Judge{Agent: p.Judge.Agent}
	}
	loop := prloop.NewLoop(p.Ref, prloop.Deps{
		Forge:         p.Forge,
		Workspace:     ws,
		Journal:       journal,
		Reporter:      out,
		Config:        p.Config,
		DryRun:        p.DryRun,
		DisposeOnly:   p.DisposeOnly,
		ClassifyJudge: classifier,
	})
	return loop, ws
}

func (j *prJob) Drive(ctx context.Context, st prloop.State, opt engine.Options) (prloop.State, error) {
	p := j.p
	opt.PollMin, opt.PollMax, opt.FaultBudget = p.PollMin, p.PollMax, p.FaultBudget
	if p.Wake != nil {
		// The caller's wake-ups (the demo's emulator) and the manager's.
		opt.Wake = mergeWake(ctx, opt.Wake, p.Wake)
	}
	// Every forge call of the run is kept at what the forge said it cost
	// (forgespend.go).
	ctx = withRunMeter(ctx, j.db, j.runID, p.Forge, p.Ref, p.selfLogin, func(err error) {
		j.out.Report(engine.Event{Kind: "note", Message: fmt.Sprintf("the run's forge spend is not recorded: %v", err)})
	}, p.preCharges.take()...)
	term, err := j.loop.Run(ctx, st, opt)
	if !p.Keep {
		_ = j.ws.Cleanup(context.WithoutCancel(ctx))
	}
	j.term, st.Terminal = term, term
	return st, err
}

// End prints the terminal and the proof, or the envelope of a disposal,
// and makes the run's error.
func (j *prJob) End(ctx context.Context, o engine.Outcome) error {
	err := j.end(o)
	if j.shared != nil && err != nil && cmdutil.ExitCodeOf(err) != exitcode.OK {
		var se *cmdutil.SilentExit
		if !errors.As(err, &se) {
			j.shared.Lock()
			fmt.Fprintf(j.ios.ErrOut, "converge: %s: %s\n", j.p.Ref, oneLine(err.Error()))
			j.shared.Unlock()
		}
	}
	return err
}

func (j *prJob) end(o engine.Outcome) error {
	var busy *engine.BusyError
	switch {
	case errors.As(o.Err, &busy):
		return cmdutil.UsageErr("%s; wait for it to end (converge status shows it)", busy.Error())
	case o.Status == engine.StatusRefused:
		return o.Err
	case o.Status == engine.StatusInterrupted:
		// Interrupted (Ctrl-C, SIGTERM): the run stays unfinished, with
		// its state, so the next `converge pr` resumes it (PR-G3).
		return fmt.Errorf("run %s interrupted; run converge pr again to resume it (--fresh starts over)", o.RunID)
	case j.term == nil:
		return fmt.Errorf("run %s: %w", o.RunID, o.Err)
	case o.RecordErr != nil:
		return o.RecordErr
	}
	term := j.term
	if j.shared != nil {
		j.shared.Lock()
		defer j.shared.Unlock()
	}
	if term.Disposal != nil {
		b, _ := json.Marshal(struct {
			Run string `json:"run"`
			PR  string `json:"pr"`
			*prloop.Disposal
		}{o.RunID, j.p.Ref.String(), term.Disposal})
		fmt.Fprintln(j.ios.Out, string(b))
	} else {
		printTerminal(j.ios, j.p.JSON, o.RunID, term)
		if !j.p.JSON && j.db != nil {
			if rows, err := j.db.RunForgeSpend(context.Background(), o.RunID); err == nil {
				writeForgeSpend(j.ios.Out, spendView(rows[o.RunID]))
			}
		}
	}
	if term.ExitCode != exitcode.OK {
		return &cmdutil.SilentExit{Code: term.ExitCode}
	}
	return nil
}

// mergeWake is one channel that a and b both wake, until ctx ends.
func mergeWake(ctx context.Context, a, b <-chan struct{}) <-chan struct{} {
	out := make(chan struct{}, 1)
	fwd := func(in <-chan struct{}) {
		for {
			select {
			case <-ctx.Done():
				return
			case _, ok := <-in:
				if !ok {
					return
				}
				select {
				case out <- struct{}{}:
				default:
				}
			}
		}
	}
	go fwd(a)
	go fwd(b)
	return out
}

// reporter prints progress (UX-1) and appends it to the run's event log.
type reporter struct {
	// mu is shared by the reporters of loops that print to one stream.
	mu *sync.Mutex
	// label, with several loops in one process, names the run's PR on
	// every line and NDJSON event.
	label string
	ios   *cmdutil.IOStreams
	json  bool
	db    *store.Store
	runID string
	// kind and target name the run in its NDJSON events.
	kind, target string
	line         *runLine // its status line on a terminal
}

func newReporter(ios *cmdutil.IOStreams, asJSON bool, db *store.Store, runID string) *reporter {
	return &reporter{mu: new(sync.Mutex), ios: ios, json: asJSON, db: db, runID: runID}
}

func (r *reporter) Report(e engine.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if e.Time.IsZero() {
		e.Time = time.Now()
	}
	var data json.RawMessage
	if e.Data != nil {
		data, _ = json.Marshal(e.Data)
	}
	if r.db != nil {
		_ = r.db.AppendEvent(context.Background(), r.runID, store.Event{Time: e.Time, Kind: e.Kind, Round: e.Round, Message: e.Message, Data: data})
	}
	if r.json {
		writeEvent(r.ios.Out, e, r.runID, r.kind, r.target, r.label)
		return
	}
	prefix := "       "
	if e.Round > 0 {
		prefix = fmt.Sprintf("round %d", e.Round)
	}
	line := fmt.Sprintf("%s  %-8s %s", prefix, e.Kind, e.Message)
	if r.label != "" {
		line = r.label + "  " + line
	}
	if r.line == nil {
		r.line = &runLine{db: r.db, runID: r.runID, label: cmp.Or(r.label, r.target)}
	}
	showEvent(r.ios, r.line, e, line)
}

// printTerminal prints the terminal and, at success, the proof (PR-T9).
func printTerminal(ios *cmdutil.IOStreams, asJSON bool, runID string, t *prloop.Terminal) {
	if asJSON {
		b, _ := json.Marshal(map[string]any{"kind": "result", "run": runID, "terminal": t})
		fmt.Fprintln(ios.Out, string(b))
		return
	}
	fmt.Fprintf(ios.Out, "\nconverge: %s (exit %d) — %s\n", t.Reason, t.ExitCode, t.Message)
	switch {
	case t.Proof != nil:
		printProof(ios, runID, t.Proof)
	case t.Usage != nil && t.Disposal == nil:
		writeUsage(ios.Out, prUsage(t.Usage))
	}
}

func printProof(ios *cmdutil.IOStreams, runID string, p *prloop.Proof) {
	none := func(xs []string) string {
		if len(xs) == 0 {
			return "none"
		}
		return strings.Join(xs, ", ")
	}
	w := ios.Out
	fmt.Fprintf(w, "proof (run %s)\n", runID)
	fmt.Fprintf(w, "  pr                           %s\n", p.PR)
	fmt.Fprintf(w, "  head                         %s\n", p.HeadSHA)
	fmt.Fprintf(w, "  reviewed commit              %s (%s at %s)\n", p.ReviewedCommit, p.Review(), p.ReviewedAt.UTC().Format(time.RFC3339))
	fmt.Fprintf(w, "  ci                           %s\n", p.CIState)
	fmt.Fprintf(w, "  merge state                  %s\n", p.MergeState)
	fmt.Fprintf(w, "  open threads awaiting reply  %d\n", p.OpenThreadsAwaitingReply)
	fmt.Fprintf(w, "  escalated threads            %s\n", none(p.EscalatedThreads))
	fmt.Fprintf(w, "  hand-offs                    %s\n", none(p.HandOffs))
	fmt.Fprintf(w, "  untrusted threads            %s\n", none(p.UntrustedThreads))
	fmt.Fprintf(w, "  rounds run                   %d\n", p.RoundsRun)
	if p.TestCensus != nil {
		fmt.Fprintf(w, "  test census                  %s\n", p.TestCensus.Census)
	}
	if len(p.RevertedRounds) > 0 {
		fmt.Fprintf(w, "  reverted rounds              %v\n", p.RevertedRounds)
	}
	for _, fp := range p.FindingProofs {
		fmt.Fprintf(w, "  proof of %-19s %s\n", fp.Thread, text.Clip(fp.Proof, 300))
	}
	for _, n := range p.Notes {
		fmt.Fprintf(w, "  note                         %s\n", n)
	}
	if p.Usage != nil {
		writeUsage(w, prUsage(p.Usage))
	}
}

// forgeNow is the forge's clock as an observation read it, else ours.
func forgeNow(pr *forge.PullRequest) time.Time {
	if !pr.ObservedAt.IsZero() {
		return pr.ObservedAt
	}
	return time.Now()
}

// refuseHeld refuses to drive a PR whose head carries a live lease of a
// run this state store does not know (another machine, another store),
// unless told to take over (PR-T14). A lease of a run of this store is
// settled by the store's own lock (ClaimRun): a dead run's lease is no
// hold, a live one's is a BusyError.
func (j *prJob) refuseHeld(ctx context.Context) error {
	l := j.p.heldBy
	if l == nil || j.p.TakeOver || j.p.DryRun {
		return nil
	}
	if _, err := j.db.GetRun(ctx, l.Run); err == nil {
		return nil
	}
	// Exit 2, as a PR a loop of this store holds (a BusyError).
	return &cmdutil.ExitErr{Code: exitcode.Usage, Err: &heldError{target: j.p.Ref.String(), lease: *l}}
}

// heldError is a PR another converge drives.
type heldError struct {
	target string
	lease  prloop.Lease
}

func (e *heldError) Error() string {
	return fmt.Sprintf("%s is driven by %s from another converge (another machine or state store); wait for it to end, stop it there, or take the pull request over with --take-over", e.target, e.lease)
}
