// Package netpolicy turns an instance's NetworkPolicy into the ordered
// egress rules every runtime driver enforces outside the guest: the libvirt
// driver writes them as a network filter (nwfilter) of the domain, and the
// fake records them for tests. One function decides, so both enforce the
// same thing.
//
// The rules say what a guest may send; the first rule whose destination
// holds a packet's decides it. They come in this order:
//
//  1. accept each AllowOut entry (allow wins over deny);
//  2. drop each DenyOut entry;
//  3. the default: accept everything with AllowInternetAccess, else drop
//     everything.
//
// Whatever the rules, the drivers let a guest speak ARP, ask for DHCP
// (UDP 68 to 67) and answer connections made to it (packets of established
// connections): a guest without internet access is still reachable over
// SSH. Nothing else is implied: not DNS (a resolver the guest must reach
// goes in AllowOut), not a metadata service (there is none: the guest reads
// its NoCloud seed from a disk). The policy is of IPv4: IPv6 egress follows
// the default, accepted with internet access and dropped without.
package netpolicy

import (
	"fmt"
	"net/netip"
	"strings"

	"github.com/better-compute/vps/hostproto"
)

// Action is what a rule does to the packets it matches.
type Action string

// The actions.
const (
	Accept Action = "accept"
	Drop   Action = "drop"
)

// Rule is one egress rule: packets to To get Action.
type Rule struct {
	Action Action
	// To is an IPv4 prefix; 0.0.0.0/0 is everything.
	To netip.Prefix
}

func (r Rule) String() string { return string(r.Action) + " " + r.To.String() }

// Any is the prefix of every IPv4 address.
var Any = netip.PrefixFrom(netip.IPv4Unspecified(), 0)

// Rules returns the egress rules of p, in order; nil for no policy (no
// restriction). An entry that is not an IPv4 address or CIDR is an error
// naming it: the instance itself is at fault.
func Rules(p *hostproto.NetworkPolicy) ([]Rule, error) {
	if p == nil {
		return nil, nil
	}
	rules := make([]Rule, 0, len(p.AllowOut)+len(p.DenyOut)+1)
	for _, list := range []struct {
		name    string
		entries []string
		action  Action
	}{
		{"allowOut", p.AllowOut, Accept},
		{"denyOut", p.DenyOut, Drop},
	} {
		for i, entry := range list.entries {
			to, err := Parse(entry)
			if err != nil {
				return nil, fmt.Errorf("network policy %s[%d]: %w", list.name, i, err)
			}
			rules = append(rules, Rule{Action: list.action, To: to})
		}
	}
	def := Drop
	if p.AllowInternetAccess {
		def = Accept
	}
	return append(rules, Rule{Action: def, To: Any}), nil
}

// Parse reads an IPv4 address (a /32) or CIDR, masked to its network.
func Parse(s string) (netip.Prefix, error) {
	if !strings.Contains(s, "/") {
		a, err := netip.ParseAddr(s)
		if err != nil || !a.Is4() {
			return netip.Prefix{}, fmt.Errorf("%q is not an IPv4 address or CIDR", s)
		}
		return netip.PrefixFrom(a, 32), nil
	}
	p, err := netip.ParsePrefix(s)
	if err != nil || !p.Addr().Is4() {
		return netip.Prefix{}, fmt.Errorf("%q is not an IPv4 address or CIDR", s)
	}
	return p.Masked(), nil
}

// Decide returns the action rules take on a packet to addr: that of the
// first rule that matches, or Accept when none does (no policy). Tests use
// it to check what a guest may reach.
func Decide(rules []Rule, addr netip.Addr) Action {
	for _, r := range rules {
		if r.To.Contains(addr) {
			return r.Action
		}
	}
	return Accept
}
