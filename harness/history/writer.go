package history

import (
	"bufio"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sync"
)

// Writer streams a history: the header on creation, then one record per
// Write. It is safe for concurrent use; records appear in the order of the
// Write calls. Close must be called to flush the gzip stream.
type Writer struct {
	mu     sync.Mutex
	gz     *gzip.Writer
	buf    *bufio.Writer
	enc    *json.Encoder
	file   io.Closer
	nextID uint64
	err    error
}

// NewWriter writes h (Format and Version filled in when empty) to w, gzip
// compressed, and returns a Writer for the records. The returned Writer does
// not close w.
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
// r.Cost is 0. After the first error every Write returns it.
func (w *Writer) Write(r *Record) error {
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
	if r.Cost == 0 {
		r.Cost = 1
	}
	if err := w.enc.Encode(r); err != nil {
		w.err = fmt.Errorf("write record: %w", err)
	}
	return w.err
}

// Close flushes the records and ends the gzip stream, and closes the file
// when the Writer came from Create.
func (w *Writer) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	err := w.err
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
		w.err = fmt.Errorf("history writer closed")
	}
	return err
}
