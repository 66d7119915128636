package control

import (
	"crypto/rsa"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"golang.org/x/crypto/ssh"

	"github.com/better-compute/vps/apierr"
	"github.com/better-compute/vps/internal/text"
	"github.com/better-compute/vps/sqlc"
)

// Admission limits.
const (
	MaxUserData = 64 << 10
	MaxSSHKeys  = 32
)

var hostname = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`)

// checkName validates an instance name: it becomes the guest's hostname.
func checkName(field, name string) error {
	if !hostname.MatchString(name) {
		return apierr.Invalid(field, "must be 1-63 lowercase letters, digits or hyphens, starting and ending with a letter or digit")
	}
	return nil
}

// parseSSHKeys parses authorized_keys lines and returns them normalized.
func parseSSHKeys(lines []string) ([]string, error) {
	if len(lines) == 0 {
		return nil, apierr.Invalid("sshKeys", "at least one SSH key is required")
	}
	if len(lines) > MaxSSHKeys {
		return nil, apierr.Invalid("sshKeys", "at most %d SSH keys", MaxSSHKeys)
	}
	keys := make([]string, len(lines))
	for i, line := range lines {
		key, err := CheckSSHKey(fmt.Sprintf("sshKeys[%d]", i), line)
		if err != nil {
			return nil, err
		}
		keys[i] = key
	}
	return keys, nil
}

// keyTypeDSA is the type of a DSA key in an authorized_keys line, which
// x/crypto/ssh no longer parses: it is named to say why the line is refused.
const keyTypeDSA = "ssh-dss"

// SSH key limits.
const (
	// MaxSSHKeyComment bounds a key's comment, which the console and the
	// guest's authorized_keys show.
	MaxSSHKeyComment = 256
	// MinRSABits is the shortest RSA key accepted.
	MinRSABits = 2048
)

// CheckSSHKey checks one authorized_keys line given in field and returns it
// normalized (key type, key, comment; options dropped). The comment must be
// at most MaxSSHKeyComment bytes of text free of control and format
// characters, so it shows as what it is (no carriage return hiding a line,
// no bidirectional override reversing it); DSA keys and RSA keys shorter
// than MinRSABits are refused as too weak.
func CheckSSHKey(field, line string) (string, error) {
	if slices.Contains(strings.Fields(line), keyTypeDSA) {
		return "", apierr.Invalid(field, "DSA keys are too weak; use an ed25519, ECDSA or RSA (%d bits or more) key", MinRSABits)
	}
	key, comment, _, rest, err := ssh.ParseAuthorizedKey([]byte(line))
	if err != nil || len(rest) > 0 {
		return "", apierr.Invalid(field, "not a single authorized_keys line")
	}
	if len(comment) > MaxSSHKeyComment {
		return "", apierr.Invalid(field, "the comment is %d bytes, the limit is %d", len(comment), MaxSSHKeyComment)
	}
	if err := text.CheckLine(comment); err != nil {
		return "", apierr.Invalid(field, "the comment %v", err)
	}
	if bits, ok := rsaBits(key); ok && bits < MinRSABits {
		return "", apierr.Invalid(field, "the RSA key has %d bits; at least %d are required", bits, MinRSABits)
	}
	return formatKey(key, comment), nil
}

// rsaBits returns the size of an RSA key, or of a certificate's RSA key.
func rsaBits(key ssh.PublicKey) (int, bool) {
	if cert, ok := key.(*ssh.Certificate); ok {
		key = cert.Key
	}
	ck, ok := key.(ssh.CryptoPublicKey)
	if !ok {
		return 0, false
	}
	pub, ok := ck.CryptoPublicKey().(*rsa.PublicKey)
	if !ok {
		return 0, false
	}
	return pub.N.BitLen(), true
}

func formatKey(key ssh.PublicKey, comment string) string {
	line := strings.TrimSpace(string(ssh.MarshalAuthorizedKey(key)))
	if comment != "" {
		line += " " + comment
	}
	return line
}

// DescribeKey returns the type, SHA256 fingerprint and comment of a stored
// authorized_keys line.
func DescribeKey(line string) (typ, fingerprint, comment string) {
	key, comment, _, _, err := ssh.ParseAuthorizedKey([]byte(line))
	if err != nil {
		return "", "", ""
	}
	return key.Type(), ssh.FingerprintSHA256(key), comment
}

// checkQuota reports the first limit that n more instances of flavor f
// would exceed.
func checkQuota(quota sqlc.Quota, usage sqlc.TenantUsageRow, f sqlc.Flavor, n int64) error {
	checks := []struct {
		limit     string
		max       *int64
		used, add int64
	}{
		{"instances", i64(quota.MaxInstances), int64(usage.Instances), n},
		{"vcpus", i64(quota.MaxVcpus), int64(usage.Vcpus), n * int64(f.Vcpus)},
		{"memoryMb", quota.MaxMemoryMb, usage.MemoryMb, n * f.MemoryMb},
		{"gpus", i64(quota.MaxGpus), int64(usage.Gpus), n * int64(f.GpuCount)},
	}
	for _, c := range checks {
		if c.max != nil && c.add > 0 && c.used+c.add > *c.max {
			return apierr.Quota(c.limit, *c.max)
		}
	}
	return nil
}

func i64(v *int32) *int64 {
	if v == nil {
		return nil
	}
	n := int64(*v)
	return &n
}
