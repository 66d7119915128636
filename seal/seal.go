// Package seal encrypts secrets at rest (user data, provider credentials)
// with AES-256-GCM under keys derived from the server secret.
//
// A sealed value names the key that sealed it, so the secret can be rotated:
// configure the new secret first and keep the old ones for opening until
// every value has been sealed again.
package seal

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
)

const version = 1

// Sealer seals with its current key and opens with any of its keys.
type Sealer struct {
	current key
	keys    map[[4]byte]key
}

type key struct {
	id   [4]byte
	aead cipher.AEAD
}

// New returns a Sealer whose current key derives from secrets[0]; the other
// secrets only open values sealed before a rotation.
func New(secrets ...string) (*Sealer, error) {
	if len(secrets) == 0 || secrets[0] == "" {
		return nil, errors.New("seal: no secret")
	}
	s := &Sealer{keys: make(map[[4]byte]key)}
	for i, secret := range secrets {
		k, err := deriveKey(secret)
		if err != nil {
			return nil, err
		}
		if i == 0 {
			s.current = k
		}
		s.keys[k.id] = k
	}
	return s, nil
}

func deriveKey(secret string) (key, error) {
	raw, err := hkdf.Key(sha256.New, []byte(secret), nil, "better-compute seal v1", 32)
	if err != nil {
		return key{}, fmt.Errorf("seal: derive key: %w", err)
	}
	block, err := aes.NewCipher(raw)
	if err != nil {
		return key{}, fmt.Errorf("seal: %w", err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return key{}, fmt.Errorf("seal: %w", err)
	}
	sum := sha256.Sum256(raw)
	k := key{aead: aead}
	copy(k.id[:], sum[:4])
	return k, nil
}

// Seal encrypts plaintext; aad binds it to its owner (an instance id), so a
// sealed value copied to another row does not open.
func (s *Sealer) Seal(plaintext, aad []byte) []byte {
	k := s.current
	out := make([]byte, 0, 1+len(k.id)+k.aead.NonceSize()+len(plaintext)+k.aead.Overhead())
	out = append(out, version)
	out = append(out, k.id[:]...)
	nonce := make([]byte, k.aead.NonceSize())
	rand.Read(nonce)
	out = append(out, nonce...)
	return k.aead.Seal(out, nonce, plaintext, aad)
}

// Open decrypts a value sealed with any of the Sealer's keys.
func (s *Sealer) Open(sealed, aad []byte) ([]byte, error) {
	if len(sealed) < 5 || sealed[0] != version {
		return nil, errors.New("seal: not a sealed value")
	}
	k, ok := s.keys[[4]byte(sealed[1:5])]
	if !ok {
		return nil, errors.New("seal: sealed with an unknown key")
	}
	rest := sealed[5:]
	if len(rest) < k.aead.NonceSize() {
		return nil, errors.New("seal: truncated")
	}
	nonce, ct := rest[:k.aead.NonceSize()], rest[k.aead.NonceSize():]
	pt, err := k.aead.Open(nil, nonce, ct, aad)
	if err != nil {
		return nil, fmt.Errorf("seal: open: %w", err)
	}
	return pt, nil
}

// KeyID names the current key, as sealed values carry it in bytes 1 to 4.
func (s *Sealer) KeyID() []byte { return s.current.id[:] }

// Reseal seals a value again under the current key, so the secret it was
// sealed with can be retired. A value the current key sealed comes back as
// it is, with changed false.
func (s *Sealer) Reseal(sealed, aad []byte) (out []byte, changed bool, err error) {
	if len(sealed) >= 5 && [4]byte(sealed[1:5]) == s.current.id {
		return sealed, false, nil
	}
	pt, err := s.Open(sealed, aad)
	if err != nil {
		return nil, false, err
	}
	return s.Seal(pt, aad), true, nil
}
