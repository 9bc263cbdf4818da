package gitlab_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/convergeloop/converge/internal/emulator/fakelab"
	"github.com/convergeloop/converge/internal/forge"
	"github.com/convergeloop/converge/internal/testutil/labtest"
)

// TestPR_S12_BatchedThreadWritesOnTheEmulator: the backend's batched
// GraphQL replies and resolutions (its Documents, with the variables it
// builds) run on the emulator, whose schema is a subset of GitLab's, past
// one batch, and read back through Observe; a thread that does not exist
// fails alone.
func TestPR_S12_BatchedThreadWritesOnTheEmulator(t *testing.T) {
	lab := labtest.Start(t, 20*time.Millisecond)
	const path = "acme/batch/widget"
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
	c := labClient(t, lab, lab.Tokens().Author)
	ctx := t.Context()
	// Observe first: the batch addresses the MR by its global id.
	if _, err := c.Observe(ctx, ref); err != nil {
		t.Fatal(err)
	}
	const n = 53 // past one batch of 50
	var replies []forge.ThreadReply
	var ids []string
	for i := range n {
		id, _, err := lab.OpenDiscussion(path, iid, fakelab.UserReviewer, fakelab.NewDiscussion{Body: fmt.Sprintf("finding %d", i), Path: "main.go", NewLine: 5})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
		replies = append(replies, forge.ThreadReply{ThreadID: id, Body: fmt.Sprintf("fixed %d", i)})
	}
	missing := "0123456789abcdef0123456789abcdef01234567"
	replies = append(replies, forge.ThreadReply{ThreadID: missing, Body: "nobody reads this"})
	res := c.ReplyToThreads(ctx, ref, replies)
	if len(res) != n+1 {
		t.Fatalf("%d results for %d replies", len(res), n+1)
	}
	for i, r := range res[:n] {
		if r.Err != nil || r.Comment.ID == "" || r.Comment.Body != replies[i].Body || r.Comment.Author != fakelab.UserAuthor {
			t.Errorf("reply %d: %+v", i, r)
		}
	}
	if res[n].Err == nil {
		t.Error("a reply to a missing thread succeeded")
	}
	errs := c.ResolveThreads(ctx, ref, append(ids, missing))
	for i, err := range errs[:n] {
		if err != nil {
			t.Errorf("resolve %d: %v", i, err)
		}
	}
	if errs[n] == nil {
		t.Error("resolving a missing thread succeeded")
	}
	pr, err := c.Observe(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	done := 0
	for _, th := range pr.Threads {
		if th.IsResolved && len(th.Comments) == 2 && th.Comments[1].Author == fakelab.UserAuthor {
			done++
		}
	}
	if done != n {
		t.Errorf("%d threads replied to and resolved, want %d", done, n)
	}
}
