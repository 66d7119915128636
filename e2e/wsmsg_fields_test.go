package e2e

import "testing"

// TestJSONPath: the benchmarks' clients find what they time and check in
// the messages serve and LXD send, nested values and strings with
// brackets, commas and escaped quotes skipped whole.
func TestJSONPath(t *testing.T) {
	msg := []byte(`{"payload":{"data":{"instanceEvents":{"type":"UPDATED","version":12,` +
		`"instance":{"tags":[{"k":"a,}"}],"note":"say \"}\"","id":"ins_1","updatedAt":"2026-12-02T05:00:00.123Z"}}}},` +
		`"id":"7","type":"next"}`)
	for _, c := range []struct {
		path []string
		want string
	}{
		{[]string{"type"}, `"next"`},
		{[]string{"id"}, `"7"`},
		{[]string{"payload", "data", "instanceEvents", "type"}, `"UPDATED"`},
		{[]string{"payload", "data", "instanceEvents", "version"}, `12`},
		{[]string{"payload", "data", "instanceEvents", "instance", "id"}, `"ins_1"`},
		{[]string{"payload", "data", "instanceEvents", "instance", "tags"}, `[{"k":"a,}"}]`},
	} {
		got, err := jsonPath(msg, c.path...)
		if err != nil || string(got) != c.want {
			t.Errorf("%v: %s, %v; want %s", c.path, got, err, c.want)
		}
	}
	if _, err := jsonPath(msg, "payload", "missing"); err == nil {
		t.Error("a missing field was found")
	}
	_, id, version, err := instanceEvent(msg)
	if err != nil || id != "ins_1" || version != 12 {
		t.Errorf("instanceEvent: %q %d %v", id, version, err)
	}
	if typ, err := msgType([]byte(" { \"type\" : \"ping\" } ")); err != nil || typ != "ping" {
		t.Errorf("ping: %q %v", typ, err)
	}
}
