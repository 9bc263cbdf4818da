// Package review is the local multi-angle review (PR-S4): independent agent
// runs, one per angle, over git diff base...head, each answering with a JSON
// array of findings read fail-closed; the summary comment of a round; and a
// cache of results per head.
//
// The contract with a review agent: the agent gets an agent.Task of kind
// agent.TaskKindReview and ends its final message (for subprocess backends,
// stdout) with one line holding a JSON array (see ParseAnswer). Its record's
// Status tells whether the process itself ended normally: anything but
// agent.StatusComplete without a parseable array is an agent that could not
// run (AG-T4), retried once and then an *agent.RunFailure, never a finding.
package review

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/convergeloop/converge/internal/agent"
	"github.com/convergeloop/converge/internal/repo"
)

// Verdicts of a finding.
const (
	VerdictStructural = "structural"
	VerdictMinor      = "minor"
)

// Angle is one point of view the review takes.
type Angle struct {
	Name  string // e.g. correctness-leak
	Focus string // what the angle looks for, told to the agent
}

// DefaultAngles are the angles of PR-S4 when none are configured.
func DefaultAngles() []Angle {
	return []Angle{
		{Name: "correctness-leak", Focus: "Correctness and leaks: logic that gives wrong results or mishandles errors, " +
			"and resources, goroutines, locks, secrets or data that leak or are never released."},
		{Name: "edge-cases", Focus: "Edge cases: empty, nil, zero, negative, very large, malformed, concurrent or " +
			"repeated inputs and states that the change does not handle."},
		{Name: "test-quality", Focus: "Test quality: whether the change is tested at all, whether the tests would fail " +
			"if the code were wrong, and tests that are flaky, tautological or assert the wrong outcome."},
	}
}

// DefaultAngleNames is DefaultAngles as a flag value.
func DefaultAngleNames() string {
	var names []string
	for _, a := range DefaultAngles() {
		names = append(names, a.Name)
	}
	return strings.Join(names, ",")
}

// angleName keeps names usable in finding ids, cache keys and the summary
// without escaping.
var angleName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// ParseAngles reads a comma-separated list of angle names (a flag value).
// A built-in angle (a default one, or one an escalated review adds) keeps
// its focus; any other name gets a focus that just names it, so a user
// can add a point of view without writing a prompt.
func ParseAngles(s string) ([]Angle, error) {
	known := map[string]Angle{}
	for _, a := range append(DefaultAngles(), EscalationAngles()...) {
		known[a.Name] = a
	}
	var out []Angle
	seen := map[string]bool{}
	for part := range strings.SplitSeq(s, ",") {
		name := strings.TrimSpace(part)
		if name == "" {
			return nil, fmt.Errorf("review angles %q: empty angle name", s)
		}
		if !angleName.MatchString(name) {
			return nil, fmt.Errorf("review angle %q: use letters, digits, '.', '_' and '-' (at most 64)", name)
		}
		if seen[name] {
			return nil, fmt.Errorf("review angle %q is listed twice", name)
		}
		seen[name] = true
		a, ok := known[name]
		if !ok {
			a = Angle{Name: name, Focus: fmt.Sprintf("Review the change from the angle %q: find what is wrong with it from that point of view.", name)}
		}
		out = append(out, a)
	}
	return out, nil
}

// Finding is one point an angle raised.
type Finding struct {
	Angle     string `json:"angle"`
	File      string `json:"file"`
	StartLine int    `json:"start_line"`
	EndLine   int    `json:"end_line"`
	Summary   string `json:"summary"`
	Verdict   string `json:"verdict"` // structural | minor
}

// AngleResult is what one angle's run produced.
type AngleResult struct {
	Angle    string    `json:"angle"`
	Parsed   bool      `json:"parsed"` // the output held a valid JSON array
	Findings []Finding `json:"findings,omitempty"`
	// Why says what was wrong with an answer that was not parsed.
	Why string `json:"why,omitempty"`
}

// Result is one whole local review of a head.
type Result struct {
	Head   string        `json:"head"`
	Agent  string        `json:"agent,omitempty"`
	Angles []AngleResult `json:"angles"`
	// Findings of every angle; an unparsed angle adds one structural
	// "review could not be parsed" finding without a file.
	Findings []Finding `json:"findings,omitempty"`
	Degraded bool      `json:"degraded"` // some angle was not parsed
	// Escalated is the review's escalation level (PR-S4): 0 for the
	// configured review; Model the model its angles ran on, "" the
	// agent's own.
	Escalated int    `json:"escalated,omitempty"`
	Model     string `json:"model,omitempty"`
	Cached    bool   `json:"-"`
	// Usage is what the angles' runs reported consuming (PR-M5), every
	// attempt counted; a cached result cost nothing this time.
	Usage agent.Usage `json:"-"`
}

// Structural counts the structural findings.
func (r Result) Structural() int {
	n := 0
	for _, f := range r.Findings {
		if f.Verdict != VerdictMinor {
			n++
		}
	}
	return n
}

// Clean: at least one angle ran, every angle answered, and none found
// anything. A zero Result is not clean: no review is never a clean one.
func (r Result) Clean() bool {
	if len(r.Angles) == 0 || r.Degraded || len(r.Findings) > 0 {
		return false
	}
	for _, a := range r.Angles {
		if !a.Parsed {
			return false
		}
	}
	return true
}

// Input is what a review looks at.
type Input struct {
	Workdir      string // a worktree checked out at Head
	BaseRef      string // the ref to diff against, e.g. origin/main
	Head         string
	Instructions string // the repo's review instructions, if any (data)
	Round        int
	RunID        string
	// GitEnv is the environment for the git diff (not for agents); nil
	// runs git with this process's environment.
	GitEnv []string
}

// Reviewer runs the angles through an agent.
type Reviewer struct {
	Agent    agent.Agent
	Angles   []Angle // nil means DefaultAngles
	Budget   time.Duration
	Env      []string
	CacheDir string // results per head are cached here when set
	// InstructionsPath is the repository's shared review instructions,
	// relative to its root; empty means .github/review-instructions.md.
	InstructionsPath string
	// AgentID tells apart, in the cache key, configurations of one
	// backend (a command agent's command line, say); empty means the
	// agent's name alone.
	AgentID string
	// MaxParallel bounds the angles running at once; zero runs them all
	// at once, as each is mostly waiting on a model.
	MaxParallel int
	// Model is the model every angle runs on (agent.Task.Model); "" is
	// the agent's own. Escalate sets it from Escalation.Models.
	Model string
	// Escalation is how a review looks harder after rounds whose review
	// found structural items (PR-S4); see Escalate.
	Escalation Escalation
	// level is the escalation Escalate gave this reviewer.
	level int
}

// CanReview reports whether a can run review tasks. A backend says it
// cannot with a CanReview() bool method; the built-in suggest backend
// only applies suggested changes and has no judgement to review with.
func CanReview(a agent.Agent) bool {
	if a == nil {
		return false
	}
	if c, ok := a.(interface{ CanReview() bool }); ok {
		return c.CanReview()
	}
	return true
}

// UnparsedSummary is the finding an angle without a usable answer adds.
func UnparsedSummary(angle string) string {
	return fmt.Sprintf("review could not be parsed (angle %s)", angle)
}

// Review runs every angle on in.Head as a separate agent run, in parallel.
// An angle whose answer cannot be parsed is a structural finding and makes
// the result degraded; an agent that cannot run at all is retried once and
// then an *agent.RunFailure (AG-T4).
func (r *Reviewer) Review(ctx context.Context, in Input) (Result, error) {
	if r.Agent == nil {
		return Result{}, errors.New("local review: no review agent configured")
	}
	if !CanReview(r.Agent) {
		return Result{}, fmt.Errorf("local review: agent %s cannot review", r.Agent.Name())
	}
	if in.Head == "" || in.BaseRef == "" || in.Workdir == "" {
		return Result{}, errors.New("local review: workdir, base ref and head are required")
	}
	angles := r.Angles
	if len(angles) == 0 {
		angles = DefaultAngles()
	}
	if err := checkAngles(angles); err != nil {
		return Result{}, err
	}

	key := r.cacheKey(in, angles)
	if res, ok := r.loadCache(key, in.Head); ok {
		res.Cached = true
		return res, nil
	}

	g := &repo.Git{Dir: in.Workdir, Env: in.GitEnv}
	diff, err := g.Run(ctx, "diff", "--no-color", "--no-ext-diff", "--find-renames", in.BaseRef+"..."+in.Head, "--")
	if err != nil {
		return Result{}, fmt.Errorf("local review: diff %s...%s: %w", in.BaseRef, in.Head, err)
	}

	results, usage, err := r.runAngles(ctx, in, angles, diff)
	if err != nil {
		return Result{}, err
	}
	res := assemble(in.Head, r.Agent.Name(), results)
	res.Usage, res.Escalated, res.Model = usage, r.level, r.Model
	if !res.Degraded {
		// A failed write only costs a re-review of this head later.
		_ = r.storeCache(key, res)
	}
	return res, nil
}

func checkAngles(angles []Angle) error {
	seen := map[string]bool{}
	for _, a := range angles {
		if !angleName.MatchString(a.Name) {
			return fmt.Errorf("local review: bad angle name %q", a.Name)
		}
		if seen[a.Name] {
			return fmt.Errorf("local review: angle %q configured twice", a.Name)
		}
		seen[a.Name] = true
	}
	return nil
}

func (r *Reviewer) runAngles(ctx context.Context, in Input, angles []Angle, diff string) ([]AngleResult, agent.Usage, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	par := r.MaxParallel
	if par <= 0 || par > len(angles) {
		par = len(angles)
	}
	sem := make(chan struct{}, par)
	results := make([]AngleResult, len(angles))
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		firstErr error
		usage    agent.Usage
	)
	for i, a := range angles {
		wg.Go(func() {
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				return
			}
			defer func() { <-sem }()
			ar, u, err := r.runAngle(ctx, in, a, diff)
			mu.Lock()
			defer mu.Unlock()
			usage.Add(u)
			if err != nil {
				if firstErr == nil {
					firstErr = err
				}
				// One angle that cannot run fails the review: the others
				// would be spent on a result nobody uses.
				cancel(err)
				return
			}
			results[i] = ar
		})
	}
	wg.Wait()
	if firstErr != nil {
		return nil, usage, firstErr
	}
	if err := context.Cause(ctx); err != nil {
		return nil, usage, err
	}
	return results, usage, nil
}

// runAngle runs one angle, extended as AG-T1 allows when the agent ended
// partial with a concrete next action, and once more when it could not run.
// The usage is every run's, the failed ones too.
func (r *Reviewer) runAngle(ctx context.Context, in Input, a Angle, diff string) (AngleResult, agent.Usage, error) {
	t := agent.Task{
		Kind:         agent.TaskKindReview,
		RunID:        in.RunID,
		Round:        in.Round,
		Workdir:      in.Workdir,
		Angle:        a.Name,
		AngleFocus:   a.Focus,
		Diff:         diff,
		BaseRef:      in.BaseRef,
		HeadSHA:      in.Head,
		Instructions: in.Instructions,
		Budget:       r.Budget,
		Env:          r.Env,
		Model:        r.Model,
	}
	var what, stderr string
	var usage agent.Usage
	var cli *agent.CLIError
	for attempt := 1; attempt <= 2; {
		res, err := r.Agent.Run(ctx, t)
		usage.AddRun(res.Usage)
		if cerr := context.Cause(ctx); cerr != nil {
			return AngleResult{}, usage, cerr
		}
		cli = nil
		if errors.As(err, &cli) && cli.Kind != agent.FailCLI {
			// Its credentials or its endpoint: another run cannot mend
			// that (AG-T4), and the CLI's words are the error.
			return AngleResult{}, usage, &agent.RunFailure{Agent: r.Agent.Name(),
				What: fmt.Sprintf("review angle %s: %s", a.Name, cli.Error()), Stderr: res.Stderr, CLI: cli}
		}
		if err == nil {
			ar := ParseAnswer(a.Name, res.Output)
			if ar.Parsed || res.Record.Status == agent.StatusComplete {
				return ar, usage, nil
			}
			// Partial with a concrete next action: more time, which is
			// not a retry (AG-T1).
			if next, ok := t.Extended(res.Record); ok {
				t = next
				continue
			}
			what = ranBadly(res.Record)
		} else {
			what = err.Error()
		}
		stderr = res.Stderr
		attempt++
	}
	return AngleResult{}, usage, &agent.RunFailure{
		Agent:  r.Agent.Name(),
		What:   fmt.Sprintf("review angle %s: %s (tried twice)", a.Name, what),
		Stderr: stderr,
		CLI:    cli,
	}
}

func ranBadly(rec agent.StatusRecord) string {
	why := strings.TrimSpace(rec.Summary)
	if why == "" {
		why = strings.TrimSpace(rec.Reason)
	}
	if why == "" {
		why = "did not end normally"
	}
	return why + ", without a review array"
}

// assemble flattens the angles' findings, one structural finding for each
// angle without a usable answer.
func assemble(head, agentName string, angles []AngleResult) Result {
	res := Result{Head: head, Agent: agentName, Angles: angles}
	for _, ar := range angles {
		if !ar.Parsed {
			res.Degraded = true
			res.Findings = append(res.Findings, Finding{Angle: ar.Angle, Summary: UnparsedSummary(ar.Angle), Verdict: VerdictStructural})
			continue
		}
		res.Findings = append(res.Findings, ar.Findings...)
	}
	return res
}
