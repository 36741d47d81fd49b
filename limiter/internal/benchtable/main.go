// Command benchtable turns `go test -bench` output into the benchmark report
// of `make bench`: the median of each benchmark over its runs, and the
// ratios of ours to the anchors users would pick instead.
//
//	go test -run '^$' -bench . -count 5 ./limiter/... | go run ./limiter/internal/benchtable \
//	    -ratio 'MemoryStore/*/keys=10000 / AnchorXTimeRate/keys=10000'
//
// A ratio spec is "OURS / ANCHOR" where OURS may hold one '*', matched
// against every benchmark. The figure compared is decisions/s when the
// anchor reports it (ratio ≥ 1: ours is faster), else ns/op (ratio ≤ 1:
// ours is at least as fast).
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
	var ratios ratioFlag
	flag.Var(&ratios, "ratio", "`OURS / ANCHOR` pair to compare (repeatable)")
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
	write(os.Stdout, results, order, ratios)
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
	fmt.Fprintf(w, "\n| ours | anchor | metric | ours | anchor | ratio ours/anchor |\n|---|---|---|---:|---:|---:|\n")
	for _, spec := range ratios {
		ours, anchor, ok := strings.Cut(spec, " / ")
		if !ok {
			fmt.Fprintf(w, "| %s | (bad spec: want \"OURS / ANCHOR\") | | | | |\n", spec)
			continue
		}
		a, found := results[strings.TrimSpace(anchor)]
		if !found {
			fmt.Fprintf(w, "| %s | %s (not run) | | | | |\n", ours, anchor)
			continue
		}
		unit := mainUnit(a)
		for _, name := range order {
			if matched, _ := path.Match(strings.TrimSpace(ours), name); !matched || name == strings.TrimSpace(anchor) {
				continue
			}
			o := median(results[name][unit])
			b := median(a[unit])
			fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %.2f |\n", name, strings.TrimSpace(anchor), unit, format(o), format(b), o/b)
		}
	}
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
