package server

import (
	"github.com/convergeloop/converge/internal/forge"
	"github.com/convergeloop/converge/internal/forge/github"
	"github.com/convergeloop/converge/internal/forge/gitlab"
	"github.com/convergeloop/converge/internal/forge/provider"
)

// The forges' webhook names the server's tests use. The forges are
// registered as the binary registers them (internal/cli/forgesite.go):
// by importing their packages.
const (
	HeaderSignature       = github.HeaderSignature
	HeaderDelivery        = github.HeaderDelivery
	HeaderEvent           = github.HeaderEvent
	HeaderGitLabEvent     = gitlab.HeaderEvent
	HeaderGitLabToken     = gitlab.HeaderToken
	HeaderGitLabEventUUID = gitlab.HeaderEventUUID
	HeaderIdempotencyKey  = gitlab.HeaderIdempotencyKey
)

var (
	Sign              = github.SignWebhook
	Verify            = github.VerifySignature
	VerifyGitLabToken = gitlab.VerifyWebhookToken
	ErrUnsigned       = provider.ErrUnsigned
)

// parseNotice reads a GitHub delivery as the server does.
func parseNotice(event string, body []byte) (notice, error) {
	return readNotice(forge.GitHub, event, body)
}

func readNotice(kind forge.Kind, event string, body []byte) (notice, error) {
	p, err := provider.For(kind)
	if err != nil {
		return notice{}, err
	}
	n, err := p.Webhooks().Read(event, body)
	return notice{Notice: n, forge: kind}, err
}
