package fakehub

import "net/http"

// Counts is what the hub served, by kind, so tests and `converge bench`
// hold a client to a request and point budget counted at the forge, not
// by the client. Requests answered by an injected fault or an outage are
// not counted: they never reached the API.
type Counts struct {
	RESTGet   int // REST GET and HEAD requests, 304s included
	RESTWrite int // REST requests of any other method
	// NotModified counts REST GETs answered 304 Not Modified: free on
	// the primary limit.
	NotModified     int
	GraphQLQuery    int // GraphQL requests holding a query
	GraphQLMutation int // GraphQL requests holding a mutation
	// Mutations counts the mutation fields those requests executed
	// (aliased mutations: several per request).
	Mutations int
	// RESTPoints are primary REST points: 1 per request, 0 for a 304.
	RESTPoints int
	// GraphQLPoints are primary GraphQL points by GitHub's published
	// formula (points.go).
	GraphQLPoints int
	// SecondaryPoints are GitHub's secondary-limit points: a REST read or
	// a GraphQL query 1, a REST write or a GraphQL mutation 5.
	SecondaryPoints int
}

// Requests is every API request counted: REST and GraphQL.
func (c Counts) Requests() int {
	return c.RESTGet + c.RESTWrite + c.GraphQLQuery + c.GraphQLMutation
}

// Writes is every write request: REST writes and GraphQL mutations.
func (c Counts) Writes() int { return c.RESTWrite + c.GraphQLMutation }

// PrimaryPoints is what the requests cost on the primary limits.
func (c Counts) PrimaryPoints() int { return c.RESTPoints + c.GraphQLPoints }

// Sub is c less an earlier reading, for the cost of what ran between.
func (c Counts) Sub(before Counts) Counts {
	return Counts{
		RESTGet: c.RESTGet - before.RESTGet, RESTWrite: c.RESTWrite - before.RESTWrite,
		NotModified:  c.NotModified - before.NotModified,
		GraphQLQuery: c.GraphQLQuery - before.GraphQLQuery, GraphQLMutation: c.GraphQLMutation - before.GraphQLMutation,
		Mutations:  c.Mutations - before.Mutations,
		RESTPoints: c.RESTPoints - before.RESTPoints, GraphQLPoints: c.GraphQLPoints - before.GraphQLPoints,
		SecondaryPoints: c.SecondaryPoints - before.SecondaryPoints,
	}
}

func (c *Counts) add(d Counts) {
	c.RESTGet += d.RESTGet
	c.RESTWrite += d.RESTWrite
	c.NotModified += d.NotModified
	c.GraphQLQuery += d.GraphQLQuery
	c.GraphQLMutation += d.GraphQLMutation
	c.Mutations += d.Mutations
	c.RESTPoints += d.RESTPoints
	c.GraphQLPoints += d.GraphQLPoints
	c.SecondaryPoints += d.SecondaryPoints
}

// tally is the hub's counters: in total and by the token's login.
type tally struct {
	total   Counts
	byLogin map[string]*Counts
}

func (t *tally) addLocked(u *user, d Counts) {
	t.total.add(d)
	if u == nil {
		return
	}
	if t.byLogin == nil {
		t.byLogin = map[string]*Counts{}
	}
	c := t.byLogin[u.restLogin]
	if c == nil {
		c = &Counts{}
		t.byLogin[u.restLogin] = c
	}
	c.add(d)
}

// tallyRESTLocked counts one REST answer; h.mu must be held.
func (h *Hub) tallyRESTLocked(u *user, method string, notModified bool) {
	d := Counts{}
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		d.RESTGet, d.SecondaryPoints = 1, secondaryRead
	default:
		d.RESTWrite, d.SecondaryPoints = 1, secondaryWrite
	}
	if notModified {
		d.NotModified = 1
	} else {
		d.RESTPoints = 1
	}
	h.tally.addLocked(u, d)
}

// tallyGraphQLLocked counts one GraphQL request of score sc; h.mu must be
// held.
func (h *Hub) tallyGraphQLLocked(u *user, sc gqlScore) {
	d := Counts{GraphQLPoints: sc.Points}
	if sc.Mutation {
		d.GraphQLMutation, d.Mutations, d.SecondaryPoints = 1, sc.Fields, secondaryMutation
	} else {
		d.GraphQLQuery, d.SecondaryPoints = 1, secondaryQuery
	}
	h.tally.addLocked(u, d)
}

// Counts returns what the hub served since it started or since the last
// ResetRequestCounts, for every token.
func (h *Hub) Counts() Counts {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return h.tally.total
}

// CountsFor returns what the hub served to the token of login (its REST
// spelling, e.g. octo-author).
func (h *Hub) CountsFor(login string) Counts {
	h.mu.RLock()
	defer h.mu.RUnlock()
	if c := h.tally.byLogin[login]; c != nil {
		return *c
	}
	return Counts{}
}
