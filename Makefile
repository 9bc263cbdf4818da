# converge — build, test, lint.
GO ?= go
# The race detector needs cgo and a C compiler; without them tests still run.
RACE ?= $(shell [ "$$($(GO) env CGO_ENABLED)" = 1 ] && command -v gcc >/dev/null && echo -race)

.PHONY: build test lint demo soak mutants

build:
	$(GO) build -o bin/converge ./cmd/converge

# The whole suite: unit tables, emulator fidelity, real git, real gh,
# end-to-end command-line scenarios.
test:
	$(GO) vet ./...
	$(GO) test $(RACE) -count=1 -parallel 4 -timeout 15m ./...

lint:
	gofmt -l . | (! grep .) || (echo "gofmt: files above need formatting" && exit 1)
	$(GO) vet ./...
	$(GO) run honnef.co/go/tools/cmd/staticcheck@v0.8.2 ./...

demo:
	$(GO) run ./cmd/converge demo

# The soak of the whole loop (issue 6): 200 randomized seeds against the
# emulator; every run that exits 0 is checked at the forge. Prints
# false_success=N runs=M (RELIABILITY.md).
SOAK_SEEDS ?= 200
soak:
	CONVERGE_SOAK_SEEDS=$(SOAK_SEEDS) $(GO) test -count=1 -run '^TestSoak_NoFalseSuccess$$' -v -parallel 4 -timeout 60m ./internal/cli \
		| tee soak.log | grep -E '^(false_success=|--- FAIL|FAIL|ok)'
	@! grep -q '^--- FAIL' soak.log

# Each patch in testdata/mutants breaks one rule; the tests it names must
# fail with it applied. Prints which test killed each mutant and fails
# when one survives (or does not apply or build).
mutants:
	$(GO) run ./internal/tools/mutants
