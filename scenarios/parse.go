package scenarios

import (
	"bytes"
	"errors"
	"fmt"
	"github.com/rlbench/rlbench/scenarios/nearest"
	"io"
	"reflect"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// ErrInvalidScenario is wrapped by every error about a scenario's content.
var ErrInvalidScenario = errors.New("invalid scenario")

// ScenarioError is a fault in a scenario file: where it is and what is wrong.
// Line is 1-based and 0 when unknown; Field is the key's path, such as
// "traffic[2].rate", and empty when the fault is not one field's.
// errors.Is(err, ErrInvalidScenario) holds for every ScenarioError.
type ScenarioError struct {
	File  string
	Line  int
	Field string
	Err   error
}

// Error formats the fault as "FILE:LINE: FIELD: message".
func (e *ScenarioError) Error() string {
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

// Unwrap returns the underlying error.
func (e *ScenarioError) Unwrap() error { return e.Err }

// Is reports whether target is ErrInvalidScenario.
func (e *ScenarioError) Is(target error) bool { return target == ErrInvalidScenario }

// The raw types mirror the file; every key a file may hold is a yaml tag here,
// which is also the list unknown keys are matched against.

type rawScenario struct {
	Name        string        `yaml:"name"`
	Description string        `yaml:"description"`
	Seed        *int64        `yaml:"seed"`
	Redis       rawRedis      `yaml:"redis"`
	Target      rawTarget     `yaml:"target"`
	Identities  rawIdentities `yaml:"identities"`
	Traffic     []rawPhase    `yaml:"traffic"`
	Checks      rawChecks     `yaml:"checks"`
	Faults      []rawFault    `yaml:"faults"`
}

type rawFault struct {
	Kind     string `yaml:"kind"`
	At       string `yaml:"at"`
	Duration string `yaml:"duration"`
	Target   string `yaml:"target"`
	Latency  string `yaml:"latency"`
}

type rawSkew struct {
	Instance string `yaml:"instance"`
	Offset   string `yaml:"offset"`
}

type rawFaultChecks struct {
	Slack    string `yaml:"slack"`
	Recovery string `yaml:"recovery"`
}

type rawRedis struct {
	Provider string `yaml:"provider"`
	URL      string `yaml:"url"`
}

type rawTarget struct {
	Instances    int        `yaml:"instances"`
	External     []string   `yaml:"external"`
	Peer         string     `yaml:"peer"`
	Spread       string     `yaml:"spread"`
	Store        string     `yaml:"store"`
	FailureMode  string     `yaml:"failure_mode"`
	StoreTimeout string     `yaml:"store_timeout"`
	ClockSkew    []rawSkew  `yaml:"clock_skew"`
	Routes       []rawRoute `yaml:"routes"`
}

type rawRoute struct {
	Path     string   `yaml:"path"`
	Method   string   `yaml:"method"`
	Cost     *int64   `yaml:"cost"`
	Policies []string `yaml:"policies"`
}

type rawIdentities struct {
	Count          *int     `yaml:"count"`
	Distribution   string   `yaml:"distribution"`
	Share          *float64 `yaml:"share"`
	S              *float64 `yaml:"s"`
	Carry          string   `yaml:"carry"`
	Header         string   `yaml:"header"`
	SpoofForwarded bool     `yaml:"spoof_forwarded_for"`
}

type rawPhase struct {
	Kind            string      `yaml:"kind"`
	Name            string      `yaml:"name"`
	Rate            string      `yaml:"rate"`
	From            string      `yaml:"from"`
	To              string      `yaml:"to"`
	Duration        string      `yaml:"duration"`
	Requests        int         `yaml:"requests"`
	Spread          string      `yaml:"spread"`
	Offset          string      `yaml:"offset"`
	Window          string      `yaml:"window"`
	Routes          []rawWeight `yaml:"routes"`
	HonorRetryAfter bool        `yaml:"honor_retry_after"`
}

type rawWeight struct {
	Path   string   `yaml:"path"`
	Weight *float64 `yaml:"weight"`
}

type rawChecks struct {
	Budget          *rawBudget      `yaml:"budget"`
	FalseRejections *rawFalse       `yaml:"false_rejections"`
	Headers         bool            `yaml:"headers"`
	Overhead        *rawOverhead    `yaml:"overhead"`
	MaxLatency      string          `yaml:"max_latency"`
	LoadDelivered   *float64        `yaml:"load_delivered"`
	Faults          *rawFaultChecks `yaml:"faults"`
}

type rawBudget struct {
	MaxExcess int64 `yaml:"max_excess"`
}

type rawFalse struct {
	MaxRate *float64 `yaml:"max_rate"`
}

type rawOverhead struct {
	Route    string `yaml:"route"`
	Baseline string `yaml:"baseline"`
	P50      string `yaml:"p50"`
	P99      string `yaml:"p99"`
	P999     string `yaml:"p999"`
}

// Parse parses and validates one scenario. file names the source in error
// messages and in Scenario.Source. Errors are *ScenarioError values.
func Parse(file string, data []byte) (*Scenario, error) {
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, &ScenarioError{File: file, Err: errors.New("empty file")}
		}
		return nil, syntaxError(file, err)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		return nil, &ScenarioError{File: file, Line: extra.Line, Err: errors.New("more than one YAML document; a scenario file holds one")}
	}
	root := &doc
	if root.Kind == yaml.DocumentNode && len(root.Content) == 1 {
		root = root.Content[0]
	}
	if root.Kind != yaml.MappingNode {
		return nil, &ScenarioError{File: file, Line: root.Line, Err: errors.New("a scenario is a mapping of keys such as name, description, target and traffic")}
	}
	lines := map[string]int{"": root.Line}
	values := map[string]int{}
	if err := checkKeys(root, reflect.TypeFor[rawScenario](), "", lines, values); err != nil {
		err.File = file
		return nil, err
	}
	var raw rawScenario
	if err := root.Decode(&raw); err != nil {
		se := syntaxError(file, err)
		if se.Field = fieldAt(lines, se.Line); se.Field == "" {
			se.Field = fieldAt(values, se.Line)
		}
		return nil, se
	}
	v := &validator{file: file, lines: lines}
	s := v.scenario(&raw)
	if v.err != nil {
		return nil, v.err
	}
	s.Source = file
	return s, nil
}

var yamlLine = regexp.MustCompile(`^(?:yaml: )?line (\d+): (.*)$`)

// goTypes turns the Go types in yaml's messages into the file's words.
var goTypes = strings.NewReplacer(
	"into int64", "into a whole number",
	"into int", "into a whole number",
	"into float64", "into a number",
	"into bool", "into true or false",
	"into []string", "into a list of strings",
	"into string", "into a string",
)

var rawType = regexp.MustCompile(`into \[\]scenarios\.raw\w+|into scenarios\.raw\w+|into \*scenarios\.raw\w+`)

// fieldAt returns the field path recorded at line: the deepest one, or
// their parent when several keys share the line (a flow mapping such as
// {kind: burst, requests: 10}), or "".
func fieldAt(lines map[string]int, line int) string {
	var at []string
	for f, l := range lines {
		if l == line {
			at = append(at, f)
		}
	}
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

// syntaxError turns a yaml error into a ScenarioError, keeping its line.
func syntaxError(file string, err error) *ScenarioError {
	var te *yaml.TypeError
	msg := err.Error()
	if errors.As(err, &te) && len(te.Errors) > 0 {
		msg = te.Errors[0]
	}
	msg = rawType.ReplaceAllStringFunc(msg, func(s string) string {
		if strings.HasPrefix(s, "into []") {
			return "into a list"
		}
		return "into a mapping of keys"
	})
	msg = goTypes.Replace(msg)
	if m := yamlLine.FindStringSubmatch(msg); m != nil {
		line, _ := strconv.Atoi(m[1])
		return &ScenarioError{File: file, Line: line, Err: errors.New(m[2])}
	}
	return &ScenarioError{File: file, Err: errors.New(strings.TrimPrefix(msg, "yaml: "))}
}

// checkKeys walks node along type t, rejecting keys t has no field for and
// recording the line of every field path's key in lines and of its value in
// values.
func checkKeys(node *yaml.Node, t reflect.Type, path string, lines, values map[string]int) *ScenarioError {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Struct:
		if node.Kind != yaml.MappingNode {
			return nil // Decode reports the type mismatch
		}
		fields := map[string]reflect.Type{}
		var names []string
		for i := range t.NumField() {
			f := t.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
			fields[name] = f.Type
			names = append(names, name)
		}
		seen := map[string]bool{}
		for i := 0; i+1 < len(node.Content); i += 2 {
			k, v := node.Content[i], node.Content[i+1]
			fpath := joinPath(path, k.Value)
			ft, ok := fields[k.Value]
			if !ok {
				msg := fmt.Sprintf("unknown key %q", k.Value)
				if near := nearest.Word(k.Value, names); near != "" {
					msg += fmt.Sprintf("; did you mean %q?", near)
				} else {
					msg += "; valid keys are " + strings.Join(names, ", ")
				}
				return &ScenarioError{Line: k.Line, Field: fpath, Err: errors.New(msg)}
			}
			if seen[k.Value] {
				return &ScenarioError{Line: k.Line, Field: fpath, Err: errors.New("key given twice")}
			}
			seen[k.Value] = true
			lines[fpath] = k.Line
			values[fpath] = v.Line
			if err := checkKeys(v, ft, fpath, lines, values); err != nil {
				return err
			}
		}
	case reflect.Slice:
		if node.Kind != yaml.SequenceNode {
			return nil
		}
		for i, item := range node.Content {
			ipath := fmt.Sprintf("%s[%d]", path, i)
			lines[ipath] = item.Line
			if err := checkKeys(item, t.Elem(), ipath, lines, values); err != nil {
				return err
			}
		}
	}
	return nil
}

func joinPath(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}
