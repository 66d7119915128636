package ratelimit

import (
	"strings"
	"testing"
)

func TestParseRate(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		in   string
		want Rate
		err  string
	}{
		{in: "10/s:50", want: Rate{PerSecond: 10, Burst: 50}},
		{in: "600/m:20", want: Rate{PerSecond: 10, Burst: 20}},
		{in: "3600/h:1", want: Rate{PerSecond: 1, Burst: 1}},
		{in: "0.5/s:3", want: Rate{PerSecond: 0.5, Burst: 3}},
		{in: "2.5/s", want: Rate{PerSecond: 2.5, Burst: 3}},
		{in: "30/m", want: Rate{PerSecond: 0.5, Burst: 1}},
		{in: "off", want: Rate{Off: true}},
		{in: "10", err: "is not a rate"},
		{in: "10/d:5", err: "is not a rate"},
		{in: "ten/s:5", err: "is not a positive number"},
		{in: "0/s:5", err: "is not a positive number"},
		{in: "-1/s:5", err: "is not a positive number"},
		{in: "Inf/s:5", err: "is not a positive number"},
		{in: "10/s:0", err: "is not a positive whole number"},
		{in: "10/s:x", err: "is not a positive whole number"},
		{in: "10/s:", err: "is not a positive whole number"},
	} {
		got, err := ParseRate(c.in)
		switch {
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("ParseRate(%q) = %+v, %v; want an error with %q", c.in, got, err, c.err)
		case c.err == "" && (err != nil || got != c.want):
			t.Errorf("ParseRate(%q) = %+v, %v; want %+v", c.in, got, err, c.want)
		}
	}
}

// TestRateStringParses: what --help shows as a default reads back as it.
func TestRateStringParses(t *testing.T) {
	t.Parallel()
	d := Rates{}.WithDefaults()
	for _, r := range []Rate{d.MemberQueries, d.MemberMutations, d.OperatorQueries, d.OperatorMutations, {PerSecond: 0.25, Burst: 2}, {Off: true}} {
		got, err := ParseRate(r.String())
		if err != nil || got != r {
			t.Errorf("ParseRate(%q) = %+v, %v; want %+v", r.String(), got, err, r)
		}
	}
}
