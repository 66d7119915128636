package hetzner

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/hetznercloud/hcloud-go/v2/hcloud"
	"golang.org/x/crypto/ssh"

	"github.com/better-compute/vps/drivers/cloud"
)

// SSHKeyLabel marks the SSH key resources the driver creates.
const SSHKeyLabel = "better-compute-ssh-key"

// sshKeys decides how the tenant's SSH keys reach the server, returning the
// user data and the key resources to create it with:
//
//   - no keys: the user data as it is, no key resources;
//   - empty user data: a generated #cloud-config whose ssh_authorized_keys
//     lists the keys, no key resources, no extra call;
//   - any other user data (a #cloud-config, a script, a MIME multipart, an
//     Ignition config…): the user data untouched, and the keys as Hetzner
//     SSH key resources, which Hetzner hands to the server through its
//     metadata service. Each key costs one GET (by fingerprint), plus one
//     POST the first time; a key resource is named after the key's MD5
//     fingerprint, labelled SSHKeyLabel and shared by every server with
//     that key; the driver never deletes them.
//
// So the tenant's user data is never rewritten. Keys must be plain
// authorized_keys lines ("type base64 [comment]"); keys with options
// (from=, command=…) are refused, since key resources cannot carry them.
func (d *Driver) sshKeys(ctx context.Context, keys []string, userData string) (string, []*hcloud.SSHKey, error) {
	if len(keys) == 0 {
		return userData, nil, nil
	}
	type key struct {
		line string
		fp   string
	}
	var parsed []key
	seen := map[string]bool{}
	for i, k := range keys {
		pub, comment, opts, rest, err := ssh.ParseAuthorizedKey([]byte(k))
		if err != nil || strings.TrimSpace(string(rest)) != "" {
			return "", nil, invalid(fmt.Sprintf("SSH key %d is not a single public key in authorized_keys format", i+1))
		}
		if len(opts) > 0 {
			return "", nil, invalid(fmt.Sprintf("SSH key %d has options, which are not supported", i+1))
		}
		fp := ssh.FingerprintLegacyMD5(pub)
		if seen[fp] {
			continue
		}
		seen[fp] = true
		line := strings.TrimSpace(string(ssh.MarshalAuthorizedKey(pub)))
		if comment != "" {
			line += " " + comment
		}
		parsed = append(parsed, key{line: line, fp: fp})
	}
	if strings.TrimSpace(userData) == "" {
		var b strings.Builder
		b.WriteString("#cloud-config\nssh_authorized_keys:\n")
		for _, k := range parsed {
			q, _ := json.Marshal(k.line) // a JSON string is a YAML double-quoted scalar
			fmt.Fprintf(&b, "  - %s\n", q)
		}
		return b.String(), nil, nil
	}
	var out []*hcloud.SSHKey
	for _, k := range parsed {
		id, err := d.keyResource(ctx, k.line, k.fp)
		if err != nil {
			return "", nil, err
		}
		out = append(out, &hcloud.SSHKey{ID: id})
	}
	return userData, out, nil
}

// keyResource returns the ID of the project's SSH key with fingerprint fp,
// creating it if there is none.
func (d *Driver) keyResource(ctx context.Context, line, fp string) (int64, error) {
	k, resp, err := d.client.SSHKey.GetByFingerprint(ctx, fp)
	if err != nil {
		return 0, classify(err, resp)
	}
	if k != nil {
		return k.ID, nil
	}
	k, resp, err = d.client.SSHKey.Create(ctx, hcloud.SSHKeyCreateOpts{
		Name:      "better-compute-" + strings.ReplaceAll(fp, ":", ""),
		PublicKey: line,
		Labels:    map[string]string{SSHKeyLabel: ""},
	})
	if hcloud.IsError(err, hcloud.ErrorCodeUniquenessError) {
		// Made meanwhile by a concurrent create: use it.
		k, resp, err = d.client.SSHKey.GetByFingerprint(ctx, fp)
		if err == nil && k == nil {
			return 0, &cloud.Error{Kind: cloud.Retryable, Message: "SSH key " + fp + " vanished while being created"}
		}
	}
	if err != nil {
		return 0, classify(err, resp)
	}
	return k.ID, nil
}
