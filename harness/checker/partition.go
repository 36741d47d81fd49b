package checker

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"sync"

	"github.com/rlbench/rlbench/harness/history"
)

// DefaultMemoryBudget is Policy.MemoryBudget's default: 512 MiB.
const DefaultMemoryBudget = 512 << 20

// How Check spends its memory budget: half holds the encoded records
// (about 40 bytes each) before they spill to the temporary file, half the
// partitions under check, one per worker, at about checkedRecordBytes a
// record (the request, the per-record conclusions, the key's indexes).
const (
	checkedRecordBytes = 320
	// buckets is the number of partitions by hash of key; a worker checks
	// a run of them at once (a task).
	buckets = 256
	// minParallel is the fewest records Check splits into several tasks:
	// a smaller history is checked in one.
	minParallel = 1 << 14
	// cachedTaskRecords is the most records of a task whose per-record
	// conclusions stay within a core's cache, which the models' sweeps
	// over a key's requests reach out of order.
	cachedTaskRecords = 1 << 14
)

// plan is how a check partitions a history.
type plan struct {
	workers int
	// spillAt is the most bytes of encoded records held in memory; beyond
	// it they go to a temporary file in tempDir.
	spillAt int64
	tempDir string
	// taskRecords is the most records a task holds, unless one bucket
	// alone holds more; minParallel the fewest records split into tasks.
	taskRecords int
	minParallel int
}

// planFor is the plan of Check under p: every core, and p's memory budget.
func planFor(p Policy) plan {
	budget := p.MemoryBudget
	if budget <= 0 {
		budget = DefaultMemoryBudget
	}
	workers := runtime.GOMAXPROCS(0)
	return plan{
		workers:     workers,
		spillAt:     budget / 2,
		tempDir:     p.TempDir,
		taskRecords: max(int(budget/2/int64(workers)/checkedRecordBytes), 1),
		minParallel: minParallel,
	}
}

// Blocks of a partition's records in memory: a bucket's first block holds
// minBlock bytes, each next one twice its previous up to maxBlock, so that
// a small history takes little and a large one is not copied as it grows;
// a block takes a record only with blockRoom bytes left (a longer record
// grows it).
const (
	minBlock  = 4 << 10
	maxBlock  = 256 << 10
	blockRoom = 512
)

// bucket is the encoded records of one partition: those spilled to the
// temporary file (chunks) and those still in memory (full blocks, then
// mem, the block being filled), n in all.
type bucket struct {
	full   [][]byte
	mem    []byte
	chunks []chunk
	n      int
	last   int64 // position of the bucket's last record
	// parts is how many tasks check the bucket's keys (1 unless it holds
	// more records than a task should; 0 until tasks says), reads how
	// many have read it.
	parts, reads int
}

type chunk struct{ off, len int64 }

// partitions is a history sorted by key into buckets.
type partitions struct {
	hdr      history.Header
	strs     strtab
	buckets  [buckets]bucket
	records  int
	end      int64 // the latest received time, after narrowing
	inMem    int64
	free     [][]byte // blocks of maxBlock bytes spilled, to fill again
	file     *os.File // the temporary file, nil until a spill
	fileLen  int64
	unlinked bool // the file's name is gone already
}

// partition reads every record of src into buckets by a hash of its key,
// spilling to a temporary file past pl.spillAt bytes. The caller must call
// close, whatever the error.
func partition(src history.Source, narrow narrowing, pl plan) (*partitions, error) {
	ps := &partitions{hdr: src.Header()}
	for i := range ps.buckets {
		ps.buckets[i].last = -1
	}
	var rec history.Record
	for seq := int64(0); ; seq++ {
		err := src.Read(&rec)
		if err == io.EOF {
			break
		}
		if err != nil {
			return ps, fmt.Errorf("read history: %w", err)
		}
		q := request{sent: rec.SentNs, recv: rec.ReceivedNs}
		narrow.apply(&q, rec.DecisionUs)
		ps.end = max(ps.end, q.recv)
		b := &ps.buckets[bucketOf(rec.Key)]
		if cap(b.mem)-len(b.mem) < blockRoom {
			ps.newBlock(b)
		}
		before := len(b.mem)
		b.mem = ps.strs.appendRecord(b.mem, seq, b.last, &rec)
		b.last = seq
		b.n++
		ps.records++
		if ps.inMem += int64(len(b.mem) - before); ps.inMem > pl.spillAt {
			if err := ps.spill(pl); err != nil {
				return ps, err
			}
		}
	}
	if ps.file != nil {
		// A history that spilled once goes to the file whole, and the
		// buffers go, so that its check holds no more than its tasks.
		if err := ps.spill(pl); err != nil {
			return ps, err
		}
		for i := range ps.buckets {
			ps.buckets[i].full, ps.buckets[i].mem = nil, nil
		}
		ps.free = nil
	}
	return ps, nil
}

// newBlock starts a block for b's next records.
func (ps *partitions) newBlock(b *bucket) {
	if len(b.mem) > 0 {
		b.full = append(b.full, b.mem)
	}
	size := min(max(2*cap(b.mem), minBlock), maxBlock)
	if n := len(ps.free); size == maxBlock && n > 0 {
		b.mem, ps.free = ps.free[n-1], ps.free[:n-1]
		return
	}
	b.mem = make([]byte, 0, size)
}

// bucketOf is the bucket of key: its hash (keyHash) modulo buckets.
func bucketOf(key string) int { return int(keyHash(key) % buckets) }

// partOf is the part of its bucket that key falls in when the bucket is
// checked in parts: the rest of its hash, modulo parts.
func partOf(key []byte, parts int) int { return int(keyHash(key) / buckets % uint32(parts)) }

// keyHash is FNV-1a of key.
func keyHash[T string | []byte](key T) uint32 {
	h := uint32(2166136261)
	for i := 0; i < len(key); i++ {
		h ^= uint32(key[i])
		h *= 16777619
	}
	return h
}

// spill appends every bucket's records in memory to the temporary file
// in pl.tempDir.
func (ps *partitions) spill(pl plan) error {
	if ps.file == nil {
		f, err := os.CreateTemp(pl.tempDir, "rlbench-check-*.part")
		if err != nil {
			return fmt.Errorf("partition the history: %w (%s)", err, tempDirFix(pl))
		}
		ps.file = f
		// Unlinked at once where the system allows it (Unix), the file
		// goes even when the process is killed; elsewhere close removes it.
		ps.unlinked = os.Remove(f.Name()) == nil
	}
	for i := range ps.buckets {
		b := &ps.buckets[i]
		if len(b.mem) == 0 && len(b.full) == 0 {
			continue
		}
		c := chunk{off: ps.fileLen}
		for _, block := range append(b.full, b.mem) {
			if _, err := ps.file.WriteAt(block, ps.fileLen+c.len); err != nil {
				return fmt.Errorf("partition the history: %w (%s)", err, tempDirFix(pl))
			}
			c.len += int64(len(block))
		}
		b.chunks = append(b.chunks, c)
		ps.fileLen += c.len
		for _, block := range b.full {
			if cap(block) == maxBlock {
				ps.free = append(ps.free, block[:0])
			}
		}
		b.full, b.mem = b.full[:0], b.mem[:0]
	}
	ps.inMem = 0
	return nil
}

// tempDirFix is the fix for a temporary file in pl.tempDir ("": the
// system's) that could not be created or written.
func tempDirFix(pl plan) string {
	where := "TMPDIR"
	if pl.tempDir != "" {
		where = "Policy.TempDir"
	}
	return fmt.Sprintf("set %s to an existing, writable directory with room: a history of more than %d MiB in compact form, about 40 bytes a record, is written there whole",
		where, pl.spillAt>>20)
}

// close closes the temporary file and removes it, if it has a name left.
func (ps *partitions) close() error {
	if ps == nil || ps.file == nil {
		return nil
	}
	err := ps.file.Close()
	if !ps.unlinked {
		if rerr := os.Remove(ps.file.Name()); err == nil {
			err = rerr
		}
	}
	ps.file = nil
	return err
}

// task is a run of buckets [from, to), or, for one bucket that holds more
// records than a task should, the part part of its keys of parts (partOf).
type task struct {
	from, to    int
	part, parts int
}

// tasks groups the buckets into runs of at most pl.taskRecords and
// cachedTaskRecords records, four or more a worker to keep every worker
// busy, and cuts a bucket that holds more than pl.taskRecords, a worker's
// share of the memory budget, by its keys' hashes into parts of about that
// many (each part reads the whole bucket, and keeps its keys' records; a
// key's records stay together, however many); a history below
// pl.minParallel records is one task.
func (ps *partitions) tasks(pl plan) []task {
	target := ps.records
	if ps.records >= pl.minParallel {
		target = min(pl.taskRecords, max(ps.records/(4*pl.workers), 1), cachedTaskRecords)
	}
	var out []task
	from, n := 0, 0
	for i := range ps.buckets {
		k := ps.buckets[i].n
		if n > 0 && n+k > target {
			out = append(out, task{from: from, to: i, parts: 1})
			from, n = i, 0
		}
		if parts := (k + pl.taskRecords - 1) / max(pl.taskRecords, 1); parts > 1 && target < ps.records {
			ps.buckets[i].parts = parts
			for part := range parts {
				out = append(out, task{from: i, to: i + 1, part: part, parts: parts})
			}
			from = i + 1
			continue
		}
		n += k
	}
	if from < buckets {
		out = append(out, task{from: from, to: buckets, parts: 1})
	}
	return out
}

// blocks returns the encoded records of bucket i in blocks of whole
// records: those read back from the temporary file where they spilled,
// appended to *arena, whose capacity must hold them (so that the blocks
// returned before stay where they are), then those in memory, which it
// lets go once every part of the bucket has them.
func (ps *partitions) blocks(i int, arena *[]byte) ([][]byte, error) {
	b := &ps.buckets[i]
	blocks := append(b.full[:len(b.full):len(b.full)], b.mem)
	if b.reads++; b.reads >= b.parts {
		b.full, b.mem = nil, nil
	}
	if len(b.chunks) == 0 {
		return blocks, nil
	}
	var size int64
	for _, c := range b.chunks {
		size += c.len
	}
	start := int64(len(*arena))
	*arena = (*arena)[:start+size]
	buf := (*arena)[start:]
	pos := int64(0)
	for _, c := range b.chunks {
		if _, err := ps.file.ReadAt(buf[pos:pos+c.len], c.off); err != nil {
			return nil, fmt.Errorf("read back the partitioned history: %w", err)
		}
		pos += c.len
	}
	return append([][]byte{buf}, blocks...), nil
}

// taskSource is the records of a run of buckets, in history order: a heap
// of the buckets' decoders by the position of their next record
// (loadTask reads them).
type taskSource struct {
	hdr  history.Header
	strs *strtab
	decs []*recordDecoder // by next position, a min-heap
	n    int              // records, at most
	// part and parts select the keys of one part of a bucket (partOf);
	// parts is 1 for every key.
	part, parts int
}

// taskSource returns the source of task t. Its records spilled to the
// temporary file are read into the arena, whose memory the caller lends
// for as long as the source is read: the previous task's, once read.
func (ps *partitions) taskSource(t task, arena *[]byte) (*taskSource, error) {
	ts := &taskSource{hdr: ps.hdr, strs: &ps.strs, part: t.part, parts: t.parts}
	// The arena takes every chunk of the task.
	var size int
	for i := t.from; i < t.to; i++ {
		for _, c := range ps.buckets[i].chunks {
			size += int(c.len)
		}
	}
	*arena = slices.Grow((*arena)[:0], size)
	for i := t.from; i < t.to; i++ {
		if ps.buckets[i].n == 0 {
			continue
		}
		blocks, err := ps.blocks(i, arena)
		if err != nil {
			return nil, err
		}
		ts.n += ps.buckets[i].n
		ts.decs = append(ts.decs, newRecordDecoder(&ps.strs, blocks...))
	}
	for i := len(ts.decs)/2 - 1; i >= 0; i-- {
		ts.down(i)
	}
	return ts, nil
}

// down restores the heap order below i.
func (ts *taskSource) down(i int) {
	h := ts.decs
	for {
		l := 2*i + 1
		if l >= len(h) {
			return
		}
		m := l
		if r := l + 1; r < len(h) && h[r].nextSeq() < h[l].nextSeq() {
			m = r
		}
		if h[i].nextSeq() <= h[m].nextSeq() {
			return
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
}

// checkPartitioned checks the history src under p, prepared (prepare),
// by partitions under plan pl, and merges their parts into the report.
func checkPartitioned(src history.Source, p Policy, c clock, pl plan) (_ *Report, err error) {
	narrow := narrowingOf(p, c)
	ps, err := partition(src, narrow, pl)
	defer func() {
		if cerr := ps.close(); err == nil && cerr != nil {
			err = fmt.Errorf("remove the partitioned history: %w", cerr)
		}
	}()
	if err != nil {
		return nil, err
	}
	if ps.records == 0 {
		return nil, ErrEmptyHistory
	}
	uses := limitUses(p)
	tasks := ps.tasks(pl)
	parts := make([]*partial, len(tasks))
	healthy := make([]*partial, len(tasks))
	var (
		mu     sync.Mutex // guards next, failed, and reading back the buckets
		next   int
		failed error
		wg     sync.WaitGroup
	)
	fail := func(err error) {
		mu.Lock()
		failed = firstErr(failed, err)
		mu.Unlock()
	}
	for range min(pl.workers, len(tasks)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var ws workspace
			for {
				mu.Lock()
				t := next
				next++
				if t >= len(tasks) || failed != nil {
					mu.Unlock()
					return
				}
				ts, err := ps.taskSource(tasks[t], &ws.spilled)
				mu.Unlock()
				if err != nil {
					fail(err)
					return
				}
				d, err := loadTask(ts, narrow, &ws)
				if err != nil {
					fail(err)
					return
				}
				parts[t], healthy[t] = collectBoth(d, p, c, uses, ps.end, &ws)
			}
		}()
	}
	wg.Wait()
	if failed != nil {
		return nil, failed
	}
	merged, asHealthy := parts[0], healthy[0]
	for t, o := range parts[1:] {
		merged.merge(o)
		if asHealthy != nil {
			asHealthy.merge(healthy[t+1])
		}
	}
	return finish(ps.hdr, p, c, uses, merged, asHealthy), nil
}

// firstErr is err, unless it is nil: then next.
func firstErr(err, next error) error {
	if err != nil {
		return err
	}
	return next
}
