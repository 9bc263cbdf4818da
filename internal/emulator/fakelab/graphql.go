package fakelab

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	graphqlgo "github.com/graph-gophers/graphql-go"
)

//go:embed schema.graphql
var schemaSDL string

// SchemaSDL is the emulator's GraphQL schema, for fidelity tests.
func SchemaSDL() string { return schemaSDL }

type ctxKey int

const userKey ctxKey = 1

func ctxUser(ctx context.Context) *user {
	u, _ := ctx.Value(userKey).(*user)
	return u
}

type gqlRequest struct {
	Query         string         `json:"query"`
	OperationName string         `json:"operationName"`
	Variables     map[string]any `json:"variables"`
}

// errNotAvailable is GitLab's answer for what the user may not see or do.
const errNotAvailable = "The resource that you are attempting to access does not exist or you don't have permission to perform this action"

// errNotAvailableErr is errNotAvailable as the error a resolver returns.
//
//lint:ignore ST1005 GitLab's own message, capitalized as GitLab sends it
var errNotAvailableErr = errors.New(errNotAvailable)

func gqlErrors(w http.ResponseWriter, status int, msgs ...string) {
	var es []any
	for _, m := range msgs {
		es = append(es, map[string]any{"message": m})
	}
	writeJSON(w, status, map[string]any{"errors": es})
}

// serveGraphQL executes one request with the lab's lock held throughout.
func (l *Lab) serveGraphQL(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		gqlErrors(w, http.StatusMethodNotAllowed, "GraphQL only supports POST requests")
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 8<<20))
	var req gqlRequest
	if err == nil {
		err = json.Unmarshal(body, &req)
	}
	if err != nil || strings.TrimSpace(req.Query) == "" {
		gqlErrors(w, http.StatusBadRequest, "Unexpected end of document")
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.counts.GraphQL++
	u := l.authenticate(r)
	hasToken := r.Header.Get("PRIVATE-TOKEN") != "" || strings.HasPrefix(r.Header.Get("Authorization"), "Bearer ")
	if u == nil && hasToken {
		gqlErrors(w, http.StatusUnauthorized, "Invalid token")
		return
	}
	if u != nil && !l.rateLocked(w, u) {
		writeJSON(w, http.StatusTooManyRequests, msg("429 Too Many Requests"))
		return
	}
	fields := mutationFields(req.Query)
	if len(fields) > 0 {
		l.logWriteLocked(u, "graphql", "mutation", fields)
	}
	// GitLab caps a request's mutations; converge batches at most 50.
	if n := len(fields); n > 50 {
		gqlErrors(w, http.StatusOK, fmt.Sprintf("Query has %d mutations, the maximum is 50", n))
		return
	}
	ctx := context.WithValue(r.Context(), userKey, u)
	resp := l.schema.Exec(ctx, req.Query, req.OperationName, req.Variables)
	out := map[string]any{}
	if resp.Data != nil {
		out["data"] = resp.Data
	}
	if len(resp.Errors) > 0 {
		var es []any
		for _, e := range resp.Errors {
			m := map[string]any{"message": e.Message}
			if len(e.Locations) > 0 {
				m["locations"] = e.Locations
			}
			if len(e.Path) > 0 {
				m["path"] = e.Path
			}
			es = append(es, m)
		}
		out["errors"] = es
	}
	writeJSON(w, http.StatusOK, out)
}

// gid is one of GitLab's global ids ("gid://gitlab/Type/id"), as the
// DiscussionID and NoteableID scalars carry them.
type gid string

func (gid) ImplementsGraphQLType(name string) bool {
	return name == "DiscussionID" || name == "NoteableID" || name == "NoteID"
}

func (g gid) MarshalJSON() ([]byte, error) { return json.Marshal(string(g)) }

func (g *gid) UnmarshalGraphQL(input any) error {
	s, ok := input.(string)
	if !ok || !strings.HasPrefix(s, "gid://gitlab/") {
		return fmt.Errorf("%v is not a valid Global ID", input)
	}
	*g = gid(s)
	return nil
}

func (g gid) parts() (typ, id string) {
	rest := strings.TrimPrefix(string(g), "gid://gitlab/")
	typ, id, _ = strings.Cut(rest, "/")
	return typ, id
}

type rootResolver struct{ l *Lab }

func (r *rootResolver) CurrentUser(ctx context.Context) *userResolver {
	u := ctxUser(ctx)
	if u == nil {
		return nil
	}
	return &userResolver{l: r.l, u: u}
}

type createNoteArgs struct {
	Input struct {
		Body             string
		ClientMutationID *string
		Confidential     *bool
		DiscussionID     *gid
		NoteableID       gid
	}
}

type createNotePayload struct {
	ClientMutationID *string
	Errors           []string
	Note             *noteResolver
}

func (r *rootResolver) CreateNote(ctx context.Context, args createNoteArgs) (*createNotePayload, error) {
	l, u := r.l, ctxUser(ctx)
	in := args.Input
	typ, id := in.NoteableID.parts()
	if u == nil || typ != "MergeRequest" {
		return nil, errNotAvailableErr
	}
	m := l.mrByID(id)
	if m == nil || !m.proj.canRead(u) {
		return nil, errNotAvailableErr
	}
	out := &createNotePayload{ClientMutationID: in.ClientMutationID, Errors: []string{}}
	var n *note
	var err error
	if in.DiscussionID != nil {
		dt, did := in.DiscussionID.parts()
		d := l.findDiscussion(m, did)
		if dt != "Discussion" || d == nil {
			return nil, errNotAvailableErr
		}
		n, err = l.replyLocked(m, u, d, in.Body)
	} else {
		n, err = l.topNoteLocked(m, u, in.Body)
	}
	if err != nil {
		out.Errors = append(out.Errors, "Note "+err.Error())
		return out, nil
	}
	out.Note = &noteResolver{l: l, m: m, n: n}
	return out, nil
}

type toggleArgs struct {
	Input struct {
		ClientMutationID *string
		ID               gid
		Resolve          bool
	}
}

type togglePayload struct {
	ClientMutationID *string
	Discussion       *discussionResolver
	Errors           []string
}

func (r *rootResolver) DiscussionToggleResolve(ctx context.Context, args toggleArgs) (*togglePayload, error) {
	l, u := r.l, ctxUser(ctx)
	typ, id := args.Input.ID.parts()
	if u == nil || typ != "Discussion" {
		return nil, errNotAvailableErr
	}
	m, d := l.discussionByID(id)
	if d == nil || !m.proj.canRead(u) || !d.resolvable() {
		return nil, errNotAvailableErr
	}
	if err := l.resolveLocked(m, u, d, args.Input.Resolve); err != nil {
		return nil, errNotAvailableErr
	}
	return &togglePayload{ClientMutationID: args.Input.ClientMutationID, Discussion: &discussionResolver{l: l, m: m, d: d}, Errors: []string{}}, nil
}

func (l *Lab) mrByID(id string) *mr {
	for _, p := range l.projects {
		for _, m := range p.mrs {
			if strconv.Itoa(m.id) == id {
				return m
			}
		}
	}
	return nil
}

func (l *Lab) discussionByID(id string) (*mr, *discussion) {
	for _, p := range l.projects {
		for _, m := range p.mrs {
			if d := l.findDiscussion(m, id); d != nil {
				return m, d
			}
		}
	}
	return nil, nil
}

type userResolver struct {
	l *Lab
	u *user
}

func (r *userResolver) ID() graphqlgo.ID {
	return graphqlgo.ID(fmt.Sprintf("gid://gitlab/User/%d", r.u.id))
}
func (r *userResolver) Name() string     { return r.u.name }
func (r *userResolver) State() string    { return "active" }
func (r *userResolver) Username() string { return r.u.username }
func (r *userResolver) WebURL() string   { return r.l.URL() + "/" + r.u.username }

func userOrNil(l *Lab, u *user) *userResolver {
	if u == nil {
		return nil
	}
	return &userResolver{l: l, u: u}
}

type noteResolver struct {
	l *Lab
	m *mr
	n *note
}

// NoteGID is a note's GraphQL id: DiffNote, DiscussionNote or Note by
// the note's type, as GitLab's.
func noteGID(n *note) string {
	typ := n.typ
	if typ == "" {
		typ = "Note"
	}
	return fmt.Sprintf("gid://gitlab/%s/%d", typ, n.id)
}

func (r *noteResolver) Author() *userResolver     { return &userResolver{l: r.l, u: r.n.author} }
func (r *noteResolver) Body() string              { return r.n.body }
func (r *noteResolver) CreatedAt() graphqlgo.Time { return graphqlgo.Time{Time: r.n.createdAt} }
func (r *noteResolver) UpdatedAt() graphqlgo.Time { return graphqlgo.Time{Time: r.n.updatedAt} }
func (r *noteResolver) ID() gid                   { return gid(noteGID(r.n)) }
func (r *noteResolver) Resolvable() bool          { return r.n.resolvable }
func (r *noteResolver) Resolved() bool            { return r.n.resolved }
func (r *noteResolver) ResolvedBy() *userResolver { return userOrNil(r.l, r.n.resolvedBy) }
func (r *noteResolver) System() bool              { return r.n.system }
func (r *noteResolver) Discussion() *discussionResolver {
	return &discussionResolver{l: r.l, m: r.m, d: r.n.disc}
}
func (r *noteResolver) ResolvedAt() *graphqlgo.Time {
	if !r.n.resolved {
		return nil
	}
	return &graphqlgo.Time{Time: r.n.resolvedAt}
}

type discussionResolver struct {
	l *Lab
	m *mr
	d *discussion
}

func (r *discussionResolver) CreatedAt() graphqlgo.Time {
	return graphqlgo.Time{Time: r.d.first().createdAt}
}
func (r *discussionResolver) ID() gid          { return gid("gid://gitlab/Discussion/" + r.d.id) }
func (r *discussionResolver) ReplyID() gid     { return r.ID() }
func (r *discussionResolver) Resolvable() bool { return r.d.resolvable() }
func (r *discussionResolver) Resolved() bool   { return r.d.resolved() }
func (r *discussionResolver) ResolvedBy() *userResolver {
	if !r.d.resolved() {
		return nil
	}
	return userOrNil(r.l, r.d.first().resolvedBy)
}
func (r *discussionResolver) ResolvedAt() *graphqlgo.Time {
	if !r.d.resolved() {
		return nil
	}
	return &graphqlgo.Time{Time: r.d.first().resolvedAt}
}
