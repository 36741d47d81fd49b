package checker

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/rlbench/rlbench/harness/history"
)

// The record codec holds a partition's records (partition.go) in a compact
// binary form, in memory or in a temporary file: every field of
// history.Record, so that a partition's check reads exactly the records a
// pass over the whole history reads. One record is its 0-based position in
// the history, as the distance from the previous record of its partition,
// and then its fields, integers as varints (times as the distance from the
// previous time of the record), strings as a length and their bytes, and
// the instance, route, phase and error, which repeat, as an index into a
// table of strings the codec shares between partitions; last, the shard of
// a merged history's record, if any. It is about 40
// bytes a record where a record's JSON line is about 200.

// errCodec is the error of a record the codec cannot decode: a temporary
// file that changed under the check.
var errCodec = errors.New("corrupt partition record")

// maxStrings bounds the codec's table of repeated strings; beyond it
// strings are written in full.
const maxStrings = 1 << 16

// strtab is the codec's table of repeated strings. Encoding adds to it, from
// one goroutine; decoding reads it, from any number, once encoding ended.
type strtab struct {
	ids   map[string]uint64
	names []string
	// last is the last string of each shared field and its id: most
	// records repeat the previous record's.
	last [4]struct {
		s  string
		id uint64
	}
}

// headerIndexOf is the index of name in history.RateLimitHeaders, -1 if
// it is not there: a switch, which compares a name's length before its
// bytes, in place of a loop over the list (TestHeaderIndexOf holds the
// two to one answer).
func headerIndexOf(name string) int {
	switch name {
	case "retry-after":
		return 0
	case "ratelimit":
		return 1
	case "ratelimit-policy":
		return 2
	case "ratelimit-limit":
		return 3
	case "ratelimit-remaining":
		return 4
	case "ratelimit-reset":
		return 5
	case "x-ratelimit-limit":
		return 6
	case "x-ratelimit-remaining":
		return 7
	case "x-ratelimit-reset":
		return 8
	case "x-ratelimit-used":
		return 9
	}
	return -1
}

// appendRecord appends the encoding of r, at position seq in the history,
// to buf; prev is the position of the partition's previous record (-1 for
// none).
func (t *strtab) appendRecord(buf []byte, seq, prev int64, r *history.Record) []byte {
	buf = binary.AppendUvarint(buf, uint64(seq-prev))
	buf = binary.AppendUvarint(buf, r.ID)
	buf = appendString(buf, r.Key)
	buf = t.appendShared(buf, 0, r.Instance)
	buf = t.appendShared(buf, 1, r.Route)
	buf = t.appendShared(buf, 2, r.Phase)
	buf = t.appendShared(buf, 3, r.Error)
	buf = binary.AppendVarint(buf, r.Cost)
	// Differences wrap around on overflow and back on decoding.
	buf = binary.AppendVarint(buf, r.IntendedNs)
	buf = binary.AppendVarint(buf, r.SentNs-r.IntendedNs)
	buf = binary.AppendVarint(buf, r.ReceivedNs-r.SentNs)
	buf = binary.AppendVarint(buf, int64(r.Status))
	buf = append(buf, byte(r.Outcome))
	buf = binary.AppendVarint(buf, r.DecisionUs)
	buf = binary.AppendUvarint(buf, uint64(len(r.Headers)))
	// One pass over the map: a record holds a few fields, mostly
	// rate-limit fields, which a name look-up in the list would seek one
	// by one. The fields' order is the map's; decoding does not depend on
	// it.
	for name, v := range r.Headers {
		if i := headerIndexOf(name); i >= 0 {
			buf = appendString(append(buf, byte(i+1)), v)
		} else {
			buf = appendString(appendString(append(buf, 0), name), v)
		}
	}
	if r.Shard == nil {
		return append(buf, 0)
	}
	buf = binary.AppendVarint(append(buf, 1), int64(r.Shard.Index))
	return binary.AppendVarint(buf, int64(r.Shard.Count))
}

func appendString(buf []byte, s string) []byte {
	return append(binary.AppendUvarint(buf, uint64(len(s))), s...)
}

// appendShared appends s, of shared field f, as an index into t (0: s
// follows in full).
func (t *strtab) appendShared(buf []byte, f int, s string) []byte {
	if l := &t.last[f]; l.id > 0 && l.s == s {
		return binary.AppendUvarint(buf, l.id)
	}
	id, ok := t.ids[s]
	if !ok && len(t.names) < maxStrings {
		if t.ids == nil {
			t.ids = make(map[string]uint64)
		}
		id = uint64(len(t.names)) + 1
		t.ids[s] = id
		t.names = append(t.names, s)
		ok = true
	}
	if !ok {
		return appendString(append(buf, 0), s)
	}
	t.last[f].s, t.last[f].id = s, id
	return binary.AppendUvarint(buf, id)
}

// recordDecoder reads the records of one partition's encoding in order,
// from one or more blocks, none of which ends within a record.
type recordDecoder struct {
	t      *strtab
	buf    []byte   // the block under decoding
	rest   [][]byte // the blocks after it, none empty
	base   int      // bytes of the blocks before buf
	pos    int
	seq    int64 // position of the record last read
	next   int64 // position of the next record, -1 until looked up
	err    error
	keys   map[string]string // one copy of each key of the partition
	shards map[history.Shard]*history.Shard
}

// newRecordDecoder decodes the records of blocks, in order; a block holds
// whole records.
func newRecordDecoder(t *strtab, blocks ...[]byte) *recordDecoder {
	d := &recordDecoder{t: t, seq: -1, next: -1, keys: map[string]string{}}
	for _, b := range blocks {
		if len(b) > 0 {
			d.rest = append(d.rest, b)
		}
	}
	d.advance()
	return d
}

// advance moves on to the next block when the one under decoding is read.
func (d *recordDecoder) advance() {
	if d.pos < len(d.buf) || len(d.rest) == 0 || d.err != nil {
		return
	}
	d.base += len(d.buf)
	d.buf, d.rest, d.pos = d.rest[0], d.rest[1:], 0
}

// more reports whether a record is left.
func (d *recordDecoder) more() bool {
	d.advance()
	return d.err == nil && d.pos < len(d.buf)
}

// nextSeq returns the position of the next record without reading it.
func (d *recordDecoder) nextSeq() int64 {
	if d.next >= 0 {
		return d.next
	}
	d.advance()
	v, n := binary.Uvarint(d.buf[d.pos:])
	if n <= 0 {
		d.fail()
		return math.MaxInt64
	}
	d.next = d.seq + int64(v)
	return d.next
}

func (d *recordDecoder) fail() {
	if d.err == nil {
		d.err = fmt.Errorf("%w at byte %d", errCodec, d.base+d.pos)
	}
	d.pos, d.rest = len(d.buf), nil
}

func (d *recordDecoder) uvarint() uint64 {
	v, n := binary.Uvarint(d.buf[d.pos:])
	if n <= 0 {
		d.fail()
		return 0
	}
	d.pos += n
	return v
}

func (d *recordDecoder) varint() int64 {
	v, n := binary.Varint(d.buf[d.pos:])
	if n <= 0 {
		d.fail()
		return 0
	}
	d.pos += n
	return v
}

func (d *recordDecoder) bytes() []byte {
	n := d.uvarint()
	if n > uint64(len(d.buf)-d.pos) {
		d.fail()
		return nil
	}
	b := d.buf[d.pos : d.pos+int(n)]
	d.pos += int(n)
	return b
}

func (d *recordDecoder) shared() string {
	id := d.uvarint()
	switch {
	case id == 0:
		return string(d.bytes())
	case id > uint64(len(d.t.names)):
		d.fail()
		return ""
	}
	return d.t.names[id-1]
}

func (d *recordDecoder) key() string {
	b := d.bytes()
	if k, ok := d.keys[string(b)]; ok {
		return k
	}
	k := string(b)
	d.keys[k] = k
	return k
}

// read decodes the next record into r, reusing its Headers map: the
// codec's whole decoder, which loadTask follows for the fields the checks
// read.
func (d *recordDecoder) read(r *history.Record) error {
	headers := r.Headers
	clear(headers)
	d.advance()
	d.seq += int64(d.uvarint())
	d.next = -1
	*r = history.Record{ID: d.uvarint(), Key: d.key(), Instance: d.shared(), Route: d.shared(), Phase: d.shared(), Error: d.shared()}
	r.Cost = d.varint()
	r.IntendedNs = d.varint()
	r.SentNs = r.IntendedNs + d.varint()
	r.ReceivedNs = r.SentNs + d.varint()
	r.Status = int(d.varint())
	if d.pos < len(d.buf) {
		r.Outcome = history.Outcome(d.buf[d.pos])
		d.pos++
	} else {
		d.fail()
	}
	r.DecisionUs = d.varint()
	n := d.uvarint()
	if n > uint64(len(d.buf)-d.pos) {
		d.fail()
	}
	if n > 0 && d.err == nil {
		if headers == nil {
			headers = make(map[string]string, n)
		}
		for range n {
			var name string
			switch i := d.uvarintByte(); {
			case i == 0:
				name = string(d.bytes())
			case int(i) <= len(history.RateLimitHeaders):
				name = history.RateLimitHeaders[i-1]
			default:
				d.fail()
			}
			headers[name] = string(d.bytes())
		}
		r.Headers = headers
	} else {
		r.Headers = headers
	}
	if d.uvarintByte() == 1 {
		s := history.Shard{Index: int(d.varint()), Count: int(d.varint())}
		r.Shard = d.shards[s]
		if r.Shard == nil {
			if d.shards == nil {
				d.shards = map[history.Shard]*history.Shard{}
			}
			r.Shard = &s
			d.shards[s] = r.Shard
		}
	}
	return d.err
}

func (d *recordDecoder) uvarintByte() byte {
	if d.pos >= len(d.buf) {
		d.fail()
		return 0
	}
	b := d.buf[d.pos]
	d.pos++
	return b
}
