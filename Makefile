# rlbench: the two commands a newcomer needs are `make run` and `make test`.
GO      ?= go
OUT     ?= rlbench-out
BIN     ?= bin/rlbench

.PHONY: all build run test bench deps

all: build

build:
	$(GO) build -buildvcs=auto -o $(BIN) ./cmd/rlbench

# run fires the quickstart scenario at three sample API instances sharing one
# Redis (redis-server from the PATH, else Docker, else an embedded one) and writes the
# report, summary and JUnit files under $(OUT).
run: build
	$(BIN) run --out $(OUT) quickstart

# deps installs what the tests and runs need beyond Go, from the system's
# package manager when missing: redis-server, redis-sentinel (the failover
# drills' Sentinel) and faketime (libfaketime, the clock-step drills' Redis
# clock).
deps:
	@missing=$$(command -v redis-server >/dev/null 2>&1 || echo redis-server; \
		command -v redis-sentinel >/dev/null 2>&1 || echo redis-sentinel; \
		dpkg-query -W -f='$${Status}\n' libfaketime 2>/dev/null | grep -q '^install ok installed' || echo faketime); \
	if [ -n "$$missing" ]; then \
		echo "installing Debian packages:" $$missing; \
		if [ "$$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi; \
		$$SUDO apt-get update -qq && $$SUDO apt-get install -y -qq $$missing >/dev/null; \
	fi
	@redis-server --version

# test runs every package's tests with the race detector, one package at a
# time: the end-to-end tests time real traffic, and a second package's
# tests on the same two cores would be noise in their figures; the command
# line's end-to-end tests take minutes on a busy machine, so the timeout per
# package is 20 minutes rather than go test's 10. Then each
# fuzz target of the readers, the checker and the parsers runs for
# TEST_FUZZTIME.
TEST_FUZZTIME ?= 3s
test: deps
	$(GO) test -race -count=1 -p 1 -timeout 20m ./...
	$(MAKE) --no-print-directory fuzz FUZZTIME=$(TEST_FUZZTIME)

# fuzz runs each fuzz target of the history readers, the checker and the
# policy and scenario parsers for
# FUZZTIME, one target per go test call (-fuzz takes one target at a time):
# crashes, hangs and non-deterministic reports on arbitrary input. A failing
# input is saved under the package's testdata/fuzz for a regression test.
FUZZTIME ?= 10s
FUZZFLAGS ?=

.PHONY: fuzz
fuzz:
	$(GO) test -run '^$$' -fuzz '^FuzzReader$$' -fuzztime $(FUZZTIME) $(FUZZFLAGS) ./harness/history/
	$(GO) test -run '^$$' -fuzz '^FuzzVegetaReader$$' -fuzztime $(FUZZTIME) $(FUZZFLAGS) ./harness/history/
	$(GO) test -run '^$$' -fuzz '^FuzzDecodeRecord$$' -fuzztime $(FUZZTIME) $(FUZZFLAGS) ./harness/history/
	$(GO) test -run '^$$' -fuzz '^FuzzCheck$$' -fuzztime $(FUZZTIME) $(FUZZFLAGS) ./harness/checker/
	$(GO) test -run '^$$' -fuzz '^FuzzParseLimit$$' -fuzztime $(FUZZTIME) $(FUZZFLAGS) ./harness/checker/
	$(GO) test -run '^$$' -fuzz '^FuzzParse$$' -fuzztime $(FUZZTIME) $(FUZZFLAGS) ./scenarios/
	$(GO) test -run '^$$' -fuzz '^FuzzDecode$$' -fuzztime $(FUZZTIME) $(FUZZFLAGS) ./scenarios/yamlstrict/

# bench measures rlbench on this machine against the anchors users would
# pick instead (x/time/rate in memory, go-redis/redis_rate on the same
# redis-server), the checker on one and ten million records, the report of
# ten million requests and a burst of 1,000, and prints the table of
# medians, ratios and goals, each with whether it is met. Raw output in
# $(BENCH_OUT). It takes about fifteen minutes. BENCH_RECORDS=1M,10M,100M
# adds the checker on a hundred million records (2.5 GB of history
# generated once into $TMPDIR/rlbench-bench; half an hour more).
BENCH_OUT     ?= bench.txt
BENCH_RECORDS ?= 1M,10M
bench: deps bench-deps
	$(GO) test -run '^$$' -bench 'MemoryStore|AnchorXTimeRate' -benchtime 300ms -count 5 ./limiter/ | tee $(BENCH_OUT)
	$(GO) test -run '^$$' -bench 'VersusXTimeRate' -benchtime 1000000x -count 5 ./limiter/ | tee -a $(BENCH_OUT)
	$(GO) test -run '^$$' -bench 'BenchmarkRedis$$' -benchtime 1s ./limiter/redisstore/ | tee -a $(BENCH_OUT)
	$(GO) test -run '^$$' -bench 'BenchmarkVersusRedisRate' -benchtime 100000x -count 5 ./limiter/redisstore/ | tee -a $(BENCH_OUT)
# The reference against redis_rate on one redis-server: the latency the
# middleware adds per percentile on one HTTP server (requests to the
# baseline, the reference with and without a lease, redis_rate and a no-op
# EVALSHA, the floor, interleaved), and the server's own ceiling (redis-benchmark sending the
# store's program, one decision and DefaultMaxBatch decisions per FCALL).
	$(GO) test -run '^$$' -bench 'BenchmarkOverheadVersusRedisRate' -benchtime 5000x -count 3 ./limiter/httplimit/ | tee -a $(BENCH_OUT)
	$(GO) test -run '^$$' -bench 'BenchmarkRedisCeiling' -benchtime 300000x -count 3 ./limiter/redisstore/ | tee -a $(BENCH_OUT)
# redis-server's instructions per decision under callgrind, which load does
# not move: the store one and 20 decisions per FCALL and one per EVALSHA,
# redis_rate, and the floor of one decision per FCALL.
	$(GO) test -run '^$$' -bench 'BenchmarkRedisInstructions' -benchtime 1x ./limiter/redisstore/ | tee -a $(BENCH_OUT)
# A burst of 1,000 requests planned within 5 ms over three loopback
# servers: the achieved spread, first to last send or write.
	$(GO) test -run '^$$' -bench 'BenchmarkBurst1000' -benchtime 10x -count 3 ./harness/traffic/ | tee -a $(BENCH_OUT)
# The checker on history files of BENCH_RECORDS records (generated once
# into $TMPDIR/rlbench-bench): reading, decoding and every check, with its
# goal of 10 s and 1 GiB of heap on two cores for ten million (20 s of CPU:
# the figure a busy machine does not inflate).
	$(GO) test -run '^$$' -bench 'BenchmarkCheckFile$$' -benchtime 1x -count 3 -timeout 120m ./harness/checker/ -records=$(BENCH_RECORDS) | tee -a $(BENCH_OUT)
# The report of a run of ten million requests (written once into
# $TMPDIR/rlbench-bench, a few minutes): loading it, reading its history
# and rendering report.html, with its goal of 10 s.
	$(GO) test -run '^$$' -bench 'BenchmarkRender$$' -benchtime 1x -count 3 -timeout 60m ./reports/ -requests=10M | tee -a $(BENCH_OUT)
	@echo
	@$(GO) run ./limiter/internal/benchtable \
		-ratio 'MemoryStore/*/keys=10000 / AnchorXTimeRate/keys=10000' \
		-ratio 'MemoryStore/*/keys=1 / AnchorXTimeRate/keys=1' \
		-ratio 'Redis/store=batched/*/10kkeys / Redis/anchor=redis_rate/10kkeys' \
		-ratio 'Redis/store=batched/*/1key / Redis/anchor=redis_rate/1key' \
		-ratio 'Redis/store=batched/*/10kkeys / Redis/ceiling=noop_evalsha' \
		-ratio 'VersusRedisRate/batched/*:store-decisions/s / VersusRedisRate/batched/*:redis_rate-decisions/s >= 4' \
		-ratio 'VersusRedisRate/unbatched/*:store-decisions/s / VersusRedisRate/unbatched/*:redis_rate-decisions/s >= 1.2' \
		-ratio 'VersusRedisRate/floor/*:store-decisions/s / VersusRedisRate/floor/*:redis_rate-decisions/s' \
		-ratio 'OverheadVersusRedisRate:reference-lease-p50-ms / OverheadVersusRedisRate:redis_rate-p50-ms <= 0.6' \
		-ratio 'OverheadVersusRedisRate:reference-lease-p99-ms / OverheadVersusRedisRate:redis_rate-p99-ms <= 0.6' \
		-ratio 'OverheadVersusRedisRate:reference-p50-ms / OverheadVersusRedisRate:redis_rate-p50-ms' \
		-ratio 'OverheadVersusRedisRate:reference-p99-ms / OverheadVersusRedisRate:redis_rate-p99-ms' \
		-ratio 'OverheadVersusRedisRate:reference-p50-ms / OverheadVersusRedisRate:floor-p50-ms' \
		-ratio 'OverheadVersusRedisRate:redis_rate-p50-ms / OverheadVersusRedisRate:floor-p50-ms' \
		-ratio 'Redis/store=batched/*/10kkeys / RedisCeiling/fcall-batch=128' \
		-ratio 'Redis/store=batched/*/10kkeys / RedisCeiling/fcall-batch=1' \
		-ratio 'RedisInstructions:redis_rate-instructions/decision / RedisInstructions:store_batch20-instructions/decision' \
		-ratio 'RedisInstructions:redis_rate-instructions/decision / RedisInstructions:store_batch1-instructions/decision' \
		-ratio 'RedisInstructions:redis_rate-instructions/decision / RedisInstructions:store_evalsha_batch1-instructions/decision' \
		-ratio 'RedisInstructions:redis_rate-instructions/decision / RedisInstructions:floor_batch1-instructions/decision' \
		-ratio 'VersusRedisRate/scripts/*:store-decisions/s / VersusRedisRate/scripts/*:redis_rate-decisions/s' \
		-goal 'OverheadVersusRedisRate:reference-lease-p99-ms <= 1.5' \
		-goal 'Burst1000:spread-ms <= 10' \
		-goal 'CheckFile/records=10M:ns/op <= 10e9' \
		-goal 'CheckFile/records=10M:cpu-s/op <= 20' \
		-goal 'CheckFile/records=10M:MiB-peak-heap <= 1024' \
		-goal 'CheckFile/records=100M:MiB-peak-RSS <= 1024' \
		-goal 'Render/requests=10M:ns/op <= 10e9' < $(BENCH_OUT)

# bench-deps installs what bench needs beyond deps, from the system's
# package manager when missing: redis-benchmark (redis-tools), the server's
# ceiling, and valgrind, its instruction counts.
.PHONY: bench-deps
bench-deps:
	@missing=$$(command -v redis-benchmark >/dev/null 2>&1 || echo redis-tools; \
		command -v valgrind >/dev/null 2>&1 || echo valgrind); \
	if [ -n "$$missing" ]; then \
		echo "installing Debian packages:" $$missing; \
		if [ "$$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi; \
		$$SUDO apt-get update -qq && $$SUDO apt-get install -y -qq $$missing >/dev/null; \
	fi

# screenshot renders the report of the run in RUN_DIR with this tree's
# renderer and photographs its first screen in headless Chromium (Debian
# package chromium, installed when missing) to SCREENSHOT. RUN_DIR is left
# untouched; try it on the shipped synthetic run:
#   make screenshot RUN_DIR=reports/testdata/run
RUN_DIR    ?= rlbench-out
SCREENSHOT ?= reports/screenshot.png

.PHONY: screenshot
screenshot:
	@command -v chromium >/dev/null 2>&1 || { \
		echo "installing chromium (Debian package chromium)"; \
		if [ "$$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi; \
		$$SUDO apt-get update -qq && $$SUDO apt-get install -y -qq chromium >/dev/null; }
	@tmp=$$(mktemp -d) && trap 'rm -rf "$$tmp"' EXIT && \
	$(GO) run ./cmd/rlbench report --out "$$tmp/report.html" $(RUN_DIR) && \
	timeout 120 chromium --headless --no-sandbox --disable-gpu --disable-background-networking \
		--disable-component-update --disable-sync --no-first-run --hide-scrollbars \
		--user-data-dir="$$tmp/profile" --screenshot=$(abspath $(SCREENSHOT)) --window-size=1280,1600 \
		"file://$$tmp/report.html" && \
	echo "screenshot of $(RUN_DIR)'s report in $(SCREENSHOT)"

# mutation verifies the checker by mutation (rlbench mutate): each faulty
# limiter variant of the sample API must fail its scenario's intended check
# while the reference limiter passes it. For false alarms, run every shipped
# scenario 20 times against the reference:
#   make mutation MUTATION_ARGS='--repeat-reference 20'
MUTATION_ARGS ?=

.PHONY: mutation
mutation: deps build
	$(BIN) mutate --out $(OUT)-mutation $(MUTATION_ARGS)

# peers installs the rate limiters rlbench holds to their documented claims
# (scenarios/peers, `rlbench run scenarios/peers/`): NGINX, HAProxy and
# Flask-Limiter from the distribution's packages (apt-get, when missing),
# the Node.js peers' npm packages at the versions harness/peers/node's
# package-lock.json pins (npm ci into NODE_PEERS_DIR, when the lock
# changed), express-rate-limit into EXPRESS_DIR, and bin/rlbench-gopeers,
# the Go peers' server, a module of its own so rlbench does not link them.
# Running it again changes nothing.
CACHE_DIR      ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/rlbench
NODE_PEERS_DIR ?= $(CACHE_DIR)/nodepeers
EXPRESS_DIR    ?= $(CACHE_DIR)/express
PEER_DEBS      := haproxy python3-flask-limiter python3-limits python3-redis python3-waitress

.PHONY: peers
peers: build
	@missing=$$(for p in $(PEER_DEBS); do dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | grep -q '^install ok installed' || echo $$p; done; \
		command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ] || echo nginx-light; \
		command -v node >/dev/null 2>&1 || echo nodejs; command -v npm >/dev/null 2>&1 || echo npm); \
	if [ -n "$$missing" ]; then \
		echo "installing Debian packages:" $$missing; \
		if [ "$$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi; \
		$$SUDO apt-get update -qq && $$SUDO apt-get install -y -qq $$missing >/dev/null; \
	fi
	@mkdir -p $(NODE_PEERS_DIR)
	@if ! cmp -s harness/peers/node/package-lock.json $(NODE_PEERS_DIR)/package-lock.json || [ ! -d $(NODE_PEERS_DIR)/node_modules ]; then \
		cp harness/peers/node/package.json harness/peers/node/package-lock.json $(NODE_PEERS_DIR)/ && \
		npm ci --prefix $(NODE_PEERS_DIR) --no-audit --no-fund; \
	fi
	@[ -f $(EXPRESS_DIR)/node_modules/express-rate-limit/package.json ] || \
		npm install --prefix $(EXPRESS_DIR) --no-audit --no-fund express express-rate-limit rate-limit-redis redis
	$(GO) build -C harness/peers/gopeers -o $(abspath bin/rlbench-gopeers) .
	@echo "peers installed; run them with: $(BIN) run scenarios/peers/"
