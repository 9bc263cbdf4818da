// Package labtest starts the GitLab emulator for tests in other packages
// and gives them the official GitLab client against it.
package labtest

import (
	"context"
	"testing"
	"time"

	gitlab "gitlab.com/gitlab-org/api/client-go"

	"github.com/convergeloop/converge/internal/emulator/fakelab"
)

// Start runs an emulator over https for the test's lifetime, with the
// scripted Duo answering after delay.
func Start(t testing.TB, delay time.Duration) *fakelab.Lab {
	t.Helper()
	return StartWith(t, fakelab.Options{DuoDelay: delay})
}

// StartWith runs an emulator with opts for the test's lifetime; an empty
// StateDir becomes a test temporary directory.
func StartWith(t testing.TB, opts fakelab.Options) *fakelab.Lab {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	if opts.StateDir == "" {
		opts.StateDir = t.TempDir()
	}
	lab, err := fakelab.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := lab.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lab.Close() })
	return lab
}

// Demo starts an emulator seeded with the demo project and its MR.
func Demo(t testing.TB, delay time.Duration) (*fakelab.Lab, fakelab.DemoInfo) {
	t.Helper()
	lab := Start(t, delay)
	demo, err := fakelab.SeedDemo(context.Background(), lab)
	if err != nil {
		t.Fatal(err)
	}
	return lab, demo
}

// Client is the official GitLab client acting with token against lab,
// trusting its CA; it does not retry, so tests see every answer.
func Client(t testing.TB, lab *fakelab.Lab, token string) *gitlab.Client {
	t.Helper()
	c, err := gitlab.NewClient(token, gitlab.WithBaseURL(lab.APIURL()), gitlab.WithHTTPClient(lab.HTTPClient()), gitlab.WithCustomRetryMax(0))
	if err != nil {
		t.Fatal(err)
	}
	return c
}
