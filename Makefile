# ragen: two commands do all set-up on a fresh machine.
#   make demo   installs what is missing, then trains a tiny agent on CPU
#   make test   installs what is missing, then vets and tests everything

SHELL := /bin/bash
GO ?= go
APT_PKGS := libtorch-dev libgloo-dev libopenblas0-openmp
BENCH_PKGS := python3-torch python3-numpy
# test-only packages: headless Chromium (dashboard browser tests), python3 (code
# sandbox, simulator bridges), PyTorch (parity references, torchrun)
TEST_PKGS := chromium chromium-driver python3 python3-yaml python3-numpy python3-torch
TEST_TIMEOUT ?= 20m
# packages whose dependency graph does not reach libtorch: they must also
# build and test with CGO_ENABLED=0, and run under the race detector.
PURE_PKGS = $(shell $(GO) list -f '{{.ImportPath}} {{join .Deps " "}}' ./... | grep -v 'ragen/internal/torch\|ragen/internal/dist' | cut -d' ' -f1)

.PHONY: all deps deps-bench deps-test build vet apicheck test test-pure test-race test-examples bench demo gpu-bundle clean

all: build

deps:
	@./scripts/deps.sh $(APT_PKGS)

deps-bench: deps
	@./scripts/deps.sh $(BENCH_PKGS)

deps-test: deps
	@RAGEN_DEPS_OPTIONAL=1 ./scripts/deps.sh $(TEST_PKGS)

build: deps
	$(GO) build ./...

vet: deps
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { echo "gofmt needed:"; gofmt -l $$(git ls-files '*.go'); exit 1; }
	$(GO) vet ./...

# No exported identifier of a non-internal package may mention an internal
# type: code in another module could not use it.
apicheck: deps
	$(GO) run ./internal/cmd/apicheck ./...

test: deps deps-test vet apicheck
	$(GO) test -timeout $(TEST_TIMEOUT) ./...
	$(MAKE) --no-print-directory test-pure test-race test-examples

# Every program under examples/ is its own module (require ragen, replace
# ragen => ../..): vetting and testing each one from its own folder proves
# that it uses only the exported API.
test-examples:
	@set -e; for d in examples/*/; do \
		echo "examples: $$d"; \
		(cd $$d && GOFLAGS=-mod=mod $(GO) vet ./... && GOFLAGS=-mod=mod $(GO) test -count=1 -timeout 5m ./...); \
	done

test-pure:
	CGO_ENABLED=0 $(GO) test -timeout $(TEST_TIMEOUT) -count=1 $(PURE_PKGS)

test-race:
	$(GO) test -race -timeout $(TEST_TIMEOUT) $(PURE_PKGS)

bench: deps-bench
	$(GO) run ./bench/cmd/benchall
	$(GO) run ./bench/llm_compare

demo: deps
	$(GO) run ./cmd/ragen demo

gpu-bundle: deps
	./scripts/gpu-bundle.sh

clean:
	rm -rf bin .gpu-bundle
