package server

// The forges the server's tests drive, registered as the binary
// registers them (internal/cli/forgesite.go).
import (
	_ "github.com/convergeloop/converge/internal/forge/github"
	_ "github.com/convergeloop/converge/internal/forge/gitlab"
)
