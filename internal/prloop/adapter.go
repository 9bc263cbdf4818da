package prloop

import "github.com/convergeloop/converge/internal/engine"

// Adapter is the part of a PR loop's engine.Adapter every driver of one
// shares — `converge pr` and serve (cli's prJob), the benches' loops —
// so none copies it: the run's kind and target, what resumes, its
// progress and its terminal. A driver embeds it and adds Fresh, Refuse,
// Begin (starting from Initial), Drive and End.
type Adapter struct {
	// KindName is the run's kind in the store: "pr", or a variant whose
	// journal a real run must never resume ("pr-dry-run").
	KindName string
	// TargetName is the run's target: the PR's URL, or a variant's.
	TargetName string
	// HeadBranch and BaseBranch are the PR's, for a webhook that names
	// only branches (engine.Progress); empty when not known yet.
	HeadBranch, BaseBranch string
}

// Kind is the run's kind; its errored status is ReasonErrored.
func (a Adapter) Kind() engine.Kind {
	return engine.Kind{Name: a.KindName, Errored: string(ReasonErrored)}
}

// Target is the run's target.
func (a Adapter) Target() string { return a.TargetName }

// Resumable reports whether an unfinished run in st is continued.
func (Adapter) Resumable(st State) bool { return Resumable(st) }

// Reopens: a run stopped by a signal or `converge stop` resumes (PR-G3).
func (Adapter) Reopens(st State) bool { return Reopens(st) }

// Progress is st as the engine shows it.
func (a Adapter) Progress(st State) engine.Progress {
	return ProgressOf(st, a.HeadBranch, a.BaseBranch)
}

// ProgressOf is st as the engine shows it, on the PR's head and base
// branches.
func ProgressOf(st State, head, base string) engine.Progress {
	return engine.Progress{Phase: string(st.Phase), Round: st.Round, Head: st.HeadSeen, Branch: head, Base: base}
}

// Terminal is st's terminal as the engine records it, with its proof.
func (Adapter) Terminal(st State) (engine.Terminal, bool) {
	t := st.Terminal
	if t == nil {
		return engine.Terminal{}, false
	}
	var proof any
	if t.Proof != nil {
		proof = t.Proof
	}
	return engine.Terminal{Status: string(t.Reason), Code: t.ExitCode, Proof: proof}, true
}

// Initial is the state a claimed run starts from: a resumed run's,
// reopened (PR-G3: it continues where it stood, with its round count,
// wall clock and diff baseline; Decide re-reads the world before
// trusting any of it), else a new one. It carries the run's id (its
// lease on the head's pending verdict, PR-T14), the threads earlier runs
// saw resolved after converge resolved them (open now, a human reopened
// them, which the forge alone cannot tell from a resolve a crash kept
// from happening: PR-S12, REL-2), and the verdict an earlier run
// published, which a new head breaks (PR-T14).
func Initial(claim *engine.Claim[State]) State {
	st := State{Phase: PhaseStart}
	if claim.Resumed != nil {
		st = Reopen(*claim.Resumed)
	}
	st.RunID = claim.RunID
	st.PriorResolved = PriorResolved(claim.Prior)
	if st.PriorVerdictHead == "" {
		st.PriorVerdictHead = PriorVerdictHead(claim.Prior)
	}
	return st
}
