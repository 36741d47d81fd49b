package history

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/klauspost/compress/gzip"
)

// maxLine is the longest line a Reader accepts.
const maxLine = 1 << 20

// ErrTruncated is wrapped by the error a reader's Truncated method returns
// for a history that ends early: a gzip stream without its end, or a last
// line that holds part of a record, as an interrupted run leaves them.
var ErrTruncated = errors.New("history truncated")

// Source yields records one at a time: Read fills r and returns io.EOF after
// the last record. Reader and VegetaReader implement it.
type Source interface {
	Read(r *Record) error
	Header() Header
}

// Reader streams a history written in this package's format, gzip
// compressed or not. A history that ends early (see Truncated) is read up to
// its last whole record. It is not safe for concurrent use.
type Reader struct {
	lines
	header Header
	// interned shares one copy of repeated keys, routes, instances and
	// header values.
	interned map[string]string
	recent   [4096]string // the strings interned last, by hash
	// shards shares one *Shard per distinct record shard.
	shards map[Shard]*Shard
	// ahead, when set, decodes records ahead of Read (ReadAhead).
	ahead *readAhead
}

// NewReader reads the header from r and returns a Reader positioned at the
// first record. name (a file name, or "") is used in errors, which are
// *FormatError wrapping ErrFormat for malformed input; a history cut short
// within its header also wraps ErrTruncated.
func NewReader(r io.Reader, name string) (*Reader, error) {
	l, err := newLines(r, name)
	if err != nil {
		return nil, err
	}
	hr := &Reader{lines: l}
	line, err := hr.next()
	if err == io.EOF {
		if hr.cut {
			return nil, &FormatError{File: name, Line: 1, Err: fmt.Errorf("%w: the gzip stream ends before the header", ErrTruncated)}
		}
		return nil, &FormatError{File: name, Line: 1, Err: errors.New("empty history: no header")}
	}
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(line, &hr.header); err != nil {
		if hr.last && incomplete(line) {
			return nil, &FormatError{File: name, Line: 1, Err: fmt.Errorf("%w: the history ends within its header", ErrTruncated)}
		}
		return nil, &FormatError{File: name, Line: 1, Field: jsonFieldOf(err), Err: err}
	}
	if err := hr.header.validate(); err != nil {
		err.(*FormatError).File = name
		return nil, err
	}
	hr.header.defaults()
	return hr, nil
}

// Header returns the history's header.
func (r *Reader) Header() Header { return r.header }

// Line returns the line number of the record last read.
func (r *Reader) Line() int { return r.n }

// Read fills rec with the next record, reusing its Headers map, and returns
// io.EOF after the last whole one. A record without an id gets its line
// number minus one (so the first record is 1); a cost of 0 becomes 1. Every
// record is validated (Record.Validate); a fault is a *FormatError naming
// the file, line and field.
func (r *Reader) Read(rec *Record) error {
	if r.ahead != nil {
		return r.ahead.read(r, rec)
	}
	line, err := r.next()
	if err != nil {
		return err
	}
	switch err := r.decodeLine(line, r.n, r.last, rec); err {
	case nil:
		return nil
	case errLineInterrupted:
		r.interrupted(line, r.n)
		return io.EOF
	case errPartial:
		return r.partial()
	default:
		return err
	}
}

// Sentinels of decodeLine: the line ends an interrupted run's history, or
// is the last line and holds part of a record.
var (
	errLineInterrupted = errors.New("interrupted")
	errPartial         = errors.New("partial record")
)

// decodeLine decodes line n (last: the input's last line) into rec,
// reusing its Headers map: nil, errLineInterrupted, errPartial, or a
// *FormatError. It reads only r's name and interned strings.
func (r *Reader) decodeLine(line []byte, n int, last bool, rec *Record) error {
	if bytes.HasPrefix(line, []byte(interruptedKey)) {
		return errLineInterrupted
	}
	headers := rec.Headers
	clear(headers)
	*rec = Record{Headers: headers}
	if !r.decodeRecord(line, rec) {
		clear(headers)
		*rec = Record{Headers: headers}
		if err := json.Unmarshal(line, rec); err != nil {
			if last && incomplete(line) {
				return errPartial
			}
			return &FormatError{File: r.name, Line: n, Field: jsonFieldOf(err), Err: err}
		}
	}
	if rec.ID == 0 {
		rec.ID = uint64(n - 1)
	}
	if rec.Cost == 0 {
		rec.Cost = 1
	}
	if err := rec.Validate(); err != nil {
		fe := err.(*FormatError)
		fe.File, fe.Line = r.name, n
		return fe
	}
	return nil
}

// interrupted ends the input at line n, which says the run was interrupted.
func (r *Reader) interrupted(line []byte, n int) {
	var end struct {
		Interrupted string `json:"interrupted"`
	}
	_ = json.Unmarshal(line, &end)
	r.trunc = fmt.Errorf("%s: %w: the run was interrupted (%s) before its traffic ended", place(r.name, n), ErrTruncated, end.Interrupted)
	r.done = true
}

// lines splits a history, gzip compressed or not, into lines and notes how
// it ends. It is the part of Reader and VegetaReader that reads bytes.
type lines struct {
	name string
	br   *bufio.Reader
	n    int // the number of the line last returned, 1-based
	raw  []byte
	// last: the line last returned ends the input without its "\n".
	last bool
	// cut: the gzip stream ended early (io.ErrUnexpectedEOF).
	cut bool
	// done: the input is consumed; next returns io.EOF.
	done bool
	// trunc is the answer of Truncated.
	trunc error
}

func newLines(r io.Reader, name string) (lines, error) {
	br, err := maybeGunzip(r)
	if errors.Is(err, io.ErrUnexpectedEOF) || err == io.EOF {
		return lines{}, &FormatError{File: name, Line: 1, Err: fmt.Errorf("%w: the gzip stream ends within its own header", ErrTruncated)}
	}
	if err != nil {
		return lines{}, &FormatError{File: name, Line: 1, Err: fmt.Errorf("gzip: %w", err)}
	}
	return lines{name: name, br: br}, nil
}

// maybeGunzip wraps r in a gzip reader when it starts with gzip's magic bytes.
func maybeGunzip(r io.Reader) (*bufio.Reader, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	magic, _ := br.Peek(2)
	if len(magic) == 1 && magic[0] == 0x1f { // gzip's magic, cut short
		return nil, io.ErrUnexpectedEOF
	}
	if len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		gz, err := gzip.NewReader(br)
		if err != nil {
			return nil, err
		}
		return bufio.NewReaderSize(gz, 64<<10), nil
	}
	return br, nil
}

// Truncated reports whether the history ended early, as the history of an
// interrupted run does: nil when it ended cleanly (or has not been read to
// its end), else an error wrapping ErrTruncated that names the file and
// line. Read returns io.EOF after the last whole record either way: call
// Truncated after it to learn whether records may be missing.
func (r *Reader) Truncated() error { return r.trunc }

// Name is the name the history was opened under (its file), as its
// errors name it.
func (l *lines) Name() string { return l.name }

// next returns the next non-empty line, valid until the following call, or
// io.EOF at the end of the input.
func (l *lines) next() ([]byte, error) {
	if l.done {
		return nil, io.EOF
	}
	for {
		l.raw, l.last = l.raw[:0], false
		var err error
		for {
			var chunk []byte
			chunk, err = l.br.ReadSlice('\n')
			l.raw = append(l.raw, chunk...)
			if err != bufio.ErrBufferFull {
				break
			}
			if len(l.raw) > maxLine {
				return nil, &FormatError{File: l.name, Line: l.n + 1, Err: fmt.Errorf("line longer than %d bytes", maxLine)}
			}
		}
		switch {
		case err == nil:
		case err == io.EOF || errors.Is(err, io.ErrUnexpectedEOF):
			if err != io.EOF {
				l.cut = true
			}
			l.last = true
			if len(bytes.TrimSpace(l.raw)) == 0 {
				l.done = true
				if l.cut && l.trunc == nil {
					l.trunc = fmt.Errorf("%s: %w: the gzip stream ends early; every whole record before it was read", place(l.name, l.n+1), ErrTruncated)
				}
				return nil, io.EOF
			}
		default:
			return nil, &FormatError{File: l.name, Line: l.n + 1, Err: err}
		}
		l.n++
		if line := bytes.TrimSpace(l.raw); len(line) > 0 {
			return line, nil
		}
	}
}

// partial ends the input at a last line holding part of a record.
func (l *lines) partial() error {
	l.done = true
	l.trunc = fmt.Errorf("%s: %w: the last line holds part of a record; every whole record before it was read", place(l.name, l.n), ErrTruncated)
	return io.EOF
}

// incomplete reports whether line is the start of a JSON value cut short.
func incomplete(line []byte) bool {
	return json.NewDecoder(bytes.NewReader(line)).Decode(new(json.RawMessage)) == io.ErrUnexpectedEOF
}

// place names a line of a file as FormatError does: "FILE:LINE", or "line
// LINE" without a file name.
func place(name string, line int) string {
	if name == "" {
		return fmt.Sprintf("line %d", line)
	}
	return fmt.Sprintf("%s:%d", name, line)
}
