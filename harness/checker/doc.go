// Package checker proves or refutes a rate limiter's promise from a recorded
// history (package history) and a policy description, without ever talking
// to the target.
//
// # The model
//
// Request i has a key, a cost c, a sent time s and a received time e on the
// harness's clock, and an outcome: admitted (2xx, 3xx), rejected (429) or
// unknown (a transport error, timeout, 5xx, or a 4xx other than 429, which
// may never have reached the limiter; a record says admitted with such a
// status only in a history written before that rule, and counts as
// unknown). The limiter decided at an unknown time d
// in [s, e]. The checker reports only what no possible choice of decision
// times can explain, so every failure is a proof: an interval and the
// requests that break the bound inside it. Unknown outcomes are handled as
// indeterminate operations are in Jepsen's Knossos checker: the budget
// check treats them as not admitted, the false-rejection check as possibly
// admitted, the Retry-After check whichever way widens the ideal wait's
// bounds, and a check that they alone decide gets the verdict Unknown.
// Every interval is widened by the limiter clock's resolution res
// (Policy.Resolution) and, where windows are placed on the limiter's clock,
// by the clock offset's uncertainty.
//
// # The bounds, their sources and their tolerances
//
// Budget, per key, pooled over instances and over the routes sharing a
// limit, in integer nanoseconds; B burst, T emission interval (period/rate),
// L limit, W window:
//
//	model (file)                  bound proven                                  source                                 tolerance
//	token bucket, GCRA            cost of the admissions with a <= s, e <= b    ATM Forum TM 4.0 §4.4.2 (GCRA);        T rounded down (faster)
//	(bucket.go)                   is at most B + (b − a + res)/T, every [a, b];  Turner 1986 (token bucket)
//	leaky bucket, a queue         the bucket's bound on admissions, and         ATM Forum TM 4.0 §4.4.2; NGINX         T rounded down; res twice the
//	(queue.go, queue-delay)       answers spaced by slots: the admissions       limit_req (without nodelay),           clock's resolution, at least
//	                              answered within [a, b] cost at most           nginx.org ngx_http_limit_req_module    2 ms (a millisecond clock and
//	                              c_max + (b − a + res)/T; with reported                                               delays in whole ms); late
//	                              decision times, each answer at most                                                  answers within QueueSlack
//	                              QueueSlack after its latest slot
//	sliding window log            at most L in any interval shorter than        Redis sorted-set log (exact)           none
//	(slidinglog.go)               W − res
//	fixed window, aligned         at most L among the requests surely in one    the algorithm's definition             none
//	(fixedwindow.go)              window of the limiter's clock
//	fixed window, start=first     at most L among the requests surely in one    rate-limit-redis, ulule/limiter,       none; anchors from a fresh key
//	(firstwindow.go)              window under every anchoring the history      rate-limiter-flexible (INCR, then
//	                              allows                                        EXPIRE on the first request)
//	fixed window,                 at most L among the requests surely in one    sethvargo/go-limiter v0.7.1            none; anchors from a fresh key;
//	start=first-grid              window of the grid every anchor the history   memorystore (startTime at the first    with idle=, each idle gap that
//	(gridwindow.go)               allows places: [a + m·W, a + (m+1)·W) for a   request, refilled at each tick         may re-anchor it adds a grid
//	                              in the first request's [s, e]                 (now − startTime) / Interval)
//	sliding window counter        an admission of cost c needs                  Cloudflare, "How we built rate         the weight rounded down
//	(slidingcounter.go)           floor(prev·(W−e)/W) + cur + c <= L at some    limiting capable of scaling to         (Upstash, RussellLuo/
//	                              time it may have been decided, counting the   millions of domains" (2017);           slidingwindow): one unit
//	                              requests surely charged before it             Upstash ratelimit slidingWindow
//	fixed window or counter,      at most 2L in any interval shorter than W     two windows meet any such interval     none
//	offset unknown (unaligned.go)
//
// Rule.Tolerance, a fraction of each limit's capacity, loosens the budget
// and the false-rejection test further for approximate algorithms.
//
// res is the limiter clock's resolution (Policy.Resolution, else the
// history header's clock_resolution_ns: 1 ms for NGINX, 1 µs for Redis
// TIME). For the buckets only intervals from a sent time to a received time
// need examining; the maximum of S − r·(b − a) comes from one sweep with a
// segment tree, O(n log n). The budget fails when a key's excess is above
// Policy.MaxExcess (a scenario's checks.budget.max_excess, 0 by default).
//
// A budget fails when some key exceeds its bound by more than
// Policy.MaxExcess units (a scenario's checks.budget.max_excess, 0 by
// default); the bound shown then includes it.
//
// False rejections: a 429 is false when every limit of its rule would have
// admitted it at every possible decision time, even with every request that
// may have come before it (sent before its received time, admitted or of
// unknown outcome) charged as late as possible; the sliding window
// counter's estimate is taken exact there, the reference limiter's and
// Cloudflare's (for whole counts the same as rounding the weight up). This
// assumes each key begins the history with a full budget; see "Keys that
// may not be fresh" below for when it may not. The check fails when the
// false rejections of a rule number more than Policy.MaxFalseRejectionRate
// of its requests (a scenario's checks.false_rejections.max_rate, 0 by
// default).
//
// Headers, each field between both bounds its model allows:
//
//	field                               lower bound                                 upper bound                                source
//	Retry-After (429)                   the ideal wait, the requests surely         that wait with every request that may      RFC 9110 §10.2.3, RFC 6585 §4
//	                                    charged before it counted as early as       have come before counted as late as
//	                                    they could be; at least 1 s                 it could be, plus 1 s (whole seconds)
//	RateLimit r, RateLimit-Remaining,   what every timing leaves (admission: after  below the cost (rejection); what the        draft-ietf-httpapi-ratelimit-headers
//	X-RateLimit-Remaining               its own charge; rejection: before it)       requests surely admitted before leave      -06 (separate fields), -07 and later
//	                                                                                (admission)                                (RateLimit, RateLimit-Policy)
//	RateLimit t, RateLimit-Reset,       for a rule of one limit, less 1 s of        a full refill (a window; two for the
//	X-RateLimit-Reset (epoch seconds)   rounding: the ideal wait (rejection), or    counter; B·T for a bucket) plus res and
//	                                    the time the admission's own charge takes   1 s
//	                                    to clear its window or bucket
//	RateLimit limit, RateLimit-Limit,   the capacity of one of the rule's limits
//	RateLimit-Policy q                  (or a bucket's whole rate per period)
//	RateLimit-Policy w                  the limit's window in whole seconds,        the same, rounded up (at least 1)          draft-ietf-httpapi-ratelimit-headers-10
//	                                    rounded down (a bucket: B·period/rate,
//	                                    or with q the rate, the period)
//
// Mixing header families is flagged (header-style); Policy.SkipHeaderChecks
// (a scenario's checks.headers: false) leaves these three checks out, with a
// note in the report. Status hygiene, the first result: every request
// answered outside a declared fault, no 5xx but the expected ones, no 4xx
// but 429; its explanation leads with the commonest cause ("401
// Unauthorized on all 40 requests: the traffic never reached the limiter —
// check the identity header ...").
//
// # What each check can not see
//
// The budget proves excess only where [sent, received] pins the decisions
// down: a slow response widens its interval and hides what it may hide.
// A queue answers its admissions late, so their intervals say little of
// when they were decided, and late answers (a slot kept too long) cannot be
// told from a slow handler; the limiter's reported decision time
// (Policy.TrustDecisionTime, the reference's X-RateLimit-Decision-Time)
// restores both, on the target's word. Fixed windows aligned on the clock
// and the sliding window counter's windows need the clock offset; without
// it they are held to 2L per window length only. Windows from the first
// request lose their anchors where traffic never pauses long enough to pin
// one, and follow no anchor across a fault. Windows on the grid of the
// first request place every window by the first request's [s, e] alone,
// but a key that may be forgotten (idle=) keeps each possible grid, and a
// window is certain only where all of them agree (at most eight grids a
// key). The RateLimit reset's lower
// bound is checked only for rules of one limit, whose reset the response
// reports.
//
// # Leases
//
// A token bucket or GCRA declaring a lease ("gcra:1000/1s,burst=1000,lease=10/900ms",
// Limit.LeaseTokens n and LeaseFor L) lets an instance take up to n units
// from the shared budget at once and spend them locally for L; the store
// charges them as if spent at the lease's end and grants one only when its
// state after the grant depends on that lease alone (limiter/lease.go). The
// budget's bound is unchanged and exact (max_excess 0 still holds). What
// changes is what a decision can see, and only the room model is widened:
//
//	field                            widening                                         why
//	false rejections,                the room less the hold, n + L·rate units         a lease's units sit unspent on one
//	Retry-After upper bound          (n·T + L scaled by T)                            instance and its deferred refill is
//	                                                                                  lost to the others: the store's room
//	                                                                                  is at most that short of the ideal's
//	remaining budget, lower bound    none                                             a decision from a lease knows only its
//	                                                                                  own unspent units and the refill the
//	                                                                                  rest of the lease cannot take back;
//	                                                                                  others may have taken the rest unseen
//
// The hold is one lease's, whatever the number of instances: a grant needs
// the stored TAT at most t0 + L, so no unspent units of older leases add up.
// The wait's lower bound, the remaining budget's upper bound and the
// reset's bounds are unchanged: a lease only ever makes the store see less
// budget than the ideal limiter, never more.
//
// # Keys that may not be fresh
//
// A run whose keys are the same in every run (fixed names, keys from a
// file) against a limiter that outlives runs may meet a key with part of
// its budget spent: the header's identities_fresh is false
// (Policy.FreshKeys). The budget's upper bound, the wait's lower bound, the
// remaining budget's upper bound, the reset's lower bound and its upper
// bound (a full refill from an empty key) hold whatever the key began
// with. The false-rejection test, the wait's upper bound, the remaining
// budget's lower bound and the queue's late answers assume a full start,
// so a key's requests are judged by them only from the time its state is
// provably known (judgedFrom, one place for every model): the first
// request after an idle gap of a full refill (B·T for a bucket, a window
// for a fixed window or the log, two for the counter) since the last that
// may have been decided, or for windows aligned on a known clock offset,
// which reset whatever came before, the first window (for the counter the
// second) that began after the key's first request. Before it a rejection
// may have been due, its wait and the remaining budget have no bound on
// that side. Windows from the first request follow their anchors only from
// that time, and before it hold a key to 2L in any interval shorter than a
// window; windows on the grid of the first request, whose phase such a key
// never reveals, hold it to 2L throughout.
//
// Faults: a drill's history is checked with its fault windows and declared
// failure mode (runrecord.Drill, Policy.Faults). Within a fault no request
// may last longer than the store timeout plus a slack, nor go without an
// answer (fault-latency; a dropped connection is no answer, however soon it
// failed), unless the fault left no one to answer it: an instance it took
// down (killed, or restarted to step its clock), or a store down under a
// target that declares no failure mode. Every declared failure mode
// answers, so status fails a request left unanswered during a fault or its
// recovery too, with those same exceptions during the fault alone. And the
// requests sent and answered within it must get the declared behaviour
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
// Observed stalls: the harness watches a drill's store throughout the run
// (package storeprobe) and records every stretch, outside the declared
// faults, in which it did not answer within the store timeout
// (runrecord.FaultWindow.Observed, kind store_stall): a Redis starved on
// a loaded host. The instances then decide by their failure mode, as the
// scenario declares, so the requests a stall and its recovery overlap are
// excused as a declared fault's are: left out of the budget, possibly
// charged for the false-rejection check. They are held to neither
// failure-mode nor fault-latency, since not every request in a stall met
// it. A note lists the stalls and the requests they excused (summary.json
// and junit.xml carry it as every note), with the share they excused of
// the requests the declared faults leave judged (the run's requests less
// those a declared fault or its recovery excuses), as information
// (stalls.go).
//
// No share of the run the stalls excuse makes a pass with them excused
// sound, and none makes it unsound: a single short stall whose recovery covers the only stretch where an
// over-admission shows hides it however little it excuses, and a stall
// that excuses most of the run hides nothing when the limiter held
// throughout. So a run with observed stalls is judged under two
// hypotheses: with the stalls excused as above, and with the store taken
// as healthy throughout (the drill without its observed windows, the
// declared faults still applied; a second pass over the partitioned
// history, which only such runs pay for). A failure with the stalls
// excused stays one; a pass under both is a pass, the stalls changed
// nothing; a pass that is not one with the store healthy becomes unknown,
// the harness's, its explanation naming the healthy store's finding (key
// and span) and the stalls, with a note in the report; an unknown stays
// unknown. The rule holds every limiter check the excusal changes: budget
// (with queue-delay and boundary-burst-ratio), false-rejections,
// retry-after, ratelimit-fields and header-style. A pass under both rests
// on every request the declared faults leave, none excused by a stall.
//
// # One verdict pipeline
//
// Every verdict of a run is computed here, from what the run recorded: the
// history and the scenario's entry of run.json (package runrecord). The
// harness records and does not judge. CheckRun takes both: it completes the
// Policy from the record (the clock offset unless the record says nothing
// measured it, the drill, a fail-closed target's 503s, max_excess, the
// false-rejection max_rate and the headers setting),
// runs Check, and adds the checks on the run itself, each from recorded data
// alone:
//
//   - load-delivered: the open-model phases' requests sent within the lag
//     tolerance of their intended time (from each record's intended_ns and
//     sent_ns), over those planned less those withheld (from the record);
//   - history-complete: no result dropped before the history, the history
//     holding as many records as the record's phases sent, less those
//     dropped, each request id once (the first repeated id is named, with
//     how many records repeat one), and ending cleanly (not cut off
//     mid-line or mid-stream, nor by an interrupt); a history checked
//     without its record fails it only when it ends early or repeats an
//     id. The record counts the requests sent, not their ids, so an id is
//     held only to being unique. While history-complete does not pass, the
//     checks that must see every request once are the harness's Unknown,
//     with the reason: false-rejections, retry-after and ratelimit-fields
//     (a missing admission makes a rejection, a wait or a remaining look
//     wrong), a queue's late answers, and a passing budget,
//     boundary-burst-ratio or queue-delay (a missing admission can hide an
//     excess). A failure of those three upper bounds stands while no id
//     repeats, since each admission read once is real; with a repeated id
//     it is Unknown too (a duplicate counts its admission twice);
//   - max-latency and latency-overhead (p50, p99, p99.9 of the limited route
//     against its baseline's requests in the same phases) and
//     latency-overhead-ratio (that overhead as a multiple of another limited
//     route's, the overhead bound's versus): latency from the intended send
//     time, from the history, marked unknown when the generator fell behind;
//     a percentile's overhead fails only when its bound lies below the
//     difference's 99 % confidence interval, distribution-free from order
//     statistics (H. A. David and H. N. Nagaraja, Order Statistics, §7.1):
//     a busy machine's tail, which two routes' few slowest requests sample
//     unevenly, is not the limiter's overhead;
//   - retry-after-probe: the probe phases' outcomes;
//   - fault-injected: every scheduled fault took effect and was healed;
//   - key-ttl: the record's scan of Redis found no key without a TTL;
//   - redis-connections: the client connections Redis reported during a
//     drill never exceeded the instances' pools plus the harness's own.
//
// Each result carries its Class. load-delivered, history-complete,
// fault-injected, run (a scenario that could not run) and a latency check
// made invalid by the generator's lag judge the harness, not the limiter:
// their failure is the harness's error (Status "error", exit code 3),
// reported apart from the limiter's failures (Status "fail", exit code 1),
// and a limiter's failure takes precedence (StatusOf).
//
// Counts are a history's figures as recorded, before the fault checks mark
// requests or the restart of an emptied store splits keys: one definition
// for the verdict table, summary.json, the report and the progress line.
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
// # Sharded runs
//
// A run split into shards (`rlbench run --shard I/N`, one per host) is
// checked as one run by CheckShards (`rlbench check SHARD_DIR...`). The
// checks of the history run on the shards' histories merged onto the
// limiter's clock (history.NewMerge): shard s measured its offset o_s to
// the limiter's clock with uncertainty u_s, its request at t is placed at
// S_s + t + o_s, and its decision interval [sent, received] widens to
// [sent − u_s, received + u_s]. Whatever each shard's true offset within
// o_s ± u_s, every decision lies within its widened interval on one clock,
// so a violation found in the merged history is still a proof, and the
// bounds of aligned windows, which read the merged history's offset of 0 ±
// 0, are placed on the limiter's own clock. The widening costs only
// sensitivity: an excess smaller than the shards' uncertainties may go
// unseen. The fault windows of a drill move with their shard and widen
// the same way (runrecord.MergeShards). The checks on the run itself
// (load delivered, latency, probes, faults injected, key TTLs, Redis
// connections) judge each shard's own requests and run.json entry, one
// result per shard ("load-delivered", scope "shard 1/3"), since each
// shard's generator and clock are its own.
//
// Order: Check needs no order of its records. It reads the whole history,
// groups the requests by key and sorts each key's by sent, then received
// time, stably, before any model looks at them; the order of the stream
// decides only ties between requests of one key with equal times (the
// order of a proof's request ids, the first example named). A history is
// written in completion order only approximately; Merge keeps each shard's
// order and interleaves the shards by received time, deterministically,
// which is all Check needs.
//
// The only way to a false failure in a merged run is a shard whose
// recorded clock offset is wrong by more than its recorded uncertainty:
// its requests are then placed where they did not happen, and requests of
// two shards may seem packed closer than they were (a budget's excess, a
// window's extra admission) or further apart (a rejection that seems
// false). An offset error within the uncertainty cannot do it. The
// uncertainty must therefore bound the error: measured on Redis TIME it is
// half the shortest round trip, which bounds the offset when it was
// measured; a host clock that drifts or steps during the run moves the
// offset beyond it, and a declared offset's is what the scenario declares.
// With identities split by shard, each key's requests come from one
// shard and move together, so that a shard's offset error can only matter
// for a key whose requests several shards send (a spread identity) and
// for windows aligned on the limiter's clock.
//
// # Policies, read independently
//
// The checker judges the reference limiter as much as any other, so it
// shares no code with it. A Policy is rules of limits (Limit) that the
// checker parses itself (ParseLimit, PolicyFromHeader) from the policy
// syntax scenario files, the history's header and the command line use:
// "gcra:20/1s,burst=10", "fixed_window:12/30d,name=month",
// "fixed_window:10/5s,start=first",
// "fixed_window:10/5s,start=first-grid,idle=12h". A test holds ParseLimit and the
// limiter's parser to one meaning on every policy of the shipped scenarios
// and on the syntax's edge cases, including what both reject. A drill's
// fallback share is derived here too, from the declared number of instances
// (Faults.Instances).
//
// # One model per algorithm and policy form
//
// modelFor chooses, once per limit, the model every check then asks; no
// other code reads a limit's algorithm to decide a computation. One file
// each:
//
//   - bucketModel (bucket.go): token bucket, GCRA;
//   - queueModel (queue.go): the leaky bucket, a queue that delays what it
//     admits (the queue-delay check);
//   - slidingLogModel (slidinglog.go): sliding window log;
//   - fixedWindowModel (fixedwindow.go): fixed windows placed through the
//     known clock offset;
//   - firstWindowModel (firstwindow.go): fixed windows from each key's
//     first request;
//   - gridWindowModel (gridwindow.go): fixed windows on the grid of each
//     key's first request;
//   - slidingCounterModel (slidingcounter.go): the sliding window counter's
//     weighted estimate over aligned windows;
//   - unalignedWindowModel (unaligned.go): either aligned model when no
//     offset is known.
//
// A model gives the budget bound and the tightest interval under it; per
// judged request, what may have been charged before it (the false-rejection
// test, the ideal wait's upper bound, the remaining budget's lower bound)
// and what surely was (the wait's lower bound, the remaining budget's upper
// bound, the reset's lower bound); whether window boundaries allow a burst
// (the boundary-burst ratio); a full refill (the bound of RateLimit reset);
// and an instance's fallback share over a fault. Adding an algorithm or a
// policy form is one new model in its own file and one case in modelFor;
// window.go holds the sweeps the window models share, arith.go the
// arithmetic that cannot overflow.
package checker
