package fakegit

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var testIdentity = []string{"GIT_AUTHOR_NAME=T", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=T", "GIT_COMMITTER_EMAIL=t@example.com"}

// A commit written without a work tree reads back, a conflicting change
// is seen by MergeTree, and CI runs the test command on the commit.
func TestCommitMergeAndCI(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "r.git")
	if err := InitBare(ctx, dir, "main"); err != nil {
		t.Fatal(err)
	}
	when := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	base, err := CommitFiles(ctx, dir, "", map[string]string{"a.txt": "one\n", "test.sh": "grep -q one a.txt\n"}, "base", when, testIdentity)
	if err != nil {
		t.Fatal(err)
	}
	left, err := CommitFiles(ctx, dir, base, map[string]string{"a.txt": "left\n"}, "left", when, testIdentity)
	if err != nil {
		t.Fatal(err)
	}
	right, err := CommitFiles(ctx, dir, base, map[string]string{"a.txt": "right\n", "test.sh": DeleteFile}, "right", when, testIdentity)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := FileAt(ctx, dir, left, "a.txt"); got != "left\n" {
		t.Fatalf("a.txt at left = %q", got)
	}
	if _, ok := FileAt(ctx, dir, right, "test.sh"); ok {
		t.Fatal("test.sh survived DeleteFile")
	}
	if _, conflict, err := MergeTree(ctx, dir, left, right); err != nil || !conflict {
		t.Fatalf("merge left/right: conflict=%v err=%v", conflict, err)
	}
	if ok, err := IsAncestor(ctx, dir, base, left); err != nil || !ok {
		t.Fatalf("base ancestor of left: %v %v", ok, err)
	}
	if _, err := Run(ctx, dir, nil, nil, "update-ref", "refs/heads/main", left); err != nil {
		t.Fatal(err)
	}
	refs, err := ReadRefs(ctx, dir)
	if err != nil || refs["main"] != left {
		t.Fatalf("refs = %v, %v", refs, err)
	}
	if _, err := RunCI(ctx, dir, base, []string{"sh", "test.sh"}); err != nil {
		t.Fatalf("ci on base: %v", err)
	}
	if out, err := RunCI(ctx, dir, left, []string{"sh", "test.sh"}); err == nil || ExitCode(err) != 1 {
		t.Fatalf("ci on left: %v %s", err, out)
	}
	if !strings.Contains(Tail("a\nb\nc\n", 2), "b\nc") {
		t.Fatal("tail")
	}
}

func TestNewCA(t *testing.T) {
	ca, err := NewCA(t.TempDir(), "fakelab")
	if err != nil {
		t.Fatal(err)
	}
	if len(ca.Cert.Certificate) != 2 || !strings.Contains(string(ca.PEM), "CERTIFICATE") {
		t.Fatal("bad CA")
	}
}

// RevParse, FileAt and RunAt remember only what they found: a commit missing from
// one repository is found once it is written there, a repository created
// afresh at the same dir starts over, and refs are always resolved anew.
func TestObjectMemo(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	a, b := filepath.Join(root, "a.git"), filepath.Join(root, "b.git")
	for _, d := range []string{a, b} {
		if err := InitBare(ctx, d, "main"); err != nil {
			t.Fatal(err)
		}
	}
	when := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	files := map[string]string{"f.txt": "x\n"}
	sha, err := CommitFiles(ctx, b, "", files, "c", when, testIdentity)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := RevParse(ctx, a, sha); err == nil {
		t.Fatalf("%s found in a before it was written there", sha)
	}
	if _, ok := FileAt(ctx, a, sha, "f.txt"); ok {
		t.Fatal("f.txt found in a before it was written there")
	}
	if _, err := RunAt(ctx, a, []string{sha}, "log", "--format=%H", sha); err == nil {
		t.Fatal("log of a commit not written yet")
	}
	// The same inputs make the same commit in a.
	if got, err := CommitFiles(ctx, a, "", files, "c", when, testIdentity); err != nil || got != sha {
		t.Fatalf("commit in a = %s, %v; want %s", got, err, sha)
	}
	for range 2 {
		if got, err := RevParse(ctx, a, sha); err != nil || got != sha {
			t.Fatalf("RevParse(a, %s) = %s, %v", sha, got, err)
		}
		if got, ok := FileAt(ctx, a, sha, "f.txt"); !ok || got != "x\n" {
			t.Fatalf("FileAt(a, f.txt) = %q, %v", got, ok)
		}
		if got, err := RunAt(ctx, a, []string{sha}, "log", "--format=%H", sha); err != nil || got != sha {
			t.Fatalf("RunAt(a, log %s) = %s, %v", sha, got, err)
		}
	}
	if _, err := RevParse(ctx, a, "refs/heads/main"); err == nil {
		t.Fatal("main resolved before it was set")
	}
	if _, err := Run(ctx, a, nil, nil, "update-ref", "refs/heads/main", sha); err != nil {
		t.Fatal(err)
	}
	if got, err := RevParse(ctx, a, "refs/heads/main"); err != nil || got != sha {
		t.Fatalf("RevParse(a, main) = %s, %v", got, err)
	}
	// A branch is read afresh each time: moved, packed, symbolic.
	next, err := CommitFiles(ctx, a, sha, map[string]string{"g.txt": "y\n"}, "d", when, testIdentity)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Run(ctx, a, nil, nil, "update-ref", "refs/heads/main", next); err != nil {
		t.Fatal(err)
	}
	if got, err := RevParse(ctx, a, "refs/heads/main"); err != nil || got != next {
		t.Fatalf("RevParse(a, main) after moving it = %s, %v; want %s", got, err, next)
	}
	if _, err := Run(ctx, a, nil, nil, "symbolic-ref", "refs/heads/alias", "refs/heads/main"); err != nil {
		t.Fatal(err)
	}
	if _, err := Run(ctx, a, nil, nil, "pack-refs", "--all"); err != nil {
		t.Fatal(err)
	}
	for _, ref := range []string{"refs/heads/main", "refs/heads/alias"} {
		if got, err := RevParse(ctx, a, ref); err != nil || got != next {
			t.Fatalf("RevParse(a, %s) packed = %s, %v; want %s", ref, got, err, next)
		}
	}
	if _, err := RevParse(ctx, a, "refs/heads/../heads/main"); err == nil {
		t.Fatal("a malformed ref name resolved")
	}
	if err := os.RemoveAll(a); err != nil {
		t.Fatal(err)
	}
	if err := InitBare(ctx, a, "main"); err != nil {
		t.Fatal(err)
	}
	if _, err := RevParse(ctx, a, sha); err == nil {
		t.Fatal("commit remembered across a repository created afresh")
	}
	if _, ok := FileAt(ctx, a, sha, "f.txt"); ok {
		t.Fatal("file remembered across a repository created afresh")
	}
	if _, err := RunAt(ctx, a, []string{sha}, "log", "--format=%H", sha); err == nil {
		t.Fatal("log remembered across a repository created afresh")
	}
}
