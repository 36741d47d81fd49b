// Package yamlstrict decodes rlbench's YAML files strictly and reports
// every fault at its place: the scenario files (package scenarios) and the
// sample API's configuration (package sampleapi) share it, so both refuse
// the same mistakes with the same kind of message.
//
// Decode walks the document along the Go type it fills: a key the type has
// no field for is an error naming the file, the line and the nearest valid
// key (package nearest); a key given twice is an error; a value of the wrong
// type is an error in the file's words ("cannot unmarshal !!str `three`
// into a whole number"), not Go's. Numbers are decoded strictly: a
// fraction such as 10.9 where a whole number belongs is an error, not
// truncated to 10, and NaN or an infinity (.nan, .inf, -.inf) is an error
// wherever a number belongs. Aliases and merge keys (<<: *base) are
// followed, so that a key they bring in is checked as if written in place,
// and a document whose aliases expand to more than MaxValues values is
// refused. The Doc it returns remembers the line of every field, so that
// validation after decoding reports its faults at the right line too
// (Doc.Errorf).
//
// Fields take their key from the yaml tag (",inline" and ",omitempty" are
// honoured; "-" and untagged or unexported fields are not keys). A field
// whose pointer implements encoding.TextUnmarshaler (limiter.Limit,
// slog.Level) is a scalar, decoded once by its UnmarshalText.
package yamlstrict

import (
	"bytes"
	"encoding"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/rlbench/rlbench/scenarios/nearest"
)

// ErrInvalid is matched by errors.Is for every *Error: the input at its
// place is at fault, not the machine reading it.
var ErrInvalid = errors.New("invalid input")

// MaxValues is the most values (mappings, lists and scalars, counted each
// time an alias or merge key brings them in again) a document may expand
// to, so that a few lines of nested aliases (the "billion laughs") cannot
// keep Decode busy for hours.
const MaxValues = 250_000

// ErrEmpty is the Err of the *Error Decode returns for a file that holds
// no YAML document (empty, or only comments).
var ErrEmpty = errors.New("empty file")

// Error is a fault in a YAML file: where it is and what is wrong. Line is
// 1-based and 0 when unknown; Field is the key's path, such as
// "traffic[2].rate" or "routes.search.limits[1]", and empty when the fault
// is not one field's. errors.Is(err, ErrInvalid) holds for every *Error,
// and Unwrap gives Err, so that errors.Is also finds what Err wraps (such
// as limiter.ErrInvalidLimit).
type Error struct {
	File  string
	Line  int
	Field string
	Err   error
}

// Error formats the fault as "FILE:LINE: FIELD: message".
func (e *Error) Error() string {
	var b strings.Builder
	if e.File != "" {
		b.WriteString(e.File)
		if e.Line > 0 {
			b.WriteString(":" + strconv.Itoa(e.Line))
		}
		b.WriteString(": ")
	} else if e.Line > 0 {
		b.WriteString("line " + strconv.Itoa(e.Line) + ": ")
	}
	if e.Field != "" {
		b.WriteString(e.Field + ": ")
	}
	b.WriteString(e.Err.Error())
	return b.String()
}

// Unwrap returns Err.
func (e *Error) Unwrap() error { return e.Err }

// Is reports whether target is ErrInvalid.
func (e *Error) Is(target error) bool { return target == ErrInvalid }

// Doc is a decoded document's map of field paths to lines, for errors
// found after decoding. The zero Doc and a nil *Doc know no lines: their
// errors name the file ("" for a nil Doc) and the field only. A Doc is not
// modified after Decode returns it; it is safe for concurrent reads.
type Doc struct {
	file   string
	keys   map[string]int // field path → line of its key (of the item, for a list item)
	values map[string]int // field path → line of its value
}

// NewDoc returns a Doc for a configuration that did not come from a file,
// whose errors name file (such as "(flags)") and no line.
func NewDoc(file string) *Doc { return &Doc{file: file} }

// File is the file name errors carry.
func (d *Doc) File() string {
	if d == nil {
		return ""
	}
	return d.file
}

// Has reports whether the document gives field (a path as Error.Field
// writes it).
func (d *Doc) Has(field string) bool {
	if d == nil {
		return false
	}
	_, ok := d.keys[field]
	return ok
}

// Line returns the line of field, or of its nearest parent the document
// gives, or of the document itself; 0 when the Doc knows no lines.
func (d *Doc) Line(field string) int {
	if d == nil {
		return 0
	}
	for p := field; ; {
		if line, ok := d.keys[p]; ok || p == "" {
			return line
		}
		if i := strings.LastIndexAny(p, ".["); i >= 0 {
			p = p[:i]
		} else {
			p = ""
		}
	}
}

// Errorf returns an *Error at field, with the line Line gives, whose Err
// is fmt.Errorf(format, args...) (so %w wraps).
func (d *Doc) Errorf(field, format string, args ...any) *Error {
	return &Error{File: d.File(), Line: d.Line(field), Field: field, Err: fmt.Errorf(format, args...)}
}

// Decode decodes data, one YAML document, strictly into v, a non-nil
// pointer; file names the source in errors. Every error is an *Error: an
// empty document's Err is ErrEmpty; more than one document, a document
// that is not a mapping when v is a struct, an unknown key, a key given
// twice, a value of the wrong type or one its UnmarshalText refuses are
// errors at their line and field. v may be partly filled on error.
func Decode(file string, data []byte, v any) (*Doc, error) {
	t := reflect.TypeOf(v)
	if t == nil || t.Kind() != reflect.Pointer {
		return nil, &Error{File: file, Err: fmt.Errorf("decode into %T: want a non-nil pointer", v)}
	}
	var node yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&node); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, &Error{File: file, Err: ErrEmpty}
		}
		return nil, syntaxError(file, err, nil)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		return nil, &Error{File: file, Line: extra.Line, Err: errors.New("more than one YAML document; the file holds one")}
	}
	root := &node
	if root.Kind == yaml.DocumentNode && len(root.Content) == 1 {
		root = root.Content[0]
	}
	st := t.Elem()
	for st.Kind() == reflect.Pointer {
		st = st.Elem()
	}
	if st.Kind() == reflect.Struct && !isText(st) && root.Kind != yaml.MappingNode {
		return nil, &Error{File: file, Line: root.Line, Err: fmt.Errorf("want a mapping of keys such as %s", strings.Join(firstKeys(st, 4), ", "))}
	}
	w := &walker{doc: &Doc{file: file, keys: map[string]int{"": root.Line}, values: map[string]int{}}, types: map[string]string{}}
	if err := w.walk(root, t, ""); err != nil {
		err.File = file
		return nil, err
	}
	if err := root.Decode(v); err != nil {
		var te *yaml.TypeError
		if !errors.As(err, &te) {
			// UnmarshalText refused a value: yaml stops at the first, in
			// document order, without its place; find it again.
			for _, tn := range w.texts {
				if terr := reflect.New(tn.t).Interface().(encoding.TextUnmarshaler).UnmarshalText([]byte(tn.node.Value)); terr != nil {
					return nil, &Error{File: file, Line: tn.node.Line, Field: tn.path, Err: terr}
				}
			}
		}
		se := syntaxError(file, err, w.types)
		if se.Field = fieldAt(w.doc.keys, se.Line); se.Field == "" {
			se.Field = fieldAt(w.doc.values, se.Line)
		}
		return nil, se
	}
	return w.doc, nil
}

// walker checks a node tree against a Go type, recording lines.
type walker struct {
	doc   *Doc
	types map[string]string // Go type name → the file's words, for yaml's messages
	texts []textNode        // scalars decoded by UnmarshalText, in document order
	// values counts the values walked, each alias expansion again.
	values int
}

type textNode struct {
	node *yaml.Node
	t    reflect.Type // implements TextUnmarshaler through a pointer
	path string
}

var textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()

// isText reports whether values of t decode themselves from a scalar.
func isText(t reflect.Type) bool {
	return reflect.PointerTo(t).Implements(textUnmarshaler)
}

// field is a key a struct type takes.
type field struct {
	name string
	t    reflect.Type
}

// fields lists the keys of struct type t, inline structs flattened.
func fields(t reflect.Type) []field {
	var out []field
	for i := range t.NumField() {
		f := t.Field(i)
		tag, ok := f.Tag.Lookup("yaml")
		if !ok || (!f.IsExported() && !f.Anonymous) {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if name == "-" {
			continue
		}
		if slices.Contains(strings.Split(opts, ","), "inline") {
			ft := f.Type
			for ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				out = append(out, fields(ft)...)
				continue
			}
		}
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		out = append(out, field{name, f.Type})
	}
	return out
}

func firstKeys(t reflect.Type, n int) []string {
	var names []string
	for _, f := range fields(t) {
		names = append(names, f.name)
	}
	return names[:min(n, len(names))]
}

// describe records the file's words for Go type t, as yaml's messages name it.
func (w *walker) describe(t reflect.Type) {
	name := t.String()
	if _, ok := w.types[name]; ok {
		return
	}
	e := t
	for e.Kind() == reflect.Pointer {
		e = e.Elem()
	}
	var words string
	switch {
	case e == reflect.TypeFor[time.Duration]():
		words = "a duration such as 250ms or 5s"
	case isText(e):
		words = "a string"
	default:
		switch e.Kind() {
		case reflect.Struct, reflect.Map:
			words = "a mapping of keys"
		case reflect.Slice, reflect.Array:
			words = "a list"
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
			reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
			words = "a whole number"
		case reflect.Float32, reflect.Float64:
			words = "a number"
		case reflect.Bool:
			words = "true or false"
		case reflect.String:
			words = "a string"
		default:
			return
		}
	}
	w.types[name] = words
}

// walk checks node against type t at path, rejecting keys t has no field
// for and recording the line of every field path's key and value.
func (w *walker) walk(node *yaml.Node, t reflect.Type, path string) *Error {
	for t.Kind() == reflect.Pointer {
		w.describe(t)
		t = t.Elem()
	}
	w.describe(t)
	if node.Kind == yaml.AliasNode && node.Alias != nil {
		return broughtIn(w.walk(node.Alias, t, path), node, "*")
	}
	if w.values++; w.values > MaxValues {
		return &Error{Line: node.Line, Field: path, Err: fmt.Errorf("the document expands to more than %d values through its aliases; write the values out or use fewer aliases", MaxValues)}
	}
	if isText(t) {
		if node.Kind != yaml.ScalarNode {
			return &Error{Line: node.Line, Field: path, Err: fmt.Errorf("want a single value, not a %s", kindWords(node.Kind))}
		}
		w.texts = append(w.texts, textNode{node, t, path})
		return nil
	}
	if node.Kind == yaml.ScalarNode {
		if err := checkNumber(node, t); err != nil {
			return &Error{Line: node.Line, Field: path, Err: err}
		}
	}
	switch t.Kind() {
	case reflect.Struct:
		if node.Kind != yaml.MappingNode {
			return nil // Decode reports the type mismatch
		}
		fs := fields(t)
		byName := map[string]reflect.Type{}
		var names []string
		for _, f := range fs {
			byName[f.name] = f.t
			names = append(names, f.name)
		}
		seen := map[string]bool{}
		for i := 0; i+1 < len(node.Content); i += 2 {
			k, v := mapKey(node.Content[i]), node.Content[i+1]
			if k.ShortTag() == "!!merge" { // <<: *anchor merges the anchor's keys
				if err := w.merge(v, t, path); err != nil {
					return err
				}
				continue
			}
			fpath := joinPath(path, k.Value)
			ft, ok := byName[k.Value]
			if !ok {
				msg := fmt.Sprintf("unknown key %q", k.Value)
				if near := nearest.Word(k.Value, names); near != "" {
					msg += fmt.Sprintf("; did you mean %q?", near)
				} else {
					msg += "; valid keys are " + strings.Join(names, ", ")
				}
				return &Error{Line: k.Line, Field: fpath, Err: errors.New(msg)}
			}
			if seen[k.Value] {
				return &Error{Line: k.Line, Field: fpath, Err: errors.New("key given twice")}
			}
			seen[k.Value] = true
			w.doc.keys[fpath] = k.Line
			w.doc.values[fpath] = v.Line
			if err := w.walk(v, ft, fpath); err != nil {
				return err
			}
		}
	case reflect.Map:
		if node.Kind != yaml.MappingNode {
			return nil
		}
		seen := map[string]bool{}
		for i := 0; i+1 < len(node.Content); i += 2 {
			k, v := mapKey(node.Content[i]), node.Content[i+1]
			fpath := joinPath(path, k.Value)
			if seen[k.Value] {
				return &Error{Line: k.Line, Field: fpath, Err: errors.New("key given twice")}
			}
			seen[k.Value] = true
			w.doc.keys[fpath] = k.Line
			w.doc.values[fpath] = v.Line
			if err := w.walk(v, t.Elem(), fpath); err != nil {
				return err
			}
		}
	case reflect.Slice, reflect.Array:
		if node.Kind != yaml.SequenceNode {
			return nil
		}
		for i, item := range node.Content {
			ipath := fmt.Sprintf("%s[%d]", path, i)
			w.doc.keys[ipath] = item.Line
			if err := w.walk(item, t.Elem(), ipath); err != nil {
				return err
			}
		}
	}
	return nil
}

// broughtIn says, on an error found in an anchored value, which alias
// brought that value to the place where it is at fault: the anchor's own
// line may be one where the value is fine. how is "*" for an alias and
// "<<: *" for a merge key.
func broughtIn(err *Error, alias *yaml.Node, how string) *Error {
	if err != nil && err.Line != alias.Line {
		err.Err = fmt.Errorf("%w (brought in by %s%s at line %d)", err.Err, how, alias.Value, alias.Line)
	}
	return err
}

// mapKey returns a mapping key as the decoder sees it: an alias used as a key
// (*k: value) stands for the key its anchor marks, at the alias's line.
func mapKey(k *yaml.Node) *yaml.Node {
	if k.Kind != yaml.AliasNode || k.Alias == nil {
		return k
	}
	r := k
	for r.Kind == yaml.AliasNode && r.Alias != nil {
		r = r.Alias
	}
	c := *r
	c.Line, c.Column = k.Line, k.Column
	return &c
}

var durationType = reflect.TypeFor[time.Duration]()

// checkNumber refuses a scalar yaml would decode into a number of type t
// with a loss: a fraction (10.9) or a non-finite value (.nan, .inf, -.inf)
// where a whole number belongs, which yaml truncates (to 10, or to the
// smallest int64 for -.inf), and a non-finite value where a number belongs.
// Durations are yaml's own business: it refuses numbers for them.
func checkNumber(node *yaml.Node, t reflect.Type) error {
	if t == durationType || node.ShortTag() != "!!float" {
		return nil // an !!int is exact; a string or a null is yaml's to refuse or zero
	}
	var f float64
	if err := node.Decode(&f); err != nil {
		return nil // yaml reports it with the type error
	}
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		switch {
		case math.IsNaN(f) || math.IsInf(f, 0):
			return fmt.Errorf("%s: want a whole number, not NaN or an infinity", node.Value)
		case f != math.Trunc(f):
			return fmt.Errorf("%s: want a whole number, not a fraction; write %v or %v", node.Value, math.Floor(f), math.Ceil(f))
		}
	case reflect.Float32, reflect.Float64:
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return fmt.Errorf("%s: want a finite number, not NaN or an infinity", node.Value)
		}
	}
	return nil
}

// merge walks the mapping (or list of mappings) a merge key brings in.
func (w *walker) merge(v *yaml.Node, t reflect.Type, path string) *Error {
	if v.Kind == yaml.AliasNode && v.Alias != nil {
		return broughtIn(w.merge(v.Alias, t, path), v, "<<: *")
	}
	if v.Kind == yaml.SequenceNode {
		for _, item := range v.Content {
			if err := w.merge(item, t, path); err != nil {
				return err
			}
		}
		return nil
	}
	return w.walk(v, t, path)
}

func kindWords(k yaml.Kind) string {
	switch k {
	case yaml.MappingNode:
		return "mapping"
	case yaml.SequenceNode:
		return "list"
	}
	return "document"
}

func joinPath(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// fieldAt returns the field path recorded at line: the deepest one, or
// their parent when several keys share the line (a flow mapping such as
// {kind: burst, requests: 10}), or "".
func fieldAt(lines map[string]int, line int) string {
	var at []string
	for f, l := range lines {
		if l == line && f != "" {
			at = append(at, f)
		}
	}
	sort.Strings(at)
	depth := func(f string) int { return strings.Count(f, ".") + strings.Count(f, "[") }
	best, n := "", 0
	for _, f := range at {
		switch d := depth(f); {
		case best == "" || d > depth(best):
			best, n = f, 1
		case d == depth(best):
			n++
		}
	}
	if n > 1 {
		if i := strings.LastIndexAny(best, ".["); i >= 0 {
			return best[:i]
		}
		return ""
	}
	return best
}

var (
	yamlLine = regexp.MustCompile(`^(?:yaml: )?line (\d+): (.*)$`)
	goType   = regexp.MustCompile(`into (\S+)$`)
)

// syntaxError turns a yaml error into an *Error at its line, the Go type it
// names in the file's words (types maps Go type names to them).
func syntaxError(file string, err error, types map[string]string) *Error {
	var te *yaml.TypeError
	msg := err.Error()
	if errors.As(err, &te) && len(te.Errors) > 0 {
		msg = te.Errors[0]
	}
	if m := goType.FindStringSubmatchIndex(msg); m != nil {
		if words, ok := types[msg[m[2]:m[3]]]; ok {
			msg = msg[:m[2]] + words
		}
	}
	if m := yamlLine.FindStringSubmatch(msg); m != nil {
		line, _ := strconv.Atoi(m[1])
		return &Error{File: file, Line: line, Err: errors.New(m[2])}
	}
	return &Error{File: file, Err: errors.New(strings.TrimPrefix(msg, "yaml: "))}
}
