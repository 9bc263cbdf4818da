# converge — build, test, lint.
GO ?= go
# The race detector needs cgo and a C compiler; without them tests still run.
RACE ?= $(shell [ "$$($(GO) env CGO_ENABLED)" = 1 ] && command -v gcc >/dev/null && echo -race)

.PHONY: build test lint demo

build:
	$(GO) build -o bin/converge ./cmd/converge

# The whole suite: unit tables, emulator fidelity, real git, real gh,
# end-to-end command-line scenarios.
test:
	$(GO) vet ./...
	$(GO) test $(RACE) -count=1 -timeout 15m ./...

lint:
	gofmt -l . | (! grep .) || (echo "gofmt: files above need formatting" && exit 1)
	$(GO) vet ./...
	$(GO) run honnef.co/go/tools/cmd/staticcheck@v0.8.2 ./...

demo:
	$(GO) run ./cmd/converge demo
