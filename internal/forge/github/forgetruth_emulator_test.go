package github_test

import (
	"context"
	"testing"

	gh "github.com/google/go-github/v93/github"

	"github.com/convergeloop/converge/internal/forge"
)

// TestPR_V5_CheckRunAnnotationsReachTheObservation: a check run created
// over REST with output and annotations, as a CI app posts it, is read
// back by the one GraphQL observation with both, so a red check can be
// handed to a fixer with where it failed.
func TestPR_V5_CheckRunAnnotationsReachTheObservation(t *testing.T) {
	hub, c, ref := emulatorPR(t)
	ctx := context.Background()
	pr, err := c.Observe(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	ci, err := gh.NewClient(gh.WithHTTPClient(hub.HTTPClient()), gh.WithAuthToken(hub.Tokens().CI), gh.WithEnterpriseURLs(hub.APIURL(), hub.APIURL()))
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = ci.Checks.CreateCheckRun(ctx, ref.Owner, ref.Repo, gh.CreateCheckRunOptions{
		Name: "lint", HeadSHA: pr.HeadSHA, Status: new("completed"), Conclusion: new("failure"),
		Output: &gh.CheckRunOutput{Title: new("1 problem"), Summary: new("golangci-lint run"), Text: new("main.go:5: bad"),
			Annotations: []*gh.CheckRunAnnotation{{Path: new("main.go"), StartLine: new(5), EndLine: new(6), AnnotationLevel: new("failure"),
				Title: new("revive"), Message: new("exported function should have comment")}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	pr, err = c.Observe(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	var lint *forge.CheckContext
	for i := range pr.Checks.Contexts {
		if pr.Checks.Contexts[i].Name == "lint" {
			lint = &pr.Checks.Contexts[i]
		}
	}
	want := forge.Annotation{Path: "main.go", StartLine: 5, EndLine: 6, Level: "FAILURE", Title: "revive", Message: "exported function should have comment"}
	switch {
	case lint == nil:
		t.Fatalf("no lint check run in %+v", pr.Checks)
	case lint.Conclusion != "FAILURE" || lint.Title != "1 problem" || lint.Summary != "golangci-lint run" || lint.Text != "main.go:5: bad":
		t.Fatalf("lint %+v", lint)
	case len(lint.Annotations) != 1 || lint.Annotations[0] != want:
		t.Fatalf("annotations %+v, want %+v", lint.Annotations, want)
	}
}
