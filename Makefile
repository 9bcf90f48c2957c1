# invoiced - developer tasks. Run `make` (or `make help`) for the list.
#
# Database: scripts/pg provides PostgreSQL. `test`/`fuzz` use a throw-away
# cluster (or $TEST_DATABASE_URL); `run`/`migrate`/`bench` use a persistent
# project cluster (or $DATABASE_URL) that stays running until `make db-stop`.

SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

GO         ?= go
PKG        ?= ./...
TESTFLAGS  ?=
FUZZTIME   ?= 30s
BENCHFLAGS ?=
BIN        := bin/invoiced
# The revision `invoiced version` prints: Go stamps it only in a checkout
# whose .git is a folder (not in a worktree), so the build passes it too.
REVISION   := $(shell git rev-parse HEAD 2>/dev/null)$(shell git diff --quiet HEAD 2>/dev/null || echo +modified)
PG         := scripts/pg
# What `make test-citus` runs on a throw-away Citus cluster (scripts/citus):
# the Citus-only tests (-tags citus), the schema (migrations), numbering, API, webhook, maintenance, report and fault
# suites and the benchmark harness's own test. The fault suite kills a
# worker of the shared cluster, so it runs after the others, alone
# (CITUS_ALONE).
CITUS_PKG  ?= ./internal/db/ ./migrations/ ./series/... ./invoice/... ./api/... ./webhook/... ./einvoice/registration/ ./internal/maintenance/ ./reports/... ./internal/bench/ ./internal/faults/
CITUS_ALONE := ./internal/faults/
# golangci-lint is built from the Go module proxy into a git-ignored cache
# (the version is in the path, so changing it fetches the new one).
GOLANGCI_VERSION := v2.15.0
GOLANGCI         := .cache/golangci-lint/$(GOLANGCI_VERSION)/golangci-lint

.PHONY: help build run test test-citus test-short fuzz fuzz-run bench lint migrate db-start db-stop clean chromium console-screenshots mutants architecture

help: ## Show this help
	@echo "Usage: make TARGET [PKG=./series/...] [TESTFLAGS='-run X -v'] [FUZZTIME=30s] [BENCHFLAGS=...]"
	@echo
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z0-9_-]+:.*## / {printf "  %-20s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

build: ## Build bin/invoiced
	$(GO) build -ldflags "-X main.revision=$(REVISION)" -o $(BIN) ./cmd/invoiced

run: build ## Build, then migrate, seed a demo seller/key and serve (persistent local DB)
	$(PG) run -- scripts/run-demo

test: chromium ## go vet, then race-enabled tests against a throw-away PostgreSQL (PKG, TESTFLAGS)
	$(GO) vet $(PKG)
	$(PG) test -- $(GO) test -race -count=1 -timeout 20m $(TESTFLAGS) $(PKG)

test-citus: ## The Citus tests and suites (CITUS_PKG) on a throw-away coordinator + 2 workers (builds Citus once)
	$(GO) vet -tags citus $(CITUS_PKG)
	scripts/citus test -- bash -c '$(if $(filter-out $(CITUS_ALONE),$(CITUS_PKG)),$(GO) test -tags citus -count=1 -timeout 30m $(TESTFLAGS) $(filter-out $(CITUS_ALONE),$(CITUS_PKG)) &&) \
		$(if $(filter $(CITUS_ALONE),$(CITUS_PKG)),$(GO) test -tags citus -count=1 -timeout 30m $(TESTFLAGS) $(filter $(CITUS_ALONE),$(CITUS_PKG)) &&) true'

test-short: chromium ## Same as test, without -race
	$(GO) vet $(PKG)
	$(PG) test -- $(GO) test -count=1 -timeout 20m $(TESTFLAGS) $(PKG)

chromium: ## Install Debian's chromium if missing (as root), for the browser tests (console, receipts)
	scripts/chromium

console-screenshots: chromium ## Run the console's and the receipt's browser tests, saving their screenshots in docs/img
	$(PG) test -- env CONSOLE_SCREENSHOTS=$(CURDIR)/docs/img $(GO) test -count=1 -run 'TestConsoleInBrowser|TestReceiptFitsThePaper' ./console/ ./api/

fuzz: ## Run every Fuzz target for FUZZTIME each (default 30s) against a throw-away PostgreSQL
	$(PG) test -- $(MAKE) --no-print-directory fuzz-run

# Internal: expects TEST_DATABASE_URL (set by `make fuzz`).
fuzz-run:
	@targets=$$($(GO) test -list '^Fuzz' $(PKG) | awk '/^Fuzz/ {f[n++] = $$1} /^ok[ \t]/ {for (i = 0; i < n; i++) print $$2, f[i]; n = 0}'); \
	if [ -z "$$targets" ]; then echo "no fuzz targets found"; exit 0; fi; \
	while read -r pkg name; do \
		echo "== $$pkg $$name ($(FUZZTIME))"; \
		$(GO) test -run '^$$' -fuzz "^$$name\$$" -fuzztime $(FUZZTIME) "$$pkg"; \
	done <<< "$$targets"

mutants: ## Remove each protection in testdata/mutants in turn and check its test fails: "N killed of M" (MUTANTS=offline)
	$(PG) test -- scripts/mutants $(MUTANTS)

bench: build ## Benchmark over HTTP vs pgbench baselines (BENCHFLAGS, e.g. --quick, --full; see docs/bench.md)
	scripts/bench $(BENCHFLAGS)

lint: $(GOLANGCI) ## golangci-lint (.golangci.yml), go vet, gofmt and go mod tidy; fails on any finding
	$(GOLANGCI) run --allow-parallel-runners ./...
	$(GO) vet ./...
	@$(GO) mod tidy -diff || { echo "go.mod/go.sum are not tidy: run go mod tidy"; exit 1; }
	@out=$$(gofmt -l $$($(GO) list -f '{{.Dir}}' ./...)); \
	if [ -n "$$out" ]; then echo "gofmt needed on:"; echo "$$out"; exit 1; fi

$(GOLANGCI):
	GOBIN=$(CURDIR)/$(dir $(GOLANGCI)) $(GO) install github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(GOLANGCI_VERSION)

architecture: ## Draw the packages and their imports from the code into docs/architecture-packages.md
	$(GO) test -count=1 -run '^TestPackagePictureIsCurrent$$' ./internal/archmap -args -write

migrate: build ## Apply database migrations to the persistent local DB
	$(PG) run -- $(BIN) migrate

db-start: ## Start the persistent local PostgreSQL cluster alone (no server) and print its URL
	$(PG) start

db-stop: ## Stop the persistent local PostgreSQL cluster
	$(PG) stop

clean: ## Remove build output (bin/) and the cached golangci-lint (.cache/)
	rm -rf bin/ .cache/
