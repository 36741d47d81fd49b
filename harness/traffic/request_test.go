package traffic

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/rlbench/rlbench/scenarios"
)

// recorded is a request as the server saw it.
type recorded struct {
	method, path, query, body string
	header                    http.Header
}

// recorder is a loopback API that answers 200 and keeps every request
// under its request ID.
type recorder struct {
	mu   sync.Mutex
	seen map[uint64]recorded
}

func newRecorder(t *testing.T) (*recorder, *httptest.Server) {
	rec := &recorder{seen: map[uint64]recorded{}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		id, _ := strconv.ParseUint(r.Header.Get(RequestIDHeader), 10, 64)
		rec.mu.Lock()
		rec.seen[id] = recorded{method: r.Method, path: r.URL.Path, query: r.URL.RawQuery, body: string(body), header: r.Header.Clone()}
		rec.mu.Unlock()
	}))
	t.Cleanup(srv.Close)
	return rec, srv
}

func (rec *recorder) get(id uint64) (recorded, bool) {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	r, ok := rec.seen[id]
	return r, ok
}

// clientAt reads the client address a server trusting hops proxies
// (the TCP peer counted) reads: the hops-th X-Forwarded-For entry from the
// right.
func clientAt(h http.Header, hops int) (netip.Addr, []string, error) {
	var entries []string
	for _, e := range strings.Split(strings.Join(h.Values("X-Forwarded-For"), ","), ",") {
		entries = append(entries, strings.TrimSpace(e))
	}
	if len(entries) < hops {
		return netip.Addr{}, entries, fmt.Errorf("X-Forwarded-For %v has fewer than %d entries", entries, hops)
	}
	a, err := netip.ParseAddr(entries[len(entries)-hops])
	return a, entries, err
}

// TestCarries checks, for every way a request can carry its identity, that
// the server reads the identity the result names, on every code path that
// builds requests (burst, open model through vegeta, clients honouring
// Retry-After, the probe).
func TestCarries(t *testing.T) {
	keys := filepath.Join(t.TempDir(), "keys.txt")
	if err := os.WriteFile(keys, []byte("# real keys\nsk_a1\nsk_b2\n\nsk_c3\nsk_d4\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	const run = scenarios.RunID("3f9a1c07")
	tests := []struct {
		name       string
		identities string
		// read returns what the server took for the identity: a key, or
		// a client address.
		read func(rq recorded) (string, error)
	}{
		{"api key header", "  count: 3", func(rq recorded) (string, error) {
			return rq.header.Get("X-API-Key"), nil
		}},
		{"api key in another header", "  count: 3\n  header: X-Client-Key", func(rq recorded) (string, error) {
			return rq.header.Get("X-Client-Key"), nil
		}},
		{"bearer token", "  count: 3\n  carry: bearer", func(rq recorded) (string, error) {
			tok, ok := strings.CutPrefix(rq.header.Get("Authorization"), "Bearer ")
			if !ok {
				return "", fmt.Errorf("Authorization %q is no bearer token", rq.header.Get("Authorization"))
			}
			return tok, nil
		}},
		{"bearer tokens from a file", "  carry: bearer\n  keys_file: " + keys, func(rq recorded) (string, error) {
			return strings.TrimPrefix(rq.header.Get("Authorization"), "Bearer "), nil
		}},
		{"query parameter", "  count: 3\n  carry: query\n  name: access_token", func(rq recorded) (string, error) {
			return httpQuery(rq.query, "access_token")
		}},
		{"cookie", "  count: 3\n  carry: cookie\n  name: session", func(rq recorded) (string, error) {
			r := &http.Request{Header: rq.header}
			c, err := r.Cookie("session")
			if err != nil {
				return "", err
			}
			return c.Value, nil
		}},
		{"client IPv4", "  count: 3\n  carry: client_ip", func(rq recorded) (string, error) {
			a, _, err := clientAt(rq.header, 1)
			return a.String(), err
		}},
		{"client IPv6", "  count: 3\n  carry: client_ip\n  ip_version: 6", func(rq recorded) (string, error) {
			a, _, err := clientAt(rq.header, 1)
			return a.String(), err
		}},
		{"client IPv6 /64, one address per request", "  count: 3\n  carry: client_ip\n  ip_version: 6\n  prefix: 64", func(rq recorded) (string, error) {
			a, _, err := clientAt(rq.header, 1)
			return a.String(), err
		}},
		{"client IPv4 behind 3 trusted hops, spoofing", "  count: 3\n  carry: client_ip\n  trusted_hops: 3\n  spoof_forwarded_for: true", func(rq recorded) (string, error) {
			a, entries, err := clientAt(rq.header, 3)
			if err == nil && (len(entries) != 4 || entries[2] != "192.0.2.1" || entries[3] != "192.0.2.2") {
				err = fmt.Errorf("X-Forwarded-For %v: want a forged entry, the client, 192.0.2.1, 192.0.2.2", entries)
			}
			return a.String(), err
		}},
		{"client IPv6 behind 2 trusted hops", "  count: 3\n  carry: client_ip\n  ip_version: 6\n  trusted_hops: 2", func(rq recorded) (string, error) {
			a, entries, err := clientAt(rq.header, 2)
			if err == nil && (len(entries) != 2 || entries[1] != "2001:db8::1") {
				err = fmt.Errorf("X-Forwarded-For %v: want the client, 2001:db8::1", entries)
			}
			return a.String(), err
		}},
	}
	const traffic = `  - {kind: burst, requests: 6}
  - {kind: constant, rate: 100/1s, duration: 100ms}
  - {kind: constant, rate: 100/1s, duration: 100ms, honor_retry_after: true}
  - {kind: retry_after_probe, requests: 3}`
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rec, srv := newRecorder(t)
			sc := scenario(t, 1, oneRoute, tc.identities, traffic)
			results, _, err := collect(t, context.Background(), Config{Scenario: sc, BaseURLs: []string{srv.URL}, RunID: run})
			if err != nil {
				t.Fatal(err)
			}
			if got, want := len(results), 6+10+10+3; got != want {
				t.Fatalf("%d results, want %d", got, want)
			}
			addrs := map[string]map[string]bool{} // label → addresses seen
			for _, r := range results {
				rq, ok := rec.get(r.ID)
				if !ok || r.Status != http.StatusOK {
					t.Fatalf("result %d: status %d, err %q; the server saw it: %v", r.ID, r.Status, r.Err, ok)
				}
				got, err := tc.read(rq)
				if err != nil {
					t.Fatalf("result %d: %v", r.ID, err)
				}
				idn := sc.Identities.Identity(run, r.IdentityIndex)
				if r.Identity != idn.Label {
					t.Errorf("result %d: Identity = %q, want the label %q", r.ID, r.Identity, idn.Label)
				}
				if sc.Identities.Carry != scenarios.ClientIP {
					if got != idn.Value {
						t.Errorf("result %d (%s): the server read %q, want %q", r.ID, r.Identity, got, idn.Value)
					}
					continue
				}
				a, err := netip.ParseAddr(got)
				if err != nil || !idn.Block.Contains(a) {
					t.Errorf("result %d (%s): the server read address %q, outside the identity's %s", r.ID, r.Identity, got, idn.Block)
				}
				if addrs[r.Identity] == nil {
					addrs[r.Identity] = map[string]bool{}
				}
				addrs[r.Identity][got] = true
			}
			if sc.Identities.Prefix > 0 {
				for label, seen := range addrs {
					if n := len(seen); n < 3 {
						t.Errorf("identity %s sent from %d addresses; each request should take another of its /%d", label, n, sc.Identities.Prefix)
					}
				}
			}
			if len(sc.Identities.Keys) > 0 {
				for _, r := range results {
					if !strings.HasPrefix(r.Identity, "key#") {
						t.Errorf("result %d: Identity %q is not a key's label", r.ID, r.Identity)
					}
				}
			}
		})
	}
}

func httpQuery(raw, name string) (string, error) {
	q, err := url.ParseQuery(raw)
	return q.Get(name), err
}

// TestRequestFields checks that each route's method, query string, body
// and headers (one from the environment) reach the server on every code
// path that builds requests.
func TestRequestFields(t *testing.T) {
	t.Setenv("RLBENCH_TEST_TOKEN", "tok-9c2e")
	rec, srv := newRecorder(t)
	routes := `    - path: /v1/orders
      method: POST
      query: tenant=acme&page=2
      headers: {Authorization: "Bearer ${RLBENCH_TEST_TOKEN}", Content-Type: application/json}
      body: '{"sku": "A-1"}'
      policies: ["gcra:10/1s,burst=10"]
    - path: /v1/ping
      policies: ["gcra:10/1s,burst=10"]`
	sc := scenario(t, 1, routes, "  count: 2\n  carry: query", `  - {kind: burst, requests: 8}
  - {kind: constant, rate: 100/1s, duration: 100ms}
  - {kind: constant, rate: 100/1s, duration: 100ms, honor_retry_after: true}
  - {kind: edge_burst, requests: 2, window: 200ms, offset: 20ms}
  - {kind: retry_after_probe, requests: 3, routes: [{path: /v1/orders}]}`)
	results, _, err := collect(t, context.Background(), Config{Scenario: sc, BaseURLs: []string{srv.URL}, RunID: "0000beef"})
	if err != nil {
		t.Fatal(err)
	}
	orders := 0
	for _, r := range results {
		rq, ok := rec.get(r.ID)
		if !ok {
			t.Fatalf("result %d (%s): the server never saw it: %s", r.ID, r.Phase, r.Err)
		}
		key := r.Identity
		want := recorded{method: "GET", path: "/v1/ping", query: "api_key=" + key}
		wantHeader := map[string]string{"Authorization": "", "Content-Type": ""}
		if r.Route == "/v1/orders" {
			orders++
			want = recorded{method: "POST", path: "/v1/orders", query: "tenant=acme&page=2&api_key=" + key, body: `{"sku": "A-1"}`}
			wantHeader = map[string]string{"Authorization": "Bearer tok-9c2e", "Content-Type": "application/json"}
		}
		if rq.method != want.method || rq.path != want.path || rq.query != want.query || rq.body != want.body {
			t.Errorf("result %d (%s): server saw %s %s?%s body %q; want %s %s?%s body %q",
				r.ID, r.Phase, rq.method, rq.path, rq.query, rq.body, want.method, want.path, want.query, want.body)
		}
		for name, v := range wantHeader {
			if got := rq.header.Get(name); got != v {
				t.Errorf("result %d (%s): %s = %q, want %q", r.ID, r.Phase, name, got, v)
			}
		}
		if r.Method != want.method || r.URL != srv.URL+want.path+"?"+want.query {
			t.Errorf("result %d: Method, URL = %s %s", r.ID, r.Method, r.URL)
		}
	}
	if orders == 0 || orders == len(results) {
		t.Errorf("%d of %d requests went to /v1/orders; want both routes used", orders, len(results))
	}
}

// TestResultsHoldNoSecret sends requests that carry a token from the
// environment and keys from a file (in the query string, which transport
// errors quote) to a server that drops every connection, and checks that
// no result shows a secret, on every code path that builds requests.
func TestResultsHoldNoSecret(t *testing.T) {
	const token = "tok-secret-5e1f0a"
	t.Setenv("RLBENCH_TEST_TOKEN", token)
	keysFile := filepath.Join(t.TempDir(), "keys.txt")
	keys := []string{"sk_live_7d41a0", "sk_live_a/b+c=d", "sk_live_92ce11"}
	if err := os.WriteFile(keysFile, []byte(strings.Join(keys, "\n")), 0o600); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, _, err := http.NewResponseController(w).Hijack()
		if err == nil {
			c.Close() // no answer: the client's error quotes the URL
		}
	}))
	defer srv.Close()
	routes := `    - path: /api/items
      headers: {Authorization: "Bearer ${RLBENCH_TEST_TOKEN}"}
      policies: ["gcra:10/1s,burst=10"]`
	sc := scenario(t, 1, routes, "  carry: query\n  keys_file: "+keysFile, `  - {kind: burst, requests: 4}
  - {kind: constant, rate: 100/1s, duration: 100ms}
  - {kind: constant, rate: 100/1s, duration: 100ms, honor_retry_after: true}
  - {kind: retry_after_probe, requests: 2}`)
	results, _, err := collect(t, context.Background(), Config{Scenario: sc, BaseURLs: []string{srv.URL}, RunID: "0000beef"})
	if err != nil {
		t.Fatal(err)
	}
	if len(results) != 4+10+10+2 {
		t.Fatalf("%d results, want 26", len(results))
	}
	quoted := 0
	for _, r := range results {
		if r.Status != 0 || r.Err == "" {
			t.Fatalf("result %d: status %d, err %q; want a transport error", r.ID, r.Status, r.Err)
		}
		if strings.Contains(r.Err, "api_key=key%23") {
			quoted++
		}
		shown := fmt.Sprintf("%s %s %s %v", r.Identity, r.URL, r.Err, r.Record(results[0].Sent))
		for _, secret := range append(keys, token, url.QueryEscape(keys[1])) {
			if strings.Contains(shown, secret) {
				t.Errorf("result %d shows the secret %q: %s", r.ID, secret, shown)
			}
		}
	}
	if quoted == 0 {
		t.Errorf("no error quotes the URL with the key's label; the test no longer exercises the scrubbing")
	}
}
