package httplimit

import (
	"errors"
	"net/http/httptest"
	"testing"
)

func TestClientIP(t *testing.T) {
	res, err := NewClientIPResolver("10.0.0.0/8", "fd00::/8", "192.0.2.10")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		peer   string
		xff    []string // one element per header line; nil: no header
		want   string
		errNil bool
	}{
		{name: "no proxy", peer: "203.0.113.9:1234", want: "203.0.113.9"},
		{name: "spoofed XFF from untrusted peer", peer: "203.0.113.9:1234", xff: []string{"1.2.3.4"}, want: "203.0.113.9"},
		{name: "one trusted hop", peer: "10.0.0.1:5000", xff: []string{"198.51.100.7"}, want: "198.51.100.7"},
		{name: "single trusted address", peer: "192.0.2.10:5000", xff: []string{"198.51.100.7"}, want: "198.51.100.7"},
		{name: "two trusted hops", peer: "10.0.0.1:5000", xff: []string{"198.51.100.7, 10.0.0.2"}, want: "198.51.100.7"},
		{name: "client's own XFF through a proxy", peer: "10.0.0.1:5000", xff: []string{"6.6.6.6, 198.51.100.7"}, want: "198.51.100.7"},
		{name: "client's own XFF claiming a trusted address", peer: "10.0.0.1:5000", xff: []string{"10.9.9.9, 198.51.100.7"}, want: "198.51.100.7"},
		{name: "XFF split over header lines", peer: "10.0.0.1:5000", xff: []string{"6.6.6.6", "198.51.100.7, 10.0.0.2"}, want: "198.51.100.7"},
		{name: "malformed last entry", peer: "10.0.0.1:5000", xff: []string{"198.51.100.7, garbage"}, want: "10.0.0.1"},
		{name: "malformed entry behind a trusted hop", peer: "10.0.0.1:5000", xff: []string{"198.51.100.7, n/a, 10.0.0.2"}, want: "10.0.0.2"},
		{name: "empty entry", peer: "10.0.0.1:5000", xff: []string{"198.51.100.7,,10.0.0.2"}, want: "10.0.0.2"},
		{name: "empty header", peer: "10.0.0.1:5000", xff: []string{""}, want: "10.0.0.1"},
		{name: "whitespace only", peer: "10.0.0.1:5000", xff: []string{"  "}, want: "10.0.0.1"},
		{name: "every hop trusted", peer: "10.0.0.1:5000", xff: []string{"10.0.0.3, 10.0.0.2"}, want: "10.0.0.3"},
		{name: "entry with port", peer: "10.0.0.1:5000", xff: []string{"198.51.100.7:5555"}, want: "198.51.100.7"},
		{name: "IPv6 untrusted peer", peer: "[2001:db8::1]:443", xff: []string{"198.51.100.7"}, want: "2001:db8::1"},
		{name: "IPv6 trusted hops", peer: "[fd00::1]:443", xff: []string{"2001:db8::5, fd00::2"}, want: "2001:db8::5"},
		{name: "IPv6 bracketed entry with port", peer: "[fd00::1]:443", xff: []string{"[2001:db8::9]:80"}, want: "2001:db8::9"},
		{name: "IPv6 bracketed entry", peer: "[fd00::1]:443", xff: []string{"[2001:db8::9]"}, want: "2001:db8::9"},
		{name: "IPv6 zone dropped", peer: "[fe80::1%eth0]:443", want: "fe80::1"},
		{name: "IPv4-mapped trusted peer", peer: "[::ffff:10.0.0.1]:80", xff: []string{"198.51.100.7"}, want: "198.51.100.7"},
		{name: "IPv4-mapped entry", peer: "10.0.0.1:80", xff: []string{"::ffff:198.51.100.7"}, want: "198.51.100.7"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest("GET", "/", nil)
			r.RemoteAddr = tt.peer
			for _, v := range tt.xff {
				r.Header.Add("X-Forwarded-For", v)
			}
			got, err := res.ClientIP(r)
			if err != nil {
				t.Fatalf("ClientIP: %v", err)
			}
			if got.String() != tt.want {
				t.Fatalf("ClientIP = %s, want %s", got, tt.want)
			}
		})
	}
}

func TestClientIPZeroResolverIgnoresXFF(t *testing.T) {
	var res *ClientIPResolver
	r := httptest.NewRequest("GET", "/", nil)
	r.RemoteAddr = "127.0.0.1:9"
	r.Header.Set("X-Forwarded-For", "198.51.100.7")
	got, err := res.ClientIP(r)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := got.String(), "127.0.0.1"; got != want {
		t.Fatalf("ClientIP = %s, want %s", got, want)
	}
}

func TestClientIPBadPeer(t *testing.T) {
	res, _ := NewClientIPResolver()
	r := httptest.NewRequest("GET", "/", nil)
	r.RemoteAddr = "pipe"
	if _, err := res.ClientIP(r); !errors.Is(err, ErrNoClientIP) {
		t.Fatalf("ClientIP error = %v, want ErrNoClientIP", err)
	}
}

func TestNewClientIPResolverRejects(t *testing.T) {
	for _, s := range []string{"10.0.0.0/33", "localhost", "", "10.0.0.1/8/2"} {
		if _, err := NewClientIPResolver(s); err == nil {
			t.Errorf("NewClientIPResolver(%q) = nil error, want one", s)
		}
	}
}

func TestDefaultKey(t *testing.T) {
	tests := []struct {
		name string
		peer string
		id   Identity
		want string
	}{
		{name: "API key is hashed", peer: "203.0.113.9:1", id: Identity{Key: "secret"}, want: HashKey("secret")},
		{name: "IPv4 client", peer: "203.0.113.9:1", want: "ip:203.0.113.9"},
		{name: "IPv6 client keyed by /64", peer: "[2001:db8:1:2:aaaa::1]:1", want: "ip:2001:db8:1:2::/64"},
		{name: "same /64, same key", peer: "[2001:db8:1:2:bbbb::7]:1", want: "ip:2001:db8:1:2::/64"},
	}
	key := DefaultKey(nil)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest("GET", "/", nil)
			r.RemoteAddr = tt.peer
			got, err := key(r, tt.id)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Fatalf("key = %q, want %q", got, tt.want)
			}
		})
	}
	if h := HashKey("secret"); len(h) != len("key:")+32 || h == "key:secret" {
		t.Fatalf("HashKey(secret) = %q, want key: and 32 hex digits", h)
	}
}

// FuzzClientIP checks that a client can never make itself be seen as a
// trusted proxy or as an address other than what the headers carry.
func FuzzClientIP(f *testing.F) {
	f.Add("10.0.0.1:80", "198.51.100.7, 10.0.0.2")
	f.Add("203.0.113.9:1", "10.0.0.1")
	f.Add("[fd00::1]:1", ",,[::1]:5,")
	res, _ := NewClientIPResolver("10.0.0.0/8", "fd00::/8")
	f.Fuzz(func(t *testing.T, peer, xff string) {
		r := httptest.NewRequest("GET", "/", nil)
		r.RemoteAddr = peer
		r.Header.Set("X-Forwarded-For", xff)
		got, err := res.ClientIP(r)
		if err != nil {
			return
		}
		p, ok := parseHop(peer)
		if !ok {
			t.Fatalf("ClientIP(%q) succeeded on an unparsable peer", peer)
		}
		if !res.Trusted(p) && got != p {
			t.Fatalf("untrusted peer %s: ClientIP = %s, want the peer", p, got)
		}
		if !got.IsValid() || got.Zone() != "" || got.Is4In6() {
			t.Fatalf("ClientIP = %v, want a plain valid address", got)
		}
	})
}
