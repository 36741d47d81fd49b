//go:build unix

package main

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/rlbench/rlbench/harness/checker"
	"github.com/rlbench/rlbench/limiter"
)

// runSplit runs the built binary with extra environment variables and
// returns its exit code, stdout and stderr apart.
func runSplit(t *testing.T, bin string, env []string, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(append(os.Environ(), "CI=true"), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return 0, stdout.String(), stderr.String()
	case errors.As(err, &exit):
		return exit.ExitCode(), stdout.String(), stderr.String()
	}
	t.Fatalf("rlbench %v: %v\n%s%s", args, err, stdout.String(), stderr.String())
	return 0, "", ""
}

// gcraTarget is an external API: it demands a bearer token, keys requests
// by key(r) and rejects what GCRA 10/s (burst 10) per key rejects, with
// Retry-After. Every dropEvery-th request (0: none) gets no answer: the
// connection is closed (a client's transport may retry a GET sent on a
// reused connection, but not a burst's, each on a connection of its own).
type gcraTarget struct {
	token     string
	key       func(*http.Request) string
	dropEvery int64

	store  *limiter.MemoryStore
	limit  limiter.Limit
	n      atomic.Int64
	mu     sync.Mutex
	authed int
	keys   map[string]bool
}

func newGCRATarget(t *testing.T, token string, key func(*http.Request) string, dropEvery int64) (*gcraTarget, *httptest.Server) {
	l, err := limiter.ParseLimit("gcra:10/1s,burst=10")
	if err != nil {
		t.Fatal(err)
	}
	g := &gcraTarget{token: token, key: key, dropEvery: dropEvery, store: limiter.NewMemoryStore(), limit: l, keys: map[string]bool{}}
	srv := httptest.NewServer(g)
	t.Cleanup(srv.Close)
	return g, srv
}

func (g *gcraTarget) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if g.token != "" && r.Header.Get("Authorization") != "Bearer "+g.token {
		http.Error(w, "unauthorized", http.StatusUnauthorized)
		return
	}
	if n := g.n.Add(1); g.dropEvery > 0 && n%g.dropEvery == 0 {
		if c, _, err := http.NewResponseController(w).Hijack(); err == nil {
			c.Close()
			return
		}
	}
	key := g.key(r)
	g.mu.Lock()
	g.authed++
	g.keys[key] = true
	g.mu.Unlock()
	d, err := g.store.AllowN(r.Context(), key, 1, g.limit)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	if !d.Allowed {
		w.Header().Set("Retry-After", strconv.FormatInt(d.RetryAfterSeconds(), 10))
		w.WriteHeader(http.StatusTooManyRequests)
		return
	}
	io.WriteString(w, "ok")
}

// outputs returns the text of every file under dir, gzip files unpacked.
func outputs(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if strings.HasSuffix(path, ".gz") {
			zr, err := gzip.NewReader(bytes.NewReader(data))
			if err != nil {
				return err
			}
			if data, err = io.ReadAll(zr); err != nil {
				return err
			}
		}
		out[path] = string(data)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestRunRecordsNoSecret runs a scenario against an external API with a
// bearer token from the environment and real keys from a file, carried in
// the query string that transport errors quote, and finds neither in any
// output: history, run.json, summary.json, junit.xml, report.html, stdout
// and stderr.
func TestRunRecordsNoSecret(t *testing.T) {
	if testing.Short() {
		t.Skip("builds rlbench and runs a scenario end to end")
	}
	bin := buildRlbench(t)
	const token = "tok-e2e-6b0c1f9d4a"
	keys := []string{"sk_live_q7Rk2", "sk_live_+/=8Zp", "sk_live_M3x9w", "sk_live_P0o4L"}
	tgt, srv := newGCRATarget(t, token, func(r *http.Request) string { return r.URL.Query().Get("api_key") }, 7)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "keys.txt"), []byte("# real keys\n"+strings.Join(keys, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	scenario := `name: external-secrets
description: an external API that wants a bearer token and real keys in the query string
target:
  external: [` + srv.URL + `]
  routes:
    - path: /api/items
      headers: {Authorization: "Bearer ${RLBENCH_E2E_TOKEN}"}
      policies: ["gcra:10/1s,burst=10"]
identities:
  carry: query
  keys_file: keys.txt
traffic:
  - {kind: burst, requests: 20}
  - {kind: constant, rate: 40/1s, duration: 2s}
  - {kind: retry_after_probe, requests: 30}
checks:
  budget: {max_excess: 0}
  false_rejections: {max_rate: 0.05}
`
	path := filepath.Join(dir, "external.yaml")
	if err := os.WriteFile(path, []byte(scenario), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	code, stdout, stderr := runSplit(t, bin, []string{"RLBENCH_E2E_TOKEN=" + token}, "run", "--out", out, path)
	if code != 0 && code != 1 {
		t.Fatalf("exit %d, want a run (0 or 1):\n%s\n%s", code, stdout, stderr)
	}
	tgt.mu.Lock()
	authed, seen := tgt.authed, len(tgt.keys)
	tgt.mu.Unlock()
	if authed < 50 || seen != len(keys) {
		t.Fatalf("the target authorised %d requests from %d keys; want the token and all %d keys to reach it", authed, seen, len(keys))
	}
	files := outputs(t, out)
	for _, want := range []string{"summary.json", "run.json", "junit.xml", "report.html", "external-secrets/history.jsonl.gz"} {
		if _, ok := files[filepath.Join(out, want)]; !ok {
			t.Errorf("missing output %s", want)
		}
	}
	files["stdout"], files["stderr"] = stdout, stderr
	secrets := []string{token}
	for _, k := range keys {
		secrets = append(secrets, k, url.QueryEscape(k))
	}
	for name, text := range files {
		for _, s := range secrets {
			if strings.Contains(text, s) {
				t.Errorf("%s holds the secret %q", name, s)
			}
		}
	}
	history := files[filepath.Join(out, "external-secrets/history.jsonl.gz")]
	for _, want := range []string{`"key":"key#1"`, `"key":"key#4"`, `"identities_fresh":false`, "api_key=key%23"} {
		if !strings.Contains(history, want) {
			t.Errorf("the history lacks %s", want)
		}
	}
}

// TestRunIPv6PrefixKeying runs one scenario, each identity an IPv6 /64 whose
// requests come from ever new addresses, against two external APIs: one
// keying clients by /64 keeps the promise; one keying them by address gives
// every request a fresh budget, and the budget check must prove it (case
// C19).
func TestRunIPv6PrefixKeying(t *testing.T) {
	if testing.Short() {
		t.Skip("builds rlbench and runs a scenario end to end")
	}
	bin := buildRlbench(t)
	client := func(r *http.Request) netip.Addr {
		hops := strings.Split(r.Header.Get("X-Forwarded-For"), ",")
		a, _ := netip.ParseAddr(strings.TrimSpace(hops[len(hops)-1]))
		return a
	}
	perPrefix := func(r *http.Request) string { p, _ := client(r).Prefix(64); return p.String() }
	perAddress := func(r *http.Request) string { return client(r).String() }
	tests := []struct {
		name     string
		key      func(*http.Request) string
		wantCode int
	}{
		{"keyed by /64", perPrefix, 0},
		{"keyed by address", perAddress, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, srv := newGCRATarget(t, "", tt.key, 0)
			dir := t.TempDir()
			scenario := `name: ipv6-external
description: IPv6 clients that rotate addresses within their /64
target:
  external: [` + srv.URL + `]
  routes:
    - path: /api/items
      policies: ["gcra:10/1s,burst=10"]
identities:
  count: 3
  carry: client_ip
  ip_version: 6
  prefix: 64
traffic:
  - {kind: constant, rate: 60/1s, duration: 2s}
checks:
  budget: {max_excess: 0}
  false_rejections: {max_rate: 0.01}
`
			path := filepath.Join(dir, "ipv6.yaml")
			if err := os.WriteFile(path, []byte(scenario), 0o644); err != nil {
				t.Fatal(err)
			}
			out := filepath.Join(dir, "out")
			code, stdout, stderr := runSplit(t, bin, nil, "run", "--out", out, path)
			if code != tt.wantCode {
				t.Fatalf("exit %d, want %d:\n%s\n%s", code, tt.wantCode, stdout, stderr)
			}
			data, err := os.ReadFile(filepath.Join(out, "summary.json"))
			if err != nil {
				t.Fatal(err)
			}
			var summary struct {
				Scenarios []struct {
					Checks []checker.Result `json:"checks"`
				} `json:"scenarios"`
			}
			if err := json.Unmarshal(data, &summary); err != nil {
				t.Fatal(err)
			}
			for _, r := range summary.Scenarios[0].Checks {
				if r.Name != checker.CheckBudget {
					continue
				}
				if got, want := r.Verdict == checker.Pass, tt.wantCode == 0; got != want {
					t.Errorf("budget verdict %s (observed %v, bound %v); want pass = %v", r.Verdict, r.Observed, r.Bound, want)
				}
			}
		})
	}
}
