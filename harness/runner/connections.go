//go:build unix

package runner

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rlbench/rlbench/harness/runrecord"
	"github.com/rlbench/rlbench/scenarios"
)

// Connection sampling: how often connected_clients is read, and the
// connections the harness itself holds to Redis: the sampler's one and the
// pool of the client that measured the clock offset (monitorPool).
const (
	connSampleInterval = 100 * time.Millisecond
	monitorPool        = 2
	monitorConns       = monitorPool + 1
)

// sampleConnections reports whether the run samples Redis's client
// connections: a drill that pauses or slows a Redis the run started,
// against sample API instances, whose pools bound what Redis may see.
func (r *Runner) sampleConnections(sc *scenarios.Scenario, out *Outcome) bool {
	if out.Redis.Provider == "" || out.Redis.Provider == string(scenarios.ProviderExternal) ||
		len(sc.Target.External) > 0 || sc.Target.Peer != "" || sc.Target.Store == scenarios.StoreMemory {
		return false
	}
	return slices.ContainsFunc(sc.Faults, func(f scenarios.Fault) bool {
		return f.Kind == scenarios.FaultRedisPause || f.Kind == scenarios.FaultRedisLatency
	})
}

// connSampler reads connected_clients from INFO clients every
// connSampleInterval over a connection of its own, straight to Redis.
type connSampler struct {
	cancel context.CancelFunc
	done   chan struct{}
	mu     sync.Mutex
	rec    runrecord.Connections
}

// startConnSampler starts sampling the Redis at url until Stop, times in ns
// since start; instances each hold at most pool connections, and the
// harness harness connections of its own (monitorConns, and the store
// probe's).
func startConnSampler(ctx context.Context, url string, start time.Time, instances, pool, harness int) *connSampler {
	ctx, cancel := context.WithCancel(ctx)
	s := &connSampler{cancel: cancel, done: make(chan struct{}), rec: runrecord.Connections{
		Interval: connSampleInterval, PoolSize: pool, Instances: instances, Monitor: harness,
	}}
	go s.run(ctx, url, start)
	return s
}

func (s *connSampler) run(ctx context.Context, url string, start time.Time) {
	defer close(s.done)
	opts, err := redis.ParseURL(url)
	if err != nil {
		s.fail(err)
		return
	}
	// One connection, kept open: a paused Redis answers it when resumed,
	// and the sample then tells what it saw at that moment.
	opts.PoolSize, opts.MinIdleConns, opts.MaxRetries, opts.DisableIdentity = 1, 1, -1, true
	opts.ReadTimeout, opts.ContextTimeoutEnabled = 30*time.Second, true
	c := redis.NewClient(opts)
	defer c.Close()
	tick := time.NewTicker(connSampleInterval)
	defer tick.Stop()
	for {
		info, err := c.Info(ctx, "clients").Result()
		at := time.Since(start).Nanoseconds()
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			s.fail(err)
			return
		}
		n, err := connectedClients(info)
		if err != nil {
			s.fail(err)
			return
		}
		s.mu.Lock()
		s.rec.Samples = append(s.rec.Samples, runrecord.ConnectionSample{AtNs: at, Clients: n})
		s.mu.Unlock()
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

func (s *connSampler) fail(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rec.Err = fmt.Sprintf("sampling connected_clients: %v", err)
}

// Stop ends the sampling and returns the samples.
func (s *connSampler) Stop() *runrecord.Connections {
	s.cancel()
	<-s.done
	s.mu.Lock()
	defer s.mu.Unlock()
	rec := s.rec
	return &rec
}

// connectedClients reads connected_clients from an INFO clients reply.
func connectedClients(info string) (int, error) {
	for line := range strings.SplitSeq(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "connected_clients:"); ok {
			n, err := strconv.Atoi(v)
			if err != nil {
				return 0, fmt.Errorf("connected_clients %q: %w", v, err)
			}
			return n, nil
		}
	}
	return 0, fmt.Errorf("no connected_clients in INFO clients")
}
