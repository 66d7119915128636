package app

import (
	"errors"

	"github.com/better-compute/vps/internal/conf"
	"github.com/better-compute/vps/seal"
)

func secret(p *string) conf.Var {
	return conf.String(p, "BC_SECRET", "", "derives the keys that seal user data and provider credentials")
}

func previousSecrets(p *[]string) conf.Var {
	return conf.List(p, "BC_SECRET_PREVIOUS", nil, "comma-separated secrets of before a rotation, to open what they sealed")
}

// newSealer returns the Sealer of secret that also opens what the previous
// secrets sealed, or nil when there is no secret.
func newSealer(secret string, previous []string) (*seal.Sealer, error) {
	if secret == "" {
		if len(previous) > 0 {
			return nil, errors.New("BC_SECRET_PREVIOUS is set without BC_SECRET")
		}
		return nil, nil
	}
	return seal.New(append([]string{secret}, previous...)...)
}
