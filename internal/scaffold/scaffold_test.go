package scaffold_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/convergeloop/converge/internal/config"
	"github.com/convergeloop/converge/internal/prloop"
	"github.com/convergeloop/converge/internal/prwork"
	"github.com/convergeloop/converge/internal/scaffold"
)

func readFile(t *testing.T, dir, p string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, p))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func writeFile(t *testing.T, dir, p, s string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, p)), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, p), []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestPR_M4_InitWritesTheConfigTable: the .converge.yaml init writes is
// the config table's own template, and it loads as the defaults.
func TestPR_M4_InitWritesTheConfigTable(t *testing.T) {
	dir := t.TempDir()
	if _, err := scaffold.Init(scaffold.Options{Dir: dir}); err != nil {
		t.Fatal(err)
	}
	got := readFile(t, dir, config.FileName)
	if got != config.Template(config.PRFields()) {
		t.Fatalf("init wrote a .converge.yaml that is not the table's template:\n%s", got)
	}
	f, err := config.ReadFile(config.PRFields(), filepath.Join(dir, config.FileName))
	if err != nil {
		t.Fatal(err)
	}
	for _, fd := range config.PRFields() {
		if !strings.Contains(got, "\n# "+fd.Key+":") {
			t.Errorf("%s is not in the file", fd.Key)
		}
	}
	ss, err := config.Resolve(config.PRFields(), config.Inputs{File: f})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range ss {
		if s.Source != config.FromDefault {
			t.Errorf("%s comes from %s, want the default", s.Key, s.Source)
		}
	}
}

// TestPR_M4_InitNeverOverwrites: a file that differs from what init
// writes is refused by name, naming --force, and nothing at all is
// written; --force replaces it; review instructions are always kept.
func TestPR_M4_InitNeverOverwrites(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, scaffold.WorkflowFile, "name: mine\n")
	_, err := scaffold.Init(scaffold.Options{Dir: dir, Action: true})
	var ee *scaffold.ExistsError
	if !errors.As(err, &ee) || ee.Path != scaffold.WorkflowFile || !strings.Contains(err.Error(), "--force") {
		t.Fatalf("want a refusal naming %s and --force, got %v", scaffold.WorkflowFile, err)
	}
	for _, p := range []string{config.FileName, prwork.ReviewInstructionsFile, prwork.CopilotInstructionsFile} {
		if _, err := os.Stat(filepath.Join(dir, p)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s written by a refused init", p)
		}
	}
	writeFile(t, dir, prwork.ReviewInstructionsFile, "Mine.\n")
	if _, err := scaffold.Init(scaffold.Options{Dir: dir, Action: true, Force: true}); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, dir, scaffold.WorkflowFile); got != scaffold.Workflow {
		t.Fatalf("--force left the workflow as %q", got)
	}
	if got := readFile(t, dir, prwork.ReviewInstructionsFile); got != "Mine.\n" {
		t.Fatalf("--force replaced the review instructions: %q", got)
	}
}

// TestPR_M4_InitCopilotSection: the copy goes into a marked section of
// Copilot's file, updated in place with the rest kept; the settled points
// review_memory keeps in the instructions are not copied (they have a
// section of their own there); markers out of order are refused.
func TestPR_M4_InitCopilotSection(t *testing.T) {
	dir := t.TempDir()
	memory := prloop.MemorySection("", prloop.ReviewMemory{Entries: []prloop.MemoryEntry{{ID: "PRRT_1", Path: "a.go", Start: 1, End: 1, Point: "rename x", Decision: prloop.DispDeferred, Why: "taste"}}})
	writeFile(t, dir, prwork.ReviewInstructionsFile, "Be strict.\n\n"+memory)
	writeFile(t, dir, prwork.CopilotInstructionsFile, "Before.\n\n"+scaffold.SectionBegin+"\nold\n"+scaffold.SectionEnd+"\nAfter.\n\n"+memory)
	if _, err := scaffold.Init(scaffold.Options{Dir: dir, Sync: true}); err != nil {
		t.Fatal(err)
	}
	got := readFile(t, dir, prwork.CopilotInstructionsFile)
	want := "Before.\n\n" + scaffold.Section(prwork.ReviewInstructionsFile, "Be strict.\n") + "After.\n\n" + memory
	if got != want {
		t.Fatalf("Copilot's file:\n%s\nwant:\n%s", got, want)
	}
	if strings.Count(got, "rename x") != 1 {
		t.Fatalf("the settled points are copied into the section too:\n%s", got)
	}
	if _, err := os.Stat(filepath.Join(dir, config.FileName)); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("--sync wrote .converge.yaml")
	}
	writeFile(t, dir, prwork.ReviewInstructionsFile, "Be strict.\n\n"+strings.SplitAfter(memory, "\n")[0])
	if _, err := scaffold.Init(scaffold.Options{Dir: dir, Sync: true}); err == nil || !strings.Contains(err.Error(), "review_memory") {
		t.Fatalf("a settled section without its end marker copied: %v", err)
	}
	for _, bad := range []string{scaffold.SectionEnd + "\n" + scaffold.SectionBegin + "\n", scaffold.SectionBegin + "\n", scaffold.SectionBegin + scaffold.SectionEnd + scaffold.SectionBegin + scaffold.SectionEnd} {
		if _, err := scaffold.PutSection(bad, "x"); err == nil {
			t.Errorf("markers %q accepted", bad)
		}
	}
}

// TestPR_M4_InitRefusesSymlinks: init writes regular files inside the
// repository only.
func TestPR_M4_InitRefusesSymlinks(t *testing.T) {
	dir, outside := t.TempDir(), t.TempDir()
	if err := os.Symlink(outside, filepath.Join(dir, ".github")); err != nil {
		t.Fatal(err)
	}
	if _, err := scaffold.Init(scaffold.Options{Dir: dir}); err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Fatalf("want a refusal of the link, got %v", err)
	}
	if entries, _ := os.ReadDir(outside); len(entries) > 0 {
		t.Fatalf("init wrote through the link: %v", entries)
	}
}

// TestSEC_5_DocsShowTheInitWorkflow: the example workflow of docs/action.md
// (the GitHub Action's page) is the one converge init --action writes.
func TestSEC_5_DocsShowTheInitWorkflow(t *testing.T) {
	page, err := os.ReadFile("../../docs/action.md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(page), "```yaml\n"+scaffold.Workflow+"```\n") {
		t.Fatalf("docs/action.md does not show the workflow converge init --action writes:\n%s", scaffold.Workflow)
	}
}
