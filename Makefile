# Better Compute VPS. `make dev` runs it; `make test` tests it.

GO ?= go
BIN := bin

.PHONY: dev build test check generate tools bench screenshots fuzz campaign release image

DEV_FLAGS ?= --sim 3

dev:
	@test -x $(BIN)/better-compute || echo 'make dev: the first build compiles everything and takes a few minutes; later ones take seconds.'
	@$(MAKE) --no-print-directory build
	$(BIN)/better-compute dev $(DEV_FLAGS)

build:
	$(GO) build -o $(BIN)/better-compute ./cmd/better-compute
	$(GO) build -o $(BIN)/bcctl ./cmd/bcctl

# Archives of the static binaries with the version stamped in, and their
# checksums, in dist/ (VERSION=v0.5.0 make release; scripts/release.sh).
release:
	bash scripts/release.sh

# The container image of the one binary (packaging/Dockerfile), with podman.
image:
	bash scripts/image.sh

# Tests talk to real Postgres and Redis: scripts/services.sh starts them
# (installing Debian's packages first when root and they are missing).
test:
	bash scripts/services.sh
	$(GO) test -race -count=1 -timeout 30m ./...

# The fuzz targets of the parsers that take user input, each for FUZZTIME
# executions (go test -fuzz runs one target per package at a time). A count,
# not a duration: Go 1.26's fuzz coordinator can fail a run whose duration
# ends mid-execution with a bare "context deadline exceeded" and no input
# (go.dev/issue/75804, fixed in Go 1.27). Their seed corpus, and every
# input a fuzzer found failing, run with the tests too; CI runs this with
# FUZZTIME=20000x.
FUZZTIME ?= 500000x
FUZZ_TARGETS := \
	FuzzParse:./ids/ \
	FuzzDecodeSeq:./ids/ \
	FuzzCheckSSHKey:./control/ \
	FuzzSeal:./seal/ \
	FuzzInstanceFilter:./graph/ \
	FuzzWatchFilter:./graph/ \
	FuzzParseSettings:./drivers/cloud/hetzner/ \
	FuzzParseSettings:./drivers/cloud/proxmox/

fuzz:
	@set -e; for t in $(FUZZ_TARGETS); do \
		echo "fuzz $${t%%:*} in $${t#*:} for $(FUZZTIME)"; \
		$(GO) test -run '^$$' -fuzz "^$${t%%:*}\$$" -fuzztime $(FUZZTIME) "$${t#*:}"; \
	done

# The figures of docs/benchmarks.md.
bench:
	bash scripts/services.sh
	$(GO) test -run '^$$' -bench CreateInstance -benchtime 3000x ./graph/
	$(GO) test -run '^$$' -bench CreateToRunning -benchtime 200x ./e2e/
	$(GO) test -run '^$$' -bench SandboxCreate -benchtime 200x ./e2e/
	$(GO) test -run '^$$' -bench Fleet -benchtime 1x -timeout 60m ./e2e/
	$(GO) test -run '^$$' -bench Sweep100 ./drivers/cloud/hetzner/ ./drivers/cloud/proxmox/
	$(GO) test -run '^$$' -bench ProviderLifecycle -benchtime 1x ./e2e/
	$(GO) test -run '^$$' -bench OversizedDocuments -benchtime 1x -count 3 ./e2e/
	bash scripts/lxd.sh install || echo "make bench: NO LXD: ChangeToEvent's lxd rows will be skipped" >&2
	$(GO) test -run '^$$' -bench ChangeToEvent -benchtime 4x -timeout 40m ./e2e/
	$(GO) test -run '^$$' -bench Subscribers -benchtime 1x -timeout 40m ./e2e/
	$(GO) test -run '^$$' -bench LoopbackFloor -benchtime 1x ./e2e/

# The fault campaign at its full length, 10,000 operations under faults;
# its figures go in docs/benchmarks.md. make test runs its 1,000-operation
# form (BC_CAMPAIGN_OPS sets the number).
campaign:
	bash scripts/services.sh
	BC_CAMPAIGN_OPS=10000 $(GO) test -race -count=1 -timeout 60m -run TestFaultCampaign -v ./e2e/

# The console's pictures in docs/console, for docs/console.md.
screenshots: build
	bash scripts/services.sh
	BC_SCREENSHOTS=$(CURDIR)/docs/console $(GO) test -count=1 -run TestConsole ./e2e/

# The code generators are pinned in tools/go.mod, outside the product's
# dependency list.
tools:
	$(GO) build -C tools -o ../$(BIN)/gqlgen github.com/99designs/gqlgen
	$(GO) build -C tools -o ../$(BIN)/genqlient github.com/Khan/genqlient
	$(GO) build -C tools -o ../$(BIN)/sqlc github.com/sqlc-dev/sqlc/cmd/sqlc
	$(GO) build -C tools -o ../$(BIN)/staticcheck honnef.co/go/tools/cmd/staticcheck

generate: tools
	$(BIN)/sqlc generate
	$(BIN)/gqlgen generate
	$(BIN)/genqlient client/genqlient.yaml

# check fails when generated code differs from its sources, when code is not
# gofmt-ed, when go vet or staticcheck finds a problem, or when git tracks a
# build output (a file over 1 MB, an executable).
check: generate
	@bash scripts/check-tracked.sh
	@git diff --exit-code -- sqlc graph client || (echo 'generated code is stale: run make generate and commit' >&2; exit 1)
	@test -z "$$(git status --porcelain -- sqlc graph client)" || (echo 'generated files are not committed:' >&2; git status --porcelain -- sqlc graph client >&2; exit 1)
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || (echo 'not gofmt-ed:' >&2; gofmt -l $$(git ls-files '*.go') >&2; exit 1)
	$(GO) vet ./...
	$(BIN)/staticcheck ./...
