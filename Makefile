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

.PHONY: all deps deps-bench deps-test build vet apicheck test test-pure test-race test-examples bench demo demo-ragen2 gpu-bundle gpu-check-cpu check-torch2 test-torch2 clean

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

test: deps deps-test vet apicheck check-torch2
	$(GO) test -timeout $(TEST_TIMEOUT) ./...
	$(MAKE) --no-print-directory test-pure test-race test-examples

# libtorch 2.x (Debian trixie's 2.6, in a debootstrap chroot cached under
# /var/cache/ragen; scripts/torch2.sh). check-torch2 compiles every shim
# file against its headers with its g++ (part of make test: a change that
# breaks the 2.x build fails CI); test-torch2 builds every package there and
# runs the tests of the packages that reach libtorch.
TORCH2_TESTS ?= ./torch ./llm ./dist ./starpo ./cli
check-torch2:
	@./scripts/torch2.sh check-shims

test-torch2:
	./scripts/torch2.sh run bash -c '$(GO) build ./... && $(GO) vet ./... && $(GO) test -timeout $(TEST_TIMEOUT) $(TORCH2_TESTS)'

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

# The Qwen table's second peer is PyTorch 2.x, run in the libtorch 2.x
# chroot (RAGEN_PEER2); where the chroot cannot be made, its columns say so.
bench: deps-bench
	@if ./scripts/torch2.sh setup; then export RAGEN_PEER2="$(CURDIR)/scripts/torch2.sh run python3"; fi; \
	$(GO) run ./bench/cmd/benchall && $(GO) run ./bench/llm_compare

demo: deps
	$(GO) run ./cmd/ragen demo

# RAGEN-2 on the CPU: the rollout filter against no filter from one warm-up,
# with the collapse diagnostics (runs/ragen2/ragen2.png, ragen2.md)
demo-ragen2: deps
	$(GO) run ./cmd/ragen demo ragen2

# The GPU check: one file of at most 40 MiB (.gpu-bundle.tar.xz) holding
# test binaries, the CLI, gpubench and the shim sources; on the GPU machine
# its gpu-check.sh builds the shims against the local PyTorch and runs the
# check (doc/gpu.md). gpu-check-cpu runs the same bundle in the libtorch
# 2.x chroot on this CPU: everything but the CUDA-only steps.
gpu-bundle: deps
	./scripts/gpu-bundle.sh

gpu-check-cpu: gpu-bundle
	./scripts/torch2.sh run bash -c 'd=$$(mktemp -d) && tar -C $$d -xJf .gpu-bundle.tar.xz && $$d/.gpu-bundle/gpu-check.sh; rc=$$?; rm -rf $$d; exit $$rc'

clean:
	rm -rf bin .gpu-bundle .gpu-bundle.tar.xz .gpu-bundle-lib
