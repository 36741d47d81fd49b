// Package history records and reads the requests of a run: one record per
// request, with the times, outcome and rate-limit headers the checker needs
// to prove or refute a limiter's promise.
//
// # File format (rlbench-history, version 1)
//
// A history is a text file of JSON objects, one per line (JSON Lines), usually
// compressed with gzip (the file name then ends in .jsonl.gz; readers detect
// gzip by its magic bytes, so the extension is a convention only). Every line
// ends with "\n". The first line is the header; every other line is a record.
//
// Header fields:
//
//	format                string, required: "rlbench-history".
//	version               integer, required: 1. Readers reject other versions.
//	start                 string, required: the wall-clock time of the run's
//	                      start, RFC 3339 with nanoseconds, UTC recommended,
//	                      in [1970-01-01, 2100-01-01) (MinStart, MaxStart).
//	                      Every time in a record is in nanoseconds since this
//	                      instant, measured on one monotonic clock.
//	scenario              string, optional: the scenario's name.
//	target                string, optional: what was driven (a URL, "sampleapi").
//	instances             array of strings, optional: the target instances.
//	policies              array, optional: the policies in force, each an object
//	                      {"route": string ("" for every route), "key":
//	                      string, optional (the keys the entry holds: equal,
//	                      or by prefix with a trailing "*", as "free-*" for
//	                      a plan's keys; absent: every key), "limits":
//	                      array of strings in limiter.ParseLimit syntax, e.g.
//	                      "gcra:10/1s,burst=10"}. A request takes the first
//	                      entry whose route and key match its own.
//	clock_offset_ns       integer, optional: the limiter's clock minus the
//	                      harness's (start + monotonic time), in nanoseconds,
//	                      within ±2^60 (MaxTimeNs). Absent when unknown (an
//	                      external target with neither a Redis to read TIME
//	                      from nor a Date header, and no declared offset):
//	                      the checker then uses bounds that need no offset.
//	clock_uncertainty_ns  integer, optional: the half-width of the interval
//	                      around clock_offset_ns that holds the true offset, in
//	                      nanoseconds (half the measuring round trip), in
//	                      [0, 2^60]. Default 0.
//	run_id                string, optional: the run's id (eight hex digits),
//	                      which generated identities carry in their names
//	                      ("key-<run_id>-0007") so that every run meets a
//	                      limiter that outlives runs with fresh identities.
//	identities_fresh      boolean, optional: true when every key began the
//	                      run unknown to the limiter (generated for this run,
//	                      or the limiter's state was new), false when the
//	                      identities are the same in every run (fixed names,
//	                      real keys from a file), so that a key may begin
//	                      with part of its budget spent. Absent: unknown.
//	clock_source          string, optional: where the offset came from:
//	                      "redis_time" (Redis TIME, uncertainty half the
//	                      shortest round trip), "http_date" (the target's
//	                      Date headers), "declared" (the scenario's
//	                      target.clock) or "local" (a limiter on the
//	                      harness's host and clock).
//	clock_resolution_ns   integer, optional: the step of the limiter's clock,
//	                      in nanoseconds, in [0, 1 h] (MaxClockResolution):
//	                      1000 for a limiter on Redis TIME or microseconds,
//	                      1000000 for one on milliseconds (NGINX, Date.now()).
//	                      Absent or 0: readers assume 1 µs
//	                      (DefaultClockResolution).
//	shard                 object, optional: {"index": I, "count": N}, this
//	                      history is shard I (0-based) of a run split into N
//	                      shards (1 <= N <= 1024); absent: the whole run.
//	extra                 object, optional: free-form run metadata (tool
//	                      versions, flags); readers keep it and ignore it.
//
// Record fields (one request each; times in integer nanoseconds since start,
// which may be negative for a request sent before the recorded start, and
// lie in [-2^60, 2^60], see "Accepted ranges"):
//
//	id           integer >= 1: the request's identifier, unique in the file.
//	             Writers assign 1, 2, ... when it is 0; readers number records
//	             by line when it is absent.
//	key          string: the identity's label: the API key as sent when it
//	             is generated, "key#N" for the N-th key of a keys file (a
//	             real key is never recorded), the client address, or the
//	             identity's block of addresses in CIDR form when its
//	             requests come from several addresses of one prefix.
//	instance     string, optional: the target instance that answered.
//	route        string, optional: the route the request was sent to, as the
//	             policies name it (for example "/v1/search").
//	cost         integer in [1, 2^40] (MaxCost, the largest capacity a limit
//	             may have): the units the request asks the limiter for.
//	             Default 1 when absent or 0.
//	intended_ns  integer: when the load generator meant to send the request
//	             (its schedule); equal to sent_ns when it has no schedule.
//	             The gap sent_ns - intended_ns exposes coordinated omission.
//	sent_ns      integer: when the request's first byte was written.
//	received_ns  integer >= sent_ns: when the response's headers were read,
//	             or when the transport failed or timed out.
//	status       integer: the HTTP status code; 0 when no response arrived.
//	outcome      string: "admitted" (a 1xx, 2xx or 3xx answer), "rejected"
//	             (the limiter turned it away, HTTP 429) or "error" (no
//	             response, a timeout, a 5xx, or a 4xx other than 429 such as
//	             401 or 404, which may never have reached the limiter: the
//	             limiter's decision is unknown, in the sense of an
//	             indeterminate operation in Jepsen and Knossos histories).
//	             OutcomeForStatus is the classification every writer uses;
//	             the checker takes "admitted" with another status (a 4xx or
//	             5xx) as an unknown outcome.
//	error        string, optional: the transport error's text.
//	headers      object, optional: the rate-limit response headers seen,
//	             names in lower case, values as received (several values of
//	             one header joined by ", "). Recorded names: retry-after,
//	             ratelimit, ratelimit-policy, ratelimit-limit,
//	             ratelimit-remaining, ratelimit-reset, x-ratelimit-limit,
//	             x-ratelimit-remaining, x-ratelimit-reset, x-ratelimit-used.
//	decision_us  integer, optional: the limiter's own decision time when the
//	             target reports it, in microseconds since the Unix epoch on
//	             the limiter's clock, at most MaxDecisionUs (the year 2173).
//	             0 or absent when not reported.
//	phase        string, optional: the name of the traffic phase.
//	shard        object, optional: {"index": I, "count": N}, in a history
//	             merged from the shards of a sharded run (see "Sharded
//	             runs"), the shard that recorded the request; absent in a
//	             shard's own history (its header names the shard) and in an
//	             unsharded one.
//
// Unknown fields are ignored, so later minor additions stay readable;
// anything that changes the meaning of a field raises the version. Readers
// decode the usual lines with a fast path and fall back to encoding/json,
// the format's definition, for anything unusual (escapes, floats, other
// field spellings).
//
// # Accepted ranges
//
// Readers reject, with the file, line and field, a record or header whose
// values lie outside these ranges, and Writer refuses to write one:
//
//	record times (intended_ns, sent_ns, received_ns)  [-2^60, 2^60] ns, about ±36.5 years
//	received_ns - sent_ns                             >= 0
//	cost                                              [1, 2^40]
//	status                                            [0, 999]
//	decision_us                                       [0, MaxDecisionUs]
//	start                                             [1970-01-01, 2100-01-01) UTC
//	clock_offset_ns                                   [-2^60, 2^60]
//	clock_uncertainty_ns                              [0, 2^60]
//	clock_resolution_ns                               [0, 3.6·10^12] (one hour)
//
// The reason is arithmetic, not taste. A check adds a record time to a
// window or an emission period, to twice a window, and, to place a time in
// the limiter's aligned windows, to the run's start as Unix nanoseconds, the
// clock offset and its uncertainty. With the start before 2100 (below
// 4.11·10^18 ns) and the other terms at most 2^60 (1.15·10^18 ns) each, the
// largest such sum, 8.72·10^18, stays below the int64 maximum of
// 9.22·10^18. A time near 2^63 ns would make these sums wrap around, and a
// check would silently compare the wrong intervals. Limits and policies the
// checker accepts must likewise keep their windows and periods within 2^60
// ns. No real run comes near the bounds: 2^60 ns is 36.5 years.
//
// # Interrupted runs
//
// A Writer flushes its buffers and the gzip stream (a gzip sync flush) at
// most FlushInterval (250 ms) after each Write, so that a run killed without
// closing its history (SIGKILL, a crash, a power cut after the operating
// system wrote the file) loses at most the last quarter second of records.
// Such a history ends early: its gzip stream lacks its end, or its last line
// holds part of a record. Readers read it up to the last whole record and
// then return io.EOF as usual; their Truncated method then returns an error
// wrapping ErrTruncated that names the line where the history ends, which
// callers report next to their result. A history cut within its header
// holds no record and is an error.
//
// # Sharded runs
//
// A run split into N shards (`rlbench run --shard I/N --run-id ID`, one
// process per host) leaves N histories, each with the header's shard, the
// run's run_id, and its own start and clock_offset_ns ± clock_uncertainty_ns
// to the limiter's clock. Merge (NewMerge) reads them as one history on the
// limiter's clock: a record of shard s at t is placed at S_s + t + o_s, its
// [sent_ns, received_ns] widened by u_s on either side, so that what a
// check proves of the merged history stays proven whatever each shard's
// true offset within its uncertainty. The merged header's start is the
// earliest shard's start on the limiter's clock, its clock offset 0 ± 0;
// its records carry the shard field and ids unique across shards
// ((id − 1)·N + I + 1). Writer writes a merged history like any other, and
// a Reader reads it back.
//
// # vegeta results
//
// VegetaReader maps the JSON results of vegeta (`vegeta encode --to json`,
// one object per line with timestamp, latency in nanoseconds, code, url,
// error and response headers) into records: sent is the timestamp relative
// to the first result's, received is sent plus latency. Its records obey the
// same accepted ranges: the first timestamp lies in [1970, 2100), every
// other within 2^60 ns of it, and so does timestamp plus latency.
package history
