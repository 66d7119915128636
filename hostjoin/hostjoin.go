// Package hostjoin is what a provider bootstrap's machine is given to
// become one of our hosts: a one-time join token, and the cloud-init user
// data (the join script) that writes the host daemon's environment and a
// systemd unit, and starts the daemon, which joins with the token. The
// reconciler hands the user data to the provider (Hetzner) or points the
// machine at the gateway's NoCloud seed, which serves the same user data
// (Proxmox).
//
// The host daemon's binary is the operator's: the machine's image carries
// it at BinaryPath. The join script downloads nothing, so nothing the
// machine runs depends on a TLS certificate it cannot yet check.
package hostjoin

import (
	"fmt"
	"net/url"
	"strings"

	"github.com/better-compute/vps/hostproto"
	"github.com/better-compute/vps/iam"
)

// Where the join script puts things on the machine.
const (
	// EnvPath holds the daemon's environment: BC_SERVER, BC_JOIN_TOKEN
	// and BC_CA_SHA256.
	EnvPath = "/etc/better-compute/host.env"
	// UnitPath is the daemon's systemd unit.
	UnitPath = "/etc/systemd/system/better-compute-host.service"
	// BinaryPath is where the image carries the better-compute binary.
	BinaryPath = "/usr/local/bin/better-compute"
	// StateDir is the daemon's --state-dir.
	StateDir = "/var/lib/better-compute"
)

// NewToken returns a fresh join token and the hash stored for it: the
// token itself is stored nowhere but in the machine's user data.
func NewToken() (token string, hash []byte) { return iam.NewSecret(hostproto.JoinTokenPrefix) }

// Script is what a join script says.
type Script struct {
	// Server is the base URL of the host gateway (BC_SERVER, the daemon's
	// --server).
	Server string
	// Token is the join token (BC_JOIN_TOKEN).
	Token string
	// CASHA256 is the hex SHA-256 of the host CA certificate's DER
	// (BC_CA_SHA256), which the daemon pins before it sends the token.
	CASHA256 string
}

// Env is the content of EnvPath: one VAR=value a line.
func (s Script) Env() string {
	return fmt.Sprintf("BC_SERVER=%s\nBC_JOIN_TOKEN=%s\nBC_CA_SHA256=%s\n", s.Server, s.Token, s.CASHA256)
}

// unit runs the daemon with the environment of EnvPath.
const unit = `[Unit]
Description=Better Compute host daemon
After=network-online.target
Wants=network-online.target

[Service]
EnvironmentFile=` + EnvPath + `
ExecStart=` + BinaryPath + ` host --server ${BC_SERVER} --state-dir ` + StateDir + `
Restart=always
RestartSec=5

[Install]
WantedBy=multi-user.target
`

// UserData is the #cloud-config that writes EnvPath (readable by root
// only) and UnitPath, and starts the daemon.
func (s Script) UserData() string {
	var b strings.Builder
	b.WriteString("#cloud-config\n# Better Compute host join script: starts the host daemon, which joins with a one-time token.\nwrite_files:\n")
	file(&b, EnvPath, "0600", s.Env())
	file(&b, UnitPath, "0644", unit)
	b.WriteString("runcmd:\n  - [systemctl, daemon-reload]\n  - [systemctl, enable, --now, better-compute-host.service]\n")
	return b.String()
}

// file writes one write_files entry with its content as a literal block.
func file(b *strings.Builder, path, mode, content string) {
	fmt.Fprintf(b, "  - path: %s\n    permissions: '%s'\n    owner: root:root\n    content: |\n", path, mode)
	for line := range strings.Lines(content) {
		b.WriteString("      " + line)
	}
}

// ParseEnv reads an EnvPath's content, as the daemon's systemd unit does.
func ParseEnv(env string) map[string]string {
	out := map[string]string{}
	for line := range strings.Lines(env) {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), "="); ok {
			out[k] = v
		}
	}
	return out
}

// MetaData is a NoCloud seed's meta-data for a machine named name.
func MetaData(name string) string {
	return fmt.Sprintf("instance-id: %s\nlocal-hostname: %s\n", name, name)
}

// SeedPathPrefix starts the gateway's NoCloud seed paths:
// SeedPathPrefix + token + "/" is a seed, serving user-data and meta-data.
const SeedPathPrefix = "/host/seed/"

// SeedURL is the NoCloud seed URL of token at the gateway at server.
func SeedURL(server, token string) string {
	return strings.TrimRight(server, "/") + SeedPathPrefix + token + "/"
}

// CheckServer checks a gateway URL a join script can carry: absolute
// http(s), no query, fragment or user, nothing a YAML block or an
// environment file would misread.
func CheckServer(server string) error {
	u, err := url.Parse(server)
	switch {
	case err != nil:
		return fmt.Errorf("the URL %q: %w", server, err)
	case u.Scheme != "https" && u.Scheme != "http", u.Host == "":
		return fmt.Errorf("the URL %q must be an absolute https URL", server)
	case u.User != nil || u.RawQuery != "" || u.Fragment != "" || strings.ContainsAny(server, " \t\r\n'\"$\\"):
		return fmt.Errorf("the URL %q must have no user, query, fragment, spaces or quotes", server)
	}
	return nil
}
