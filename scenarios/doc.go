// Package scenarios parses, validates and embeds rlbench's scenario files.
//
// A scenario is a YAML file that names what it proves, the Redis to run on,
// the target (sample API instances started by rlbench, or external URLs with
// the policy they claim), the identities that send traffic, the traffic
// phases and the checks with their bounds. Parsing is strict (package
// yamlstrict, which the sample API's configuration shares): an unknown or
// misspelled key is an error that names the file, the line and the nearest
// valid key, and every error about user input is a *ScenarioError
// (yamlstrict.Error) naming file, line and field.
//
// The shipped scenarios are embedded in the binary: Lookup("quickstart")
// works from any directory, List describes them all, and Load accepts a file,
// a directory or a shipped name.
//
// # File format
//
// Durations are Go durations (250ms, 5s, 1m30s). Rates, in traffic phases
// and in policies alike, are N/PERIOD in the one grammar of
// limiter.ParseRate: the period is a Go duration, a number of days or a
// bare unit meaning one of it ("120/1s", "50/s", "600/1m", "50/min",
// "3000/1h", "5/100ms", "10000/30d"). Policies are in limiter.ParseLimit
// syntax ("gcra:10/1s,burst=10", "fixed_window:100/min",
// "fixed_window:10000/30d,name=month"), decoded once, with the file, into
// limiter.Limit values that the runner hands the sample API instances in
// their configuration file unchanged.
//
// Instances count from 1 everywhere: a target of instances: 3 runs
// instance-1, instance-2 and instance-3, the names faults, clock skews,
// histories and reports use.
//
//	name: quickstart            # required; lowercase letters, digits, - and _ (at most 100)
//	description: >-             # required; what the scenario proves
//	  Three instances share one budget per key ...
//	seed: 1                     # seeds identity, route and instance choices; default 1
//	redis:
//	  provider: auto            # auto | process | docker | embedded | external | none
//	  url: redis://host:6379/0  # only with external; never flushed
//	target:                     # instances or external, not both
//	  instances: 3              # sample API processes rlbench starts (1 to 16)
//	  external: [http://127.0.0.1:8080]  # or: an API rlbench does not start
//	  peer: nginx               # instances run another limiter, held to the routes'
//	                            # policies: redis_rate | nginx | express
//	                            # (harness/peers)
//	  spread: round_robin       # round_robin | random (seeded), over instances
//	  store: redis              # redis | memory (instances only)
//	  failure_mode: open        # open | closed | fallback (instances only)
//	  store_timeout: 1s         # instances only; default 1s (drills: 50ms)
//	  clock_skew:               # instances only: offset an instance's clock
//	    - {instance: instance-2, offset: 1h}  # instance-1 .. instance-N
//	  routes:
//	    - path: /api/items
//	      method: GET           # GET | HEAD | POST | PUT | PATCH | DELETE; default GET
//	      query: page=2&sort=id # query string, encoded as sent; default none
//	      headers:              # static headers; ${NAME} takes an environment
//	        Authorization: "Bearer ${TOKEN}"  # variable, never recorded
//	        Content-Type: application/json
//	      body: '{"sku": "A-1"}'  # or body_file: order.json (relative to this
//	                            # file; at most 1 MiB); default none
//	      cost: 1               # units per request; default 1
//	      policies: ["gcra:10/1s,burst=10"]   # applied together, per identity
//	    - path: /api/items-baseline           # no policies: a baseline route,
//	                                          # the limiter bypassed
//	identities:
//	  count: 8                  # default 1, or the keys in keys_file
//	  distribution: uniform     # uniform | hot (with share) | zipf (with s)
//	  share: 0.8                # hot only: identity 0's fraction of requests
//	  s: 1.1                    # zipf only: the exponent, above 1
//	  carry: api_key            # api_key (header, X-API-Key) | bearer
//	                            # (Authorization: Bearer) | query | cookie |
//	                            # client_ip (X-Forwarded-For)
//	  header: X-API-Key         # api_key, client_ip: overrides the header
//	  name: api_key             # query, cookie: the parameter or cookie name
//	  fixed: false              # true: the same generated identities every run
//	  keys_file: keys.txt       # real keys or tokens, one a line (# comments),
//	                            # relative to this file; never recorded
//	  ip_version: 4             # client_ip: 4 (10.0.0.0/8) or 6 (fd00::/8)
//	  prefix: 64                # client_ip: each identity a block of this
//	                            # prefix, every request from another address
//	  trusted_hops: 1           # client_ip in X-Forwarded-For: the proxies the
//	                            # target trusts, its own peer counted
//	  spoof_forwarded_for: true # client_ip: each request puts a forged address
//	                            # of its own before the real one
//	traffic:                    # phases, run in order
//	  - kind: constant          # open model: sends follow the schedule
//	    name: steady            # default phase-N
//	    rate: 120/1s            # or 120/s, 7200/min, 7200/1m ...
//	    duration: 8s
//	    routes:                 # default: every limited route, weight 1
//	      - {path: /api/items, weight: 3}
//	    honor_retry_after: true # clients wait out Retry-After (constant, ramp)
//	  - {kind: ramp, from: 10/1s, to: 100/1s, duration: 5s}
//	  - {kind: burst, requests: 100, spread: 5ms}
//	  - {kind: edge_burst, requests: 10, offset: 100ms, spread: 5ms, window: 1s}
//	  - {kind: idle, duration: 2s}
//	  - {kind: retry_after_probe, requests: 30}
//	checks:
//	  budget: {max_excess: 0}              # units above the policy's bound, per key
//	  false_rejections: {max_rate: 0.01}   # fraction of requests
//	  headers: true                        # Retry-After and RateLimit honesty
//	  overhead: {route: /api/items, baseline: /api/items-baseline, p50: 2ms, p99: 10ms, p999: 25ms}
//	  max_latency: 1s
//	  load_delivered: 0.98                 # default 0.98
//	  faults: {slack: 250ms, recovery: 2s} # drills: latency bound is store_timeout
//	                                       # + slack; budget holds again within
//	                                       # recovery of a fault's end
//	faults:                     # drills: injected while the traffic runs
//	  - {kind: redis_kill, at: 3s, duration: 2s}      # SIGKILL, restart empty
//	  - {kind: redis_pause, at: 3s, duration: 1s}     # SIGSTOP / SIGCONT
//	  - {kind: redis_latency, latency: 200ms, at: 3s, duration: 2s}
//	  - {kind: redis_blackhole, at: 3s, duration: 2s} # also redis_reset, redis_disconnect
//	  - {kind: instance_kill, target: instance-2, at: 2s, duration: 2s}  # instance-1 .. instance-N
//
// # Bounds
//
// Whatever validation accepts, a run can start: every field is checked
// against what the runner and the targets take, so that a scenario fails in
// `rlbench validate`, at its line, and not minutes into a run. A number is
// finite wherever one belongs (.nan and .inf are refused), and a whole
// number where one is counted (cost: 10.9 is refused, not truncated). A
// name has at most MaxNameLength bytes, as a directory of the run's output
// must. A route path starts with a single /, holds no space or control
// character and reads back as the URL path it is (percent-encode the
// rest); on the targets rlbench starts it is also in clean form (no //,
// /./ or /../), of letters, digits and . _ ~ - / only, and not one of the
// sample API's own routes. Every duration has a ceiling: a phase
// MaxTrafficTime (and all timed phases together too), an edge burst's
// offset and window MaxEdgeWindow, a fault's at, duration and latency
// MaxFaultTime, store_timeout MaxStoreTimeout, a clock skew MaxClockSkew
// either way, max_latency and the overhead bounds MaxLatencyBound, the
// fault checks' slack and recovery MaxFaultTime. Aliases and merge keys
// (<<: *base) are checked where they are used, as if written there.
//
// # Requests and identities
//
// A route's requests carry its method, query string, body and headers as
// written. A header value's ${NAME} references are replaced by environment
// variables when the scenario is parsed; an unset or empty variable is an
// error naming the header and the variable. Such values are Secrets: they
// are sent and never recorded (histories, run.json, summary.json, reports,
// logs), and a transport error that quotes one shows Redacted instead. The
// identity's header, parameter or cookie, Host, Content-Length and the
// other transport headers are not a route's to set. Base URLs take no
// credentials.
//
// Every run meets fresh identities: generated keys carry the run's id
// (key-3f9a1c07-0007; see Identities.Identity and RunID), and client
// addresses move with it, so that a limiter that outlives runs starts
// every key with a full budget. fixed: true keeps the names of every run
// the same (key-0007), and keys from keys_file are always the same; a run
// then records that its identities may not have begun fresh. Keys from a
// file are Secrets too: histories name them key#1, key#2, ... (the key's
// place in the file, comments and blank lines skipped). count defaults to
// the number of keys, one fewer when a retry_after_probe needs one of its
// own.
//
// Client addresses go in X-Forwarded-For (or the header given): IPv4
// identities in 10.0.0.0/8, IPv6 ones each in a /64 of fd00::/8. With
// prefix, an identity is a block of that many bits, and each request comes
// from another address of it: the history still records the block, so
// that checks hold a limiter that keys the prefix to one budget per block
// and catch one that keys each address. trusted_hops: N appends N−1 proxy
// addresses (ProxyPrefixV4, ProxyPrefixV6) after the client's, where a
// server that trusts N hops reads the client; the runner tells the sample
// API to trust them. The sample API reads keys from X-API-Key or
// Authorization: Bearer, so query and cookie carries need an external
// target.
//
// The budget check always runs. An edge_burst sends its requests twice:
// offset before and offset after the next edge of an aligned window (on the
// limiter's clock) of length window, which defaults to the period of the
// first window policy of its routes; offset defaults to 1s, or a quarter of
// the window when that is shorter. A retry_after_probe uses identity
// number count (one no other phase uses), sends until it is rejected, waits
// exactly the Retry-After it was given and retries once.
package scenarios
