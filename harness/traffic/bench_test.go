package traffic

import (
	"testing"
	"time"

	"github.com/rlbench/rlbench/scenarios"
)

// BenchmarkPlan measures drawing one planned request (identity, route,
// instance), which happens once per request before a phase starts.
func BenchmarkPlan(b *testing.B) {
	for _, dist := range []string{"  count: 1000", "  count: 1000\n  distribution: hot\n  share: 0.8", "  count: 1000\n  distribution: zipf\n  s: 1.1"} {
		sc := scenario(b, 3, oneRoute, dist, "  - {kind: constant, rate: 1/1s, duration: 1s}")
		b.Run(string(sc.Identities.Distribution), func(b *testing.B) {
			b.ReportAllocs()
			p := newPlanner(sc, sc.Phases[0], newRand(1, 0), 0)
			for b.Loop() {
				p.next()
			}
		})
	}
}

// BenchmarkTarget measures building a request's method, URL and headers,
// done on the sending path of every request.
func BenchmarkTarget(b *testing.B) {
	sc := scenario(b, 3, oneRoute, "  count: 10", "  - {kind: constant, rate: 1/1s, duration: 1s}")
	e, err := newEngine(Config{Scenario: sc, BaseURLs: []string{"http://a", "http://b", "http://c"}})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		id := uint64(0)
		for pb.Next() {
			id++
			e.target(item{identity: int(id % 10), instance: int(id % 3)}, id)
		}
	})
}

// BenchmarkCollect measures the statistics goroutine's work per result: the
// generator's throughput cannot exceed its inverse.
func BenchmarkCollect(b *testing.B) {
	c := newCollector([]scenarios.Phase{{Name: "p", Kind: scenarios.Constant}}, Config{HandoffBuffer: 1 << 10, LagTolerance: DefaultLagTolerance})
	now := time.Now()
	r := &Result{Route: "/api/items", Status: 200, Intended: now, Sent: now.Add(time.Millisecond), Received: now.Add(3 * time.Millisecond)}
	b.ReportAllocs()
	for b.Loop() {
		c.account(r)
	}
}
