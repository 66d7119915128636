package netpolicy

import (
	"net/netip"
	"testing"

	"github.com/better-compute/vps/hostproto"
)

func TestRules(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		policy *hostproto.NetworkPolicy
		accept []string
		drop   []string
	}{
		{"no policy", nil, []string{"1.1.1.1", "10.0.0.1"}, nil},
		{"closed", &hostproto.NetworkPolicy{}, nil, []string{"1.1.1.1", "10.0.0.1"}},
		{
			"closed but allowOut",
			&hostproto.NetworkPolicy{AllowOut: []string{"10.50.0.1", "192.168.0.0/16"}},
			[]string{"10.50.0.1", "192.168.7.7"}, []string{"10.50.0.2", "1.1.1.1"},
		},
		{
			"open but denyOut",
			&hostproto.NetworkPolicy{AllowInternetAccess: true, DenyOut: []string{"10.0.0.0/8", "1.1.1.1"}},
			[]string{"8.8.8.8", "11.0.0.1"}, []string{"10.1.2.3", "1.1.1.1"},
		},
		{
			"allow wins over deny",
			&hostproto.NetworkPolicy{AllowInternetAccess: true, AllowOut: []string{"10.0.0.5"}, DenyOut: []string{"10.0.0.0/8"}},
			[]string{"10.0.0.5", "8.8.8.8"}, []string{"10.0.0.6"},
		},
		{
			"a CIDR is masked to its network",
			&hostproto.NetworkPolicy{AllowOut: []string{"10.9.9.9/24"}},
			[]string{"10.9.9.1"}, []string{"10.9.8.1"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rules, err := Rules(tt.policy)
			if err != nil {
				t.Fatal(err)
			}
			for want, addrs := range map[Action][]string{Accept: tt.accept, Drop: tt.drop} {
				for _, a := range addrs {
					if got := Decide(rules, netip.MustParseAddr(a)); got != want {
						t.Errorf("%s: %s, want %s (rules %v)", a, got, want, rules)
					}
				}
			}
		})
	}
}

func TestBadEntries(t *testing.T) {
	t.Parallel()
	for _, p := range []hostproto.NetworkPolicy{
		{AllowOut: []string{"10.0.0.1", "nope"}},
		{DenyOut: []string{"::1"}},
		{DenyOut: []string{"2001:db8::/32"}},
		{AllowOut: []string{"10.0.0.0/33"}},
		{AllowOut: []string{""}},
	} {
		if _, err := Rules(&p); err == nil {
			t.Errorf("%+v accepted", p)
		}
	}
}
