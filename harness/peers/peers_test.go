//go:build unix

package peers

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rlbench/rlbench/limiter"
	"github.com/rlbench/rlbench/limiter/redistest"
	"github.com/rlbench/rlbench/scenarios"
)

func mustLimit(t *testing.T, spec string) limiter.Limit {
	t.Helper()
	l, err := limiter.ParseLimit(spec)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func TestNginxDirectives(t *testing.T) {
	for _, tc := range []struct {
		spec, rate, limitReq, err string
	}{
		{spec: "gcra:10/1s,burst=6", rate: "10r/s", limitReq: "burst=5 nodelay"},
		{spec: "token_bucket:10/1s,burst=1", rate: "10r/s", limitReq: "burst=0 nodelay"},
		{spec: "leaky_bucket:10/1s,burst=6", rate: "10r/s", limitReq: "burst=5"},
		{spec: "gcra:30/1m,burst=5", rate: "30r/m", limitReq: "burst=4 nodelay"},
		{spec: "gcra:5/2s,burst=3", err: "whole rate per second or per minute"},
		{spec: "gcra:2.5/1s,burst=3", err: "whole rate per second or per minute"},
		{spec: "fixed_window:10/1s", err: "leaky bucket"},
	} {
		t.Run(tc.spec, func(t *testing.T) {
			rate, args, err := NginxDirectives(mustLimit(t, tc.spec))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want one containing %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if rate != tc.rate || args != tc.limitReq {
				t.Fatalf("NginxDirectives = %q, %q; want %q, %q", rate, args, tc.rate, tc.limitReq)
			}
		})
	}
}

func parseScenario(t *testing.T, yaml string) *scenarios.Scenario {
	t.Helper()
	sc, err := scenarios.Parse("test.yaml", []byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

const nginxScenario = `
name: nginx-test
description: a test of the generated NGINX configuration
target:
  peer: nginx
  instances: 1
  routes:
    - {path: /api/items, policies: ["%s"]}
    - {path: /api/free}
identities: {count: 2, header: X-Client-Key}
traffic:
  - {kind: burst, requests: 5}
`

func TestNginxConfig(t *testing.T) {
	for _, tc := range []struct {
		spec       string
		want       []string
		retryAfter bool
	}{
		{"gcra:10/1s,burst=6", []string{"limit_req_zone $http_x_client_key zone=route0:10m rate=10r/s;", "limit_req zone=route0 burst=5 nodelay;"}, true},
		{"leaky_bucket:1/1s,burst=3", []string{"rate=1r/s;", "limit_req zone=route0 burst=2;"}, true},
		{"gcra:30/1m,burst=2", []string{"rate=30r/m;", "limit_req zone=route0 burst=1 nodelay;"}, false},
	} {
		t.Run(tc.spec, func(t *testing.T) {
			sc := parseScenario(t, strings.Replace(nginxScenario, "%s", tc.spec, 1))
			conf, err := NginxConfig(sc, "127.0.0.1:1", "127.0.0.1:2", "/tmp/p")
			if err != nil {
				t.Fatal(err)
			}
			c := string(conf)
			for _, w := range append(tc.want, "limit_req_status 429;", "listen 127.0.0.1:1;", "server 127.0.0.1:2;", "location = /api/free {") {
				if !strings.Contains(c, w) {
					t.Errorf("config lacks %q:\n%s", w, c)
				}
			}
			if got := strings.Contains(c, "add_header Retry-After 1 always;"); got != tc.retryAfter {
				t.Errorf("Retry-After: 1 added = %v, want %v:\n%s", got, tc.retryAfter, c)
			}
			if n := strings.Count(c, "limit_req zone="); n != 1 {
				t.Errorf("%d limit_req directives, want 1 (the baseline route is not limited)", n)
			}
		})
	}
}

func get(t *testing.T, url, key string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if key != "" {
		req.Header.Set(APIKeyHeader, key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, resp.Header.Get("Retry-After")
}

// TestRedisRateHandler holds two handlers on one Redis (two instances) to
// redis_rate's GCRA: one budget per key and route across both, an honest
// Retry-After, and the statuses of calls that never reach the limiter. The
// rate of one per hour keeps the test free of timing.
func TestRedisRateHandler(t *testing.T) {
	srv := redistest.StartForTest(t)
	l := mustLimit(t, "gcra:1/1h,burst=3")
	routes := []RedisRateRoute{{Path: "/api/items", Limit: &l}, {Path: "/api/free"}}
	var urls []string
	for range 2 {
		rdb := redis.NewClient(&redis.Options{Addr: srv.Addr(), DisableIdentity: true})
		t.Cleanup(func() { rdb.Close() })
		h, err := RedisRateHandler(rdb, routes)
		if err != nil {
			t.Fatal(err)
		}
		ts := httptest.NewServer(h)
		t.Cleanup(ts.Close)
		urls = append(urls, ts.URL)
	}
	admitted := 0
	for i := range 6 {
		code, ra := get(t, urls[i%2]+"/api/items", "key-0000")
		switch code {
		case http.StatusOK:
			admitted++
		case http.StatusTooManyRequests:
			// The next unit conforms one emission interval (1 h) after the
			// first admission: within the hour, at least a second away.
			if s, err := strconv.Atoi(ra); err != nil || s < 3000 || s > 3600 {
				t.Errorf("request %d: Retry-After %q, want about 3600", i, ra)
			}
		default:
			t.Fatalf("request %d: status %d", i, code)
		}
	}
	if got, want := admitted, 3; got != want {
		t.Fatalf("admitted %d of 6 over two instances, want the burst %d", got, want)
	}
	if code, _ := get(t, urls[1]+"/api/items", "key-0001"); code != http.StatusOK {
		t.Errorf("another key: status %d, want 200", code)
	}
	for range 5 {
		if code, _ := get(t, urls[0]+"/api/free", "key-0000"); code != http.StatusOK {
			t.Fatalf("baseline route: status %d, want 200", code)
		}
	}
	for _, tc := range []struct {
		path, key string
		want      int
	}{{"/api/items", "", http.StatusUnauthorized}, {"/nowhere", "key-0000", http.StatusNotFound}} {
		if code, _ := get(t, urls[0]+tc.path, tc.key); code != tc.want {
			t.Errorf("GET %s with key %q: status %d, want %d", tc.path, tc.key, code, tc.want)
		}
	}
}

func TestRedisRateLimit(t *testing.T) {
	got, err := RedisRateLimit(mustLimit(t, "token_bucket:20/1s,burst=10"))
	if err != nil {
		t.Fatal(err)
	}
	if got.Rate != 20 || got.Burst != 10 || got.Period.Seconds() != 1 {
		t.Fatalf("RedisRateLimit = %v, want 20 req/s (burst 10)", got)
	}
	for _, spec := range []string{"fixed_window:10/1s", "gcra:0.5/1s,burst=1"} {
		if _, err := RedisRateLimit(mustLimit(t, spec)); err == nil {
			t.Errorf("RedisRateLimit(%s) succeeded; redis_rate cannot enforce it", spec)
		}
	}
}

func TestNginxNotInstalled(t *testing.T) {
	t.Setenv(NginxEnv, "/nonexistent/nginx")
	sc := parseScenario(t, strings.Replace(nginxScenario, "%s", "gcra:10/1s,burst=6", 1))
	_, err := StartNginx(context.Background(), sc, t.TempDir())
	var missing *NotInstalledError
	if !errors.As(err, &missing) || !errors.Is(err, ErrNotInstalled) {
		t.Fatalf("StartNginx = %v, want a *NotInstalledError", err)
	}
	if !strings.Contains(err.Error(), "apt-get install nginx") {
		t.Errorf("error %q does not say how to install nginx", err)
	}
}

// TestNginxSmoke starts a real nginx: rate=1r/m burst=2 nodelay admits
// burst+1 = 3 requests of a key at once, no more, and keeps keys apart. One
// request per minute drains nothing a test can wait for, so no timing
// decides the outcome.
func TestNginxSmoke(t *testing.T) {
	if _, err := nginxPath(); err != nil {
		t.Skipf("%v", err)
	}
	sc := parseScenario(t, strings.Replace(strings.Replace(nginxScenario, "%s", "gcra:1/1m,burst=3", 1), "header: X-Client-Key", "header: X-API-Key", 1))
	n, err := StartNginx(context.Background(), sc, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(n.Stop)
	if got := n.Names(); len(got) != 1 || got[0] != "nginx-1" {
		t.Fatalf("Names = %v, want [nginx-1]", got)
	}
	var codes []int
	for range 5 {
		code, _ := get(t, n.URLs()[0]+"/api/items", "key-0000")
		codes = append(codes, code)
	}
	want := []int{200, 200, 200, 429, 429}
	for i := range want {
		if codes[i] != want[i] {
			t.Fatalf("statuses %v, want %v (burst=2 admits 3 at once)", codes, want)
		}
	}
	if code, _ := get(t, n.URLs()[0]+"/api/items", "key-0001"); code != http.StatusOK {
		t.Errorf("another key: status %d, want 200", code)
	}
	for range 5 {
		if code, _ := get(t, n.URLs()[0]+"/api/free", "key-0000"); code != http.StatusOK {
			t.Fatalf("baseline route: status %d, want 200", code)
		}
	}
	n.Stop()
	if _, err := http.Get(n.URLs()[0] + "/api/free"); err == nil {
		t.Errorf("nginx still answers after Stop")
	}
}

const expressScenario = `
name: express-test
description: a test of the express peer
target:
  peer: express
  instances: 2
  routes:
    - {path: /api/items, policies: ["fixed_window:3/1h"]}
    - {path: /api/free}
identities: {count: 2}
traffic:
  - {kind: burst, requests: 5}
`

func TestExpressConfig(t *testing.T) {
	sc := parseScenario(t, expressScenario)
	got, err := ExpressConfig(sc, "redis://127.0.0.1:1/0")
	if err != nil {
		t.Fatal(err)
	}
	want := `{"port":0,"redisURL":"redis://127.0.0.1:1/0","header":"X-API-Key","routes":[{"method":"GET","path":"/api/items","limit":3,"windowMs":3600000},{"method":"GET","path":"/api/free"}]}`
	if string(got) != want {
		t.Fatalf("ExpressConfig =\n%s\nwant\n%s", got, want)
	}
}

func TestExpressNotInstalled(t *testing.T) {
	t.Setenv(ExpressEnv, t.TempDir())
	_, err := StartExpress(context.Background(), parseScenario(t, expressScenario), t.TempDir(), "redis://127.0.0.1:1/0")
	if !errors.Is(err, ErrNotInstalled) || !strings.Contains(err.Error(), "npm install --prefix") {
		t.Fatalf("StartExpress = %v, want a *NotInstalledError saying how to install the packages", err)
	}
}

// TestExpressSmoke starts two express peer processes on one Redis: a fixed
// window of 3 per hour admits 3 requests of a key over both, and a 429
// carries Retry-After and the draft-8 RateLimit fields. An hour-long
// window keeps timing out of the outcome.
func TestExpressSmoke(t *testing.T) {
	if _, _, err := expressNode(); err != nil {
		t.Skipf("%v", err)
	}
	srv := redistest.StartForTest(t)
	e, err := StartExpress(context.Background(), parseScenario(t, expressScenario), t.TempDir(), "redis://"+srv.Addr()+"/0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Stop)
	if got := len(e.URLs()); got != 2 {
		t.Fatalf("%d instances, want 2", got)
	}
	admitted := 0
	var lastRetryAfter string
	for i := range 6 {
		code, ra := get(t, e.URLs()[i%2]+"/api/items", "key-0000")
		switch code {
		case http.StatusOK:
			admitted++
		case http.StatusTooManyRequests:
			lastRetryAfter = ra
		default:
			t.Fatalf("request %d: status %d", i, code)
		}
	}
	if got, want := admitted, 3; got != want {
		t.Fatalf("admitted %d of 6 over two instances, want the limit %d", got, want)
	}
	if s, err := strconv.Atoi(lastRetryAfter); err != nil || s < 3000 || s > 3600 {
		t.Errorf("Retry-After %q, want about 3600", lastRetryAfter)
	}
	if code, _ := get(t, e.URLs()[1]+"/api/items", "key-0001"); code != http.StatusOK {
		t.Errorf("another key: status %d, want 200", code)
	}
	if code, _ := get(t, e.URLs()[0]+"/api/free", "key-0000"); code != http.StatusOK {
		t.Errorf("baseline route: status %d, want 200", code)
	}
	e.Stop()
	if _, err := http.Get(e.URLs()[0] + "/api/free"); err == nil {
		t.Errorf("express still answers after Stop")
	}
}

// TestNginxRelativeDir starts a real nginx with its files under a relative
// directory, as `rlbench run --out rlbench-out` gives it: NGINX resolves -c
// and -e against its -p prefix, so a relative prefix would double.
func TestNginxRelativeDir(t *testing.T) {
	if _, err := nginxPath(); err != nil {
		t.Skipf("%v", err)
	}
	wd := t.TempDir()
	t.Chdir(wd)
	sc := parseScenario(t, strings.Replace(strings.Replace(nginxScenario, "%s", "gcra:1/1m,burst=3", 1), "header: X-Client-Key", "header: X-API-Key", 1))
	n, err := StartNginx(context.Background(), sc, filepath.Join("rlbench-out", "peer-nginx"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(n.Stop)
	if code, _ := get(t, n.URLs()[0]+"/api/items", "key-0000"); code != http.StatusOK {
		t.Errorf("status %d, want 200", code)
	}
	conf, err := os.ReadFile(filepath.Join(wd, "rlbench-out", "peer-nginx", "nginx-1", "nginx.conf"))
	if err != nil {
		t.Fatalf("nginx.conf not where the relative directory points: %v", err)
	}
	if want := "error_log " + filepath.Join(wd, "rlbench-out", "peer-nginx", "nginx-1", "error.log"); !strings.Contains(string(conf), want) {
		t.Errorf("nginx.conf lacks the absolute %q:\n%s", want, conf)
	}
}

// writeScript writes an executable shell script named name in dir.
func writeScript(t *testing.T, dir, name, body string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"+body), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestNginxStartFailure runs an "nginx" that fails at start the way nginx
// does: one message on stderr, one in the error log given by -e. Both reach
// the error, and the paths it was given are absolute although the
// directory was relative.
func TestNginxStartFailure(t *testing.T) {
	bin := writeScript(t, t.TempDir(), "nginx", `
while [ $# -gt 0 ]; do
  case "$1" in
    -p) prefix=$2; shift ;;
    -c) conf=$2; shift ;;
    -e) log=$2; shift ;;
  esac
  shift
done
case "$prefix" in /*) ;; *) echo "nginx: [emerg] relative -p $prefix" >&2; exit 1 ;; esac
case "$conf" in /*) ;; *) echo "nginx: [emerg] relative -c $conf" >&2; exit 1 ;; esac
case "$log" in /*) ;; *) echo "nginx: [emerg] relative -e $log" >&2; exit 1 ;; esac
echo "nginx: [emerg] unknown directive \"limit_reqq\" in $conf:12" >&2
echo "[emerg] 12345#12345: bind() to 127.0.0.1:1 failed (13: Permission denied)" > "$log"
exit 1
`)
	t.Setenv(NginxEnv, bin)
	t.Chdir(t.TempDir())
	sc := parseScenario(t, strings.Replace(nginxScenario, "%s", "gcra:10/1s,burst=6", 1))
	_, err := StartNginx(context.Background(), sc, "rel")
	if err == nil {
		t.Fatal("StartNginx succeeded with an nginx that exits at once")
	}
	for _, want := range []string{"nginx-1:", "exited before listening", `unknown directive "limit_reqq"`, "bind() to 127.0.0.1:1 failed", "error.log:"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
	if strings.Contains(err.Error(), "relative") {
		t.Errorf("nginx was given a relative path:\n%v", err)
	}
}

// TestExpressStartFailure runs a "node" that fails at start as node does
// without its packages: its stderr, which goes to the instance's log, and
// its stdout reach the error.
func TestExpressStartFailure(t *testing.T) {
	bin := t.TempDir()
	writeScript(t, bin, "node", `
case "$1" in /*) ;; *) echo "relative script $1" >&2; exit 1 ;; esac
echo "starting"
echo "Error: Cannot find module 'express'" >&2
exit 1
`)
	t.Setenv("PATH", bin)
	modules := t.TempDir()
	for _, m := range expressModules {
		if err := os.MkdirAll(filepath.Join(modules, "node_modules", m), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(modules, "node_modules", m, "package.json"), []byte(`{"name":"`+m+`"}`), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv(ExpressEnv, modules)
	wd := t.TempDir()
	t.Chdir(wd)
	if err := os.Mkdir("rel", 0o755); err != nil {
		t.Fatal(err)
	}
	_, err := StartExpress(context.Background(), parseScenario(t, expressScenario), "rel", "redis://127.0.0.1:1/0")
	if err == nil {
		t.Fatal("StartExpress succeeded with a node that exits at once")
	}
	for _, want := range []string{"express-1:", "exited before listening", "Cannot find module 'express'", filepath.Join(wd, "rel", "express-1.log") + ":"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
	if strings.Contains(err.Error(), "relative script") {
		t.Errorf("node was given a relative script:\n%v", err)
	}
}

// TestClockResolution: every peer declares its clock's step.
func TestClockResolution(t *testing.T) {
	want := map[scenarios.Peer]time.Duration{
		scenarios.PeerRedisRate:           time.Microsecond,
		scenarios.PeerNginx:               time.Millisecond,
		scenarios.PeerExpress:             time.Millisecond,
		scenarios.PeerHAProxy:             time.Millisecond,
		scenarios.PeerFlaskLimiter:        time.Millisecond,
		scenarios.PeerRateLimiterFlexible: time.Millisecond,
		scenarios.PeerFastify:             time.Millisecond,
		scenarios.PeerUlule:               time.Millisecond,
		scenarios.PeerHTTPRate:            time.Microsecond,
		scenarios.PeerGoLimiter:           time.Microsecond,
	}
	for _, p := range scenarios.Peers {
		if got := ClockResolution(p); got != want[p] || got == 0 {
			t.Errorf("ClockResolution(%s) = %v, want %v", p, got, want[p])
		}
	}
	if got := ClockResolution("unknown"); got != 0 {
		t.Errorf("ClockResolution(unknown) = %v, want 0", got)
	}
}
