// Package faults injects the failures a rate limiter's shared store meets in
// production — latency, dropped and reset connections, a cut link — through
// an embedded TCP proxy (Shopify's toxiproxy, as a library) placed between
// the limiter (the sample API instances, or an external target pointed at
// the proxy's address) and Redis; kills and pauses the Redis process
// rlbench runs; runs the user's own inject and heal commands for the faults
// it cannot inject itself; and schedules every fault of a drill.
package faults

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/rlbench/rlbench/scenarios"
)

// Proxy is a TCP proxy in front of one upstream (a Redis address). The
// limiter connects to Addr instead of the upstream, so the harness can
// degrade its link to Redis without touching Redis itself. The proxy
// carries bytes and nothing more: AUTH, SELECT and TLS pass through it
// end to end. It is safe for concurrent use.
type Proxy struct {
	mu       sync.Mutex
	proxy    *toxiproxy.Proxy
	names    []string
	accepted atomic.Int64
}

// StartProxy starts a proxy listening on listen ("host:port"; empty means a
// free loopback port) and forwarding to upstream ("host:port"). Errors:
// the listen address cannot be bound (in use, not this machine's).
func StartProxy(listen, upstream string) (*Proxy, error) {
	if listen == "" {
		listen = "127.0.0.1:0"
	}
	out := &Proxy{}
	// toxiproxy reports each connection it accepts in its log, and
	// nowhere else: count them there.
	logger := zerolog.New(io.Discard).Level(zerolog.InfoLevel).Hook(zerolog.HookFunc(func(_ *zerolog.Event, _ zerolog.Level, msg string) {
		if msg == acceptedMsg {
			out.accepted.Add(1)
		}
	}))
	server := toxiproxy.NewServer(toxiproxy.NewMetricsContainer(prometheus.NewRegistry()), logger)
	out.proxy = toxiproxy.NewProxy(server, "redis", listen, upstream)
	if err := out.proxy.Start(); err != nil {
		return nil, fmt.Errorf("start the Redis proxy on %s (to %s): %w", listen, upstream, err)
	}
	return out, nil
}

// acceptedMsg is the message toxiproxy logs for each connection it accepts.
const acceptedMsg = "Accepted client"

// Accepted is the number of connections the proxy has accepted: 0 means
// no limiter uses it, so its faults act on nothing.
func (p *Proxy) Accepted() int64 { return p.accepted.Load() }

// URLThrough returns the Redis URL rawURL (redis:// or rediss://) with its
// address replaced by addr, the proxy's, and every other part kept: user,
// password, database, TLS and query options. A TLS client then checks the
// server's certificate against addr's host (add skip_verify=true, or a
// certificate that names it). The error names the URL with its password
// redacted.
func URLThrough(rawURL, addr string) (string, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return "", fmt.Errorf("redis URL %s does not parse", scenarios.RedactURL(rawURL))
	}
	if u.Scheme != "redis" && u.Scheme != "rediss" {
		return "", fmt.Errorf("redis URL %s: the proxy carries TCP; want redis:// or rediss://", u.Redacted())
	}
	u.Host = addr
	return u.String(), nil
}

// Addr is the proxy's listening address, "HOST:PORT".
func (p *Proxy) Addr() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.proxy.Listen
}

// AddLatency delays every reply from the upstream by latency ± jitter.
func (p *Proxy) AddLatency(latency, jitter time.Duration) error {
	return p.add("latency", "downstream", map[string]any{"latency": latency.Milliseconds(), "jitter": jitter.Milliseconds()})
}

// Blackhole lets connections open but carries no data either way, as a
// network partition or a dropped route does: requests hang until their
// client gives up.
func (p *Proxy) Blackhole() error {
	if err := p.add("timeout", "upstream", map[string]any{"timeout": 0}); err != nil {
		return err
	}
	return p.add("timeout", "downstream", map[string]any{"timeout": 0})
}

// ResetConnections answers every new request with a TCP reset (RST).
func (p *Proxy) ResetConnections() error {
	return p.add("reset_peer", "upstream", map[string]any{"timeout": 0})
}

// Disconnect closes the listener and every open connection: dials are
// refused until Reconnect.
func (p *Proxy) Disconnect() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.proxy.Stop()
}

// Reconnect listens again on the same address after Disconnect.
func (p *Proxy) Reconnect() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.proxy.Enabled {
		return nil
	}
	if err := p.proxy.Start(); err != nil {
		return fmt.Errorf("restart proxy on %s: %w", p.proxy.Listen, err)
	}
	return nil
}

// Clear removes every toxic: the link is healthy again.
func (p *Proxy) Clear() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.proxy.Toxics.ResetToxics(context.Background())
	p.names = nil
}

// Close stops the proxy for good.
func (p *Proxy) Close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.proxy.Stop()
}

func (p *Proxy) add(kind, stream string, attrs map[string]any) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	name := fmt.Sprintf("%s_%s_%d", kind, stream, len(p.names))
	body, err := json.Marshal(map[string]any{"name": name, "type": kind, "stream": stream, "toxicity": 1.0, "attributes": attrs})
	if err != nil {
		return err
	}
	if _, err := p.proxy.Toxics.AddToxicJson(strings.NewReader(string(body))); err != nil {
		return fmt.Errorf("add %s toxic: %w", kind, err)
	}
	p.names = append(p.names, name)
	return nil
}
