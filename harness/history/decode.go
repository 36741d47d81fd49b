package history

import (
	"encoding/binary"
	"math"
)

// decodeRecord is a fast path for one record line as this package's Writer
// writes it: a flat object of the documented fields, strings without escape
// sequences, integers only. It reports false for anything else (an unknown
// or differently cased field, an escape, a float, null, a syntax error),
// and the caller then decodes the line with encoding/json, which stays the
// definition of the format. rec must be zeroed except for its Headers map.
func (r *Reader) decodeRecord(line []byte, rec *Record) bool {
	d := decoder{buf: line, r: r}
	d.ws()
	if !d.byte('{') {
		return false
	}
	d.ws()
	if d.peek() == '}' {
		d.pos++
		return d.end()
	}
	for {
		d.ws()
		name, ok := d.str()
		if !ok {
			return false
		}
		d.ws()
		if !d.byte(':') {
			return false
		}
		d.ws()
		switch string(name) {
		case "id":
			v, ok := d.uint()
			if !ok {
				return false
			}
			rec.ID = v
		case "key":
			rec.Key, ok = d.intern()
		case "instance":
			rec.Instance, ok = d.intern()
		case "route":
			rec.Route, ok = d.intern()
		case "phase":
			rec.Phase, ok = d.intern()
		case "error":
			var b []byte
			b, ok = d.str()
			rec.Error = string(b)
		case "outcome":
			var b []byte
			if b, ok = d.str(); ok {
				ok = rec.Outcome.UnmarshalText(b) == nil
			}
		case "cost":
			rec.Cost, ok = d.int()
		case "intended_ns":
			rec.IntendedNs, ok = d.int()
		case "sent_ns":
			rec.SentNs, ok = d.int()
		case "received_ns":
			rec.ReceivedNs, ok = d.int()
		case "decision_us":
			rec.DecisionUs, ok = d.int()
		case "status":
			var v int64
			v, ok = d.int()
			rec.Status = int(v)
		case "headers":
			ok = d.headers(rec)
		case "shard":
			ok = d.shard(rec)
		default:
			return false
		}
		if !ok {
			return false
		}
		d.ws()
		switch d.next() {
		case ',':
		case '}':
			return d.end()
		default:
			return false
		}
	}
}

// shortHash is a hash of b for the Reader's cache of recent strings, quick
// on the short strings of a history (keys, instances, header values): a
// word or two of b's bytes, multiplied, every bit of the result
// depending on every byte read.
func shortHash(b []byte) uint32 {
	const k = 0x9e3779b97f4a7c15
	h := uint64(len(b)) * k
	mix := func(w uint64) { h = (h ^ w) * k }
	switch n := len(b); {
	case n >= 8:
		for i := 0; i+8 <= n; i += 8 {
			mix(binary.LittleEndian.Uint64(b[i:]))
		}
		mix(binary.LittleEndian.Uint64(b[n-8:]))
	case n >= 4:
		mix(uint64(binary.LittleEndian.Uint32(b)) | uint64(binary.LittleEndian.Uint32(b[n-4:]))<<32)
	case n > 0:
		mix(uint64(b[0]) | uint64(b[n/2])<<8 | uint64(b[n-1])<<16)
	}
	h ^= h >> 29 // a product's low bits see only the factors' low bits: fold the high ones down
	h *= k
	return uint32(h >> 32)
}

// maxInterned bounds the Reader's table of repeated strings.
const maxInterned = 1 << 16

type decoder struct {
	buf []byte
	pos int
	r   *Reader
}

func (d *decoder) peek() byte {
	if d.pos < len(d.buf) {
		return d.buf[d.pos]
	}
	return 0
}

func (d *decoder) next() byte {
	c := d.peek()
	d.pos++
	return c
}

func (d *decoder) byte(c byte) bool { return d.next() == c }

func (d *decoder) ws() {
	for d.pos < len(d.buf) && d.buf[d.pos] <= ' ' { // most often none: a compact line
		switch d.buf[d.pos] {
		case ' ', '\t', '\r', '\n':
			d.pos++
		default:
			return
		}
	}
}

// end reports whether only whitespace follows.
func (d *decoder) end() bool {
	d.ws()
	return d.pos == len(d.buf)
}

// str reads a string without escapes or control characters; the bytes
// alias the line. It skips eight plain bytes at a time (plainWord).
func (d *decoder) str() ([]byte, bool) {
	if !d.byte('"') {
		return nil, false
	}
	buf, start := d.buf, d.pos
	i := start
	for i+8 <= len(buf) && plainWord(binary.LittleEndian.Uint64(buf[i:])) {
		i += 8
	}
	for ; i < len(buf); i++ {
		switch c := buf[i]; {
		case c == '"':
			d.pos = i + 1
			return buf[start:i], true
		case c == '\\' || c < 0x20 || c >= 0x80: // escapes and non-ASCII: encoding/json's business
			d.pos = i
			return nil, false
		}
	}
	d.pos = i
	return nil, false
}

// plainWord reports whether none of the eight bytes of w (little endian)
// ends a plain string: a quote, a backslash, a control character or a
// byte of non-ASCII. A borrow between bytes only ever starts at a byte
// that ends the string, so the answer is exact.
func plainWord(w uint64) bool {
	const ones, high = 0x0101010101010101, 0x8080808080808080
	q := w ^ (ones * '"')
	b := w ^ (ones * '\\')
	return ((q-ones)&^q|(b-ones)&^b|(w-ones*0x20)&^w|w)&high == 0
}

// intern reads a string, sharing one copy of strings seen before.
func (d *decoder) intern() (string, bool) {
	b, ok := d.str()
	if !ok {
		return "", false
	}
	return d.r.intern(b), true
}

// intern returns b as a string, sharing one copy of strings seen before
// (up to maxInterned of them).
func (r *Reader) intern(b []byte) string {
	// A direct-mapped cache in front of the table takes most look-ups.
	slot := &r.recent[shortHash(b)%uint32(len(r.recent))]
	if *slot == string(b) && (len(b) > 0 || *slot == "") {
		return *slot
	}
	if s, ok := r.interned[string(b)]; ok {
		*slot = s
		return s
	}
	s := string(b)
	*slot = s
	if len(r.interned) < maxInterned {
		if r.interned == nil {
			r.interned = make(map[string]string)
		}
		r.interned[s] = s
	}
	return s
}

func (d *decoder) uint() (uint64, bool) {
	start := d.pos
	var v uint64
	// Nineteen digits cannot overflow; only a longer number needs the test.
	for end := min(len(d.buf), start+19); d.pos < end && d.buf[d.pos]-'0' <= 9; d.pos++ {
		v = v*10 + uint64(d.buf[d.pos]-'0')
	}
	for d.pos < len(d.buf) && d.buf[d.pos] >= '0' && d.buf[d.pos] <= '9' {
		digit := uint64(d.buf[d.pos] - '0')
		if v > (math.MaxUint64-digit)/10 {
			return 0, false
		}
		v = v*10 + digit
		d.pos++
	}
	n := d.pos - start
	if n == 0 || n > 1 && d.buf[start] == '0' {
		return 0, false
	}
	switch d.peek() { // a fraction or exponent makes it a float
	case '.', 'e', 'E':
		return 0, false
	}
	return v, true
}

func (d *decoder) int() (int64, bool) {
	neg := d.peek() == '-'
	if neg {
		d.pos++
	}
	v, ok := d.uint()
	switch {
	case !ok:
		return 0, false
	case neg && v <= 1<<63:
		return -int64(v-1) - 1, true
	case !neg && v < 1<<63:
		return int64(v), true
	}
	return 0, false
}

// shard reads a record's shard, {"index": I, "count": N}, into rec.Shard,
// one shared value per distinct shard. Anything else (another field, a
// field twice, one missing) is left to encoding/json.
func (d *decoder) shard(rec *Record) bool {
	if !d.byte('{') {
		return false
	}
	var s Shard
	var seen [2]bool
	for {
		d.ws()
		name, ok := d.str()
		if !ok {
			return false
		}
		d.ws()
		if !d.byte(':') {
			return false
		}
		d.ws()
		v, ok := d.int()
		if !ok || v < math.MinInt32 || v > math.MaxInt32 {
			return false
		}
		switch f := string(name); {
		case f == "index" && !seen[0]:
			s.Index, seen[0] = int(v), true
		case f == "count" && !seen[1]:
			s.Count, seen[1] = int(v), true
		default:
			return false
		}
		d.ws()
		switch d.next() {
		case ',':
		case '}':
			if !seen[0] || !seen[1] {
				return false
			}
			rec.Shard = d.r.shard(s)
			return true
		default:
			return false
		}
	}
}

// shard returns one shared *Shard per distinct value s, so that records do
// not each allocate their own.
func (r *Reader) shard(s Shard) *Shard {
	if p, ok := r.shards[s]; ok {
		return p
	}
	p := &s
	if len(r.shards) < MaxShards {
		if r.shards == nil {
			r.shards = make(map[Shard]*Shard)
		}
		r.shards[s] = p
	}
	return p
}

// headers reads an object of string values into rec.Headers.
func (d *decoder) headers(rec *Record) bool {
	if !d.byte('{') {
		return false
	}
	d.ws()
	if d.peek() == '}' {
		d.pos++
		return true
	}
	for {
		d.ws()
		name, ok := d.str()
		if !ok {
			return false
		}
		d.ws()
		if !d.byte(':') {
			return false
		}
		d.ws()
		v, ok := d.intern()
		if !ok {
			return false
		}
		if rec.Headers == nil {
			rec.Headers = make(map[string]string, 4)
		}
		rec.Headers[d.r.intern(name)] = v
		d.ws()
		switch d.next() {
		case ',':
		case '}':
			return true
		default:
			return false
		}
	}
}
