package traffic

import (
	"context"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"

	"github.com/rlbench/rlbench/scenarios"
)

// sendSlot is what the transport learned about the request vegeta numbered
// seq: which planned item it carried and when it went out.
type sendSlot struct {
	ok       bool
	item     int
	sent     time.Time
	received time.Time // when the response headers arrived; zero on failure
}

// recordingTransport sits between vegeta's client and the shared transport.
// vegeta numbers each hit (X-Vegeta-Seq) and our targeter numbers each
// planned item (RequestIDHeader); a vegeta Result carries only the former,
// so the transport joins the two and notes the actual send time.
//
// slots[seq] is written by the worker goroutine that sends hit seq before
// vegeta hands its result over the results channel, and read after that
// channel receive, so the channel orders the two accesses.
type recordingTransport struct {
	base    http.RoundTripper
	firstID uint64
	slots   []sendSlot
}

func (t *recordingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	seq, err1 := strconv.ParseUint(req.Header.Get("X-Vegeta-Seq"), 10, 64)
	id, err2 := strconv.ParseUint(req.Header.Get(RequestIDHeader), 10, 64)
	if err1 != nil || err2 != nil || seq >= uint64(len(t.slots)) || id < t.firstID {
		return t.base.RoundTrip(req)
	}
	slot := &t.slots[seq]
	*slot = sendSlot{ok: true, item: int(id - t.firstID), sent: time.Now()}
	resp, err := t.base.RoundTrip(req)
	if err == nil {
		slot.received = time.Now()
	}
	return resp, err
}

// runVegeta runs one open-model phase with its own vegeta Attacker (an
// Attacker runs a single attack) paced by the phase's schedule sched
// narrowed to plan, the requests this run sends (Plan).
func (e *engine) runVegeta(ctx context.Context, pi int, ph scenarios.Phase, sched Schedule, plan []Planned) error {
	sched = ownSchedule(sched, plan)
	n := sched.N()
	items := planItems(plan)
	firstID := e.ids(n)
	e.coll.phaseMeta(pi, func(m *PhaseStats) {
		m.Planned, m.PlannedDuration, m.Began = n, sched.Duration(), time.Now()
	})
	if n == 0 {
		return nil
	}
	rt := &recordingTransport{base: e.transport, firstID: firstID, slots: make([]sendSlot, n)}
	client := &http.Client{Transport: rt, Timeout: e.cfg.Timeout}
	atk := vegeta.NewAttacker(
		vegeta.Client(client), // first: the options below must not replace it
		vegeta.Workers(e.cfg.Workers),
		vegeta.MaxWorkers(e.cfg.MaxWorkers),
		vegeta.MaxBody(0), // bodies are read and discarded, keeping connections alive
		vegeta.Redirects(vegeta.NoFollow),
	)
	var next atomic.Int64
	targeter := func(tgt *vegeta.Target) error {
		i := next.Add(1) - 1
		if i >= int64(n) {
			return vegeta.ErrNoTargets
		}
		tgt.Method, tgt.URL, tgt.Header, tgt.Body = e.target(items[i], firstID+uint64(i))
		return nil
	}
	pacer := &schedulePacer{sched: sched}
	results := atk.Attack(targeter, pacer, 0, ph.Name)

	stopped := make(chan struct{})
	defer close(stopped)
	go func() {
		select {
		case <-ctx.Done():
			atk.Stop()
		case <-stopped:
		}
	}()
	for vr := range results {
		e.coll.add(e.fromVegeta(pi, ph, items, firstID, rt.slots, pacer, sched, vr))
	}
	return ctx.Err()
}

// fromVegeta converts a vegeta result. Its Seq numbers the hits in the
// order workers took the pacer's ticks, so hit seq was due at
// sched.At(seq); two workers racing for adjacent ticks may swap their
// numbers, which misplaces an intended time by at most one interval.
func (e *engine) fromVegeta(pi int, ph scenarios.Phase, items []item, firstID uint64, slots []sendSlot, pacer *schedulePacer, sched Schedule, vr *vegeta.Result) *Result {
	var res *Result
	var slot sendSlot
	if vr.Seq < uint64(len(slots)) {
		slot = slots[vr.Seq]
	}
	if slot.ok {
		res = e.newResult(pi, ph, items[slot.item], firstID+uint64(slot.item))
		res.Sent = slot.sent
	} else {
		// The request never reached the transport (it could not be built):
		// an error result with an ID of its own, attributed to the plan
		// position of its sequence number.
		i := min(int(vr.Seq), len(items)-1)
		res = e.newResult(pi, ph, items[i], e.ids(1))
		res.Sent = vr.Timestamp
	}
	res.Intended = pacer.start().Add(sched.At(int(min(vr.Seq, uint64(sched.N()-1)))))
	res.Received = vr.Timestamp.Add(vr.Latency) // the body read, or the failure
	if !slot.received.IsZero() && vr.Code != 0 {
		res.Received = slot.received
	}
	if res.Received.Before(res.Sent) {
		res.Received = res.Sent
	}
	res.Status = int(vr.Code)
	res.Header = vr.Headers
	if vr.Code == 0 {
		res.Err = vr.Error
	}
	return res
}
