package seal

import (
	"bytes"
	"testing"
)

// FuzzSeal: user data (and credentials) come back from Open exactly as they
// were sealed, for their owner only; anything else given to Open, a
// tampered value included, is an error, never a panic or a plaintext.
func FuzzSeal(f *testing.F) {
	s, err := New("fuzz secret", "an older secret")
	if err != nil {
		f.Fatal(err)
	}
	// Junk shaped like a sealed value (version, key id, nonce, tag), so
	// the fuzzer starts past the first checks.
	shaped := append(append([]byte{version}, s.KeyID()...), make([]byte, 12+16)...)
	f.Add([]byte("#cloud-config\npackages: [nginx]\n"), []byte("owner-1"), []byte{})
	f.Add([]byte{}, []byte{}, []byte{1, 2, 3, 4, 5})
	f.Add([]byte("\x00\xff"), []byte("o"), shaped)
	f.Fuzz(func(t *testing.T, plaintext, aad, junk []byte) {
		sealed := s.Seal(plaintext, aad)
		got, err := s.Open(sealed, aad)
		if err != nil || !bytes.Equal(got, plaintext) {
			t.Fatalf("Open(Seal(%q)) = %q, %v", plaintext, got, err)
		}
		if _, err := s.Open(sealed, append(bytes.Clone(aad), 'x')); err == nil {
			t.Fatal("a sealed value opened for another owner")
		}
		tampered := bytes.Clone(sealed)
		tampered[len(junk)%len(tampered)] ^= 1
		if _, err := s.Open(tampered, aad); err == nil {
			t.Fatal("a tampered value opened")
		}
		// Junk never opens: that would be a forgery of AES-GCM.
		if pt, err := s.Open(junk, aad); err == nil {
			t.Fatalf("Open(%x) gave %q", junk, pt)
		}
	})
}
