package verify

import (
	"fmt"
	"strings"
	"testing"
)

// TestPR_V3_BoundUndoesTheFixerOverABound: a fixer that adds more than
// one file may hold is undone, naming max_file_bytes; a round over the
// bytes in all undoes its largest fixer first, naming max_push_bytes; a
// round over the file count undoes the fixer with the most files, naming
// max_push_files; a change within every bound is kept whole.
func TestPR_V3_BoundUndoesTheFixerOverABound(t *testing.T) {
	const mib = 1 << 20
	small := []Sized{{Path: "notes.txt", Bytes: 40}}
	many := func(prefix string, n int) []Sized {
		var out []Sized
		for i := range n {
			out = append(out, Sized{Path: fmt.Sprintf("%s/%d.txt", prefix, i), Bytes: 10})
		}
		return out
	}
	for _, tc := range []struct {
		name  string
		fixed []Sized
		parts [][]Sized
		b     Bounds
		want  map[int]Rule
		why   string
	}{
		{name: "within", parts: [][]Sized{small, many("a", 150)}},
		{name: "one file over", parts: [][]Sized{small, {{Path: "big.bin", Bytes: 2 * mib}}},
			want: map[int]Rule{1: RuleFileBytes}, why: "the change adds 2 MiB to big.bin, over the 1 MiB bound for one file (max_file_bytes)"},
		{name: "in all over", parts: [][]Sized{small, {{Path: "a", Bytes: mib}, {Path: "b", Bytes: mib}, {Path: "c", Bytes: mib}},
			{{Path: "d", Bytes: mib}, {Path: "e", Bytes: mib / 2}}, {{Path: "f", Bytes: mib / 2}, {Path: "g", Bytes: mib / 5}}},
			want: map[int]Rule{1: RulePushBytes}, why: "the round's change adds 5.2 MiB, over the 5 MiB bound (max_push_bytes)"},
		{name: "just over", parts: [][]Sized{small, {{Path: "a", Bytes: mib}, {Path: "b", Bytes: mib}, {Path: "c", Bytes: mib}, {Path: "d", Bytes: mib}, {Path: "e", Bytes: mib}}},
			want: map[int]Rule{1: RulePushBytes}, why: "the round's change adds 5242920 B, over the 5242880 B bound (max_push_bytes)"},
		{name: "too many files", parts: [][]Sized{small, many("a", 201)},
			want: map[int]Rule{1: RulePushFiles}, why: "the round's change touches 202 files, over the bound of 200 (max_push_files)"},
		{name: "two fixers too many files together", parts: [][]Sized{many("a", 120), many("b", 100), small},
			want: map[int]Rule{0: RulePushFiles}},
		{name: "a file in two parts counts once", parts: [][]Sized{many("a", 150), many("a", 150)}},
		{name: "fixed counts, is never undone", fixed: many("k", 199), parts: [][]Sized{small, many("b", 2)},
			want: map[int]Rule{1: RulePushFiles}},
		{name: "fixed alone over", fixed: many("k", 300), parts: [][]Sized{}},
		{name: "configured", parts: [][]Sized{small}, b: Bounds{FileBytes: 10},
			want: map[int]Rule{0: RuleFileBytes}, why: "the change adds 40 B to notes.txt, over the 10 B bound for one file (max_file_bytes)"},
		{name: "no bound", parts: [][]Sized{{{Path: "big.bin", Bytes: 9 * mib}}, many("a", 300)}, b: Bounds{PushBytes: -1, FileBytes: -1, PushFiles: -1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Bound(tc.fixed, tc.parts, tc.b)
			if len(got) != len(tc.want) {
				t.Fatalf("Bound undoes %v, want %v", got, tc.want)
			}
			for i, r := range tc.want {
				v, ok := got[i]
				if !ok || v.Rule != r {
					t.Fatalf("Bound undoes %v, want part %d by %s", got, i, r)
				}
				if tc.why != "" && v.Why != tc.why {
					t.Errorf("why %q, want %q", v.Why, tc.why)
				}
				if !strings.Contains(v.Why, strings.ReplaceAll(string(r), "-", "_")) {
					t.Errorf("why %q does not name the setting of %s", v.Why, r)
				}
			}
		})
	}
}

// TestPR_V3_AddedBytes: a text file counts by the lines it gains, a
// binary one by its size after the change.
func TestPR_V3_AddedBytes(t *testing.T) {
	text := FileDiff{OldPath: "a.txt", NewPath: "a.txt", Changes: []Change{{Added: []string{"abc", ""}, Removed: []string{"x"}}}}
	if n := AddedBytes(text, 99); n != 5 {
		t.Errorf("text: %d, want 5", n)
	}
	bin := FileDiff{NewPath: "b.bin", Binary: true}
	if n := AddedBytes(bin, 1234); n != 1234 {
		t.Errorf("binary: %d, want its size", n)
	}
	if n := AddedBytes(FileDiff{OldPath: "b.bin", Binary: true}, 0); n != 0 {
		t.Errorf("deleted binary: %d, want 0", n)
	}
	for n, want := range map[int64]string{512: "512 B", 3 << 10: "3 KiB", 7549747: "7.2 MiB", 5 << 20: "5 MiB"} {
		if got := Size(n); got != want {
			t.Errorf("Size(%d) = %q, want %q", n, got, want)
		}
	}
}
