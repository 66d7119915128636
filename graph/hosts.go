package graph

import (
	"github.com/better-compute/vps/control"
	"github.com/better-compute/vps/graph/model"
)

// newHostPayload shows an adopted host's secrets once: its credential, if
// it has one, and its join token with the command that uses it.
func newHostPayload(h control.NewHost) model.CreateHostPayload {
	p := model.CreateHostPayload{Host: h.Host, JoinToken: h.Join.Token, JoinTokenExpiresAt: h.Join.ExpiresAt}
	if h.Credential != "" {
		p.Credential = &h.Credential
	}
	if h.Join.Command != "" {
		p.JoinCommand = &h.Join.Command
	}
	return p
}
