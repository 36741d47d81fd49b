package reports

import (
	"bytes"
	"errors"
	"flag"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/html"

	"github.com/rlbench/rlbench/harness/checker"
	"github.com/rlbench/rlbench/harness/history"
	"github.com/rlbench/rlbench/harness/runrecord"
	"github.com/rlbench/rlbench/limiter"
)

var update = flag.Bool("update", false, "rewrite the golden report and the shipped run under testdata/")

const (
	goldenReport = "testdata/report.golden.html"
	shippedRun   = "testdata/run"
)

func render(t *testing.T, dir string) []byte {
	t.Helper()
	run, err := LoadRun(dir)
	if err != nil {
		t.Fatalf("LoadRun: %v", err)
	}
	var buf bytes.Buffer
	if err := WriteHTML(&buf, run); err != nil {
		t.Fatalf("WriteHTML: %v", err)
	}
	return buf.Bytes()
}

// TestGolden renders the fixed, seeded synthetic run and compares the page
// with the golden file; -update rewrites it and the shipped copy of the run.
func TestGolden(t *testing.T) {
	dir := t.TempDir()
	writeSynthRun(t, dir, goldenScenarios)
	got := render(t, dir)
	if again := render(t, dir); !bytes.Equal(got, again) {
		t.Fatal("two renderings of one run differ")
	}
	if *update {
		if err := os.WriteFile(goldenReport, got, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.RemoveAll(shippedRun); err != nil {
			t.Fatal(err)
		}
		writeSynthRun(t, shippedRun, goldenScenarios)
	}
	want, err := os.ReadFile(goldenReport)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("report differs from %s (%d bytes, want %d); inspect and run with -update", goldenReport, len(got), len(want))
	}
	if shipped := render(t, shippedRun); !bytes.Equal(shipped, want) {
		t.Fatalf("the run in %s renders differently from %s; run with -update", shippedRun, goldenReport)
	}
}

// element returns the elements of the tree under n for which keep is true.
func elements(n *html.Node, keep func(*html.Node) bool) []*html.Node {
	var out []*html.Node
	for c := range n.Descendants() {
		if c.Type == html.ElementNode && keep(c) {
			out = append(out, c)
		}
	}
	return out
}

func attr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val
		}
	}
	return ""
}

// attrOK returns the attribute key of n and whether n has it.
func attrOK(n *html.Node, key string) (string, bool) {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val, true
		}
	}
	return "", false
}

func hasClass(n *html.Node, class string) bool {
	return strings.Contains(" "+attr(n, "class")+" ", " "+class+" ")
}

func parse(t *testing.T, page []byte) *html.Node {
	t.Helper()
	doc, err := html.Parse(bytes.NewReader(page))
	if err != nil {
		t.Fatalf("the page does not parse: %v", err)
	}
	return doc
}

// TestPageStructure checks what the golden comparison cannot say: the page
// loads nothing, every chart is drawn, and failures come first with their
// proofs one click away.
func TestPageStructure(t *testing.T) {
	dir := t.TempDir()
	writeSynthRun(t, dir, goldenScenarios)
	page := render(t, dir)
	doc := parse(t, page)

	for _, scheme := range []string{"http://", "https://", "//fonts", "url("} {
		if i := bytes.Index(page, []byte(scheme)); i >= 0 {
			t.Errorf("the page holds %q at byte %d: %q", scheme, i, page[max(0, i-60):min(len(page), i+60)])
		}
	}
	for _, tag := range []string{"script", "link", "img", "iframe", "object", "embed", "image"} {
		if n := elements(doc, func(n *html.Node) bool { return n.Data == tag }); len(n) > 0 {
			t.Errorf("the page has %d <%s> elements", len(n), tag)
		}
	}
	for _, n := range elements(doc, func(*html.Node) bool { return true }) {
		for _, a := range n.Attr {
			if (a.Key == "href" || a.Key == "src" || a.Key == "xlink:href") && !strings.HasPrefix(a.Val, "#") {
				t.Errorf("<%s %s=%q> leaves the page", n.Data, a.Key, a.Val)
			}
		}
	}

	ids := map[string]bool{}
	for _, n := range elements(doc, func(n *html.Node) bool { return attr(n, "id") != "" }) {
		if ids[attr(n, "id")] {
			t.Errorf("id %q appears twice", attr(n, "id"))
		}
		ids[attr(n, "id")] = true
	}
	for _, a := range elements(doc, func(n *html.Node) bool { return n.Data == "a" }) {
		if href := attr(a, "href"); !ids[strings.TrimPrefix(href, "#")] {
			t.Errorf("link %q points to no element", href)
		}
	}

	for _, sc := range goldenScenarios {
		for _, part := range []string{"outcomes", "budget-0", "instances", "latency", "overhead", "retry-after"} {
			id := anchor(sc.name, part)
			figs := elements(doc, func(n *html.Node) bool { return n.Data == "figure" && attr(n, "id") == id })
			if len(figs) != 1 {
				t.Errorf("%s: %d figures with id %s, want 1", sc.name, len(figs), id)
				continue
			}
			svgs := elements(figs[0], func(n *html.Node) bool { return n.Data == "svg" })
			if len(svgs) != 1 {
				t.Errorf("%s: figure %s has %d svg, want 1 (missing: %v)", sc.name, id, len(svgs), len(elements(figs[0], func(n *html.Node) bool { return hasClass(n, "missing") })) > 0)
				continue
			}
			marks := elements(svgs[0], func(n *html.Node) bool { return n.Data == "path" || n.Data == "text" })
			if len(marks) < 20 || attr(svgs[0], "viewBox") == "" {
				t.Errorf("%s: chart %s is empty: %d marks, viewBox %q", sc.name, id, len(marks), attr(svgs[0], "viewBox"))
			}
		}
	}

	table := elements(doc, func(n *html.Node) bool { return n.Data == "table" && hasClass(n, "checks") })
	if len(table) != 1 {
		t.Fatalf("%d check tables, want 1", len(table))
	}
	rows := elements(table[0], func(n *html.Node) bool { return n.Data == "tr" && attr(n, "class") != "" })
	firstPass, lastFail := -1, -1
	for i, r := range rows {
		switch attr(r, "class") {
		case "pass":
			if firstPass < 0 {
				firstPass = i
			}
		case "fail", "unknown":
			lastFail = i
			details := elements(r, func(n *html.Node) bool { return n.Data == "details" })
			if attr(r, "class") == "fail" && len(details) == 0 {
				t.Errorf("failed check in row %d has no proof details", i)
			}
			for _, d := range details {
				if _, open := attrOK(d, "open"); open != (i == 0) {
					t.Errorf("proof in row %d open = %v, want only the first failure's open", i, open)
				}
			}
		}
	}
	if lastFail < 0 || firstPass < 0 {
		t.Fatalf("want failing and passing checks in the golden run; last failing row %d, first passing %d", lastFail, firstPass)
	}
	if lastFail > firstPass {
		t.Errorf("a failing check (row %d) comes after a passing one (row %d)", lastFail, firstPass)
	}
}

// TestMissingData renders runs lacking parts and checks that each chart
// without data is replaced by one line saying why, never an empty frame.
func TestMissingData(t *testing.T) {
	one := []synthScenario{goldenScenarios[1]}
	name := one[0].name
	tests := []struct {
		name    string
		mutate  func(t *testing.T, dir string)
		missing map[string]string // chart part -> text the line must hold
	}{
		{
			name:   "no run.json",
			mutate: func(t *testing.T, dir string) { remove(t, filepath.Join(dir, RunFile)) },
			missing: map[string]string{
				"latency": "No latency distribution", "overhead": "No latency distribution",
			},
		},
		{
			name:   "no history",
			mutate: func(t *testing.T, dir string) { remove(t, filepath.Join(dir, name, "history.jsonl.gz")) },
			missing: map[string]string{
				"outcomes": "no history was recorded", "budget": "no history was recorded",
				"instances": "no history was recorded", "retry-after": "no history was recorded",
			},
		},
		{
			name: "empty history",
			mutate: func(t *testing.T, dir string) {
				w, err := history.Create(filepath.Join(dir, name, "history.jsonl.gz"), history.NewHeader(synthStart))
				if err != nil {
					t.Fatal(err)
				}
				if err := w.Close(); err != nil {
					t.Fatal(err)
				}
			},
			missing: map[string]string{
				"outcomes": "holds no requests", "instances": "holds no requests",
				"retry-after": "No request was rejected", "budget": "No request was admitted",
			},
		},
		{
			name: "no baseline",
			mutate: func(t *testing.T, dir string) {
				rr := readRunRecord(t, dir)
				rr.Scenarios[0].Routes = rr.Scenarios[0].Routes[:1]
				delete(rr.Scenarios[0].Latency, "/v1/baseline")
				writeRunRecord(t, dir, rr)
			},
			missing: map[string]string{"overhead": "baseline route"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			writeSynthRun(t, dir, one)
			tt.mutate(t, dir)
			doc := parse(t, render(t, dir))
			for _, fig := range elements(doc, func(n *html.Node) bool { return n.Data == "figure" }) {
				id := attr(fig, "id")
				missing := elements(fig, func(n *html.Node) bool { return hasClass(n, "missing") })
				svgs := elements(fig, func(n *html.Node) bool { return n.Data == "svg" })
				if len(missing)+len(svgs) != 1 {
					t.Errorf("figure %s: %d svg and %d missing lines, want exactly one of them", id, len(svgs), len(missing))
				}
				for part, want := range tt.missing {
					if !strings.HasPrefix(id, anchor(name, part)) {
						continue
					}
					if len(missing) != 1 {
						t.Errorf("figure %s is drawn, want the line %q", id, want)
						continue
					}
					if got := text(missing[0]); !strings.Contains(got, want) {
						t.Errorf("figure %s says %q, want it to contain %q", id, got, want)
					}
				}
			}
		})
	}
}

func text(n *html.Node) string {
	var b strings.Builder
	for c := range n.Descendants() {
		if c.Type == html.TextNode {
			b.WriteString(c.Data)
		}
	}
	return b.String()
}

func remove(t *testing.T, path string) {
	t.Helper()
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
}

func readRunRecord(t *testing.T, dir string) *runrecord.RunRecord {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, RunFile))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rr, err := runrecord.Read(f)
	if err != nil {
		t.Fatal(err)
	}
	return rr
}

func writeRunRecord(t *testing.T, dir string, rr *runrecord.RunRecord) {
	t.Helper()
	f, err := os.Create(filepath.Join(dir, RunFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := rr.Write(f); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestLoadRunErrors(t *testing.T) {
	tests := []struct {
		name  string
		files map[string]string
		is    error
		want  string
	}{
		{name: "no summary", files: map[string]string{}, is: fs.ErrNotExist},
		{name: "bad summary schema", files: map[string]string{SummaryFile: `{"schema":"other/v9"}`}, want: "schema"},
		{name: "bad run.json", files: map[string]string{SummaryFile: `{"schema":"rlbench-summary/v1"}`, RunFile: `{"schema":"x"}`}, want: "run record"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			for name, body := range tt.files {
				if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			_, err := LoadRun(dir)
			if err == nil {
				t.Fatal("LoadRun succeeded, want an error")
			}
			if tt.is != nil && !errors.Is(err, tt.is) {
				t.Errorf("LoadRun error %v, want one wrapping %v", err, tt.is)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("LoadRun error %q, want it to mention %q", err, tt.want)
			}
		})
	}
}

func TestWriteRunDir(t *testing.T) {
	dir := t.TempDir()
	writeSynthRun(t, dir, goldenScenarios[:1])
	if err := WriteRunDir(dir); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(dir, ReportFile))
	if err != nil {
		t.Fatal(err)
	}
	if want := render(t, dir); !bytes.Equal(got, want) {
		t.Fatal("report.html differs from WriteHTML's output")
	}
}

// TestBins checks the timeline's pairwise merging against direct sums.
func TestBins(t *testing.T) {
	tests := []struct {
		name  string
		width int64
		times []int64
	}{
		{"within the first span", 10, []int64{0, 5, 9, 10, 2399}},
		{"one doubling", 10, []int64{0, 15, 2400, 4799}},
		{"many doublings", 1, []int64{3, 1_000_000, 7, 999_999_999}},
		{"negative time", 10, []int64{-5, 0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tl := timeline{width: tt.width}
			var b bins
			for _, ns := range tt.times {
				tl.fit(ns)
				b.add(&tl, ns, 1)
			}
			b.sync(&tl)
			want := make([]int64, displayBins)
			for _, ns := range tt.times {
				want[tl.index(ns)]++
			}
			for i := range want {
				if b.v[i] != want[i] {
					t.Fatalf("bin %d (width %d) = %d, want %d", i, tl.width, b.v[i], want[i])
				}
			}
		})
	}
}

func TestRetrySampleIsBounded(t *testing.T) {
	rd := retryDigest{flagged: map[uint64]bool{7: true}, stride: 1}
	var k keyDigest
	for i := range uint64(10 * maxScatter) {
		rd.add(&history.Record{ID: 2*i + 1, Key: "k", Outcome: history.Rejected, SentNs: int64(i) * 10, ReceivedNs: int64(i)*10 + 1,
			Headers: map[string]string{"retry-after": "1"}}, &k)
		rd.add(&history.Record{ID: 2*i + 2, Key: "k", Outcome: history.Admitted, SentNs: int64(i)*10 + 5, ReceivedNs: int64(i)*10 + 6}, &k)
	}
	if got := len(rd.points); got > maxScatter || got < maxScatter/2 {
		t.Errorf("kept %d points, want between %d and %d", got, maxScatter/2, maxScatter)
	}
	if got, want := len(rd.marked), 1; got != want {
		t.Errorf("marked points = %d, want %d", got, want)
	}
	if got, want := rd.points[1].wait, 4e-9; got != want {
		t.Errorf("wait = %v, want %v", got, want)
	}
}

// Keep the synthetic run's vocabulary honest: its checks must be the
// checker's, with a failure to render first.
func TestGoldenRunHasFailure(t *testing.T) {
	dir := t.TempDir()
	writeSynthRun(t, dir, goldenScenarios)
	run, err := LoadRun(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := run.Summary.Verdict, checker.Fail; got != want {
		t.Fatalf("verdict = %s, want %s", got, want)
	}
	if run.Record.Meta.Start.IsZero() || run.Record.Meta.Duration < time.Second {
		t.Fatalf("run.json meta = %+v", run.Record.Meta)
	}
}

func TestWindowPeaks(t *testing.T) {
	tests := []struct {
		name               string
		windows            map[int64]int64
		first, last, group int64
		want               []int64
	}{
		{"one per window", map[int64]int64{10: 3, 12: 5}, 10, 13, 1, []int64{3, 0, 5, 0}},
		{"largest of each pair", map[int64]int64{10: 3, 11: 7, 12: 5, 13: 1}, 10, 13, 2, []int64{7, 5}},
		{"a short last group", map[int64]int64{10: 3, 14: 9}, 10, 14, 4, []int64{3, 9}},
		{"outside the span", map[int64]int64{9: 30, 15: 30, 11: 2}, 10, 14, 1, []int64{0, 2, 0, 0, 0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := windowPeaks(tt.windows, tt.first, tt.last, tt.group); !slices.Equal(got, tt.want) {
				t.Errorf("windowPeaks = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestDataIsText renders a run whose keys are markup and URLs: they must
// come out as text, in tables and in the charts alike.
func TestDataIsText(t *testing.T) {
	hostile := `<script>alert(1)</script><img src="https://example.com/x.png">`
	sc := goldenScenarios[1]
	sc.keyPrefix = hostile
	dir := t.TempDir()
	writeSynthRun(t, dir, []synthScenario{sc})
	page := render(t, dir)
	doc := parse(t, page)
	for _, tag := range []string{"script", "img"} {
		if n := elements(doc, func(n *html.Node) bool { return n.Data == tag }); len(n) > 0 {
			t.Errorf("a key became %d <%s> elements", len(n), tag)
		}
	}
	var inChart, inText bool
	for c := range doc.Descendants() {
		if c.Type == html.TextNode && strings.Contains(c.Data, hostile) {
			inText = true
			for p := c.Parent; p != nil; p = p.Parent {
				inChart = inChart || p.Data == "svg"
			}
		}
	}
	if !inText || !inChart {
		t.Errorf("the key shows as text: %v, in a chart: %v; want both", inText, inChart)
	}
}

// TestExcused holds the digest to the budget check's excusal of a drill's
// requests: answered after the fault began and sent before its recovery
// ended, on the faulted instance when it names one.
func TestExcused(t *testing.T) {
	store := excusedWindow{kind: "redis_kill", fromNs: 3e9, toNs: 5e9, recoveryNs: 2e9}
	inst := excusedWindow{kind: "instance_kill", instance: "instance-2", fromNs: 3e9, toNs: 5e9, recoveryNs: 2e9}
	open := excusedWindow{kind: "redis_pause", fromNs: 3e9}
	tests := []struct {
		name           string
		w              excusedWindow
		instance       string
		sentNs, recvNs int64
		want           bool
	}{
		{"before the fault", store, "instance-1", 1e9, 2.9e9, false},
		{"sent before, answered during", store, "instance-1", 2.9e9, 3.1e9, true},
		{"during the recovery", store, "instance-1", 6.9e9, 6.95e9, true},
		{"sent after the recovery", store, "instance-1", 7.1e9, 7.2e9, false},
		{"another instance's fault", inst, "instance-1", 4e9, 4.1e9, false},
		{"the faulted instance", inst, "instance-2", 4e9, 4.1e9, true},
		{"a fault never healed", open, "instance-1", 9e9, 9.1e9, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &history.Record{Instance: tt.instance, SentNs: tt.sentNs, ReceivedNs: tt.recvNs}
			if got := tt.w.excuses(r); got != tt.want {
				t.Errorf("excuses(sent %d, received %d on %s) = %v, want %v", tt.sentNs, tt.recvNs, tt.instance, got, tt.want)
			}
		})
	}

	segs := []struct {
		name    string
		windows []excusedWindow
		want    [][2]int64
	}{
		{"no drill", nil, [][2]int64{{0, 10e9}}},
		{"one fault", []excusedWindow{store}, [][2]int64{{0, 3e9}, {7e9, 10e9}}},
		{"an instance fault cuts nothing", []excusedWindow{inst}, [][2]int64{{0, 10e9}}},
		{"overlapping faults merge", []excusedWindow{store, {fromNs: 4e9, toNs: 6e9, recoveryNs: 2e9}}, [][2]int64{{0, 3e9}, {8e9, 10e9}}},
		{"to the end", []excusedWindow{open}, [][2]int64{{0, 3e9}}},
	}
	for _, tt := range segs {
		t.Run("segments/"+tt.name, func(t *testing.T) {
			d := &digest{lastNs: 10e9, excused: tt.windows}
			if got := d.segments(); !slices.Equal(got, tt.want) {
				t.Errorf("segments = %v, want %v", got, tt.want)
			}
		})
	}
}

// figure returns the figure of scenario's chart part in doc, and its text.
func figure(t *testing.T, doc *html.Node, scenario, part string) string {
	t.Helper()
	figs := elements(doc, func(n *html.Node) bool { return n.Data == "figure" && attr(n, "id") == anchor(scenario, part) })
	if len(figs) != 1 {
		t.Fatalf("%d figures %s of %s, want 1", len(figs), part, scenario)
	}
	return text(figs[0])
}

// TestChartsSayWhatTheyDraw holds titles, captions and axis labels to what
// each chart draws: the excused interval of a drill, a baseline only when
// there is one, the last percentile drawn, one instance as one instance.
func TestChartsSayWhatTheyDraw(t *testing.T) {
	dir := t.TempDir()
	writeSynthRun(t, dir, goldenScenarios)
	doc := parse(t, render(t, dir))

	drill := figure(t, doc, "gcra-kill-open", "budget-0")
	for _, want := range []string{"excused: fault + recovery", "Shaded: the drill's excused interval (redis_kill from 3 s, healed at 5 s, plus the 2 s recovery bound, to 7 s)", "start afresh"} {
		if !strings.Contains(drill, want) {
			t.Errorf("the drill's budget chart lacks %q:\n%s", want, drill)
		}
	}
	if plain := figure(t, doc, "shared-gcra", "budget-0"); strings.Contains(plain, "excused") {
		t.Errorf("a scenario without a drill mentions an excused interval:\n%s", plain)
	}

	lat := figure(t, doc, "shared-gcra", "latency")
	if !strings.Contains(lat, "with and without the limiter") || !strings.Contains(lat, "dashed: baseline routes") {
		t.Errorf("latency chart with a baseline route:\n%s", lat)
	}
	if !regexp.MustCompile(`99\.\d+%`).MatchString(lat) {
		t.Errorf("the percentile axis stops at a whole nine though the curve goes on:\n%s", lat)
	}

	one := goldenScenarios[0]
	one.instances = []string{"instance-1"}
	dir = t.TempDir()
	writeSynthRun(t, dir, []synthScenario{one})
	rr := readRunRecord(t, dir)
	rr.Scenarios[0].Routes = rr.Scenarios[0].Routes[:1]
	delete(rr.Scenarios[0].Latency, one.baseline)
	writeRunRecord(t, dir, rr)
	doc = parse(t, render(t, dir))
	lat = figure(t, doc, one.name, "latency")
	for _, bad := range []string{"with and without", "Dashed", "dashed"} {
		if strings.Contains(lat, bad) {
			t.Errorf("latency chart without a baseline route says %q:\n%s", bad, lat)
		}
	}
	inst := figure(t, doc, one.name, "instances")
	if strings.Contains(inst, "shared") || !strings.Contains(inst, "One instance, instance-1,") {
		t.Errorf("one instance's chart:\n%s", inst)
	}
}

func TestNinesLabel(t *testing.T) {
	for _, tt := range []struct {
		x    float64
		want string
	}{{0.5, "68%"}, {1.5, "96.8%"}, {2.7, "99.80%"}, {2.732, "99.81%"}, {3.5, "99.968%"}} {
		if got := ninesLabel(tt.x); got != tt.want {
			t.Errorf("ninesLabel(%v) = %q, want %q", tt.x, got, tt.want)
		}
	}
}

func TestVersionLabel(t *testing.T) {
	for _, tt := range []struct{ version, commit, want string }{
		{"v0.9.0", "4f2c1e7", "v0.9.0 4f2c1e7"},
		{"v0.0.0-20261130200520-1b8651ffbfe0", "1b8651ffbfe08b2ed99ecba1a30e4835ec71ab0f", "commit 1b8651ffbfe0"},
		{"v0.9.1-0.20261130200520-1b8651ffbfe0+dirty", "1b8651ffbfe08b2ed99ecba1a30e4835ec71ab0f+dirty", "commit 1b8651ffbfe0+dirty"},
		{"devel", "unknown", "devel"},
		{"v1.2.3", "", "v1.2.3"},
	} {
		if got := versionLabel(tt.version, tt.commit); got != tt.want {
			t.Errorf("versionLabel(%q, %q) = %q, want %q", tt.version, tt.commit, got, tt.want)
		}
	}
}

func TestShortCommit(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"5830657d6ad730bbae09cc47162fe795f3066087", "5830657d6ad7"},
		{"5830657d6ad730bbae09cc47162fe795f3066087+dirty", "5830657d6ad7+dirty"},
		{"4f2c1e7", "4f2c1e7"},
		{"unknown", ""},
		{"", ""},
	} {
		if got := shortCommit(tt.in); got != tt.want {
			t.Errorf("shortCommit(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// TestChartsDrawTheClaim draws the budget the checks held a route to: the
// history header's policies (a claim from `rlbench run --claim`), not the
// policies run.json says the instances enforced, and a failed budget only
// on the chart of the limit it broke.
func TestChartsDrawTheClaim(t *testing.T) {
	sc := goldenScenarios[1]
	dir := t.TempDir()
	writeSynthRun(t, dir, []synthScenario{sc})
	rr := readRunRecord(t, dir)
	rr.Scenarios[0].Routes[0].Limits = []string{"token_bucket:100/1s,burst=50"}
	writeRunRecord(t, dir, rr)
	doc := parse(t, render(t, dir))
	got := figure(t, doc, sc.name, "budget-0")
	if !strings.Contains(got, "10 req/s (burst 5, token bucket)") || strings.Contains(got, "100 req/s") || !strings.Contains(got, "violation interval") {
		t.Errorf("budget chart of a claimed route:\n%s", got)
	}

	burst9, burst10 := mustParse(t, "gcra:10/1s,burst=9"), mustParse(t, "token_bucket:10/1s,burst=10")
	checks := []checker.Result{
		{Name: checker.CheckBudget, Scope: limitScope(burst9), Verdict: checker.Fail},
		{Name: checker.CheckBudget, Scope: limitScope(burst10), Verdict: checker.Pass},
		{Name: checker.CheckRetryAfter, Verdict: checker.Fail},
	}
	rd := &routeDigest{limits: []limiter.Limit{burst10}}
	own := rd.ownChecks(checks)
	if len(own) != 2 || own[0].Scope != limitScope(burst10) || own[1].Name != checker.CheckRetryAfter {
		t.Errorf("ownChecks of %s = %+v, want its own budget and the retry-after check", burst10, own)
	}
}

func mustParse(t *testing.T, spec string) limiter.Limit {
	t.Helper()
	l, err := limiter.ParseLimit(spec)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// TestReportHarnessErrorAndSkips: the header shows the run's status (ERROR
// when only the harness failed), the scenarios by status with the skipped
// ones, and a harness check's row apart from a limiter's failure.
func TestReportHarnessErrorAndSkips(t *testing.T) {
	dir := t.TempDir()
	s := checker.NewSummary(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	s.AddReport("busy", &checker.Report{Counts: checker.Counts{Records: 10, Keys: 8, ProbeKeys: 1, Admitted: 10}, Results: []checker.Result{
		{Name: checker.CheckBudget, Verdict: checker.Pass, Observed: 1, Bound: 10, Unit: "units"},
		{Name: checker.CheckLoadDelivered, Verdict: checker.Fail, Observed: 0.83, Bound: 0.95, Unit: "fraction"},
	}})
	s.AddSkipped("peer-nginx-delay", "nginx is not installed: apt-get install nginx")
	if err := s.WriteFile(filepath.Join(dir, SummaryFile)); err != nil {
		t.Fatal(err)
	}
	page := string(render(t, dir))
	for _, want := range []string{
		`<span class="badge error">⚠ ERROR</span>`,
		`<p class="counts">2 scenarios: 1 harness error, 1 skipped. Checks: 0 failed, 0 unknown, 1 harness error, 1 passed.</p>`,
		`<p class="problem">` + HarnessErrorNote + `</p>`,
		`<tr class="error"><td class="verdict">⚠ ERROR</td><td><a href="#s-busy">busy</a></td><td>load-delivered</td>`,
		`<td>budget</td><td class="num">1</td><td class="num">10</td><td>unit</td>`,
		`<tr class="skipped"><td class="verdict">– skipped</td><td>peer-nginx-delay</td>`,
		`<p class="skipped">Skipped: peer-nginx-delay: nginx is not installed: apt-get install nginx</p>`,
		`<dt>history</dt><dd>10 records, 8 keys &#43; the probe&#39;s key: 10 admitted`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("report lacks %s", want)
		}
	}
}

// TestAgreedStartFact: a scenario's facts say when its first phase was to
// begin, on which clock, how the start was agreed and how late it began.
func TestAgreedStartFact(t *testing.T) {
	at := time.Date(2025, 6, 1, 12, 0, 0, 500_000_000, time.UTC)
	for _, tt := range []struct {
		a    runrecord.AgreedStart
		want string
	}{
		{runrecord.AgreedStart{By: runrecord.StartAt, At: at, Clock: runrecord.StartClockLimiter, Late: 1234567, Tolerance: 50 * time.Millisecond},
			"2025-06-01T12:00:00.5Z on the limiter's clock, given by --start-at; began 1.235ms after it (tolerance 50ms)"},
		{runrecord.AgreedStart{By: runrecord.StartAt, At: at, Clock: runrecord.StartClockHost, Tolerance: 50 * time.Millisecond},
			"2025-06-01T12:00:00.5Z on this host's clock, given by --start-at; began 0s after it (tolerance 50ms)"},
		{runrecord.AgreedStart{By: runrecord.StartBarrier, At: at, Clock: runrecord.StartClockLimiter, Barrier: "rlbench:{0a1b2c3d}:barrier:quickstart", Late: 3 * time.Millisecond, Tolerance: 50 * time.Millisecond},
			"2025-06-01T12:00:00.5Z on the limiter's clock, agreed at barrier rlbench:{0a1b2c3d}:barrier:quickstart; began 3ms after it (tolerance 50ms)"},
	} {
		if got := agreedStartFact(&tt.a); got != tt.want {
			t.Errorf("agreedStartFact = %q, want %q", got, tt.want)
		}
	}
}

// A merged run's scenario shows each shard's calibration among its facts.
func TestShardFacts(t *testing.T) {
	rec := &runrecord.ScenarioRecord{Shards: []runrecord.ShardRecord{
		{Shard: history.Shard{Index: 0, Count: 2}, Dir: "/runs/0", Hostname: "node-a", Records: 378, ClockOffset: -3 * time.Microsecond,
			ClockUncertainty: 82 * time.Microsecond, ClockSource: history.ClockRedisTime, Shift: 2 * time.Millisecond,
			Generator: &runrecord.GeneratorCeiling{Rate: 5978}},
		{Shard: history.Shard{Index: 1, Count: 2}, Dir: "/runs/1", Records: 1, ClockOffset: 15 * time.Second, ClockSource: history.ClockDeclared},
	}}
	got := shardFacts(rec)
	want := []fact{
		{Label: "shard 0/2", Value: "node-a: 378 records, clock offset -3µs ± 82µs (Redis TIME), placed at +2ms, generator ceiling 5978 req/s",
			Note: "run directory /runs/0; each request's interval widened by ± 82µs on the merged clock"},
		{Label: "shard 1/2", Value: "1 record, clock offset 15s ± 0s (declared by the scenario), placed at +0s",
			Note: "run directory /runs/1; each request's interval widened by ± 0s on the merged clock"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("shardFacts =\n%+v\nwant\n%+v", got, want)
	}
	if facts := shardFacts(&runrecord.ScenarioRecord{}); facts != nil {
		t.Errorf("an unsharded run's shard facts = %v, want none", facts)
	}
}

// TestCountsAgreeInNumber renders a run of one key on one instance, whose
// captions count one of many things, and holds every count on the page to
// checker.Count's singular: no "1 keys", no "check(s)".
func TestCountsAgreeInNumber(t *testing.T) {
	one := goldenScenarios[1] // private buckets: fails the budget once per key
	one.instances, one.keys = []string{"instance-1"}, 1
	dir := t.TempDir()
	writeSynthRun(t, dir, []synthScenario{one})
	doc := parse(t, render(t, dir))
	page := text(doc)
	plural := regexp.MustCompile(`\b1 (keys|requests|units|rejections|windows|errors|checks|failed budget checks|instances)\b|[a-z]\(s\)`)
	if m := plural.FindAllString(page, -1); len(m) > 0 {
		t.Errorf("the page counts one in the plural: %q", m)
	}
	if budget := figure(t, doc, one.name, "budget-0"); !strings.Contains(budget, "1 key admitted on this route") {
		t.Errorf("budget caption of one key:\n%s", budget)
	}
	if inst := figure(t, doc, one.name, "instances"); !regexp.MustCompile(`admitted \d+ units\.`).MatchString(inst) {
		t.Errorf("instances caption:\n%s", inst)
	}
}

func TestCountWere(t *testing.T) {
	for _, tc := range []struct {
		n    int
		want string
	}{{0, "0 rejections were"}, {1, "1 rejection was"}, {2, "2 rejections were"}} {
		if got := countWere(tc.n, "rejections"); got != tc.want {
			t.Errorf("countWere(%d) = %q, want %q", tc.n, got, tc.want)
		}
	}
}

// TestOutcomeLegend holds the outcome chart's legend to what each series
// counts, with its count over the run: an unknown outcome is a 5xx, a 4xx
// other than 429 or no response, and a run with errors says how many.
func TestOutcomeLegend(t *testing.T) {
	got := outcomeLegend([3]int64{1100, 130, 144})
	want := [3]string{"admitted (1100)", "rejected, 429 (130)", "unknown: 5xx, other 4xx, no response (144)"}
	if got != want {
		t.Errorf("outcomeLegend = %q, want %q", got, want)
	}
	dir := t.TempDir()
	writeSynthRun(t, dir, goldenScenarios[3:])
	doc := parse(t, render(t, dir))
	fig := figure(t, doc, goldenScenarios[3].name, "outcomes")
	for _, bad := range []string{"none)", "error (5xx"} {
		if strings.Contains(fig, bad) {
			t.Errorf("outcome chart says %q:\n%s", bad, fig)
		}
	}
	m := regexp.MustCompile(`unknown: 5xx, other 4xx, no response \((\d+)\)`).FindStringSubmatch(fig)
	c := regexp.MustCompile(`(\d+) of unknown outcome`).FindStringSubmatch(fig)
	if m == nil || c == nil || m[1] != c[1] {
		t.Errorf("the legend's unknown count %v disagrees with the caption's %v:\n%s", m, c, fig)
	}
}

func TestBurstSpread(t *testing.T) {
	ms := time.Millisecond
	tests := []struct {
		name  string
		phase runrecord.PhaseRecord
		want  string
	}{
		{"no bursts", runrecord.PhaseRecord{Kind: "constant"}, "–"},
		{"one burst", runrecord.PhaseRecord{Spread: 5 * ms, AchievedSpread: 3210 * time.Microsecond,
			Bursts: []runrecord.BurstRecord{{SentSpread: 3210 * time.Microsecond, Achieved: 3210 * time.Microsecond}}}, "5 / 3.21"},
		{"all at once", runrecord.PhaseRecord{Bursts: []runrecord.BurstRecord{{Achieved: 1500 * time.Microsecond}}}, "0 / 1.5"},
		{"several bursts", runrecord.PhaseRecord{Spread: 2 * ms, AchievedSpread: 9 * ms,
			Bursts: []runrecord.BurstRecord{{Achieved: 4 * ms}, {Achieved: 9 * ms}, {Achieved: 1 * ms}}}, "2 / 1–9"},
		{"older record, widest only", runrecord.PhaseRecord{Spread: 2 * ms, AchievedSpread: 2400 * time.Microsecond}, "2 / 2.4"},
	}
	for _, tt := range tests {
		if got := burstSpread(tt.phase); got != tt.want {
			t.Errorf("%s: burstSpread = %q, want %q", tt.name, got, tt.want)
		}
	}
}

// TestPhasesShowBurstSpread holds the scenario section's traffic phases
// table to the burst spread run.json records: planned against achieved.
func TestPhasesShowBurstSpread(t *testing.T) {
	dir := t.TempDir()
	writeSynthRun(t, dir, goldenScenarios[:1])
	rr := readRunRecord(t, dir)
	rr.Scenarios[0].Phases = append(rr.Scenarios[0].Phases, runrecord.PhaseRecord{
		Name: "boundary-burst", Kind: "edge_burst", Planned: 40, Sent: 40, OnTime: 40, Delivered: 1,
		Spread: 5 * time.Millisecond, AchievedSpread: 7250 * time.Microsecond,
		Bursts: []runrecord.BurstRecord{{Requests: 20, Sent: 20, Written: 20, SentSpread: 4 * time.Millisecond, Achieved: 4 * time.Millisecond},
			{Requests: 20, Sent: 20, Written: 20, SentSpread: 7250 * time.Microsecond, Achieved: 7250 * time.Microsecond}},
	})
	writeRunRecord(t, dir, rr)
	doc := parse(t, render(t, dir))
	var found bool
	for _, tr := range elements(doc, func(n *html.Node) bool { return n.Data == "tr" }) {
		row := text(tr)
		if strings.Contains(row, "burst spread, planned / achieved (ms)") {
			found = true
		}
		if strings.HasPrefix(row, "boundary-burst") && !strings.HasSuffix(row, "5 / 4–7.25") {
			t.Errorf("burst phase row %q lacks its spread 5 / 4–7.25", row)
		}
		if strings.HasPrefix(row, "steady") && !strings.HasSuffix(row, "–") {
			t.Errorf("a phase without bursts shows a spread: %q", row)
		}
	}
	if !found {
		t.Error("the traffic phases table has no burst spread column")
	}
}

// TestProbeKeyNamed counts a route's keys as checker.Counts does: the
// traffic's keys, then the probe's own, named as such.
func TestProbeKeyNamed(t *testing.T) {
	sc := goldenScenarios[0] // four keys on /v1/search
	sc.probeKey = "key-3"
	dir := t.TempDir()
	writeSynthRun(t, dir, []synthScenario{sc})
	doc := parse(t, render(t, dir))
	if budget := figure(t, doc, sc.name, "budget-0"); !strings.Contains(budget, "3 keys + the probe's key admitted on this route") {
		t.Errorf("budget caption of three keys and the probe's:\n%s", budget)
	}
	run, err := LoadRun(dir)
	if err != nil {
		t.Fatal(err)
	}
	d := run.Scenarios[0].digest
	if got, want := d.keysPhrase(slices.Collect(maps.Keys(d.keys))), "3 keys + the probe's key"; got != want {
		t.Errorf("keysPhrase = %q, want %q", got, want)
	}
}
