# converge — build, test, lint.
GO ?= go

.PHONY: build test lint demo

build:
	$(GO) build -o bin/converge ./cmd/converge

# The whole suite: unit tables, emulator fidelity, real git, real gh,
# end-to-end command-line scenarios.
test:
	$(GO) vet ./...
	$(GO) test -race -count=1 -timeout 15m ./...

lint:
	gofmt -l . | (! grep .) || (echo "gofmt: files above need formatting" && exit 1)
	$(GO) vet ./...
	$(GO) run honnef.co/go/tools/cmd/staticcheck@v0.8.2 ./...

demo:
	$(GO) run ./cmd/converge demo
