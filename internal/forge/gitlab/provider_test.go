package gitlab_test

import (
	"testing"
	"time"

	"github.com/convergeloop/converge/internal/emulator/fakelab"
	"github.com/convergeloop/converge/internal/forge/gitlab"
	"github.com/convergeloop/converge/internal/forge/provider/providertest"
	"github.com/convergeloop/converge/internal/testutil/labtest"
)

// TestUX_ForgeProviderContract_GitLab: GitLab's provider passes the one
// contract every forge's provider passes, on the GitLab emulator.
func TestUX_ForgeProviderContract_GitLab(t *testing.T) {
	providertest.Run(t, gitlab.Provider{}, func(t *testing.T) providertest.World {
		lab := labtest.Start(t, 20*time.Millisecond)
		const path = "acme/widgets/provider"
		if _, err := lab.CreateProject(path, map[string]string{"main.go": contractBase}, fakelab.ProjectOptions{NoDuo: true}); err != nil {
			t.Fatal(err)
		}
		iid, err := lab.CreateMR(path, fakelab.NewMR{Source: "feature/bye", Title: "Say bye", Files: map[string]string{"main.go": contractHead}})
		if err != nil {
			t.Fatal(err)
		}
		return providertest.World{APIURL: lab.APIURL(), HTTPClient: lab.HTTPClient(), Token: lab.Tokens().Author, PRURL: lab.MRURL(path, iid)}
	})
}
