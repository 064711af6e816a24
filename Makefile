# One-command entry points for muster. Every target that builds first runs scripts/install-deps,
# which is idempotent, so `make test` and `make demo` work on a fresh Debian 12 machine.
# The machine this is tuned for has 2 cores; override with `make JOBS=8 test`.

JOBS    ?= 2
CMAKE   ?= cmake
CTEST   ?= ctest
MUSTER  := build/release/src/cmd/muster
BENCH_DIR := build/release/bench
FORMAT_DIRS := src bench tests

.PHONY: all deps configure build test bench bench-peers demo asan format clean

all: build

deps:
	scripts/install-deps

configure: deps
	$(CMAKE) --preset release

build: configure
	$(CMAKE) --build --preset release --parallel $(JOBS)

# Unit tests plus the conformance CTest (`muster scenario tests/conformance/*/*.yaml`).
# --no-tests=error: a test run that finds nothing to run is a failure, not a pass.
test: build
	$(CTEST) --preset release --parallel $(JOBS) --no-tests=error

# Runs every benchmark executable under build/release/bench/ and prints its figures.
bench: build
	@set -e; \
	bins=$$(find $(BENCH_DIR) -type f -perm -u+x -not -path '*/CMakeFiles/*' 2>/dev/null | sort); \
	if [ -z "$$bins" ]; then echo "bench: no benchmark binaries under $(BENCH_DIR)"; exit 0; fi; \
	for b in $$bins; do echo "== $$b"; "$$b"; done

# muster beside kube-scheduler, Volcano and kube-apiserver on one real control plane
# (bench/peers/run.sh; docs/benchmarks.md, "Side by side"): the issue's full sizes, one round.
# Volcano too: PEERS_FLAGS='--volcano-src DIR', DIR a Volcano checkout at a release tag.
# Smaller: PEERS_FLAGS=--small (or --nodes N --pods N ...); three rounds: PEERS_FLAGS="--rounds 3".
bench-peers: build
	bench/peers/run.sh $(PEERS_FLAGS) $(MUSTER)

demo: build
	MUSTER=$(MUSTER) scripts/demo.sh

asan: deps
	$(CMAKE) --preset asan
	$(CMAKE) --build --preset asan --parallel $(JOBS)
	$(CTEST) --preset asan --parallel $(JOBS) --no-tests=error

format:
	@command -v clang-format >/dev/null || { echo "format: clang-format not found (apt-get install clang-format)" >&2; exit 1; }
	find $(FORMAT_DIRS) \( -name '*.h' -o -name '*.cc' \) -print0 | xargs -0 -r clang-format -i

clean:
	rm -rf build
