package control

import (
	"fmt"
	"regexp"
	"strings"

	"golang.org/x/crypto/ssh"

	"github.com/better-compute/vps/apierr"
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
		key, comment, _, rest, err := ssh.ParseAuthorizedKey([]byte(line))
		if err != nil || len(rest) > 0 {
			return nil, apierr.Invalid(fmt.Sprintf("sshKeys[%d]", i), "not a single authorized_keys line")
		}
		keys[i] = formatKey(key, comment)
	}
	return keys, nil
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

// checkQuota reports the first limit that one more instance of flavor f
// would exceed.
func checkQuota(quota sqlc.Quota, usage sqlc.TenantUsageRow, f sqlc.Flavor) error {
	checks := []struct {
		limit     string
		max       *int64
		used, add int64
	}{
		{"instances", i64(quota.MaxInstances), int64(usage.Instances), 1},
		{"vcpus", i64(quota.MaxVcpus), int64(usage.Vcpus), int64(f.Vcpus)},
		{"memoryMb", quota.MaxMemoryMb, usage.MemoryMb, f.MemoryMb},
		{"gpus", i64(quota.MaxGpus), int64(usage.Gpus), int64(f.GpuCount)},
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
