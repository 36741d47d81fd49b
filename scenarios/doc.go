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
//	name: quickstart            # required; lowercase letters, digits, - and _
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
//	  clock_resolution: 1ms     # external only: the step the target's limiter
//	                            # reads its clock in; default 1µs (Redis TIME)
//	  clock: {offset: 700ms, uncertainty: 5ms}  # external only: the target's
//	                            # clock minus rlbench's, declared; default:
//	                            # measured (see "The limiter's clock" below)
//	  routes:
//	    - path: /api/items
//	      method: GET           # default GET
//	      cost: 1               # units per request; default 1
//	      policies: ["gcra:10/1s,burst=10"]   # applied together, per identity
//	    - path: /api/items-baseline           # no policies: a baseline route,
//	                                          # the limiter bypassed
//	identities:
//	  count: 8                  # default 1
//	  distribution: uniform     # uniform | hot (with share) | zipf (with s)
//	  share: 0.8                # hot only: identity 0's fraction of requests
//	  s: 1.1                    # zipf only: the exponent, above 1
//	  carry: api_key            # api_key (X-API-Key) | client_ip (X-Forwarded-For)
//	  header: X-API-Key         # overrides the header
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
//	  false_rejections: {max_rate: 0.01}   # fraction of requests, per route's rule
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
// The budget check always runs; it fails when some key's admitted units in
// one interval exceed the policy's bound by more than max_excess (default
// 0). The false-rejection check always runs too; it fails when the
// rejections that had room under every timing number more than max_rate
// times the requests of the route's policy (⌊max_rate·N⌋ of N pass; 0
// when the file does not say). headers: true runs the retry-after,
// ratelimit-fields and header-style checks; without it (the default, or
// headers: false) they are not run, and the report says so in a note.
// Every one of these settings is recorded in run.json, so `rlbench check
// RUN_DIR` applies it as the run did.
//
// # The limiter's clock
//
// Fixed windows and the sliding window counter's windows are aligned on
// the limiter's clock; the checks place them by its offset to rlbench's.
// rlbench measures it on Redis TIME when it has the limiter's Redis (the
// instances it starts, or an external target whose redis.url the file
// gives with provider external); else, for an external target, it
// derives it from the Date headers of the target's responses (each a
// whole second of the target's clock, bounding the offset between its
// request's send and receipt), unless target.clock declares it. When
// nothing measures it the offset is unknown, and the window checks use
// bounds that hold whatever the offset (at most twice the limit within
// any window length). The clock's resolution widens every interval: the
// sample API reads microseconds, each peer declares its own (NGINX
// milliseconds), and target.clock_resolution gives an external target's.
//
// An edge_burst sends its requests twice:
// offset before and offset after the next edge of an aligned window (on the
// limiter's clock) of length window, which defaults to the period of the
// first window policy of its routes; offset defaults to 1s, or a quarter of
// the window when that is shorter. A retry_after_probe uses identity
// number count (one no other phase uses), sends until it is rejected, waits
// exactly the Retry-After it was given and retries once.
package scenarios
