# pairbench: the two commands a newcomer needs are `make demo` and `make test`.
# Both install what is missing first (scripts/setup.sh).

GO ?= go
BIN := bin/pairbench

.PHONY: all setup build demo test test-short bench fuzz clean

all: build

setup:
	@bash scripts/setup.sh

# pairbench and, beside it, the sandbox's init (sandbox.InitProgram), a small
# program without cgo that starts inside every sandbox in about a
# millisecond (pairbench itself would serve, starting far slower).
# The commit goes into the binary (pairbench version, run.json) even where Go
# cannot stamp it itself.
REVISION := $(shell git rev-parse HEAD 2>/dev/null)
build:
	$(GO) build -ldflags "-X github.com/pairbench/pairbench/bench.revision=$(REVISION)" -o $(BIN) ./cmd/pairbench
	CGO_ENABLED=0 $(GO) build -o $(dir $(BIN))pairbench-sandbox-init ./cmd/pairbench-sandbox-init

## demo: a real bench of the example registry on embedded defaults
## (AGENT=claude-code or AGENT=codex benches that agent instead of pi)
demo: setup build
	./$(BIN) demo $(if $(AGENT),--agent $(AGENT))

## test: the whole test suite, its three lanes (what CI runs; docs/testing.md)
# The short lane first, so that a broken unit fails in minutes; then the
# full lane and the system tests of internal/e2e (build tag e2e) in one go
# test, which runs every test once more with the real stack.
# go test runs GOMAXPROCS packages at once (2 on a 2-core machine): the
# packages' times add up to about twice the suite's wall time, so running
# them one at a time (-p 1) would double it. -timeout bounds each package's
# test binary: the slowest, internal/e2e, has taken 40 minutes on a
# machine loaded many times over, and its tests wait for events until
# a minute before this deadline rather than on clocks of their own.
# -parallel 4: the tests that call t.Parallel (the bot's) wait on job
# queues, not on the CPU; four at a time on 2 cores halve their time again
# (docs/testing.md).
test: setup
	$(GO) vet ./...
	$(GO) vet -tags e2e ./...
	$(GO) test -short -count=1 -parallel 4 ./...
	$(GO) test -count=1 -parallel 4 -tags e2e -timeout 60m ./...

## test-short: the fast lane: no Chromium, bubblewrap or Node needed, no setup
test-short:
	$(GO) test -short -count=1 -parallel 4 ./...

## bench: the Go benchmarks behind the speed targets in the issues
bench: setup
	$(GO) test -run '^$$' -bench . -benchmem ./...

clean:
	rm -rf bin
