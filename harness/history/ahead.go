package history

import (
	"io"
	"sync"
)

// aheadBatch is the number of lines a read-ahead worker decodes at once.
const aheadBatch = 512

// ReadAhead makes r decode its records on workers goroutines (at least 1)
// while one more reads and decompresses its lines, ahead of Read, which
// returns the same records and errors in the same order as without it.
// It holds at most a few batches of 512 records ahead. The Headers map of
// a record Read fills is then the read-ahead's own, which a later Read
// reuses: copy it to keep it. Call ReadAhead before the first Read, at
// most once, and Close when done with r, to stop the goroutines (a Reader
// left unread and unclosed keeps them waiting); Read must not be called
// concurrently with Close.
func (r *Reader) ReadAhead(workers int) {
	if r.ahead != nil {
		return
	}
	workers = max(workers, 1)
	a := &readAhead{
		work:  make(chan *batch, workers),
		order: make(chan *batch, 2*workers+2),
		quit:  make(chan struct{}),
		pool:  sync.Pool{New: func() any { return new(batch) }},
	}
	r.ahead = a
	a.wg.Add(workers + 1)
	ls := r.lines // the splitter's own: Read keeps r's line state
	go a.split(&ls)
	for range workers {
		dec := &Reader{lines: lines{name: r.name}}
		go a.decode(dec)
	}
}

// Close stops the goroutines of ReadAhead, if any. It returns nil.
func (r *Reader) Close() error {
	if a := r.ahead; a != nil && !a.closed {
		a.closed = true
		close(a.quit)
		a.wg.Wait()
	}
	return nil
}

// readAhead is the state of ReadAhead.
type readAhead struct {
	work   chan *batch // batches to decode
	order  chan *batch // the same batches, in the order of the input
	quit   chan struct{}
	wg     sync.WaitGroup
	pool   sync.Pool
	closed bool

	cur  *batch // the batch Read takes records from
	next int    // its next line
}

// batch is a run of lines, decoded by one worker.
type batch struct {
	arena []byte
	ends  []int // end of each line in arena
	nums  []int // line numbers
	last  bool  // the batch's last line is the input's
	recs  []Record
	errs  []error
	end   error // after the batch's lines: io.EOF or the reader's error; nil for more
	trunc error // the lines' Truncated at the end
	done  chan struct{}
}

// split reads lines into batches and hands them out, in order.
func (a *readAhead) split(ls *lines) {
	defer a.wg.Done()
	defer close(a.order)
	defer close(a.work)
	for {
		b := a.pool.Get().(*batch)
		b.arena, b.ends, b.nums, b.last, b.end, b.trunc = b.arena[:0], b.ends[:0], b.nums[:0], false, nil, nil
		b.done = make(chan struct{})
		for len(b.nums) < aheadBatch {
			line, err := ls.next()
			if err != nil {
				b.end, b.trunc = err, ls.trunc
				break
			}
			b.arena = append(b.arena, line...)
			b.ends = append(b.ends, len(b.arena))
			b.nums = append(b.nums, ls.n)
			b.last = ls.last
		}
		select {
		case a.work <- b:
		case <-a.quit:
			return
		}
		select {
		case a.order <- b:
		case <-a.quit:
			return
		}
		if b.end != nil {
			return
		}
	}
}

// decode decodes batches with dec's table of repeated strings.
func (a *readAhead) decode(dec *Reader) {
	defer a.wg.Done()
	for b := range a.work {
		n := len(b.nums)
		if cap(b.recs) < n {
			b.recs = append(b.recs[:cap(b.recs)], make([]Record, n-cap(b.recs))...)
			b.errs = append(b.errs[:cap(b.errs)], make([]error, n-cap(b.errs))...)
		}
		b.recs, b.errs = b.recs[:n], b.errs[:n]
		from := 0
		for i := range n {
			line := b.arena[from:b.ends[i]]
			from = b.ends[i]
			b.errs[i] = dec.decodeLine(line, b.nums[i], b.last && i == n-1, &b.recs[i])
		}
		close(b.done)
		select {
		case <-a.quit:
			return
		default:
		}
	}
}

// read is Read's answer from the batches, in order.
func (a *readAhead) read(r *Reader, rec *Record) error {
	for {
		if r.done {
			return io.EOF
		}
		if a.cur == nil {
			b, ok := <-a.order
			if !ok {
				r.done = true
				return io.EOF
			}
			<-b.done
			a.cur, a.next = b, 0
		}
		b := a.cur
		if a.next == len(b.nums) {
			a.cur = nil
			if b.end != nil {
				r.trunc = b.trunc
				r.done = true
				if b.end != io.EOF {
					return b.end
				}
				return io.EOF
			}
			a.pool.Put(b)
			continue
		}
		i := a.next
		a.next++
		r.n, r.last = b.nums[i], b.last && i == len(b.nums)-1
		switch err := b.errs[i]; err {
		case nil:
			// The batch's record, whose Headers map the batch keeps: valid
			// until the next Read, as Read's contract has it.
			*rec = b.recs[i]
			return nil
		case errLineInterrupted:
			from := 0
			if i > 0 {
				from = b.ends[i-1]
			}
			r.interrupted(b.arena[from:b.ends[i]], b.nums[i])
			return io.EOF
		case errPartial:
			return r.partial()
		default:
			return err
		}
	}
}
