package peers

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/rlbench/rlbench/scenarios"
)

// HAProxyInstall is how to install the haproxy peer on Debian and Ubuntu.
const HAProxyInstall = "apt-get install haproxy"

// HAProxyEnv names the environment variable that, when set, is the haproxy
// executable to run instead of the one found on the PATH or in /usr/sbin.
const HAProxyEnv = "RLBENCH_HAPROXY"

// HAProxy keeps per key of a stick table storing http_req_rate(period) a
// frequency counter (freq_ctr.h): the count of the current period, which
// starts at the key's first request and rotates every period (reset when
// two periods passed without a request), and the count of the previous
// one. sc_http_req_rate reads prev·(period − elapsed)/period + curr,
// rounded down: the sliding window counter, its windows placed at the
// key's first request rather than the epoch. The configuration manual
// (2.6, §7.3.3 sc_http_req_rate) says it "includes every started request,
// valid or not": a request HAProxy denies counts too.

// HAProxyConfig is the configuration of one haproxy process for scenario
// sc, listening on listen: for each limited route a stick table keyed by
// the identity header storing http_req_rate(period), a track-sc0 of the
// route's requests and `http-request deny deny_status 429 if
// { sc_http_req_rate(0) gt N }` — the recipe of HAProxy's documentation
// and blog ("Four Examples of HAProxy Rate Limiting") — then
// `http-request return status 200`: HAProxy answers itself, no upstream.
func HAProxyConfig(sc *scenarios.Scenario, listen, prefix string) ([]byte, error) {
	var b, tables bytes.Buffer
	p := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	p("# Written by rlbench for scenario %s: HAProxy stick tables holding each route to its claimed policy.", sc.Name)
	p("global")
	p("    nbthread 2")
	p("    pidfile %s", filepath.Join(prefix, "haproxy.pid"))
	p("defaults")
	p("    mode http")
	p("    timeout connect 5s")
	p("    timeout client 30s")
	p("    timeout server 30s")
	p("    timeout http-keep-alive 30s")
	p("frontend fe")
	p("    bind %s", listen)
	header := sc.Identities.Header
	for i, rt := range sc.Target.Routes {
		if rt.Cost != 1 {
			return nil, fmt.Errorf("route %s: haproxy counts one request per request, not %d", rt.Path, rt.Cost)
		}
		if len(rt.Policies) > 1 {
			return nil, fmt.Errorf("route %s: one policy per route, not %d", rt.Path, len(rt.Policies))
		}
		if strings.ContainsAny(rt.Path, " \t\"'\\") {
			return nil, fmt.Errorf("route %s: haproxy's configuration takes a path without spaces or quotes", rt.Path)
		}
		method := rt.Method
		if method == "" {
			method = "GET"
		}
		cond := fmt.Sprintf("{ path %s } { method %s }", rt.Path, method)
		for _, l := range rt.Policies {
			if err := scenarios.PeerHAProxy.CheckPolicy(l); err != nil {
				return nil, fmt.Errorf("route %s: %w", rt.Path, err)
			}
			period := l.Period.Milliseconds()
			table := "st_route" + strconv.Itoa(i)
			p("    # %s", l.Spec())
			p("    http-request track-sc0 req.hdr(%s) table %s if %s", header, table, cond)
			p("    http-request deny deny_status 429 if %s { sc_http_req_rate(0) gt %d }", cond, int64(l.Rate))
			// An entry must outlive two periods: the previous one weighs in.
			fmt.Fprintf(&tables, "backend %s\n    stick-table type string len 256 size 1m expire %dms store http_req_rate(%dms)\n",
				table, 2*period+1000, period)
		}
		p("    http-request return status 200 content-type text/plain string ok if %s", cond)
	}
	p("    http-request return status 404 content-type text/plain string \"not found\"")
	b.Write(tables.Bytes())
	return b.Bytes(), nil
}

// haproxyPath finds the haproxy executable: $RLBENCH_HAPROXY, else haproxy
// on the PATH, else /usr/sbin/haproxy.
func haproxyPath() (string, error) {
	if v := os.Getenv(HAProxyEnv); v != "" {
		path, err := exec.LookPath(v)
		if err != nil {
			return "", &NotInstalledError{Peer: "haproxy", Install: HAProxyInstall, Err: fmt.Errorf("%s=%s: %w", HAProxyEnv, v, err)}
		}
		return filepath.Abs(path)
	}
	path, err := exec.LookPath("haproxy")
	if err == nil {
		return filepath.Abs(path)
	}
	if _, serr := os.Stat("/usr/sbin/haproxy"); serr == nil {
		return "/usr/sbin/haproxy", nil
	}
	return "", &NotInstalledError{Peer: "haproxy", Install: HAProxyInstall, Err: err}
}

// StartHAProxy starts sc.Target.Instances haproxy processes for scenario
// sc on loopback, each on its own port with its own stick tables
// (instances do not share a budget), with their files under dir. It
// returns a *NotInstalledError when haproxy is not installed, and for a
// process that does not start, an error with what haproxy wrote. Stop
// stops them; on error StartHAProxy has.
func StartHAProxy(ctx context.Context, sc *scenarios.Scenario, dir string) (*Procs, error) {
	bin, err := haproxyPath()
	if err != nil {
		return nil, err
	}
	if dir, err = absDir(dir); err != nil {
		return nil, fmt.Errorf("haproxy: %w", err)
	}
	h := &Procs{name: "haproxy"}
	for i := range max(sc.Target.Instances, 1) {
		name := "haproxy-" + strconv.Itoa(i+1)
		url, err := startHAProxy(ctx, h, bin, sc, filepath.Join(dir, name))
		if err != nil {
			h.Stop()
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		h.urls = append(h.urls, url)
	}
	return h, nil
}

func startHAProxy(ctx context.Context, h *Procs, bin string, sc *scenarios.Scenario, prefix string) (string, error) {
	if err := os.MkdirAll(prefix, 0o755); err != nil {
		return "", err
	}
	var lastErr error
	for range startAttempts {
		addr, err := freePort()
		if err != nil {
			return "", err
		}
		conf, err := HAProxyConfig(sc, addr, prefix)
		if err != nil {
			return "", err
		}
		confPath := filepath.Join(prefix, "haproxy.cfg")
		if err := os.WriteFile(confPath, conf, 0o644); err != nil {
			return "", err
		}
		// -db: foreground, no daemon; SIGTERM stops it at once.
		cmd := exec.Command(bin, "-db", "-f", confPath)
		output := &tailBuffer{}
		cmd.Stdout, cmd.Stderr = output, output
		cmd.WaitDelay = time.Second
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := cmd.Start(); err != nil {
			return "", fmt.Errorf("start %s: %w", bin, err)
		}
		exited := make(chan struct{})
		go func() { _ = cmd.Wait(); close(exited) }()
		if err := waitListening(ctx, addr, exited); err != nil {
			stopProcess(cmd, exited)
			lastErr = startError(fmt.Errorf("%s -db -f %s: %w", bin, confPath, err), output.String())
			if ctx.Err() != nil || !strings.Contains(lastErr.Error(), "Address already in use") {
				return "", lastErr
			}
			continue
		}
		h.procs = append(h.procs, cmd)
		h.exited = append(h.exited, exited)
		return "http://" + addr, nil
	}
	return "", lastErr
}
