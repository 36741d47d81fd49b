package reports

import (
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"maps"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/rlbench/rlbench/harness/checker"
	"github.com/rlbench/rlbench/harness/history"
	"github.com/rlbench/rlbench/harness/runrecord"
)

//go:embed report.tmpl.html
var reportTemplate string

var htmlTemplate = template.Must(template.New("report").Funcs(template.FuncMap{
	"mul100":      func(f float64) float64 { return 100 * f },
	"burstSpread": burstSpread,
	// count is checker.Count for the template's ints and int64s.
	"count": func(n any, noun string) string {
		switch n := n.(type) {
		case int:
			return checker.Count(n, noun)
		case int64:
			return checker.Count(int(n), noun)
		}
		return fmt.Sprint(n, " ", noun)
	},
}).Parse(reportTemplate))

// WriteHTML writes run as one self-contained HTML page: the verdict of every
// check (failures first, each with its proof one click away), the run's
// metadata, then per scenario the charts as inline SVG and the requests of
// every failed check. The page loads nothing: no script, font, image or
// style from anywhere, and it prints. Its content depends on run alone, so
// the same run always renders the same bytes. Errors are those of w.
func WriteHTML(w io.Writer, run *Run) error {
	pg := buildPage(run)
	if err := htmlTemplate.Execute(w, pg); err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	return nil
}

// fact is one labelled value of a header; Note, when set, is the longer
// explanation a reader sees on hovering it.
type fact struct{ Label, Value, Note string }

type page struct {
	Verdict      string
	VerdictClass string
	// Totals counts the scenarios by status (TotalsLine), CheckCounts the
	// checks; HarnessNote is HarnessErrorNote when the run's status is
	// error.
	Totals        string
	CheckCounts   string
	HarnessNote   string
	Meta          []fact
	Overview      []overviewRow
	Skipped       []checker.SkippedScenario
	Checks        []checkRow
	Sections      []section
	GeneratedNote string
}

type overviewRow struct {
	Name, Anchor, Verdict, VerdictClass string
	Seed, Redis, Instances, Duration    string
}

type checkRow struct {
	Scenario, ScenarioAnchor     string
	Label, Verdict, VerdictClass string
	Observed, Bound, Unit        string
	Explanation                  string
	Proof                        *proofView
	// Open shows the proof without a click: the first failure's is open.
	Open bool
}

type proofView struct {
	Anchor     string
	Check      string
	Key        string
	Interval   string
	RequestIDs string
	Instances  []checker.InstanceShare
	Rows       []requestRow
	Summary    string
	Missing    string
}

type requestRow struct {
	ID, Key, Instance, Route, Cost, Sent, Received, Status, Outcome, RetryAfter string
	Named                                                                       bool
}

type section struct {
	Name, Anchor, Verdict, VerdictClass, Description string
	Facts                                            []fact
	Phases                                           []runrecord.PhaseRecord
	Latency                                          []latencyRow
	Charts                                           []chart
	Proofs                                           []*proofView
	Problem                                          string
}

type latencyRow struct {
	Route, Kind string
	Values      []string
}

// latencyQuantiles are the percentiles the latency table lists.
var latencyQuantiles = []float64{50, 90, 99, 99.9, 100}

// statusText is a status as the page shows it, and its CSS class: a
// harness's error is ERROR, apart from the limiter's FAIL.
func statusText(s checker.Status) (text, class string) {
	switch s {
	case checker.StatusPass:
		return "✓ pass", "pass"
	case checker.StatusFail:
		return "✗ FAIL", "fail"
	case checker.StatusError:
		return "⚠ ERROR", "error"
	case checker.StatusSkipped:
		return "– skipped", "skipped"
	}
	return "? unknown", "unknown"
}

// statusRank orders the checks table: the limiter's failures, its unknown
// verdicts, the harness's errors, then passes.
func statusRank(class string) int {
	switch checker.Status(class) {
	case checker.StatusFail:
		return 0
	case checker.StatusUnknown:
		return 1
	case checker.StatusError:
		return 2
	}
	return 3
}

func buildPage(run *Run) *page {
	pg := &page{}
	pg.Verdict, pg.VerdictClass = statusText(run.Summary.Status)
	pg.Totals = TotalsLine(run.Summary.Totals)
	pg.HarnessNote = ErrorNote(run.Summary)
	pg.Meta = metaFacts(run)
	pg.Skipped = run.Summary.Skipped
	var failed, unknown, errs, passed int
	for _, sc := range run.Scenarios {
		pg.Overview = append(pg.Overview, overviewOf(sc))
		proofs := proofViews(sc)
		sec := sectionOf(sc, proofs)
		for _, r := range sc.Summary.Checks {
			v, cls := statusText(r.Status())
			row := checkRow{
				Scenario: sc.Summary.Name, ScenarioAnchor: anchor(sc.Summary.Name, ""),
				Label: CheckLabel(r), Verdict: v, VerdictClass: cls,
				Observed: FormatNumber(r.Observed), Bound: FormatNumber(r.Bound), Unit: checker.UnitFor(r.Observed, r.Unit), Explanation: r.Explanation,
			}
			if r.Verdict != checker.Pass {
				for _, pv := range proofs {
					if pv.Check == CheckLabel(r) && row.Proof == nil {
						row.Proof = pv
					}
				}
			}
			switch r.Status() {
			case checker.StatusFail:
				failed++
			case checker.StatusPass:
				passed++
			case checker.StatusError:
				errs++
			default:
				unknown++
			}
			pg.Checks = append(pg.Checks, row)
		}
		pg.Sections = append(pg.Sections, sec)
	}
	for _, sk := range run.Summary.Skipped {
		v, cls := statusText(checker.StatusSkipped)
		pg.Overview = append(pg.Overview, overviewRow{Name: sk.Name, Verdict: v, VerdictClass: cls})
	}
	pg.CheckCounts = fmt.Sprintf("Checks: %d failed, %d unknown, %s, %d passed", failed, unknown, checker.Count(errs, "harness errors"), passed)
	slices.SortStableFunc(pg.Checks, func(a, b checkRow) int {
		return statusRank(a.VerdictClass) - statusRank(b.VerdictClass)
	})
	if len(pg.Checks) > 0 && pg.Checks[0].VerdictClass == string(checker.Fail) && pg.Checks[0].Proof != nil {
		pg.Checks[0].Open = true
	}
	return pg
}

func metaFacts(run *Run) []fact {
	var fs []fact
	if rec := run.Record; rec != nil {
		m := rec.Meta
		fs = append(fs,
			fact{Label: "rlbench", Value: versionLabel(m.Version, m.Commit), Note: fmt.Sprintf("version %s, commit %s", orDash(m.Version), orDash(m.Commit))},
			fact{Label: "Go", Value: m.GoVersion},
			fact{Label: "machine", Value: fmt.Sprintf("%s %s/%s, %d CPUs", m.Hostname, m.OS, m.Arch, m.CPUs)},
			fact{Label: "start", Value: m.Start.UTC().Format(time.RFC3339)},
			fact{Label: "duration", Value: m.Duration.Round(time.Millisecond).String()},
		)
		if g := m.Generator; g != nil {
			fs = append(fs, fact{Label: "generator ceiling", Value: fmt.Sprintf("%.0f req/s, p99 %s", g.Rate, formatDuration(int64(g.P99))),
				Note: fmt.Sprintf("the load generator's rate against a no-op handler on this machine (p50 %v, p99 %v)", g.P50, g.P99)})
		}
		var redis []string
		for _, s := range rec.Scenarios {
			if r := redisLabel(s.Redis); r != "" && !slices.Contains(redis, r) {
				redis = append(redis, r)
			}
		}
		if len(redis) > 0 {
			fs = append(fs, fact{Label: "Redis", Value: strings.Join(redis, "; ")})
		}
		if d := m.ClockDrill; d != nil {
			fs = append(fs, fact{Label: "clock drill", Value: fmt.Sprintf("skew %v, misreport %v, uncertainty floor %v", d.Skew, d.Misreport, d.UncertaintyFloor),
				Note: "the run told a fiction about its clock, for a drill or a test: a misreport makes the recorded offsets wrong"})
		}
	} else {
		fs = append(fs, fact{Label: "run record", Value: "run.json is absent: software, machine and load are unknown"})
	}
	fs = append(fs, fact{Label: "summary written", Value: run.Summary.Generated.UTC().Format(time.RFC3339)})
	return fs
}

// pseudoVersion matches a Go pseudo-version's timestamp and revision
// ("v0.0.0-20261130200520-1b8651ffbfe0"), which name no release.
var pseudoVersion = regexp.MustCompile(`[-.]\d{14}-[0-9a-f]{12}(?:\+[0-9A-Za-z.]+)?$`)

// versionLabel is the binary's version and commit in a few words: "v0.9.0
// 4f2c1e7" for a release, "commit 1b8651ffbfe0+dirty" for a build between
// releases (a pseudo-version or devel), "devel" when nothing is known.
func versionLabel(version, commit string) string {
	c := shortCommit(commit)
	release := version != "" && version != "devel" && !pseudoVersion.MatchString(version)
	switch {
	case release && c != "":
		return version + " " + c
	case release:
		return version
	case c != "":
		return "commit " + c
	}
	return orDash(version)
}

// shortCommit shortens a full VCS revision to its first 12 hex digits,
// keeping a "+dirty" mark: "5830657d6ad7+dirty". Anything else is returned
// as it is, "unknown" as "".
func shortCommit(c string) string {
	if c == "unknown" {
		return ""
	}
	hash, suffix, _ := strings.Cut(c, "+")
	if len(hash) > 12 && strings.Trim(hash, "0123456789abcdef") == "" {
		hash = hash[:12]
	}
	if suffix != "" {
		return hash + "+" + suffix
	}
	return hash
}

func redisLabel(r runrecord.RedisInfo) string {
	switch {
	case r.Provider == "" && r.Version == "":
		return ""
	case r.Version == "":
		return r.Provider
	}
	return fmt.Sprintf("%s, Redis %s", r.Provider, r.Version)
}

func overviewOf(sc *Scenario) overviewRow {
	row := overviewRow{Name: sc.Summary.Name, Anchor: anchor(sc.Summary.Name, "")}
	row.Verdict, row.VerdictClass = statusText(sc.Summary.Status)
	if rec := sc.Record; rec != nil {
		row.Seed = strconv.FormatInt(rec.Seed, 10)
		row.Redis = redisLabel(rec.Redis)
		row.Instances = strconv.Itoa(len(rec.Instances))
		row.Duration = rec.Duration.Round(time.Millisecond).String()
	}
	return row
}

func sectionOf(sc *Scenario, proofs []*proofView) section {
	s := section{Name: sc.Summary.Name, Anchor: anchor(sc.Summary.Name, ""), Proofs: proofs}
	s.Verdict, s.VerdictClass = statusText(sc.Summary.Status)
	if rec := sc.Record; rec != nil {
		s.Description = rec.Description
		s.Facts = append(s.Facts,
			fact{Label: "seed", Value: strconv.FormatInt(rec.Seed, 10)},
			fact{Label: "start", Value: rec.Start.UTC().Format(time.RFC3339Nano)},
			fact{Label: "duration", Value: rec.Duration.Round(time.Millisecond).String()},
			fact{Label: "Redis", Value: orDash(redisLabel(rec.Redis))},
			fact{Label: "instances", Value: orDash(strings.Join(rec.Instances, ", "))},
			fact{Label: "clock offset", Value: clockFact(rec)},
		)
		if a := rec.AgreedStart; a != nil {
			s.Facts = append(s.Facts, fact{Label: "agreed start", Value: agreedStartFact(a)})
		}
		s.Facts = append(s.Facts, shardFacts(rec)...)
		if c := rec.Checks; c != nil && c.Headers != nil && !*c.Headers {
			s.Facts = append(s.Facts, fact{Label: "header checks", Value: "not run (checks.headers: false): retry-after, ratelimit-fields, header-style"})
		}
		if rec.Source != "" {
			s.Facts = append(s.Facts, fact{Label: "scenario file", Value: rec.Source})
		}
		var routes []string
		for _, rt := range rec.Routes {
			r := fmt.Sprintf("%s cost %d", rt.Path, rt.Cost)
			switch {
			case rt.Baseline:
				r += " (baseline, no limiter)"
			case len(rt.Limits) > 0:
				r += ": " + strings.Join(rt.Limits, " + ")
			}
			routes = append(routes, r)
		}
		if len(routes) > 0 {
			s.Facts = append(s.Facts, fact{Label: "routes", Value: strings.Join(routes, "; ")})
		}
		if rec.Dropped > 0 {
			s.Facts = append(s.Facts, fact{Label: "dropped results", Value: strconv.Itoa(rec.Dropped)})
		}
		s.Phases = rec.Phases
		s.Latency = latencyRows(rec)
		if rec.Error != "" {
			s.Problem = "The scenario could not run: " + rec.Error
		}
	}
	switch d := sc.digest; {
	case sc.Summary.Counts != nil:
		// The verdict table's own counts, so that the report never counts
		// otherwise.
		s.Facts = append(s.Facts, fact{Label: "history", Value: CountsLine(*sc.Summary.Counts)})
	case d != nil:
		s.Facts = append(s.Facts, fact{Label: "history", Value: fmt.Sprintf("%s, %s, %d on routes without limits", checker.Count(d.records, "requests"), d.keysPhrase(slices.Collect(maps.Keys(d.keys))), d.unrouted)})
	}
	s.Charts = append(s.Charts, outcomesChart(sc))
	s.Charts = append(s.Charts, budgetCharts(sc)...)
	s.Charts = append(s.Charts, instancesChart(sc))
	s.Charts = append(s.Charts, latencyCharts(sc)...)
	s.Charts = append(s.Charts, retryChart(sc))
	return s
}

// clockFact is the limiter's clock offset as a scenario's facts show it:
// the offset with its uncertainty and source, or why there is none.
func clockFact(rec *runrecord.ScenarioRecord) string {
	if !rec.ClockKnown() {
		return "unknown: window checks use offset-free bounds"
	}
	v := fmt.Sprintf("%v ± %v", rec.ClockOffset, rec.ClockUncertainty)
	switch rec.ClockSource {
	case history.ClockRedisTime:
		v += " (Redis TIME)"
	case history.ClockHTTPDate:
		v += " (the target's Date headers)"
	case history.ClockDeclared:
		v += " (declared by the scenario)"
	case history.ClockLocal:
		v += " (this host's clock)"
	}
	return v
}

// agreedStartFact is the start a scenario's first phase waited for, as its
// facts show it: when, on which clock, how it was agreed and how late the
// phase began.
func agreedStartFact(a *runrecord.AgreedStart) string {
	v := a.At.UTC().Format(time.RFC3339Nano)
	if a.Clock == runrecord.StartClockLimiter {
		v += " on the limiter's clock"
	} else {
		v += " on this host's clock"
	}
	if a.By == runrecord.StartBarrier {
		v += ", agreed at barrier " + a.Barrier
	} else {
		v += ", given by --start-at"
	}
	return v + fmt.Sprintf("; began %v after it (tolerance %v)", a.Late.Round(time.Microsecond), a.Tolerance)
}

// shardFacts are a merged run's shards as its scenario's facts show them:
// per shard its host, records, clock offset with its uncertainty and
// source, where the merge placed it, and its load generator's ceiling.
func shardFacts(rec *runrecord.ScenarioRecord) []fact {
	var fs []fact
	for _, sh := range rec.Shards {
		v := fmt.Sprintf("%s, clock offset %s, placed at +%v", checker.Count(sh.Records, "records"),
			clockFact(&runrecord.ScenarioRecord{ClockOffset: sh.ClockOffset, ClockUncertainty: sh.ClockUncertainty, ClockSource: sh.ClockSource}), sh.Shift)
		if sh.Hostname != "" {
			v = sh.Hostname + ": " + v
		}
		f := fact{Label: "shard " + sh.Shard.String(), Value: v,
			Note: fmt.Sprintf("run directory %s; each request's interval widened by ± %v on the merged clock", sh.Dir, sh.ClockUncertainty)}
		if g := sh.Generator; g != nil {
			f.Value += fmt.Sprintf(", generator ceiling %.0f req/s", g.Rate)
		}
		fs = append(fs, f)
	}
	return fs
}

func orDash(s string) string {
	if s == "" {
		return "—"
	}
	return s
}

func latencyRows(rec *runrecord.ScenarioRecord) []latencyRow {
	var rows []latencyRow
	for _, route := range slices.Sorted(maps.Keys(rec.Latency)) {
		l := rec.Latency[route]
		if vals := quantiles(l.FromIntended); vals != nil {
			rows = append(rows, latencyRow{Route: route, Kind: "from intended send", Values: vals})
		}
		if vals := quantiles(l.FromSent); vals != nil {
			rows = append(rows, latencyRow{Route: route, Kind: "from actual send", Values: vals})
		}
	}
	return rows
}

// quantiles formats a snapshot's latencyQuantiles in ms; nil when empty.
func quantiles(s *hdrhistogram.Snapshot) []string {
	if s == nil {
		return nil
	}
	h := hdrhistogram.Import(s)
	if h.TotalCount() == 0 {
		return nil
	}
	out := make([]string, len(latencyQuantiles))
	for i, q := range latencyQuantiles {
		out[i] = strconv.FormatFloat(float64(h.ValueAtQuantile(q))/1000, 'f', 3, 64)
	}
	return out
}

func proofViews(sc *Scenario) []*proofView {
	var out []*proofView
	n := 0
	for _, r := range sc.Summary.Checks {
		if r.Verdict == checker.Pass || r.Proof == nil {
			continue
		}
		p := r.Proof
		pv := &proofView{
			Anchor: anchor(sc.Summary.Name, fmt.Sprintf("proof-%d", n)), Check: CheckLabel(r), Key: p.Key,
			Interval:  fmt.Sprintf("%s – %s after the start (%d ns – %d ns; %s long)", formatMs(p.FromNs), formatMs(p.ToNs), p.FromNs, p.ToNs, formatDuration(p.ToNs-p.FromNs)),
			Instances: p.Instances,
		}
		ids := make([]string, len(p.RequestIDs))
		for i, id := range p.RequestIDs {
			ids[i] = strconv.FormatUint(id, 10)
		}
		pv.RequestIDs = strings.Join(ids, ", ")
		var pd *proofDigest
		if sc.digest != nil && n < len(sc.digest.proofs) {
			pd = sc.digest.proofs[n]
		}
		switch {
		case pd == nil:
			pv.Missing = "The requests cannot be listed: " + orDash(sc.HistoryError)
		default:
			// Bold marks the named requests only when others are listed too.
			mark := false
			for _, rec := range pd.rows {
				mark = mark || !pd.ids[rec.ID]
			}
			for _, rec := range pd.rows {
				pv.Rows = append(pv.Rows, requestRowOf(&rec, mark && pd.ids[rec.ID]))
			}
			pv.Summary = fmt.Sprintf("%s named by the proof or of its key on a limited route within the interval: %d admitted (%s), %d rejected, %d unknown",
				checker.Count(pd.total, "requests"), pd.byOut[0], checker.Count(int(pd.units[0]), "units"), pd.byOut[1], pd.byOut[2])
			if len(pd.rows) < pd.total {
				pv.Summary += fmt.Sprintf("; first %d of %d shown, the named ones first", len(pd.rows), pd.total)
			}
			pv.Summary += "."
			if mark {
				pv.Summary += " Bold: the requests the proof names."
			}
		}
		out = append(out, pv)
		n++
	}
	return out
}

func requestRowOf(r *history.Record, named bool) requestRow {
	ra := r.Headers["retry-after"]
	return requestRow{
		ID: strconv.FormatUint(r.ID, 10), Key: r.Key, Instance: r.Instance, Route: r.Route,
		Cost: strconv.FormatInt(r.Cost, 10), Sent: formatMs(r.SentNs), Received: formatMs(r.ReceivedNs),
		Status: strconv.Itoa(r.Status), Outcome: r.Outcome.String(), RetryAfter: ra, Named: named,
	}
}

// formatMs prints ns since the start in milliseconds with microsecond precision.
func formatMs(ns int64) string {
	return strconv.FormatFloat(float64(ns)/1e6, 'f', 3, 64) + " ms"
}

// burstSpread is a phase's burst spread as the traffic phases table shows
// it, in ms: "planned / achieved", the achieved one each burst's
// (runrecord.BurstRecord.Achieved: first to last send, or first to last
// request written whole when that is wider), as "least–widest" over
// several bursts; "–" for a phase without bursts. Records without the
// bursts give the widest, PhaseRecord.AchievedSpread.
func burstSpread(p runrecord.PhaseRecord) string {
	if len(p.Bursts) == 0 && p.Spread == 0 && p.AchievedSpread == 0 {
		return "–"
	}
	achieved := msNumber(p.AchievedSpread)
	if len(p.Bursts) > 0 {
		least, widest := p.Bursts[0].Achieved, p.Bursts[0].Achieved
		for _, b := range p.Bursts[1:] {
			least, widest = min(least, b.Achieved), max(widest, b.Achieved)
		}
		achieved = msNumber(widest)
		if least != widest {
			achieved = msNumber(least) + "–" + achieved
		}
	}
	return msNumber(p.Spread) + " / " + achieved
}

// msNumber is d in milliseconds to the microsecond, as FormatNumber prints
// it: 2.5 ms is "2.5", 3 ms "3".
func msNumber(d time.Duration) string {
	return FormatNumber(math.Round(float64(d)/1e3) / 1e3)
}
