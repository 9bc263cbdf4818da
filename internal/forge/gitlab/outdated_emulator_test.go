package gitlab_test

import (
	"testing"
	"time"

	"github.com/convergeloop/converge/internal/emulator/fakelab"
	"github.com/convergeloop/converge/internal/forge"
	"github.com/convergeloop/converge/internal/testutil/labtest"
)

// TestPR_O2_ThreadsOutdatedOnTheEmulator: a thread whose line a push
// changed is outdated; one on a line the push left is current, carried
// to its new number when lines above it moved. The emulator's repository
// compare gives the file diffs GitLab gives, so the backend maps lines
// as it does on GitLab.
func TestPR_O2_ThreadsOutdatedOnTheEmulator(t *testing.T) {
	lab := labtest.Start(t, 20*time.Millisecond)
	const path = "acme/outdated/widget"
	if _, err := lab.CreateProject(path, map[string]string{"main.go": contractBase}, fakelab.ProjectOptions{NoDuo: true}); err != nil {
		t.Fatal(err)
	}
	iid, err := lab.CreateMR(path, fakelab.NewMR{Source: "feature/bye", Title: "Say bye", Files: map[string]string{"main.go": contractHead}})
	if err != nil {
		t.Fatal(err)
	}
	ref, err := forge.ParsePRURL(lab.MRURL(path, iid))
	if err != nil {
		t.Fatal(err)
	}
	bye, _, err := lab.OpenDiscussion(path, iid, fakelab.UserReviewer, fakelab.NewDiscussion{Body: "bye?", Path: "main.go", NewLine: 5})
	if err != nil {
		t.Fatal(err)
	}
	hello, _, err := lab.OpenDiscussion(path, iid, fakelab.UserReviewer, fakelab.NewDiscussion{Body: "hello?", Path: "main.go", NewLine: 4})
	if err != nil {
		t.Fatal(err)
	}
	c := labClient(t, lab, lab.Tokens().Author)
	check := func(when string, wantBye bool, wantHelloLine int) {
		t.Helper()
		pr, err := c.Observe(t.Context(), ref)
		if err != nil {
			t.Fatal(err)
		}
		var b, h *forge.Thread
		for i := range pr.Threads {
			switch pr.Threads[i].ID {
			case bye:
				b = &pr.Threads[i]
			case hello:
				h = &pr.Threads[i]
			}
		}
		if b == nil || h == nil {
			t.Fatalf("%s: threads %+v", when, pr.Threads)
		}
		if b.IsOutdated != wantBye {
			t.Errorf("%s: the thread on the changed line: outdated %v, want %v", when, b.IsOutdated, wantBye)
		}
		if h.IsOutdated || h.Line != wantHelloLine {
			t.Errorf("%s: the thread on the untouched line at %d (outdated %v), want current at %d", when, h.Line, h.IsOutdated, wantHelloLine)
		}
	}
	check("before any push", false, 4)
	if _, err := lab.PushFiles(path, "feature/bye", fakelab.UserAuthor,
		map[string]string{"main.go": "package main\n\nfunc main() {\n\tprintln(\"hello\")\n\tprintln(\"goodbye\")\n}\n"}, "reword"); err != nil {
		t.Fatal(err)
	}
	check("after the line changed", true, 4)
	if _, err := lab.PushFiles(path, "feature/bye", fakelab.UserAuthor,
		map[string]string{"main.go": "package main\n\n// main says hello.\nfunc main() {\n\tprintln(\"hello\")\n\tprintln(\"goodbye\")\n}\n"}, "doc"); err != nil {
		t.Fatal(err)
	}
	check("after a line above moved it", true, 5)
}
