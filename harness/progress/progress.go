// Package progress shows a run's progress while traffic is fired: a live
// bar on a terminal, plain periodic lines in logs and on CI (CI=true), so
// that a long run is never silent and a CI log is never full of control
// characters.
package progress

import (
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"

	"github.com/rlbench/rlbench/harness/history"
)

// DefaultLineInterval is how often plain mode prints a line.
const DefaultLineInterval = 2 * time.Second

// Counters are the figures a display shows. Add to them from any goroutine.
//
// Admitted, Rejected and Unknown count the requests by the outcome their
// history record carries (Add), the very outcome the checker counts
// (checker.Counts), so that the last progress line and the verdict table
// agree: unknown is no response, a timeout or a 5xx.
type Counters struct {
	Sent, Admitted, Rejected, Unknown atomic.Int64
	phase                             atomic.Pointer[string]
}

// Add counts one request sent whose recorded outcome is o
// (history.Record.Outcome).
func (c *Counters) Add(o history.Outcome) {
	c.Sent.Add(1)
	switch o {
	case history.Admitted:
		c.Admitted.Add(1)
	case history.Rejected:
		c.Rejected.Add(1)
	default:
		c.Unknown.Add(1)
	}
}

// SetPhase names the phase being fired.
func (c *Counters) SetPhase(name string) { c.phase.Store(&name) }

// Phase is the phase being fired, or "".
func (c *Counters) Phase() string {
	if p := c.phase.Load(); p != nil {
		return *p
	}
	return ""
}

// Interactive reports whether w is a terminal a live display can redraw,
// and CI is not set to true.
func Interactive(w io.Writer) bool {
	if os.Getenv("CI") == "true" {
		return false
	}
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// Plan is the number of requests a run plans: Requests exactly, or, with
// AtMost, at most (a phase whose plan is an upper bound: a Retry-After
// probe, clients that honour Retry-After).
type Plan struct {
	Requests int64
	AtMost   bool
}

// String is "991" for an exact plan, "up to 991" for an upper bound.
func (p Plan) String() string {
	if p.AtMost {
		return fmt.Sprintf("up to %d", p.Requests)
	}
	return fmt.Sprint(p.Requests)
}

// sent is "sent 40/100", or "sent 40 of up to 100" where the plan is an
// upper bound, which a run that completes need not reach.
func (p Plan) sent(n int64) string {
	if p.AtMost {
		return fmt.Sprintf("sent %d of %s", n, p)
	}
	return fmt.Sprintf("sent %d/%d", n, p.Requests)
}

// Display renders Counters until Stop.
type Display struct {
	stop chan struct{}
	done sync.WaitGroup
	end  string // the final line's lead: "done", or "interrupted (cause)"
}

// Start shows the progress of scenario, which plans plan, on w: a bar when
// interactive, else a line every interval (DefaultLineInterval when 0).
func Start(w io.Writer, scenario string, plan Plan, interactive bool, interval time.Duration, c *Counters) *Display {
	if interval <= 0 {
		interval = DefaultLineInterval
	}
	planned := plan.Requests
	d := &Display{stop: make(chan struct{})}
	start := time.Now()
	line := func() string {
		elapsed := time.Since(start).Seconds()
		rate := 0.0
		if elapsed > 0 {
			rate = float64(c.Sent.Load()) / elapsed
		}
		return fmt.Sprintf("phase %s: %s, admitted %d, rejected %d, unknown %d, %.1f req/s",
			c.Phase(), plan.sent(c.Sent.Load()), c.Admitted.Load(), c.Rejected.Load(), c.Unknown.Load(), rate)
	}
	d.done.Add(1)
	if !interactive {
		go func() {
			defer d.done.Done()
			tick := time.NewTicker(interval)
			defer tick.Stop()
			for {
				select {
				case <-d.stop:
					fmt.Fprintf(w, "[%s] %s: %s\n", scenario, d.end, line())
					return
				case <-tick.C:
					fmt.Fprintf(w, "[%s] %s\n", scenario, line())
				}
			}
		}()
		return d
	}
	bar := progressbar.NewOptions64(max(planned, 1),
		progressbar.OptionSetWriter(w),
		progressbar.OptionSetDescription(scenario),
		progressbar.OptionSetWidth(24),
		progressbar.OptionThrottle(100*time.Millisecond),
		progressbar.OptionClearOnFinish(),
	)
	go func() {
		defer d.done.Done()
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-d.stop:
				bar.Finish()
				fmt.Fprintf(w, "[%s] %s: %s\n", scenario, d.end, line())
				return
			case <-tick.C:
				bar.Describe(scenario + " " + line())
				bar.Set64(min(c.Sent.Load(), planned))
			}
		}
	}()
	return d
}

// Stop ends the display after a final line: "done:" when cause is nil,
// else "interrupted (cause):", so that a run cut short (Ctrl-C, an error
// of the traffic) never ends on a line that says it completed. Call it once.
func (d *Display) Stop(cause error) {
	d.end = "done"
	if cause != nil {
		d.end = fmt.Sprintf("interrupted (%v)", cause)
	}
	close(d.stop)
	d.done.Wait()
}
