package app

import (
	"errors"
	"flag"
	"time"

	"github.com/better-compute/vps/internal/conf"
	"github.com/better-compute/vps/seal"
)

// The configurations of the one-shot administration commands: migrate,
// token create, reseal and host-ca. They have no defaults to apply.

// MigrateConfig is the configuration of `migrate`.
type MigrateConfig struct {
	// DatabaseURL is the Postgres connection string (DATABASE_URL).
	// Required.
	DatabaseURL string
}

// Env returns the environment variables migrate reads, bound to c's
// fields: the table both conf.Read and --help use.
func (c *MigrateConfig) Env() []conf.Var {
	return []conf.Var{required(databaseURL(&c.DatabaseURL))}
}

// Flags defines migrate's flags: it has none.
func (c *MigrateConfig) Flags(fs *flag.FlagSet) {}

// TokenConfig is the configuration of `token create`.
type TokenConfig struct {
	// DatabaseURL is the Postgres connection string (DATABASE_URL).
	// Required.
	DatabaseURL string
	// Name names the new principal and token (--name).
	Name string
	// Tenant is the tenant ID (tnt_…) the principal is made a member of
	// (--tenant). Default: none, which makes an operator.
	Tenant string
	// Expires is the token's lifetime (--expires). Default: it never
	// expires.
	Expires time.Duration
}

// Env returns the environment variables token reads, bound to c's fields:
// the table both conf.Read and --help use.
func (c *TokenConfig) Env() []conf.Var {
	return []conf.Var{required(databaseURL(&c.DatabaseURL))}
}

// Flags defines token create's flags on fs, bound to c's fields.
func (c *TokenConfig) Flags(fs *flag.FlagSet) {
	fs.StringVar(&c.Name, "name", "", "`name` of the new principal and token")
	fs.StringVar(&c.Tenant, "tenant", "", "tenant `id` to make a member of; none makes an operator")
	fs.DurationVar(&c.Expires, "expires", 0, "lifetime of the token; 0 never expires")
}

// ResealConfig is the configuration of `reseal`.
type ResealConfig struct {
	// DatabaseURL is the Postgres connection string (DATABASE_URL).
	// Required.
	DatabaseURL string
	// Secret is the secret values are sealed again with (BC_SECRET).
	// Required.
	Secret string
	// PreviousSecrets open the values sealed before the rotation
	// (BC_SECRET_PREVIOUS, comma-separated). Default: none.
	PreviousSecrets []string
}

// Env returns the environment variables reseal reads, bound to c's fields:
// the table both conf.Read and --help use.
func (c *ResealConfig) Env() []conf.Var {
	return []conf.Var{
		required(databaseURL(&c.DatabaseURL)),
		required(secret(&c.Secret)),
		previousSecrets(&c.PreviousSecrets),
	}
}

// Flags defines reseal's flags: it has none.
func (c *ResealConfig) Flags(fs *flag.FlagSet) {}

// Sealer returns the Sealer that seals with Secret and opens with every
// secret.
func (c *ResealConfig) Sealer() (*seal.Sealer, error) {
	if c.Secret == "" {
		return nil, errors.New("BC_SECRET is not set: it is the secret values are sealed again with")
	}
	return newSealer(c.Secret, c.PreviousSecrets)
}

// HostCAConfig is the configuration of `host-ca`: it lists the host CAs,
// or rotates or retires one.
type HostCAConfig struct {
	ResealConfig
	// Rotate makes a new CA, which signs host certificates from then on
	// (--rotate).
	Rotate bool
	// Retire is the ID of a CA to stop trusting (--retire). Default: none.
	Retire string
}

// Flags defines host-ca's flags on fs, bound to c's fields.
func (c *HostCAConfig) Flags(fs *flag.FlagSet) {
	fs.BoolVar(&c.Rotate, "rotate", false, "make a new host CA, which signs host certificates from now on; the others stay trusted until retired")
	fs.StringVar(&c.Retire, "retire", "", "stop trusting the host CA of this `id`: every certificate it signed is refused from then on")
}
