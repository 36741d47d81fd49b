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
//	                      start, RFC 3339 with nanoseconds, UTC recommended.
//	                      Every time in a record is in nanoseconds since this
//	                      instant, measured on one monotonic clock.
//	scenario              string, optional: the scenario's name.
//	target                string, optional: what was driven (a URL, "sampleapi").
//	instances             array of strings, optional: the target instances.
//	policies              array, optional: the policies in force, each an object
//	                      {"route": string ("" for every route), "limits":
//	                      array of strings in limiter.ParseLimit syntax, e.g.
//	                      "gcra:10/1s,burst=10"}.
//	clock_offset_ns       integer, optional: the limiter's clock minus the
//	                      harness's (start + monotonic time), in nanoseconds,
//	                      as measured against Redis TIME. Absent when unknown.
//	clock_uncertainty_ns  integer, optional: the half-width of the interval
//	                      around clock_offset_ns that holds the true offset, in
//	                      nanoseconds (half the measuring round trip). Default 0.
//	extra                 object, optional: free-form run metadata (tool
//	                      versions, flags); readers keep it and ignore it.
//
// Record fields (one request each; times in integer nanoseconds since start,
// which may be negative for a request sent before the recorded start):
//
//	id           integer >= 1: the request's identifier, unique in the file.
//	             Writers assign 1, 2, ... when it is 0; readers number records
//	             by line when it is absent.
//	key          string: the identity as the limiter sees it (API key, IP).
//	instance     string, optional: the target instance that answered.
//	route        string, optional: the route the request was sent to, as the
//	             policies name it (for example "/v1/search").
//	cost         integer >= 1: the units the request asks the limiter for.
//	             Default 1 when absent or 0.
//	intended_ns  integer: when the load generator meant to send the request
//	             (its schedule); equal to sent_ns when it has no schedule.
//	             The gap sent_ns - intended_ns exposes coordinated omission.
//	sent_ns      integer: when the request's first byte was written.
//	received_ns  integer >= sent_ns: when the response's headers were read,
//	             or when the transport failed or timed out.
//	status       integer: the HTTP status code; 0 when no response arrived.
//	outcome      string: "admitted", "rejected" (the limiter turned it away,
//	             HTTP 429) or "error" (no response, a timeout, or a 5xx: the
//	             limiter's decision is unknown, in the sense of an
//	             indeterminate operation in Jepsen and Knossos histories).
//	error        string, optional: the transport error's text.
//	headers      object, optional: the rate-limit response headers seen,
//	             names in lower case, values as received (several values of
//	             one header joined by ", "). Recorded names: retry-after,
//	             ratelimit, ratelimit-policy, ratelimit-limit,
//	             ratelimit-remaining, ratelimit-reset, x-ratelimit-limit,
//	             x-ratelimit-remaining, x-ratelimit-reset, x-ratelimit-used.
//	decision_us  integer, optional: the limiter's own decision time when the
//	             target reports it, in microseconds since the Unix epoch on
//	             the limiter's clock. 0 or absent when not reported.
//	phase        string, optional: the name of the traffic phase.
//
// Unknown fields are ignored, so later minor additions stay readable;
// anything that changes the meaning of a field raises the version. Readers
// decode the usual lines with a fast path and fall back to encoding/json,
// the format's definition, for anything unusual (escapes, floats, other
// field spellings).
//
// # vegeta results
//
// VegetaReader maps the JSON results of vegeta (`vegeta encode --to json`,
// one object per line with timestamp, latency in nanoseconds, code, url,
// error and response headers) into records: sent is the timestamp relative
// to the first result's, received is sent plus latency.
package history
