package history

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// maxLine is the longest line a Reader accepts.
const maxLine = 1 << 20

// Source yields records one at a time: Read fills r and returns io.EOF after
// the last record. Reader and VegetaReader implement it.
type Source interface {
	Read(r *Record) error
	Header() Header
}

// Reader streams a history written in this package's format, gzip
// compressed or not. It is not safe for concurrent use.
type Reader struct {
	name   string
	br     *bufio.Reader
	header Header
	line   int
	raw    []byte
	// interned shares one copy of repeated keys, routes, instances and
	// header values.
	interned map[string]string
}

// NewReader reads the header from r and returns a Reader positioned at the
// first record. name (a file name, or "") is used in errors, which are
// *FormatError wrapping ErrFormat for malformed input.
func NewReader(r io.Reader, name string) (*Reader, error) {
	br, err := maybeGunzip(r)
	if err != nil {
		return nil, &FormatError{File: name, Line: 1, Err: fmt.Errorf("gzip: %w", err)}
	}
	hr := &Reader{name: name, br: br}
	line, err := hr.next()
	if err == io.EOF {
		return nil, &FormatError{File: name, Line: 1, Err: errors.New("empty history: no header")}
	}
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(line, &hr.header); err != nil {
		return nil, &FormatError{File: name, Line: 1, Field: jsonFieldOf(err), Err: err}
	}
	if err := hr.header.validate(); err != nil {
		err.(*FormatError).File = name
		return nil, err
	}
	return hr, nil
}

// maybeGunzip wraps r in a gzip reader when it starts with gzip's magic bytes.
func maybeGunzip(r io.Reader) (*bufio.Reader, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	magic, _ := br.Peek(2)
	if len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		gz, err := gzip.NewReader(br)
		if err != nil {
			return nil, err
		}
		return bufio.NewReaderSize(gz, 64<<10), nil
	}
	return br, nil
}

// Header returns the history's header.
func (r *Reader) Header() Header { return r.header }

// Line returns the line number of the record last read.
func (r *Reader) Line() int { return r.line }

// next returns the next non-empty line, valid until the following call.
func (r *Reader) next() ([]byte, error) {
	for {
		r.raw = r.raw[:0]
		for {
			chunk, err := r.br.ReadSlice('\n')
			r.raw = append(r.raw, chunk...)
			if err == bufio.ErrBufferFull {
				if len(r.raw) > maxLine {
					return nil, &FormatError{File: r.name, Line: r.line + 1, Err: fmt.Errorf("line longer than %d bytes", maxLine)}
				}
				continue
			}
			if err != nil && err != io.EOF {
				return nil, &FormatError{File: r.name, Line: r.line + 1, Err: err}
			}
			if err == io.EOF && len(r.raw) == 0 {
				return nil, io.EOF
			}
			break
		}
		r.line++
		if line := bytes.TrimSpace(r.raw); len(line) > 0 {
			return line, nil
		}
	}
}

// Read fills rec with the next record, reusing its Headers map, and returns
// io.EOF after the last one. A record without an id gets its line number
// minus one (so the first record is 1); a cost of 0 becomes 1.
func (r *Reader) Read(rec *Record) error {
	line, err := r.next()
	if err != nil {
		return err
	}
	headers := rec.Headers
	clear(headers)
	*rec = Record{Headers: headers}
	if !r.decodeRecord(line, rec) {
		clear(headers)
		*rec = Record{Headers: headers}
		if err := json.Unmarshal(line, rec); err != nil {
			return &FormatError{File: r.name, Line: r.line, Field: jsonFieldOf(err), Err: err}
		}
	}
	if rec.ID == 0 {
		rec.ID = uint64(r.line - 1)
	}
	if rec.Cost == 0 {
		rec.Cost = 1
	}
	if err := rec.Validate(); err != nil {
		fe := err.(*FormatError)
		fe.File, fe.Line = r.name, r.line
		return fe
	}
	return nil
}
