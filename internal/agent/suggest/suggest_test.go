package suggest

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/convergeloop/converge/internal/agent"
)

func sugg(lines ...string) string {
	return "Consider this:\n```suggestion\n" + strings.Join(append(lines, ""), "\n") + "```\n"
}

func run(t *testing.T, files map[string]string, findings ...agent.Finding) (agent.Result, string) {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	res, err := New().Run(context.Background(), agent.Task{Kind: agent.TaskKindFix, Workdir: dir, Findings: findings})
	if err != nil {
		t.Fatal(err)
	}
	return res, dir
}

func read(t *testing.T, dir, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestPR_S9_SuggestionAppliedExactly(t *testing.T) {
	const five = "one\ntwo\nthree\nfour\nfive\n"
	tests := []struct {
		name    string
		file    string
		f       agent.Finding
		want    string
		status  agent.Status
		reason  string // prefix of the outcome reason
		changed bool
	}{
		{name: "single line", file: five, f: agent.Finding{EndLine: 2, Body: sugg("TWO")},
			want: "one\nTWO\nthree\nfour\nfive\n", status: agent.StatusComplete, changed: true},
		{name: "single line via equal start", file: five, f: agent.Finding{StartLine: 5, EndLine: 5, Body: sugg("FIVE")},
			want: "one\ntwo\nthree\nfour\nFIVE\n", status: agent.StatusComplete, changed: true},
		{name: "multi-line to more lines", file: five, f: agent.Finding{StartLine: 2, EndLine: 3, Body: sugg("a", "b", "c")},
			want: "one\na\nb\nc\nfour\nfive\n", status: agent.StatusComplete, changed: true},
		{name: "multi-line to one line", file: five, f: agent.Finding{StartLine: 1, EndLine: 4, Body: sugg("x")},
			want: "x\nfive\n", status: agent.StatusComplete, changed: true},
		{name: "empty block deletes", file: five, f: agent.Finding{StartLine: 2, EndLine: 3, Body: "```suggestion\n```"},
			want: "one\nfour\nfive\n", status: agent.StatusComplete, changed: true},
		{name: "blank-line block is not a deletion", file: five, f: agent.Finding{EndLine: 3, Body: "```suggestion\n\n```"},
			want: "one\ntwo\n\nfour\nfive\n", status: agent.StatusComplete, changed: true},
		{name: "indentation kept", file: "func f() {\n\treturn 1\n}\n", f: agent.Finding{EndLine: 2, Body: sugg("\treturn 2 // fixed", "")},
			want: "func f() {\n\treturn 2 // fixed\n\n}\n", status: agent.StatusComplete, changed: true},
		{name: "CRLF file stays CRLF", file: "a\r\nb\r\nc\r\n", f: agent.Finding{StartLine: 2, EndLine: 2, Body: sugg("B1", "B2")},
			want: "a\r\nB1\r\nB2\r\nc\r\n", status: agent.StatusComplete, changed: true},
		{name: "CRLF comment body on LF file", file: five, f: agent.Finding{EndLine: 1, Body: "```suggestion\r\nONE\r\n```\r\n"},
			want: "ONE\ntwo\nthree\nfour\nfive\n", status: agent.StatusComplete, changed: true},
		{name: "no trailing newline kept", file: "a\nb\nc", f: agent.Finding{EndLine: 3, Body: sugg("C", "D")},
			want: "a\nb\nC\nD", status: agent.StatusComplete, changed: true},
		{name: "no trailing newline kept on deleting the end", file: "a\nb\nc", f: agent.Finding{StartLine: 2, EndLine: 3, Body: sugg()},
			want: "a", status: agent.StatusComplete, changed: true},
		{name: "four-backtick fence holding a fence", file: "x\n", f: agent.Finding{EndLine: 1, Body: "````suggestion\n```go\ny\n```\n````"},
			want: "```go\ny\n```\n", status: agent.StatusComplete, changed: true},
		{name: "tilde fence", file: "x\n", f: agent.Finding{EndLine: 1, Body: "~~~suggestion\ny\n~~~"},
			want: "y\n", status: agent.StatusComplete, changed: true},
		{name: "identical suggestion changes nothing", file: five, f: agent.Finding{EndLine: 1, Body: sugg("one")},
			want: five, status: agent.StatusBlocked, reason: ReasonNoChange},
		{name: "out of range", file: five, f: agent.Finding{StartLine: 5, EndLine: 6, Body: sugg("x")},
			want: five, status: agent.StatusBlocked, reason: ReasonOutOfRange},
		{name: "start after end", file: five, f: agent.Finding{StartLine: 4, EndLine: 3, Body: sugg("x")},
			want: five, status: agent.StatusBlocked, reason: ReasonOutOfRange},
		{name: "no line range", file: five, f: agent.Finding{Body: sugg("x")},
			want: five, status: agent.StatusBlocked, reason: ReasonNoLines},
		{name: "no suggestion block", file: five, f: agent.Finding{EndLine: 1, Body: "please rename\n```go\nx := 1\n```"},
			want: five, status: agent.StatusBlocked, reason: ReasonNoSuggestion},
		{name: "suggestion quoted inside another fence is not one", file: five, f: agent.Finding{EndLine: 1, Body: "````md\n```suggestion\nx\n```\n````"},
			want: five, status: agent.StatusBlocked, reason: ReasonNoSuggestion},
		{name: "two suggestion blocks", file: five, f: agent.Finding{EndLine: 1, Body: sugg("a") + sugg("b")},
			want: five, status: agent.StatusBlocked, reason: ReasonMultipleSuggestions},
		{name: "unterminated block", file: five, f: agent.Finding{EndLine: 1, Body: "```suggestion\nx\n"},
			want: five, status: agent.StatusBlocked, reason: ReasonUnterminated},
		// GitLab's relative range: -A+B lines around the commented line.
		{name: "gitlab relative range replaces the lines around the comment", file: five, f: agent.Finding{EndLine: 3, Body: "fix\n```suggestion:-1+1\nX\n```"},
			want: "one\nX\nfive\n", status: agent.StatusComplete, changed: true},
		{name: "gitlab -0+0 is the commented line", file: five, f: agent.Finding{EndLine: 2, Body: "```suggestion:-0+0\nX\n```"},
			want: "one\nX\nthree\nfour\nfive\n", status: agent.StatusComplete, changed: true},
		{name: "gitlab range above the file's start", file: five, f: agent.Finding{EndLine: 1, Body: "```suggestion:-2+0\nX\n```"},
			want: five, status: agent.StatusBlocked, reason: ReasonOutOfRange},
		{name: "gitlab range past the file's end", file: five, f: agent.Finding{EndLine: 5, Body: "```suggestion:-0+3\nX\n```"},
			want: five, status: agent.StatusBlocked, reason: ReasonOutOfRange},
		{name: "gitlab range on a multi-line comment is ambiguous", file: five, f: agent.Finding{StartLine: 2, EndLine: 3, Body: "```suggestion:-1+0\nX\n```"},
			want: five, status: agent.StatusBlocked, reason: ReasonRelativeRange},
		{name: "malformed range", file: five, f: agent.Finding{EndLine: 2, Body: "```suggestion:+1-0\nX\n```"},
			want: five, status: agent.StatusBlocked, reason: ReasonBadRange},
		{name: "shorter closing fence does not close", file: five, f: agent.Finding{EndLine: 1, Body: "````suggestion\nx\n```\n"},
			want: five, status: agent.StatusBlocked, reason: ReasonUnterminated},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.f.ID, tt.f.Path = "F1", "dir/f.txt"
			res, dir := run(t, map[string]string{"dir/f.txt": tt.file}, tt.f)
			if got := read(t, dir, "dir/f.txt"); got != tt.want {
				t.Errorf("file = %q, want %q", got, tt.want)
			}
			o := res.Outcomes[0]
			if o.FindingID != "F1" || o.Status != tt.status || !strings.HasPrefix(o.Reason, tt.reason) || (tt.reason == "") != (o.Reason == "") {
				t.Errorf("outcome = %+v, want %s %q", o, tt.status, tt.reason)
			}
			if res.Record.Status != tt.status {
				t.Errorf("record status = %s, want %s", res.Record.Status, tt.status)
			}
			wantChanged := []string{}
			if tt.changed {
				wantChanged = []string{"dir/f.txt"}
			}
			if !slices.Equal(res.Record.FilesChanged, wantChanged) {
				t.Errorf("files_changed = %q, want %q", res.Record.FilesChanged, wantChanged)
			}
		})
	}
}

func TestPR_S9_SameFileAnyOrder(t *testing.T) {
	const file = "l1\nl2\nl3\nl4\nl5\nl6\n"
	a := agent.Finding{ID: "A", Path: "f", StartLine: 1, EndLine: 2, Body: sugg("A")}
	b := agent.Finding{ID: "B", Path: "f", EndLine: 4, Body: sugg("B1", "B2", "B3")}
	c := agent.Finding{ID: "C", Path: "f", StartLine: 6, EndLine: 6, Body: sugg()}
	const want = "A\nl3\nB1\nB2\nB3\nl5\n"
	for _, order := range [][]agent.Finding{{a, b, c}, {c, b, a}, {b, a, c}, {c, a, b}} {
		res, dir := run(t, map[string]string{"f": file}, order...)
		if got := read(t, dir, "f"); got != want {
			t.Errorf("order %s%s%s: file = %q, want %q", order[0].ID, order[1].ID, order[2].ID, got, want)
		}
		if res.Record.Status != agent.StatusComplete {
			t.Errorf("record = %+v", res.Record)
		}
		for i, o := range res.Outcomes {
			if o.FindingID != order[i].ID || o.Status != agent.StatusComplete {
				t.Errorf("outcome %d = %+v, want %s complete (outcomes follow task order)", i, o, order[i].ID)
			}
		}
	}
}

func TestPR_S9_PartialAndBlocked(t *testing.T) {
	files := map[string]string{"a.go": "a1\na2\n", "b.go": "b1\n"}
	t.Run("some apply", func(t *testing.T) {
		res, dir := run(t, files,
			agent.Finding{ID: "narrow", Path: "a.go", EndLine: 1, Body: sugg("A1")},
			agent.Finding{ID: "missing", Path: "nope.go", EndLine: 1, Body: sugg("x")},
			agent.Finding{ID: "prose", Path: "b.go", EndLine: 1, Body: "why?"},
			agent.Finding{ID: "wide", Path: "a.go", StartLine: 1, EndLine: 2, Body: sugg("z")},
			agent.Finding{ID: "escape", Path: "../b.go", EndLine: 1, Body: sugg("x")},
		)
		// Bottom-up order takes the finding ending lowest in the file
		// first; the other intersects it and is left for a human or an LLM.
		if got := read(t, dir, "a.go"); got != "z\n" {
			t.Errorf("a.go = %q", got)
		}
		want := []struct {
			status agent.Status
			reason string
		}{
			{agent.StatusBlocked, ReasonOverlap + ": wide"},
			{agent.StatusBlocked, ReasonFileMissing},
			{agent.StatusBlocked, ReasonNoSuggestion},
			{agent.StatusComplete, ""},
			{agent.StatusBlocked, ReasonBadPath},
		}
		for i, o := range res.Outcomes {
			if o.Status != want[i].status || !strings.HasPrefix(o.Reason, want[i].reason) {
				t.Errorf("outcome %d = %+v, want %s %q", i, o, want[i].status, want[i].reason)
			}
		}
		if res.Record.Status != agent.StatusPartial || res.Record.NextAction == "" || len(res.Record.Concerns) != 4 ||
			!slices.Equal(res.Record.FilesChanged, []string{"a.go"}) {
			t.Errorf("record = %+v", res.Record)
		}
		if _, ok := agent.Extend(res.Record, 0); ok {
			t.Error("a suggestion that does not apply must not earn more time")
		}
	})
	t.Run("none apply", func(t *testing.T) {
		res, _ := run(t, files, agent.Finding{ID: "x", Path: "b.go", EndLine: 9, Body: sugg("x")})
		if res.Record.Status != agent.StatusBlocked || res.Record.Reason == "" {
			t.Errorf("record = %+v", res.Record)
		}
	})
	t.Run("no findings", func(t *testing.T) {
		res, _ := run(t, files)
		if res.Record.Status != agent.StatusComplete || len(res.Outcomes) != 0 {
			t.Errorf("result = %+v", res)
		}
	})
}

func TestPR_S9_SymlinkOutOfWorkdirRefused(t *testing.T) {
	outside := filepath.Join(t.TempDir(), "secret.txt")
	if err := os.WriteFile(outside, []byte("keep\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.Symlink(outside, filepath.Join(dir, "link.txt")); err != nil {
		t.Skip("symlinks unavailable:", err)
	}
	res, err := New().Run(context.Background(), agent.Task{Workdir: dir, Findings: []agent.Finding{
		{ID: "L", Path: "link.txt", EndLine: 1, Body: sugg("pwned")},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if got := read(t, filepath.Dir(outside), "secret.txt"); got != "keep\n" {
		t.Errorf("file outside the workdir changed: %q", got)
	}
	if o := res.Outcomes[0]; o.Status != agent.StatusBlocked || !strings.HasPrefix(o.Reason, ReasonUnreadable) {
		t.Errorf("outcome = %+v", o)
	}
}

func TestRunErrors(t *testing.T) {
	if _, err := New().Run(context.Background(), agent.Task{Workdir: filepath.Join(t.TempDir(), "gone")}); err == nil {
		t.Error("want an error for a missing workdir")
	}
	if _, err := New().Run(context.Background(), agent.Task{Kind: "review", Workdir: t.TempDir()}); err == nil {
		t.Error("want an error for an unsupported kind")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := New().Run(ctx, agent.Task{Workdir: t.TempDir(), Findings: []agent.Finding{{ID: "x", Path: "f", EndLine: 1, Body: sugg("y")}}}); err == nil {
		t.Error("want an error for a cancelled context")
	}
}
