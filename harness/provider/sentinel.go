//go:build unix

package provider

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/rlbench/rlbench/limiter/redistest"
	"github.com/rlbench/rlbench/scenarios"
)

// Sentinel is a master, a replica and a Redis Sentinel watching them
// (redistest.SentinelGroup), each a redis-server process on a loopback
// port: the process provider's sentinel topology. Clients follow the master
// through the Sentinel (MasterName, SentinelAddrs); URL and Addr are the
// master's as started, the server a monitoring client reads. It is safe
// for concurrent use.
type Sentinel struct {
	g    *redistest.SentinelGroup
	stop func() bool

	mu      sync.Mutex
	old     string // the master paused by PauseMaster
	promote string // the master the Sentinel promoted

	once sync.Once
	err  error
}

// failoverPoll is how often the Sentinel and the old master are polled
// during a failover.
const failoverPoll = 10 * time.Millisecond

// StartSentinel starts a Sentinel group; replicaClock, when set, runs the
// replica under a fake clock that far from the host's. Errors wrap
// ErrUnavailable when redis-server (or, for replicaClock, libfaketime) is
// missing. The group stops when ctx ends or Close is called.
func StartSentinel(ctx context.Context, replicaClock *time.Duration) (*Sentinel, error) {
	g, err := redistest.StartSentinel(ctx, redistest.SentinelOptions{ReplicaClock: replicaClock})
	if err != nil {
		if errors.Is(err, redistest.ErrNotInstalled) || errors.Is(err, redistest.ErrNoFaketime) {
			return nil, fmt.Errorf("%w: %w", ErrUnavailable, err)
		}
		return nil, err
	}
	s := &Sentinel{g: g}
	s.stop = closeOnDone(ctx, func() { s.Close() })
	return s, nil
}

// URL implements Redis: the master as started.
func (s *Sentinel) URL() string { return s.g.Master().URL() }

// Addr implements Redis: the master as started.
func (s *Sentinel) Addr() string { return s.g.Master().Addr() }

// Provider implements Redis.
func (s *Sentinel) Provider() scenarios.Provider { return scenarios.ProviderProcess }

// MasterName is the name the Sentinel monitors the master under.
func (s *Sentinel) MasterName() string { return s.g.MasterName() }

// SentinelAddrs are the Sentinels' addresses.
func (s *Sentinel) SentinelAddrs() []string { return s.g.SentinelAddrs() }

// Group is the underlying group, for its servers and logs.
func (s *Sentinel) Group() *redistest.SentinelGroup { return s.g }

// Close stops the Sentinel and the servers. It is idempotent.
func (s *Sentinel) Close() error {
	s.once.Do(func() {
		s.stop()
		s.err = s.g.Stop()
	})
	return s.err
}

// PauseMaster stops the current master (SIGSTOP), so that the Sentinel
// finds it down and promotes the replica.
func (s *Sentinel) PauseMaster(ctx context.Context) error {
	addr, err := s.g.MasterAddr(ctx)
	if err != nil {
		return err
	}
	srv := s.g.ServerAt(addr)
	if srv == nil {
		return fmt.Errorf("the sentinel names %s, not a server of the group", addr)
	}
	s.mu.Lock()
	s.old, s.promote = addr, ""
	s.mu.Unlock()
	return srv.Pause()
}

// AwaitPromotion waits until the Sentinel names another master than the
// one PauseMaster paused, and returns the last time it still named the
// paused one: until then no client could have reached the new master.
func (s *Sentinel) AwaitPromotion(ctx context.Context) (lastOld time.Time, err error) {
	s.mu.Lock()
	old := s.old
	s.mu.Unlock()
	if old == "" {
		return time.Time{}, errors.New("await promotion: no master was paused")
	}
	addr, lastOld, err := s.g.AwaitMaster(ctx, old, failoverPoll)
	if err != nil {
		return lastOld, fmt.Errorf("no failover: %w", err)
	}
	s.mu.Lock()
	s.promote = addr
	s.mu.Unlock()
	return lastOld, nil
}

// RestoreOldMaster resumes the paused master and points it at the new one
// at once (as the Sentinel does some seconds later), returning once it
// reports itself a replica. Without a promotion it only resumes it.
func (s *Sentinel) RestoreOldMaster(ctx context.Context) error {
	s.mu.Lock()
	old, promoted := s.old, s.promote
	s.mu.Unlock()
	srv := s.g.ServerAt(old)
	if srv == nil {
		return errors.New("restore the old master: none was paused")
	}
	if err := srv.Resume(); err != nil {
		return fmt.Errorf("resume the old master: %w", err)
	}
	if promoted == "" {
		return nil
	}
	if err := redistest.Follow(ctx, srv, promoted); err != nil {
		return err
	}
	return redistest.AwaitRole(ctx, srv, "slave", failoverPoll)
}
