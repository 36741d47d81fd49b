// Package storeprobe watches a limiter's Redis throughout a run, so that a
// store that stalled beyond the store timeout outside the declared faults
// (a Redis starved of CPU on a loaded host) is recorded rather than taken
// for the limiter's fault.
//
// A Probe sends a tiny Lua script (EVALSHA of "return 1", which queues
// behind the limiter's own scripts as they do) over a connection of its
// own, one at a time, Interval apart, and stamps when each was sent and
// answered on the run's clock. Every stretch in which the store did not
// answer a probe within the store timeout becomes a stall, widened so that
// it surely covers the store's trouble: from the send of the last probe
// answered in time before it to the send of the first answered in time
// after it. The checker excuses the requests a stall overlaps
// (runrecord.FaultWindow.Observed).
package storeprobe

import (
	"cmp"
	"context"
	"fmt"
	"net"
	"slices"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rlbench/rlbench/harness/runrecord"
)

// DefaultInterval is the wait between the answer to one probe and the next
// probe: about 200 tiny scripts a second at the most, nothing beside the
// limiter's own traffic.
const DefaultInterval = 5 * time.Millisecond

// readTimeout bounds the wait for one probe's answer or connection. It
// outlasts any pause a scenario declares, so that a paused Redis holds the
// probe's one connection rather than leaving it for a new one it would
// count as a client once resumed; Stop cuts it short.
const readTimeout = 30 * time.Second

// script is the probe: a Lua script, so that Redis runs it as it runs the
// limiter's, EVALSHA falling back to EVAL on NOSCRIPT (a restarted Redis).
var script = redis.NewScript("return 1")

// Probe watches one Redis from Start until Stop. Its methods are safe for
// use by one goroutine; the probing runs on a goroutine of its own.
type Probe struct {
	cancel context.CancelFunc
	client *redis.Client
	done   chan struct{}

	// Written by the probing goroutine until done is closed.
	stalls []Stall
	probes int
}

// Start probes the Redis at url (a redis:// or rediss:// URL, as the
// limiter is given it) every interval (DefaultInterval when 0) until Stop,
// on the clock of a run that started at start: times are in ns since it.
// A probe not answered within timeout, the store timeout, is a stall.
// Errors: a url go-redis cannot parse, or a timeout that is not positive.
// It does not wait for the store. The probe's first contact (its dial and
// SCRIPT LOAD, at most a second) is not measured: a stall then goes
// unseen.
func Start(ctx context.Context, url string, start time.Time, timeout, interval time.Duration) (*Probe, error) {
	if timeout <= 0 {
		return nil, fmt.Errorf("store probe: store timeout %v is not positive", timeout)
	}
	if interval <= 0 {
		interval = DefaultInterval
	}
	opts, err := redis.ParseURL(url)
	if err != nil {
		return nil, fmt.Errorf("store probe: %w", err)
	}
	// One connection, no retries: a retried probe would hide the wait.
	opts.PoolSize, opts.MinIdleConns, opts.MaxRetries, opts.DisableIdentity = 1, 0, -1, true
	opts.DialTimeout, opts.ReadTimeout, opts.WriteTimeout = readTimeout, readTimeout, time.Second
	// A store that refuses connections (killed, restarting) holds the probe
	// in its dial, retried every interval, until it accepts again: a failed
	// dial would leave go-redis's pool failing every probe until its own
	// redial a second later, and log each outage.
	dial := redis.NewDialer(opts)
	opts.Dialer = func(ctx context.Context, network, addr string) (net.Conn, error) {
		for {
			c, err := dial(ctx, network, addr)
			if err == nil {
				return c, nil
			}
			select {
			case <-ctx.Done():
				return nil, err
			case <-time.After(interval):
			}
		}
	}
	ctx, cancel := context.WithCancel(ctx)
	p := &Probe{cancel: cancel, client: redis.NewClient(opts), done: make(chan struct{})}
	go p.run(ctx, start, timeout, interval)
	return p, nil
}

// warmUp bounds the probe's first contact with the store, unmeasured.
const warmUp = time.Second

func (p *Probe) run(ctx context.Context, start time.Time, timeout, interval time.Duration) {
	defer close(p.done)
	// The connection and the script's loading, unmeasured: they are the
	// probe's own first steps (a dial, NOSCRIPT and EVAL), not the store's
	// answer to a request.
	wctx, cancel := context.WithTimeout(ctx, warmUp)
	_ = script.Load(wctx, p.client).Err() // a store down now is seen by the probes
	cancel()
	since := func() int64 { return time.Since(start).Nanoseconds() }
	lastOK := int64(-1) // send of the last probe answered in time
	var open *Stall
	wait := time.NewTimer(0)
	defer wait.Stop()
	for {
		select {
		case <-ctx.Done():
			if open != nil {
				p.stalls = append(p.stalls, *open)
			}
			return
		case <-wait.C:
		}
		sent := since()
		err := script.Run(ctx, p.client, nil).Err()
		recv := since()
		if ctx.Err() != nil && err != nil {
			// Cut short by Stop: the store had not answered by now, a miss
			// when it has waited beyond the timeout already.
			if time.Duration(recv-sent) > timeout {
				open = open.miss(lastOK, sent, recv)
			}
			if open != nil {
				p.stalls = append(p.stalls, *open)
			}
			return
		}
		p.probes++
		if err == nil && time.Duration(recv-sent) <= timeout {
			if open != nil {
				open.ToNs = sent
				p.stalls = append(p.stalls, *open)
				open = nil
			}
			lastOK = sent
		} else {
			open = open.miss(lastOK, sent, recv)
		}
		wait.Reset(interval)
	}
}

// Stall is a stretch in which the store did not answer probes within the
// store timeout, in ns since the run's start: from the send of the last
// probe answered in time before it (or of its first miss, when none was)
// to the send of the first answered in time after it (or the last miss's
// end, when none was).
type Stall struct {
	FromNs, ToNs int64
	// Misses are the probes not answered in time, each [sent, received]
	// (received: answered, failed, or cut short by Stop).
	Misses [][2]int64
}

// miss adds a probe sent at sent and not answered in time by recv to s,
// opening a stall from lastOK (-1: none) when s is nil.
func (s *Stall) miss(lastOK, sent, recv int64) *Stall {
	if s == nil {
		if lastOK < 0 {
			lastOK = sent
		}
		s = &Stall{FromNs: lastOK}
	}
	s.ToNs = recv
	s.Misses = append(s.Misses, [2]int64{sent, recv})
	return s
}

// Stop ends the probing, waiting for the probe in flight (cut short by
// closing the connection), and returns the stalls in order and how many
// probes were answered or failed. Stop must be called once.
func (p *Probe) Stop() (stalls []Stall, probes int) {
	p.cancel()
	_ = p.client.Close() // its error is a connection the store dropped: nothing to report
	<-p.done
	return p.stalls, p.probes
}

// Outside returns, as observed windows (Kind runrecord.KindStoreStall,
// Observed and Unavailable set), the parts of stalls outside every window
// of declared that leaves the store unavailable to all instances, and
// only those parts that hold a miss that overlapped no such window: a
// probe blocked by a declared fault adds nothing, the declared window
// covers it, even where its stall was widened beyond the window's edges.
// The result is sorted, with overlapping or touching parts merged;
// declared windows with ToNs 0 last to the end of the run.
func Outside(stalls []Stall, declared []runrecord.FaultWindow) []runrecord.FaultWindow {
	var cuts [][2]int64
	for _, d := range declared {
		if d.Observed || !d.Unavailable || d.Instance != "" || d.FromNs == 0 {
			continue
		}
		to := d.ToNs
		if to == 0 {
			to = 1<<63 - 1
		}
		cuts = append(cuts, [2]int64{d.FromNs, to})
	}
	overlaps := func(a, b [2]int64) bool { return a[0] <= b[1] && b[0] <= a[1] }
	var out []runrecord.FaultWindow
	for _, s := range stalls {
		parts := [][2]int64{{s.FromNs, s.ToNs}}
		for _, c := range cuts {
			var next [][2]int64
			for _, p := range parts {
				if !overlaps(p, c) {
					next = append(next, p)
					continue
				}
				if p[0] < c[0] {
					next = append(next, [2]int64{p[0], c[0]})
				}
				if p[1] > c[1] {
					next = append(next, [2]int64{c[1], p[1]})
				}
			}
			parts = next
		}
		for _, p := range parts {
			held := slices.ContainsFunc(s.Misses, func(m [2]int64) bool {
				return m[0] >= p[0] && m[1] <= p[1] && !slices.ContainsFunc(cuts, func(c [2]int64) bool { return overlaps(m, c) })
			})
			if held {
				out = append(out, runrecord.FaultWindow{Kind: runrecord.KindStoreStall, FromNs: p[0], ToNs: p[1], Unavailable: true, Observed: true})
			}
		}
	}
	slices.SortFunc(out, func(a, b runrecord.FaultWindow) int { return cmp.Compare(a.FromNs, b.FromNs) })
	merged := out[:0]
	for _, w := range out {
		if n := len(merged); n > 0 && w.FromNs <= merged[n-1].ToNs {
			merged[n-1].ToNs = max(merged[n-1].ToNs, w.ToNs)
			continue
		}
		merged = append(merged, w)
	}
	return merged
}
