# pneuma's build, test and benchmark entry points. `make test` is what CI runs.

# Two pinned CLIs (README, "Claude Code versions"): the newest release, which `make test` runs
# the whole suite on (CLAUDE_NEXT_*), and the oldest pneuma supports (CLAUDE_*), which `make
# test-contract` runs the contract subset on. scripts/bump-claude.sh VERSION moves the newest pin.
CLAUDE_VERSION      := 2.1.197
CLAUDE_DIR          := .cache/claude
CLAUDE_BIN          := $(CLAUDE_DIR)/node_modules/@anthropic-ai/claude-code/bin/claude.exe
CLAUDE_NEXT_VERSION := 2.1.332
CLAUDE_NEXT_DIR     := .cache/claude-next
CLAUDE_NEXT_BIN     := $(CLAUDE_NEXT_DIR)/node_modules/@anthropic-ai/claude-code/bin/claude.exe
AXE_DIR        := .cache/axe
GO             ?= go
FUZZTIME       ?= 10s
# staticcheck runs through the Go toolchain (go run ...@version, fetched from
# the Go module proxy), pinned: v0.8.2 is the newest release and supports Go 1.26.
STATICCHECK    := honnef.co/go/tools/cmd/staticcheck@v0.8.2

GORELEASER     := github.com/goreleaser/goreleaser/v2@v2.15.0

.PHONY: all build claude claude-next test-next test-contract axe test test-deps test-short fuzz bench bench-deps demo vet lint platforms clean release-snapshot actionlint

all: build

## build: compile ./bin/pneuma
build:
	$(GO) build -o bin/pneuma .
	$(GO) build -o bin/pneuma-sandbox-forward ./cmd/pneuma-sandbox-forward

## claude: install the oldest supported Claude Code CLI into .cache/claude (npm, lockfile)
claude: $(CLAUDE_DIR)/.installed-$(CLAUDE_VERSION)

$(CLAUDE_DIR)/.installed-$(CLAUDE_VERSION): tools/claude/package.json tools/claude/package-lock.json
	mkdir -p $(CLAUDE_DIR)
	cp tools/claude/package.json tools/claude/package-lock.json $(CLAUDE_DIR)/
	cd $(CLAUDE_DIR) && npm ci --no-audit --no-fund --loglevel=error
	@$(CLAUDE_BIN) --version | grep -q '^$(CLAUDE_VERSION) ' || { echo "installed CLI is not $(CLAUDE_VERSION)"; exit 1; }
	touch $@

## claude-next: install the newest pinned Claude Code CLI into .cache/claude-next (npm, lockfile)
claude-next: $(CLAUDE_NEXT_DIR)/.installed-$(CLAUDE_NEXT_VERSION)

$(CLAUDE_NEXT_DIR)/.installed-$(CLAUDE_NEXT_VERSION): tools/claude-next/package.json tools/claude-next/package-lock.json
	mkdir -p $(CLAUDE_NEXT_DIR)
	cp tools/claude-next/package.json tools/claude-next/package-lock.json $(CLAUDE_NEXT_DIR)/
	cd $(CLAUDE_NEXT_DIR) && npm ci --no-audit --no-fund --loglevel=error
	@$(CLAUDE_NEXT_BIN) --version | grep -q '^$(CLAUDE_NEXT_VERSION) ' || { echo "installed CLI is not $(CLAUDE_NEXT_VERSION)"; exit 1; }
	touch $@

## axe: install the pinned axe-core (the browser tests' accessibility check) into .cache/axe
axe: $(AXE_DIR)/.installed

$(AXE_DIR)/.installed: tools/axe/package.json tools/axe/package-lock.json
	mkdir -p $(AXE_DIR)
	cp tools/axe/package.json tools/axe/package-lock.json $(AXE_DIR)/
	cd $(AXE_DIR) && npm ci --no-audit --no-fund --loglevel=error
	touch $@

## test: install what the tests need, then run every test (end to end included) under -race on
## the newest pinned CLI, then the contract subset on the oldest supported one
test: lint claude-next test-deps
	PNEUMA_TEST_CLAUDE=$(CURDIR)/$(CLAUDE_NEXT_BIN) $(GO) test -race -count=1 -timeout 40m ./...
	$(MAKE) test-contract
	$(MAKE) fuzz
	$(MAKE) actionlint

## test-next: the whole suite on the newest pinned CLI, without -race and without the rest of
## `make test` (what scripts/bump-claude.sh runs after moving the pin)
test-next: claude-next test-deps
	PNEUMA_TEST_CLAUDE=$(CURDIR)/$(CLAUDE_NEXT_BIN) $(GO) test -count=1 -timeout 40m ./...

# The contract subset: the end-to-end tests that depend on how the CLI behaves (its flags,
# stream, transcripts, prices, retries, tool results): every test of the test bed's own CLI
# suite, the tests named RealCLI or EndToEnd in the packages that drive or read the CLI, and the
# runner's tests of a retry continuing the CLI's session and of a policy's edit of a tool call.
CONTRACT_PKGS := ./claude/ ./history/ ./runner/
CONTRACT_RUN  := RealCLI|EndToEnd|TestRetryResumesSession|TestPolicyEditedInputIsApplied

## test-contract: the contract subset on the oldest supported CLI, without -race (a few minutes)
test-contract: claude
	PNEUMA_TEST_CLAUDE=$(CURDIR)/$(CLAUDE_BIN) $(GO) test -count=1 -timeout 15m ./internal/testbed/claudetest/
	PNEUMA_TEST_CLAUDE=$(CURDIR)/$(CLAUDE_BIN) $(GO) test -count=1 -timeout 15m -run '$(CONTRACT_RUN)' $(CONTRACT_PKGS)

## test-deps: tools the tests call besides the CLI (xmllint validates JUnit output; chromium and
## axe-core drive and check the web console; bubblewrap runs the sandbox escape suite; tmux
## shows `pneuma run`'s live view to the tests as a person's terminal would)
test-deps: axe
	@command -v xmllint >/dev/null 2>&1 || { \
	  echo "installing libxml2-utils for xmllint"; \
	  (apt-get update -qq && apt-get install -y -qq libxml2-utils) >/dev/null; }
	@command -v chromium >/dev/null 2>&1 || { \
	  echo "installing chromium for the console's browser tests"; \
	  (apt-get update -qq && apt-get install -y -qq chromium) >/dev/null; }
	@command -v bwrap >/dev/null 2>&1 || { \
	  echo "installing bubblewrap for the sandbox tests"; \
	  (apt-get update -qq && apt-get install -y -qq bubblewrap) >/dev/null; }
	@command -v tmux >/dev/null 2>&1 || { \
	  echo "installing tmux for the live view's terminal tests"; \
	  (apt-get update -qq && apt-get install -y -qq tmux) >/dev/null; }

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
## history vs cat and ccusage, the server's fan-out, replay and memory, runs of 1,000 to 10,000 jobs,
## one of 10,000 through pneuma serve, the live view's CPU per job on a pseudo-terminal: cpu-ms/job,
## budget 0.2)
bench: build claude bench-deps
	CLAUDE_BIN=$(CURDIR)/$(CLAUDE_BIN) ./scripts/bench-run.sh
	STARTS_ROUNDS=3 STARTS_TELEMETRY=1 STARTS_SANDBOX=1 ./scripts/bench-starts.sh
	STARTS_JOBS=60 STARTS_CONCURRENCY=1 STARTS_ROUNDS=3 STARTS_SANDBOX=1 ./scripts/bench-starts.sh
	./scripts/bench-history.sh
	./scripts/bench-serve.sh
	SCALE_ROUNDS=3 SCALE_SERVE=1 ./scripts/bench-scale.sh
	$(GO) test -run '^$$' -bench 'Decode10k' -benchtime 3x ./jobfile
	$(GO) test -run '^$$' -bench 'BuildPlan10k|ResumeReplay10k|ToFirstJob10k' -benchtime 3x ./runner
	$(GO) test -run '^$$' -bench 'LiveViewRun$$' -benchtime 3x ./cmd

## demo: run jobs.example.yaml offline through the newest pinned CLI against the fake API
demo: build claude-next
	$(GO) run ./tools/demo -- ./bin/pneuma $(CLAUDE_NEXT_BIN)

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
