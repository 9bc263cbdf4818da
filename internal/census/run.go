package census

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/convergeloop/converge/internal/proc"
)

// Spec is a test command to run and count.
type Spec struct {
	Dir    string
	Argv   []string
	Env    []string      // the complete environment, as in exec.Cmd
	Budget time.Duration // the time-box; zero: none
	// MaxOutput is how much of the human-readable output Result keeps
	// (the tail); zero means proc.DefaultMaxOutput. The census itself is
	// read from the whole output, up to maxCensusOutput.
	MaxOutput int
}

// Result is one counted run.
type Result struct {
	// Output is the combined output as a reader of the plain command
	// expects it (go test's -json events turned back into text), the
	// tail kept, with a note of what was dropped.
	Output   string
	ExitCode int  // -1 when stopped or never run
	TimedOut bool // stopped at the budget: red, whatever it printed
	Duration time.Duration
	Census   Census
	// Argv is the command as run (with the reporting flags).
	Argv []string
}

// grace is as repo's commandGrace: a test runner stopped at its budget
// has time to say which test was running.
const grace = 5 * time.Second

// maxCensusOutput bounds the output read for a census: a run that prints
// more is not counted.
const maxCensusOutput = 256 << 20

// maxReport bounds the report file read for a census.
const maxReport = 256 << 20

// Run runs s.Argv as Detect plans it, in a process group under its
// time-box (internal/proc), and takes its census. Like repo.RunTimeBoxed,
// a command that runs and fails, or times out, is not an error; err
// reports a command that could not start, or ctx's end.
func Run(ctx context.Context, s Spec) (Result, error) {
	if len(s.Argv) == 0 {
		return Result{ExitCode: -1}, errors.New("run tests: empty argv")
	}
	reportDir, err := os.MkdirTemp("", "converge-census-")
	if err != nil {
		return Result{ExitCode: -1}, fmt.Errorf("run tests: report dir: %w", err)
	}
	defer os.RemoveAll(reportDir)
	plan := Detect(s.Dir, s.Argv, reportDir)
	env := s.Env
	if len(plan.Env) > 0 {
		if env == nil {
			env = os.Environ()
		}
		env = mergeEnv(env, plan.Env)
	}
	max := s.MaxOutput
	if max == 0 {
		max = proc.DefaultMaxOutput
	}
	capture := max
	if plan.Ecosystem != Unknown {
		capture = maxCensusOutput
	}
	p, err := proc.Run(ctx, proc.Spec{
		Argv: plan.Argv, Dir: s.Dir, Env: env,
		Budget: s.Budget, Grace: grace, MaxOutput: capture, Combined: true,
		// A contained run (SEC-7) writes its report where it is read.
		Writable: []string{reportDir},
	})
	r := Result{ExitCode: p.ExitCode, TimedOut: p.TimedOut, Duration: p.Duration, Argv: plan.Argv}
	human := p.Stdout
	switch {
	case err != nil:
		return r, err
	case p.Interrupted != nil:
		r.ExitCode = -1
		return r, fmt.Errorf("run %s: %w", plan.Argv[0], p.Interrupted)
	case p.TimedOut:
		r.ExitCode = -1
	case p.ExitCode < 0:
		return r, fmt.Errorf("run %s: killed by a signal", plan.Argv[0])
	}
	r.Census = unknown(plan.Ecosystem, plan.Why)
	if plan.Ecosystem != Unknown {
		human, r.Census = plan.read(p.Stdout)
		switch {
		case p.TimedOut:
			r.Census = unknown(plan.Ecosystem, "the tests timed out")
		case p.StdoutDropped > 0:
			r.Census = unknown(plan.Ecosystem, fmt.Sprintf("the output is over %d MiB", maxCensusOutput>>20))
		}
	}
	dropped := p.StdoutDropped
	if len(human) > max {
		dropped += int64(len(human) - max)
		human = human[len(human)-max:]
	}
	r.Output = proc.WithDropNote(human, dropped)
	return r, nil
}

// read takes the census of a finished run from its output and report.
func (p Plan) read(out string) (human string, c Census) {
	switch p.Ecosystem {
	case Go:
		return ParseGoTestJSON(out)
	case Cargo:
		return out, ParseCargoTest(out)
	}
	report, err := readReport(p.Report)
	if err != nil {
		return out, unknown(p.Ecosystem, err.Error())
	}
	switch p.Ecosystem {
	case Pytest:
		return out, ParseJUnit(Pytest, report)
	case Jest, Vitest:
		return out, ParseJSReport(p.Ecosystem, report, p.Dir)
	}
	return out, unknown(p.Ecosystem, "no reader")
}

func readReport(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, errors.New("the runner wrote no report")
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() {
		return nil, errors.New("the report is not a file")
	}
	if st.Size() > maxReport {
		return nil, fmt.Errorf("the report is over %d MiB", maxReport>>20)
	}
	b, err := io.ReadAll(io.LimitReader(f, maxReport+1))
	if err != nil || len(b) > maxReport {
		return nil, errors.New("the report cannot be read whole")
	}
	return b, nil
}

// mergeEnv adds vars to env; a variable env has gets the value appended.
func mergeEnv(env, vars []string) []string {
	out := append([]string(nil), env...)
	for _, v := range vars {
		k, val, _ := strings.Cut(v, "=")
		done := false
		for i, e := range out {
			if ek, ev, ok := strings.Cut(e, "="); ok && ek == k {
				if strings.TrimSpace(ev) != "" {
					out[i] = k + "=" + ev + " " + val
				} else {
					out[i] = v
				}
				done = true
			}
		}
		if !done {
			out = append(out, v)
		}
	}
	return out
}
