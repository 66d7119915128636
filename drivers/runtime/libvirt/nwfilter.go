package libvirt

import (
	"errors"
	"fmt"
	"strings"

	golibvirt "github.com/digitalocean/go-libvirt"

	"github.com/better-compute/vps/drivers/runtime/netpolicy"
)

// An instance with a NetworkPolicy gets a network filter (nwfilter) of its
// own, named like its domain, defined before the domain and referenced from
// its NIC (<filterref>), so libvirt enforces it on the host's side of the
// NIC from the guest's first packet; Undefine removes it after the domain.
// A daemon that dies between defining the filter and the domain leaves the
// filter until the instance is defined again or undefined.
//
// The filter, in priority order (lower first; libvirt keeps the order of
// rules of equal priority), all in direction out (from the guest):
//
//	-500  accept packets of established connections: the guest answers
//	      connections made to it (SSH) whatever its policy
//	-400  accept DHCP requests (UDP 68 to 67)
//	 100  accept each AllowOut prefix
//	 200  drop each DenyOut prefix
//	 300  the default for IPv4 and IPv6: accept with internet access, else drop
//
// ARP is layer 2, which the filter's rules (all iptables rules) leave alone.

// filterName is the libvirt name of an instance's network filter.
func filterName(id string) string { return domainName(id) }

// filterXML describes the network filter of instance id enforcing rules.
func filterXML(id string, rules []netpolicy.Rule) string {
	var b strings.Builder
	fmt.Fprintf(&b, "<filter name=%q chain=\"root\">\n", filterName(id))
	rule := func(action netpolicy.Action, priority int, match string) {
		fmt.Fprintf(&b, "  <rule action=%q direction=\"out\" priority=\"%d\">%s</rule>\n", action, priority, match)
	}
	rule(netpolicy.Accept, -500, `<all state="ESTABLISHED,RELATED"/>`)
	rule(netpolicy.Accept, -400, `<udp srcportstart="68" dstportstart="67"/>`)
	for _, r := range rules {
		if r.To.Bits() == 0 { // the default, last
			rule(r.Action, 300, `<all/>`)
			rule(r.Action, 300, `<all-ipv6/>`)
			continue
		}
		priority := 100
		if r.Action == netpolicy.Drop {
			priority = 200
		}
		rule(r.Action, priority, fmt.Sprintf(`<all dstipaddr="%s" dstipmask="%d"/>`, r.To.Addr(), r.To.Bits()))
	}
	b.WriteString("</filter>\n")
	return b.String()
}

// defineFilter defines (or redefines) the network filter of instance id.
func (r *Runtime) defineFilter(id string, rules []netpolicy.Rule) error {
	if _, err := r.l.NwfilterDefineXML(filterXML(id, rules)); err != nil {
		return fmt.Errorf("define network filter: %w", err)
	}
	return nil
}

// undefineFilter removes the network filter of instance id, if it has one.
func (r *Runtime) undefineFilter(id string) error {
	f, err := r.l.NwfilterLookupByName(filterName(id))
	if isNoFilter(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("look up network filter: %w", err)
	}
	if err := r.l.NwfilterUndefine(f); err != nil && !isNoFilter(err) {
		return fmt.Errorf("undefine network filter: %w", err)
	}
	return nil
}

// isNoFilter is libvirt's answer about a network filter that does not exist.
func isNoFilter(err error) bool {
	var lerr golibvirt.Error
	return errors.As(err, &lerr) && lerr.Code == uint32(golibvirt.ErrNoNwfilter)
}
