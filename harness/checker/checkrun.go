package checker

import (
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"time"

	"github.com/rlbench/rlbench/harness/history"
	"github.com/rlbench/rlbench/harness/runrecord"
)

// CheckScenario checks one scenario of a run directory (the --out of
// `rlbench run`): the history rec names, relative to runDir, against the
// policies of its header and everything else rec recorded. `rlbench run`
// calls it on the run it has just recorded and `rlbench check DIR` on a
// saved one, so the two print the same verdicts. Errors: a scenario that
// could not run (rec.Error), a missing or malformed history (wrapping
// history.ErrFormat), and CheckRun's; none names the scenario, which the
// caller knows.
func CheckScenario(runDir string, rec *runrecord.ScenarioRecord) (*Report, error) {
	if rec.Error != "" {
		return nil, fmt.Errorf("could not run: %s", rec.Error)
	}
	if rec.History == "" {
		return nil, errors.New("the run record names no history")
	}
	path := filepath.Join(runDir, rec.History)
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open history: %w", err)
	}
	defer f.Close()
	src, err := history.NewReader(f, path)
	if err != nil {
		return nil, fmt.Errorf("read history: %w", err)
	}
	src.ReadAhead(runtime.GOMAXPROCS(0)) // decoding JSON is most of reading
	defer src.Close()
	rep, err := CheckRun(src, rec, Policy{})
	if err != nil {
		return nil, fmt.Errorf("check %s: %w", path, err)
	}
	return rep, nil
}

// CheckRun checks a history src recorded by a run whose run.json entry is
// rec: Check's verdicts on the history under p, completed from rec where p
// leaves them unset (the clock offset when rec knows it, the drill's
// faults, a fail-closed target's 503 as an expected status, and the
// scenario's max_excess, false-rejection max_rate and headers settings
// from rec.Checks), followed by the checks on the run
// itself: load delivered, a complete history, latency and overhead bounds
// (from each request's intended, sent and received times in the history),
// the Retry-After probes, whether each fault was injected and healed, and
// the keys left without a TTL. Every result carries its Class: those on the
// harness (load-delivered, history-complete, fault-injected, and a latency
// check the generator's lag made invalid) are ClassHarness. The report's
// ProbeKeys counts the keys of the Retry-After probe phases, and Keys the
// others. A nil rec is Check alone, with a failed history-complete when src
// (a Reader) ended early or holds a request id twice: a history cut short
// proves nothing of the requests it lacks. While history-complete does not
// pass, the checks that must see every request once (false-rejections,
// retry-after, ratelimit-fields, and a passing budget, boundary-burst-ratio
// or queue-delay) are the harness's Unknown, saying why (unproven). It
// reads src once and never contacts a target.
//
// Errors: Check's, and a history whose header names another scenario than
// rec.
func CheckRun(src history.Source, rec *runrecord.ScenarioRecord, p Policy) (*Report, error) {
	ends, _ := src.(truncator)
	file := "the history"
	if n, ok := ends.(interface{ Name() string }); ok && n.Name() != "" {
		file = n.Name()
	}
	if rec == nil {
		var ids idTally
		rep, err := Check(observed{src, func(r *history.Record) { ids.add(r.ID) }}, p)
		if err != nil {
			return nil, err
		}
		if res, gap := truncatedResult(cutOf(ends), file, &ids); res != nil {
			unproven(rep.Results, gap, ids.dups > 0)
			rep.Results = append(rep.Results, *res)
		}
		return rep, nil
	}
	if name := src.Header().Scenario; name != "" && name != rec.Name {
		return nil, fmt.Errorf("the history is of scenario %q, the run record of %q: pair each history with its own scenario's record", name, rec.Name)
	}
	src, p = fromRecord(src, rec, p)
	t := newTimings(rec)
	rep, err := Check(observed{src, t.add}, p)
	if err != nil {
		return nil, err
	}
	t.cut, t.file = cutOf(ends), file
	rep.withoutProbeKeys(len(t.probeKeys))
	run := t.results(rec)
	if t.gap != "" {
		unproven(rep.Results, t.gap, t.ids.dups > 0)
	}
	rep.Results = append(rep.Results, run...)
	classify(rep.Results)
	return rep, nil
}

// truncator is a history that can tell, once read, whether it ended early
// (history.Reader.Truncated).
type truncator interface{ Truncated() error }

// cutOf is t's Truncated error; nil for a nil t.
func cutOf(t truncator) error {
	if t == nil {
		return nil
	}
	return t.Truncated()
}

// fromRecord completes p from rec where p leaves it unset, as CheckRun
// does: the clock offset when rec knows it (with its source, which src's
// header then carries when it had none), the drill's faults, a
// fail-closed target's 503 as an expected status, and rec.Checks'
// max_excess, false-rejection max_rate and headers settings.
func fromRecord(src history.Source, rec *runrecord.ScenarioRecord, p Policy) (history.Source, Policy) {
	if p.ClockOffset == nil && rec.ClockKnown() {
		offset := rec.ClockOffset
		p.ClockOffset, p.ClockUncertainty = &offset, rec.ClockUncertainty
		if h := src.Header(); h.ClockSource == "" && rec.ClockSource != "" {
			// An offset measured during the traffic (from Date headers)
			// reaches run.json only: the header was written before it.
			h.ClockSource = rec.ClockSource
			src = withHeader{src, h}
		}
	}
	if cs := rec.Checks; cs != nil {
		if p.MaxExcess == 0 {
			p.MaxExcess = cs.MaxExcess
		}
		if p.MaxFalseRejectionRate == 0 && cs.FalseRejectionsMaxRate != nil {
			p.MaxFalseRejectionRate = *cs.FalseRejectionsMaxRate
		}
		if cs.Headers != nil && !*cs.Headers {
			p.SkipHeaderChecks = true
		}
	}
	if p.Faults == nil {
		p.Faults = rec.Drill
	}
	if p.Faults != nil {
		// A step of the limiter's clock moved its offset (clocksteps.go).
		p.ClockUncertainty += time.Duration(stepUncertainty(p.Faults.Windows))
	}
	mode := rec.FailureMode
	if mode == "" && rec.Drill != nil { // a record written before the mode was recorded apart
		mode = rec.Drill.Mode
	}
	if mode == runrecord.FailClosed && !slices.Contains(p.ExpectedStatuses, http.StatusServiceUnavailable) {
		p.ExpectedStatuses = append(slices.Clone(p.ExpectedStatuses), http.StatusServiceUnavailable)
	}
	return src, p
}

// observed is a history.Source that hands every record it reads to fn.
type observed struct {
	history.Source
	fn func(*history.Record)
}

func (o observed) Read(r *history.Record) error {
	err := o.Source.Read(r)
	if err == nil {
		o.fn(r)
	}
	return err
}

// withHeader is a history.Source whose header is h.
type withHeader struct {
	history.Source
	h history.Header
}

func (w withHeader) Header() history.Header { return w.h }
