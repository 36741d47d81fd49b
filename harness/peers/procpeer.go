package peers

import (
	"context"
	"encoding/json"
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

// Target is a set of running peer instances, as Start returns them.
type Target interface {
	// URLs are the instances' base URLs, "http://127.0.0.1:PORT".
	URLs() []string
	// Names are the instances' names as histories record them.
	Names() []string
	// Stop stops every instance; it is safe to call twice.
	Stop()
}

// Start starts the peer of sc on loopback, its state under dir, on the
// Redis at redisURL when the peer keeps its state there: every peer but
// redis_rate, which runs as `rlbench serve` instances. It returns a
// *NotInstalledError when the peer is not installed.
func Start(ctx context.Context, sc *scenarios.Scenario, dir, redisURL string) (Target, error) {
	switch sc.Target.Peer {
	case scenarios.PeerNginx:
		return StartNginx(ctx, sc, dir)
	case scenarios.PeerExpress:
		return StartExpress(ctx, sc, dir, redisURL)
	case scenarios.PeerHAProxy:
		return StartHAProxy(ctx, sc, dir)
	case scenarios.PeerFlaskLimiter:
		return StartFlaskLimiter(ctx, sc, dir, redisURL)
	case scenarios.PeerRateLimiterFlexible, scenarios.PeerFastify:
		return StartNode(ctx, sc, dir, redisURL)
	case scenarios.PeerHTTPRate, scenarios.PeerUlule, scenarios.PeerGoLimiter:
		return StartGoPeer(ctx, sc, dir, redisURL)
	}
	return nil, fmt.Errorf("peer %q is not started by package peers", sc.Target.Peer)
}

// ProcConfig is the JSON configuration every process peer (Flask-Limiter,
// the Node.js peers, rlbench-gopeers) reads from its environment: where to
// listen, its Redis, the header that carries the key, the failure mode to
// configure and its routes.
type ProcConfig struct {
	// Peer is the scenario's target.peer.
	Peer string `json:"peer"`
	// Port is the loopback port to listen on; 0 picks a free one.
	Port int `json:"port"`
	// RedisURL is the scenario's Redis, empty for a peer that keeps its
	// state in memory.
	RedisURL string `json:"redisURL,omitempty"`
	// Header carries the identity requests are keyed by.
	Header string `json:"header"`
	// FailureMode is the scenario's target.failure_mode (open, closed,
	// fallback), which the peer maps to its documented option.
	FailureMode string `json:"failureMode,omitempty"`
	// StoreTimeoutMs is the Redis client's command timeout, in ms; 0 is
	// the client's default.
	StoreTimeoutMs int64 `json:"storeTimeoutMs,omitempty"`
	// Routes are the scenario's routes.
	Routes []ProcRoute `json:"routes"`
}

// ProcRoute is one route of a ProcConfig; Limit 0 is an unlimited route.
type ProcRoute struct {
	Method    string `json:"method"`
	Path      string `json:"path"`
	Algorithm string `json:"algorithm,omitempty"`
	Limit     int64  `json:"limit,omitempty"`
	WindowMs  int64  `json:"windowMs,omitempty"`
}

// NewProcConfig is the ProcConfig of sc for a peer on the Redis at
// redisURL. It fails for a route the peer cannot hold to its policy
// (scenarios.Peer.CheckPolicy), a cost other than 1 or more than one
// policy per route.
func NewProcConfig(sc *scenarios.Scenario, redisURL string) (ProcConfig, error) {
	cfg := ProcConfig{
		Peer:           string(sc.Target.Peer),
		Header:         sc.Identities.Header,
		FailureMode:    string(sc.Target.FailureMode),
		StoreTimeoutMs: sc.Target.StoreTimeout.Milliseconds(),
	}
	if sc.Target.Peer.UsesRedis() {
		cfg.RedisURL = redisURL
	}
	for _, rt := range sc.Target.Routes {
		pr := ProcRoute{Method: rt.Method, Path: rt.Path}
		if pr.Method == "" {
			pr.Method = "GET"
		}
		if rt.Cost != 1 {
			return ProcConfig{}, fmt.Errorf("route %s: %s charges one unit per request, not %d", rt.Path, sc.Target.Peer, rt.Cost)
		}
		if len(rt.Policies) > 1 {
			return ProcConfig{}, fmt.Errorf("route %s: one policy per route, not %d", rt.Path, len(rt.Policies))
		}
		for _, l := range rt.Policies {
			if err := sc.Target.Peer.CheckPolicy(l); err != nil {
				return ProcConfig{}, fmt.Errorf("route %s: %w", rt.Path, err)
			}
			pr.Algorithm, pr.Limit, pr.WindowMs = string(l.Algorithm), int64(l.Rate), l.Period.Milliseconds()
		}
		cfg.Routes = append(cfg.Routes, pr)
	}
	return cfg, nil
}

// procSpec is how to run one process peer.
type procSpec struct {
	// name prefixes the instances' names: name-1, name-2…
	name string
	// args are the executable and its arguments.
	args []string
	// env is added to the environment.
	env []string
	// config is passed as JSON in RLBENCH_PEER_CONFIG.
	config ProcConfig
}

// Procs is a set of running process peer instances, each printing
// "listening on HOST:PORT" on its stdout once it serves.
type Procs struct {
	name   string
	procs  []*exec.Cmd
	exited []chan struct{}
	urls   []string
}

// URLs are the instances' base URLs, "http://127.0.0.1:PORT".
func (p *Procs) URLs() []string { return p.urls }

// Names are the instances' names: NAME-1, NAME-2…
func (p *Procs) Names() []string {
	names := make([]string, len(p.urls))
	for i := range names {
		names[i] = p.name + "-" + strconv.Itoa(i+1)
	}
	return names
}

// Stop stops the instances (SIGTERM, then SIGKILL of the process group
// after stopTimeout). It is safe to call twice.
func (p *Procs) Stop() {
	for i, cmd := range p.procs {
		stopProcess(cmd, p.exited[i])
	}
	p.procs, p.exited = nil, nil
}

// startProcs starts n instances of spec, each logging its stderr to
// dir/NAME-i.log. On error it has stopped those it started.
func startProcs(ctx context.Context, spec procSpec, n int, dir string) (*Procs, error) {
	conf, err := json.Marshal(spec.config)
	if err != nil {
		return nil, err
	}
	p := &Procs{name: spec.name}
	for i := range max(n, 1) {
		name := spec.name + "-" + strconv.Itoa(i+1)
		url, err := p.start(ctx, spec, conf, filepath.Join(dir, name+".log"))
		if err != nil {
			p.Stop()
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		p.urls = append(p.urls, url)
	}
	return p, nil
}

func (p *Procs) start(ctx context.Context, spec procSpec, conf []byte, logPath string) (string, error) {
	logFile, err := os.Create(logPath)
	if err != nil {
		return "", err
	}
	defer logFile.Close() // the child holds its own descriptor
	cmd := exec.Command(spec.args[0], spec.args[1:]...)
	cmd.Env = append(append(os.Environ(), spec.env...), "RLBENCH_PEER_CONFIG="+string(conf))
	cmd.Stderr = logFile
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return "", err
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.WaitDelay = time.Second
	if err := cmd.Start(); err != nil {
		return "", fmt.Errorf("start %s: %w", spec.args[0], err)
	}
	addr, exited, output, err := awaitListening(ctx, cmd, stdout)
	if err != nil {
		return "", startError(fmt.Errorf("%s: %w", strings.Join(spec.args, " "), err), output, logPath)
	}
	p.procs = append(p.procs, cmd)
	p.exited = append(p.exited, exited)
	return "http://" + addr, nil
}
