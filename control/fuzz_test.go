package control

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/better-compute/vps/internal/text"
)

// FuzzCheckSSHKey: an accepted key is normalized once and for all (checking
// what CheckSSHKey returned gives it back), and its comment is within the
// rules: bounded, valid UTF-8, no control or format characters.
func FuzzCheckSSHKey(f *testing.F) {
	f.Add("ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl me@laptop")
	f.Add("ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl")
	f.Add(`command="ls",no-pty ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl a b`)
	f.Add("ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl \u202eevil")
	f.Add("# a comment line\nssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl x")
	f.Add(dsaKey)
	f.Add("ssh-rsa AAAA")
	f.Fuzz(func(t *testing.T, line string) {
		key, err := CheckSSHKey("sshKeys[0]", line)
		if err != nil {
			return
		}
		again, err := CheckSSHKey("sshKeys[0]", key)
		if err != nil || again != key {
			t.Fatalf("CheckSSHKey(%q) = %q, which checks as %q, %v", line, key, again, err)
		}
		typ, _, comment := DescribeKey(key)
		if typ == "" || !utf8.ValidString(key) || strings.ContainsAny(key, "\r\n") {
			t.Fatalf("CheckSSHKey(%q) = %q: not one line of a known type", line, key)
		}
		if len(comment) > MaxSSHKeyComment || text.CheckLine(comment) != nil {
			t.Fatalf("CheckSSHKey(%q) kept the comment %q", line, comment)
		}
	})
}
