package httplimit

import (
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"strings"
)

// ErrNoClientIP is returned when a request's client address cannot be
// determined: its TCP peer address (http.Request.RemoteAddr) does not parse.
var ErrNoClientIP = errors.New("no client IP")

// ClientIPResolver finds the address of the client behind a request. The
// X-Forwarded-For header is honoured only when the TCP peer is a trusted
// proxy; it is then read right to left, skipping trusted hops, and the first
// untrusted address is the client. Entries a client writes itself sit left of
// the ones its proxies append, so a forged X-Forwarded-For gains nothing.
//
// A malformed or empty entry ends the walk: the request is attributed to the
// trusted hop that forwarded it, never to an address left of the garbage. When
// every hop is trusted, the leftmost one is the client. Addresses are
// returned without zone, and IPv4-mapped IPv6 addresses as IPv4.
//
// The zero value trusts no proxy and returns the TCP peer. A ClientIPResolver
// is immutable and safe for concurrent use.
type ClientIPResolver struct {
	trusted []netip.Prefix
}

// NewClientIPResolver returns a resolver trusting the given proxies, each a
// CIDR prefix ("10.0.0.0/8", "fd00::/8") or a single address ("127.0.0.1").
// It returns an error naming the first entry that parses as neither.
func NewClientIPResolver(trustedProxies ...string) (*ClientIPResolver, error) {
	c := &ClientIPResolver{}
	for _, s := range trustedProxies {
		s = strings.TrimSpace(s)
		if p, err := netip.ParsePrefix(s); err == nil {
			c.trusted = append(c.trusted, p.Masked())
			continue
		}
		a, err := netip.ParseAddr(s)
		if err != nil {
			return nil, fmt.Errorf("trusted proxy %q: want a CIDR prefix such as 10.0.0.0/8 or an address", s)
		}
		a = a.Unmap().WithZone("")
		c.trusted = append(c.trusted, netip.PrefixFrom(a, a.BitLen()))
	}
	return c, nil
}

// Trusted reports whether a is one of the resolver's trusted proxies.
func (c *ClientIPResolver) Trusted(a netip.Addr) bool {
	if c == nil {
		return false
	}
	a = a.Unmap()
	for _, p := range c.trusted {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// ClientIP returns the client address of r. It fails with ErrNoClientIP only
// when r.RemoteAddr does not parse.
func (c *ClientIPResolver) ClientIP(r *http.Request) (netip.Addr, error) {
	peer, ok := parseHop(r.RemoteAddr)
	if !ok {
		return netip.Addr{}, fmt.Errorf("%w: peer address %q", ErrNoClientIP, r.RemoteAddr)
	}
	if !c.Trusted(peer) {
		return peer, nil
	}
	values := r.Header.Values("X-Forwarded-For")
	if len(values) == 0 {
		return peer, nil
	}
	hops := strings.Split(strings.Join(values, ","), ",")
	client := peer
	for i := len(hops) - 1; i >= 0; i-- {
		a, ok := parseHop(strings.TrimSpace(hops[i]))
		if !ok {
			return client, nil
		}
		client = a
		if !c.Trusted(a) {
			return a, nil
		}
	}
	return client, nil
}

// parseHop parses an address as X-Forwarded-For entries and RemoteAddr carry
// it: "192.0.2.1", "192.0.2.1:443", "2001:db8::1", "[2001:db8::1]:443".
func parseHop(s string) (netip.Addr, bool) {
	if s == "" {
		return netip.Addr{}, false
	}
	if ap, err := netip.ParseAddrPort(s); err == nil {
		return ap.Addr().Unmap().WithZone(""), true
	}
	s = strings.TrimSuffix(strings.TrimPrefix(s, "["), "]")
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Addr{}, false
	}
	return a.Unmap().WithZone(""), true
}
