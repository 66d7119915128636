// Package nocloud renders the NoCloud seed (the "cidata" disk) that carries
// an instance's hostname, SSH keys, user data and static address into the
// guest, where cloud-init reads it. Every runtime driver uses it, so the
// simulated and the real hypervisors give guests the same seed.
package nocloud

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/better-compute/vps/hostproto"
)

// Seed is the NoCloud seed of a domain (the files of its "cidata" disk),
// as cloud-init in the guest reads it.
//
//   - meta-data names the instance (instance-id), its hostname
//     (local-hostname, the instance's Name) and carries the SSH keys
//     (public-keys). Keys go here rather than into user-data so that they are
//     installed whatever the tenant's user data is: a shell script, a
//     cloud-config that lists no keys, or nothing.
//   - user-data is the tenant's UserData, byte for byte. Without user data it
//     is an empty cloud-config ("#cloud-config\n"): NoCloud needs the file.
//   - network-config is a version 2 network configuration of the static
//     address of the instance's Network: one interface, matched by MAC,
//     with its address, default route and name servers. It is empty when
//     the instance has no Network; the seed then has no network-config file
//     and the guest falls back to DHCP.
//   - vendor-data, only for an instance with Env, is a cloud-config whose
//     write_files puts the env in EnvPath (NAME='value' lines, shell-quoted)
//     and a ProfilePath script that exports it to login shells. The guest
//     reads it with no agent: cloud-init processes vendor-data besides the
//     tenant's user-data, which a tenant's own cloud-config can still
//     override (vendor_data: {enabled: false}).
//
// Every string value is written as a double-quoted (JSON) scalar, which YAML
// reads back unchanged whatever it contains.
type Seed struct {
	MetaData      string
	UserData      string
	NetworkConfig string
	VendorData    string
}

// emptyCloudConfig is the user-data of an instance without user data.
const emptyCloudConfig = "#cloud-config\n"

// New returns the seed of spec. Its error is that of an Env no guest file
// can carry (a name that is not a variable name, a NUL byte): the instance
// itself is at fault.
func New(spec hostproto.InstanceSpec) (Seed, error) {
	if err := checkEnv(spec.Env); err != nil {
		return Seed{}, fmt.Errorf("seed of %s: %w", spec.ID, err)
	}
	s := Seed{
		MetaData:      metaData(spec),
		UserData:      spec.UserData,
		NetworkConfig: networkConfig(spec.Network),
		VendorData:    vendorData(spec.Env),
	}
	if s.UserData == "" {
		s.UserData = emptyCloudConfig
	}
	return s, nil
}

func metaData(spec hostproto.InstanceSpec) string {
	var b strings.Builder
	b.WriteString("instance-id: " + quote(spec.ID) + "\n")
	b.WriteString("local-hostname: " + quote(spec.Name) + "\n")
	if len(spec.SSHKeys) > 0 {
		b.WriteString("public-keys:\n")
		for _, key := range spec.SSHKeys {
			b.WriteString("  - " + quote(key) + "\n")
		}
	}
	return b.String()
}

func networkConfig(n *hostproto.Network) string {
	if n == nil {
		return ""
	}
	var b strings.Builder
	b.WriteString("version: 2\n")
	b.WriteString("ethernets:\n")
	b.WriteString("  eth0:\n")
	if n.MAC != "" {
		b.WriteString("    match:\n")
		b.WriteString("      macaddress: " + quote(n.MAC) + "\n")
		b.WriteString("    set-name: eth0\n")
	}
	b.WriteString("    addresses:\n")
	b.WriteString("      - " + quote(n.Address) + "\n")
	if n.Gateway != "" {
		b.WriteString("    routes:\n")
		b.WriteString("      - to: \"0.0.0.0/0\"\n")
		b.WriteString("        via: " + quote(n.Gateway) + "\n")
	}
	if len(n.DNS) > 0 {
		b.WriteString("    nameservers:\n")
		b.WriteString("      addresses:\n")
		for _, ip := range n.DNS {
			b.WriteString("        - " + quote(ip) + "\n")
		}
	}
	return b.String()
}

// quote writes s as a JSON string, which is also a YAML double-quoted
// scalar.
func quote(s string) string {
	b, _ := json.Marshal(s) // a string always marshals
	return string(b)
}
