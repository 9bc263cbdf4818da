package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/convergeloop/converge/internal/agent"
	"github.com/convergeloop/converge/internal/agent/backends"
	"github.com/convergeloop/converge/internal/cmdutil"
	"github.com/convergeloop/converge/internal/emulator/fakehub"
	"github.com/convergeloop/converge/internal/emulator/fakelab"
	"github.com/convergeloop/converge/internal/forge"
	"github.com/convergeloop/converge/internal/forge/provider"
	"github.com/convergeloop/converge/internal/prloop"
	"github.com/convergeloop/converge/internal/repo"
	"github.com/convergeloop/converge/internal/review"
)

// runDemoGitLab is `converge demo --forge gitlab`: the GitLab emulator
// in-process with the demo's project and merge request, GitLab Duo not
// enabled on it (as on most instances), so the independent review of
// every head is converge's local multi-angle review (PR-S4, conjunct 4).
// Offline, that review's agent is demoReviewer, which reads the head's
// files for the demo's known defects.
func runDemoGitLab(ctx context.Context, ios *cmdutil.IOStreams, opts *demoOptions, dir string) error {
	lab, err := fakelab.New(fakelab.Options{
		StateDir: filepath.Join(dir, "forge"),
		Logger:   slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	if err := lab.Start(ctx); err != nil {
		return fmt.Errorf("demo: start emulator: %w", err)
	}
	defer lab.Close()
	demo, err := fakelab.SeedDemo(ctx, lab)
	if err != nil {
		return fmt.Errorf("demo: seed project: %w", err)
	}
	if err := lab.SetDuoAvailable(demo.Project, false); err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	ref, err := forge.ParsePRURL(demo.MRURL)
	if err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	token := lab.Tokens().Author
	site, err := forgeOf(ref.Forge)
	if err != nil {
		return err
	}
	client, err := opts.factory.OrDefault(ios).ForgeClient(site, provider.ClientOptions{APIURL: lab.APIURL(), Token: token, HTTPClient: lab.HTTPClient()})
	if err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	if !opts.JSON {
		fmt.Fprintf(ios.Out, "converge demo: GitLab emulator at %s, merge request %s (no GitLab Duo: the local review is the independent reviewer)\n", lab.APIURL(), demo.MRURL)
	}
	events, cancel := lab.Subscribe()
	defer cancel()
	wake := wakeOn(events)

	cfg := prloop.DefaultConfig()
	cfg.Bot, cfg.ExpectsBot, cfg.LocalReview = nil, false, true
	cfg.CIWaitMax = 2 * time.Minute
	fixer, err := opts.factory.OrDefault(ios).Agent(backends.Config{}, backends.Suggest, "", backends.RoleFix)
	if err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	gitURL := lab.GitURL(demo.Project)
	if opts.atForge != nil {
		defer opts.atForge(lab, demo)
	}
	return demoLoop(ctx, ios, opts, client, loopParams{
		Ref:      ref,
		Forge:    client,
		CloneURL: gitURL,
		GitEnv:   repo.AuthEnvForUser(gitURL, repo.GitLabUser, token, lab.CAFile()),
		StateDir: dir,
		Agent:    fixer,
		Reviewer: &review.Reviewer{Agent: demoReviewer{}, Budget: time.Minute},
		Config:   cfg,
		PollMin:  250 * time.Millisecond,
		PollMax:  2 * time.Second,
		Wake:     wake,
		JSON:     opts.JSON,
		Keep:     opts.Keep,
		Secrets:  repo.Secrets(token),
		Author:   "converge",
		Email:    "converge@users.noreply.gitlab.com",
	})
}

// demoReviewer is the offline demo's review agent: a real check of the
// head, narrow by design. On the correctness angle it reports each of the
// demo's known defects whose code is still in the head's files, with the
// fix as a suggestion the demo's fixer applies; a head without them
// reviews clean. Every other angle finds nothing.
type demoReviewer struct{}

func (demoReviewer) Name() string { return "demo-review" }

func (demoReviewer) Run(_ context.Context, t agent.Task) (agent.Result, error) {
	type finding struct {
		File      string `json:"file"`
		LineRange [2]int `json:"line_range"`
		Summary   string `json:"summary"`
		Verdict   string `json:"verdict"`
	}
	found := []finding{}
	if t.Angle == review.DefaultAngles()[0].Name {
		for _, round := range fakehub.DemoScript().Rounds {
			for _, f := range round.Findings {
				data, err := os.ReadFile(filepath.Join(t.Workdir, f.Path))
				if err != nil {
					continue
				}
				if start, end := fakehub.AnchorLines(string(data), f); start > 0 {
					found = append(found, finding{File: f.Path, LineRange: [2]int{start, end}, Summary: fakehub.SuggestionBody(f), Verdict: "structural"})
				}
			}
		}
	}
	line, err := json.Marshal(found)
	if err != nil {
		return agent.Result{}, err
	}
	return agent.Result{Record: agent.StatusRecord{Status: agent.StatusComplete, Summary: fmt.Sprintf("%d finding(s)", len(found))}, Output: string(line)}, nil
}
