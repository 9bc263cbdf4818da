package gitlab_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	gl "gitlab.com/gitlab-org/api/client-go"

	"github.com/convergeloop/converge/internal/emulator/fakelab"
	"github.com/convergeloop/converge/internal/forge"
	"github.com/convergeloop/converge/internal/forge/forgetest"
	"github.com/convergeloop/converge/internal/forge/gitlab"
	"github.com/convergeloop/converge/internal/testutil/labtest"
)

// TestContract_Emulator runs the forge contract against the GitLab
// emulator: converge acts as the MR's author (developer), the fixture as
// lab-reviewer (maintainer) through the emulator's acting API, and the
// official GitLab client reads the facts. GitLab has no check runs
// (CheckRuns nil) and no review objects (CommentOnlyReviews).
func TestContract_Emulator(t *testing.T) {
	lab := labtest.Start(t, 20*time.Millisecond)
	var n atomic.Int64
	forgetest.Run(t, func(t *testing.T) forgetest.Harness {
		return labHarness(t, lab, fmt.Sprintf("acme/widgets/contract%d", n.Add(1)))
	})
}

const (
	contractBase = "package main\n\nfunc main() {\n\tprintln(\"hello\")\n}\n"
	contractHead = "package main\n\nfunc main() {\n\tprintln(\"hello\")\n\tprintln(\"bye\")\n}\n"
)

// labClient is converge's GitLab backend acting with token on lab.
func labClient(t testing.TB, lab *fakelab.Lab, token string) *gitlab.Client {
	t.Helper()
	c, err := gitlab.New(gitlab.Options{APIURL: lab.APIURL(), Token: token, HTTPClient: lab.HTTPClient()})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func labHarness(t testing.TB, lab *fakelab.Lab, path string) forgetest.Harness {
	t.Helper()
	// Duo is not available: requesting it records the request and starts
	// nothing (the suite tests requests, not the scripted reviewer).
	if _, err := lab.CreateProject(path, map[string]string{"go.mod": "module example.com/widget\n\ngo 1.22\n", "main.go": contractBase},
		fakelab.ProjectOptions{NoDuo: true}); err != nil {
		t.Fatal(err)
	}
	iid, err := lab.CreateMR(path, fakelab.NewMR{Source: "feature/bye", Title: "Say bye", Description: "Adds a farewell.",
		Files: map[string]string{"main.go": contractHead}})
	if err != nil {
		t.Fatal(err)
	}
	ref, err := forge.ParsePRURL(lab.MRURL(path, iid))
	if err != nil {
		t.Fatal(err)
	}
	fx := &labFixture{lab: lab, rest: labtest.Client(t, lab, lab.Tokens().Reviewer), path: path, iid: iid, ref: ref}
	return forgetest.Harness{
		Forge:              labClient(t, lab, lab.Tokens().Author),
		Fixture:            fx,
		Rejected:           labClient(t, lab, "glpat-"+forgetest.Marker+"Rejected00000000"),
		CommentOnlyReviews: true,
	}
}

// labFixture is lab-reviewer on one MR of the emulator.
type labFixture struct {
	lab    *fakelab.Lab
	rest   *gl.Client
	path   string
	iid    int
	ref    forge.PRRef
	pushes atomic.Int64
}

func (f *labFixture) mr(ctx context.Context) (*gl.MergeRequest, error) {
	mr, _, err := f.rest.MergeRequests.GetMergeRequest(f.path, int64(f.iid), nil, gl.WithContext(ctx))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", f.ref, err)
	}
	return mr, nil
}

func (f *labFixture) Facts(ctx context.Context) (forgetest.Facts, error) {
	mr, err := f.mr(ctx)
	if err != nil {
		return forgetest.Facts{}, err
	}
	commits, _, err := f.rest.MergeRequests.GetMergeRequestCommits(f.path, int64(f.iid), nil, gl.WithContext(ctx))
	if err != nil {
		return forgetest.Facts{}, fmt.Errorf("read commits: %w", err)
	}
	proj, _, err := f.rest.Projects.GetProject(f.path, nil, gl.WithContext(ctx))
	if err != nil {
		return forgetest.Facts{}, fmt.Errorf("read project: %w", err)
	}
	return forgetest.Facts{
		PR: f.ref, Author: mr.Author.Username, Viewer: fakelab.UserAuthor, Reviewer: fakelab.UserReviewer,
		HeadRef: mr.SourceBranch, BaseRef: mr.TargetBranch, HeadSHA: mr.SHA, Commits: len(commits),
		CloneURL: proj.HTTPURLToRepo, MergeState: forge.MergeClean,
		Path: "main.go", Line: 5, LineText: "\tprintln(\"bye\")",
		Requestable: []forgetest.Reviewer{
			{Login: fakelab.UserReviewer},
			{Login: fakelab.UserDuo, Bot: true},
		},
		Permissions: map[string]forge.Permission{
			fakelab.UserOwner: forge.PermAdmin, fakelab.UserReviewer: forge.PermMaintain,
			fakelab.UserReporter: forge.PermRead, fakelab.UserOutsider: forge.PermNone,
		},
	}, nil
}

// Review opens one diff discussion per comment as lab-reviewer; GitLab
// keeps no review body (Harness.CommentOnlyReviews).
func (f *labFixture) Review(ctx context.Context, r forgetest.Review) (string, error) {
	if len(r.Comments) == 0 {
		return "", fmt.Errorf("a GitLab review is its diff notes: none given")
	}
	mr, err := f.mr(ctx)
	if err != nil {
		return "", err
	}
	for _, c := range r.Comments {
		if _, _, err := f.lab.OpenDiscussion(f.path, f.iid, fakelab.UserReviewer, fakelab.NewDiscussion{Body: c.Body, Path: c.Path, NewLine: c.Line}); err != nil {
			return "", fmt.Errorf("open discussion: %w", err)
		}
	}
	return "diffnotes:" + fakelab.UserReviewer + ":" + mr.SHA, nil
}

func (f *labFixture) Comment(ctx context.Context, body string) error {
	_, _, err := f.rest.Notes.CreateMergeRequestNote(f.path, int64(f.iid), &gl.CreateMergeRequestNoteOptions{Body: &body}, gl.WithContext(ctx))
	return err
}

func (f *labFixture) Push(ctx context.Context) (string, error) {
	mr, err := f.mr(ctx)
	if err != nil {
		return "", err
	}
	name := fmt.Sprintf("%s-%d.txt", forgetest.Marker, f.pushes.Add(1))
	return f.lab.PushFiles(f.path, mr.SourceBranch, fakelab.UserReviewer, map[string]string{name: "pushed\n"}, forgetest.Marker+": push "+name)
}

// ResetHead force-pushes the source branch back to sha as lab-reviewer
// (forgetest.HeadResetter).
func (f *labFixture) ResetHead(ctx context.Context, sha string) error {
	mr, err := f.mr(ctx)
	if err != nil {
		return err
	}
	return f.lab.ResetBranch(f.path, mr.SourceBranch, sha, fakelab.UserReviewer)
}
