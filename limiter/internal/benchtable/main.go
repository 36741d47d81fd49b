// Command benchtable turns `go test -bench` output into the benchmark report
// of `make bench`: the median of each benchmark over its runs, and the
// ratios of ours to the anchors users would pick instead.
//
//	go test -run '^$' -bench . -count 5 ./limiter/... | go run ./limiter/internal/benchtable \
//	    -ratio 'MemoryStore/*/keys=10000 / AnchorXTimeRate/keys=10000'
//
// A ratio spec is "OURS / ANCHOR" where OURS may hold one '*', matched
// against every benchmark; a '*' in ANCHOR stands for what OURS's matched.
// The figure compared is decisions/s when the anchor reports it (ratio ≥ 1:
// ours is faster), else ns/op (ratio ≤ 1: ours is at least as fast). A
// side may name the metric it compares after a colon, to compare two
// figures of one benchmark or a latency:
//
//	-ratio 'VersusRedisRate/batched/*:store-decisions/s / VersusRedisRate/batched/*:redis_rate-decisions/s'
//	-ratio 'OverheadVersusRedisRate:reference-p50-ms / OverheadVersusRedisRate:redis_rate-p50-ms'
//
// A ratio spec may end in a goal for the ratio, " >= BOUND" or " <= BOUND",
// and its row then says whether the ratio of medians meets it:
//
//	-ratio 'VersusRedisRate/batched/*:store-decisions/s / VersusRedisRate/batched/*:redis_rate-decisions/s >= 4'
//
// A goal holds a benchmark's median to a bound, "NAME:METRIC <= BOUND" or
// ">=", and the table of goals says whether each is met:
//
//	-goal 'CheckFile/records=10M:ns/op <= 10e9'
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"os"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

type ratioFlag []string

func (r *ratioFlag) String() string     { return strings.Join(*r, ", ") }
func (r *ratioFlag) Set(v string) error { *r = append(*r, v); return nil }

func main() {
	var ratios, goals ratioFlag
	flag.Var(&ratios, "ratio", "`OURS / ANCHOR` pair to compare, optionally ending in a goal for the ratio, ' >= 4' or ' <= 0.6' (repeatable)")
	flag.Var(&goals, "goal", "`NAME:METRIC <= BOUND` (or >=) a median must meet (repeatable)")
	flag.Usage = func() {
		fmt.Fprint(flag.CommandLine.Output(), `usage: go test -bench ... | benchtable [-ratio SPEC]... [-goal SPEC]...

Reads go test -bench output on standard input and prints the median of every
benchmark over its runs, the ratios of ours to the anchors, and the goals met.
A ratio compares decisions/s when the anchor reports it (above 1: ours is
faster), else ns/op (below 1: ours is faster); a side may name its metric
after a colon, as 'Overhead:reference-p50-ms / Overhead:redis_rate-p50-ms'
(below 1: ours adds less). A '*' in OURS matches any run of characters but
'/', and stands in ANCHOR for what it matched.

`)
		flag.PrintDefaults()
	}
	flag.Parse()
	results, order, err := parse(os.Stdin)
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchtable:", err)
		os.Exit(2)
	}
	if len(order) == 0 {
		fmt.Fprintln(os.Stderr, "benchtable: no benchmark lines on standard input")
		os.Exit(2)
	}
	// A bad goal is refused before any table is printed.
	if err := writeGoals(io.Discard, results, goals); err != nil {
		fmt.Fprintln(os.Stderr, "benchtable:", err)
		os.Exit(2)
	}
	write(os.Stdout, results, order, ratios)
	if err := writeGoals(os.Stdout, results, goals); err != nil {
		fmt.Fprintln(os.Stderr, "benchtable:", err)
		os.Exit(2)
	}
}

// writeGoals writes the table of goals: each benchmark's median against
// its bound. A benchmark that did not run is "not run", not a failure. The
// error names a goal spec that does not parse.
func writeGoals(w io.Writer, results map[string]result, goals []string) error {
	if len(goals) == 0 {
		return nil
	}
	fmt.Fprintf(w, "\n| goal | benchmark | metric | median | bound | met |\n|---|---|---|---:|---:|---|\n")
	for _, spec := range goals {
		lhs, b, ok, err := cutBound(spec)
		name, unit, hasUnit := strings.Cut(strings.TrimSpace(lhs), ":")
		if !ok || !hasUnit || err != nil {
			return fmt.Errorf("-goal %q: want NAME:METRIC <= BOUND or NAME:METRIC >= BOUND, as 'CheckFile/records=10M:ns/op <= 10e9'", spec)
		}
		vs := results[name][unit]
		if len(vs) == 0 {
			fmt.Fprintf(w, "| %s | %s | %s | (not run) | %s | |\n", spec, name, unit, format(b.limit))
			continue
		}
		m := median(vs)
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s |\n", spec, name, unit, format(m), format(b.limit), b.met(m))
	}
	return nil
}

// bound is a goal's side and limit: a value meets it when it is at most
// (le) or at least (!le) limit.
type bound struct {
	le    bool
	limit float64
}

func (b bound) met(v float64) string {
	if b.le && v <= b.limit || !b.le && v >= b.limit {
		return "yes"
	}
	return "NO"
}

func (b bound) String() string {
	if b.le {
		return "<= " + format(b.limit)
	}
	return ">= " + format(b.limit)
}

// cutBound splits "SPEC <= N" or "SPEC >= N" into SPEC and its bound; ok
// is false when spec names no bound, err when the bound is not a number.
func cutBound(spec string) (rest string, b bound, ok bool, err error) {
	for _, op := range []string{" <= ", " >= "} {
		if lhs, rhs, found := strings.Cut(spec, op); found {
			limit, err := strconv.ParseFloat(strings.TrimSpace(rhs), 64)
			return lhs, bound{le: op == " <= ", limit: limit}, true, err
		}
	}
	return spec, bound{}, false, nil
}

// result is every run of one benchmark: unit → values.
type result map[string][]float64

var procSuffix = regexp.MustCompile(`-\d+$`)

func parse(r io.Reader) (map[string]result, []string, error) {
	results := map[string]result{}
	var order []string
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 4 || !strings.HasPrefix(fields[0], "Benchmark") {
			continue
		}
		name := procSuffix.ReplaceAllString(strings.TrimPrefix(fields[0], "Benchmark"), "")
		res, ok := results[name]
		if !ok {
			res = result{}
			results[name] = res
			order = append(order, name)
		}
		for i := 2; i+1 < len(fields); i += 2 {
			v, err := strconv.ParseFloat(fields[i], 64)
			if err != nil {
				return nil, nil, fmt.Errorf("line %q: value %q: %w", sc.Text(), fields[i], err)
			}
			res[fields[i+1]] = append(res[fields[i+1]], v)
		}
	}
	return results, order, sc.Err()
}

func median(vs []float64) float64 {
	s := slices.Clone(vs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// mainUnit is the figure a benchmark is judged by: "decisions/s" when it
// reports it, else ns/op.
func mainUnit(r result) string {
	if _, ok := r["decisions/s"]; ok {
		return "decisions/s"
	}
	return "ns/op"
}

// otherUnits are a benchmark's custom metrics, sorted.
func otherUnits(r result) []string {
	var units []string
	for unit := range r {
		switch unit {
		case "ns/op", "B/op", "allocs/op":
		default:
			units = append(units, unit)
		}
	}
	slices.Sort(units)
	return units
}

func write(w io.Writer, results map[string]result, order []string, ratios []string) {
	fmt.Fprintf(w, "| benchmark | runs | median ns/op | median allocs/op | other metrics (median) |\n|---|---:|---:|---:|---|\n")
	for _, name := range order {
		r := results[name]
		var others []string
		for _, u := range otherUnits(r) {
			others = append(others, format(median(r[u]))+" "+u)
		}
		other := strings.Join(others, ", ")
		allocs := "-"
		if a, ok := r["allocs/op"]; ok {
			allocs = format(median(a))
		}
		fmt.Fprintf(w, "| %s | %d | %s | %s | %s |\n", name, len(r["ns/op"]), format(median(r["ns/op"])), allocs, other)
	}
	if len(ratios) == 0 {
		return
	}
	fmt.Fprintf(w, "\n| ours | anchor | metric | ours | anchor | ratio ours/anchor | goal | met |\n|---|---|---|---:|---:|---:|---|---|\n")
	for _, spec := range ratios {
		pair, goal, hasGoal, err := cutBound(spec)
		oursSpec, anchorSpec, ok := strings.Cut(pair, " / ")
		if !ok || err != nil {
			fmt.Fprintf(w, "| %s | (bad spec: want \"OURS / ANCHOR\", then \" >= N\" or \" <= N\" if a goal) | | | | | | |\n", spec)
			continue
		}
		goalCell := ""
		if hasGoal {
			goalCell = goal.String()
		}
		ours, oursUnit := side(oursSpec)
		anchorPattern, anchorUnit := side(anchorSpec)
		matched := false
		for _, name := range order {
			star, ok := match(ours, name)
			if !ok {
				continue
			}
			anchor := strings.Replace(anchorPattern, "*", star, 1)
			if name == anchor && oursUnit == anchorUnit {
				continue
			}
			a, found := results[anchor]
			if !found {
				continue
			}
			matched = true
			aUnit := anchorUnit
			if aUnit == "" {
				aUnit = mainUnit(a)
			}
			oUnit := oursUnit
			if oUnit == "" {
				oUnit = aUnit
			}
			o, b := results[name][oUnit], a[aUnit]
			if len(o) == 0 || len(b) == 0 {
				fmt.Fprintf(w, "| %s | %s | %s / %s | (not reported) | | | %s | |\n", name, anchor, oUnit, aUnit, goalCell)
				continue
			}
			metric := aUnit
			if oUnit != aUnit {
				metric = oUnit + " / " + aUnit
			}
			ratio := median(o) / median(b)
			met := ""
			if hasGoal {
				met = goal.met(ratio)
			}
			fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %.2f | %s | %s |\n", name, anchor, metric, format(median(o)), format(median(b)), ratio, goalCell, met)
		}
		if !matched {
			fmt.Fprintf(w, "| %s | %s (not run) | | | | | %s | |\n", strings.TrimSpace(oursSpec), strings.TrimSpace(anchorSpec), goalCell)
		}
	}
}

// side splits one side of a ratio spec into its benchmark pattern and the
// metric it names after a colon, if any.
func side(spec string) (pattern, unit string) {
	pattern, unit, _ = strings.Cut(strings.TrimSpace(spec), ":")
	return pattern, unit
}

// match reports whether name matches pattern (one '*' standing for any run
// of characters but '/') and what the '*' matched.
func match(pattern, name string) (string, bool) {
	if ok, _ := path.Match(pattern, name); !ok {
		return "", false
	}
	before, after, star := strings.Cut(pattern, "*")
	if !star {
		return "", true
	}
	return name[len(before) : len(name)-len(after)], true
}

func format(v float64) string {
	switch {
	case v >= 1000:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case v >= 10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	}
	return strconv.FormatFloat(v, 'f', 2, 64)
}
