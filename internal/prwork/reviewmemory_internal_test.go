package prwork

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/convergeloop/converge/internal/prloop"
	"github.com/convergeloop/converge/internal/repo"
)

// TestPR_S4_ReviewMemoryNeverWritesThroughALink: an instructions path the
// branch made a symbolic link (or put under one) is not written — the
// link could point anywhere — and, the section it holds unknown, neither
// is Copilot's: the fix is committed without it, with a note.
func TestPR_S4_ReviewMemoryNeverWritesThroughALink(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	g := &repo.Git{Dir: dir}
	if _, err := g.Run(ctx, "init", "-q"); err != nil {
		t.Fatal(err)
	}
	outside := filepath.Join(t.TempDir(), "outside.md")
	if err := os.WriteFile(outside, []byte("not the repository's\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, ".github"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(dir, ".github", "review-instructions.md")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "fix.go"), []byte("package x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var notes []string
	w := &GitWorkspace{Checkout: Checkout{worktree: g}, Logf: func(f string, a ...any) { notes = append(notes, f) }}
	w.SetReviewMemory(&prloop.ReviewMemory{Entries: []prloop.MemoryEntry{{ID: "T1", Path: "calc.go", End: 5, Point: "p", Decision: prloop.DispDeferred, Why: "w"}}})
	changed := w.writeReviewMemory(ctx)
	if b, _ := os.ReadFile(outside); string(b) != "not the repository's\n" {
		t.Fatalf("wrote through the link: %q", b)
	}
	if len(changed) != 0 || len(notes) == 0 || !strings.Contains(notes[0], "not written") {
		t.Fatalf("changed %v, notes %q", changed, notes)
	}

	// A linked directory is refused the same way; a plain path is written.
	if err := os.Remove(filepath.Join(dir, ".github", "review-instructions.md")); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(dir, ".github")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Dir(outside), filepath.Join(dir, ".github")); err != nil {
		t.Fatal(err)
	}
	w.SetReviewMemory(&prloop.ReviewMemory{Entries: []prloop.MemoryEntry{{ID: "T1", Path: "calc.go", End: 5, Point: "p", Decision: prloop.DispDeferred, Why: "w"}}})
	if changed := w.writeReviewMemory(ctx); len(changed) != 0 {
		t.Fatalf("wrote under a linked directory: %v", changed)
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(outside), "copilot-instructions.md")); err == nil {
		t.Fatal("wrote through the linked directory")
	}
	if err := os.Remove(filepath.Join(dir, ".github")); err != nil {
		t.Fatal(err)
	}
	w.SetReviewMemory(&prloop.ReviewMemory{Entries: []prloop.MemoryEntry{{ID: "T1", Path: "calc.go", End: 5, Point: "p", Decision: prloop.DispDeferred, Why: "w"}}})
	if changed := w.writeReviewMemory(ctx); len(changed) != 2 {
		t.Fatalf("plain paths: changed %v (%q)", changed, notes)
	}
}
