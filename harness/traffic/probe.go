package traffic

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/rlbench/rlbench/harness/history"
	"github.com/rlbench/rlbench/scenarios"
)

// runProbe checks Retry-After actively: one identity no other phase uses
// (the spare of the phase's first identity set, index Identities.Count
// without groups) sends up to ph.Requests requests back to back
// until one is rejected, waits exactly the Retry-After that rejection
// carried, from the moment it arrived, and retries once on the next
// instance. The retry must be admitted; the checker judges it from the
// results, marked with their ProbeRole. Its k-th request is plan[k]
// (Plan): shard 0 of a sharded run sends the probe, the others' plans
// are empty.
func (e *engine) runProbe(ctx context.Context, pi int, ph scenarios.Phase, plan []Planned) error {
	began := time.Now()
	e.coll.phaseMeta(pi, func(m *PhaseStats) { m.Began = began })
	if len(plan) == 0 {
		return nil
	}
	sent := 0
	defer func() { e.coll.phaseMeta(pi, func(m *PhaseStats) { m.Planned = sent }) }()

	send := func(role ProbeRole, at time.Time, waited time.Duration) *Result {
		it := plan[sent].item()
		res := e.newResult(pi, ph, it, e.ids(1))
		res.Probe, res.Waited, res.Intended = role, waited, at
		e.do(ctx, e.client, it, res)
		sent++
		e.coll.add(res)
		return res
	}
	for range ph.Requests {
		if err := ctx.Err(); err != nil {
			return err
		}
		res := send(ProbeSend, time.Now(), 0)
		if res.Status != http.StatusTooManyRequests {
			continue
		}
		wait, ok := RetryAfter(res.Header)
		e.coll.phaseMeta(pi, func(m *PhaseStats) { m.ProbeRejected, m.ProbeWait = true, wait })
		if !ok {
			return nil // a 429 without a usable Retry-After: the header check reports it
		}
		at := res.Received.Add(wait)
		if wait > MaxProbeWait {
			return fmt.Errorf("phase %s: Retry-After %v is longer than the probe waits (%v)", ph.Name, wait, MaxProbeWait)
		}
		t := time.NewTimer(time.Until(at))
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		}
		retry := send(ProbeRetry, at, time.Since(res.Received))
		admitted := history.OutcomeForStatus(retry.Status) == history.Admitted
		e.coll.phaseMeta(pi, func(m *PhaseStats) { m.ProbeRetried, m.ProbeAdmitted = true, admitted })
		return nil
	}
	return nil
}

// MaxProbeWait bounds the Retry-After a probe waits for before retrying;
// a scenario counts a probe at this length.
const MaxProbeWait = scenarios.MaxProbeWait
