# Warden's build, test and lint entry points. `make test` is what CI runs
# (through .ci/run, after `make lint`); every target works on a fresh machine
# with Go and installs the Go tools it needs at pinned versions.

SHELL := /usr/bin/env bash
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := help

GO    ?= go
GOBIN ?= $(shell $(GO) env GOPATH)/bin

# staticcheck 2025.1.1 is module version v0.6.1 (the proxy here does not
# answer for the release name, only for the module version).
STATICCHECK_VERSION ?= v0.6.1
STATICCHECK_RELEASE ?= 2025.1.1
STATICCHECK := $(GOBIN)/staticcheck

# The templ CLI must match the github.com/a-h/templ module in go.mod, or its
# output differs from the committed *_templ.go files.
TEMPL_VERSION ?= v0.3.1020
TEMPL := $(GOBIN)/templ

# Browser tests (e2e/console_test.go) drive this chromium; they read the
# same variable from the environment (default /usr/bin/chromium).
CHROMIUM ?= /usr/bin/chromium
export CHROMIUM

TEST_DATABASE_URL ?= postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable
export TEST_DATABASE_URL

FUZZTIME  ?= 10s
BENCHTIME ?= 1s
IMAGE     ?= warden:dev
RUN_ARGS  ?= up

.PHONY: help build test lint bench bench-gateway bench-router bench-mcp bench-otlp soak fuzz run docker generate-free generate-check tools test-deps check-postgres

help: ## List the targets.
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-15s %s\n", $$1, $$2}'

build: ## Build the static ./warden binary.
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags "-s -w" -o warden .

test: test-deps check-postgres ## Run the whole suite with the race detector (needs PostgreSQL at TEST_DATABASE_URL).
	$(GO) test -race -count=1 ./...

lint: tools generate-check ## gofmt (fails on any unformatted file), templ generate leaves no diff, go vet and staticcheck.
	@unformatted="$$(gofmt -l $$(git ls-files --cached --others --exclude-standard '*.go'))"; \
	if [ -n "$$unformatted" ]; then echo "gofmt: these files need formatting:" >&2; echo "$$unformatted" >&2; exit 1; fi
	$(GO) vet ./...
	$(STATICCHECK) ./...

bench: ## Run every benchmark once and print a table: name, ns/op, other metrics.
	@out="$$(mktemp)"; trap 'rm -f "$$out"' EXIT; \
	$(GO) test -run '^$$' -bench . -benchmem -benchtime $(BENCHTIME) ./... | tee "$$out"; \
	awk ' \
		/^pkg:/ { pkg = $$2 } \
		/^Benchmark/ { \
			ns = "-"; extra = ""; \
			for (i = 3; i < NF; i += 2) { \
				if ($$(i+1) == "ns/op") ns = $$i; else extra = extra sprintf("%s %s   ", $$i, $$(i+1)); \
			} \
			rows[++n] = sprintf("%-70s %16s   %s", pkg "." $$1, ns, extra); \
		} \
		END { \
			print ""; \
			if (n == 0) { print "no benchmarks found"; exit } \
			printf "%-70s %16s   %s\n", "BENCHMARK", "NS/OP", "OTHER METRICS"; \
			for (i = 1; i <= n; i++) print rows[i]; \
		}' "$$out"

# bench-gateway drives a loopback REST tool directly and through the tool
# gateway, on SQLite and on Postgres (a fresh database on TEST_DATABASE_URL's
# server), and prints calls/s and p50/p99 of both and the difference.
GATEWAY_BENCH_RATE     ?= 1000
GATEWAY_BENCH_DURATION ?= 10s
bench-gateway: build ## Load-test the tool gateway (SQLite and Postgres): calls/s, p50/p99, added latency.
	./warden bench gateway --rate $(GATEWAY_BENCH_RATE) --duration $(GATEWAY_BENCH_DURATION)
	@db="warden_bench_$$$$"; \
	psql "$$TEST_DATABASE_URL" -qc "CREATE DATABASE $$db" && \
	trap 'psql "$$TEST_DATABASE_URL" -qc "DROP DATABASE IF EXISTS $$db WITH (FORCE)"' EXIT && \
	./warden bench gateway --rate $(GATEWAY_BENCH_RATE) --duration $(GATEWAY_BENCH_DURATION) \
		--store "$$(echo "$$TEST_DATABASE_URL" | sed -E "s#/[^/?]+(\?|$$)#/$$db\1#")"

# bench-router sends a chat completion to a local provider directly and
# through the model router: added p50 at 500/s, p99 at 2,000/s, calls/s on
# one core, first streamed chunk (docs/performance.md). The provider and the
# router run in a child process pinned to one CPU, the load generator on the
# other.
ROUTER_BENCH_DURATION ?= 10s
bench-router: build ## Load-test the model router on one core: added p50/p99, calls/s, first chunk.
	./warden bench router --duration $(ROUTER_BENCH_DURATION) --cpus 1

# bench-otlp sends agent traces to the trace service over OTLP/gRPC in
# exports of 512 spans, on SQLite and on Postgres (a fresh database on
# TEST_DATABASE_URL's server), and times trace reads and toolcalls top.
OTLP_BENCH_DURATION ?= 10s
OTLP_BENCH_SENDERS  ?= 8
bench-otlp: build ## Load-test the trace service (SQLite and Postgres): spans/s, GET /v1/traces/{id}, toolcalls top.
	./warden bench otlp --duration $(OTLP_BENCH_DURATION) --senders $(OTLP_BENCH_SENDERS)
	@db="warden_bench_$$$$"; \
	psql "$$TEST_DATABASE_URL" -qc "CREATE DATABASE $$db" && \
	trap 'psql "$$TEST_DATABASE_URL" -qc "DROP DATABASE IF EXISTS $$db WITH (FORCE)"' EXIT && \
	./warden bench otlp --duration $(OTLP_BENCH_DURATION) --senders $(OTLP_BENCH_SENDERS) \
		--store "$$(echo "$$TEST_DATABASE_URL" | sed -E "s#/[^/?]+(\?|$$)#/$$db\1#")"

# bench-mcp calls a read-only MCP echo tool directly and through the MCP
# gateway's per-agent endpoint, on SQLite and on Postgres.
MCP_BENCH_RATE     ?= 500
MCP_BENCH_DURATION ?= 10s
bench-mcp: build ## Load-test the MCP gateway (SQLite and Postgres): added p50, CPU per call, calls/s.
	./warden bench mcp --rate $(MCP_BENCH_RATE) --duration $(MCP_BENCH_DURATION)
	@db="warden_bench_mcp_$$$$"; \
	psql "$$TEST_DATABASE_URL" -qc "CREATE DATABASE $$db" && \
	trap 'psql "$$TEST_DATABASE_URL" -qc "DROP DATABASE IF EXISTS $$db WITH (FORCE)"' EXIT && \
	./warden bench mcp --rate $(MCP_BENCH_RATE) --duration $(MCP_BENCH_DURATION) \
		--store "$$(echo "$$TEST_DATABASE_URL" | sed -E "s#/[^/?]+(\?|$$)#/$$db\1#")"

# soak drives governed calls on the embedded store for SOAK_DURATION with a
# minute of retention and prints the store's size as it levels off (not in
# CI: it takes a quarter of an hour).
SOAK_RATE     ?= 200
SOAK_DURATION ?= 15m
soak: build ## Soak the embedded store: governed calls for 15 minutes, its size printed as retention levels it off.
	./warden bench soak --rate $(SOAK_RATE) --duration $(SOAK_DURATION)

fuzz: ## Run every fuzz target for FUZZTIME each (default 10s).
	@found=0; \
	for file in $$(grep -rl --include='*_test.go' -E '^func Fuzz[A-Za-z0-9_]*\(' . ); do \
		dir="./$$(dirname "$${file#./}")"; \
		for target in $$(grep -oE '^func Fuzz[A-Za-z0-9_]*' "$$file" | cut -d' ' -f2); do \
			found=1; echo "== $$dir $$target"; \
			$(GO) test -run '^$$' -fuzz "^$$target\$$" -fuzztime $(FUZZTIME) "$$dir"; \
		done; \
	done; \
	if [ $$found = 0 ]; then echo "no fuzz targets found"; fi

run: ## Start Warden locally (go run . up); pass other arguments with RUN_ARGS=.
	$(GO) run . $(RUN_ARGS)

docker: ## Build the container image $(IMAGE).
	docker build -t $(IMAGE) .

generate-free: ## Fail when `go generate ./...` would change the tree (generated code is committed).
	@before="$$(git status --porcelain=v1 --untracked-files=all; git diff)"; \
	$(GO) generate ./...; \
	after="$$(git status --porcelain=v1 --untracked-files=all; git diff)"; \
	if [ "$$before" != "$$after" ]; then echo "go generate changed the tree; commit the generated files:" >&2; git status --short >&2; exit 1; fi; \
	echo "generated code is up to date"

generate-check: tools ## Fail when `templ generate` would change the tree (the generated *_templ.go files are committed).
	@before="$$(git status --porcelain=v1 --untracked-files=all -- web; git diff -- web)"; \
	"$(TEMPL)" generate -log-level warn -path web; \
	after="$$(git status --porcelain=v1 --untracked-files=all -- web; git diff -- web)"; \
	if [ "$$before" != "$$after" ]; then echo "templ generate changed web/; run it ($(TEMPL) generate -path web) and commit the *_templ.go files:" >&2; git status --short -- web >&2; exit 1; fi; \
	echo "templ output is up to date"

tools: ## Install the pinned Go tools when missing.
	@if ! "$(STATICCHECK)" -version 2>/dev/null | grep -q "$(STATICCHECK_RELEASE)"; then \
		echo "installing staticcheck $(STATICCHECK_RELEASE) ($(STATICCHECK_VERSION))"; \
		GOBIN="$(GOBIN)" $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION); \
	fi
	@if ! "$(TEMPL)" version 2>/dev/null | grep -q "$(TEMPL_VERSION)"; then \
		echo "installing templ $(TEMPL_VERSION)"; \
		GOBIN="$(GOBIN)" $(GO) install github.com/a-h/templ/cmd/templ@$(TEMPL_VERSION); \
	fi

test-deps: tools ## Install what the tests need when missing: a C compiler for -race, Debian's chromium for the browser tests, xmllint and the W3C schemas for SWID validation, bubblewrap for the OS tool sandbox, the templ CLI.
	@if ! command -v gcc >/dev/null 2>&1; then \
		echo "installing gcc (the race detector needs cgo)"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq gcc; \
	fi
	@if [ ! -x "$(CHROMIUM)" ]; then \
		echo "installing chromium (e2e browser tests drive $(CHROMIUM))"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium; \
	fi
	@if ! command -v xmllint >/dev/null 2>&1 || [ ! -f /usr/share/xml/xmltooling/xmldsig-core-schema.xsd ]; then \
		echo "installing libxml2-utils and xmltooling-schemas (the AgBOM tests validate SWID tags with xmllint)"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends libxml2-utils xmltooling-schemas; \
	fi
	@if ! command -v bwrap >/dev/null 2>&1; then \
		echo "installing bubblewrap (the OS tool sandbox runs commands under bwrap)"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends bubblewrap; \
	fi
	@if [ ! -f "$$HOME/.cache/warden/axe/node_modules/axe-core/axe.min.js" ]; then \
		echo "installing axe-core (the approval browser test checks accessibility with it)"; \
		npm install --no-audit --no-fund --prefix "$$HOME/.cache/warden/axe" axe-core@4.10.3 >/dev/null; \
	fi

check-postgres: ## Fail loudly unless PostgreSQL answers at TEST_DATABASE_URL.
	@if command -v psql >/dev/null 2>&1; then \
		if ! psql "$$TEST_DATABASE_URL" -Atqc 'select 1' >/dev/null 2>&1; then \
			echo "FATAL: PostgreSQL is not reachable at TEST_DATABASE_URL=$$TEST_DATABASE_URL" >&2; \
			echo "       Start it (e.g. .ci/run does: pg_ctlcluster --skip-systemctl-redirect <version> main start)" >&2; \
			echo "       or point TEST_DATABASE_URL at a reachable server." >&2; \
			exit 1; \
		fi; \
	elif command -v pg_isready >/dev/null 2>&1; then \
		if ! pg_isready -q -d "$$TEST_DATABASE_URL"; then \
			echo "FATAL: PostgreSQL is not reachable at TEST_DATABASE_URL=$$TEST_DATABASE_URL" >&2; exit 1; \
		fi; \
	else \
		echo "FATAL: cannot check TEST_DATABASE_URL=$$TEST_DATABASE_URL: neither psql nor pg_isready is installed (apt-get install -y postgresql-client)" >&2; \
		exit 1; \
	fi
