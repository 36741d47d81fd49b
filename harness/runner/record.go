package runner

import (
	"time"

	"github.com/rlbench/rlbench/harness/runrecord"
	"github.com/rlbench/rlbench/harness/traffic"
)

// Record turns an Outcome into its run.json entry.
func (o *Outcome) Record() runrecord.ScenarioRecord {
	sc := o.Scenario
	rec := runrecord.ScenarioRecord{
		Name: sc.Name, Description: sc.Description, Source: sc.Source, Seed: sc.Seed,
		Start: o.Start.UTC(), Duration: o.Duration, Redis: o.Redis, Instances: o.Instances, History: o.HistoryPath,
		ClockOffset: o.ClockOffset, ClockUncertainty: o.ClockUncertainty, Faults: o.Faults,
	}
	if f := o.Drill; f != nil {
		d := &runrecord.Drill{Mode: string(f.Mode), Instances: f.Instances, Timeout: f.Timeout, Slack: f.Slack, Recovery: f.Recovery}
		for _, w := range f.Windows {
			d.Windows = append(d.Windows, runrecord.DrillWindow{Kind: w.Kind, FromNs: w.FromNs, ToNs: w.ToNs, Unavailable: w.Unavailable, LosesState: w.LosesState, Instance: w.Instance})
		}
		rec.Drill = d
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
				SentSpread: b.SentSpread(), WrittenSpread: b.WrittenSpread(), Achieved: b.Achieved(), MaxIdle: b.MaxIdle}
			if b.Sent > 0 {
				br.Late = b.FirstSent.Sub(b.Intended)
			}
			pr.Bursts = append(pr.Bursts, br)
		}
	}
	if p.ProbeRejected || p.ProbeAdmitted {
		pr.Probe = &runrecord.ProbeRecord{Rejected: p.ProbeRejected, Retried: p.ProbeRetried, Admitted: p.ProbeAdmitted, Wait: p.ProbeWait}
	}
	return pr
}
