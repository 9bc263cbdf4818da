package cli

import (
	"github.com/convergeloop/converge/internal/cmdutil"
	"github.com/convergeloop/converge/internal/forge"
	"github.com/convergeloop/converge/internal/forge/provider"

	// The forges this binary drives: each registers its provider.
	_ "github.com/convergeloop/converge/internal/forge/github"
	_ "github.com/convergeloop/converge/internal/forge/gitlab"
)

// forgeOf is the provider of kind, the one place a command learns a
// forge's rules: a kind no provider is registered for is a usage error.
func forgeOf(kind forge.Kind) (provider.Provider, error) {
	p, err := provider.For(kind)
	if err != nil {
		return nil, cmdutil.UsageErr("%v", err)
	}
	return p, nil
}

// forgeFlag is a --forge flag: a registered forge's name, refused at
// parse time otherwise (IF-1: exit 2 with the allowed values).
type forgeFlag struct{ kind *forge.Kind }

func (f forgeFlag) String() string {
	if f.kind == nil {
		return forge.GitHub.String()
	}
	return f.kind.String()
}

func (f forgeFlag) Set(s string) error {
	k, err := forge.ParseKind(s)
	if err != nil {
		return err
	}
	if _, err := provider.For(k); err != nil {
		return err
	}
	*f.kind = k
	return nil
}

func (forgeFlag) Type() string { return "forge" }
