package traffic

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"
)

// Calibration is the load generator's own ceiling on this machine: the rate
// it sustains against a handler that does nothing, over loopback.
type Calibration struct {
	// Requests answered and the Duration they took.
	Requests int
	Duration time.Duration
	// Rate is Requests/Duration, per second: schedules planning a rate near
	// it measure the generator, not the target.
	Rate float64
	// P50 and P99 are the no-op round trip's latency quantiles.
	P50, P99 time.Duration
	// Errors counts requests without a 2xx answer.
	Errors int
}

// Defaults for Calibrate.
const (
	// DefaultCalibrationDuration bounds a calibration's attack.
	DefaultCalibrationDuration = time.Second
	// DefaultCalibrationRequests bounds its request count.
	DefaultCalibrationRequests = 50_000
)

// Calibrate measures the generator's ceiling: a vegeta attack with no pacing
// limit, workers bounded by maxWorkers (DefaultMaxWorkers when 0), against a
// no-op handler served on a loopback port for at most d (when 0,
// DefaultCalibrationDuration) and at most DefaultCalibrationRequests
// requests. It is safe to call concurrently with nothing else running on the
// machine only; the result is a measurement, not a guarantee.
func Calibrate(ctx context.Context, d time.Duration, maxWorkers uint64) (Calibration, error) {
	if d <= 0 {
		d = DefaultCalibrationDuration
	}
	if maxWorkers == 0 {
		maxWorkers = DefaultMaxWorkers
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return Calibration{}, fmt.Errorf("calibrate: %w", err)
	}
	srv := &http.Server{
		Handler:           http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) }),
		ReadHeaderTimeout: 5 * time.Second,
	}
	go srv.Serve(ln)
	defer srv.Close()

	tr := newTransport(int(min(maxWorkers, 1<<16)))
	defer tr.CloseIdleConnections()
	atk := vegeta.NewAttacker(
		vegeta.Client(&http.Client{Transport: tr, Timeout: DefaultTimeout}),
		vegeta.Workers(min(DefaultWorkers, maxWorkers)),
		vegeta.MaxWorkers(maxWorkers),
		vegeta.MaxBody(0),
	)
	target := vegeta.Target{Method: http.MethodGet, URL: "http://" + ln.Addr().String() + "/"}
	pacer := vegeta.PacerFunc(func(elapsed time.Duration, hits uint64) (time.Duration, bool) {
		return 0, hits >= DefaultCalibrationRequests
	})
	results := atk.Attack(vegeta.NewStaticTargeter(target), unpaced{pacer}, d, "calibrate")
	stop := context.AfterFunc(ctx, func() { atk.Stop() })
	defer stop()
	hist := newHistogram()
	var cal Calibration
	var first, last time.Time
	for r := range results {
		if first.IsZero() || r.Timestamp.Before(first) {
			first = r.Timestamp
		}
		if end := r.End(); end.After(last) {
			last = end
		}
		if r.Code < 200 || r.Code > 299 {
			cal.Errors++
			continue
		}
		cal.Requests++
		record(hist, r.Latency)
	}
	if err := ctx.Err(); err != nil {
		return cal, fmt.Errorf("calibrate: %w", err)
	}
	if cal.Requests == 0 {
		return cal, errors.New("calibrate: no request answered by the loopback handler")
	}
	cal.Duration = last.Sub(first)
	if cal.Duration > 0 {
		cal.Rate = float64(cal.Requests) / cal.Duration.Seconds()
	}
	cal.P50 = time.Duration(hist.ValueAtQuantile(50)) * time.Microsecond
	cal.P99 = time.Duration(hist.ValueAtQuantile(99)) * time.Microsecond
	return cal, nil
}

// unpaced is a pacer without a rate: it releases hits as fast as workers
// take them.
type unpaced struct{ vegeta.PacerFunc }

// Rate implements vegeta.Pacer; an unpaced attack has no planned rate.
func (unpaced) Rate(time.Duration) float64 { return 0 }
