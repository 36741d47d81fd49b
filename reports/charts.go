package reports

import (
	"bytes"
	"cmp"
	"fmt"
	"html/template"
	"image/color"
	"maps"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/rlbench/rlbench/harness/checker"
	"github.com/rlbench/rlbench/harness/runrecord"
	"github.com/rlbench/rlbench/limiter"
)

// chart is one figure of a report: an inline SVG, or, when the scenario has
// no data for it, the one line that says why.
type chart struct {
	ID      string
	Title   string
	SVG     template.HTML
	Caption string
	Missing string
}

// chart size on the page, in points (the SVG scales to the column width).
const (
	chartWidth  = 10 * vg.Inch
	chartHeight = 3.8 * vg.Inch
)

// chartFont is the typeface of chart text; the page names its metric twins
// (Arimo, Arial, Helvetica) as fallbacks, since it loads no font.
var chartFont = font.Font{Typeface: "Liberation", Variant: "Sans"}

var (
	colorAdmitted = color.RGBA{R: 0x1b, G: 0x7f, B: 0x3b, A: 0xff}
	colorRejected = color.RGBA{R: 0xd9, G: 0x7a, B: 0x00, A: 0xff}
	colorError    = color.RGBA{R: 0xb0, G: 0x1c, B: 0x1c, A: 0xff}
	colorEnvelope = color.RGBA{A: 0xff}
	colorFault    = color.NRGBA{R: 0x80, G: 0x80, B: 0x80, A: 0x40}
	// colorStall shades a store stall the harness observed, apart from
	// the declared faults' grey.
	colorStall   = color.NRGBA{R: 0x56, G: 0xb4, B: 0xe9, A: 0x40}
	colorViolate = color.NRGBA{R: 0xd0, G: 0x10, B: 0x10, A: 0x30}
	// seriesColors is a colour-blind-safe qualitative palette (Okabe and Ito).
	seriesColors = []color.Color{
		color.RGBA{R: 0x00, G: 0x72, B: 0xb2, A: 0xff},
		color.RGBA{R: 0xe6, G: 0x9f, B: 0x00, A: 0xff},
		color.RGBA{R: 0x00, G: 0x9e, B: 0x73, A: 0xff},
		color.RGBA{R: 0xcc, G: 0x79, B: 0xa7, A: 0xff},
		color.RGBA{R: 0x56, G: 0xb4, B: 0xe9, A: 0xff},
		color.RGBA{R: 0xd5, G: 0x5e, B: 0x00, A: 0xff},
		color.RGBA{R: 0x33, G: 0x33, B: 0x33, A: 0xff},
	}
)

// niceTicks labels about six round values (1, 2, 2.5 or 5 times a power
// of ten) and marks minor ticks between them.
var niceTicks = plot.TickerFunc(func(lo, hi float64) []plot.Tick {
	if !(hi > lo) || math.IsInf(hi-lo, 0) {
		return []plot.Tick{{Value: lo, Label: FormatNumber(lo)}}
	}
	raw := (hi - lo) / 6
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step := mag * 10
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if m*mag >= raw {
			step = m * mag
			break
		}
	}
	var ts []plot.Tick
	for i := math.Ceil(lo / step); i*step <= hi+step*1e-9; i++ {
		v := i * step
		ts = append(ts, plot.Tick{Value: v, Label: strconv.FormatFloat(v, 'g', 6, 64)})
		if minor := v + step/2; minor < hi {
			ts = append(ts, plot.Tick{Value: minor})
		}
	}
	return ts
})

func seriesColor(i int) color.Color { return seriesColors[i%len(seriesColors)] }

// newPlot returns a plot with the report's common look.
func newPlot(title, xLabel, yLabel string) *plot.Plot {
	p := plot.New()
	p.Title.TextStyle.Font = font.From(chartFont, 11)
	p.X.Label.TextStyle.Font = font.From(chartFont, 10)
	p.Y.Label.TextStyle.Font = font.From(chartFont, 10)
	p.X.Tick.Label.Font = font.From(chartFont, 9)
	p.Y.Tick.Label.Font = font.From(chartFont, 9)
	p.Legend.TextStyle.Font = font.From(chartFont, 9)
	p.X.Tick.Marker = niceTicks
	p.Y.Tick.Marker = niceTicks
	p.Title.Text = title
	p.X.Label.Text = xLabel
	p.Y.Label.Text = yLabel
	p.Legend.Top = true
	p.Legend.Left = true
	p.Legend.ThumbnailWidth = 0.3 * vg.Inch
	p.Legend.Padding = vg.Points(2.5)
	p.Add(plotter.NewGrid())
	return p
}

// svgOpen matches the opening tag vgsvg writes, with the XML prelude.
var svgOpen = regexp.MustCompile(`(?s)^.*?<svg [^>]*viewBox="([^"]*)"[^>]*>`)

// renderSVG draws p and returns it as an inline <svg> element for HTML:
// no XML prelude, no namespace URLs, sized by its viewBox, and text in
// Liberation Sans or its metric twins. A panic inside the plotting library
// comes back as an error.
func renderSVG(p *plot.Plot, label string) (svg template.HTML, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("render chart %q: %v", label, r)
		}
	}()
	c := vgsvg.New(chartWidth, chartHeight)
	drawWithLegend(p, draw.New(c))
	var buf bytes.Buffer
	if _, err := c.WriteTo(&buf); err != nil {
		return "", fmt.Errorf("render chart %q: %w", label, err)
	}
	s := buf.String()
	m := svgOpen.FindStringSubmatchIndex(s)
	if m == nil {
		return "", fmt.Errorf("render chart %q: unexpected SVG prelude", label)
	}
	open := fmt.Sprintf(`<svg class="chart" viewBox="%s" role="img" aria-label="%s">`, s[m[2]:m[3]], template.HTMLEscapeString(label))
	body := strings.ReplaceAll(s[m[1]:], "font-family:Liberation Sans;", "font-family:'Liberation Sans',Arimo,Arial,Helvetica,sans-serif;")
	return template.HTML(open + body), nil
}

// legendGap is the space on either side of a legend drawn beside its plot.
const legendGap = 10 // points

// drawWithLegend draws p on dc with its legend in a column to the right of
// the plot, level with the top of the data area, so that no entry covers a
// curve, a band or a bar.
func drawWithLegend(p *plot.Plot, dc draw.Canvas) {
	leg := p.Legend
	width := leg.Rectangle(dc).Size().X
	if width <= 0 {
		p.Draw(dc)
		return
	}
	p.Legend = plot.NewLegend() // no entries: plot.Draw draws none
	defer func() { p.Legend = leg }()
	gap := vg.Points(legendGap)
	p.Draw(draw.Crop(dc, 0, -(width + 2*gap), 0, 0))
	top := vg.Length(0)
	if p.Title.Text != "" {
		top = p.Title.TextStyle.Rectangle(p.Title.Text).Size().Y + p.Title.Padding
	}
	leg.Top, leg.Left = true, true
	leg.Draw(draw.Crop(dc, dc.Size().X-width-gap, 0, 0, -top))
}

// chartOf renders p into c, or records the failure as c's missing line.
func chartOf(c chart, p *plot.Plot) chart {
	svg, err := renderSVG(p, c.Title)
	if err != nil {
		c.Missing = err.Error()
		return c
	}
	c.SVG = svg
	return c
}

func line(xys plotter.XYs, c color.Color, width vg.Length, dashed bool) (*plotter.Line, error) {
	l, err := plotter.NewLine(xys)
	if err != nil {
		return nil, err
	}
	l.LineStyle.Color = c
	l.LineStyle.Width = width
	if dashed {
		l.LineStyle.Dashes = []vg.Length{vg.Points(5), vg.Points(3)}
	}
	return l, nil
}

// band is a shaded rectangle over [x0, x1] from y0 to y1.
func band(x0, x1, y0, y1 float64, c color.Color) (*plotter.Polygon, error) {
	if x1 <= x0 {
		x1 = x0 + 1e-9
	}
	pg, err := plotter.NewPolygon(plotter.XYs{{X: x0, Y: y0}, {X: x1, Y: y0}, {X: x1, Y: y1}, {X: x0, Y: y1}})
	if err != nil {
		return nil, err
	}
	pg.Color = c
	pg.LineStyle.Width = 0
	return pg, nil
}

// outcomesPerBin is the least mean number of requests per bin of the
// outcomes chart before its bins are merged further.
const outcomesPerBin = 20

func seconds(ns int64) float64 { return float64(ns) / 1e9 }

// outcomesChart plots requests per second by outcome, with the fault windows shaded.
func outcomesChart(sc *Scenario) chart {
	c := chart{ID: anchor(sc.Summary.Name, "outcomes"), Title: "Request outcomes over time"}
	d := sc.digest
	if d == nil {
		c.Missing = "No history: " + sc.HistoryError
		return c
	}
	if d.records == 0 {
		c.Missing = "The history holds no requests."
		return c
	}
	// Merge bins until they hold about outcomesPerBin requests, so that
	// light traffic does not draw as noise; at least displayBins/8 remain.
	k := 1
	used := max(1, min(displayBins, int(d.lastNs/d.tl.width)+1))
	for _, f := range []int{2, 3, 4, 5, 6, 8} {
		if d.records*k/used >= outcomesPerBin {
			break
		}
		k = f
	}
	binS := seconds(d.tl.width) * float64(k)
	p := newPlot(c.Title, "time since the scenario's start (s)", "requests/s (by send time)")
	ymax := 0.0
	var series [3]plotter.XYs
	for o := range 3 {
		for i := 0; i < displayBins; i += k {
			var n int64
			for _, v := range d.outcomes[o].v[i : i+k] {
				n += v
			}
			y := float64(n) / binS
			series[o] = append(series[o], plotter.XY{X: float64(i/k) * binS, Y: y})
			ymax = max(ymax, y)
		}
		series[o] = append(series[o], plotter.XY{X: displayBins / float64(k) * binS, Y: series[o][len(series[o])-1].Y})
	}
	ymax = math.Max(ymax*1.35, 1)
	var faults, stalls []runrecord.FaultWindow
	if sc.Record != nil {
		faults = sc.Record.Faults
		stalls = observedStalls(sc.Record)
	}
	end := seconds(d.lastNs)
	for i, f := range faults {
		to := f.ToNs
		if to == 0 {
			to = d.lastNs
		}
		b, err := band(seconds(f.FromNs), seconds(to), 0, ymax, colorFault)
		if err != nil {
			c.Missing = err.Error()
			return c
		}
		p.Add(b)
		if i == 0 {
			p.Legend.Add("fault window", b)
		}
	}
	for i, f := range stalls {
		b, err := band(seconds(f.FromNs), seconds(f.ToNs), 0, ymax, colorStall)
		if err != nil {
			c.Missing = err.Error()
			return c
		}
		p.Add(b)
		if i == 0 {
			p.Legend.Add("store stall (observed)", b)
		}
	}
	total := [3]int64{}
	for o := range 3 {
		for _, v := range d.outcomes[o].v {
			total[o] += v
		}
	}
	names := outcomeLegend(total)
	cols := [3]color.Color{colorAdmitted, colorRejected, colorError}
	for o := range 3 {
		l, err := line(series[o], cols[o], vg.Points(1.2), false)
		if err != nil {
			c.Missing = err.Error()
			return c
		}
		l.StepStyle = plotter.PostStep
		p.Add(l)
		p.Legend.Add(names[o], l)
	}
	p.Y.Min, p.Y.Max = 0, ymax
	p.X.Min, p.X.Max = 0, math.Max(end, binS)
	c.Caption = fmt.Sprintf("%s: %d admitted, %d rejected, %d of unknown outcome (%s); bins of %s.", checker.Count(d.records, "requests"), total[0], total[1], total[2], unknownWhat, formatDuration(d.tl.width*int64(k)))
	if len(faults) > 0 {
		var fs []string
		for _, f := range faults {
			to := "never healed"
			if f.ToNs != 0 {
				to = fmt.Sprintf("%.3g s", seconds(f.ToNs))
			}
			fs = append(fs, fmt.Sprintf("%s on %s from %.3g s to %s", f.Kind, f.Target, seconds(f.FromNs), to))
		}
		c.Caption += " Shaded: " + strings.Join(fs, "; ") + "."
	}
	if len(stalls) > 0 {
		c.Caption += " Shaded in blue: " + stallSpans(stalls) + "."
	}
	return chartOf(c, p)
}

// unknownWhat is what the outcome chart counts as of unknown outcome:
// history.OutcomeForStatus's Error.
const unknownWhat = "5xx, 4xx other than 429, or no response"

// outcomeLegend names the outcome chart's three series, admitted,
// rejected and unknown, with their counts over the whole run, total.
func outcomeLegend(total [3]int64) [3]string {
	return [3]string{
		fmt.Sprintf("admitted (%d)", total[0]),
		fmt.Sprintf("rejected, 429 (%d)", total[1]),
		fmt.Sprintf("unknown: 5xx, other 4xx, no response (%d)", total[2]),
	}
}

// observedStalls are the store stalls the harness's probe observed outside
// the declared faults of rec (runrecord.FaultWindow.Observed).
func observedStalls(rec *runrecord.ScenarioRecord) []runrecord.FaultWindow {
	if rec == nil || rec.Drill == nil {
		return nil
	}
	var out []runrecord.FaultWindow
	for _, w := range rec.Drill.Windows {
		if w.Observed {
			out = append(out, w)
		}
	}
	return out
}

// stallSpans says when the store stalled: "the store stalled beyond the
// store timeout outside the declared faults, as the harness's probe saw
// (not a declared fault), from 1.95 s to 2.13 s; ...".
func stallSpans(stalls []runrecord.FaultWindow) string {
	var fs []string
	for _, w := range stalls {
		fs = append(fs, fmt.Sprintf("from %.3g s to %.3g s", seconds(w.FromNs), seconds(w.ToNs)))
	}
	return "the store stalled beyond the store timeout outside the declared faults, as the harness's probe saw (not a declared fault), " + strings.Join(fs, "; ")
}

// budgetCharts draws, per limited route, the admitted units of the busiest
// keys against the policy: cumulative units against burst + rate·t for
// buckets, units per aligned window against the limit for windows.
func budgetCharts(sc *Scenario) []chart {
	d := sc.digest
	if d == nil {
		return []chart{{ID: anchor(sc.Summary.Name, "budget"), Title: "Admitted units per key", Missing: "No history: " + sc.HistoryError}}
	}
	if len(d.routes) == 0 {
		return []chart{{ID: anchor(sc.Summary.Name, "budget"), Title: "Admitted units per key",
			Missing: "No route of this scenario declares a limit, so there is no envelope to draw."}}
	}
	var out []chart
	for i, rd := range d.routes {
		c := chart{ID: anchor(sc.Summary.Name, fmt.Sprintf("budget-%d", i)), Title: "Admitted units per key, " + rd.limitsLabel()}
		keys := rd.busiest()
		switch {
		case len(keys) == 0:
			c.Missing = fmt.Sprintf("No request was admitted on %s.", routeName(rd.route))
		case rd.windowNs > 0:
			c = windowChart(c, d, rd, keys, rd.ownChecks(sc.Summary.Checks))
		default:
			c = bucketChart(c, d, rd, keys, rd.ownChecks(sc.Summary.Checks))
		}
		if len(rd.skipped) > 0 {
			c.Caption += fmt.Sprintf(" Limits not drawn (they do not parse): %s.", strings.Join(rd.skipped, ", "))
		}
		out = append(out, c)
	}
	return out
}

func routeName(r string) string {
	if r == "" {
		return "any route"
	}
	return r
}

func keysCaption(d *digest, rd *routeDigest, keys []string) string {
	s := fmt.Sprintf("%s admitted on this route; drawn: %s", d.keysPhrase(slices.Collect(maps.Keys(rd.keys))), strings.Join(quoteAll(keys), ", "))
	if rd.tracked < len(rd.keys) {
		s += fmt.Sprintf(" (the busiest among the %s seen first and the keys of failed checks)", checker.Count(rd.tracked, "keys"))
	}
	return s + ". Requests of unknown outcome (errors) are not counted."
}

func quoteAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = fmt.Sprintf("%q", s)
	}
	return out
}

// ownChecks returns checks without the budget results of other routes'
// limits: a budget result's scope names its limit, so that a key on several
// routes is marked only on the chart of the limit it broke.
func (rd *routeDigest) ownChecks(checks []checker.Result) []checker.Result {
	var out []checker.Result
	for _, r := range checks {
		if r.Name == checker.CheckBudget && r.Scope != "" && !slices.ContainsFunc(rd.limits, func(l limiter.Limit) bool { return limitScope(l) == r.Scope }) {
			continue
		}
		out = append(out, r)
	}
	return out
}

// violations returns the failed budget proofs on keys.
func violations(checks []checker.Result, keys []string) []checker.Result {
	var out []checker.Result
	for _, r := range checks {
		if r.Name == checker.CheckBudget && r.Verdict == checker.Fail && r.Proof != nil && slices.Contains(keys, r.Proof.Key) {
			out = append(out, r)
		}
	}
	return out
}

// segments splits [0, lastNs] around the excused intervals of faults on
// the whole store: the budget check holds no request inside them to the
// budget, so a bucket chart draws its curves and envelopes afresh after each.
func (d *digest) segments() [][2]int64 {
	var cuts [][2]int64
	for _, w := range d.excused {
		if w.instance == "" {
			cuts = append(cuts, [2]int64{w.fromNs, w.endNs(d.lastNs)})
		}
	}
	slices.SortFunc(cuts, func(a, b [2]int64) int { return cmp.Compare(a[0], b[0]) })
	var out [][2]int64
	from := int64(0)
	for _, c := range cuts {
		if c[0] > from {
			out = append(out, [2]int64{from, min(c[0], d.lastNs)})
		}
		from = max(from, c[1])
	}
	if from < d.lastNs {
		out = append(out, [2]int64{from, d.lastNs})
	}
	return out
}

// addExcused shades the excused intervals of d from 0 to ymax and returns
// the caption sentence that explains them; empty when there are none.
func addExcused(p *plot.Plot, d *digest, rd *routeDigest, ymax float64, restart bool) (string, error) {
	if len(d.excused) == 0 {
		return "", nil
	}
	var parts []string
	var legends [2]bool // fault, stall
	for _, w := range d.excused {
		to := w.endNs(d.lastNs)
		col, legend, seen := colorFault, "excused: fault + recovery", &legends[0]
		if w.observed {
			col, legend, seen = colorStall, "excused: observed store stall + recovery", &legends[1]
		}
		b, err := band(seconds(w.fromNs), seconds(to), 0, ymax, col)
		if err != nil {
			return "", err
		}
		p.Add(b)
		if !*seen {
			p.Legend.Add(legend, b)
			*seen = true
		}
		kind := w.kind
		if w.observed {
			kind = "a store stall the harness observed (in blue)"
		}
		part := fmt.Sprintf("%s from %.3g s", kind, seconds(w.fromNs))
		if w.toNs == 0 {
			part += " to the end"
		} else {
			healed := "healed"
			if w.observed {
				healed = "answering again"
			}
			part += fmt.Sprintf(", %s at %.3g s, plus the %s recovery bound, to %.3g s", healed, seconds(w.toNs), formatDuration(w.recoveryNs), seconds(to))
		}
		if w.instance != "" {
			part += " on " + w.instance
		}
		parts = append(parts, part)
	}
	s := fmt.Sprintf(" Shaded: the drill's excused interval (%s). The budget check leaves requests answered after a fault began and sent before its recovery ended to the fault checks, since the failure mode decided them, so their %s admitted are not counted here",
		strings.Join(parts, "; "), checker.Count(int(rd.excusedUnits), "units"))
	if restart {
		s += "; curves and envelopes start afresh after each excused interval"
	}
	return s + ".", nil
}

func bucketChart(c chart, d *digest, rd *routeDigest, keys []string, checks []checker.Result) chart {
	binW := d.tl.width
	p := newPlot(c.Title, "time since the scenario's start (s)", "admitted units since the start")
	end := seconds(d.lastNs)
	segs := d.segments()
	ymax := 0.0
	lines := make([][]*plotter.Line, len(keys))
	for i, k := range keys {
		ks := rd.keys[k]
		for _, sg := range segs {
			xys := plotter.XYs{{X: seconds(sg[0]), Y: 0}}
			sum := int64(0)
			last := int((sg[1]+binW-1)/binW) - 1
			for j := int(sg[0] / binW); j <= last && j < len(ks.bins.v); j++ {
				sum += ks.bins.v[j]
				xys = append(xys, plotter.XY{X: seconds(min(int64(j+1)*binW, sg[1])), Y: float64(sum)})
			}
			ymax = max(ymax, float64(sum))
			l, err := line(xys, seriesColor(i), vg.Points(1.4), false)
			if err != nil {
				c.Missing = err.Error()
				return c
			}
			lines[i] = append(lines[i], l)
		}
	}
	var envelopes []string
	var envLines []*plotter.Line
	for _, l := range rd.limits {
		if l.Algorithm.IsWindow() {
			continue
		}
		rate := l.Rate / l.Period.Seconds()
		label := fmt.Sprintf("%d + %s/s·t", l.Burst, FormatNumber(rate))
		for j, sg := range segs {
			a, b := seconds(sg[0]), seconds(sg[1])
			env := plotter.XYs{{X: a, Y: float64(l.Burst)}, {X: b, Y: float64(l.Burst) + rate*(b-a)}}
			ln, err := line(env, colorEnvelope, vg.Points(1.2), true)
			if err != nil {
				c.Missing = err.Error()
				return c
			}
			envLines = append(envLines, ln)
			if j == 0 {
				p.Legend.Add("burst + rate·t: "+label, ln)
			}
			ymax = max(ymax, math.Min(env[1].Y, ymax*1.5+float64(l.Burst)))
		}
		envelopes = append(envelopes, label)
	}
	ymax = math.Max(ymax*1.08, 1)
	excused, err := addExcused(p, d, rd, ymax, len(segs) > 1 || (len(segs) == 1 && segs[0][0] > 0))
	if err != nil {
		c.Missing = err.Error()
		return c
	}
	for _, ln := range envLines {
		p.Add(ln)
	}
	local, err := violationBounds(rd, checks, keys, lines)
	if err != nil {
		c.Missing = err.Error()
		return c
	}
	if err := addKeyLines(p, checks, keys, lines, ymax); err != nil {
		c.Missing = err.Error()
		return c
	}
	for i, ln := range local {
		p.Add(ln)
		if i == 0 {
			p.Legend.Add("bound from the interval's start", ln)
		}
	}
	p.X.Min, p.X.Max = 0, math.Max(end, seconds(binW))
	p.Y.Min, p.Y.Max = 0, ymax
	c.Caption = "Cumulative admitted units of each key must stay under every dashed envelope (" + strings.Join(envelopes, ", ") +
		"), which bounds any interval starting where the curve starts; the checker tests every interval. " + keysCaption(d, rd, keys) + excused
	if n := len(violations(checks, keys)); n > 0 {
		if n == 1 {
			c.Caption += " Red: the interval of the failed budget check"
		} else {
			c.Caption += fmt.Sprintf(" Red: the intervals of %s", checker.Count(n, "failed budget checks"))
		}
		if len(local) > 0 {
			c.Caption += ", and the envelope restarted at its start above the key's curve there: the curve crosses it within the interval (drawn from display bins, so approximately; the proof gives the exact requests)"
		}
		c.Caption += "."
	}
	return chartOf(c, p)
}

// violationBounds returns, for each failed budget check on a drawn key
// with a bucket limit of rd, the limit's envelope restarted at the start of
// the proof's interval from the key's curve there, across the interval: the
// bound the key's admissions broke.
func violationBounds(rd *routeDigest, checks []checker.Result, keys []string, lines [][]*plotter.Line) ([]*plotter.Line, error) {
	var out []*plotter.Line
	for _, r := range violations(checks, keys) {
		i := slices.Index(keys, r.Proof.Key)
		li := slices.IndexFunc(rd.limits, func(l limiter.Limit) bool { return limitScope(l) == r.Scope && !l.Algorithm.IsWindow() })
		if i < 0 || li < 0 {
			continue
		}
		l := rd.limits[li]
		from, to := seconds(r.Proof.FromNs), seconds(r.Proof.ToNs)
		y0, found := 0.0, false
		for _, seg := range lines[i] {
			if len(seg.XYs) == 0 || seg.XYs[0].X > from {
				continue
			}
			for _, pt := range seg.XYs {
				if pt.X <= from {
					y0, found = pt.Y, true
				}
			}
		}
		if !found {
			continue
		}
		rate := l.Rate / l.Period.Seconds()
		ln, err := line(plotter.XYs{{X: from, Y: y0 + float64(l.Burst)}, {X: to, Y: y0 + float64(l.Burst) + rate*(to-from)}}, colorError, vg.Points(1.4), true)
		if err != nil {
			return nil, err
		}
		out = append(out, ln)
	}
	return out, nil
}

func windowChart(c chart, d *digest, rd *routeDigest, keys []string, checks []checker.Result) chart {
	l := rd.limits[0]
	limit := float64(l.Capacity())
	p := newPlot(c.Title, "time since the scenario's start (s)", fmt.Sprintf("admitted units per %s window", formatDuration(rd.windowNs)))
	end := d.lastNs
	first := floorDiv(rd.alignNs, rd.windowNs)
	last := floorDiv(rd.alignNs+end, rd.windowNs)
	nWin := last - first + 1
	group := max(int64(1), (nWin+displayBins-1)/displayBins) // windows per point
	ymax := limit
	var over plotter.XYs
	var lines [][]*plotter.Line
	for i, k := range keys {
		var xys plotter.XYs
		for j, peak := range windowPeaks(rd.keys[k].windows, first, last, group) {
			x := seconds(max((first+int64(j)*group)*rd.windowNs-rd.alignNs, 0))
			xys = append(xys, plotter.XY{X: x, Y: float64(peak)})
			if float64(peak) > limit {
				over = append(over, plotter.XY{X: x, Y: float64(peak)})
			}
			ymax = max(ymax, float64(peak))
		}
		xys = append(xys, plotter.XY{X: seconds(end), Y: xys[len(xys)-1].Y})
		ln, err := line(xys, seriesColor(i), vg.Points(1.4), false)
		if err != nil {
			c.Missing = err.Error()
			return c
		}
		ln.StepStyle = plotter.PostStep
		lines = append(lines, []*plotter.Line{ln})
	}
	ymax = ymax*1.4 + 1
	excused, err := addExcused(p, d, rd, ymax, false)
	if err != nil {
		c.Missing = err.Error()
		return c
	}
	lim, err := line(plotter.XYs{{X: 0, Y: limit}, {X: seconds(end), Y: limit}}, colorEnvelope, vg.Points(1.2), true)
	if err != nil {
		c.Missing = err.Error()
		return c
	}
	p.Add(lim)
	p.Legend.Add(fmt.Sprintf("limit %s per window", FormatNumber(limit)), lim)
	if err := addKeyLines(p, checks, keys, lines, ymax); err != nil {
		c.Missing = err.Error()
		return c
	}
	if len(over) > 0 {
		s, err := plotter.NewScatter(over)
		if err != nil {
			c.Missing = err.Error()
			return c
		}
		s.GlyphStyle = draw.GlyphStyle{Color: colorError, Radius: vg.Points(3), Shape: draw.CrossGlyph{}}
		p.Add(s)
		p.Legend.Add("window over the limit", s)
	}
	p.X.Min, p.X.Max = 0, math.Max(seconds(end), 1e-3)
	p.Y.Min, p.Y.Max = 0, ymax
	c.Caption = fmt.Sprintf("Units admitted per window of %s aligned on the limiter's clock, by send time", formatDuration(rd.windowNs))
	if group > 1 {
		c.Caption += fmt.Sprintf(", the largest of every %s per step", checker.Count(int(group), "windows"))
	}
	c.Caption += fmt.Sprintf("; no aligned window may exceed %s (%s). ", FormatNumber(limit), l.String()) + keysCaption(d, rd, keys) + excused
	return chartOf(c, p)
}

// windowPeaks returns, for windows first..last taken group at a time, the
// largest count of each group.
func windowPeaks(windows map[int64]int64, first, last, group int64) []int64 {
	peaks := make([]int64, (last-first)/group+1)
	for w, n := range windows {
		if w >= first && w <= last {
			i := (w - first) / group
			peaks[i] = max(peaks[i], n)
		}
	}
	return peaks
}

// Percentiles of the latency charts, on the "nines" scale x = -log10(1-q).
const (
	ninesStep = 0.05
	ninesMax  = 6.0
)

func nines(x float64) string {
	if x == 0 {
		return "0%"
	}
	q := 100 * (1 - math.Pow(10, -x))
	return strings.TrimRight(strings.TrimRight(fmt.Sprintf("%.6f", q), "0"), ".") + "%"
}

// ninesLabel prints the percentile at x with as many decimals as its nines
// need (x = 2.73: "99.81%"), rounded down, so that it never claims a
// percentile beyond the one drawn.
func ninesLabel(x float64) string {
	decimals := max(0, int(math.Ceil(x))-1)
	scale := math.Pow(10, float64(decimals))
	q := math.Floor(100*(1-math.Pow(10, -x))*scale+1e-9) / scale
	return strconv.FormatFloat(q, 'f', decimals, 64) + "%"
}

// ninesTicks labels every whole nine (90%, 99%…) and the end of the axis,
// the last percentile drawn, unless it lies too close to a whole nine.
var ninesTicks = plot.TickerFunc(func(lo, hi float64) []plot.Tick {
	var ts []plot.Tick
	for x := math.Ceil(lo); x <= hi; x++ {
		ts = append(ts, plot.Tick{Value: x, Label: nines(x)})
	}
	if hi-math.Floor(hi) >= 0.25 {
		ts = append(ts, plot.Tick{Value: hi, Label: ninesLabel(hi)})
	}
	return ts
})

// latencyCurve returns a route's latency in ms per percentile, from the
// intended send time (coordinated omission corrected), up to the
// percentile its count resolves.
func latencyCurve(s *hdrhistogram.Snapshot) plotter.XYs {
	if s == nil {
		return nil
	}
	h := hdrhistogram.Import(s)
	n := h.TotalCount()
	if n == 0 {
		return nil
	}
	top := math.Min(math.Log10(float64(n)), ninesMax)
	var xys plotter.XYs
	for x := 0.0; x <= top+1e-9; x += ninesStep {
		q := 100 * (1 - math.Pow(10, -x))
		xys = append(xys, plotter.XY{X: x, Y: float64(h.ValueAtQuantile(q)) / 1000})
	}
	return xys
}

// latencyRoutes splits the scenario's latency records into limited and
// baseline routes, in name order.
func latencyRoutes(rec *runrecord.ScenarioRecord) (limited, baseline []string) {
	if rec == nil {
		return nil, nil
	}
	isBase := map[string]bool{}
	for _, rt := range rec.Routes {
		isBase[rt.Path] = rt.Baseline
	}
	for _, route := range slices.Sorted(maps.Keys(rec.Latency)) {
		if latencyCurve(rec.Latency[route].FromIntended) == nil {
			continue
		}
		if isBase[route] {
			baseline = append(baseline, route)
		} else {
			limited = append(limited, route)
		}
	}
	return limited, baseline
}

func latencyCharts(sc *Scenario) []chart {
	name := sc.Summary.Name
	lc := chart{ID: anchor(name, "latency"), Title: "Latency by percentile"}
	oc := chart{ID: anchor(name, "overhead"), Title: "Limiter overhead by percentile"}
	limited, baseline := latencyRoutes(sc.Record)
	switch {
	case len(limited) > 0 && len(baseline) > 0:
		lc.Title += ", with and without the limiter"
	case len(baseline) > 0:
		lc.Title += ", routes without the limiter"
	}
	if len(limited)+len(baseline) == 0 {
		why := "No latency distribution was recorded for this scenario (run.json has none)."
		lc.Missing, oc.Missing = why, why
		return []chart{lc, oc}
	}
	p := newPlot(lc.Title, "percentile", "latency from intended send (ms)")
	p.X.Tick.Marker = ninesTicks
	i := 0
	top := 0.0
	for _, group := range [][]string{limited, baseline} {
		for _, route := range group {
			xys := latencyCurve(sc.Record.Latency[route].FromIntended)
			l, err := line(xys, seriesColor(i), vg.Points(1.4), slices.Contains(baseline, route))
			if err != nil {
				lc.Missing = err.Error()
				return []chart{lc, oc}
			}
			p.Add(l)
			label := route + " (limited)"
			if slices.Contains(baseline, route) {
				label = route + " (baseline, no limiter)"
			}
			p.Legend.Add(label, l)
			top = max(top, xys[len(xys)-1].X)
			i++
		}
	}
	p.X.Min, p.X.Max = 0, math.Max(top, 1)
	p.Y.Min = 0
	lc.Caption = "HDR-style percentile plot from the run's histograms: x is the percentile on a log scale of nines, up to what each route's request count resolves; latency from the intended send time, so a stalled generator shows."
	switch {
	case len(baseline) > 0 && len(limited) > 0:
		lc.Caption += " Solid: routes behind the limiter; dashed: baseline routes, the limiter bypassed."
	case len(baseline) > 0:
		lc.Caption += " Every route drawn is a baseline route, the limiter bypassed."
	default:
		lc.Caption += " Every route drawn is behind the limiter; the scenario has no baseline route to compare with."
	}
	lc = chartOf(lc, p)
	if len(baseline) == 0 || len(limited) == 0 {
		oc.Missing = "No overhead to show: the scenario needs the same traffic on a limited route and on a baseline route with the limiter bypassed."
		return []chart{lc, oc}
	}
	base := latencyCurve(sc.Record.Latency[baseline[0]].FromIntended)
	op := newPlot(oc.Title, "percentile", "limited minus baseline (ms)")
	op.X.Tick.Marker = ninesTicks
	otop := 0.0
	for j, route := range limited {
		cur := latencyCurve(sc.Record.Latency[route].FromIntended)
		var diff plotter.XYs
		for k := range min(len(cur), len(base)) {
			diff = append(diff, plotter.XY{X: cur[k].X, Y: cur[k].Y - base[k].Y})
		}
		l, err := line(diff, seriesColor(j), vg.Points(1.4), false)
		if err != nil {
			oc.Missing = err.Error()
			return []chart{lc, oc}
		}
		op.Add(l)
		op.Legend.Add(route+" − "+baseline[0], l)
		otop = max(otop, diff[len(diff)-1].X)
	}
	// The axis ends where the differences do: at the percentile both
	// counts resolve.
	otop = math.Max(otop, 1)
	zero, err := line(plotter.XYs{{X: 0, Y: 0}, {X: otop, Y: 0}}, colorEnvelope, vg.Points(0.8), true)
	if err != nil {
		oc.Missing = err.Error()
		return []chart{lc, oc}
	}
	op.Add(zero)
	op.X.Min, op.X.Max = 0, otop
	oc.Caption = fmt.Sprintf("Latency of each limited route minus the baseline %s at the same percentile, from the intended send time; up to the percentile both counts resolve.", baseline[0])
	return []chart{lc, chartOf(oc, op)}
}

// instancesChart plots admitted, rejected and error requests per instance.
func instancesChart(sc *Scenario) chart {
	c := chart{ID: anchor(sc.Summary.Name, "instances"), Title: "Requests per instance"}
	d := sc.digest
	if d == nil {
		c.Missing = "No history: " + sc.HistoryError
		return c
	}
	if d.records == 0 {
		c.Missing = "The history holds no requests."
		return c
	}
	names := d.instanceNames()
	p := newPlot(c.Title, "", "requests")
	width := vg.Points(math.Max(6, math.Min(40, 300/float64(3*len(names)))))
	labels := [3]string{"admitted", "rejected", "errors"}
	cols := [3]color.Color{colorAdmitted, colorRejected, colorError}
	for o := range 3 {
		vals := make(plotter.Values, len(names))
		for i, n := range names {
			vals[i] = float64(d.instances[n].requests[o])
		}
		b, err := plotter.NewBarChart(vals, width)
		if err != nil {
			c.Missing = err.Error()
			return c
		}
		b.Color = cols[o]
		b.LineStyle.Width = 0
		b.Offset = vg.Length(o-1) * width
		p.Add(b)
		p.Legend.Add(labels[o], b)
	}
	labelsX := make([]string, len(names))
	var total int64
	for i, n := range names {
		labelsX[i] = instanceLabel(n)
		total += d.instances[n].admittedUnits
	}
	p.NominalX(labelsX...)
	var most int64
	for _, n := range names {
		most = max(most, slices.Max(d.instances[n].requests[:]))
	}
	p.Y.Min, p.Y.Max = 0, float64(most)*1.3+1
	var shares []string
	for _, n := range names {
		share := 0.0
		if total > 0 {
			share = 100 * float64(d.instances[n].admittedUnits) / float64(total)
		}
		shares = append(shares, fmt.Sprintf("%s %d (%.1f%%)", instanceLabel(n), d.instances[n].admittedUnits, share))
	}
	if len(names) == 1 {
		c.Caption = fmt.Sprintf("One instance, %s, answered every request and admitted %s.", instanceLabel(names[0]), checker.Count(int(total), "units"))
	} else {
		c.Caption = fmt.Sprintf("The budget check pools the instances: a key's admissions count against its one budget whichever instance made them. Together they admitted %s; per instance: %s.", checker.Count(int(total), "units"), strings.Join(shares, ", "))
	}
	return chartOf(c, p)
}

// retryChart plots each rejection's Retry-After against the wait until its
// key's next admitted request.
func retryChart(sc *Scenario) chart {
	c := chart{ID: anchor(sc.Summary.Name, "retry-after"), Title: "Retry-After against the time to the next admission"}
	d := sc.digest
	if d == nil {
		c.Missing = "No history: " + sc.HistoryError
		return c
	}
	rd := &d.retry
	switch {
	case rd.rejections == 0:
		c.Missing = "No request was rejected, so no Retry-After was sent."
		return c
	case len(rd.points)+len(rd.marked) == 0:
		c.Missing = fmt.Sprintf("None of the %s can be charted: %d had no Retry-After, %d gave an HTTP-date, and %d were never followed by an admission of their key.",
			checker.Count(rd.rejections, "rejections"), rd.noHeader, rd.dates, rd.unresolved)
		return c
	}
	p := newPlot(c.Title, "time from the 429 to the key's next admitted request (s)", "Retry-After (s)")
	top := 1.0
	for _, pts := range [][]retryPoint{rd.points, rd.marked} {
		for _, q := range pts {
			top = max(top, q.wait, q.ra)
		}
	}
	top *= 1.05
	diag, err := line(plotter.XYs{{X: 0, Y: 0}, {X: top, Y: top}}, colorEnvelope, vg.Points(1), false)
	if err != nil {
		c.Missing = err.Error()
		return c
	}
	p.Add(diag)
	p.Legend.Add("Retry-After = wait", diag)
	plus, err := line(plotter.XYs{{X: 0, Y: 1}, {X: top, Y: top + 1}}, colorEnvelope, vg.Points(1), true)
	if err != nil {
		c.Missing = err.Error()
		return c
	}
	p.Add(plus)
	p.Legend.Add("wait + 1 s", plus)
	for i, pts := range [][]retryPoint{rd.points, rd.marked} {
		if len(pts) == 0 {
			continue
		}
		xys := make(plotter.XYs, len(pts))
		for j, q := range pts {
			xys[j] = plotter.XY{X: q.wait, Y: q.ra}
		}
		s, err := plotter.NewScatter(xys)
		if err != nil {
			c.Missing = err.Error()
			return c
		}
		if i == 0 {
			s.GlyphStyle = draw.GlyphStyle{Color: seriesColors[0], Radius: vg.Points(1.8), Shape: draw.CircleGlyph{}}
			p.Legend.Add("rejection", s)
		} else {
			s.GlyphStyle = draw.GlyphStyle{Color: colorError, Radius: vg.Points(3.5), Shape: draw.CrossGlyph{}}
			p.Legend.Add("flagged by the retry-after check", s)
		}
		p.Add(s)
	}
	p.X.Min, p.X.Max, p.Y.Min, p.Y.Max = 0, top, 0, top+1
	c.Caption = fmt.Sprintf("Each point is a 429 (%d of %d charted", len(rd.points)+len(rd.marked), rd.rejections)
	if rd.stride > 1 {
		c.Caption += fmt.Sprintf(", one in %d shown", rd.stride)
	}
	c.Caption += fmt.Sprintf("). The next admission of the key bounds the ideal wait from above when the key kept sending, so a point far below the diagonal is a Retry-After that sent the client back too early only if the key retried at once; the retry-after check decides on the exact model. %s never followed by an admission, %d had no Retry-After.", countWere(rd.unresolved, "rejections"), rd.noHeader)
	return chartOf(c, p)
}

// formatDuration prints ns compactly: "250ms", "1.5s".
func formatDuration(ns int64) string {
	d := time.Duration(ns)
	switch {
	case d >= time.Second:
		return fmt.Sprintf("%.3g s", d.Seconds())
	case d >= time.Millisecond:
		return fmt.Sprintf("%.3g ms", float64(d)/1e6)
	case d >= time.Microsecond:
		return fmt.Sprintf("%.3g µs", float64(d)/1e3)
	}
	return fmt.Sprintf("%d ns", ns)
}

// anchor is the fragment id of a part of a scenario's section.
func anchor(scenario, part string) string {
	var b strings.Builder
	b.WriteString("s-")
	for _, r := range scenario {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	if part != "" {
		b.WriteString("--" + part)
	}
	return b.String()
}

// addKeyLines draws the violation intervals of the failed checks on keys,
// then one line per key, with their legend entries.
func addKeyLines(p *plot.Plot, checks []checker.Result, keys []string, lines [][]*plotter.Line, ymax float64) error {
	for i, r := range violations(checks, keys) {
		b, err := band(seconds(r.Proof.FromNs), seconds(r.Proof.ToNs), 0, ymax, colorViolate)
		if err != nil {
			return err
		}
		p.Add(b)
		if i == 0 {
			p.Legend.Add("violation interval", b)
		}
	}
	for i, segs := range lines {
		for j, ln := range segs {
			p.Add(ln)
			if j == 0 {
				p.Legend.Add(keys[i], ln)
			}
		}
	}
	return nil
}

// countWere is n nouns, a plural noun, with the verb that agrees: "1
// rejection was", "3 rejections were".
func countWere(n int, noun string) string {
	if n == 1 {
		return checker.Count(n, noun) + " was"
	}
	return checker.Count(n, noun) + " were"
}
