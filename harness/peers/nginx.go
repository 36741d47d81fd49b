package peers

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/rlbench/rlbench/limiter"
	"github.com/rlbench/rlbench/scenarios"
)

// NginxInstall is how to install the nginx peer on Debian and Ubuntu.
const NginxInstall = "apt-get install nginx (or nginx-light)"

// NGINX limit_req (ngx_http_limit_req_module.c, ngx_http_limit_req_lookup)
// keeps per key an excess in thousandths of a request and the millisecond
// of its last admission. A request at time now computes
//
//	excess' = max(0, excess − rate·(now − last) + 1000)
//
// (rate in thousandths per millisecond; a new key starts at excess' = 0) and
// is rejected when excess' > burst·1000, without changing the state;
// otherwise excess := excess'. With the level L = excess/1000 + 1 this is
// L' = max(0, L − rate·Δt) + 1 ≤ burst + 1: exactly GCRA with the same rate
// and a burst of burst+1 (ATM Forum TM 4.0 §4.4.2), on a millisecond clock.
// So `rate=10r/s burst=5 nodelay` admits 6 requests at once, not 5: the
// claim that describes it exactly is gcra:10/1s,burst=6. Without nodelay the
// same requests are admitted, each delayed by excess/rate until its slot:
// the leaky bucket as a queue, leaky_bucket:10/1s,burst=6. NGINX charges one
// unit per request, and a rate per minute is stored as rate·1000/60
// thousandths per second, rounded down, and drained in whole thousandths per
// lookup (both only ever admit less than the claim).

// NginxDirectives returns the limit_req_zone rate and the limit_req
// arguments that enforce l exactly: "10r/s" and "burst=5 nodelay" for
// gcra:10/1s,burst=6; leaky_bucket limits take no nodelay. It fails for a
// limit NGINX cannot express (scenarios.PeerNginx.CheckPolicy).
func NginxDirectives(l limiter.Limit) (rate, limitReq string, err error) {
	if err := scenarios.PeerNginx.CheckPolicy(l); err != nil {
		return "", "", err
	}
	if l.Capacity() < 1 {
		return "", "", fmt.Errorf("nginx admits at least one request at once; %s admits none", l.Spec())
	}
	unit := "r/s"
	if l.Period == time.Minute {
		unit = "r/m"
	}
	rate = strconv.FormatInt(int64(l.Rate), 10) + unit
	limitReq = "burst=" + strconv.FormatInt(l.Capacity()-1, 10)
	if l.Algorithm != limiter.LeakyBucket {
		limitReq += " nodelay"
	}
	return rate, limitReq, nil
}

// NginxConfig is the configuration of one nginx server for scenario sc:
// listening on listen, the scenario's routes limited per the identity
// header (limit_req_status 429; one zone per route) and proxied to the
// upstream at upstream, with every file under prefix. It runs two worker
// processes, so that requests of one key are decided concurrently on one
// shared zone.
//
// limit_req itself sends no Retry-After (rlbench's retry-after check fails
// every 429 of a bare limit_req). When every limited route allows at least
// one request per second, the 429 goes through error_page to a location
// that adds the constant Retry-After: 1, the usual NGINX recipe, and here an
// exact one: a rejected request of one unit is conforming again within one
// emission interval, at most 1 s, so 1 is never shorter than the ideal wait
// nor more than 1 s longer (RFC 9110 §10.2.3). A slower route's wait can be
// longer than 1 s and shorter than any constant minus 1 s, so none is added.
func NginxConfig(sc *scenarios.Scenario, listen, upstream, prefix string) ([]byte, error) {
	var b bytes.Buffer
	p := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	variable := "$http_" + strings.ReplaceAll(strings.ToLower(sc.Identities.Header), "-", "_")
	p("# Written by rlbench for scenario %s: NGINX limit_req holding each route to its claimed policy.", sc.Name)
	p("daemon off;")
	p("master_process on;")
	p("worker_processes 2;")
	p("worker_rlimit_nofile 32768;")
	p("pid %s;", filepath.Join(prefix, "nginx.pid"))
	p("error_log %s warn;", filepath.Join(prefix, "error.log"))
	p("events { worker_connections 16384; }")
	p("http {")
	p("    access_log off;")
	for _, t := range []string{"client_body", "proxy", "fastcgi", "uwsgi", "scgi"} {
		p("    %s_temp_path %s;", t, filepath.Join(prefix, "tmp", t))
	}
	p("    limit_req_status 429;")
	p("    upstream app { server %s; keepalive 64; }", upstream)
	var locations bytes.Buffer
	for i, rt := range sc.Target.Routes {
		fmt.Fprintf(&locations, "        location = %s {\n", rt.Path)
		if rt.Cost != 1 {
			return nil, fmt.Errorf("route %s: nginx charges one unit per request, not %d", rt.Path, rt.Cost)
		}
		if len(rt.Policies) > 1 {
			return nil, fmt.Errorf("route %s: one policy per route, not %d", rt.Path, len(rt.Policies))
		}
		for _, l := range rt.Policies {
			rate, args, err := NginxDirectives(l)
			if err != nil {
				return nil, fmt.Errorf("route %s: %w", rt.Path, err)
			}
			p("    # %s", l.Spec())
			p("    limit_req_zone %s zone=route%d:10m rate=%s;", variable, i, rate)
			fmt.Fprintf(&locations, "            limit_req zone=route%d %s;\n", i, args)
		}
		// limit_req acts in the preaccess phase, so the response must come
		// from the content phase (proxy_pass), never from a rewrite-phase
		// `return`, which would answer before any limit is checked.
		fmt.Fprintf(&locations, "            proxy_pass http://app;\n            proxy_http_version 1.1;\n            proxy_set_header Connection \"\";\n        }\n")
	}
	p("    server {")
	p("        listen %s;", listen)
	if retryAfterOne(sc) {
		p("        error_page 429 @rejected;")
		p("        location @rejected {")
		p("            add_header Retry-After 1 always;")
		p("            return 429 \"rate limit exceeded\\n\";")
		p("        }")
	}
	b.Write(locations.Bytes())
	p("    }")
	p("}")
	return b.Bytes(), nil
}

// retryAfterOne reports whether every limited route of sc allows at least
// one request per second, so that Retry-After: 1 is exact for every 429.
func retryAfterOne(sc *scenarios.Scenario) bool {
	for _, rt := range sc.Target.Routes {
		for _, l := range rt.Policies {
			if l.Rate < l.Period.Seconds() {
				return false
			}
		}
	}
	return true
}

// Nginx is a set of running nginx servers and their shared upstream.
type Nginx struct {
	procs    []*exec.Cmd
	exited   []chan struct{}
	urls     []string
	upstream *http.Server
}

// URLs are the servers' base URLs, "http://127.0.0.1:PORT".
func (n *Nginx) URLs() []string { return n.urls }

// Names are the servers' names as histories record them: nginx-1, nginx-2…
func (n *Nginx) Names() []string {
	names := make([]string, len(n.urls))
	for i := range names {
		names[i] = "nginx-" + strconv.Itoa(i+1)
	}
	return names
}

// NginxEnv names the environment variable that, when set, is the nginx
// executable to run instead of the one found on the PATH or in /usr/sbin.
const NginxEnv = "RLBENCH_NGINX"

// nginxPath finds the nginx executable: $RLBENCH_NGINX, else nginx on the
// PATH, else /usr/sbin/nginx, where Debian installs it and where a non-root
// PATH may not look.
func nginxPath() (string, error) {
	if v := os.Getenv(NginxEnv); v != "" {
		path, err := exec.LookPath(v)
		if err == nil {
			path, err = filepath.Abs(path)
		}
		if err != nil {
			return "", &NotInstalledError{Peer: "nginx", Install: NginxInstall, Err: fmt.Errorf("%s=%s: %w", NginxEnv, v, err)}
		}
		return path, nil
	}
	path, err := exec.LookPath("nginx")
	if err == nil {
		if abs, aerr := filepath.Abs(path); aerr == nil {
			return abs, nil
		}
	}
	if _, serr := os.Stat("/usr/sbin/nginx"); serr == nil {
		return "/usr/sbin/nginx", nil
	}
	return "", &NotInstalledError{Peer: "nginx", Install: NginxInstall, Err: err}
}

// StartNginx starts sc.Target.Instances nginx servers for scenario sc on
// loopback, each on its own port with its own limit_req zones (instances do
// not share a budget), with their files under dir, in front of one trivial
// upstream that answers 200 "ok". A relative dir is taken from the working
// directory; nginx is given absolute paths only. It returns a
// *NotInstalledError when nginx is not installed, and for a server that
// does not start, an error with what nginx wrote to stderr and error.log.
// Stop stops everything it started; on error, StartNginx has stopped it
// already.
func StartNginx(ctx context.Context, sc *scenarios.Scenario, dir string) (*Nginx, error) {
	bin, err := nginxPath()
	if err != nil {
		return nil, err
	}
	if dir, err = absDir(dir); err != nil {
		return nil, fmt.Errorf("nginx: %w", err)
	}
	upLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("nginx upstream: %w", err)
	}
	n := &Nginx{upstream: &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			_, _ = w.Write([]byte("ok\n"))
		}),
		ReadHeaderTimeout: 10 * time.Second,
	}}
	go func() { _ = n.upstream.Serve(upLn) }()
	for i := range max(sc.Target.Instances, 1) {
		url, err := n.start(ctx, bin, sc, filepath.Join(dir, "nginx-"+strconv.Itoa(i+1)), upLn.Addr().String())
		if err != nil {
			n.Stop()
			return nil, fmt.Errorf("nginx-%d: %w", i+1, err)
		}
		n.urls = append(n.urls, url)
	}
	return n, nil
}

// startAttempts bounds the tries at a free port another process took
// between its choice and nginx's bind.
const startAttempts = 3

func (n *Nginx) start(ctx context.Context, bin string, sc *scenarios.Scenario, prefix, upstream string) (string, error) {
	for _, sub := range []string{"tmp", "logs"} {
		if err := os.MkdirAll(filepath.Join(prefix, sub), 0o755); err != nil {
			return "", err
		}
	}
	var lastErr error
	for range startAttempts {
		addr, err := freePort()
		if err != nil {
			return "", err
		}
		conf, err := NginxConfig(sc, addr, upstream, prefix)
		if err != nil {
			return "", err
		}
		confPath := filepath.Join(prefix, "nginx.conf")
		if err := os.WriteFile(confPath, conf, 0o644); err != nil {
			return "", err
		}
		errorLog := filepath.Join(prefix, "error.log")
		_ = os.Remove(errorLog)
		cmd := exec.Command(bin, "-p", prefix+"/", "-c", confPath, "-e", errorLog)
		// NGINX writes what stops it before its error log is open (a
		// configuration it cannot read, a log it cannot create) to stderr.
		output := &tailBuffer{}
		cmd.Stdout, cmd.Stderr = output, output
		cmd.WaitDelay = time.Second // a worker left holding the pipe does not hold up Wait
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := cmd.Start(); err != nil {
			return "", fmt.Errorf("start %s: %w", bin, err)
		}
		exited := make(chan struct{})
		go func() { _ = cmd.Wait(); close(exited) }()
		if err := waitListening(ctx, addr, exited); err != nil {
			stopProcess(cmd, exited)
			lastErr = startError(fmt.Errorf("%s -p %s -c %s: %w", bin, prefix+"/", confPath, err), output.String(), errorLog)
			// Only a port that another process took between freePort and
			// nginx's bind is worth another try.
			if ctx.Err() != nil || !strings.Contains(lastErr.Error(), "Address already in use") {
				return "", lastErr
			}
			continue
		}
		n.procs = append(n.procs, cmd)
		n.exited = append(n.exited, exited)
		return "http://" + addr, nil
	}
	return "", lastErr
}

// startTimeout bounds the wait for nginx to listen.
const startTimeout = 10 * time.Second

// waitListening waits until addr accepts a connection, the process exits,
// ctx ends or startTimeout passes.
func waitListening(ctx context.Context, addr string, exited <-chan struct{}) error {
	deadline := time.NewTimer(startTimeout)
	defer deadline.Stop()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			c.Close()
			return nil
		}
		select {
		case <-exited:
			return errors.New("nginx exited before listening")
		case <-ctx.Done():
			return ctx.Err()
		case <-deadline.C:
			return fmt.Errorf("nginx not listening on %s after %v", addr, startTimeout)
		case <-tick.C:
		}
	}
}

// freePort returns a loopback address with a port free a moment ago.
func freePort() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// stopTimeout bounds nginx's fast shutdown before it is killed.
const stopTimeout = 5 * time.Second

// stopProcess asks nginx's master to stop (SIGTERM: fast shutdown, workers
// included) and kills its process group when it has not within stopTimeout.
func stopProcess(cmd *exec.Cmd, exited <-chan struct{}) {
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(stopTimeout):
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-exited
	}
}

// Stop stops the nginx servers and the upstream. It is safe to call twice.
func (n *Nginx) Stop() {
	for i, cmd := range n.procs {
		stopProcess(cmd, n.exited[i])
	}
	n.procs, n.exited = nil, nil
	_ = n.upstream.Close()
}
