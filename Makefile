# pneuma's build, test and benchmark entry points. `make test` is what CI runs.

# Two pinned CLIs: the newest (the whole suite runs on it) and the oldest pneuma supports
# (the contract subset runs on it). scripts/bump-claude.sh VERSION moves the newest pin.
CLAUDE_VERSION     := 2.1.332
CLAUDE_DIR         := .cache/claude
CLAUDE_BIN         := $(CLAUDE_DIR)/node_modules/@anthropic-ai/claude-code/bin/claude.exe
CLAUDE_OLD_VERSION := 2.1.197
CLAUDE_OLD_DIR     := .cache/claude-old
CLAUDE_OLD_BIN     := $(CLAUDE_OLD_DIR)/node_modules/@anthropic-ai/claude-code/bin/claude.exe
# The contract subset: end-to-end tests whose outcome depends on the CLI's behaviour.
CONTRACT_PKGS      := ./claude/... ./runner/ ./cmd/ ./history/ ./internal/testbed/...
CONTRACT_RUN       := Contract|RealCLI
AXE_DIR        := .cache/axe
GO             ?= go
FUZZTIME       ?= 10s
# staticcheck runs through the Go toolchain (go run ...@version, fetched from
# the Go module proxy), pinned: v0.8.2 is the newest release and supports Go 1.26.
STATICCHECK    := honnef.co/go/tools/cmd/staticcheck@v0.8.2

GORELEASER     := github.com/goreleaser/goreleaser/v2@v2.15.0

.PHONY: all build claude claude-old test-contract-old axe test test-deps test-short fuzz bench bench-deps demo vet lint platforms clean release-snapshot actionlint

all: build

## build: compile ./bin/pneuma
build:
	$(GO) build -o bin/pneuma .

## claude: install the pinned Claude Code CLI into .cache/claude (npm, lockfile)
claude: $(CLAUDE_DIR)/.installed-$(CLAUDE_VERSION)

$(CLAUDE_DIR)/.installed-$(CLAUDE_VERSION): tools/claude/package.json tools/claude/package-lock.json
	mkdir -p $(CLAUDE_DIR)
	cp tools/claude/package.json tools/claude/package-lock.json $(CLAUDE_DIR)/
	cd $(CLAUDE_DIR) && npm ci --no-audit --no-fund --loglevel=error
	@$(CLAUDE_BIN) --version | grep -q '^$(CLAUDE_VERSION) ' || { echo "installed CLI is not $(CLAUDE_VERSION)"; exit 1; }
	touch $@

## claude-old: install the oldest supported Claude Code CLI into .cache/claude-old (npm, lockfile)
claude-old: $(CLAUDE_OLD_DIR)/.installed-$(CLAUDE_OLD_VERSION)

$(CLAUDE_OLD_DIR)/.installed-$(CLAUDE_OLD_VERSION): tools/claude-old/package.json tools/claude-old/package-lock.json
	mkdir -p $(CLAUDE_OLD_DIR)
	cp tools/claude-old/package.json tools/claude-old/package-lock.json $(CLAUDE_OLD_DIR)/
	cd $(CLAUDE_OLD_DIR) && npm ci --no-audit --no-fund --loglevel=error
	@$(CLAUDE_OLD_BIN) --version | grep -q '^$(CLAUDE_OLD_VERSION) ' || { echo "installed CLI is not $(CLAUDE_OLD_VERSION)"; exit 1; }
	touch $@

## axe: install the pinned axe-core (the browser tests' accessibility check) into .cache/axe
axe: $(AXE_DIR)/.installed

$(AXE_DIR)/.installed: tools/axe/package.json tools/axe/package-lock.json
	mkdir -p $(AXE_DIR)
	cp tools/axe/package.json tools/axe/package-lock.json $(AXE_DIR)/
	cd $(AXE_DIR) && npm ci --no-audit --no-fund --loglevel=error
	touch $@

## test: install what the tests need, then run every test (end to end included) under -race on
## the newest pinned CLI, and the contract subset on the oldest supported one
test: lint claude claude-old test-deps
	PNEUMA_TEST_CLAUDE=$(CURDIR)/$(CLAUDE_BIN) $(GO) test -race -count=1 -timeout 40m ./...
	$(MAKE) test-contract-old
	$(MAKE) fuzz
	$(MAKE) actionlint

## test-contract-old: the tests named Contract* or *RealCLI* (they depend on the CLI's behaviour)
## on the oldest supported CLI, without -race
test-contract-old: claude-old
	PNEUMA_TEST_CLAUDE=$(CURDIR)/$(CLAUDE_OLD_BIN) $(GO) test -count=1 -timeout 20m -run '$(CONTRACT_RUN)' $(CONTRACT_PKGS)

## test-deps: tools the tests call besides the CLI (xmllint validates JUnit output; chromium and
## axe-core drive and check the web console)
test-deps: axe
	@command -v xmllint >/dev/null 2>&1 || { \
	  echo "installing libxml2-utils for xmllint"; \
	  (apt-get update -qq && apt-get install -y -qq libxml2-utils) >/dev/null; }
	@command -v chromium >/dev/null 2>&1 || { \
	  echo "installing chromium for the console's browser tests"; \
	  (apt-get update -qq && apt-get install -y -qq chromium) >/dev/null; }

## bench-deps: tools the benchmark scripts call
bench-deps:
	@command -v jq >/dev/null 2>&1 && test -x /usr/bin/time || { \
	  echo "installing jq and time for the benchmarks"; \
	  (apt-get update -qq && apt-get install -y -qq jq time) >/dev/null; }

## test-short: unit tests only, no CLI needed
test-short:
	$(GO) test -short ./...

## fuzz: run every fuzz target for FUZZTIME each
fuzz:
	./scripts/fuzz.sh $(FUZZTIME)

## bench: benchmarks with figures (pneuma run vs a shell baseline, starts at scale vs xargs,
## history vs cat and ccusage, the server's fan-out, replay and memory)
bench: build claude bench-deps
	CLAUDE_BIN=$(CURDIR)/$(CLAUDE_BIN) ./scripts/bench-run.sh
	./scripts/bench-starts.sh
	./scripts/bench-history.sh
	./scripts/bench-serve.sh

## demo: run jobs.example.yaml offline through the pinned CLI against the fake API
demo: build claude
	$(GO) run ./tools/demo -- ./bin/pneuma $(CLAUDE_BIN)

vet:
	$(GO) vet ./...

## lint: fails on an untidy go.mod, unformatted code, go vet or staticcheck findings, or a platform that does not build
lint: vet platforms
	$(GO) mod tidy -diff
	@out=$$(gofmt -l $$($(GO) list -f '{{.Dir}}' ./...)); \
	  if [ -n "$$out" ]; then echo "gofmt -l: not formatted:"; echo "$$out"; exit 1; fi
	$(GO) run $(STATICCHECK) ./...

## platforms: the binary builds for macOS and Windows too (CI runs on Linux)
platforms:
	GOOS=darwin $(GO) build ./...
	GOOS=windows $(GO) build ./...

## actionlint: lint action.yml and the example GitHub workflows (pinned actionlint, built with Go)
actionlint:
	GO=$(GO) ./scripts/actionlint.sh

## release-snapshot: build every release archive and checksums.txt into dist/ with the pinned
## goreleaser (run through the Go toolchain; no tag, nothing published)
release-snapshot:
	$(GO) run $(GORELEASER) release --snapshot --clean --skip=publish

clean:
	rm -rf bin .cache dist
