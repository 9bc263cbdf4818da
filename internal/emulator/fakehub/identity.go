package fakehub

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"
	"strings"
)

// user is one identity. GitHub spells bots differently per surface, so each
// surface's login is kept.
type user struct {
	login      string // GraphQL login
	restLogin  string // REST user.login
	shortLogin string // inline comments, events, requested reviewers (Copilot only)
	id         int64
	typ        string // User or Bot
	perm       string // admin, write, read
	name       string
}

func (u *user) nodeID() string {
	if u.typ == "Bot" {
		return fmt.Sprintf("BOT_fh%d", u.id)
	}
	return fmt.Sprintf("U_fh%d", u.id)
}

// surfaceLogin is the login for comments, events and requested reviewers.
func (u *user) surfaceLogin() string {
	if u.shortLogin != "" {
		return u.shortLogin
	}
	return u.restLogin
}

func (u *user) canWrite() bool { return u.perm == "write" || u.perm == "admin" }

func randomToken(prefix string) string {
	b := make([]byte, 18)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return prefix + hex.EncodeToString(b)
}

func (h *Hub) makeUsers() {
	h.tokens = Tokens{
		Author:   randomToken("ghp_fhA"),
		Reviewer: randomToken("ghp_fhR"),
		Outsider: randomToken("ghp_fhO"),
		Copilot:  randomToken("ghs_fhC"),
		CI:       randomToken("ghs_fhI"),
	}
	add := func(tok string, u *user) {
		h.users[tok] = u
		for _, l := range []string{u.login, u.restLogin, u.shortLogin} {
			if l != "" {
				h.byLogin[strings.ToLower(l)] = u
			}
		}
	}
	add(h.tokens.Author, &user{login: LoginAuthor, restLogin: LoginAuthor, id: 101, typ: "User", perm: "write", name: "Octo Author"})
	add(h.tokens.Reviewer, &user{login: LoginReviewer, restLogin: LoginReviewer, id: 102, typ: "User", perm: "write", name: "Octo Reviewer"})
	add(h.tokens.Outsider, &user{login: LoginOutsider, restLogin: LoginOutsider, id: 103, typ: "User", perm: "read", name: "Out Sider"})
	add(h.tokens.Copilot, &user{login: LoginCopilot, restLogin: LoginCopilotREST, shortLogin: LoginCopilotShort, id: 175728472, typ: "Bot", perm: "write"})
	add(h.tokens.CI, &user{login: LoginCI, restLogin: LoginCIREST, id: 41898282, typ: "Bot", perm: "write"})
}

func (h *Hub) copilot() *user { return h.users[h.tokens.Copilot] }
func (h *Hub) ciUser() *user  { return h.users[h.tokens.CI] }

// userByLogin finds any identity by any of its logins; h.users is fixed after
// New, so no lock is needed.
func (h *Hub) userByLogin(login string) *user { return h.byLogin[strings.ToLower(login)] }

// authenticate reads `Authorization: token X`, `Bearer X` or Basic (token as
// password, as git sends it).
func (h *Hub) authenticate(r *http.Request) *user {
	a := r.Header.Get("Authorization")
	var tok string
	switch {
	case strings.HasPrefix(strings.ToLower(a), "token "):
		tok = strings.TrimSpace(a[6:])
	case strings.HasPrefix(strings.ToLower(a), "bearer "):
		tok = strings.TrimSpace(a[7:])
	default:
		if _, p, ok := r.BasicAuth(); ok {
			tok = p
		}
	}
	if tok == "" {
		return nil
	}
	if u := h.users[tok]; u != nil {
		return u
	}
	return h.appTokenUser(tok) // an App's installation token (app.go)
}
