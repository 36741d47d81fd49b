// Package checker proves or refutes a rate limiter's promise from a recorded
// history (package history) and a policy description, without ever talking
// to the target.
//
// # The model
//
// Request i has a key, a cost c, a sent time s and a received time e on the
// harness's clock, and an outcome: admitted, rejected (429) or unknown (a
// transport error, timeout or 5xx). The limiter decided at an unknown time d
// in [s, e]. The checker reports only what no possible choice of decision
// times can explain, so every failure is a proof: an interval and the
// requests that break the bound inside it. Unknown outcomes are handled as
// indeterminate operations are in Jepsen's Knossos checker: the budget
// check treats them as not admitted, the false-rejection check as possibly
// admitted, the Retry-After check whichever way widens the ideal wait's
// bounds, and a check that they alone decide gets the verdict Unknown.
//
// Budget, per key, pooled over instances and over the routes sharing a
// limit, all in integer nanoseconds:
//
//   - token bucket, GCRA, leaky bucket as a meter (burst B, rate r): for
//     every interval [a, b], the cost of admitted requests with a <= s and
//     e <= b is at most B + r·(b − a + res), res the limiter clock's
//     resolution. Only intervals from a sent time to a received time need
//     examining; the maximum of S − r·(b − a) comes from one sweep with a
//     segment tree, O(n log n).
//   - sliding window log (limit L, window W): at most L admitted among the
//     requests that must fall in one interval shorter than W − res.
//   - fixed window: at most L per window, aligned on the limiter's clock
//     through the measured clock offset; only requests whose whole [s, e]
//     lies in one window under every offset within the uncertainty count.
//     With no offset known, at most 2L in any interval shorter than W.
//   - sliding window counter: the fixed window's per-window bound, and the
//     boundary burst ratio: the most units that must fall in one rolling
//     window, divided by L (a fixed window allows up to 2).
//
// False rejections: a 429 is false when every limit of its rule would have
// admitted it at every possible decision time, even with every request that
// may have come before it (sent before its received time, admitted or of
// unknown outcome) charged as late as possible. This assumes each key begins
// the history with a full budget.
//
// Headers: on every 429 Retry-After (whole seconds, ceiling, at least 1;
// RFC 9110 §10.2.3, RFC 6585 §4) must be no shorter than a lower bound of
// the ideal wait and no more than one second above an upper bound of it;
// RateLimit fields (draft-ietf-httpapi-ratelimit-headers, and
// X-RateLimit-*) must agree with the decision and with the model; mixing
// header families is flagged. Status hygiene: no 5xx but the expected ones.
//
// Faults: a drill's history is checked with its fault windows and declared
// failure mode (runrecord.Drill, Policy.Faults). Within a fault no request
// may last longer than the store timeout plus a slack (fault-latency), and
// the requests sent and answered within it must get the declared behaviour
// (failure-mode: admitted when open, 503 with Retry-After when closed,
// within each instance's share when falling back). Requests from a fault
// to the end of its recovery are left out of the budget, and a store that
// came back empty starts every key afresh. A store that came back with part
// of its state (a promoted replica) also hides, after its recovery, the
// policy's longest refill. A step of the limiter's clock or an instance's
// widens the decision interval of every request that may have followed it,
// by what the limiter's contract allows (per-key time never runs
// backwards), and the clock offset's uncertainty by the step
// (clocksteps.go).
//
// # One verdict pipeline
//
// Every verdict of a run is computed here, from what the run recorded: the
// history and the scenario's entry of run.json (package runrecord). The
// harness records and does not judge. CheckRun takes both: it completes the
// Policy from the record (clock offset, drill, a fail-closed target's 503s),
// runs Check, and adds the checks on the run itself, each from recorded data
// alone:
//
//   - load-delivered: the open-model phases' requests sent within the lag
//     tolerance of their intended time (from each record's intended_ns and
//     sent_ns), over those planned less those withheld (from the record);
//   - history-complete: no result dropped before the history;
//   - max-latency and latency-overhead (p50, p99, p99.9 of the limited route
//     against its baseline): latency from the intended send time, from the
//     history, marked unknown when the generator fell behind;
//   - retry-after-probe: the probe phases' outcomes;
//   - fault-injected: every scheduled fault took effect and was healed;
//   - key-ttl: the record's scan of Redis found no key without a TTL;
//   - redis-connections: the client connections Redis reported during a
//     drill never exceeded the instances' pools plus the harness's own.
//
// CheckScenario opens a run directory's history and calls CheckRun; `rlbench
// run` calls it on the run it has just recorded and `rlbench check DIR` on a
// saved one, so both print the same verdicts. CompareResults says where two
// verdict tables differ.
//
// The GCRA and token-bucket bounds follow the GCRA's definition (ATM Forum
// Traffic Management 4.0, §4.4.2): a conforming stream of cost S over any
// interval of length t satisfies S <= B + t/T.
//
// # Policies, read independently
//
// The checker judges the reference limiter as much as any other, so it
// shares no code with it. A Policy is rules of limits (Limit) that the
// checker parses itself (ParseLimit, PolicyFromHeader) from the policy
// syntax scenario files, the history's header and the command line use:
// "gcra:20/1s,burst=10", "fixed_window:12/30d,name=month". A test holds
// ParseLimit and the limiter's parser to one meaning on every policy of the
// shipped scenarios and on the syntax's edge cases, including what both
// reject. A drill's fallback share is derived here too, from the declared
// number of instances (Faults.Instances).
//
// # One model per algorithm and policy form
//
// modelFor chooses, once per limit, the model every check then asks; no
// other code reads a limit's algorithm to decide a computation. One file
// each:
//
//   - bucketModel (bucket.go): token bucket, GCRA, leaky bucket as a meter;
//   - slidingLogModel (slidinglog.go): sliding window log;
//   - fixedWindowModel (fixedwindow.go): fixed windows placed through the
//     known clock offset;
//   - slidingCounterModel (slidingcounter.go): the sliding window counter's
//     weighted estimate over those windows;
//   - unalignedWindowModel (unaligned.go): either when no offset is known.
//
// A model gives the budget bound and the tightest interval under it; per
// judged request, what may have been charged before it (the false-rejection
// test, the ideal wait's upper bound, the remaining budget's lower bound)
// and what surely was (the wait's lower bound, the remaining budget's upper
// bound); whether window boundaries allow a burst (the boundary-burst
// ratio); a full refill (the bound of RateLimit reset); and an instance's
// fallback share over a fault. The tolerance of approximate algorithms
// (Rule.Tolerance) loosens each bound by that fraction of the capacity.
// Adding an algorithm or a policy form is one new model in its own file and
// one case in modelFor; window.go holds the sweeps the window models share.
package checker
