package checker

import "github.com/rlbench/rlbench/harness/history"

// Counts are a history's figures, with one definition for every output that
// shows them: the verdict table's totals, summary.json, the report and,
// for the outcomes, the progress line while the traffic runs (package
// progress counts the same recorded outcome).
type Counts struct {
	// Records is the number of requests in the history.
	Records int `json:"records"`
	// Keys is the number of distinct keys the traffic's requests carry, as
	// recorded (a key that a fault emptied the store under is still one
	// key), without ProbeKeys, the Retry-After probes' own keys, which no
	// other phase uses (known only with the run's record, else 0). Every
	// output names the two apart: "8 keys + the probe's key".
	Keys      int `json:"keys"`
	ProbeKeys int `json:"probe_keys"`
	// Admitted, Rejected and Unknown count the requests by their recorded
	// outcome (history.Outcome, which history.OutcomeForStatus gives a
	// status code): admitted, rejected (429), unknown (no response, a
	// timeout or a 5xx). They add up to Records.
	Admitted int `json:"admitted"`
	Rejected int `json:"rejected"`
	Unknown  int `json:"unknown"`
	// TransportErrors are the unknown requests that got no response.
	TransportErrors int `json:"transport_errors"`
	// Faulted counts the requests excused around faults: sent or answered
	// during a declared fault or its recovery, or during a store stall the
	// harness observed or its recovery. The budget and false-rejection
	// checks leave them out. They keep their recorded outcome in the
	// counts above. Of them, FaultJudged were sent during a declared fault
	// (but a bare clock step), the requests the fault checks judge;
	// StallExcused were excused by observed store stalls alone, which no
	// fault check judges; the rest (FaultRecovery) were sent in a fault's
	// recovery, or before it and answered after it began.
	Faulted      int `json:"faulted"`
	FaultJudged  int `json:"fault_judged"`
	StallExcused int `json:"stall_excused"`
	// Unmatched counts the requests no rule of the policy covers.
	Unmatched int `json:"unmatched"`
}

// FaultRecovery is the number of requests excused around declared faults
// that the fault checks do not judge: Faulted less FaultJudged and
// StallExcused.
func (c Counts) FaultRecovery() int { return c.Faulted - c.FaultJudged - c.StallExcused }

// withoutProbeKeys takes the probes' keys, known as probe, out of c.Keys,
// which counted every key of the history.
func (c *Counts) withoutProbeKeys(probe int) {
	c.ProbeKeys = min(probe, c.Keys)
	c.Keys -= c.ProbeKeys
}

// countRecorded counts d's records, keys and outcomes as recorded: it must
// run before applyFaults, which marks faulted requests unknown and renames
// the keys after a restart.
func countRecorded(d *dataset) Counts {
	c := Counts{Records: len(d.reqs), Keys: len(d.keys)}
	for i := range d.reqs {
		q := &d.reqs[i]
		switch q.outcome {
		case history.Admitted:
			c.Admitted++
		case history.Rejected:
			c.Rejected++
		default:
			c.Unknown++
		}
		if q.status == 0 {
			c.TransportErrors++
		}
	}
	return c
}

// countFaulted counts the requests applyFaults marked.
func countFaulted(d *dataset) int {
	n := 0
	for i := range d.reqs {
		if d.reqs[i].faulted {
			n++
		}
	}
	return n
}
