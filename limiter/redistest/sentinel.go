//go:build unix

package redistest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// DefaultMasterName is the name a Sentinel group's master is monitored under.
const DefaultMasterName = "mymaster"

// Sentinel timing: a master that does not answer for SentinelDownAfter is
// down, and a failover that has not completed in SentinelFailoverTimeout
// may be tried again. Short, so that a drill sees a failover within about a
// second.
const (
	SentinelDownAfter       = 500 * time.Millisecond
	SentinelFailoverTimeout = 3 * time.Second
)

// DefaultSentinelReadyTimeout bounds the wait for a new Sentinel group to
// have its replica in sync and its Sentinel watching both servers.
const DefaultSentinelReadyTimeout = 30 * time.Second

// SentinelOptions configures StartSentinel. The zero value starts a master,
// one replica and one Sentinel, without fake clocks.
type SentinelOptions struct {
	// MasterName is the name the Sentinel monitors the master under;
	// DefaultMasterName when empty.
	MasterName string
	// MasterClock and ReplicaClock, when set, run that server under a fake
	// clock (Options.FakeClock) starting at the given offset.
	MasterClock, ReplicaClock *time.Duration
}

// SentinelGroup is a Redis master, one replica of it and one Redis Sentinel
// (quorum 1) watching them, each a redis-server process on a loopback port:
// when the master stops answering for SentinelDownAfter, the Sentinel
// promotes the replica and points the old master, once back, at it. It is
// safe for concurrent use.
type SentinelGroup struct {
	name     string
	master   *Server // the servers as started: the roles change on failover
	replica  *Server
	sentinel *Server
}

// StartSentinel starts a Sentinel group and returns once the replica is in
// sync with the master and the Sentinel knows of the replica. On error
// every started process is stopped. Errors: Start's (ErrNotInstalled,
// ErrNoFaketime), or a group that did not come together in
// DefaultSentinelReadyTimeout.
func StartSentinel(ctx context.Context, opts SentinelOptions) (*SentinelGroup, error) {
	g := &SentinelGroup{name: opts.MasterName}
	if g.name == "" {
		g.name = DefaultMasterName
	}
	fail := func(err error) (*SentinelGroup, error) {
		g.Stop()
		return nil, fmt.Errorf("start sentinel group: %w", err)
	}
	withClock := func(o Options, d *time.Duration) Options {
		if d != nil {
			o.FakeClock, o.ClockOffset = true, *d
		}
		return o
	}
	var err error
	if g.master, err = Start(ctx, withClock(Options{}, opts.MasterClock)); err != nil {
		return fail(err)
	}
	if g.replica, err = Start(ctx, withClock(Options{Args: []string{"--replicaof", "127.0.0.1", strconv.Itoa(g.master.Port())}}, opts.ReplicaClock)); err != nil {
		return fail(err)
	}
	conf := fmt.Sprintf("sentinel monitor %[1]s 127.0.0.1 %[2]d 1\n"+
		"sentinel down-after-milliseconds %[1]s %[3]d\n"+
		"sentinel failover-timeout %[1]s %[4]d\n"+
		"sentinel parallel-syncs %[1]s 1\n",
		g.name, g.master.Port(), SentinelDownAfter.Milliseconds(), SentinelFailoverTimeout.Milliseconds())
	if g.sentinel, err = Start(ctx, Options{config: conf, sentinel: true}); err != nil {
		return fail(err)
	}
	rctx, cancel := context.WithTimeout(ctx, DefaultSentinelReadyTimeout)
	defer cancel()
	if err := g.waitReady(rctx); err != nil {
		return fail(err)
	}
	return g, nil
}

// waitReady polls until the replica reports its link to the master up and
// the Sentinel lists the replica.
func (g *SentinelGroup) waitReady(ctx context.Context) error {
	rc := g.replica.client()
	defer rc.Close()
	sc := g.sentinelClient()
	defer sc.Close()
	var last error
	for {
		info, err := rc.Info(ctx, "replication").Result()
		switch {
		case err != nil:
			last = err
		case !strings.Contains(info, "master_link_status:up"):
			last = errors.New("the replica's link to the master is not up")
		default:
			replicas, err := sc.Replicas(ctx, g.name).Result()
			switch {
			case err != nil:
				last = err
			case len(replicas) == 0:
				last = errors.New("the Sentinel lists no replica yet")
			default:
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("not ready: %w (%v)", ctx.Err(), last)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func (g *SentinelGroup) sentinelClient() *redis.SentinelClient {
	return redis.NewSentinelClient(&redis.Options{Addr: g.sentinel.Addr(), DisableIdentity: true})
}

// MasterName is the name the Sentinel monitors the master under.
func (g *SentinelGroup) MasterName() string { return g.name }

// SentinelAddrs are the Sentinels' addresses (one).
func (g *SentinelGroup) SentinelAddrs() []string { return []string{g.sentinel.Addr()} }

// Master and Replica are the servers as started: Master was the master
// then, and is a replica after a failover.
func (g *SentinelGroup) Master() *Server  { return g.master }
func (g *SentinelGroup) Replica() *Server { return g.replica }

// Sentinel is the Sentinel's process.
func (g *SentinelGroup) Sentinel() *Server { return g.sentinel }

// MasterAddr asks the Sentinel for the current master's address.
func (g *SentinelGroup) MasterAddr(ctx context.Context) (string, error) {
	sc := g.sentinelClient()
	defer sc.Close()
	hp, err := sc.GetMasterAddrByName(ctx, g.name).Result()
	if err != nil {
		return "", fmt.Errorf("ask the sentinel for the master: %w", err)
	}
	if len(hp) != 2 {
		return "", fmt.Errorf("ask the sentinel for the master: reply %q", hp)
	}
	return net.JoinHostPort(hp[0], hp[1]), nil
}

// AwaitMaster polls the Sentinel every poll until it names a master other
// than old, or ctx ends. It returns the new master's address and when the
// last poll naming old was sent: the new master was not named before then.
func (g *SentinelGroup) AwaitMaster(ctx context.Context, old string, poll time.Duration) (addr string, lastOld time.Time, err error) {
	sc := g.sentinelClient()
	defer sc.Close()
	lastOld = time.Now()
	for {
		sent := time.Now()
		hp, err := sc.GetMasterAddrByName(ctx, g.name).Result()
		if err == nil && len(hp) == 2 {
			if a := net.JoinHostPort(hp[0], hp[1]); a != old {
				return a, lastOld, nil
			}
			lastOld = sent
		}
		select {
		case <-ctx.Done():
			return "", lastOld, fmt.Errorf("the sentinel still names %s as master: %w", old, ctx.Err())
		case <-time.After(poll):
		}
	}
}

// AwaitRole polls s every poll until INFO replication reports role (master
// or slave), or ctx ends.
func AwaitRole(ctx context.Context, s *Server, role string, poll time.Duration) error {
	c := s.client()
	defer c.Close()
	for {
		info, err := c.Info(ctx, "replication").Result()
		if err == nil && strings.Contains(info, "role:"+role+"\r\n") {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s is not yet %s: %w", s.Addr(), role, ctx.Err())
		case <-time.After(poll):
		}
	}
}

// ServerAt returns the group's server listening on addr, or nil.
func (g *SentinelGroup) ServerAt(addr string) *Server {
	for _, s := range []*Server{g.master, g.replica} {
		if s.Addr() == addr {
			return s
		}
	}
	return nil
}

// Stop stops the Sentinel first, so it starts no failover while the
// servers stop, then the servers. It is idempotent.
func (g *SentinelGroup) Stop() error {
	var errs []error
	for _, s := range []*Server{g.sentinel, g.replica, g.master} {
		if s != nil {
			errs = append(errs, s.Stop())
		}
	}
	return errors.Join(errs...)
}

// Follow points s at the master at addr (REPLICAOF), as the Sentinel does to
// an old master once it is back after a failover; it does it at once, where
// the Sentinel waits some seconds first.
func Follow(ctx context.Context, s *Server, addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("follow %s: %w", addr, err)
	}
	if err := s.do(ctx, "REPLICAOF", host, port); err != nil {
		return fmt.Errorf("point %s at the master %s: %w", s.Addr(), addr, err)
	}
	return nil
}

// Failover asks the Sentinel for a failover while the master is healthy
// (SENTINEL FAILOVER): it demotes the master and promotes the replica, as
// an operator's switchover does.
func (g *SentinelGroup) Failover(ctx context.Context) error {
	sc := g.sentinelClient()
	defer sc.Close()
	if err := sc.Failover(ctx, g.name).Err(); err != nil {
		return fmt.Errorf("sentinel failover: %w", err)
	}
	return nil
}
