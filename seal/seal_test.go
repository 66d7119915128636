package seal

import (
	"bytes"
	"testing"
)

func TestSeal(t *testing.T) {
	old, err := New("old secret")
	if err != nil {
		t.Fatal(err)
	}
	rotated, err := New("new secret", "old secret")
	if err != nil {
		t.Fatal(err)
	}
	plain := []byte("#cloud-config\npackages: [nginx]\n")
	aad := []byte("ins-1")

	t.Run("round trip", func(t *testing.T) {
		sealed := rotated.Seal(plain, aad)
		if bytes.Contains(sealed, plain) {
			t.Fatal("sealed value holds the plaintext")
		}
		got, err := rotated.Open(sealed, aad)
		if err != nil || !bytes.Equal(got, plain) {
			t.Fatalf("Open = %q, %v", got, err)
		}
	})
	t.Run("opens values sealed before rotation", func(t *testing.T) {
		got, err := rotated.Open(old.Seal(plain, aad), aad)
		if err != nil || !bytes.Equal(got, plain) {
			t.Fatalf("Open = %q, %v", got, err)
		}
	})
	t.Run("refuses", func(t *testing.T) {
		sealed := rotated.Seal(plain, aad)
		tampered := bytes.Clone(sealed)
		tampered[len(tampered)-1] ^= 1
		cases := map[string]struct {
			s      *Sealer
			sealed []byte
			aad    []byte
		}{
			"another owner": {rotated, sealed, []byte("ins-2")},
			"tampered":      {rotated, tampered, aad},
			"unknown key":   {old, sealed, aad},
			"not sealed":    {rotated, plain, aad},
			"truncated":     {rotated, sealed[:8], aad},
		}
		for name, c := range cases {
			if _, err := c.s.Open(c.sealed, c.aad); err == nil {
				t.Errorf("%s: Open succeeded", name)
			}
		}
	})
	t.Run("needs a secret", func(t *testing.T) {
		if _, err := New(""); err == nil {
			t.Fatal("New(\"\") succeeded")
		}
	})
}
