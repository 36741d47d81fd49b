package scenarios

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// RunID names one run of a scenario: eight lowercase hex digits, drawn at
// random for every run (NewRunID). Generated identities carry it in their
// names (see Identity) unless the scenario fixes them, and the run records
// it (history header, run.json) so that the same identities can be sent
// again. The empty RunID names the fixed identities.
type RunID string

// NewRunID returns a random RunID from crypto/rand.
func NewRunID() RunID {
	var b [4]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	return RunID(hex.EncodeToString(b[:]))
}

// ParseRunID checks that s is a RunID: eight hex digits, or empty.
func ParseRunID(s string) (RunID, error) {
	if s == "" {
		return "", nil
	}
	if _, err := strconv.ParseUint(s, 16, 32); err != nil || len(s) != 8 {
		return "", fmt.Errorf("run id %q: want eight hex digits such as 3f9a1c07", s)
	}
	return RunID(strings.ToLower(s)), nil
}

// number is the run id as a number; 0 for the empty or a malformed id.
func (r RunID) number() uint32 {
	n, err := strconv.ParseUint(string(r), 16, 32)
	if err != nil {
		return 0
	}
	return uint32(n)
}

// Identity is one client of a run: how histories and reports name it and
// what its requests carry.
type Identity struct {
	// Index is the identity's number, from 0 to Identities.Count (the
	// retry_after_probe uses Count, an identity no other phase uses).
	Index int
	// Label names the identity in histories, reports and logs, and is
	// what the checker groups requests by: the key itself when it is
	// generated, "key#N" for the N-th key (from 1) of a keys file, never
	// the key; with client addresses the address, or the identity's block
	// in CIDR form ("fd12:3456:7800:7::/64") when each request takes
	// another address of it.
	Label string
	// Value is the API key or token the requests carry; empty with
	// ClientIP. Secret marks a value from a keys file, which must never be
	// recorded.
	Value  string
	Secret bool
	// Block holds the identity's client addresses with ClientIP: a single
	// address (a /32 or /128) or a block of Identities.Prefix bits.
	Block netip.Prefix
	// Group names the identity's group (Identities.Groups); empty for an
	// identity of no group.
	Group string
}

// Client address plans. IPv4 identities are numbered within 10.0.0.0/8.
// IPv6 identities lie in the unique local fd00::/8 (RFC 4193): 32 bits of
// the run id, then the identity's number in the bits up to the prefix, so
// that identity i has /64 number i of the run's /40; without a prefix each
// identity is the address ::1 of its /64, so that a limiter that keys IPv6
// clients by /64 still tells every identity apart.
var (
	ipv4Base = netip.MustParsePrefix("10.0.0.0/8")
	ipv6Base = netip.MustParsePrefix("fd00::/8")
	// ipv6RunBits is the length of fd00::/8 and the 32-bit run id.
	ipv6RunBits = 40
)

// Proxy addresses the harness appends to X-Forwarded-For for TrustedHops
// above 1: from TEST-NET-1 (RFC 5737) for IPv4 clients, from the
// documentation prefix (RFC 3849) for IPv6 ones. A target must trust them
// as proxies; the runner tells the sample API to.
var (
	ProxyPrefixV4 = netip.MustParsePrefix("192.0.2.0/24")
	ProxyPrefixV6 = netip.MustParsePrefix("2001:db8::/32")
)

// MaxTrustedHops is the most trusted proxies a scenario may declare.
const MaxTrustedHops = 16

// prefixBits is the length of an identity's block with ClientIP: Prefix,
// or a single address.
func (id Identities) prefixBits() int {
	switch {
	case id.Prefix > 0:
		return id.Prefix
	case id.IPVersion == 6:
		return 128
	}
	return 32
}

// numberingBits is the prefix length identities are numbered at: their
// block's, but a /64 for single IPv6 addresses.
func (id Identities) numberingBits() int {
	if id.IPVersion == 6 && id.Prefix == 0 {
		return 64
	}
	return id.prefixBits()
}

// Blocks is the number of identity blocks the client address plan holds
// with ClientIP (capped at 2^62): Count must stay below it, so that the
// identities and the probe's all differ.
func (id Identities) Blocks() uint64 {
	bits := id.numberingBits() - ipv4Base.Bits()
	if id.IPVersion == 6 {
		bits = id.numberingBits() - ipv6RunBits
	}
	return 1 << min(max(bits, 0), 62)
}

// Identity returns identity i (0 ≤ i ≤ Count) of the run named run.
//
// Generated keys and tokens are "key-0007" when the identities are fixed
// (or run is empty) and "key-<run>-0007" otherwise. Keys from a file are
// Keys[i], labelled "key#<i+1>". An identity of a group (see Sets for the
// indexes) is named after it: "free-<run>-0003" for the fourth generated
// key of group free (the group's own numbering), "free#4" for the fourth
// key of its keys file. Client addresses: IPv4 identity i is
// 10.0.0.0 plus i blocks (10.0.0.7 without a prefix), shifted by the run
// id when the identities are fresh, so that two runs share an address
// only with a chance of about the number of identities over 2^24; IPv6
// identity i is /64 number i (or block i of the prefix length) within
// fdRR:RRRR:RR00::/40, RR the run id's digits.
func (id Identities) Identity(run RunID, i int) Identity {
	if id.Fixed {
		run = ""
	}
	g, j := id.locate(i)
	if g >= 0 {
		return id.groupIdentity(run, i, g, j)
	}
	out := Identity{Index: i}
	switch {
	case id.Carry == ClientIP:
		out.Block = id.block(run, i)
		out.Label = out.Block.String()
		if out.Block.IsSingleIP() {
			out.Label = out.Block.Addr().String()
		}
	case len(id.Keys) > 0:
		out.Value, out.Secret = id.Keys[j%len(id.Keys)].Reveal(), true
		out.Label = "key#" + strconv.Itoa(j%len(id.Keys)+1)
	default:
		out.Value = "key-" + numbered(run, j)
		out.Label = out.Value
	}
	return out
}

// block is the address block of identity i of run (empty run: fixed).
func (id Identities) block(run RunID, i int) netip.Prefix {
	n := uint64(i) % id.Blocks()
	shift := 128 - id.numberingBits()
	if id.IPVersion == 6 {
		a := ipv6Base.Addr().As16()
		binary.BigEndian.PutUint32(a[1:5], run.number())
		hi, lo := binary.BigEndian.Uint64(a[:8]), binary.BigEndian.Uint64(a[8:])
		switch {
		case shift >= 64:
			hi |= n << (shift - 64)
		case shift > 0:
			hi |= n >> (64 - shift)
			lo |= n << shift
		default:
			lo |= n
		}
		if id.Prefix == 0 {
			lo |= 1 // the address ::1 of the identity's /64
		}
		binary.BigEndian.PutUint64(a[:8], hi)
		binary.BigEndian.PutUint64(a[8:], lo)
		return netip.PrefixFrom(netip.AddrFrom16(a), id.prefixBits())
	}
	if run != "" {
		n = (n + uint64(run.number())) % id.Blocks()
	}
	base := binary.BigEndian.Uint32(ipv4Base.Addr().AsSlice())
	var a [4]byte
	binary.BigEndian.PutUint32(a[:], base|uint32(n<<(shift-96)))
	return netip.PrefixFrom(netip.AddrFrom4(a), id.prefixBits())
}

// Addr returns the client address of request n (any number unique in the
// run, such as its ID) of the identity: its one address, or an address of
// its block that a hash of n picks, so that successive requests come from
// different addresses of one block.
func (idn Identity) Addr(n uint64) netip.Addr {
	b := idn.Block
	host := 128 - b.Bits()
	if b.Addr().Is4() {
		host = 32 - b.Bits()
	}
	if host == 0 {
		return b.Addr()
	}
	h := mix(n)
	if b.Addr().Is4() {
		a := b.Addr().As4()
		v := binary.BigEndian.Uint32(a[:]) | uint32(h)&(1<<host-1)
		binary.BigEndian.PutUint32(a[:], v)
		return netip.AddrFrom4(a)
	}
	a := b.Addr().As16()
	lo := binary.BigEndian.Uint64(a[8:])
	if host >= 64 {
		lo = h
	} else {
		lo |= h & (1<<host - 1)
	}
	binary.BigEndian.PutUint64(a[8:], lo)
	return netip.AddrFrom16(a)
}

// mix is SplitMix64's finaliser: distinct inputs give distinct, well
// spread outputs.
func mix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}

// Proxies returns the addresses of the proxies the harness appends after
// the client's in X-Forwarded-For: TrustedHops−1 of them, from
// ProxyPrefixV4 or ProxyPrefixV6 by the identities' IP version, nearest
// the client first. It is empty with one trusted hop.
func (id Identities) Proxies() []netip.Addr {
	var out []netip.Addr
	for k := 1; k < id.TrustedHops; k++ {
		if id.IPVersion == 6 {
			a := ProxyPrefixV6.Addr().As16()
			a[15] = byte(k)
			out = append(out, netip.AddrFrom16(a))
		} else {
			a := ProxyPrefixV4.Addr().As4()
			a[3] = byte(k)
			out = append(out, netip.AddrFrom4(a))
		}
	}
	return out
}

// ProxyPrefix is the prefix Proxies draws from: ProxyPrefixV6 for IPv6
// identities, else ProxyPrefixV4.
func (id Identities) ProxyPrefix() netip.Prefix {
	if id.IPVersion == 6 {
		return ProxyPrefixV6
	}
	return ProxyPrefixV4
}
