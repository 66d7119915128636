package cloud

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"syscall"
	"time"
)

// Endpoints is the operator's policy on where provider accounts may send
// requests (with the account's credentials), so that a tenant cannot make
// the reconciler call inside the deployment's network (server-side request
// forgery):
//
//   - a tenant's account may name only an endpoint whose host is in Hosts;
//     an operator's shared account (of no tenant) may name any host;
//   - no account reaches a loopback, link-local, private (RFC 1918, ULA),
//     shared (CGNAT) or otherwise non-public address unless AllowPrivate.
//
// Check applies it to an endpoint when an account is stored; Transport
// applies it again to every connection an account's driver opens: the
// host named to the list, and each address actually dialled (after
// resolution, so a name that resolves inward, or starts to, is refused).
type Endpoints struct {
	// Hosts are the hosts tenants' accounts may name: "api.hetzner.cloud",
	// "pve.example.com:8006" (that port only), "*.example.com" (any name
	// under example.com), or an IP address. Case does not matter.
	Hosts []string
	// AllowPrivate lets accounts reach loopback, link-local, private and
	// other non-public addresses: for emulators on this machine, or an
	// operator's Proxmox on a private network. A tenant's account still
	// reaches only the Hosts named.
	AllowPrivate bool
}

// Check reports whether an account may use endpoint, the URL its settings
// name; shared says it is an operator's shared account. The error says why
// not, in words an API caller may see.
func (e Endpoints) Check(endpoint string, shared bool) error {
	u, err := url.Parse(endpoint)
	if err != nil || u.Host == "" {
		return fmt.Errorf("must be a URL with a host")
	}
	if !shared {
		if err := e.listed(u.Host, u.Scheme); err != nil {
			return err
		}
	}
	host := u.Hostname()
	if ip, err := netip.ParseAddr(host); err == nil {
		return e.address(ip)
	}
	if !e.AllowPrivate && isLocalName(host) {
		return fmt.Errorf("%s is a loopback name, which this deployment does not allow", host)
	}
	return nil
}

// listed checks hostport (a URL's host, with or without a port) against
// Hosts. scheme gives the port when hostport has none ("" for none known).
func (e Endpoints) listed(hostport, scheme string) error {
	host, port := hostport, ""
	if h, p, err := net.SplitHostPort(hostport); err == nil {
		host, port = h, p
	}
	host = normalHost(host)
	if port == "" {
		port = map[string]string{"https": "443", "http": "80"}[scheme]
	}
	for _, entry := range e.Hosts {
		eh, ep := entry, ""
		if h, p, err := net.SplitHostPort(entry); err == nil {
			eh, ep = h, p
		}
		eh = normalHost(eh)
		if ep != "" && ep != port {
			continue
		}
		if eh == host || strings.HasPrefix(eh, "*.") && strings.HasSuffix(host, eh[1:]) {
			return nil
		}
	}
	return fmt.Errorf("%s is not among the provider endpoints this deployment allows; the operator lists them", host)
}

// address refuses a non-public address unless AllowPrivate.
func (e Endpoints) address(ip netip.Addr) error {
	if e.AllowPrivate || Public(ip) {
		return nil
	}
	return fmt.Errorf("%s is not a public address, which this deployment does not allow", ip)
}

// Transport returns the transport an account's driver sends its requests
// through: http.DefaultTransport's settings, without a proxy (the dial
// must see the provider's own address), whose every connection is checked
// by the policy. shared says the account is an operator's shared one. A
// connection the policy refuses fails with a Refused *Error.
func (e Endpoints) Transport(shared bool) *http.Transport {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.Proxy = nil
	dialer := &net.Dialer{
		Timeout:   10 * time.Second,
		KeepAlive: 30 * time.Second,
		// Control runs once an address is resolved, before each
		// connection attempt: what is checked is what is dialled.
		Control: func(_, address string, _ syscall.RawConn) error {
			ap, err := netip.ParseAddrPort(address)
			if err != nil {
				return refused(fmt.Errorf("dial %s: %w", address, err))
			}
			if err := e.address(ap.Addr()); err != nil {
				return refused(err)
			}
			return nil
		},
	}
	tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		if !shared {
			if err := e.listed(addr, ""); err != nil {
				return nil, refused(err)
			}
		}
		return dialer.DialContext(ctx, network, addr)
	}
	return tr
}

// refused is the Refused *Error of a connection the policy refuses.
func refused(err error) *Error {
	return &Error{Kind: Refused, Message: "the endpoint policy refused the connection: " + err.Error()}
}

// nonPublic are the ranges Public refuses besides those netip classifies
// (loopback, private, link-local, multicast, unspecified).
var nonPublic = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),       // "this network"; 0.0.0.0 dials loopback
	netip.MustParsePrefix("100.64.0.0/10"),   // shared address space (CGNAT), used by cloud metadata services
	netip.MustParsePrefix("192.0.0.0/24"),    // IETF protocol assignments
	netip.MustParsePrefix("198.18.0.0/15"),   // benchmarking
	netip.MustParsePrefix("240.0.0.0/4"),     // reserved, and the broadcast address
	netip.MustParsePrefix("64:ff9b:1::/48"),  // local-use IPv4/IPv6 translation
	netip.MustParsePrefix("fec0::/10"),       // deprecated site-local
	netip.MustParsePrefix("2001:db8::/32"),   // documentation
	netip.MustParsePrefix("100::/64"),        // discard-only
	netip.MustParsePrefix("2001:2::/48"),     // benchmarking
	netip.MustParsePrefix("2002::/16"),       // 6to4, which embeds any IPv4 address
	netip.MustParsePrefix("2001::/32"),       // Teredo, likewise
	netip.MustParsePrefix("::/96"),           // IPv4-compatible (deprecated)
	netip.MustParsePrefix("198.51.100.0/24"), // documentation
	netip.MustParsePrefix("203.0.113.0/24"),  // documentation
	netip.MustParsePrefix("192.0.2.0/24"),    // documentation
}

var nat64 = netip.MustParsePrefix("64:ff9b::/96")

// Public reports whether ip is an address on the public internet: not
// loopback, link-local, private (RFC 1918, ULA), multicast, unspecified,
// shared (CGNAT) or reserved. An IPv4 address inside IPv6 (mapped, NAT64)
// is judged as the IPv4 address.
func Public(ip netip.Addr) bool {
	ip = ip.WithZone("")
	if ip.Is4In6() {
		ip = ip.Unmap()
	}
	if nat64.Contains(ip) {
		b := ip.As16()
		ip = netip.AddrFrom4([4]byte(b[12:]))
	}
	if !ip.IsValid() || ip.IsLoopback() || ip.IsPrivate() || ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast() ||
		ip.IsInterfaceLocalMulticast() || ip.IsMulticast() || ip.IsUnspecified() {
		return false
	}
	for _, p := range nonPublic {
		if p.Contains(ip) {
			return false
		}
	}
	return true
}

// isLocalName reports whether host is localhost or a name under it, which
// resolvers answer with loopback (RFC 6761).
func isLocalName(host string) bool {
	h := normalHost(host)
	return h == "localhost" || strings.HasSuffix(h, ".localhost")
}

// normalHost is host as compared: lower case, without brackets or a
// trailing dot, an IP address in its canonical form.
func normalHost(host string) string {
	host = strings.TrimSuffix(strings.ToLower(strings.Trim(host, "[]")), ".")
	if ip, err := netip.ParseAddr(host); err == nil {
		return ip.String()
	}
	return host
}
