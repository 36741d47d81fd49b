package history

import (
	"encoding/binary"
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"strconv"
	"testing"
)

// FuzzDecodeRecord holds the fast path to encoding/json: whenever it accepts
// a line, encoding/json accepts it too and decodes the same record.
func FuzzDecodeRecord(f *testing.F) {
	for _, seed := range []string{
		`{"id":3,"key":"alice","instance":"api-0","route":"/v1","cost":2,"intended_ns":-5,"sent_ns":0,"received_ns":10,"status":200,"outcome":"admitted","headers":{"retry-after":"1","ratelimit":"limit=5, remaining=4"},"decision_us":17,"phase":"burst"}`,
		`{"key":"k","sent_ns":9223372036854775807,"received_ns":-9223372036854775808,"outcome":"error","error":"timeout"}`,
		`{"key":"k","headers":{}}`,
		`{}`,
		` { "key" : "k" , "status" : 429 } `,
		`{"key":"k\u00e9"}`,
		`{"Key":"k"}`,
		`{"cost":1.5}`,
		`{"cost":01}`,
		`{"id":-1}`,
		`{"status":null}`,
		`{"key":"k",}`,
		`{"key":"k"}x`,
		`{"outcome":"maybe"}`,
		`{"key":"k","key":"j"}`,
		`{"id":18446744073709551616}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		var r Reader
		var fast Record
		if !r.decodeRecord(line, &fast) {
			return
		}
		var slow Record
		if err := json.Unmarshal(line, &slow); err != nil {
			t.Fatalf("fast path accepted %q, encoding/json: %v", line, err)
		}
		if len(slow.Headers) == 0 && len(fast.Headers) == 0 {
			slow.Headers, fast.Headers = nil, nil
		}
		if !reflect.DeepEqual(fast, slow) {
			t.Fatalf("%q:\nfast %+v\njson %+v", line, fast, slow)
		}
	})
}

// TestPlainWord holds the eight-byte test of str to the byte-wise one:
// every byte value at every position of a word of plain bytes, and words
// of random bytes.
func TestPlainWord(t *testing.T) {
	ends := func(c byte) bool { return c == '"' || c == '\\' || c < 0x20 || c >= 0x80 }
	check := func(w [8]byte) {
		want := true
		for _, c := range w {
			want = want && !ends(c)
		}
		if got := plainWord(binary.LittleEndian.Uint64(w[:])); got != want {
			t.Fatalf("plainWord(%q) = %t, want %t", w[:], got, want)
		}
	}
	for _, fill := range []byte{'a', ' ', '#', '~', 0x7f, '[', ']'} {
		for pos := range 8 {
			for c := range 256 {
				w := [8]byte{fill, fill, fill, fill, fill, fill, fill, fill}
				w[pos] = byte(c)
				check(w)
			}
		}
	}
	rng := rand.New(rand.NewPCG(7, 8))
	for range 1 << 20 {
		var w [8]byte
		binary.LittleEndian.PutUint64(w[:], rng.Uint64())
		for i := range w { // mostly plain bytes, as histories hold
			if rng.IntN(4) > 0 {
				w[i] = 0x20 + w[i]%0x60
			}
		}
		check(w)
	}
}

// TestShortHashSpread holds the cache of recent strings to spreading keys
// that differ in a few digits over most of its slots, as a uniform hash
// would (1 − e^(−n/slots) of them, all but a few here).
func TestShortHashSpread(t *testing.T) {
	var r Reader
	slots := map[uint32]bool{}
	const n = 10_000
	for i := range n {
		for _, s := range []string{"key-" + strconv.Itoa(i), strconv.Itoa(i), "tenant-00000000" + strconv.Itoa(i)} {
			slots[shortHash([]byte(s))%uint32(len(r.recent))] = true
		}
	}
	if got, want := len(slots), len(r.recent)*9/10; got < want {
		t.Fatalf("%d strings fill %d of %d slots, want %d or more", 3*n, got, len(r.recent), want)
	}
}
