package glschema

import (
	"strings"
	"testing"

	"github.com/vektah/gqlparser/v2"
	"github.com/vektah/gqlparser/v2/ast"
)

func TestExcerptLoads(t *testing.T) {
	t.Parallel()
	s := Load(t)
	if s.Query == nil || s.Query.Fields.ForName("currentUser") == nil || s.Query.Fields.ForName("project") == nil {
		t.Fatal("Query lacks currentUser or project")
	}
	if s.Mutation == nil || s.Mutation.Fields.ForName("createNote") == nil || s.Mutation.Fields.ForName("discussionToggleResolve") == nil {
		t.Fatal("Mutation lacks createNote or discussionToggleResolve")
	}
}

// The batched thread writes: aliased mutations in one request, with GitLab's
// global IDs as variables of GitLab's ID scalars.
const batchedWrites = `
mutation Batch($mr: NoteableID!, $d1: DiscussionID!, $d2: DiscussionID!) {
  r1: createNote(input: {noteableId: $mr, discussionId: $d1, body: "fixed in abc123"}) {
    note { id body author { username } createdAt }
    errors
  }
  r2: createNote(input: {noteableId: $mr, discussionId: $d2, body: "done"}) {
    note { id body author { username } createdAt }
    errors
  }
  t1: discussionToggleResolve(input: {id: $d1, resolve: true}) {
    discussion { id resolved }
    errors
  }
  t2: discussionToggleResolve(input: {id: $d2, resolve: true}) {
    discussion { id resolved }
    errors
  }
}`

const readMR = `
query MR($path: ID!, $iid: String!) {
  currentUser { username }
  project(fullPath: $path) {
    id fullPath
    mergeRequest(iid: $iid) {
      id iid title description state webUrl sourceBranch targetBranch
      diffHeadSha diffRefs { baseSha headSha startSha }
      workInProgress conflicts mergeStatus
      author { id username }
      labels { nodes { title } }
      reviewers { nodes { id username } }
      approvedBy { nodes { id username } }
      headPipeline { id sha status }
      commitsWithoutMergeCommits(first: 100) { nodes { sha } pageInfo { hasNextPage endCursor } }
      discussions(first: 100) {
        pageInfo { hasNextPage endCursor }
        nodes {
          id resolved resolvable createdAt
          notes {
            nodes {
              id body system createdAt resolvable resolved
              author { username }
              discussion { id }
              position {
                positionType oldPath newPath oldLine newLine
                diffRefs { baseSha headSha startSha }
              }
            }
          }
        }
      }
      notes(first: 100) { nodes { id body system createdAt author { username } } }
    }
  }
}`

func TestConvergeDocumentsValidate(t *testing.T) {
	t.Parallel()
	s := Load(t)
	for name, doc := range map[string]string{"batched writes": batchedWrites, "read MR": readMR} {
		if err := ValidateDocument(s, doc); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestBadDocumentsFail(t *testing.T) {
	t.Parallel()
	s := Load(t)
	for name, doc := range map[string]string{
		"misspelt field":                  `mutation { createNote(input: {noteableId: "gid://gitlab/MergeRequest/1", body: "x"}) { note { id bdy } errors } }`,
		"misspelt mutation":               `mutation { discussionToggleResolved(input: {id: "gid://gitlab/Discussion/1", resolve: true}) { errors } }`,
		"wrong argument type":             `mutation { discussionToggleResolve(input: {id: "gid://gitlab/Discussion/1", resolve: "yes"}) { errors } }`,
		"wrong variable type":             `query($iid: Int!) { project(fullPath: "g/p") { mergeRequest(iid: $iid) { id } } }`,
		"missing required input field":    `mutation { createNote(input: {body: "x"}) { errors } }`,
		"field absent in this version":    `query { currentUser { bot } }`,
		"draft is newer than the excerpt": `query { project(fullPath: "g/p") { mergeRequest(iid: "1") { draft } } }`,
	} {
		err := ValidateDocument(s, doc)
		if err == nil {
			t.Errorf("%s: validated, want an error", name)
			continue
		}
		t.Logf("%s: %v", name, err)
	}
}

func TestCheckSubset(t *testing.T) {
	t.Parallel()
	gl := Load(t)
	ok, err := gqlparser.LoadSchema(&ast.Source{Name: "ours.graphql", Input: `
scalar Time
scalar DiscussionID
type Query { currentUser: User }
type User { id: ID! username: String! }
type Discussion { id: DiscussionID! resolved: Boolean! createdAt: Time! }
input DiscussionToggleResolveInput { clientMutationId: String id: DiscussionID! resolve: Boolean! }
type DiscussionToggleResolvePayload { discussion: Discussion errors: [String!]! }
type Mutation { discussionToggleResolve(input: DiscussionToggleResolveInput!): DiscussionToggleResolvePayload }
`})
	if err != nil {
		t.Fatal(err)
	}
	if probs := CheckSubset(gl, ok); len(probs) > 0 {
		t.Errorf("a true subset reported: %v", probs)
	}

	bad, err := gqlparser.LoadSchema(&ast.Source{Name: "bad.graphql", Input: `
type Query { currentUser: User }
type User { id: ID! username: String bot: Boolean! }
type Discussion { id: ID! }
`})
	if err != nil {
		t.Fatal(err)
	}
	probs := strings.Join(CheckSubset(gl, bad), "\n")
	for _, want := range []string{
		"User.username: type String, GitLab has String!",
		"User.bot: not in GitLab's schema",
		"Discussion.id: type ID!, GitLab has DiscussionID!",
	} {
		if !strings.Contains(probs, want) {
			t.Errorf("problems lack %q:\n%s", want, probs)
		}
	}
}
