# kafkalambda toolkit. `make test` is what CI runs (.ci/run); every target works on a fresh
# machine with Go 1.26 and network access to the Go module proxy.

GO        ?= go
PKGS      ?= ./...
BENCHTIME ?= 1s
COUNT     ?= 10
FUZZTIME  ?= 15s

.PHONY: all test unit lint fmt bench fuzz tools clean

all: test

## test: everything CI checks: formatting, vet, staticcheck, and every test (fuzz seeds included).
test: lint unit

unit:
	$(GO) test -count=1 $(PKGS)

## lint: gofmt, go vet and staticcheck (pinned in go.mod as a tool).
lint:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)
	$(GO) tool staticcheck $(PKGS)

fmt:
	gofmt -w $$(git ls-files '*.go')

## bench: every benchmark beside its alternative, summarised by benchstat.
bench:
	scripts/bench -count $(COUNT) -benchtime $(BENCHTIME) $(PKGS)

## fuzz: a short run of every fuzz target (FUZZTIME each).
fuzz:
	@set -e; for f in $$(grep -rl --include='*_test.go' '^func Fuzz' .); do \
	  dir=$$(dirname $$f); \
	  for t in $$(sed -n 's/^func \(Fuzz[A-Za-z0-9_]*\)(.*/\1/p' $$f); do \
	    echo "== $$dir $$t"; \
	    $(GO) test -run '^$$' -fuzz "^$$t\$$" -fuzztime $(FUZZTIME) $$dir; \
	  done; \
	done

## tools: download the modules and the pinned tools (staticcheck, benchstat).
tools:
	$(GO) mod download
	$(GO) build -o /dev/null honnef.co/go/tools/cmd/staticcheck golang.org/x/perf/cmd/benchstat

clean:
	rm -f bench.txt
