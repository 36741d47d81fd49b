package runner

import (
	"time"

	"github.com/rlbench/rlbench/harness/runrecord"
	"github.com/rlbench/rlbench/harness/traffic"
	"github.com/rlbench/rlbench/scenarios"
)

// Record turns an Outcome into its run.json entry: everything the checks
// read besides the history (checker.CheckScenario), and what the report
// shows.
func (o *Outcome) Record() runrecord.ScenarioRecord {
	sc := o.Scenario
	headers := sc.Checks.Headers
	rec := runrecord.ScenarioRecord{
		Name: sc.Name, Description: sc.Description, Source: sc.Source, Seed: sc.Seed,
		Start: o.Start.UTC(), Duration: o.Duration, Redis: o.Redis, Instances: o.Instances, History: o.HistoryPath,
		ClockOffset: o.ClockOffset, ClockUncertainty: o.ClockUncertainty, ClockSource: o.ClockSource, FailureMode: sc.Target.FailureMode,
		RunID: string(o.RunID), IdentitiesFresh: &o.IdentitiesFresh, Shard: o.Shard, AgreedStart: o.AgreedStart,
		Faults: o.Faults, Drill: drill(sc, o.Faults, o.Stalls), KeyScan: o.KeyScan, Connections: o.Connections,
		Checks: &runrecord.CheckSettings{
			LoadDelivered: sc.Checks.LoadDelivered, MaxLatency: sc.Checks.MaxLatency,
			MaxExcess: sc.Checks.MaxExcess, Headers: &headers,
		},
	}
	if fr := sc.Checks.FalseRejections; fr != nil {
		rate := fr.MaxRate
		rec.Checks.FalseRejectionsMaxRate = &rate
	}
	if ov := sc.Checks.Overhead; ov != nil {
		rec.Checks.Overhead = &runrecord.OverheadBounds{Route: ov.Route, Baseline: ov.Baseline, P50: ov.P50, P99: ov.P99, P999: ov.P999,
			Versus: ov.Versus, RatioP50: ov.RatioP50, RatioP99: ov.RatioP99, RatioP999: ov.RatioP999}
	}
	for _, rt := range sc.Target.Routes {
		rr := runrecord.RouteRecord{Path: rt.Path, Cost: rt.Cost, Baseline: rt.Baseline()}
		for _, l := range rt.Policies {
			rr.Limits = append(rr.Limits, l.Spec())
		}
		rec.Routes = append(rec.Routes, rr)
	}
	if st := o.Stats; st != nil {
		rec.Dropped = st.Dropped
		rec.Checks.LagTolerance = st.LagTolerance
		for _, p := range st.Phases {
			rec.Phases = append(rec.Phases, phaseRecord(p))
		}
		rec.Latency = map[string]runrecord.LatencyRecord{}
		for route, l := range st.Routes() {
			rec.Latency[route] = runrecord.LatencyRecord{FromSent: l.FromSent.Export(), FromIntended: l.FromIntended.Export()}
		}
	}
	return rec
}

// drill is what the checks hold a drill's faults to: the declared failure
// mode, the store timeout and the scenario's fault bounds, over the faults
// that took effect followed by the store stalls observed outside them.
// Nil for a scenario without faults.
func drill(sc *scenarios.Scenario, windows, stalls []runrecord.FaultWindow) *runrecord.Drill {
	if len(windows) == 0 || sc.Checks.Faults == nil {
		return nil
	}
	d := &runrecord.Drill{
		Mode: sc.Target.FailureMode, Instances: sc.Target.SharingInstances(), Timeout: sc.Target.StoreTimeout,
		Slack: sc.Checks.Faults.Slack, Recovery: sc.Checks.Faults.Recovery,
	}
	for _, w := range windows {
		if w.FromNs != 0 { // never injected: the fault-injected check says so
			d.Windows = append(d.Windows, w)
		}
	}
	d.Windows = append(d.Windows, stalls...)
	return d
}

// probesStore reports whether a run of sc watches its store for stalls
// (package storeprobe): a drill of a limiter on Redis with a declared
// failure mode and store timeout, whose checks would otherwise take a
// stall's failure-mode decisions for the shared limiter's. The caller
// adds that the run has a Redis it can reach, other than a Sentinel group.
func probesStore(sc *scenarios.Scenario) bool {
	return len(sc.Faults) > 0 && sc.Checks.Faults != nil && sc.Target.FailureMode != "" &&
		sc.Target.StoreTimeout > 0 && sc.Target.Store != scenarios.StoreMemory
}

// classify completes the window of fault f as the schedule recorded it
// with what the fault means for the checks, given the store timeout: a
// command fault means what its declared effect says, exactly as the same
// effect of rlbench's own faults does. A failover steps the limiter's
// clock to the replica's, replicaClock from the host's (nil: the host's).
func classify(w runrecord.FaultWindow, f scenarios.Fault, timeout time.Duration, replicaClock *time.Duration) runrecord.FaultWindow {
	w.Unavailable = storeUnavailable(f, timeout)
	w.LosesState = f.Kind == scenarios.FaultRedisKill || f.Kind == scenarios.FaultRedisFailover ||
		(f.Kind == scenarios.FaultCommand && f.Effect == scenarios.EffectLosesState)
	w.Instance = f.Target
	switch f.Kind {
	case scenarios.FaultClockStep:
		w.StepNs = f.Step.Nanoseconds()
		if f.Target == scenarios.ClockStepRedis {
			w.Instance = ""
		}
	case scenarios.FaultRedisFailover:
		// The promoted replica kept what was replicated, and its clock
		// becomes the limiter's.
		w.PartialState = true
		if d := replicaClock; d != nil {
			w.StepNs = d.Nanoseconds()
		}
	}
	return w
}

// storeUnavailable reports whether fault leaves the limiter without an
// answer from its store within timeout, so that its failure mode decides.
func storeUnavailable(f scenarios.Fault, timeout time.Duration) bool {
	switch f.Kind {
	case scenarios.FaultInstanceKill, scenarios.FaultClockStep:
		return false
	case scenarios.FaultRedisLatency:
		return f.Latency >= timeout
	case scenarios.FaultCommand:
		return f.Effect == scenarios.EffectUnavailable || f.Effect == scenarios.EffectLosesState
	}
	return true
}

func phaseRecord(p *traffic.PhaseStats) runrecord.PhaseRecord {
	pr := runrecord.PhaseRecord{
		Name: p.Name, Kind: string(p.Kind), Planned: p.Planned, Sent: p.Sent, OnTime: p.OnTime, Withheld: p.Withheld,
		Delivered: p.Delivered(), PlannedRate: p.PlannedRate(), AchievedRate: p.AchievedRate(), Status: p.Status,
	}
	if p.Lag != nil {
		pr.LagP99 = time.Duration(p.Lag.ValueAtQuantile(99)) * time.Microsecond
	}
	if len(p.Bursts) > 0 {
		pr.Spread, pr.AchievedSpread = p.Spread, p.AchievedSpread()
		for _, b := range p.Bursts {
			br := runrecord.BurstRecord{Requests: b.Requests, Sent: b.Sent, Written: b.Written,
				SentSpread: b.SentSpread(), WrittenSpread: b.WrittenSpread(), Achieved: b.Achieved(), MaxIdle: b.MaxIdle,
				Redialled: b.Redialled, Raised: b.Raised}
			if b.Sent > 0 {
				br.Late = b.FirstSent.Sub(b.Intended)
			}
			pr.Bursts = append(pr.Bursts, br)
		}
	}
	if p.Kind == scenarios.RetryAfterProbe && p.Planned > 0 { // none: another shard's probe
		pr.Probe = &runrecord.ProbeRecord{Rejected: p.ProbeRejected, Retried: p.ProbeRetried, Admitted: p.ProbeAdmitted, Wait: p.ProbeWait}
	}
	return pr
}
