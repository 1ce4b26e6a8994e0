# sluice: the README's two commands (make run, make test) and the rest.
# Every target installs what is missing first (scripts/install-deps.sh).
JOBS    ?= $(shell nproc 2>/dev/null || echo 2)
BUILD   ?= build
SHELL   := /bin/bash
MAKEFLAGS += --no-print-directory
CMAKE_FLAGS ?=

.PHONY: build-fuzz all deps build deb run test test-asan test-tsan test-integration test-fuzz fuzz bench format format-check tidy tidy-check clean

all: build

deps:
	@scripts/install-deps.sh

# Release-with-debug-info build, warnings as errors; compile_commands.json for
# `make tidy` and editors.
build: deps
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSLUICE_WERROR=ON \
		-DCMAKE_EXPORT_COMPILE_COMMANDS=ON $(CMAKE_FLAGS) >/dev/null
	@cmake --build $(BUILD) -j$(JOBS)

# The Debian package, build/sluice_VERSION_ARCH.deb, with CPack from build/
# (packaging/packaging.cmake; docs/operations.md).
deb: build
	@cd $(BUILD) && cpack -G DEB >/dev/null
	@ls $(BUILD)/sluice_*.deb

# sluiced on its embedded default config (examples/sluice.yaml): memory store,
# HTTP on 127.0.0.1:8080, gRPC (Envoy's rate limit service) on 127.0.0.1:8081,
# RESP on 127.0.0.1:6380. Ctrl-C drains and stops it.
run: build
	@echo "sluiced: starting on the embedded default config (examples/sluice.yaml). Try:"
	@echo "  curl -i 'http://127.0.0.1:8080/v1/check?policy=api&key=alice'"
	@echo "  redis-cli -p 6380 CL.THROTTLE user123 15 30 60"
	@echo "  redis-cli -p 6380 SL.CHECK api alice"
	@echo "  curl -s http://127.0.0.1:8080/metrics | grep sluice_decisions"
	@echo "  gRPC (Envoy's rate limit service) on 127.0.0.1:8081: docs/envoy.md"
	@exec $(BUILD)/sluiced

# Everything CI runs: the format check, clang-tidy at the cost CI affords
# (tidy-check), unit and integration tests under ASan+UBSan (sluiced and sluice
# included), concurrency tests under TSan, the installed library with
# pkg-config, a fuzz smoke.
test: deps format-check tidy-check test-asan test-tsan test-integration test-fuzz
	@echo "make test: all passed"

test-asan: deps
	@cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DSLUICE_SANITIZE=address -DSLUICE_WERROR=ON -DSLUICE_BENCH=OFF >/dev/null
	@cmake --build build-asan -j$(JOBS)
	@cd build-asan && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
		ctest --output-on-failure -j$(JOBS) -LE install

test-tsan: deps
	@cmake -S . -B build-tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSLUICE_SANITIZE=thread -DSLUICE_WERROR=ON -DSLUICE_BENCH=OFF >/dev/null
	@cmake --build build-tsan -j$(JOBS)
	@# TSan needs a predictable address space on kernels with high mmap entropy.
	@norand=$$(setarch $$(uname -m) -R true 2>/dev/null && echo "setarch $$(uname -m) -R"); \
		cd build-tsan && TSAN_OPTIONS="halt_on_error=1 suppressions=$(CURDIR)/tests/tsan.supp" $$norand ctest --output-on-failure -j$(JOBS) -L concurrency

test-integration: build
	@cd $(BUILD) && ctest --output-on-failure -j$(JOBS) -L install

# libFuzzer targets (clang, ASan+UBSan), only they are built (not sluiced,
# the CLI, the client library, the Redis module: the ASan build has them).
# FUZZ_SECONDS per target; the smoke in `make test` is short (each target
# replays its whole seed corpus first, then mutates for the rest), `make fuzz`
# runs longer.
FUZZ_SECONDS ?= 5
FUZZERS = fuzz_rate fuzz_decide fuzz_resp fuzz_http fuzz_config fuzz_identity fuzz_grpc fuzz_cluster fuzz_script_reply fuzz_headers fuzz_apikeys fuzz_domains fuzz_graphql
build-fuzz: deps
	@CC=clang cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSLUICE_SANITIZE=address \
		-DSLUICE_FUZZ=ON -DSLUICE_TESTS=OFF -DSLUICE_BENCH=OFF -DSLUICE_WERROR=ON >/dev/null
	@cmake --build build-fuzz -j$(JOBS) --target $(FUZZERS)

test-fuzz: build-fuzz
	@scripts/fuzz_smoke.sh $(FUZZ_SECONDS) $(JOBS) $(FUZZERS)

fuzz:
	@$(MAKE) test-fuzz FUZZ_SECONDS=600

# Benchmarks: long, noisy-machine aware; never part of make test. libsluice,
# then the Redis store: Redis CPU per decision and memory per key against INCR
# and the peers (issue 13, 4-7 min), then decisions per second against
# rate-limiter-flexible (about 4 min).
bench: deps build
	@bench/run.sh
	@bench/redis/cpu.sh $(BUILD)
	@bench/redis/run.sh $(BUILD)

format:
	@clang-format -i $$(git ls-files '*.c' '*.h')

# The C of src/, include/ and tests/ as clang-format (.clang-format) writes it;
# `make format` fixes what this finds.
FORMAT_CHECKED = git ls-files 'src/*.[ch]' 'include/*.h' 'tests/*.[ch]'
format-check:
	@$(FORMAT_CHECKED) | xargs clang-format --dry-run -Werror || \
		{ echo "make format-check: run make format" >&2; exit 1; }

# clang-tidy's bugprone and static-analyzer checks (.clang-tidy) over src/,
# on the normal build's compile_commands.json; fails on any finding. The whole
# set on every file: 7 min 17 s wall, 190 s CPU with -j2 at load 12, 23 min
# wall, 205 s CPU at load 20 (2 cores shared with other builds): too long for
# make test, which runs tidy-check.
TIDY_RUN = run-clang-tidy -p $(BUILD) -j$(JOBS) -quiet
TIDY_FAIL = grep -E '(warning|error): ' && exit 1
tidy: build
	@out=$$($(TIDY_RUN) '$(CURDIR)/src/' 2>/dev/null); \
		printf '%s\n' "$$out" | $(TIDY_FAIL); \
		echo "make tidy: no findings"

# clang-tidy in make test: bugprone-* on every file of src/ (measured: 32 s
# wall, 11 s CPU at load 15 on the 2 shared cores; all of tidy-check on main),
# then the analyzer (clang-analyzer-*, .clang-tidy's exclusions) on the .c
# files of src/ that differ from $(TIDY_BASE), committed or not: about 3 s of
# CPU a file (issue 14's branch, 46 files: 285 s wall, 134 s CPU at load 16).
# On main itself none differ: make tidy is the full run. A header's change is
# analysed through the changed .c files only.
TIDY_BASE ?= main
tidy-check: build
	@out=$$($(TIDY_RUN) -checks='-clang-analyzer-*' '$(CURDIR)/src/' 2>/dev/null); \
		printf '%s\n' "$$out" | $(TIDY_FAIL); \
		base=$$(git merge-base $(TIDY_BASE) HEAD 2>/dev/null) || base=HEAD; \
		files=$$(git diff --name-only --diff-filter=d $$base -- 'src/*.c' | sed 's|^|$(CURDIR)/|; s|\.|\\.|g; s|$$|$$|'); \
		if [ -n "$$files" ]; then \
			out=$$($(TIDY_RUN) -checks='-bugprone-*' $$files 2>/dev/null); \
			printf '%s\n' "$$out" | $(TIDY_FAIL); \
		fi; \
		echo "make tidy-check: no findings (bugprone: all of src/; analyzer: $$(printf '%s\n' $$files | grep -c .) changed file(s))"

clean:
	@rm -rf build build-asan build-tsan build-bench build-fuzz
