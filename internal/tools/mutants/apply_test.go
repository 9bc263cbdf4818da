package main

import (
	"os/exec"
	"path/filepath"
	"testing"
)

// TestEveryMutantAppliesToTodaysCode: a mutant patch that no longer
// applies guards nothing, silently; each must apply to the tree as it is
// (the mutants run is too slow for every CI run, this check is not).
func TestEveryMutantAppliesToTodaysCode(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", "..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	patches, err := filepath.Glob(filepath.Join(root, "testdata", "mutants", "*.patch"))
	if err != nil || len(patches) == 0 {
		t.Fatalf("no mutant patches under %s (%v)", root, err)
	}
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not on PATH")
	}
	for _, p := range patches {
		cmd := exec.Command("git", "apply", "--check", p)
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("%s does not apply: %v\n%s", filepath.Base(p), err, out)
		}
	}
}
