# converge — build, test, lint.
GO ?= go
# The race detector needs cgo and a C compiler (make race).
RACE ?= $(shell [ "$$($(GO) env CGO_ENABLED)" = 1 ] && command -v gcc >/dev/null && echo -race)

.PHONY: build test race lint workflowcheck demo docs soak crash mutants fuzz fuzz-smoke fuzz-run fuzz-one

# -v names each package as it compiles: a first build from a cold cache
# takes minutes, and says so as it goes.
build:
	@echo "building bin/converge (a first build compiles every module: minutes)"
	$(GO) build -v -o bin/converge ./cmd/converge

# The whole suite: unit tables, emulator fidelity, real git, real gh,
# end-to-end command-line scenarios, the fleet on a real Temporal server.
# Two phases, one after the other, because the machine is CPU-bound:
#
# 1. every package but cli. The real agent CLIs' tests (Claude Code,
#    Codex, Gemini CLI, OpenCode, each a Node program taking seconds of
#    CPU to start) run here; beside the cli package, at a load average
#    of 20-25 on 2 vCPUs, OpenCode did not reach its first model request
#    in two minutes and their budgets were missed.
# 2. the cli package. Its end-to-end scenarios start thousands of
#    processes (git above all, the converge binary, its supervisors, go
#    test, agent CLIs). Its timeout is a bound on a hang.
#
# Without the race detector: `make race` runs phase 1 under it, and CI
# runs it after make test. From a cold build cache, as on a fresh CI
# machine, the raced build of every package is 330 CPU-seconds beside the
# plain one vet and the cli package need anyway, and the race detector's
# runtime about 100 more: with it make test took 21m12s there, over its
# 20 minutes (BENCHMARKS.md, "make test from a cold build cache").
CLI_PKG = ./internal/cli
# Started first, longest first (go test starts packages in the order
# given, three at a time), so that no long one runs alone at the
# end: OpenCode's real-CLI tests, the fleet and prwork's real-git tests
# took about 3 minutes each at 1126736, forge/github, mcpserver and the
# other agent CLIs' tests 45-70 s, the next ones about 20 s.
SLOW_PKGS = ./internal/agent/opencode ./internal/temporal/fleet ./internal/prwork \
	./internal/forge/github ./internal/mcpserver ./internal/agent/codex ./internal/agent/gemini \
	./internal/bench ./internal/agent/claude ./internal/emulator/fakehub \
	./internal/census ./internal/proc ./internal/forge/gitlab ./internal/classify ./action
PHASE1_PKGS = $(SLOW_PKGS) $$($(GO) list ./... | grep -vx "$$($(GO) list $(CLI_PKG))")
# -p 3: three packages at a time, not two. Phase 1's packages wait on
# subprocesses, servers and timers; two at a time left the 2 vCPUs 11.5%
# idle, three only in its last minute or so: with OpenCode's tests two at
# a time, phase 1 took 531 s at -p 3, against 625 at -p 2 before both
# (BENCHMARKS.md, "Where the suite's CPU goes at dcf3012").
# -vet=off: `go vet ./...` has just run every analyzer go test would run
# (a subset), on the same packages and test files.
#
# Every step runs even when one before it failed (a red phase 1 must not
# hide the cli package's verdict), and the end says which steps failed
# and lists their failing tests, so no one reads thousands of lines for
# them.
test:
	@log=$$(mktemp); rc=$$(mktemp); trap 'rm -f "$$log" "$$rc"' EXIT; failed=; \
	step() { name=$$1; shift; echo "$$*"; { "$$@" 2>&1; echo $$? >"$$rc"; } | tee -a "$$log"; \
		[ "$$(cat "$$rc")" = 0 ] || failed="$$failed; $$name"; }; \
	step "go vet" $(GO) vet ./...; \
	step workflowcheck $(MAKE) --no-print-directory workflowcheck; \
	step "phase 1 (every package but cli)" $(GO) test -vet=off -count=1 -p 3 -parallel 4 -timeout 30m $(PHASE1_PKGS); \
	step "phase 2 (the cli package)" $(GO) test -vet=off -count=1 -parallel 6 -timeout 60m $(CLI_PKG); \
	step "fuzz smoke" $(MAKE) --no-print-directory fuzz-smoke; \
	if [ -n "$$failed" ]; then \
		echo; echo "make test: FAILED in $${failed#; }"; \
		grep -E '^[[:space:]]*--- FAIL|^FAIL|^panic:|^FAIL fuzz' "$$log" | awk '!seen[$$0]++'; \
		exit 1; \
	fi; \
	echo; echo "make test: every step passed"

# Phase 1 of make test under the race detector (the cli package's
# scenarios run the test binary itself as converge, thousands of times:
# raced, the package took 37 minutes instead of 27 on 2 vCPUs at
# a3a7438). It needs cgo and a C compiler, and fails without them rather
# than run without the detector. The raced packages are built first, so
# that from a cold cache no test runs beside minutes of compiling: the
# fleet's test did, once, and 3 of its 10 loops then waited out its bound
# (BENCHMARKS.md, "make test from a cold build cache").
race:
	@[ -n "$(RACE)" ] || { echo "make race: the race detector needs cgo and a C compiler (CGO_ENABLED=1 and gcc); install gcc or set CGO_ENABLED=1"; exit 2; }
	@out=$$(mktemp); trap 'rm -f "$$out"' EXIT; echo "$(GO) test $(RACE) -vet=off -run '^$$' ./... (build only)"; \
		$(GO) test $(RACE) -vet=off -run '^$$' ./... >"$$out" 2>&1 || { cat "$$out"; exit 1; }
	$(GO) test $(RACE) -vet=off -count=1 -p 3 -parallel 4 -timeout 30m $(PHASE1_PKGS)

lint:
	gofmt -l . | (! grep .) || (echo "gofmt: files above need formatting" && exit 1)
	$(GO) vet ./...
	$(GO) run honnef.co/go/tools/cmd/staticcheck@v0.8.2 ./...
	$(MAKE) --no-print-directory workflowcheck

# The Temporal SDK's determinism checker over the workflows (and all they
# call, across packages): no clock, randomness, goroutine, channel or map
# range a replay could see differently. Built once per Go version into the
# cache (the tool's type checker must know the Go version of the source).
# Skipped while there is no internal/temporal. Its false positives are
# marked in internal/tools/workflowcheck.yaml, or at the line with a
# //workflowcheck:ignore comment saying why.
WORKFLOWCHECK_VERSION = v0.6.0
WORKFLOWCHECK = $(HOME)/.cache/converge-ci/workflowcheck-$(WORKFLOWCHECK_VERSION)-$(shell $(GO) env GOVERSION)/bin/workflowcheck

workflowcheck:
	@set -e; \
	if [ -z "$$(find internal/temporal -name '*.go' 2>/dev/null)" ]; then \
		echo "workflowcheck: no Go files under internal/temporal, skipped"; exit 0; \
	fi; \
	if [ ! -x "$(WORKFLOWCHECK)" ]; then \
		GOBIN="$(dir $(WORKFLOWCHECK))" $(GO) install go.temporal.io/sdk/contrib/tools/workflowcheck@$(WORKFLOWCHECK_VERSION); \
	fi; \
	"$(WORKFLOWCHECK)" -config internal/tools/workflowcheck.yaml ./internal/temporal/... && echo "workflowcheck: ./internal/temporal/... clean"

demo:
	$(GO) run ./cmd/converge demo

# The reference pages under docs/ (one per command, the configuration),
# generated from the code; internal/docgen's test fails when they are stale.
docs:
	$(GO) run ./internal/tools/docgen docs

# The soak of the whole loop (issue 6): 200 randomized seeds against the
# emulator; every run that exits 0 is checked at the forge. Prints
# false_success=N runs=M (RELIABILITY.md). Then REL-1's seeded faults on
# 20 seeds. `make test` runs 4 soak seeds and 8 fault seeds.
SOAK_SEEDS ?= 200
REL1_SEEDS ?= 20
soak:
	CONVERGE_SOAK_SEEDS=$(SOAK_SEEDS) $(GO) test -count=1 -run '^TestSoak_NoFalseSuccess$$' -v -parallel 4 -timeout 60m ./internal/cli \
		| tee soak.log | grep -E '^(false_success=|--- FAIL|FAIL|ok)'
	@! grep -q '^--- FAIL' soak.log
	CONVERGE_REL1_SEEDS=$(REL1_SEEDS) $(GO) test -count=1 -run '^TestREL1_SeededFaultsEndAsFaultFree$$' -parallel 4 -timeout 60m ./internal/cli

# REL-2's crash matrix: the scripted 3-round PR run killed by SIGKILL at
# every action boundary in turn, then run again to the end, and the forge
# compared with the uncrashed run's; and `converge serve` with 20 PRs
# killed at six boundaries spread over the fleet's run, then restarted.
# `make test` runs a seeded subset of 6 boundaries and one serve kill
# (RELIABILITY.md).
crash:
	CONVERGE_TEST_CRASH_MATRIX=all $(GO) test -count=1 -run '^TestREL2_CrashMatrix' -v -timeout 60m ./internal/cli \
		| tee crash.log | grep -E '(boundaries|--- FAIL|^FAIL|^ok)'
	@! grep -q -- '--- FAIL' crash.log

# Each patch in testdata/mutants breaks one rule; the tests it names must
# fail with it applied. Prints which test killed each mutant and fails
# when one survives (or does not apply or build).
mutants:
	$(GO) run ./internal/tools/mutants

# Fuzz targets of every parser of untrusted or user input (issue 15, item
# 9), as package:target. `go test` runs each one's seed corpus (and the
# crashers kept under testdata/fuzz) as ordinary tests; fuzz-smoke, part of
# `make test`, also fuzzes each for FUZZ_SMOKE_TIME; `make fuzz` for
# FUZZTIME each. A failure prints the input and keeps it under the
# package's testdata/fuzz: commit it with the fix, as a regression.
# The first target runs alone, then the others two at a time: a fuzzing
# build instruments every package it links, the standard library too,
# and two go commands building the same instrumented packages at once
# each build them (the build cache does not share work in progress).
# config's test binary links the most packages (280, SQLite among
# them), so once it is built the others find nearly all of theirs in
# the cache. From a cold cache the smoke took 189 s and 370 CPU-seconds
# all two at a time, and 132 s and 247 CPU-seconds this way
# (BENCHMARKS.md, "make test from a cold build cache").
FUZZ_TARGETS = \
	./internal/config:FuzzREL_3_ConfigFile \
	./internal/agent:FuzzIF_5_ParseStatus \
	./internal/review:FuzzPR_S4_ParseAnswer \
	./internal/review:FuzzPR_S4_SummaryMarker \
	./internal/classify:FuzzPR_S5_JudgeAnswer \
	./internal/recap:FuzzPR_G2_RecapVerdict \
	./internal/checkloop:FuzzLOOP_2_JudgeVerdict \
	./internal/checkloop:FuzzLOOP_4_CanonicalRoundTrip \
	./internal/plan:FuzzPLAN_1_ReviewAnswer \
	./internal/forge:FuzzREL_3_ParsePRURL \
	./internal/forge:FuzzPR_O1_ClipDiffHunk \
	./internal/review/copilot:FuzzPR_O3_CopilotBody \
	./internal/prloop:FuzzPR_S8_ParseHunks \
	./internal/verify:FuzzPR_V1_VerifierAnswer \
	./internal/verify:FuzzParseDiff \
	./internal/census:FuzzParseGoTestJSON \
	./internal/census:FuzzParseJUnit \
	./internal/census:FuzzParseJSReport \
	./internal/census:FuzzParseCargoTest \
	./internal/census:FuzzDetect
FUZZTIME ?= 1m
# A count, not a duration, for the smoke: go1.26's fuzz coordinator can
# report its own -fuzztime deadline as a failure (go.dev/issue/75804);
# a count has no deadline to race.
FUZZ_SMOKE_TIME ?= 1000x

fuzz:
	@$(MAKE) --no-print-directory fuzz-run FUZZ_RUN_TIME=$(FUZZTIME)

fuzz-smoke:
	@$(MAKE) --no-print-directory fuzz-run FUZZ_RUN_TIME=$(FUZZ_SMOKE_TIME)

# One line per target: its last progress line (time, execs, corpus). A
# run that ends in "context deadline exceeded" without writing a failing
# input is that coordinator race (a clean stop), not a finding. FUZZ_JOBS
# targets at a time: each run is mostly the go command's and the
# coordinator's start, on one core.
FUZZ_JOBS ?= 2
fuzz-run:
	@$(MAKE) --no-print-directory fuzz-one FUZZ_TARGET=$(firstword $(FUZZ_TARGETS)) FUZZ_RUN_TIME=$(FUZZ_RUN_TIME)
	@printf '%s\n' $(wordlist 2,$(words $(FUZZ_TARGETS)),$(FUZZ_TARGETS)) | xargs -P $(FUZZ_JOBS) -I{} $(MAKE) --no-print-directory fuzz-one FUZZ_TARGET={} FUZZ_RUN_TIME=$(FUZZ_RUN_TIME)

fuzz-one:
	@set -e; out=$$(mktemp); trap 'rm -f "$$out"' EXIT; \
	t=$(FUZZ_TARGET); pkg=$${t%%:*}; name=$${t##*:}; note=; \
	if ! $(GO) test -run '^$$' -fuzz "^$$name\$$" -fuzztime $(FUZZ_RUN_TIME) $$pkg >"$$out" 2>&1; then \
		if ! grep -q 'context deadline exceeded' "$$out" || grep -q 'Failing input written' "$$out"; then \
			cat "$$out"; echo "FAIL fuzz $$name ($$pkg)"; exit 1; \
		fi; \
		note=" [ended by the fuzztime deadline race, no failing input]"; \
	fi; \
	last=$$(grep '^fuzz: elapsed' "$$out" | tail -1 | sed 's/^fuzz: //'); \
	if [ -z "$$last$$note" ]; then cat "$$out"; echo "FAIL fuzz $$name ($$pkg): it did not fuzz (no such target?)"; exit 1; fi; \
	echo "ok   $$name ($$pkg): $$last$$note"
