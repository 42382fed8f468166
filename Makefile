# kafkalambda toolkit. `make test` is what CI runs (.ci/run); every target works on a fresh
# machine with Go 1.26, Node.js >= 20 with npm, and network access to the Go module proxy and
# the npm registry.

GO        ?= go
NPM       ?= npm
# Every package of every module of the workspace (go.work: the library at the root, and the
# modules cmd/klt, esm, samples, xraytrace, oteltrace); ./... would stop at the root module.
PKGS      ?= github.com/kafkalambda/toolkit/...
BENCHTIME ?= 1s
COUNT     ?= 10
FUZZTIME  ?= 15s
# Minimizing each new interesting input may take up to a minute by default, which shows as
# "0/sec" and eats a short run whole; new inputs are kept unminimized past this.
FUZZMINTIME ?= 2s

.PHONY: all test unit lint fmt bench bench-peer bench-peer-kafka fuzz tools clean node_modules demo test-arm64 arm64

all: test

## test: everything CI checks: formatting, vet, staticcheck, and every test (fuzz seeds included),
## under the race detector; then test-arm64 when qemu-aarch64 is installed (about a minute).
test: node_modules lint unit arm64

# arm64 is test-arm64 when qemu-user is installed, and a SKIP line saying what went untested
# when it is not (as for cfn-lint): CI installs it (.ci/run).
arm64:
	@if command -v qemu-aarch64 >/dev/null; then $(MAKE) --no-print-directory test-arm64; \
	else echo "SKIP test-arm64: qemu-aarch64 not on PATH, the arm64 (NEON) code of $(ARM64_PKGS) not run (Debian: apt-get install qemu-user)"; fi

# The tests run once, under -race: a data race is a failure on every change, and one build
# (not a plain one and a race one) keeps the whole run within CI's budget. -race needs cgo (gcc).
# -timeout: the race build runs the stack tests of cmd/klt and fanout several times slower
# than a plain one, past go test's 10 minutes on a loaded 2-core machine.
RACE ?= -race
unit: node_modules
	$(GO) test $(RACE) -count=1 -timeout 30m $(PKGS)
	@command -v cfn-lint >/dev/null || echo "SKIP TestLintAgreesWithCfnLint: cfn-lint not on PATH, klt lint not held against it (pip install cfn-lint)"

# The tools (staticcheck, benchstat) are pinned in their own module, tools/go.mod, so that they
# never become requirements of the library's go.mod (and so minimum versions in every user's
# module graph). TOOL runs one of them from the repository root; GOWORK=off because -modfile
# cannot be used in workspace mode (go.work). staticcheck loads the workspace's packages, so
# it is built once (into .bin) and run in workspace mode.
TOOL      = GOWORK=off $(GO) tool -modfile=tools/go.mod
STATICCHECK = .bin/staticcheck

$(STATICCHECK): tools/go.mod tools/go.sum
	GOWORK=off $(GO) build -modfile=tools/go.mod -o $@ honnef.co/go/tools/cmd/staticcheck

## lint: gofmt, go vet, staticcheck (pinned in tools/go.mod), klt lint and, when installed, cfn-lint on template.yaml.
lint: $(STATICCHECK)
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)
	$(STATICCHECK) $(PKGS)
	$(GO) run ./cmd/klt lint template.yaml
	@if command -v cfn-lint >/dev/null; then echo "cfn-lint template.yaml"; cfn-lint template.yaml; \
	else echo "cfn-lint not installed: template.yaml not checked by it (pip install cfn-lint)"; fi

fmt:
	gofmt -w $$(git ls-files '*.go')

## demo: the sample stack of template.yaml on this machine (klt local): 500 orders straight from
## Kafka (5 partitions, the local HTTP sink at OrdersApiUrl taking 300 ms per order), 5,000
## through the SQS FIFO fan-out, 5,000 straight from Kafka with the consumer's KeyConcurrency at
## 100 (--variant: customers at once, each in order), then all three at once on 60 orders with a poison order (a negative
## total: the demo's value, not klt's), a transient sink error and a timed-out invocation.
## Progress on stdout; the report in $(DEMO_DIR)/report.html and .json, with the throughput
## klt plan predicts from the run's measurements beside the measured one
## (klt plan --from-report $(DEMO_DIR)/report.json makes the same plan), and the function logs:
## each order carries a correlation-id header, and the report counts the functions' log lines
## that carry their invocation's request ID and the order's correlation ID.
DEMO_DIR ?= demo
DEMO_ORDER := {"orderId":{{seq}},"customer":"{{key}}","total":{{seq}}.5,"currency":"EUR","status":"placed"}
DEMO_POISON := {"orderId":{{seq}},"customer":"{{key}}","total":-1,"currency":"EUR","status":"placed"}
# klt is built as the functions are (CGO_ENABLED=0, -trimpath), so that the packages they share
# are compiled once; it is built first with a line saying so (on a cold build cache, a minute or
# more of silence otherwise), then klt local says each function it builds.
DEMO_KLT := .bin/klt-demo
demo: node_modules
	@echo "demo: compiling klt into $(DEMO_KLT) (a minute or two on a cold build cache; klt local then builds each function, one line each)"
	CGO_ENABLED=0 $(GO) build -trimpath -o $(DEMO_KLT) ./cmd/klt
	$(DEMO_KLT) local --template template.yaml --partitions 5 \
	  --http-sink OrdersApiUrl --work 300ms --generate '$(DEMO_ORDER)' --keys 1000 \
	  --header 'correlation-id=order-{{seq}}' \
	  --variant KeyConcurrentConsumer=ConsumerFunction:KeyConcurrency=100 \
	  --load ConsumerFunction=500 --load 5000 \
	  --fault-load 60 --fault 'value:seq=12:$(DEMO_POISON)' --fault http:seq=20 --fault timeout:seq=30 \
	  --report $(DEMO_DIR)

## test-arm64: the packages with code for one architecture (kafkaevent's NEON base64 and the
## JSON reader it runs with) built for linux/arm64, the architecture of Graviton functions, and
## run under qemu-user: their tests, then every benchmark once (-benchtime 1x) as a check that
## the benchmarked code runs there too (qemu's timings mean nothing). Then the plain Go build
## (tag purego) vetted and tested on this machine. Needs qemu-aarch64 (Debian: apt-get install qemu-user).
ARM64_PKGS ?= ./kafkaevent/ ./internal/jsonscan/
test-arm64:
	@command -v qemu-aarch64 >/dev/null || { echo "test-arm64: qemu-aarch64 not on PATH: the arm64 code cannot run on this machine (Debian: apt-get install qemu-user)" >&2; exit 1; }
	GOARCH=arm64 CGO_ENABLED=0 $(GO) vet $(ARM64_PKGS)
	GOARCH=arm64 CGO_ENABLED=0 $(GO) test -count=1 -exec qemu-aarch64 $(ARM64_PKGS)
	GOARCH=arm64 CGO_ENABLED=0 $(GO) test -count=1 -exec qemu-aarch64 -run '^$$' -bench . -benchtime 1x $(ARM64_PKGS)
	$(GO) vet -tags purego $(ARM64_PKGS)
	$(GO) test -count=1 -tags purego $(ARM64_PKGS)

## bench: every benchmark beside its alternative, summarised by benchstat.
bench: node_modules
	scripts/bench -count $(COUNT) -benchtime $(BENCHTIME) $(PKGS)

## bench-peer: the SQS peer benchmark (bench/peer): the same 10,000-message event decoded and
## processed by @aws-lambda-powertools/batch on Node.js and by batch.SQSHandler's Invoke, in
## interleaved rounds; prints both medians and their ratio.
bench-peer: node_modules
	$(GO) run ./bench/peer

## bench-peer-kafka: the Kafka peer benchmark (bench/kafkapeer): three 6 MB events of orders,
## JSON, Avro and Protobuf values as the event source mapping delivers them in SOURCE mode,
## decoded by @aws-lambda-powertools/kafka's kafkaConsumer on Node.js and by codec's
## Deserializer, beside Go baselines, in interleaved rounds; prints the medians and their ratios.
bench-peer-kafka: node_modules
	$(GO) run ./bench/kafkapeer

## fuzz: a short run of every fuzz target (FUZZTIME each).
fuzz:
	@set -e; for f in $$(grep -rl --include='*_test.go' '^func Fuzz' .); do \
	  dir=$$(dirname $$f); \
	  for t in $$(sed -n 's/^func \(Fuzz[A-Za-z0-9_]*\)(.*/\1/p' $$f); do \
	    echo "== $$dir $$t"; \
	    $(GO) test -run '^$$' -fuzz "^$$t\$$" -fuzztime $(FUZZTIME) -fuzzminimizetime $(FUZZMINTIME) $$dir; \
	  done; \
	done

## tools: download the library's modules and build the pinned tools (tools/go.mod: staticcheck,
## benchstat), so that later targets need no network.
tools:
	$(GO) mod download
	for m in cmd/klt esm samples xraytrace oteltrace; do (cd $$m && $(GO) mod download) || exit 1; done
	GOWORK=off $(GO) build -modfile=tools/go.mod -o /dev/null tool

## node_modules: the Node servers the tests start (dynalite, local-aws-sqs), pinned in package.json and
## package-lock.json; npm ci runs again whenever either changes.
node_modules: node_modules/.installed

node_modules/.installed: package.json package-lock.json
	$(NPM) ci --no-audit --no-fund
	@touch $@

clean:
	rm -rf bench.txt .bin

## build-<LogicalId>: what `sam build` runs for each function of template.yaml (Metadata:
## BuildMethod: makefile): `make --makefile <this file> build-<LogicalId>` with the working
## directory a copy of the source without .git and ARTIFACTS_DIR set to the function's artifact
## directory. Each leaves a static, stripped linux `$(ARTIFACTS_DIR)/bootstrap` for the
## function's architecture (LAMBDA_ARCH, set per function below: keep it equal to the
## function's Architectures in template.yaml). -buildvcs=false: the copy has no .git.
LAMBDA_FUNCTIONS = ConsumerFunction DispatcherFunction WorkerFunction ProducerFunction
.PHONY: $(addprefix build-,$(LAMBDA_FUNCTIONS))

build-ConsumerFunction:   LAMBDA_PKG = ./samples/consumer
build-DispatcherFunction: LAMBDA_PKG = ./samples/dispatcher
build-WorkerFunction:     LAMBDA_PKG = ./samples/worker
build-ProducerFunction:   LAMBDA_PKG = ./samples/producer
$(addprefix build-,$(LAMBDA_FUNCTIONS)): LAMBDA_ARCH = arm64

$(addprefix build-,$(LAMBDA_FUNCTIONS)):
	@test -n "$(ARTIFACTS_DIR)" || { echo "$@: ARTIFACTS_DIR is not set: sam build sets it; by hand, make $@ ARTIFACTS_DIR=<dir>" >&2; exit 1; }
	GOOS=linux GOARCH=$(LAMBDA_ARCH) CGO_ENABLED=0 $(GO) build -tags lambda.norpc -trimpath -buildvcs=false -ldflags='-s -w' -o "$(ARTIFACTS_DIR)/bootstrap" $(LAMBDA_PKG)

## invoke: run one function of template.yaml with an event, as `sam local invoke -e` does,
## without Docker: `make invoke FN=ConsumerFunction EVENT=testdata/events/consumer/orders.json`.
## klt invoke builds the function for this machine, runs it under the Runtime Interface
## Emulator (tools/go.mod) with the local servers it needs, prints the response on stdout and
## the logs on stderr, and fails on a function error. TEMPLATE picks another template.
TEMPLATE ?= template.yaml
.PHONY: invoke
invoke: node_modules
	@test -n "$(FN)" -a -n "$(EVENT)" || { echo "usage: make invoke FN=<LogicalId> EVENT=<file>" >&2; exit 2; }
	@$(GO) run ./cmd/klt invoke --template "$(TEMPLATE)" "$(FN)" "$(EVENT)"
