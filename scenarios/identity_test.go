package scenarios

import (
	"net/netip"
	"strings"
	"testing"
)

func TestIdentity(t *testing.T) {
	keys := []Secret{NewSecret("sk_live_aaaa"), NewSecret("sk_live_bbbb"), NewSecret("sk_live_cccc")}
	tests := []struct {
		name       string
		id         Identities
		run        RunID
		i          int
		wantLabel  string
		wantValue  string
		wantSecret bool
		wantBlock  string
	}{
		{"fresh key", Identities{Carry: APIKey}, "3f9a1c07", 7, "key-3f9a1c07-0007", "key-3f9a1c07-0007", false, "invalid Prefix"},
		{"fixed key", Identities{Carry: APIKey, Fixed: true}, "3f9a1c07", 7, "key-0007", "key-0007", false, "invalid Prefix"},
		{"no run id", Identities{Carry: Bearer}, "", 12345, "key-12345", "key-12345", false, "invalid Prefix"},
		{"key from a file", Identities{Carry: Bearer, Keys: keys}, "3f9a1c07", 1, "key#2", "sk_live_bbbb", true, "invalid Prefix"},
		{"fixed IPv4", Identities{Carry: ClientIP, IPVersion: 4, Fixed: true}, "3f9a1c07", 258, "10.0.1.2", "", false, "10.0.1.2/32"},
		{"fresh IPv4 shifts by the run", Identities{Carry: ClientIP, IPVersion: 4}, "00000100", 2, "10.0.1.2", "", false, "10.0.1.2/32"},
		{"fresh IPv4 wraps in 10/8", Identities{Carry: ClientIP, IPVersion: 4}, "01ffffff", 2, "10.0.0.1", "", false, "10.0.0.1/32"},
		{"IPv4 /24 blocks", Identities{Carry: ClientIP, IPVersion: 4, Prefix: 24, Fixed: true}, "", 3, "10.0.3.0/24", "", false, "10.0.3.0/24"},
		{"fixed IPv6", Identities{Carry: ClientIP, IPVersion: 6, Fixed: true}, "3f9a1c07", 7, "fd00:0:0:7::1", "", false, "fd00:0:0:7::1/128"},
		{"fresh IPv6", Identities{Carry: ClientIP, IPVersion: 6}, "3f9a1c07", 7, "fd3f:9a1c:700:7::1", "", false, "fd3f:9a1c:700:7::1/128"},
		{"IPv6 /64 blocks", Identities{Carry: ClientIP, IPVersion: 6, Prefix: 64}, "3f9a1c07", 0x10203, "fd3f:9a1c:701:203::/64", "", false, "fd3f:9a1c:701:203::/64"},
		{"IPv6 /48 blocks", Identities{Carry: ClientIP, IPVersion: 6, Prefix: 48, Fixed: true}, "", 5, "fd00:0:5::/48", "", false, "fd00:0:5::/48"},
		{"IPv6 /96 blocks", Identities{Carry: ClientIP, IPVersion: 6, Prefix: 96, Fixed: true}, "", 5, "fd00::5:0:0/96", "", false, "fd00::5:0:0/96"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.id.Identity(tt.run, tt.i)
			if got.Label != tt.wantLabel || got.Value != tt.wantValue || got.Secret != tt.wantSecret || got.Block.String() != tt.wantBlock {
				t.Errorf("Identity(%q, %d) = label %q, value %q, secret %v, block %s; want %q, %q, %v, %s",
					tt.run, tt.i, got.Label, got.Value, got.Secret, got.Block, tt.wantLabel, tt.wantValue, tt.wantSecret, tt.wantBlock)
			}
			if got.Index != tt.i {
				t.Errorf("Index = %d, want %d", got.Index, tt.i)
			}
		})
	}
}

// TestIdentitiesDistinct holds every carry to distinct labels and distinct
// blocks (or values) for distinct indexes, the probe's included, and
// client addresses to one /64 per IPv6 identity.
func TestIdentitiesDistinct(t *testing.T) {
	for _, id := range []Identities{
		{Carry: APIKey, Count: 70000},
		{Carry: ClientIP, IPVersion: 4, Count: 70000},
		{Carry: ClientIP, IPVersion: 4, Count: 1000, Prefix: 20},
		{Carry: ClientIP, IPVersion: 6, Count: 70000},
		{Carry: ClientIP, IPVersion: 6, Count: 70000, Prefix: 64},
	} {
		labels, nets := map[string]bool{}, map[netip.Prefix]bool{}
		for i := 0; i <= id.Count; i++ {
			idn := id.Identity("3f9a1c07", i)
			if labels[idn.Label] {
				t.Fatalf("%+v: identity %d repeats label %q", id, i, idn.Label)
			}
			labels[idn.Label] = true
			if id.Carry == ClientIP && id.IPVersion == 6 {
				p, _ := idn.Block.Addr().Prefix(64)
				if nets[p] {
					t.Fatalf("%+v: identity %d shares the /64 %s", id, i, p)
				}
				nets[p] = true
			}
		}
	}
}

func TestIdentityAddr(t *testing.T) {
	tests := []struct {
		name  string
		id    Identities
		many  bool // requests take different addresses
		inNet string
	}{
		{"one IPv4 address", Identities{Carry: ClientIP, IPVersion: 4, Fixed: true}, false, "10.0.0.3/32"},
		{"IPv4 /24", Identities{Carry: ClientIP, IPVersion: 4, Prefix: 24, Fixed: true}, true, "10.0.3.0/24"},
		{"one IPv6 address", Identities{Carry: ClientIP, IPVersion: 6, Fixed: true}, false, "fd00:0:0:3::1/128"},
		{"IPv6 /64", Identities{Carry: ClientIP, IPVersion: 6, Prefix: 64, Fixed: true}, true, "fd00:0:0:3::/64"},
		{"IPv6 /56", Identities{Carry: ClientIP, IPVersion: 6, Prefix: 56, Fixed: true}, true, "fd00:0:0:300::/56"},
		{"IPv6 /112", Identities{Carry: ClientIP, IPVersion: 6, Prefix: 112, Fixed: true}, true, "fd00::3:0/112"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			idn := tt.id.Identity("", 3)
			want := netip.MustParsePrefix(tt.inNet)
			if idn.Block != want {
				t.Fatalf("Block = %s, want %s", idn.Block, want)
			}
			seen := map[netip.Addr]bool{}
			for n := uint64(1); n <= 200; n++ {
				a := idn.Addr(n)
				if !want.Contains(a) {
					t.Fatalf("Addr(%d) = %s, outside %s", n, a, want)
				}
				seen[a] = true
			}
			if got := len(seen) > 100; got != tt.many {
				t.Errorf("200 requests used %d addresses; want many = %v", len(seen), tt.many)
			}
		})
	}
}

func TestProxies(t *testing.T) {
	tests := []struct {
		id   Identities
		want string
	}{
		{Identities{Carry: ClientIP, IPVersion: 4, TrustedHops: 1}, ""},
		{Identities{Carry: ClientIP, IPVersion: 4, TrustedHops: 3}, "192.0.2.1 192.0.2.2"},
		{Identities{Carry: ClientIP, IPVersion: 6, TrustedHops: 2}, "2001:db8::1"},
	}
	for _, tt := range tests {
		var got []string
		for _, a := range tt.id.Proxies() {
			if !tt.id.ProxyPrefix().Contains(a) {
				t.Errorf("proxy %s outside %s", a, tt.id.ProxyPrefix())
			}
			got = append(got, a.String())
		}
		if strings.Join(got, " ") != tt.want {
			t.Errorf("Proxies(%d hops, IPv%d) = %v, want %s", tt.id.TrustedHops, tt.id.IPVersion, got, tt.want)
		}
	}
}

func TestRunID(t *testing.T) {
	a, b := NewRunID(), NewRunID()
	if a == b {
		t.Errorf("two NewRunID calls gave %s twice", a)
	}
	if _, err := ParseRunID(string(a)); err != nil {
		t.Errorf("ParseRunID(NewRunID()) = %v", err)
	}
	for _, bad := range []string{"3f9a1c0", "3f9a1c07a", "xyz01234", "-1234567"} {
		if _, err := ParseRunID(bad); err == nil {
			t.Errorf("ParseRunID(%q) accepted it", bad)
		}
	}
}
