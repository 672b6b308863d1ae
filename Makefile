# Strata: the two commands of the README, and the helpers behind them.
#   make run    installs missing system libraries, builds in release, runs the main job
#   make test   installs missing system libraries, runs the whole test suite

SYSTEM_PACKAGES := liblmdb-dev libleveldb-dev libsqlite3-dev libzstd-dev libssl-dev lmdb-utils sqlite3
# The tests also run the etcd engine on local clusters they start (and stop by PID).
PACKAGES = $(SYSTEM_PACKAGES)
# Their clusters speak TLS with certificates made by openssl; a test captures their traffic with tcpdump.
test test-long conformance bench-etcd sanitize sanitize-thread: PACKAGES = $(SYSTEM_PACKAGES) etcd-server openssl tcpdump python3-lmdb
# The documentation check reads the symbol graphs with Python.
docs: PACKAGES = $(SYSTEM_PACKAGES) python3
instructions: PACKAGES = $(SYSTEM_PACKAGES) valgrind bc

# The C compiler for the LD_PRELOAD shims: the system's, or the toolchain's clang.
SHIM_CC := $(shell command -v cc || command -v clang)

.PHONY: run test test-long check-modular docs deps conformance bench-long bench-peers bench-transforms bench-etcd crash powerloss sanitize sanitize-thread fuzz fuzz-smoke instructions clean

run: deps
	swift build -c release --product strata
	.build/release/strata demo
	.build/release/strata bench --output bench-results
	.build/release/strata bench-indexes
	.build/release/strata bench-codable
	.build/release/strata bench-observe
	swift build -c release --product strata-transforms
	.build/release/strata-transforms bench

# The suite runs every conformance case on every bundled engine (StrataAdapterTests), so the tool's
# runner is checked on one; etcd's runs are the only ones on etcd: 3 members over mutual TLS, and
# the record cases through compression and encryption on a cleartext member (they are about the
# transforms; a TLS handshake per store in a debug build costs a third of that run). On etcd every
# commit is a round trip (about 30 ms a pair in a debug build), so the observation case runs 50
# observers and 200 commits here (1,000 and 10,000 everywhere else, and in make test-long).
test: deps
	swift build --build-tests
	swift test --skip-build
	bash Tests/CompileChecks/run.sh
	bash Tests/Docs/code-blocks.sh README.md Sources/*/*/*.docc/*.md
	.build/debug/strata conformance --engine memory
	.build/debug/strata-etcd conformance --members 3 --differential 1000 --observation 50,200
	.build/debug/strata-etcd conformance --members 1 --transforms compression,encryption --differential 0 --no-tls --observation 50,200
	.build/debug/strata-etcd bench --records 300 --operations 20 --members 1 --engines lmdb --output .build/bench-etcd-smoke
	.build/debug/strata bench --records 300 --scans 20 --sync-transactions 5 --rounds 2 --output .build/bench-smoke
	.build/debug/strata bench-indexes --records 2000 --lookups 200
	.build/debug/strata bench-codable --records 2000 --lookups 200 --engines lmdb memory
	.build/debug/strata bench-observe --records 2000 --commits 20 --engines lmdb memory
	.build/debug/strata-harness crash-test --engine all --kills 20
	$(SHIM_CC) -shared -fPIC -O2 -o .build/powerloss.so Tests/Shims/powerloss.c -ldl -lpthread
	.build/debug/strata-harness power-loss-test --engine all --losses 20 --shim .build/powerloss.so
	.build/debug/strata-harness power-loss-test --engine all --losses 20 --durability relaxed --shim .build/powerloss.so
	.build/debug/strata-harness prepare-crash-test --engine all --kills 20
	.build/debug/strata-harness import-crash-test --engine all --kills 20
	.build/debug/strata-harness prepare-race-test --engine all --rounds 6
	.build/debug/strata-harness feed-crash-test --engine all --kills 10
	.build/debug/strata-transforms rotation-crash-test --engine all --kills 20

# A user's package on the modular path (StrataRecords, StrataMacros, StrataSQLite), built from
# scratch: neither LMDB nor LevelDB may be compiled or linked. Its own build (swift-syntax and the
# record layer again, about 2.5 minutes) would take make test past its 20 minutes, so CI runs it
# (.ci/run) after make test.
check-modular: deps
	bash Tests/Fixtures/check-sqlite-only.sh

# The DocC catalogs (the record layer, the engine core, the key codec), built with warnings as
# errors (a broken ``link`` fails), after checking that every public declaration of every library
# module has a documentation comment. Archives in .build/plugins/Swift-DocC/outputs.
DOC_TARGETS = $(LIBRARY_MODULES)
LIBRARY_MODULES := StrataEngine StrataLMDB StrataLevelDB StrataSQLite StrataMemory StrataKeyCodec \
  StrataRecords StrataSchemaHash StrataMacros StrataBundledEngines Strata StrataConformance StrataRecordConformance \
  StrataEtcd StrataEtcdCluster StrataStoreTools StrataEncryption StrataCompression
# In a clone whose tests were never built, the test modules' symbol graphs fail to load: only the
# library modules' are needed (undocumented.py requires each), so only other errors fail the target.
docs: deps
	swift package dump-symbol-graph --minimum-access-level public >/dev/null 2>.build/dump-symbol-graph.log || \
	  ! grep "error:" .build/dump-symbol-graph.log | grep -v "'StrataPackage\(Discovered\)\?Tests'"
	python3 Tests/Docs/undocumented.py "$$(swift build --show-bin-path)/../symbolgraph" $(LIBRARY_MODULES)
	swift package generate-documentation $(foreach t,$(DOC_TARGETS),--target $(t)) --warnings-as-errors

# make test with the full counts: the etcd engine's fault tests with larger loads (STRATA_TEST_LONG=1:
# 2 processes x 8 tasks x 40 increments, 800 transactions across each member kill, 200 lost commit
# answers), the differential test at 20,000 operations, the observation cases at full scale (1,000
# observers, 10,000 commits from two processes: on etcd, the two cases took 9 min 12 s in a debug
# build with 3 members, one run), and the long crash runs (make crash).
test-long: test
	STRATA_TEST_LONG=1 swift test --skip-build --filter "StrataEtcdTests"
	.build/debug/strata-etcd conformance --members 3 --differential 20000 --observation 1000,10000
	$(MAKE) crash
	$(MAKE) powerloss

# The whole test suite under AddressSanitizer, in a build of its own (.build/asan; the tools the
# tests start are instrumented too and inherit the settings). Any memory error fails the run, and
# so does a leak, but for the owners Tests/Sanitizers/leaks.supp names (the test frameworks,
# Foundation's Process, globals' one-time initializers). STRATA_SANITIZER disables the three
# tests that measure what the sanitizer replaces (the heap, the address space). The runtime's
# crash backtracer is off: it reads the stack in a way ASan reports, and a child the tests crash
# on purpose must die of its signal.
sanitize: deps
	swift build --build-tests --sanitize=address --scratch-path .build/asan
	STRATA_SANITIZER=address SWIFT_BACKTRACE=enable=no ASAN_OPTIONS=detect_leaks=1:malloc_context_size=100 LSAN_OPTIONS="print_suppressions=0:suppressions='$(CURDIR)/Tests/Sanitizers/leaks.supp'" \
	  swift test --skip-build --sanitize=address --scratch-path .build/asan

# The whole test suite under ThreadSanitizer, in a build of its own (.build/tsan): any report
# fails the run (ThreadSanitizer's exit code). About 8 minutes to build and 16 to run on the
# 2-core machine, so not in .ci/run (with make test, make sanitize and the fuzz smoke it would pass
# CI's 60 minutes); run it after changing anything shared between threads. The package's locks
# are `Locked` (StrataEngine), which ThreadSanitizer sees (see Locked.swift).
sanitize-thread: deps
	swift build --build-tests --sanitize=thread --scratch-path .build/tsan
	STRATA_SANITIZER=thread SWIFT_BACKTRACE=enable=no TSAN_OPTIONS="halt_on_error=0 second_deadlock_stack=1" \
	  swift test --skip-build --sanitize=thread --scratch-path .build/tsan

# Every fuzz target (Fuzz/Targets and Fuzz/EtcdTargets: libFuzzer with AddressSanitizer, a package
# of its own) for 160 s each from its committed corpus: 10 targets, 27 minutes of fuzzing, after
# the two fuzzer builds (the etcd target's builds gRPC). `make fuzz-smoke` runs each but etcd for 5 s.
# `bash Fuzz/run.sh --seconds N target...` runs some. See DurabilityAndCrashSafety.md, "Fuzzing".
fuzz: deps
	bash Fuzz/run.sh --seconds 160

# Each fuzz target for 5 s from its committed corpus (crashes found and fixed are kept there, so a
# regression fails), with a fixed seed: CI explores what a run here explored, rather than failing
# on whatever a new random walk finds first (`make fuzz` walks anew). Run by CI (.ci/run) rather
# than `make test`, whose 20-minute budget its separate fuzzer build (about 3 minutes) would break.
fuzz-smoke: deps
	bash Fuzz/run.sh --seconds 5 --seed 1 --no-etcd

# Instructions per record operation, counted by callgrind: `make instructions BASE=<commit>` puts
# a commit's counts beside this checkout's (Benchmarks/InstructionCounts, a package of its own).
instructions: deps
	bash Benchmarks/InstructionCounts/run.sh $(BASE)

# Installs the Debian packages that are missing (apt-get update only when something is): as root
# directly, otherwise through sudo; without sudo it names the packages to install and stops.
deps:
	@missing=""; for p in $(PACKAGES); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "install ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ]; then sudo=""; \
	  elif command -v sudo >/dev/null 2>&1; then sudo=sudo; \
	  else \
	    echo "Strata needs these Debian packages, which are not installed:$$missing"; \
	    echo "Install them as root, then run make again:  apt-get install$$missing"; \
	    exit 1; \
	  fi; \
	  echo "installing:$$missing"; \
	  $$sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$sudo apt-get install -y -qq $$missing; \
	  case "$$missing" in *etcd-server*) \
	    if command -v systemctl >/dev/null 2>&1 && systemctl is-active --quiet etcd 2>/dev/null; then \
	      echo "stopping the etcd service the package started (the tests start their own clusters)"; \
	      $$sudo systemctl disable --now etcd; \
	    fi;; \
	  esac; \
	fi

conformance: deps
	swift run -c release strata conformance --engine all
	swift run -c release strata-etcd conformance --members 3

# The long benchmark: a million records per store.
bench-long: deps
	swift build -c release --product strata
	.build/release/strata bench --records 1000000 --output bench-results-1m

# The peers: Strata's record layer on every engine beside GRDB 7.10's record API on SQLite, the
# workloads W1-W5 of peers.md (1M records, 3 interleaved rounds, medians). A package of its own under
# Benchmarks/Peers, so that run and test never build GRDB (it also builds the macro's swift-syntax).
bench-peers: deps
	swift build -c release --package-path Benchmarks/Peers --product strata-peers
	Benchmarks/Peers/.build/release/strata-peers

# The value transforms' cost and gain (encryption: fill and random reads, plain vs sealed;
# compression: a text-heavy set's size on disk and random reads), every bundled engine, with the
# targets: the end of `make run`, alone.
bench-transforms: deps
	swift build -c release --product strata-transforms
	.build/release/strata-transforms bench

# The record layer on local etcd clusters of 1 and 3 members beside the embedded engines.
bench-etcd: deps
	swift build -c release --product strata-etcd
	.build/release/strata-etcd bench --output bench-results-etcd

# The long crash runs: 1,000 SIGKILLs per engine during commits, 200 during index builds and migrations,
# 50 rounds of two processes preparing one store at once, and 200 kills of writers with the change
# feed on, and 200 kills of processes rotating an encrypted store's key.
crash: deps
	swift build -c release --product strata-harness
	swift build -c release --product strata-transforms
	.build/release/strata-harness crash-test --engine all --kills 1000
	.build/release/strata-harness prepare-crash-test --engine all --kills 200
	.build/release/strata-harness import-crash-test --engine all --kills 200
	.build/release/strata-harness prepare-race-test --engine all --rounds 50
	.build/release/strata-harness feed-crash-test --engine all --kills 200
	.build/release/strata-transforms rotation-crash-test --engine all --kills 200

# Simulated power losses: a crash writer under the recording shim (Tests/Shims/powerloss.c), disk images
# cut at random points with unsynced writes lost, kept at random or torn, each opened without repair.
powerloss: deps
	swift build -c release --product strata-harness
	$(SHIM_CC) -shared -fPIC -O2 -o .build/powerloss.so Tests/Shims/powerloss.c -ldl -lpthread
	.build/release/strata-harness power-loss-test --engine all --losses 1000 --shim .build/powerloss.so
	.build/release/strata-harness power-loss-test --engine all --losses 1000 --durability relaxed --shim .build/powerloss.so

clean:
	rm -rf .build
