// Package ids encodes database UUIDs as the typed, opaque IDs of the API,
// such as ins_0c2ftxr2q1dh5a3hd4yqf2m7bc.
package ids

import (
	"encoding/base32"
	"strconv"
	"strings"

	"github.com/google/uuid"
)

// Kind is the prefix that types an ID.
type Kind string

// The kinds of object the API names.
const (
	Tenant     Kind = "tnt"
	Principal  Kind = "prn"
	APIToken   Kind = "tok"
	Pool       Kind = "pool"
	Host       Kind = "host"
	Flavor     Kind = "flv"
	Image      Kind = "img"
	Instance   Kind = "ins"
	IPPool     Kind = "ipp"
	AuditEvent Kind = "aud"

	ProviderAccount Kind = "pa"
	Sandbox         Kind = "sbx"
	SandboxTemplate Kind = "sbt"
	SandboxSnapshot Kind = "snp"
	// ProviderBootstrap names a machine on its way to becoming a host.
	ProviderBootstrap Kind = "pbs"
	// HostCommand names a host command in the host protocol.
	HostCommand Kind = "cmd"
)

var encoding = base32.NewEncoding("0123456789abcdefghjkmnpqrstvwxyz").WithPadding(base32.NoPadding)

// Encode returns the API ID of a kind of object.
func Encode(k Kind, id uuid.UUID) string {
	return string(k) + "_" + encoding.EncodeToString(id[:])
}

// Parse splits an API ID into its kind and UUID; ok is false when s is not
// a well-formed ID. Only the one encoding Encode gives is well-formed: 26
// base32 digits carry 130 bits, and a string that differs from it in the
// last two would otherwise name the same object as another string, which
// breaks whoever compares IDs as strings (a subscription's id filter).
func Parse(s string) (k Kind, id uuid.UUID, ok bool) {
	prefix, body, found := strings.Cut(s, "_")
	if !found || len(body) != 26 {
		return "", uuid.Nil, false
	}
	b, err := encoding.DecodeString(body)
	if err != nil || len(b) != 16 || encoding.EncodeToString(b) != body {
		return "", uuid.Nil, false
	}
	copy(id[:], b)
	return Kind(prefix), id, true
}

// Decode returns the UUID of an API ID of kind k; ok is false when s is
// malformed or of another kind.
func Decode(k Kind, s string) (uuid.UUID, bool) {
	got, id, ok := Parse(s)
	if !ok || got != k {
		return uuid.Nil, false
	}
	return id, true
}

// New returns a fresh time-ordered UUID, so newer objects sort later.
func New() uuid.UUID {
	return uuid.Must(uuid.NewV7())
}

// EncodeSeq returns the API ID of an object keyed by a sequence number, such
// as an audit event.
func EncodeSeq(k Kind, n int64) string {
	return string(k) + "_" + strconv.FormatInt(n, 36)
}

// DecodeSeq returns the sequence number of an API ID of kind k. Only the
// encoding EncodeSeq gives decodes: not a sign, a leading zero or an upper
// case digit, which ParseInt takes.
func DecodeSeq(k Kind, s string) (int64, bool) {
	body, found := strings.CutPrefix(s, string(k)+"_")
	if !found {
		return 0, false
	}
	n, err := strconv.ParseInt(body, 36, 64)
	return n, err == nil && n > 0 && strconv.FormatInt(n, 36) == body
}
