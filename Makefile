# rlbench: the two commands a newcomer needs are `make run` and `make test`.
GO      ?= go
OUT     ?= rlbench-out
BIN     ?= bin/rlbench

.PHONY: all build test bench deps

all: build

build:
	$(GO) build -o $(BIN) ./cmd/rlbench

# deps installs what the tests and runs need beyond Go: redis-server, from
# the system's package manager when it is missing.
deps:
	@command -v redis-server >/dev/null 2>&1 || { \
		echo "installing redis-server (Debian package redis-server)"; \
		if [ "$$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi; \
		$$SUDO apt-get update -qq && $$SUDO apt-get install -y -qq redis-server >/dev/null; }
	@redis-server --version

test: deps
	$(GO) test -race -count=1 ./...
