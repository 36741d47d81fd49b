package history

import (
	"bufio"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"
)

// FlushInterval bounds how long a written record waits in a Writer's
// buffers: at most FlushInterval after a Write, the Writer flushes its
// buffer and the gzip stream (a gzip sync flush) to the underlying writer.
// A process killed without Close so loses at most the records of the last
// FlushInterval; the readers read the rest up to the last whole record.
const FlushInterval = 250 * time.Millisecond

// Writer streams a history: the header on creation, then one record per
// Write. It is safe for concurrent use; records appear in the order of the
// Write calls. Records reach the underlying writer at most FlushInterval
// after their Write (from a timer's goroutine), or at Flush or Close; Close
// must be called to end the gzip stream.
type Writer struct {
	mu     sync.Mutex
	gz     *gzip.Writer
	buf    *bufio.Writer
	enc    *json.Encoder
	file   io.Closer
	nextID uint64
	err    error
	timer  *time.Timer // the pending timed flush, nil when none
	closed bool
}

// errClosed is the error of a Write after Close.
var errClosed = errors.New("history writer closed")

// NewWriter writes h (Format and Version filled in when empty) to w, gzip
// compressed and flushed at once, and returns a Writer for the records. The
// returned Writer does not close w. Writes to w come from the calling
// goroutine or the Writer's flush timer, one at a time.
func NewWriter(w io.Writer, h Header) (*Writer, error) {
	if h.Format == "" {
		h.Format = Format
	}
	if h.Version == 0 {
		h.Version = Version
	}
	if err := h.validate(); err != nil {
		return nil, fmt.Errorf("write history header: %w", err)
	}
	gz := gzip.NewWriter(w)
	buf := bufio.NewWriterSize(gz, 64<<10)
	hw := &Writer{gz: gz, buf: buf, enc: json.NewEncoder(buf), nextID: 1}
	if err := hw.enc.Encode(&h); err != nil {
		return nil, fmt.Errorf("write history header: %w", err)
	}
	if err := hw.flush(); err != nil {
		return nil, fmt.Errorf("write history header: %w", err)
	}
	return hw, nil
}

// Create creates the file at path and returns a Writer on it whose Close
// also closes the file.
func Create(path string, h Header) (*Writer, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("create history: %w", err)
	}
	w, err := NewWriter(f, h)
	if err != nil {
		f.Close()
		return nil, err
	}
	w.file = f
	return w, nil
}

// Write appends r, giving it the next ID when r.ID is 0 and cost 1 when
// r.Cost is 0. A record that breaks the format (Record.Validate) is refused
// with an error wrapping ErrFormat. After the first write error every Write
// returns it.
func (w *Writer) Write(r *Record) error {
	if r.Cost == 0 {
		r.Cost = 1
	}
	if err := r.Validate(); err != nil {
		return fmt.Errorf("write record: %w", err)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return w.err
	}
	if r.ID == 0 {
		r.ID = w.nextID
	}
	if r.ID >= w.nextID {
		w.nextID = r.ID + 1
	}
	if err := w.enc.Encode(r); err != nil {
		w.err = fmt.Errorf("write record: %w", err)
		return w.err
	}
	if w.timer == nil {
		w.timer = time.AfterFunc(FlushInterval, w.timedFlush)
	}
	return nil
}

// interruptedKey starts the line that ends the history of an interrupted
// run (Writer.Interrupt): {"interrupted":"REASON"}.
const interruptedKey = `{"interrupted":`

// Interrupt ends the history as the record of a run that stopped before
// its traffic did (cancelled, Ctrl-C): one last line,
// {"interrupted":"REASON"}, after which a Reader returns io.EOF and its
// Truncated reports the interruption, so that a check of the history says
// the verdict covers part of the run. Call it before Close; records
// written after it are an error.
func (w *Writer) Interrupt(reason string) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return w.err
	}
	if err := w.enc.Encode(struct {
		Interrupted string `json:"interrupted"`
	}{reason}); err != nil {
		w.err = fmt.Errorf("write history: %w", err)
		return w.err
	}
	w.err = errInterrupted
	return nil
}

// errInterrupted is returned by Write after Interrupt.
var errInterrupted = errors.New("history: write after Interrupt")

// Flush writes the records written so far to the underlying writer, as a
// reader can read them before Close.
func (w *Writer) Flush() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return w.err
	}
	return w.flush()
}

// timedFlush is the flush FlushInterval after a Write.
func (w *Writer) timedFlush() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.timer = nil
	if w.err == nil {
		w.flush()
	}
}

// flush flushes the buffer and the gzip stream; w.mu is held or w is new.
func (w *Writer) flush() error {
	if w.timer != nil {
		w.timer.Stop()
		w.timer = nil
	}
	if err := w.buf.Flush(); err != nil {
		w.err = fmt.Errorf("flush history: %w", err)
		return w.err
	}
	if err := w.gz.Flush(); err != nil {
		w.err = fmt.Errorf("flush history: %w", err)
		return w.err
	}
	return nil
}

// Close flushes the records and ends the gzip stream, and closes the file
// when the Writer came from Create.
func (w *Writer) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return errClosed
	}
	w.closed = true
	if w.timer != nil {
		w.timer.Stop()
		w.timer = nil
	}
	err := w.err
	if err == errInterrupted {
		err = nil
	}
	if e := w.buf.Flush(); err == nil && e != nil {
		err = fmt.Errorf("flush history: %w", e)
	}
	if e := w.gz.Close(); err == nil && e != nil {
		err = fmt.Errorf("close history: %w", e)
	}
	if w.file != nil {
		if e := w.file.Close(); err == nil && e != nil {
			err = fmt.Errorf("close history: %w", e)
		}
		w.file = nil
	}
	if w.err == nil {
		w.err = errClosed
	}
	return err
}
