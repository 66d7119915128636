package control

import (
	"fmt"
	"net/netip"
	"regexp"
	"time"

	"github.com/better-compute/vps/apierr"
	"github.com/better-compute/vps/domain"
)

// Sandbox limits.
const (
	// MaxEnvVars bounds a template's (or a sandbox's own) environment
	// variables, and MaxEnvName a name; MaxEnvBytes bounds the names and
	// values together, which go into the guest's seed.
	MaxEnvVars  = 64
	MaxEnvName  = 128
	MaxEnvBytes = 32 << 10
	// MaxNetworkEntries bounds each of a policy's allowOut and denyOut.
	MaxNetworkEntries = 64
	// MaxMetadata bounds a sandbox's metadata entries, MaxMetadataKey a
	// key and MaxMetadataValue a value, in bytes.
	MaxMetadata      = 32
	MaxMetadataKey   = 64
	MaxMetadataValue = 512
	// MaxSandboxTimeout bounds every timeout, a template's maximum too.
	MaxSandboxTimeout = 24 * time.Hour
	// MaxWarmCount bounds a template's warm pool.
	MaxWarmCount = 100
)

// Template defaults.
const (
	DefaultSandboxTimeout    = 5 * time.Minute
	DefaultSandboxMaxTimeout = time.Hour
)

// EnvVar is one environment variable of a template or a sandbox.
type EnvVar struct {
	Name  string
	Value string
}

var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// checkEnv checks env given in field and returns it as a map: each name a
// variable name, given once, within the limits.
func checkEnv(field string, env []EnvVar) (map[string]string, error) {
	if len(env) > MaxEnvVars {
		return nil, apierr.Invalid(field, "at most %d variables", MaxEnvVars)
	}
	m := make(map[string]string, len(env))
	size := 0
	for i, v := range env {
		f := fmt.Sprintf("%s[%d].name", field, i)
		switch {
		case len(v.Name) > MaxEnvName:
			return nil, apierr.Invalid(f, "is %d bytes, the limit is %d", len(v.Name), MaxEnvName)
		case !envName.MatchString(v.Name):
			return nil, apierr.Invalid(f, "%q is not a variable name: letters, digits and underscores, not starting with a digit", v.Name)
		}
		if _, dup := m[v.Name]; dup {
			return nil, apierr.Invalid(f, "%s is given twice", v.Name)
		}
		m[v.Name] = v.Value
		if size += len(v.Name) + len(v.Value); size > MaxEnvBytes {
			return nil, apierr.Invalid(field, "the names and values come to more than %d bytes", MaxEnvBytes)
		}
	}
	return m, nil
}

// checkNetwork checks a network policy given in field and returns it with
// each entry in its canonical form.
func checkNetwork(field string, p domain.NetworkPolicy) (domain.NetworkPolicy, error) {
	out := domain.NetworkPolicy{AllowInternetAccess: p.AllowInternetAccess}
	var err error
	if out.AllowOut, err = checkEgress(field+".allowOut", p.AllowOut); err != nil {
		return out, err
	}
	if out.DenyOut, err = checkEgress(field+".denyOut", p.DenyOut); err != nil {
		return out, err
	}
	return out, nil
}

// checkEgress checks a list of IPv4 addresses and CIDRs.
func checkEgress(field string, entries []string) ([]string, error) {
	if len(entries) > MaxNetworkEntries {
		return nil, apierr.Invalid(field, "at most %d entries", MaxNetworkEntries)
	}
	out := make([]string, len(entries))
	for i, e := range entries {
		f := fmt.Sprintf("%s[%d]", field, i)
		if addr, err := netip.ParseAddr(e); err == nil {
			if !addr.Is4() {
				return nil, apierr.Invalid(f, "%q is not an IPv4 address", e)
			}
			out[i] = addr.String()
			continue
		}
		prefix, err := netip.ParsePrefix(e)
		switch {
		case err != nil:
			return nil, apierr.Invalid(f, "%q is not an IPv4 address or CIDR", e)
		case !prefix.Addr().Is4():
			return nil, apierr.Invalid(f, "%q is not an IPv4 CIDR", e)
		case prefix.Masked() != prefix:
			return nil, apierr.Invalid(f, "%q has bits set past its prefix; the network is %s", e, prefix.Masked())
		}
		out[i] = prefix.String()
	}
	return out, nil
}

// checkMetadata checks a sandbox's metadata.
func checkMetadata(md map[string]string) error {
	if len(md) > MaxMetadata {
		return apierr.Invalid("metadata", "at most %d entries", MaxMetadata)
	}
	for k, v := range md {
		switch {
		case k == "" || len(k) > MaxMetadataKey:
			return apierr.Invalid("metadata", "a key must be 1 to %d bytes", MaxMetadataKey)
		case len(v) > MaxMetadataValue:
			return apierr.Invalid("metadata."+k, "is %d bytes, the limit is %d", len(v), MaxMetadataValue)
		}
	}
	return nil
}

// checkTimeout checks a timeout given in field: whole seconds, positive,
// at most limit.
func checkTimeout(field string, d, limit time.Duration) error {
	switch {
	case d <= 0 || d%time.Second != 0:
		return apierr.Invalid(field, "must be a positive number of seconds")
	case d > limit:
		return apierr.Invalid(field, "is %v, the limit is %v", d, limit)
	}
	return nil
}
