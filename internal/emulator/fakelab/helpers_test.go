package fakelab

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	gitlab "gitlab.com/gitlab-org/api/client-go"
)

const testProject = "grp/sub/proj"

func baseFiles() map[string]string {
	return map[string]string{
		"README.md": "# proj\n",
		"calc.txt":  "one\ntwo\nthree\nfour\nfive\n",
		"test.sh":   "#!/bin/sh\n! grep -q FAIL calc.txt\n",
	}
}

func newLab(t *testing.T, opts Options) *Lab {
	t.Helper()
	if opts.StateDir == "" {
		opts.StateDir = t.TempDir()
	}
	if opts.DuoDelay == 0 {
		opts.DuoDelay = 10 * time.Millisecond
	}
	l, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	if err := l.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// seeded starts a lab with testProject and one MR changing calc.txt.
func seeded(t *testing.T, opts Options, popts ProjectOptions) (*Lab, int) {
	t.Helper()
	l := newLab(t, opts)
	if popts.TestCommand == nil {
		popts.TestCommand = []string{"sh", "test.sh"}
	}
	if _, err := l.CreateProject(testProject, baseFiles(), popts); err != nil {
		t.Fatal(err)
	}
	iid, err := l.CreateMR(testProject, NewMR{Source: "feature", Title: "Add six", Description: "adds a line",
		Files: map[string]string{"calc.txt": "one\ntwo\nthree\nfour\nfive\nsix\n"}, Message: "Add six"})
	if err != nil {
		t.Fatal(err)
	}
	return l, iid
}

func client(t *testing.T, l *Lab, token string) *gitlab.Client {
	t.Helper()
	c, err := gitlab.NewClient(token, gitlab.WithBaseURL(l.APIURL()), gitlab.WithHTTPClient(l.HTTPClient()),
		gitlab.WithCustomRetryMax(0))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func waitEvent(t *testing.T, events <-chan Event, d time.Duration, ok func(Event) bool) Event {
	t.Helper()
	timer := time.NewTimer(d)
	defer timer.Stop()
	for {
		select {
		case ev := <-events:
			if ok(ev) {
				return ev
			}
		case <-timer.C:
			t.Fatalf("no matching event within %s", d)
		}
	}
}

func ptr[T any](v T) *T { return &v }

func io_Copy(b *strings.Builder, resp *http.Response) (int64, error) {
	defer resp.Body.Close()
	return io.Copy(b, resp.Body)
}
