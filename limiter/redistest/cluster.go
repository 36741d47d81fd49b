//go:build unix

package redistest

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// clusterSlots is the number of hash slots of a Redis Cluster.
const clusterSlots = 16384

// DefaultClusterReadyTimeout bounds the wait for a new cluster to report
// cluster_state:ok on every node.
const DefaultClusterReadyTimeout = 30 * time.Second

// Cluster is a Redis Cluster of master-only redis-server processes on
// loopback ports, each owning an equal range of the 16384 hash slots. It is
// safe for concurrent use.
type Cluster struct {
	nodes []*Server
}

// StartCluster starts masters cluster-enabled servers, assigns each a
// contiguous slot range, joins them with CLUSTER MEET and returns once every
// node reports cluster_state:ok and knows every other node. masters must be
// at least 1 (3 is the smallest cluster Redis itself recommends). It needs
// Redis 7.0 or later (cluster-port, CLUSTER ADDSLOTSRANGE). On error every
// started node is stopped.
func StartCluster(ctx context.Context, masters int) (*Cluster, error) {
	if masters < 1 || masters > clusterSlots {
		return nil, fmt.Errorf("start cluster: %d masters: want between 1 and %d", masters, clusterSlots)
	}
	c := &Cluster{}
	fail := func(err error) (*Cluster, error) {
		c.Stop()
		return nil, fmt.Errorf("start cluster: %w", err)
	}
	for range masters {
		bus, err := FreePort()
		if err != nil {
			return fail(err)
		}
		s, err := Start(ctx, Options{clusterBusPort: bus})
		if err != nil {
			return fail(err)
		}
		c.nodes = append(c.nodes, s)
	}
	for i, s := range c.nodes {
		lo, hi := i*clusterSlots/masters, (i+1)*clusterSlots/masters-1
		if err := s.do(ctx, "CLUSTER", "ADDSLOTSRANGE", lo, hi); err != nil {
			return fail(fmt.Errorf("assign slots %d-%d to %s: %w", lo, hi, s.Addr(), err))
		}
	}
	for _, s := range c.nodes[1:] {
		if err := c.nodes[0].do(ctx, "CLUSTER", "MEET", "127.0.0.1", s.port, s.opts.clusterBusPort); err != nil {
			return fail(fmt.Errorf("meet %s: %w", s.Addr(), err))
		}
	}
	if err := c.WaitReady(ctx, DefaultClusterReadyTimeout); err != nil {
		return fail(err)
	}
	return c, nil
}

// WaitReady waits, at most timeout, until every node reports cluster_state:ok
// and knows all the cluster's nodes; use it after restarting a node.
func (c *Cluster) WaitReady(ctx context.Context, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	var last error
	for {
		if last = c.ready(ctx); last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("cluster not ready: %w (last: %v)", ctx.Err(), last)
		case <-tick.C:
		}
	}
}

// ready checks CLUSTER INFO on every node once.
func (c *Cluster) ready(ctx context.Context) error {
	for _, s := range c.nodes {
		info, err := s.info(ctx, "CLUSTER", "INFO")
		if err != nil {
			return fmt.Errorf("%s: %w", s.Addr(), err)
		}
		if !strings.Contains(info, "cluster_state:ok") {
			return fmt.Errorf("%s: cluster_state not ok", s.Addr())
		}
		if !strings.Contains(info, "cluster_known_nodes:"+strconv.Itoa(len(c.nodes))+"\r") {
			return fmt.Errorf("%s: not every node known yet", s.Addr())
		}
	}
	return nil
}

// Addrs are the nodes' addresses, for redis.ClusterOptions.Addrs.
func (c *Cluster) Addrs() []string {
	addrs := make([]string, len(c.nodes))
	for i, s := range c.nodes {
		addrs[i] = s.Addr()
	}
	return addrs
}

// Nodes are the cluster's servers, in slot order: node i owns the i-th range.
func (c *Cluster) Nodes() []*Server { return append([]*Server(nil), c.nodes...) }

// Stop stops every node. It is idempotent.
func (c *Cluster) Stop() error {
	var errs []error
	for _, s := range c.nodes {
		errs = append(errs, s.Stop())
	}
	return errors.Join(errs...)
}

// client returns a short-lived client bound to this one server.
func (s *Server) client() *redis.Client {
	return redis.NewClient(&redis.Options{
		Addr:            s.Addr(),
		DialTimeout:     2 * time.Second,
		ReadTimeout:     5 * time.Second,
		WriteTimeout:    5 * time.Second,
		MaxRetries:      -1,
		PoolSize:        1,
		DisableIdentity: true,
	})
}

// do runs one command on s and returns its error.
func (s *Server) do(ctx context.Context, args ...any) error {
	c := s.client()
	defer c.Close()
	return c.Do(ctx, args...).Err()
}

// info runs one command on s whose reply is a string.
func (s *Server) info(ctx context.Context, args ...any) (string, error) {
	c := s.client()
	defer c.Close()
	return c.Do(ctx, args...).Text()
}
