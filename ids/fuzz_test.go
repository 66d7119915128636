package ids

import (
	"testing"

	"github.com/google/uuid"
)

// FuzzParse: an ID that parses is the one encoding of what it names, so two
// strings never name the same object (filters and caches compare IDs as
// strings).
func FuzzParse(f *testing.F) {
	f.Add(Encode(Instance, uuid.MustParse("0190e3c4-9d1e-7a2b-8c3d-4e5f60718293")))
	f.Add(Encode(Pool, uuid.Nil))
	f.Add("ins_0c2ftxr2q1dh5a3hd4yqf2m7bc")
	f.Add("pa_")
	f.Add("_")
	f.Add("")
	f.Fuzz(func(t *testing.T, s string) {
		k, id, ok := Parse(s)
		if !ok {
			return
		}
		if again := Encode(k, id); again != s {
			t.Fatalf("Parse(%q) = %s %v, which encodes as %q", s, k, id, again)
		}
		if got, ok := Decode(k, s); !ok || got != id {
			t.Fatalf("Decode(%q) = %v, %v; Parse said %v", s, got, ok, id)
		}
	})
}

// FuzzDecodeSeq: a cursor or audit event ID that decodes is the one
// encoding of its positive sequence number.
func FuzzDecodeSeq(f *testing.F) {
	f.Add(EncodeSeq(AuditEvent, 1))
	f.Add(EncodeSeq(AuditEvent, 1<<62))
	f.Add("aud_0")
	f.Add("aud_-1")
	f.Add("aud_zzzzzzzzzzzzzz")
	f.Add("ins_1")
	f.Fuzz(func(t *testing.T, s string) {
		n, ok := DecodeSeq(AuditEvent, s)
		if !ok {
			return
		}
		if n <= 0 {
			t.Fatalf("DecodeSeq(%q) = %d", s, n)
		}
		if again := EncodeSeq(AuditEvent, n); again != s {
			t.Fatalf("DecodeSeq(%q) = %d, which encodes as %q", s, n, again)
		}
	})
}
