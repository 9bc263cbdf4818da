package bench

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"github.com/convergeloop/converge/internal/emulator/fakehub"
	"github.com/convergeloop/converge/internal/forge"
	"github.com/convergeloop/converge/internal/forge/github"
)

// world is one emulator with one open PR whose diff has room for 60 line
// comments, converge's client as the PR's author, and the baseline with
// the same token.
type world struct {
	hub      *fakehub.Hub
	ref      forge.PRRef
	client   *github.Client
	baseline *Baseline
	reviewer *Baseline // the same calls, with the human reviewer's token
}

const worldLines = 60

func newWorld(ctx context.Context, dir string) (*world, error) {
	hub, err := fakehub.New(fakehub.Options{StateDir: dir})
	if err != nil {
		return nil, err
	}
	if err := hub.Start(ctx); err != nil {
		return nil, err
	}
	w := &world{hub: hub}
	if err := w.seed(); err != nil {
		hub.Close()
		return nil, err
	}
	w.client, err = github.New(github.Options{APIURL: hub.APIURL(), Token: hub.Tokens().Author, HTTPClient: hub.HTTPClient()})
	if err != nil {
		hub.Close()
		return nil, err
	}
	w.baseline = &Baseline{HTTP: hub.HTTPClient(), APIURL: hub.APIURL(), GQLURL: hub.GraphQLURL(), Token: hub.Tokens().Author}
	w.reviewer = &Baseline{HTTP: hub.HTTPClient(), APIURL: hub.APIURL(), GQLURL: hub.GraphQLURL(), Token: hub.Tokens().Reviewer}
	return w, nil
}

func (w *world) close() { w.hub.Close() }

func (w *world) seed() error {
	var before, after strings.Builder
	for i := range worldLines {
		fmt.Fprintf(&before, "line %d\n", i+1)
		fmt.Fprintf(&after, "line %d, changed\n", i+1)
	}
	const owner, name = "bench", "app"
	if err := w.hub.CreateRepo(owner, name, map[string]string{"notes.txt": before.String()}, fakehub.RepoOptions{TestCommand: []string{"true"}}); err != nil {
		return err
	}
	n, err := w.hub.CreatePR(owner, name, fakehub.NewPR{
		Head: "change", Title: "Change every line", Body: "A PR for the benchmark.",
		Files: map[string]string{"notes.txt": after.String()}, Message: "change every line",
	})
	if err != nil {
		return err
	}
	w.ref = forge.PRRef{Host: w.hub.Host(), Owner: owner, Repo: name, Number: n}
	return nil
}

// review posts one review by the human reviewer with n line comments, so
// the PR gains n unresolved threads.
func (w *world) review(ctx context.Context, n int) error {
	if n > worldLines {
		return fmt.Errorf("at most %d threads", worldLines)
	}
	var cs []map[string]any
	for i := range n {
		cs = append(cs, map[string]any{"path": "notes.txt", "line": i + 1, "side": "RIGHT", "body": fmt.Sprintf("Please reword line %d.", i+1)})
	}
	u := fmt.Sprintf("%s/repos/%s/%s/pulls/%d/reviews", w.hub.APIURL(), w.ref.Owner, w.ref.Repo, w.ref.Number)
	return w.reviewer.do(ctx, http.MethodPost, u, map[string]any{"event": "COMMENT", "comments": cs}, nil)
}

// counted runs fn and returns the requests the emulator served meanwhile.
func (w *world) counted(fn func() error) (fakehub.Counts, error) {
	before := w.hub.Counts()
	err := fn()
	return w.hub.Counts().Sub(before), err
}

// ciSettled waits until the emulator's CI finished on the PR's head.
func (w *world) ciSettled(ctx context.Context) error {
	events, cancel := w.hub.Subscribe()
	defer cancel()
	for {
		pr, err := w.client.Observe(ctx, w.ref)
		if err != nil {
			return err
		}
		if settled(pr.Checks) {
			return nil
		}
		select {
		case <-events:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func settled(ch forge.CheckRollup) bool {
	if len(ch.Contexts) == 0 {
		return false
	}
	for _, c := range ch.Contexts {
		if !c.IsStatus && c.Status != "COMPLETED" {
			return false
		}
		if c.IsStatus && (c.Conclusion == "" || c.Conclusion == "PENDING" || c.Conclusion == "EXPECTED") {
			return false
		}
	}
	return true
}
