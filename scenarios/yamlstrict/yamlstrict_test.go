package yamlstrict

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/rlbench/rlbench/limiter"
)

type plan struct {
	Rate  float64 `yaml:"rate"`
	Burst int64   `yaml:"burst"`
}

type key struct {
	Name string `yaml:"name,omitempty"`
	plan `yaml:",inline"`
}

type route struct {
	Path   string          `yaml:"path"`
	Limits []limiter.Limit `yaml:"limits"`
}

type config struct {
	Name     string           `yaml:"name"`
	Count    int              `yaml:"count"`
	Shadow   bool             `yaml:"shadow"`
	Timeout  time.Duration    `yaml:"timeout"`
	Level    slog.Level       `yaml:"level"`
	Keys     []key            `yaml:"keys"`
	Routes   map[string]route `yaml:"routes"`
	Extra    []route          `yaml:"extra"`
	Optional *plan            `yaml:"optional"`
	ignored  string
	Skipped  string `yaml:"-"`
}

func TestDecodeErrors(t *testing.T) {
	tests := []struct {
		name, yaml, want string
	}{
		{"unknown key with suggestion", "name: a\ncuont: 3\n", `f.yaml:2: cuont: unknown key "cuont"; did you mean "count"?`},
		{"unknown key far from any", "zzzzzzzzzzzz: 1\n", `f.yaml:1: zzzzzzzzzzzz: unknown key "zzzzzzzzzzzz"; valid keys are name, count, shadow, timeout, level, keys, routes, extra, optional`},
		{"unknown key in an inline struct", "keys:\n  - name: k\n    brust: 3\n", `f.yaml:3: keys[0].brust: unknown key "brust"; did you mean "burst"?`},
		{"unknown key in a map value", "routes:\n  search:\n    pth: /s\n", `f.yaml:3: routes.search.pth: unknown key "pth"; did you mean "path"?`},
		{"unknown key behind a pointer", "optional:\n  rat: 1\n", `f.yaml:2: optional.rat: unknown key "rat"; did you mean "rate"?`},
		{"tag dash is no key", "Skipped: x\n", `f.yaml:1: Skipped: unknown key "Skipped"; valid keys are name, count, shadow, timeout, level, keys, routes, extra, optional`},
		{"key given twice", "name: a\nname: b\n", `f.yaml:2: name: key given twice`},
		{"key given twice in a map", "routes:\n  a: {path: /a}\n  a: {path: /b}\n", `f.yaml:3: routes.a: key given twice`},
		{"whole number", "count: three\n", "f.yaml:1: count: cannot unmarshal !!str `three` into a whole number"},
		{"true or false", "shadow: maybe\n", "f.yaml:1: shadow: cannot unmarshal !!str `maybe` into true or false"},
		{"duration", "timeout: 5 seconds\n", "f.yaml:1: timeout: cannot unmarshal !!str `5 seconds` into a duration such as 250ms or 5s"},
		{"list", "keys: {name: a}\n", "f.yaml:1: keys: cannot unmarshal !!map into a list"},
		{"mapping", "keys: [oops]\n", "f.yaml:1: keys[0]: cannot unmarshal !!str `oops` into a mapping of keys"},
		{"flow mapping names its parent", "extra:\n  - {path: /a, limits: 3}\n", "f.yaml:2: extra[0]: cannot unmarshal !!int `3` into a list"},
		{"limit refused at its place", "extra:\n  - path: /a\n    limits:\n      - gcra:10/1s\n      - gcra:10/1s,burts=2\n",
			`f.yaml:5: extra[0].limits[1]: invalid limit: unknown option "burts" in "gcra:10/1s,burts=2"; valid options are burst, start, idle, lease and name`},
		{"limit in a map value", "routes:\n  a:\n    limits: [\"gcra:ten/1s\"]\n", `f.yaml:3: routes.a.limits[0]: invalid limit: "gcra:ten/1s": rate "ten" is not a number`},
		{"limit given as a mapping", "extra:\n  - limits:\n      - {rate: 10}\n", "f.yaml:3: extra[0].limits[0]: want a single value, not a mapping"},
		{"level refused at its place", "name: a\nlevel: loud\n", `f.yaml:2: level: slog: level string "loud": unknown name`},
		{"syntax error", "name: a\n  count: 3\n", "f.yaml:2: mapping values are not allowed in this context"},
		{"empty", "# nothing\n", "f.yaml: empty file"},
		{"two documents", "name: a\n---\nname: b\n", "f.yaml:2: more than one YAML document; the file holds one"},
		{"not a mapping", "- a\n- b\n", "f.yaml:1: want a mapping of keys such as name, count, shadow, timeout"},
		{"unknown key in a merged anchor", "keys:\n  - &base {name: a, rte: 1}\n  - <<: *base\n", `f.yaml:2: keys[0].rte: unknown key "rte"; did you mean "rate"?`},
		// An anchor valid where it is written is checked again where an
		// alias or merge key uses it: the keys it brings must fit there too.
		{"alias brings a key the target lacks", "keys:\n  - &k {name: a, rate: 1}\noptional: *k\n", `f.yaml:2: optional.name: unknown key "name"; did you mean "rate"? (brought in by *k at line 3)`},
		{"merge brings a key the target lacks", "extra:\n  - &r {path: /a}\noptional:\n  <<: *r\n  rate: 1\n", `f.yaml:2: optional.path: unknown key "path"; did you mean "rate"? (brought in by <<: *r at line 4)`},
		{"merge list with a misspelled key", "keys:\n  - &a {rate: 1}\n  - &b {bursst: 2}\n", `f.yaml:3: keys[1].bursst: unknown key "bursst"; did you mean "burst"?`},
		{"merge of a list of anchors", "extra:\n  - &a {path: /a}\nkeys:\n  - <<: [*a]\n    rate: 1\n", `f.yaml:2: keys[0].path: unknown key "path"; did you mean "rate"? (brought in by <<: *a at line 4)`},
		{"nested merge", "keys:\n  - &a {rate: 1}\nextra:\n  - &b {<<: *a, path: /b}\n", `f.yaml:2: extra[0].rate: unknown key "rate"; did you mean "path"? (brought in by <<: *a at line 4)`},
		{"alias as a key stands for its anchor", "keys:\n  - {&k name: a}\nextra:\n  - {*k : b}\n", `f.yaml:4: extra[0].name: unknown key "name"; valid keys are path, limits`},
		{"alias key given twice", "keys:\n  - {&k name: a, *k : b}\n", `f.yaml:2: keys[0].name: key given twice`},
		{"fraction into a whole number", "count: 10.9\n", `f.yaml:1: count: 10.9: want a whole number, not a fraction; write 10 or 11`},
		{"negative fraction", "keys:\n  - {burst: -0.5}\n", `f.yaml:2: keys[0].burst: -0.5: want a whole number, not a fraction; write -1 or -0`},
		{"minus infinity into a whole number", "count: -.inf\n", `f.yaml:1: count: -.inf: want a whole number, not NaN or an infinity`},
		{"NaN into a whole number", "count: .NaN\n", `f.yaml:1: count: .NaN: want a whole number, not NaN or an infinity`},
		{"NaN into a number", "keys:\n  - {rate: .nan}\n", `f.yaml:2: keys[0].rate: .nan: want a finite number, not NaN or an infinity`},
		{"infinity into a number", "optional: {rate: .inf}\n", `f.yaml:1: optional.rate: .inf: want a finite number, not NaN or an infinity`},
		{"NaN through an alias", "keys:\n  - {name: &n .nan}\ncount: *n\n", `f.yaml:2: count: .nan: want a whole number, not NaN or an infinity (brought in by *n at line 3)`},
		{"NaN through a merge", "keys:\n  - &a {name: x}\n  - <<: &b {rate: -.Inf}\n", `f.yaml:3: keys[1].rate: -.Inf: want a finite number, not NaN or an infinity`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var c config
			_, err := Decode("f.yaml", []byte(tt.yaml), &c)
			if err == nil {
				t.Fatalf("Decode accepted %q: %+v", tt.yaml, c)
			}
			if got := err.Error(); got != tt.want {
				t.Fatalf("error:\n got %s\nwant %s", got, tt.want)
			}
			var e *Error
			if !errors.As(err, &e) || e.File != "f.yaml" {
				t.Fatalf("error %T is not an *Error for f.yaml", err)
			}
			if !errors.Is(err, ErrInvalid) {
				t.Fatal("errors.Is(err, ErrInvalid) = false")
			}
		})
	}
}

// TestDecodeNumbers: whole numbers written as floats without a fraction
// are whole numbers; ordinary numbers decode as written.
func TestDecodeNumbers(t *testing.T) {
	var c config
	if _, err := Decode("f.yaml", []byte("count: 1e3\nkeys:\n  - {rate: 2.5, burst: 10.0}\n  - {rate: -1e-3, burst: 0x10}\n"), &c); err != nil {
		t.Fatal(err)
	}
	checks := []struct {
		name      string
		got, want any
	}{
		{"Count", c.Count, 1000},
		{"Keys[0].Rate", c.Keys[0].Rate, 2.5},
		{"Keys[0].Burst", c.Keys[0].Burst, int64(10)},
		{"Keys[1].Rate", c.Keys[1].Rate, -1e-3},
		{"Keys[1].Burst", c.Keys[1].Burst, int64(16)},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
}

// TestDecodeRefusesAliasBombs: merge keys nested ten deep, each bringing
// in the level below ten times (the "billion laughs"), expand to 10^9
// mappings; Decode refuses them at once instead of walking them all.
func TestDecodeRefusesAliasBombs(t *testing.T) {
	var b strings.Builder
	b.WriteString("keys:\n  - &a0 {name: x}\n")
	for i := 1; i < 10; i++ {
		fmt.Fprintf(&b, "  - &a%d\n    <<: [", i)
		for j := range 10 {
			if j > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "*a%d", i-1)
		}
		b.WriteString("]\n")
	}
	start := time.Now()
	var c config
	_, err := Decode("f.yaml", []byte(b.String()), &c)
	if err == nil {
		t.Fatal("Decode accepted a billion laughs")
	}
	if got, want := err.Error(), "through its aliases"; !strings.Contains(got, want) || !errors.Is(err, ErrInvalid) {
		t.Fatalf("error = %v, want an *Error saying the document expands too far through its aliases", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("Decode took %v to refuse it", d)
	}
}

func TestDecodeUnwrapsTheCause(t *testing.T) {
	var c config
	_, err := Decode("f.yaml", []byte("extra:\n  - limits: [\"gcra:0/1s\"]\n"), &c)
	if !errors.Is(err, limiter.ErrInvalidLimit) {
		t.Fatalf("errors.Is(%v, limiter.ErrInvalidLimit) = false", err)
	}
	if _, err := Decode("f.yaml", nil, &c); !errors.Is(err, ErrEmpty) {
		t.Fatalf("empty input: error = %v, want ErrEmpty", err)
	}
}

func TestDecodeValuesAndLines(t *testing.T) {
	data := []byte(`# a comment
name: a
count: 3
timeout: 250ms
level: warn
keys:
  - &base
    name: k1
    rate: 1.5
    burst: 2
  - <<: *base
    name: k2
routes:
  search:
    path: /s
    limits: ["gcra:10/1s,burst=5", "fixed_window:100/min"]
`)
	var c config
	doc, err := Decode("f.yaml", data, &c)
	if err != nil {
		t.Fatal(err)
	}
	gcra := limiter.Limit{Algorithm: limiter.GCRA, Rate: 10, Period: time.Second, Burst: 5}
	fixed := limiter.Window(limiter.FixedWindow, 100, time.Minute)
	checks := []struct {
		name      string
		got, want any
	}{
		{"Name", c.Name, "a"},
		{"Count", c.Count, 3},
		{"Timeout", c.Timeout, 250 * time.Millisecond},
		{"Level", c.Level, slog.LevelWarn},
		{"Keys", len(c.Keys), 2},
		{"Keys[1].Name", c.Keys[1].Name, "k2"},
		{"Keys[1].Burst (merged)", c.Keys[1].Burst, int64(2)},
		{"Routes.search.Limits[0]", c.Routes["search"].Limits[0], gcra},
		{"Routes.search.Limits[1]", c.Routes["search"].Limits[1], fixed},
		{"Line(name)", doc.Line("name"), 2},
		{"Line(keys[1])", doc.Line("keys[1]"), 11},
		{"Line(keys[0].burst)", doc.Line("keys[0].burst"), 10},
		{"Line(routes.search.limits[1])", doc.Line("routes.search.limits"), 16},
		{"Line of a missing field is its parent's", doc.Line("routes.search.cost"), 14},
		{"Line of a missing top-level field is the document's", doc.Line("shadow"), 2},
		{"Has(count)", doc.Has("count"), true},
		{"Has(shadow)", doc.Has("shadow"), false},
		{"File", doc.File(), "f.yaml"},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
	err = doc.Errorf("routes.search.cost", "%d is negative: %w", -1, limiter.ErrInvalidLimit)
	if got, want := err.Error(), "f.yaml:14: routes.search.cost: -1 is negative: invalid limit"; got != want {
		t.Errorf("Errorf = %q, want %q", got, want)
	}
	if !errors.Is(err, limiter.ErrInvalidLimit) || !errors.Is(err, ErrInvalid) {
		t.Errorf("Errorf's error does not match both its cause and ErrInvalid")
	}
	var nilDoc *Doc
	if got, want := nilDoc.Errorf("store", "unknown").Error(), "store: unknown"; got != want {
		t.Errorf("nil Doc Errorf = %q, want %q", got, want)
	}
	if got, want := NewDoc("(flags)").Errorf("store", "unknown").Error(), "(flags): store: unknown"; got != want {
		t.Errorf("NewDoc Errorf = %q, want %q", got, want)
	}
}

// FuzzDecode: no input makes Decode panic, and every error is an *Error
// naming the file.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{"name: a\n", "keys:\n  - {name: k, rate: 1}\n", "routes: {a: {limits: [\"gcra:1/1s\"]}}", "- x", "a: &x [*x]", ""} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var c config
		_, err := Decode("fuzz.yaml", data, &c)
		var e *Error
		if err != nil && (!errors.As(err, &e) || e.File != "fuzz.yaml") {
			t.Fatalf("error %v (%T) is not an *Error for fuzz.yaml", err, err)
		}
	})
}
