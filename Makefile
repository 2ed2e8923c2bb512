# pairbench: the two commands a newcomer needs are `make demo` and `make test`.
# Both install what is missing first (scripts/setup.sh).

GO ?= go
BIN := bin/pairbench

.PHONY: all setup build demo test bench fuzz clean

all: build

setup:
	@bash scripts/setup.sh

# pairbench and, beside it, the sandbox's init (sandbox.InitProgram), a small
# program without cgo that starts inside every sandbox in about a
# millisecond (pairbench itself would serve, starting far slower).
build:
	$(GO) build -o $(BIN) ./cmd/pairbench
	CGO_ENABLED=0 $(GO) build -o $(dir $(BIN))pairbench-sandbox-init ./cmd/pairbench-sandbox-init

## demo: a real bench of the example registry on embedded defaults
## (AGENT=claude-code or AGENT=codex benches that agent instead of pi)
demo: setup build
	./$(BIN) demo $(if $(AGENT),--agent $(AGENT))

## test: the whole test suite (what CI runs)
# go test runs GOMAXPROCS packages at once (2 on a 2-core machine): the
# packages' times add up to about twice the suite's wall time, so running
# them one at a time (-p 1) would double it. -timeout bounds each package's
# test binary: the slowest, cmd/pairbench, has taken 40 minutes on a
# machine loaded many times over, and its tests wait for events until
# a minute before this deadline rather than on clocks of their own.
test: setup
	$(GO) vet ./...
	$(GO) test -count=1 -timeout 60m ./...

## bench: the Go benchmarks behind the speed targets in the issues
bench: setup
	$(GO) test -run '^$$' -bench . -benchmem ./...

clean:
	rm -rf bin
