// Package hubtest starts the GitHub emulator for tests in other packages
// and gives them a converge client against it.
package hubtest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/convergeloop/converge/internal/emulator/fakehub"
	ghclient "github.com/convergeloop/converge/internal/forge/github"
)

// Start runs an emulator over https for the test's lifetime, with the
// scripted Copilot answering after delay.
func Start(t testing.TB, delay time.Duration) *fakehub.Hub {
	t.Helper()
	return StartWith(t, fakehub.Options{CopilotDelay: delay})
}

// StartWith runs an emulator with opts (e.g. a seeded lag fault) for the
// test's lifetime; an empty StateDir becomes a test temporary directory.
func StartWith(t testing.TB, opts fakehub.Options) *fakehub.Hub {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	if opts.StateDir == "" {
		opts.StateDir = t.TempDir()
	}
	hub, err := fakehub.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := hub.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { hub.Close() })
	return hub
}

// Demo starts an emulator seeded with the demo repository and its PR.
func Demo(t testing.TB, delay time.Duration) (*fakehub.Hub, fakehub.DemoInfo) {
	t.Helper()
	hub := Start(t, delay)
	demo, err := fakehub.SeedDemo(context.Background(), hub)
	if err != nil {
		t.Fatal(err)
	}
	return hub, demo
}

// Client is converge's GitHub client acting with token against hub.
func Client(t testing.TB, hub *fakehub.Hub, token string) *ghclient.Client {
	t.Helper()
	c, err := ghclient.New(ghclient.Options{APIURL: hub.APIURL(), GraphQLURL: hub.GraphQLURL(), Token: token, CAFile: hub.CAFile()})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// DemoPRs seeds the demo repository with n PRs of the demo's change, each
// with the demo's Copilot script, and returns their numbers and URLs.
func DemoPRs(t testing.TB, hub *fakehub.Hub, n int) ([]int, []string) {
	t.Helper()
	demo, err := fakehub.SeedDemoWith(context.Background(), hub, fakehub.DemoOptions{})
	if err != nil {
		t.Fatal(err)
	}
	numbers, urls := []int{demo.Number}, []string{demo.PRURL}
	for i := 2; i <= n; i++ {
		num, err := hub.CreatePR(fakehub.DemoOwner, fakehub.DemoRepo, fakehub.NewPR{
			Head: fmt.Sprintf("%s-%d", fakehub.DemoBranch, i), Title: fmt.Sprintf("Add summary statistics (%d)", i),
			Files: fakehub.DemoPRFiles(), Message: "Add summary statistics",
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := hub.SetCopilotScript(fakehub.DemoOwner, fakehub.DemoRepo, num, fakehub.DemoScript()); err != nil {
			t.Fatal(err)
		}
		numbers, urls = append(numbers, num), append(urls, hub.PRURL(fakehub.DemoOwner, fakehub.DemoRepo, num))
	}
	return numbers, urls
}
