package github_test

import (
	"testing"
	"time"

	"github.com/convergeloop/converge/internal/emulator/fakehub"
	ghclient "github.com/convergeloop/converge/internal/forge/github"
	"github.com/convergeloop/converge/internal/forge/provider/providertest"
	"github.com/convergeloop/converge/internal/testutil/hubtest"
)

// TestUX_ForgeProviderContract_GitHub: GitHub's provider passes the one
// contract every forge's provider passes, on the GitHub emulator.
func TestUX_ForgeProviderContract_GitHub(t *testing.T) {
	providertest.Run(t, ghclient.Provider{}, func(t *testing.T) providertest.World {
		hub := hubtest.Start(t, 50*time.Millisecond)
		if err := hub.CreateRepo("acme", "widget", map[string]string{"main.go": contractBase}, fakehub.RepoOptions{}); err != nil {
			t.Fatal(err)
		}
		num, err := hub.CreatePR("acme", "widget", fakehub.NewPR{Head: "feature/bye", Title: "Say bye", Files: map[string]string{"main.go": contractHead}})
		if err != nil {
			t.Fatal(err)
		}
		return providertest.World{APIURL: hub.APIURL(), GraphQLURL: hub.GraphQLURL(), HTTPClient: hub.HTTPClient(),
			Token: hub.Tokens().Author, PRURL: hub.PRURL("acme", "widget", num)}
	})
}
