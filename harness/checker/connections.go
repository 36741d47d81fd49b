package checker

import (
	"fmt"
	"time"

	"github.com/rlbench/rlbench/harness/runrecord"
)

// CheckConnections is the name of the check on the connections Redis saw.
const CheckConnections = "redis-connections"

// connections checks that the client connections Redis saw during a drill
// never exceeded the instances' connection pools together plus the
// harness's own connections (field case C18: a slow or paused Redis must
// not make a limiter open a connection per waiting request). It reads only
// the samples in the run record; the observed value is the peak.
func connections(c *runrecord.Connections) Result {
	bound := c.Bound()
	res := Result{Name: CheckConnections, Unit: "connections", Bound: float64(bound)}
	peak, ok := c.Peak()
	if !ok {
		res.Verdict = Unknown
		res.Explanation = "no sample of Redis's connected_clients was taken"
		if c.Err != "" {
			res.Explanation += ": " + c.Err
		}
		return res
	}
	res.Observed = float64(peak.Clients)
	res.Proof = &Proof{FromNs: peak.AtNs, ToNs: peak.AtNs}
	at := time.Duration(peak.AtNs).Round(time.Millisecond)
	limit := fmt.Sprintf("%d instances × a pool of %d + %d of the harness's", c.Instances, c.PoolSize, c.Monitor)
	if peak.Clients > bound {
		res.Verdict = Fail
		res.Explanation = fmt.Sprintf("Redis saw %d client connections at %v, beyond %d (%s): connections grow past the pool, one per waiting request", peak.Clients, at, bound, limit)
		return res
	}
	res.Verdict = Pass
	res.Explanation = fmt.Sprintf("Redis saw at most %d client connections (at %v) in %d samples, within %d (%s)", peak.Clients, at, len(c.Samples), bound, limit)
	if c.Err != "" {
		res.Explanation += "; sampling stopped early: " + c.Err
	}
	return res
}
