package prloop

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/convergeloop/converge/internal/emulator/fakeforge"
	"github.com/convergeloop/converge/internal/engine"
	"github.com/convergeloop/converge/internal/forge"
)

// memJournal is a journal in memory that remembers what began.
type memJournal struct {
	done  map[string]bool
	begun []string
}

func (j *memJournal) SaveState(context.Context, State) error { return nil }
func (j *memJournal) BeginAction(_ context.Context, a engine.ActionRecord) (bool, error) {
	j.begun = append(j.begun, a.Key)
	return j.done[a.Key], nil
}
func (j *memJournal) FinishAction(_ context.Context, key string, failed bool, _ any) error {
	j.done[key] = !failed
	return nil
}

// batchForge batches over fakeforge, counting its batch requests; a reply
// to a thread in failReply is refused.
type batchForge struct {
	*fakeforge.Forge
	replyReqs, resolveReqs int
	failReply              map[string]bool
}

func (b *batchForge) ReplyToThreads(ctx context.Context, ref forge.PRRef, rs []forge.ThreadReply) []forge.ThreadReplyResult {
	b.replyReqs++
	out := make([]forge.ThreadReplyResult, len(rs))
	for i, r := range rs {
		if b.failReply[r.ThreadID] {
			out[i].Err = errors.New("refused")
			continue
		}
		out[i].Comment, out[i].Err = b.Forge.ReplyToThread(ctx, ref, r.ThreadID, r.Body)
	}
	return out
}

func (b *batchForge) ResolveThreads(ctx context.Context, ref forge.PRRef, ids []string) []error {
	b.resolveReqs++
	out := make([]error, len(ids))
	for i, id := range ids {
		out[i] = b.Forge.ResolveThread(ctx, ref, id)
	}
	return out
}

// actStep acts a step's plan as the engine does: in order, stopping at the
// first error.
func actStep(t *testing.T, l *Loop, pr *forge.PullRequest, plan []Action) error {
	t.Helper()
	l.planned(plan)
	for _, a := range plan {
		if _, err := l.Act(context.Background(), State{Round: 1}, Observation{PR: pr}, a); err != nil {
			return err
		}
	}
	return nil
}

func threadStep(ids ...string) []Action {
	var plan []Action
	for _, id := range ids {
		if !strings.HasPrefix(id, "resolve:") {
			plan = append(plan, Action{Kind: ActReply, Key: "round-1/reply/" + id + "/addressed", ThreadID: id, Round: 1,
				Body: "Addressed.\n" + Marker(id, "h1", DispAddressed)})
			plan = append(plan, Action{Kind: ActResolve, Key: "round-1/resolve/" + id, ThreadID: id, Round: 1})
			continue
		}
		id = strings.TrimPrefix(id, "resolve:")
		plan = append(plan, Action{Kind: ActResolve, Key: "round-1/resolve/" + id, ThreadID: id, Round: 1})
	}
	return plan
}

func threadsPR(t *testing.T, n int) (*fakeforge.Forge, forge.PRRef, []string) {
	ff := fakeforge.New(fakeforge.Options{Viewer: self})
	ref := ff.AddPR(fakeforge.PR{})
	var ids []string
	for i := range n {
		th := ff.AddThread(ref, "bob", fakeforge.NewThread{Path: "main.go", Line: 10 * (i + 1), Body: "finding"})
		ids = append(ids, th.ID)
	}
	return ff, ref, ids
}

// TestPR_S12_BatchedWritesKeepReplyBeforeResolve: a step's replies and
// resolves cost one reply batch and one resolve batch; a reply the forge
// refuses leaves its thread unresolved (its resolve journalled failed, so
// it may run again) while the others are replied to and resolved; and a
// resolve Decide planned alone (the reply's marker observed) goes in the
// resolve batch.
func TestPR_S12_BatchedWritesKeepReplyBeforeResolve(t *testing.T) {
	ff, ref, ids := threadsPR(t, 4)
	// The fourth thread already holds converge's reply: only its resolve.
	ff.AddReply(ids[3], self, "Addressed.\n"+Marker(ids[3], "h1", DispAddressed))
	bf := &batchForge{Forge: ff, failReply: map[string]bool{ids[1]: true}}
	j := &memJournal{done: map[string]bool{}}
	l := NewLoop(ref, Deps{Forge: bf, Journal: j, Config: cfg()})
	pr := ff.PR(ref)

	err := actStep(t, l, pr, threadStep(ids[0], ids[1], ids[2], "resolve:"+ids[3]))
	if err == nil || !strings.Contains(err.Error(), "refused") {
		t.Fatalf("the step ended %v: want the refused reply's error", err)
	}
	if bf.replyReqs != 1 || bf.resolveReqs != 1 {
		t.Fatalf("%d reply and %d resolve requests, want one of each", bf.replyReqs, bf.resolveReqs)
	}
	after := ff.PR(ref)
	for i, th := range after.Threads {
		replied := len(th.Comments) == 2
		want := i != 1
		if th.IsResolved != want || (i < 3 && replied != want) {
			t.Errorf("thread %d: resolved %v, replied %v; want both %v", i, th.IsResolved, replied, want)
		}
	}
	if done, ok := j.done["round-1/resolve/"+ids[1]]; !ok || done {
		t.Errorf("the unproven thread's resolve journalled done=%v (recorded %v): want recorded as failed", done, ok)
	}

	// Again, as after a crash: the journal's finished items are not sent
	// again; the refused reply is retried, then its resolve.
	bf.failReply = nil
	bf.replyReqs, bf.resolveReqs = 0, 0
	if err := actStep(t, l, after, threadStep(ids[0], ids[1], ids[2], "resolve:"+ids[3])); err != nil {
		t.Fatal(err)
	}
	for i, th := range ff.PR(ref).Threads {
		if !th.IsResolved || len(th.Comments) != 2 {
			t.Errorf("thread %d after the retry: resolved %v, %d comments (want 2: no duplicate reply)", i, th.IsResolved, len(th.Comments))
		}
	}
	if bf.replyReqs != 1 || bf.resolveReqs != 1 {
		t.Errorf("the retry: %d reply and %d resolve requests, want one of each", bf.replyReqs, bf.resolveReqs)
	}
}

// TestPR_S12_NoBatcherOneByOne: a forge without forge.ThreadBatcher gets
// the same replies and resolves one request each.
func TestPR_S12_NoBatcherOneByOne(t *testing.T) {
	ff, ref, ids := threadsPR(t, 3)
	l := NewLoop(ref, Deps{Forge: ff, Journal: &memJournal{done: map[string]bool{}}, Config: cfg()})
	if err := actStep(t, l, ff.PR(ref), threadStep(ids...)); err != nil {
		t.Fatal(err)
	}
	if r, s := ff.Calls("reply to thread"), ff.Calls("resolve thread"); r != 3 || s != 3 {
		t.Fatalf("%d replies and %d resolves, want 3 of each", r, s)
	}
	for i, th := range ff.PR(ref).Threads {
		if !th.IsResolved || len(th.Comments) != 2 {
			t.Errorf("thread %d: resolved %v, %d comments", i, th.IsResolved, len(th.Comments))
		}
	}
}

// probeForge marks every observation a probe may answer Unchanged, and
// counts whole reads.
type probeForge struct {
	*fakeforge.Forge
	probed, whole int
}

func (p *probeForge) Observe(ctx context.Context, ref forge.PRRef) (*forge.PullRequest, error) {
	pr, err := p.Forge.Observe(ctx, ref)
	if err == nil && forge.ProbeAllowed(ctx) {
		p.probed++
		pr.Unchanged = true
	} else {
		p.whole++
	}
	return pr, err
}

// TestPR_O1_ProbedObservationIsForWaitingOnly: an observation a change
// probe stood in for feeds Decide only when Decide then waits; when it
// would act, the PR is read whole first and Decide gets that.
func TestPR_O1_ProbedObservationIsForWaitingOnly(t *testing.T) {
	ff, ref, _ := threadsPR(t, 0)
	pf := &probeForge{Forge: ff}
	l := NewLoop(ref, Deps{Forge: pf, Journal: &memJournal{done: map[string]bool{}}, Config: cfg()})
	head := ff.PR(ref).HeadSHA
	ctx := context.Background()

	// Waiting for a requested review that has not come: the probe stands.
	o, err := l.Observe(ctx, awaiting(head, 1), engine.Input[*ActResult]{Now: at(0)})
	if err != nil {
		t.Fatal(err)
	}
	if !o.PR.Unchanged || pf.probed != 1 || pf.whole != 0 {
		t.Fatalf("waiting: unchanged %v, %d probed, %d whole: want the probe's answer alone", o.PR.Unchanged, pf.probed, pf.whole)
	}

	// A fresh start acts (requests the review, sets a status): read whole.
	o, err = l.Observe(ctx, started(head), engine.Input[*ActResult]{Now: at(0)})
	if err != nil {
		t.Fatal(err)
	}
	if o.PR.Unchanged || pf.whole != 1 {
		t.Fatalf("acting: unchanged %v, %d whole reads: want Decide to get a whole read", o.PR.Unchanged, pf.whole)
	}
}
