package checker

import (
	"errors"
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/rlbench/rlbench/harness/history"
	"github.com/rlbench/rlbench/harness/runrecord"
)

// checkSequential is Check without partitions: one pass over the whole
// history held in memory, the report every partitioned check must give.
func checkSequential(src history.Source, p Policy) (*Report, error) {
	p, c, err := prepare(src.Header(), p)
	if err != nil {
		return nil, err
	}
	d, err := load(src, narrowingOf(p, c))
	if err != nil {
		return nil, err
	}
	if len(d.reqs) == 0 {
		return nil, ErrEmptyHistory
	}
	var end int64
	for i := range d.reqs {
		end = max(end, d.reqs[i].recv)
	}
	uses := limitUses(p)
	pt, healthy := collectBoth(d, p, c, uses, end, nil)
	return finish(d.header, p, c, uses, pt, healthy), nil
}

// smallPlan partitions even a handful of records: tasks of at most
// taskRecords records, on workers goroutines, spilling past spillAt bytes
// into dir.
func smallPlan(workers, taskRecords int, spillAt int64, dir string) plan {
	return plan{workers: workers, spillAt: spillAt, tempDir: dir, taskRecords: taskRecords, minParallel: 0}
}

// checkPlanned is Check under plan pl.
func checkPlanned(src history.Source, p Policy, pl plan) (*Report, error) {
	p, c, err := prepare(src.Header(), p)
	if err != nil {
		return nil, err
	}
	return checkPartitioned(src, p, c, pl)
}

// A partitioned check gives the report of one pass over the whole history,
// result for result, proof for proof and count for count, however the
// history is cut: on mixed histories (mixedHistory: plans, routes,
// multi-limit rules, fault windows of every kind, clock steps, fresh and
// spent keys, clock resolutions), in tasks of one to a few records, on one
// to three workers, in memory and spilled to a temporary file.
func TestPartitionedIsSequential(t *testing.T) {
	seeds := uint64(500)
	if testing.Short() {
		seeds = 100
	}
	dir := t.TempDir()
	plans := []plan{
		smallPlan(1, 1, 1<<30, dir),
		smallPlan(3, 5, 1<<30, dir),
		smallPlan(2, 40, 64, dir), // spills every few records
		smallPlan(2, 1, 0, dir),   // spills every record
	}
	for seed := range seeds {
		h, recs, p := mixedHistory(seed)
		want, wantErr := checkSequential(&memSource{h: h, recs: recs}, p)
		check := func(name string, got *Report, err error) {
			t.Helper()
			if !errors.Is(err, wantErr) || (err == nil) != (wantErr == nil) {
				t.Fatalf("seed %d, %s: error %v, want %v", seed, name, err, wantErr)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("seed %d, %s: report differs from the sequential one\n got %+v\nwant %+v", seed, name, got, want)
			}
		}
		got, err := Check(&memSource{h: h, recs: recs}, p)
		check("Check", got, err)
		pl := plans[seed%uint64(len(plans))]
		got, err = checkPlanned(&memSource{h: h, recs: recs}, p, pl)
		check("partitioned", got, err)
	}
	if left, err := os.ReadDir(dir); err != nil || len(left) > 0 {
		t.Errorf("temporary files left behind: %v %v", left, err)
	}
}

// A partition of many records fills a chain of blocks, spills them and
// fills the spilled blocks again, and reads back the same report as one
// pass over the history.
func TestPartitionedBlocks(t *testing.T) {
	l := mustRefLimit(t, "gcra:100/1s,burst=20")
	p := Policy{Rules: []Rule{{Limits: []Limit{mustLimit(t, l.Spec())}}}}
	src := benchHistory(t, 60_000, 2, l) // two buckets of about 1.2 MB each
	want, err := checkSequential(src, p)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, pl := range []plan{
		smallPlan(2, 1<<20, 1<<30, dir),    // in memory, blocks up to maxBlock
		smallPlan(2, 1<<20, 1500<<10, dir), // spills once, midway
		smallPlan(2, 5000, 600<<10, dir),   // spills often, refills freed blocks; a bucket in parts
	} {
		t.Run(fmt.Sprintf("spill at %d", pl.spillAt), func(t *testing.T) {
			src.next = 0
			got, err := checkPlanned(src, p, pl)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("report differs from the sequential one\n got %+v\nwant %+v", got, want)
			}
		})
	}
}

// The shipped drills' histories are checked alike partitioned or not: the
// fixtures of the fault checks, cut into a task per record.
func TestPartitionedFaultFixtures(t *testing.T) {
	var h hist
	for i := range 40 {
		at := ms(float64(10 * i))
		out := adm
		if i%4 == 3 {
			out = rej
		}
		h.add([]string{"a", "b", "c"}[i%3], at, at+ms(2), out, inst([]string{"api-0", "api-1"}[i%2]))
	}
	for _, d := range []*runrecord.Drill{
		drill(runrecord.FailOpen, "redis_kill", ms(100), ms(200), true),
		drill(runrecord.FailClosed, "redis_pause", ms(50), ms(150), false),
		drill(runrecord.FailFallback, "redis_kill", ms(100), 0, false),
		stepWindow(-ms(30)),
	} {
		p := Policy{Rules: []Rule{{Limits: []Limit{mustLimit(t, "gcra:5/100ms,burst=2")}}}, Faults: d}
		src := func() history.Source { return h.source() }
		want, err := checkSequential(src(), p)
		if err != nil {
			t.Fatal(err)
		}
		got, err := checkPlanned(src(), p, smallPlan(2, 1, 0, t.TempDir()))
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: partitioned report differs\n got %+v\nwant %+v", d.Windows[0].Kind, got, want)
		}
	}
}

// A check that fails partway removes its temporary file too.
func TestPartitionedRemovesTempFileOnError(t *testing.T) {
	dir := t.TempDir()
	h, recs, p := mixedHistory(7)
	if len(recs) < 3 {
		t.Fatalf("mixedHistory(7) has %d records; pick a seed with more", len(recs))
	}
	src := &failingSource{memSource: memSource{h: h, recs: recs}, after: len(recs) - 1}
	_, err := checkPlanned(src, p, smallPlan(2, 1, 0, dir))
	if !errors.Is(err, errBroken) {
		t.Fatalf("err = %v, want the source's error", err)
	}
	if left, _ := os.ReadDir(dir); len(left) > 0 {
		t.Errorf("temporary files left behind: %v", left)
	}
	// A directory that cannot hold the file: the error says what to set.
	_, err = checkPlanned(&memSource{h: h, recs: recs}, p, smallPlan(2, 1, 0, dir+"/missing"))
	if err == nil || !strings.Contains(err.Error(), "set Policy.TempDir to an existing, writable directory with room") {
		t.Fatalf("err = %v, want the fix named", err)
	}
	want := "set TMPDIR to an existing, writable directory with room: a history of more than 256 MiB in compact form, about 40 bytes a record, is written there whole"
	if got := tempDirFix(planFor(Policy{})); got != want {
		t.Errorf("the fix for the system's directory is\n%q, want\n%q", got, want)
	}
}

var errBroken = errors.New("disk on fire")

// failingSource fails after its first after records.
type failingSource struct {
	memSource
	after int
}

func (f *failingSource) Read(r *history.Record) error {
	if f.next >= f.after {
		return errBroken
	}
	return f.memSource.Read(r)
}

// The codec carries every field of history.Record: a record with every
// field set, found by reflection (a field added to Record is set too),
// comes back equal, and so do records at the ends of each field's range.
func TestCodecCarriesEveryField(t *testing.T) {
	var full history.Record
	fill(t, reflect.ValueOf(&full).Elem(), "Record")
	full.Headers = map[string]string{"retry-after": "3", "ratelimit": "limit=1", "x-custom": "kept"}
	edge := history.Record{ID: 1<<64 - 1, Key: "", Cost: history.MaxCost, IntendedNs: -history.MaxTimeNs, SentNs: history.MaxTimeNs,
		ReceivedNs: history.MaxTimeNs, Status: 999, Outcome: history.Error, DecisionUs: history.MaxDecisionUs}
	odd := history.Record{ID: 2, Key: "k\x00é", SentNs: -1 << 63, ReceivedNs: 1<<63 - 1, IntendedNs: 1<<63 - 1, Cost: -5}
	var tab strtab
	var buf []byte
	recs := []history.Record{full, edge, odd, {}}
	prev := int64(-1)
	ends := map[int]int{0: 0} // encoding length → records whole in it
	for i := range recs {
		buf = tab.appendRecord(buf, int64(3*i), prev, &recs[i])
		prev = int64(3 * i)
		ends[len(buf)] = i + 1
	}
	dec := newRecordDecoder(&tab, buf)
	for i, want := range recs {
		if !dec.more() {
			t.Fatalf("record %d: no more records", i)
		}
		if got := dec.nextSeq(); got != int64(3*i) {
			t.Errorf("record %d: next position %d, want %d", i, got, 3*i)
		}
		var got history.Record
		if err := dec.read(&got); err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("record %d round trip:\n got %+v\nwant %+v", i, got, want)
		}
	}
	if dec.more() {
		t.Error("records left after the last")
	}
	// Blocks of whole records decode as one buffer does, however cut.
	for cut := 1; cut < len(recs); cut++ {
		var at int
		for n, whole := range ends {
			if whole == cut {
				at = n
			}
		}
		dec := newRecordDecoder(&tab, nil, buf[:at], []byte{}, buf[at:])
		for i, want := range recs {
			var got history.Record
			if err := dec.read(&got); err != nil || !reflect.DeepEqual(got, want) {
				t.Errorf("blocks cut after record %d, record %d: got %+v (%v), want %+v", cut, i, got, err, want)
			}
		}
		if dec.more() {
			t.Errorf("blocks cut after record %d: records left after the last", cut)
		}
	}
	// A cut encoding is an error, not a panic, to both decoders.
	for n := range len(buf) {
		d := newRecordDecoder(&tab, buf[:n])
		var r history.Record
		for d.more() {
			if d.read(&r) != nil {
				break
			}
		}
		if n == 0 {
			continue
		}
		ts := &taskSource{hdr: history.NewHeader(epoch), strs: &tab, decs: []*recordDecoder{newRecordDecoder(&tab, buf[:n])}, n: len(recs)}
		ds, err := loadTask(ts, narrowing{}, &workspace{})
		whole, boundary := ends[n]
		switch {
		case boundary && (err != nil || len(ds.reqs) != whole):
			t.Errorf("cut at %d, after record %d: loadTask = %v", n, whole, err)
		case !boundary && !errors.Is(err, errCodec):
			t.Errorf("cut at %d, inside a record: loadTask = %v, want errCodec", n, err)
		}
	}
}

// fill sets every field of v to a value other than its zero value.
func fill(t *testing.T, v reflect.Value, path string) {
	t.Helper()
	switch v.Kind() {
	case reflect.String:
		v.SetString(path + "-value")
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(int64(len(path)) % 100)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(uint64(len(path))%2 + 1)
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
		fill(t, k, path+".key")
		fill(t, e, path+".elem")
		m.SetMapIndex(k, e)
		v.Set(m)
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fill(t, v.Elem(), path)
	case reflect.Slice:
		s := reflect.MakeSlice(v.Type(), 1, 1)
		fill(t, s.Index(0), path+"[0]")
		v.Set(s)
	case reflect.Struct:
		for i := range v.NumField() {
			if !v.Type().Field(i).IsExported() {
				continue
			}
			fill(t, v.Field(i), path+"."+v.Type().Field(i).Name)
		}
	default:
		t.Fatalf("%s: no test value for a %s; teach fill and the codec this kind", path, v.Kind())
	}
	if v.IsZero() {
		t.Fatalf("%s: still zero", path)
	}
}

// The tasks cover every bucket once, in order: runs of buckets within their
// share of records, and a bucket that holds more in parts of its keys.
func TestTasksCoverBuckets(t *testing.T) {
	for _, tc := range []struct {
		name      string
		counts    map[int]int
		pl        plan
		wantTasks int
	}{
		{"small history", map[int]int{0: 10, 200: 5}, plan{workers: 2, taskRecords: 1, minParallel: 100}, 1},
		{"spread", map[int]int{0: 100, 1: 100, 7: 100, 100: 100, 255: 100}, plan{workers: 1, taskRecords: 150}, 5},
		{"spread on two workers", map[int]int{0: 100, 1: 100, 7: 100, 100: 100, 255: 100}, plan{workers: 2, taskRecords: 150}, 5},
		{"one big bucket", map[int]int{3: 1000, 4: 1}, plan{workers: 1, taskRecords: 10}, 101},
		{"big bucket amid small ones", map[int]int{0: 3, 1: 3, 2: 25, 9: 4}, plan{workers: 1, taskRecords: 10}, 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var ps partitions
			for b, n := range tc.counts {
				ps.buckets[b].n = n
				ps.records += n
			}
			tasks := ps.tasks(tc.pl)
			if len(tasks) != tc.wantTasks {
				t.Errorf("%d tasks, want %d: %v", len(tasks), tc.wantTasks, tasks)
			}
			next := 0
			for i := 0; i < len(tasks); i++ {
				task := tasks[i]
				for b := next; b < task.from; b++ {
					if ps.buckets[b].n > 0 {
						t.Fatalf("tasks %v leave out bucket %d", tasks, b)
					}
				}
				if task.from < next || task.to <= task.from {
					t.Fatalf("tasks %v do not cover the buckets in order", tasks)
				}
				next = task.to
				if task.parts > 1 {
					// The parts of one bucket, each once, in order.
					if task.to != task.from+1 || i+task.parts > len(tasks) {
						t.Fatalf("task %v: parts of more than one bucket", task)
					}
					for part := range task.parts {
						if got := tasks[i+part]; got.from != task.from || got.part != part || got.parts != task.parts {
							t.Fatalf("task %v, want part %d of %d of bucket %d", got, part, task.parts, task.from)
						}
					}
					if n := ps.buckets[task.from].n; n > task.parts*tc.pl.taskRecords {
						t.Errorf("bucket %d: %d records in %d parts, above %d a part", task.from, n, task.parts, tc.pl.taskRecords)
					}
					i += task.parts - 1
					continue
				}
				n := 0
				for b := task.from; b < task.to; b++ {
					n += ps.buckets[b].n
				}
				if tc.wantTasks > 1 && n > tc.pl.taskRecords {
					t.Errorf("task %v holds %d records, above %d", task, n, tc.pl.taskRecords)
				}
			}
			for b := next; b < buckets; b++ {
				if ps.buckets[b].n > 0 {
					t.Errorf("tasks %v leave out bucket %d", tasks, b)
				}
			}
		})
	}
}

// Every rate-limit field a record keeps has a place in a headerSet.
func TestRateLimitHeadersFit(t *testing.T) {
	if n := len(history.RateLimitHeaders); n > maxRateLimitHeaders {
		t.Fatalf("%d rate-limit headers, headerSet holds %d: raise maxRateLimitHeaders", n, maxRateLimitHeaders)
	}
}

// headerIndexOf answers as a search of history.RateLimitHeaders does, for
// every name there and for names that are not.
func TestHeaderIndexOf(t *testing.T) {
	for i, name := range history.RateLimitHeaders {
		if got := headerIndexOf(name); got != i {
			t.Errorf("headerIndexOf(%q) = %d, want %d", name, got, i)
		}
	}
	for _, name := range []string{"", "date", "RateLimit", "ratelimit-", "x-ratelimit-used ", "retry-afte"} {
		if got := headerIndexOf(name); got != -1 {
			t.Errorf("headerIndexOf(%q) = %d, want -1", name, got)
		}
	}
}
