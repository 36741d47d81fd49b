package reports

import (
	"testing"
	"time"

	"github.com/rlbench/rlbench/harness/checker"
	"github.com/rlbench/rlbench/harness/history"
)

// TestDigestRoutesByKey: with policies that name their keys (a history of
// identity groups), each record counts on the limits of its own key's
// entry, as the checker judges it, and captions name the keys.
func TestDigestRoutesByKey(t *testing.T) {
	h := history.NewHeader(time.Unix(1_700_000_000, 0))
	h.Policies = []history.RoutePolicy{
		{Route: "/api/items", Key: "free-*", Limits: []string{"gcra:60/1m,burst=10"}},
		{Route: "/api/items", Key: "pro-*", Limits: []string{"gcra:600/1m,burst=100"}},
		{Route: "/api/items", Limits: []string{"gcra:120/1m,burst=20"}},
	}
	d := newDigest(h, checker.ScenarioSummary{}, nil)
	for i, key := range []string{"free-0000", "pro-0000", "pro-0001", "key-0000", "pro-0000"} {
		d.add(&history.Record{ID: uint64(i + 1), Key: key, Route: "/api/items", Cost: 1, SentNs: int64(i), ReceivedNs: int64(i + 1), Status: 200})
	}
	if len(d.routes) != 3 {
		t.Fatalf("%d route digests, want 3", len(d.routes))
	}
	for i, want := range []int64{1, 3, 1} {
		if got := d.routes[i].requests; got != want {
			t.Errorf("%s: %d requests, want %d", d.routes[i].limitsLabel(), got, want)
		}
	}
	if got, want := d.routes[1].limitsLabel(), "/api/items, keys pro-*: 600 req/min (burst 100, gcra)"; got != want {
		t.Errorf("caption %q, want %q", got, want)
	}
}
