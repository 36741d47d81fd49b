package checker

import (
	"bytes"
	"time"

	"github.com/rlbench/rlbench/harness/history"
)

// loadTask reads the records of a task straight from their encoding into a
// dataset: load's work, to the same dataset, without a history.Record and
// its map of headers between. narrow shrinks each request's [sent,
// received] to a reported decision time.
// ws lends it the memory of a previous task's dataset.
func loadTask(ts *taskSource, narrow narrowing, ws *workspace) (*dataset, error) {
	d := &dataset{header: ts.hdr, reqs: zeroed(&ws.reqs, ts.n)[:0], seq: zeroed(&ws.seq, ts.n)[:0]}
	var keys, routes, insts, policies interner
	policies.id("")
	start := d.header.Start
	// Local ids of the codec's shared strings, by their index in its table.
	shared := ts.strs.names
	routeOf := make([]int32, len(shared)+1)
	instOf := make([]int32, len(shared)+1)
	for i := range routeOf {
		routeOf[i], instOf[i] = -1, -1
	}
	refused := make([]int8, len(shared)+1) // 1: the error says the connection was refused, -1: it does not
	var values valueCache
	for len(ts.decs) > 0 {
		dec := ts.decs[0]
		dec.advance()
		dec.seq += int64(dec.uvarint())
		dec.next = -1
		seq := dec.seq
		q := request{id: dec.uvarint(), retryAfter: raNone, rlLimit: -1, rlRemain: -1, rlReset: -1}
		kb := dec.bytes()
		if ts.parts > 1 && partOf(kb, ts.parts) != ts.part {
			dec.skipRest() // another part's key
			if err := ts.pop(dec); err != nil {
				return nil, err
			}
			continue
		}
		key, ok := keys.ids[string(kb)]
		if !ok {
			key = keys.id(string(kb))
			d.rank = append(d.rank, uint64(seq))
		}
		q.key = key
		q.inst = dec.local(&insts, instOf)
		q.route = dec.local(&routes, routeOf)
		dec.skipShared() // the phase
		var isRefused bool
		switch id, inline := dec.sharedRaw(); {
		case inline != nil || id == 0:
			isRefused = bytes.Contains(inline, []byte("connection refused"))
		case int(id) < len(refused):
			if refused[id] == 0 {
				refused[id] = -1
				if bytes.Contains([]byte(shared[id-1]), []byte("connection refused")) {
					refused[id] = 1
				}
			}
			isRefused = refused[id] == 1
		}
		q.cost = max(dec.varint(), 1)
		intended := dec.varint()
		q.sent = intended + dec.varint()
		q.recv = q.sent + dec.varint()
		q.answered = q.recv
		status := int(dec.varint())
		q.status = int16(status)
		outcome := history.Outcome(dec.uvarintByte())
		if outcome == history.Admitted && status != 0 && history.OutcomeForStatus(status) != history.Admitted {
			outcome = history.Error // as outcomeOf
		}
		q.outcome = outcome
		decisionUs := dec.varint()
		if n := dec.uvarint(); n > 0 {
			var hs headerSet
			for range n {
				i := dec.uvarintByte()
				if i == 0 {
					dec.bytes() // a field the checks do not read
					dec.bytes()
					continue
				}
				v := dec.bytes()
				if int(i) > len(history.RateLimitHeaders) {
					dec.fail()
					break
				}
				hs.vals[i-1], hs.has = values.get(v), hs.has|1<<(i-1)
			}
			parseHeaders(&q, &hs, start.Add(time.Duration(q.recv)))
			if v, ok := hs.get(hPolicy); ok {
				q.policy = policies.id(v)
			}
		}
		if dec.uvarintByte() == 1 { // the shard, which the checks do not read
			dec.varint()
			dec.varint()
		}
		q.undelivered = status == 0 && isRefused
		narrow.apply(&q, decisionUs)
		if dec.err != nil {
			return nil, dec.err
		}
		d.reqs = append(d.reqs, q)
		d.seq = append(d.seq, seq)
		if err := ts.pop(dec); err != nil {
			return nil, err
		}
	}
	d.keys, d.routes, d.insts, d.policies = keys.names, routes.names, insts.names, policies.names
	return d, nil
}

// sharedRaw reads a shared string: its index in the table, or (index 0)
// the string itself.
func (d *recordDecoder) sharedRaw() (uint64, []byte) {
	id := d.uvarint()
	if id == 0 {
		return 0, d.bytes()
	}
	if id > uint64(len(d.t.names)) {
		d.fail()
		return 0, nil
	}
	return id, nil
}

func (d *recordDecoder) skipShared() { d.sharedRaw() }

// local reads a shared string and returns its id in in, looked up once per
// index of the table (ids, -1 for not yet).
func (d *recordDecoder) local(in *interner, ids []int32) uint32 {
	id, inline := d.sharedRaw()
	if id == 0 {
		return in.id(string(inline))
	}
	if ids[id] < 0 {
		ids[id] = int32(in.id(d.t.names[id-1]))
	}
	return uint32(ids[id])
}

// valueCache shares one string among equal header values, by a hash of
// their bytes: most repeat ("0", "1", a policy).
type valueCache [256]string

func (c *valueCache) get(b []byte) string {
	h := uint32(2166136261)
	for _, x := range b {
		h = (h ^ uint32(x)) * 16777619
	}
	slot := &c[h%uint32(len(c))]
	if *slot != string(b) {
		*slot = string(b)
	}
	return *slot
}

// pop moves on from the record dec, at the top of the heap, has just read:
// dec's error, if any.
func (ts *taskSource) pop(dec *recordDecoder) error {
	if !dec.more() {
		if dec.err != nil {
			return dec.err
		}
		last := len(ts.decs) - 1
		ts.decs[0] = ts.decs[last]
		ts.decs = ts.decs[:last]
	}
	ts.down(0)
	return nil
}

// skipRest reads the rest of a record whose key was just read, as read
// would, keeping nothing.
func (d *recordDecoder) skipRest() {
	for range 4 { // instance, route, phase, error
		d.sharedRaw()
	}
	for range 5 { // cost, intended, sent, received, status
		d.varint()
	}
	d.uvarintByte() // outcome
	d.varint()      // decision_us
	for n := d.uvarint(); n > 0 && d.err == nil; n-- {
		if d.uvarintByte() == 0 {
			d.bytes()
		}
		d.bytes()
	}
	if d.uvarintByte() == 1 { // shard
		d.varint()
		d.varint()
	}
}
