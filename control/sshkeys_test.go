package control

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/rsa"
	"errors"
	"strings"
	"testing"

	"golang.org/x/crypto/ssh"

	"github.com/better-compute/vps/apierr"
)

// dsaKey is an ssh-dss public key (made with ssh-keygen -t dsa).
const dsaKey = "ssh-dss AAAAB3NzaC1kc3MAAACBALNA/XS5cVqz84zqIgj9DAfAxIGSYms5r+gyrylfrXCtrnAeiqN3/oqbjV3sjWCWpLRN9+rbm5HcHGIgZBmRRUGP7QJ+NUT7pnBJM0BGbg0pi6a4NQfXE31+8AL24oEn7MB60kT2gGSNjngWqRYgRak+g28KfjwjOKvHXifgcV3dAAAAFQC4khumP86BHA5YpatjBxmDlhQx1wAAAIEAnSv7xAPvYHLql0SqR5foczYigjJhgtm3TE7Zku+DSzsrt84fgOtRgOa9MRr45DW866FZQEMoDWYqR3w3rtHf7ueE8UjtIP6jouJbp7YEhBUcZDVjk4iw5ZfCd9psXymKpWbgKAKXJqpYwiAvhri3qzdS3rNJ4jH8E3pdn/qmvWUAAACAJv57cMOUWOjdeQ/odmh0NKMXJq8u1YwnJcpB/0bcO54vfvMbSpGYr6ep/E8wVAxh0t+Lxv7aPwR82wXYA3HKU/ZBsi7zh2+4+aFpWRa8C8ntYu1SjMUfX46WmZfIzi4IBfcI17HUuMNOob5x6zB4WgzhvCUGJwq58KXWUp8nKbA="

func keyLine(t testing.TB, pub any) string {
	t.Helper()
	k, err := ssh.NewPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(ssh.MarshalAuthorizedKey(k)))
}

// TestCheckSSHKey: comments are bounded and show as what they are (no
// control or format characters), and weak key types are refused, each as
// INVALID_INPUT on the key's field.
func TestCheckSSHKey(t *testing.T) {
	t.Parallel()
	pub, _, _ := ed25519.GenerateKey(nil)
	ed := keyLine(t, pub)
	rsaKey := func(bits int) string {
		k, err := rsa.GenerateKey(rand.Reader, bits)
		if err != nil {
			t.Fatal(err)
		}
		return keyLine(t, &k.PublicKey)
	}
	cases := []struct {
		name, line string
		ok         bool
	}{
		{"ed25519", ed + " me@laptop", true},
		{"no comment", ed, true},
		{"unicode comment", ed + " jörg@büro", true},
		{"spaces in comment", ed + " my laptop key", true},
		{"comment of 256 bytes", ed + " " + strings.Repeat("c", 256), true},
		{"RSA 2048", rsaKey(2048) + " me", true},
		{"comment of 257 bytes", ed + " " + strings.Repeat("c", 257), false},
		{"carriage return", ed + " me\rroot@evil", false},
		{"tab", ed + " me\there", false},
		{"DEL", ed + " me\x7f", false},
		{"C1 control", ed + " me\u0085", false},
		{"escape sequence", ed + " \x1b[2Jme", false},
		{"right-to-left override", ed + " \u202egnp.exe", false},
		{"isolate", ed + " me\u2066x\u2069", false},
		{"left-to-right mark", ed + " me\u200e", false},
		{"right-to-left mark", ed + " me\u200f", false},
		{"zero-width space", ed + " m\u200be", false},
		{"NUL", ed + " me\x00", false},
		{"invalid UTF-8", ed + " me\xff", false},
		{"RSA 1024", rsaKey(1024) + " me", false},
		{"DSA", dsaKey + " me", false},
		{"DSA with options", `no-pty ` + dsaKey, false},
		{"two lines", ed + " a\n" + ed + " b", false},
		{"garbage", "ssh-ed25519 AAAA", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			_, err := CheckSSHKey("sshKeys[3]", c.line)
			if c.ok {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			var e *apierr.Error
			if !errors.As(err, &e) || e.Code != apierr.InvalidInput || e.Field != "sshKeys[3]" {
				t.Fatalf("err = %v, want INVALID_INPUT on sshKeys[3]", err)
			}
			if strings.HasPrefix(c.name, "DSA") && !strings.Contains(e.Message, "DSA") {
				t.Fatalf("err = %v, want it to say DSA keys are refused", err)
			}
		})
	}
}
