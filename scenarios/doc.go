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
//	  proxy: 127.0.0.1:16379    # rlbench's fault proxy listens here and forwards
//	                            # to the Redis; point an external target's
//	                            # limiter at it (default: a free loopback port,
//	                            # for the instances rlbench starts)
//	  topology: single          # single | sentinel: a master and a replica
//	                            # watched by Redis Sentinel (process only);
//	                            # the instances follow the master through it
//	  replica_clock: -2s        # sentinel only: the replica's clock runs this
//	                            # far from the host's (libfaketime)
//	target:                     # instances or external, not both
//	  instances: 3              # sample API processes rlbench starts (1 to 16)
//	  external: [http://127.0.0.1:8080]  # or: an API rlbench does not start
//	  peer: nginx               # instances run another limiter, held to the routes'
//	                            # policies: redis_rate | nginx | express
//	                            # (harness/peers)
//	  spread: round_robin       # round_robin | random (seeded), over instances
//	  store: redis              # redis | memory (instances only)
//	  failure_mode: open        # open | closed | fallback; for external: what
//	                            # its limiter declares (default: none declared)
//	  store_timeout: 1s         # default 1s (drills: 50ms); for external: its
//	                            # limiter's timeout on a Redis call (needed
//	                            # with faults)
//	  # with external and failure_mode: fallback, instances is the number of
//	  # the API's instances sharing the budget (default: one per URL)
//	  clock_skew:               # instances only: offset an instance's clock
//	    - {instance: instance-2, offset: 1h}  # instance-1 .. instance-N
//	  clock_resolution: 1ms     # external only: the step the target's limiter
//	                            # reads its clock in; default 1µs (Redis TIME)
//	  clock: {offset: 700ms, uncertainty: 5ms}  # external only: the target's
//	                            # clock minus rlbench's, declared; default:
//	                            # measured (see "The limiter's clock" below)
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
//	      limiter: redis_rate   # sample API only: decide this route with
//	                            # go-redis/redis_rate on the same Redis (one
//	                            # gcra/token_bucket policy); default the target's
//	    - path: /api/items-baseline           # no policies: a baseline route,
//	                                          # the limiter bypassed
//	identities:
//	  count: 8                  # default 1, or the keys in keys_file; with
//	                            # groups, the identities of no group (default 0)
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
//	  groups:                   # plans: identities held to policies of their own
//	    - name: free            # lowercase letters, digits and _; keys free-<run>-0000
//	      count: 5              # default 1, or the keys in keys_file
//	      policies: ["gcra:60/1m,burst=10"]   # replace the routes' for its keys
//	    - {name: pro, count: 2, policies: ["gcra:600/1m,burst=100"], keys_file: pro.txt}
//	traffic:                    # phases, run in order
//	  - kind: constant          # open model: sends follow the schedule
//	    name: steady            # default phase-N
//	    rate: 120/1s            # or 120/s, 7200/min, 7200/1m ...
//	    duration: 8s
//	    routes:                 # default: every limited route, weight 1
//	      - {path: /api/items, weight: 3}
//	    honor_retry_after: true # clients wait out Retry-After (constant, ramp)
//	    groups: [pro]           # send from these identity groups only; default:
//	                            # every identity (not idle)
//	  - {kind: ramp, from: 10/1s, to: 100/1s, duration: 5s}
//	  - {kind: burst, requests: 100, spread: 5ms}
//	  - {kind: burst, requests: 20, spread: 1ms, repeat: 10, gap: 50ms}  # 10 bursts
//	  - {kind: idle, duration: 2s}          # then a burst on a refilled budget
//	  - {kind: edge_burst, requests: 10, offset: 100ms, spread: 5ms, window: 1s}
//	  - {kind: idle, duration: 2s}
//	  - {kind: retry_after_probe, requests: 30}
//	checks:
//	  budget: {max_excess: 0}              # units above the policy's bound, per key
//	  false_rejections: {max_rate: 0.01}   # fraction of requests, per route's rule
//	  headers: true                        # Retry-After and RateLimit honesty
//	  overhead: {route: /api/items, baseline: /api/items-baseline, p50: 2ms, p99: 10ms, p999: 25ms}
//	                                       # with versus: another limited route,
//	                                       # ratio_p50/ratio_p99/ratio_p999 bound
//	                                       # route's overhead over versus's
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
//	  - {kind: clock_step, target: redis, step: -2s, at: 3s}  # or target: instance-N;
//	                            # instant and lasting: no duration
//	  - {kind: redis_failover, at: 3s, duration: 1s}  # topology: sentinel
//	  - kind: command           # the user's own commands, with sh -c in the
//	    inject: docker kill redis  # scenario file's directory
//	    heal: docker start redis   # optional; sent duration after inject returned
//	    timeout: 10s            # each command; default 30s; its process
//	                            # group is killed then
//	    effect: loses_state     # unavailable | loses_state | none
//	    at: 3s
//	    duration: 2s
//	shards:                     # a sharded run (rlbench run --shard I/N)
//	  count: 3                  # the shards' count for --shard I (1 to 1024)
//	  spread: [hot]             # identities every shard sends its share of:
//	                            # hot (of distribution: hot) or a group's name
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
// # Plans
//
// identities.groups gives keys plans of their own, as an api_keys table
// does (free: 60/min, burst 10; pro: 600/min, burst 100). A group's
// policies replace the routes' policies for its keys, on every limited
// route, pooled per key as a plan is; the routes' policies stay the plan
// of the identities of no group (identities.count of them, none by
// default when groups are given); a route without policies stays a
// baseline for every key. Identities are numbered those of no group
// first, then each group's (Identities.Sets). A group's generated keys
// carry its name (free-3f9a1c07-0003, or free-0003 with fixed: true) and
// its keys from keys_file are named by place (pro#2), so the history's
// header records each group's keys as one pattern (free-*, pro#*) with its
// policies, ahead of the routes' own, and the checker judges every key by
// its group's: a check's scope names the pattern. Group names hold no '-'
// and are not "key", so no pattern matches another group's keys. A key
// appears in one group's file (or identities.keys_file) only.
//
// A phase's groups choose the identities it sends from, spread over them
// by the distribution (the first group named holds the hot identity); a
// retry_after_probe sends from the spare identity of its first group (the
// group's count-th key, which no other phase uses; a keys file then needs
// a key more than count). `rlbench run --claim GROUP=SPEC` holds a
// group's keys to another policy, as ROUTE=SPEC does a route.
//
// Groups need keys or tokens (not client_ip) and the sample API or an
// external target (a peer holds every key to its route's policy). On the
// sample API each group's policies must be a plan as its api_keys table
// holds one (SamplePlanOf): one gcra or token_bucket limit, all groups on
// one algorithm, and at most one fixed_window over 30d as a monthly quota;
// the runner lists every key of every group, the probe's spare included,
// with its plan in each instance's configuration, and takes the limits off
// the routes. Identities of no group then take the routes' policies as
// any_key's plan, which needs the same plan-shaped policies on every
// limited route; without them, an unknown key is refused (401). The
// shipped plans scenario runs a free and a pro group beside two keys of
// no group.
//
// # Checks and phases
//
// The budget check always runs; it fails when some key's admitted units in
// one interval exceed the policy's bound by more than max_excess (default
// 0). The false-rejection check always runs too; it fails when the
// rejections that had room under every timing number more than max_rate
// times the requests of the route's policy (⌊max_rate·N⌋ of N pass; 0
// when the file does not say). The retry-after, ratelimit-fields and
// header-style checks run unless headers: false, and the report then says
// they were left out.
// Every one of these settings is recorded in run.json, so `rlbench check
// RUN_DIR` applies it as the run did.
//
// A burst releases requests requests evenly within spread (0: all at once;
// at most 1m, beyond which a constant phase sends the paced load). With
// repeat: N (1 to 1000; default 1) it releases N such bursts, the first
// send of each gap (default 0, at least 0) after the last planned send of
// the one before, so requests × N requests in N groups; an idle phase
// before a burst, of any length, lets the budgets refill first. Every
// request of a burst, and of an edge burst, goes out on a connection of its
// own that is opened shortly (about 100ms) before its planned send, never
// earlier, so a target that closes idle connections early (Go's
// ReadHeaderTimeout of a second or two) sees each request arrive in time;
// requests then wait at a start barrier, already encoded, and are written
// at their planned instant. What each burst achieved is recorded per
// burst (run.json: spread_ns, achieved_spread_ns and bursts), and the
// load-delivered check fails a burst whose achieved spread exceeds the
// planned spread by more than the larger of the spread and 5ms.
//
// A scenario may last at most 2h, every phase counted at its longest:
// constant, ramp and idle phases their duration; a burst N × spread +
// (N−1) × gap; an edge burst its window (the most it waits for the edge)
// plus twice its offset and its spread; a retry_after_probe 2m, the longest
// Retry-After it waits out.
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
//
// # Faults
//
// A fault's window starts when it is sent (before it acts, so that a
// request cut off while it takes hold is inside it) and ends when its heal
// returns; the declared failure mode is checked on the requests answered
// while it was surely in effect, from its injection's return to its heal's
// sending. redis_kill and redis_pause act on a Redis process rlbench runs
// (process, docker); redis_latency, redis_blackhole, redis_reset and
// redis_disconnect act on the limiter's link to Redis through rlbench's
// proxy (package faults), which carries AUTH, SELECT and TLS through
// unchanged: the instances rlbench starts get the Redis URL with only its
// address replaced by the proxy's, and an external target's owner points
// its limiter at redis.proxy (a rediss:// certificate must then name the
// proxy's host, or the limiter's URL take skip_verify=true). A proxy fault
// through which no connection came acted on nothing and fails the
// fault-injected check.
//
// A command fault runs the user's inject and heal commands (sh -c, in the
// scenario file's directory, each bounded by timeout, its process group
// killed when the timeout or the run ends first); their output, exit code
// and duration go into run.json and a file per fault,
// fault-N-command.log, in the scenario's output directory. A command that
// exits non-zero or times out fails the fault-injected check with its
// output; a failed inject is healed at once. Its effect says what it does
// to the limiter's store, which rlbench cannot see: unavailable (the
// failure mode decides every request, as for redis_pause), loses_state
// (also comes back empty, as for redis_kill) or none (only the latency
// bound applies).
//
// A clock_step steps a clock by step at its time and leaves it stepped.
// target: redis steps the limiter's clock, Redis TIME, of a redis-server
// that rlbench then runs under libfaketime (Debian package faketime; a
// scenario that needs it is skipped, with the install command, where it is
// missing); target: instance-N restarts that instance with its clock
// offset moved by step. The step and when it happened go into run.json
// (clock_step_ns), and the checker widens the decision interval of every
// request that may have been decided after it: by the whole step for an
// instance's clock and a step forward, and for a step of the limiter's
// clock backwards by what its contract allows, since per-key time never
// runs backwards: the time from the key's last write before the step to
// its first decision after it, at most the step.
//
// A redis_failover needs redis: {topology: sentinel}: a master, a replica
// and a Sentinel (quorum 1, down-after 500ms) on loopback ports. It pauses
// the master (SIGSTOP), waits until the Sentinel names the replica master
// and at least duration has passed, then resumes the old master and points
// it at the new one. The instances follow through go-redis's failover
// client; writes not yet replicated are lost, so the window loses state
// (the budget is checked apart before and after), and the promoted replica
// keeps the rest, so requests within the refill time of the policy after
// the window are judged by the budget only. The failure mode is checked
// until the Sentinel named the new master. With replica_clock the failover
// also steps the limiter's clock by it.
//
// An external target takes redis_latency, redis_blackhole, redis_reset,
// redis_disconnect (with redis: {provider: external, url, proxy}), and
// command faults, and must declare target.store_timeout with them:
//
//	redis: {provider: external, url: "redis://:PASSWORD@127.0.0.1:6379/2", proxy: 127.0.0.1:16379}
//	target:
//	  external: [http://127.0.0.1:8080]   # its limiter uses redis://:PASSWORD@127.0.0.1:16379/2
//	  failure_mode: closed
//	  store_timeout: 50ms
//
// rlbench cannot kill or pause an external Redis: a scenario that asks for
// it is rejected, naming kind: command or a proxy fault instead.
//
// # Sharded runs
//
// A run can be split into shards that several load generators fire
// together (rlbench run --shard I/N --run-id ID, shard I from 0 of N): the
// plan of every phase is drawn from the seed and the phase's place alone,
// so every shard plans the same requests, and each request belongs to
// exactly one shard (harness/traffic: Plan, Owner). A request belongs to
// the shard of its identity, identity index mod N, so that one key's
// requests, and a client that honours Retry-After, stay on one load
// generator; a request of an identity that shards.spread names belongs to
// the shard of its place k in its phase, k mod N, so that the hot key of a
// hot distribution (hot: the first identity each phase sends from) or a
// group's keys are shared out instead of loading one shard; a
// retry_after_probe runs on shard 0. Each shard sends its requests at the
// times the whole run plans them (a burst's at its planned release), and
// counts its own share as planned. shards.count is the count --shard I
// takes when it names no count.
//
// Shards share a budget only when they reach one limiter on one store:
// Shardable refuses a scenario with faults (a drill's fault is injected by
// one run), one whose sample API or peer instances rlbench starts unless
// they keep their budget in an external Redis every shard reaches
// (redis.provider: external, or rlbench run --redis-provider external),
// and one whose phases honour Retry-After with a spread identity; the
// error names the field and the fix.
package scenarios
