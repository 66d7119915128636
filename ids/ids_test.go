package ids

import "testing"

func TestRoundTrip(t *testing.T) {
	id := New()
	s := Encode(Instance, id)
	if len(s) != len("ins_")+26 {
		t.Fatalf("Encode = %q", s)
	}
	if got, ok := Decode(Instance, s); !ok || got != id {
		t.Fatalf("Decode(%q) = %v, %v", s, got, ok)
	}
	if _, ok := Decode(Pool, s); ok {
		t.Fatal("an instance ID decoded as a pool ID")
	}
	for _, bad := range []string{"", "ins_", "ins", "ins_!!!!!!!!!!!!!!!!!!!!!!!!!!", s + "0", "x" + s[1:]} {
		if _, ok := Decode(Instance, bad); ok {
			t.Errorf("Decode(%q) succeeded", bad)
		}
	}
	if n, ok := DecodeSeq(AuditEvent, EncodeSeq(AuditEvent, 12345)); !ok || n != 12345 {
		t.Fatalf("DecodeSeq = %d, %v", n, ok)
	}
	if _, ok := DecodeSeq(AuditEvent, "ins_1"); ok {
		t.Fatal("DecodeSeq took another kind")
	}
}

func TestOrdered(t *testing.T) {
	a, b := New(), New()
	if Encode(Instance, a) >= Encode(Instance, b) {
		t.Fatal("later IDs do not sort later")
	}
}
