package httplimit_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/rlbench/rlbench/limiter"
	"github.com/rlbench/rlbench/limiter/httplimit"
)

func ExampleNew() {
	plan := limiter.Limit{Name: "minute", Algorithm: limiter.GCRA, Rate: 60, Period: time.Minute, Burst: 2}
	frozen := func() time.Time { return time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC) } // a fixed clock keeps the output exact
	mw, err := httplimit.New(limiter.NewMemoryStore(limiter.WithClock(frozen)),
		httplimit.WithAuthenticator(func(r *http.Request) (httplimit.Identity, error) {
			if r.Header.Get("X-API-Key") != "demo" {
				return httplimit.Identity{}, fmt.Errorf("%w: unknown API key", httplimit.ErrUnauthenticated)
			}
			return httplimit.Identity{Key: "demo", Limits: []limiter.Limit{plan}}, nil
		}),
		httplimit.WithRoutes(
			httplimit.Route{Pattern: "POST /v1/reports/export", Name: "export", Cost: 2},
			httplimit.Route{Pattern: "/healthz", Skip: true},
		),
	)
	if err != nil {
		panic(err)
	}
	h := mw.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	for _, path := range []string{"/v1/data", "/v1/data", "/v1/data", "/healthz"} {
		r := httptest.NewRequest("GET", path, nil)
		r.Header.Set("X-API-Key", "demo")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		fmt.Printf("%s %d RateLimit=%s Retry-After=%q\n", path, w.Code, w.Header().Get("RateLimit"), w.Header().Get("Retry-After"))
	}
	// Output:
	// /v1/data 200 RateLimit="minute";r=1;t=1 Retry-After=""
	// /v1/data 200 RateLimit="minute";r=0;t=2 Retry-After=""
	// /v1/data 429 RateLimit="minute";r=0;t=2 Retry-After="1"
	// /healthz 200 RateLimit= Retry-After=""
}
