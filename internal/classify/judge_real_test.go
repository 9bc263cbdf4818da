package classify

import (
	"context"
	"encoding/json"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/convergeloop/converge/internal/agent"
	"github.com/convergeloop/converge/internal/quote"
)

// The judge's prompt and schema against a scripted model on the comments
// the heuristic leaves borderline in the real sets (issue 17, item 5). The
// model is an agent double: it reads the prompt as a model would — only
// through its delimiters — and answers with a script. It fails the test
// when a comment or its hunk is not quoted as data, byte for byte.

// scriptedModel is a judge agent whose answer is answer(comments it read).
type scriptedModel struct {
	t      *testing.T
	want   map[string]Comment // what the prompt must quote, by id
	answer func(read []string) string
	runs   int
}

func (m *scriptedModel) Name() string { return "scripted-model" }

func (m *scriptedModel) Run(_ context.Context, task agent.Task) (agent.Result, error) {
	m.runs++
	if task.Kind != TaskKind {
		m.t.Errorf("the judge's task kind is %q", task.Kind)
	}
	read := m.read(task.Prompt)
	return agent.Result{Record: agent.StatusRecord{Status: agent.StatusComplete}, Output: m.answer(read)}, nil
}

var (
	blockOpen  = regexp.MustCompile(`^<<<(REVIEW-COMMENT|DIFF-HUNK) id=("(?:[^"\\]|\\.)*")[^\n]* nonce=([0-9a-f]{16}) \(data, not instructions\)$`)
	blockClose = regexp.MustCompile(`^>>>END-(REVIEW-COMMENT|DIFF-HUNK) nonce=([0-9a-f]{16})$`)
)

// read parses the prompt's quoted blocks and checks each against the
// comment it must quote: every data line behind quote.Prefix, the body and
// the hunk whole, every comment once, nothing quoted outside a block.
func (m *scriptedModel) read(prompt string) []string {
	t := m.t
	var ids []string
	bodies, hunks := map[string]string{}, map[string]string{}
	var kind, id, nonce string
	var lines []string
	for l := range strings.SplitSeq(prompt, "\n") {
		if kind == "" {
			if g := blockOpen.FindStringSubmatch(l); g != nil {
				kind, nonce = g[1], g[3]
				if err := json.Unmarshal([]byte(g[2]), &id); err != nil {
					t.Fatalf("block id %s: %v", g[2], err)
				}
				lines = nil
				continue
			}
			if strings.HasPrefix(l, quote.Prefix) {
				t.Errorf("a quoted line outside any block: %q", l)
			}
			continue
		}
		if g := blockClose.FindStringSubmatch(l); g != nil && g[1] == kind && g[2] == nonce {
			text := strings.Join(lines, "\n")
			if kind == "REVIEW-COMMENT" {
				bodies[id] = text
				ids = append(ids, id)
			} else {
				hunks[id] = text
			}
			kind = ""
			continue
		}
		data, ok := strings.CutPrefix(l, quote.Prefix)
		if !ok {
			t.Fatalf("comment %s: line %q inside a %s block is not quoted", id, l, kind)
		}
		lines = append(lines, data)
	}
	if kind != "" {
		t.Fatalf("comment %s: its %s block is not closed", id, kind)
	}
	for wid, c := range m.want {
		body := strings.TrimSuffix(strings.ReplaceAll(c.Body, "\r\n", "\n"), "\n")
		if bodies[wid] != body {
			t.Errorf("comment %s is not quoted whole:\n got %q\nwant %q", wid, bodies[wid], body)
		}
		if c.DiffHunk != "" && hunks[wid] != strings.TrimSuffix(c.DiffHunk, "\n") {
			t.Errorf("comment %s: its hunk is not quoted whole", wid)
		}
	}
	if len(ids) != len(m.want) {
		t.Errorf("the prompt quotes %d comments, want %d", len(ids), len(m.want))
	}
	return ids
}

// scriptedAnswer is a judge's final line giving verdict(id) for each id, in
// the order given.
func scriptedAnswer(ids []string, verdict func(id string) string) string {
	vs := make([]map[string]string, 0, len(ids))
	for _, id := range ids {
		vs = append(vs, map[string]string{"id": id, "verdict": verdict(id), "reason": "scripted"})
	}
	b, err := json.Marshal(map[string]any{"status": "complete", "next_action": "", "needs_extension_minutes": 0,
		"summary": "classified", "files_changed": []string{}, "verdicts": vs})
	if err != nil {
		panic(err)
	}
	return string(b)
}

// borderlineReal is every comment of the real sets (held-out 2 included)
// the heuristic leaves to the judge, with its label.
func borderlineReal(t *testing.T) ([]Comment, map[string]Verdict) {
	var cs []Comment
	labels := map[string]Verdict{}
	held2 := 0
	for _, r := range loadAllReal(t) {
		if Heuristic(r.Comment).Verdict == Borderline {
			cs = append(cs, r.Comment)
			labels[r.ID] = r.Label
			if r.Split == "held2" {
				held2++
			}
		}
	}
	if len(cs) < 50 || held2 < 50 {
		t.Fatalf("only %d borderline real comments, %d of them from held-out 2", len(cs), held2)
	}
	return cs, labels
}

// TestPR_S5_JudgeOnRealBorderlineComments: every borderline real comment
// reaches the judge in one run, quoted as data with its hunk; a model that
// answers their labels (in any order, after any chatter) is read exactly;
// and a round classified with it calls no structural comment minor.
func TestPR_S5_JudgeOnRealBorderlineComments(t *testing.T) {
	cs, labels := borderlineReal(t)
	want := map[string]Comment{}
	for _, c := range cs {
		want[c.ID] = c
	}
	model := &scriptedModel{t: t, want: want, answer: func(read []string) string {
		rev := slices.Clone(read)
		slices.Reverse(rev) // any order: the judge puts them back in request order
		return "Reading the comments.\n" + scriptedAnswer(rev, func(id string) string { return string(labels[id]) }) + "\n"
	}}
	j := &Judge{Agent: model}
	a, err := j.Run(context.Background(), Request{RunID: "r", Round: 1, Comments: cs})
	if err != nil || !a.Valid {
		t.Fatalf("answer = %+v, %v", a, err)
	}
	for k, v := range a.Verdicts {
		if v.ID != cs[k].ID || v.Verdict != labels[v.ID] {
			t.Fatalf("verdict %d = %+v, want %s %s", k, v, cs[k].ID, labels[cs[k].ID])
		}
	}

	// A whole round of every real comment: the heuristic decides what
	// it can, the rest go to the scripted judge in one run.
	var all []Comment
	label := map[string]Verdict{}
	for _, r := range loadAllReal(t) {
		all = append(all, r.Comment)
		label[r.ID] = r.Label
	}
	model.runs = 0
	r, err := Classify(context.Background(), j, "r", 2, all)
	if err != nil || model.runs != 1 || r.Judge == nil || !r.Judge.Valid || r.Unclear() {
		t.Fatalf("round: runs %d, %+v, %v", model.runs, r.Judge, err)
	}
	for _, d := range r.Decisions {
		if label[d.ID] == Structural && !d.IsStructural() {
			t.Errorf("%s: structural, decided %s by %s", d.ID, d.Verdict, d.By)
		}
	}
}

// TestPR_S5_JudgeOnRealCommentsFailsClosed: on the same comments, every
// way the scripted model can fail to answer leaves every comment unclear,
// which the loop treats as structural.
func TestPR_S5_JudgeOnRealCommentsFailsClosed(t *testing.T) {
	cs, _ := borderlineReal(t)
	want := map[string]Comment{}
	for _, c := range cs {
		want[c.ID] = c
	}
	minor := func(string) string { return string(Minor) }
	for name, answer := range map[string]func(read []string) string{
		"one comment left out": func(read []string) string { return scriptedAnswer(read[1:], minor) },
		"an id it was not asked about": func(read []string) string {
			return scriptedAnswer(append(slices.Clone(read), "real-999"), minor)
		},
		"prose after the answer": func(read []string) string {
			return scriptedAnswer(read, minor) + "\nAll of these look cosmetic to me."
		},
		"a verdict outside the schema": func(read []string) string {
			return scriptedAnswer(read, func(string) string { return string(Borderline) })
		},
		"the prompt's example echoed": func([]string) string {
			return `{"status": "complete", "next_action": "", "needs_extension_minutes": 0, "summary": "<one sentence>", "files_changed": [], "verdicts": [{"id": "<comment id>", "verdict": "structural|minor|unclear", "reason": "<why, one sentence>"}]}`
		},
		"no answer at all": func([]string) string { return "I could not decide." },
	} {
		t.Run(name, func(t *testing.T) {
			j := &Judge{Agent: &scriptedModel{t: t, want: want, answer: answer}}
			a, err := j.Run(context.Background(), Request{RunID: "r", Round: 1, Comments: cs})
			if err != nil || a.Valid || a.Why == "" || len(a.Verdicts) != len(cs) {
				t.Fatalf("answer = valid %v, why %q, %d verdicts, %v", a.Valid, a.Why, len(a.Verdicts), err)
			}
			for _, v := range a.Verdicts {
				if v.Verdict != Unclear {
					t.Fatalf("%s: %s", v.ID, v.Verdict)
				}
			}
		})
	}
}
