# Joist's front door. `make demo` and `make test` are what a newcomer runs.
SHELL := /bin/bash
GO    ?= go
FUNCTIONS := provisioner binder reaper interruption installer
TOOLS_DIR := $(CURDIR)/bin/tools
K8S_VERSION := v1.37.2
K8S_LDFLAGS := -X k8s.io/component-base/version.gitVersion=$(K8S_VERSION) -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=37
LAMBDA_FLAGS := -tags lambda.norpc -trimpath -ldflags "-s -w"

.PHONY: all build build-lambda build-host tools test test-unit demo demo-interruption bench bench-karpenter bench-scale lint synth clean

all: build

## build: every function as a bootstrap (linux/arm64 for Lambda, and for this host) and the CLIs
build: build-lambda build-host
	$(GO) build -o bin/joist ./cmd/joist
	$(GO) build -o bin/forwarder ./cmd/forwarder

build-lambda:
	@for f in $(FUNCTIONS); do \
	  echo "bootstrap $$f (linux/arm64)"; \
	  CGO_ENABLED=0 GOOS=linux GOARCH=arm64 $(GO) build $(LAMBDA_FLAGS) -o build/lambda/$$f/bootstrap ./functions/$$f || exit 1; \
	done

build-host:
	@for f in $(FUNCTIONS); do \
	  echo "bootstrap $$f (host)"; \
	  CGO_ENABLED=0 $(GO) build $(LAMBDA_FLAGS) -o build/host/$$f/bootstrap ./functions/$$f || exit 1; \
	done

## tools: the test ground's programs (kube-apiserver, etcd, kube-scheduler, kumo, aws-lambda-rie)
## from the tools module; a cold build takes ~10 minutes, a warm one a second.
## Each step prints a line with its rough time on a cold 2-core machine (the first build also
## downloads modules: "go: downloading ..." lines follow); warm, each takes about a second.
tools:
	@mkdir -p $(TOOLS_DIR)
	@echo "tools: kube-apiserver (cold: ~5-10 min, most of it downloading and compiling Kubernetes)"
	@cd tools && $(GO) build -ldflags "$(K8S_LDFLAGS)" -o $(TOOLS_DIR)/kube-apiserver k8s.io/kubernetes/cmd/kube-apiserver
	@echo "tools: kube-scheduler (cold: ~1-2 min after kube-apiserver)"
	@cd tools && $(GO) build -ldflags "$(K8S_LDFLAGS)" -o $(TOOLS_DIR)/kube-scheduler k8s.io/kubernetes/cmd/kube-scheduler
	@echo "tools: etcd (cold: ~1-2 min)"
	@cd tools && $(GO) build -o $(TOOLS_DIR)/etcd go.etcd.io/etcd/server/v3
	@echo "tools: kumo, the AWS emulator (cold: ~1-3 min)"
	@cd tools && $(GO) build -o $(TOOLS_DIR)/kumo github.com/sivchari/kumo/cmd/kumo
	@echo "tools: aws-lambda-rie (cold: ~30 s)"
	@cd tools && $(GO) build -o $(TOOLS_DIR)/aws-lambda-rie github.com/aws/aws-lambda-runtime-interface-emulator/cmd/aws-lambda-rie
	@echo "tools: done ($(TOOLS_DIR))"

## test: every test, heavy ones included (they fail rather than skip here)
test: tools lint
	@echo "test: every package of the product module (~15-25 min on 2 cores; the e2e scenarios are most of it)"
	JOIST_REQUIRE_TOOLS=1 JOIST_TOOLS=$(TOOLS_DIR) $(GO) test -count=1 -timeout 30m ./...
	@echo "test: the CDK module (~2-3 min)"
	cd infra && $(GO) test -count=1 -timeout 20m ./...

## test-unit: the fast tests only (heavy ones skip without the tools)
test-unit:
	$(GO) test ./...

## demo: the seed scenario end to end on the local test ground, narrated
demo: tools
	@echo "demo: building the narrator (cold: ~1-2 min; warm: seconds)"
	@$(GO) build -o bin/demo ./test/demo
	JOIST_TOOLS=$(TOOLS_DIR) bin/demo

## demo-interruption: a spot interruption on the local test ground, handled replacement-first, narrated
demo-interruption: tools
	@echo "demo: building the narrator (cold: ~1-2 min; warm: seconds)"
	@$(GO) build -o bin/demo ./test/demo
	JOIST_TOOLS=$(TOOLS_DIR) bin/demo -interruption

## bench: the simulator over ../shared/workloads as a table (nodes, $/h, bound, time), then over the generated
## workloads (pkg/scheduling/internal/workloadgen: every shape at 50 to 10,000 pods), then the Go benchmarks (every
## generated shape at 50 and 250 pods, three of them with type-label selectors at 250 and 2,000, and once at 50,000:
## minutes on the shapes needing thousands of nodes),
## then consolidation of the 1,732-node cluster (diverse-10k less 60 % of its pods) to the end, and its decision benchmark
bench:
	$(GO) run ./pkg/scheduling/internal/benchtable
	$(GO) test -run '^$$' -bench . -skip 'Solve50k' -benchmem ./pkg/scheduling/...
	$(GO) test -run '^$$' -bench 'Solve50k' -benchtime 1x -benchmem -timeout 90m ./pkg/scheduling/
	$(GO) test -count=1 -run 'TestConsolidationOfTheBenchmarkCluster$$' -v -bench 'ConsolidationDecision' -benchtime 5x ./pkg/disruption/

## bench-karpenter: Joist beside Karpenter v1.15.0's scheduler on the same cases, on this machine, in one run
## (docs/scheduling.md, "Beside Karpenter"): benchtable -dump writes every case (the shared workloads, then each
## generated shape at KARPENTER_SIZES) with the pools as NodePools and the instance types as Joist sees them;
## test/karpenter (a module of its own: Karpenter stays out of go.mod) solves each case with Karpenter and, in
## turns, with Joist (a `benchtable -case` process), KARPENTER_RUNS times, and prints one table with the fastest
## CPU times. Karpenter v1.15.0 needs Go 1.26.9: GOTOOLCHAIN=auto downloads it from the module proxy. Not part of
## `make test`: the first run downloads and builds Karpenter (~5-20 min on 2 cores); Karpenter itself takes
## minutes on the 2,000-pod shapes. KARPENTER_CASES (comma-separated, e.g. web-six-500,diverse-1k) narrows the run.
KARPENTER_DUMP  ?= $(CURDIR)/build/karpenter-cases
KARPENTER_SIZES ?= 50,500,2000
KARPENTER_RUNS  ?= 3
KARPENTER_CASES ?=
bench-karpenter:
	@echo "bench-karpenter: dumping the cases to $(KARPENTER_DUMP) (~125 MB for the default sizes)"
	@rm -rf $(KARPENTER_DUMP)
	$(GO) run ./pkg/scheduling/internal/benchtable -dump $(KARPENTER_DUMP) -sizes $(KARPENTER_SIZES)
	$(GO) build -o bin/benchtable ./pkg/scheduling/internal/benchtable
	@echo "bench-karpenter: building test/karpenter (GOTOOLCHAIN=auto fetches go1.26.9; cold: ~5-20 min, warm: seconds)"
	cd test/karpenter && GOTOOLCHAIN=auto $(GO) mod tidy -diff || { echo "test/karpenter/go.mod is not tidy: run (cd test/karpenter && GOTOOLCHAIN=auto go mod tidy)"; exit 1; }
	cd test/karpenter && GOTOOLCHAIN=auto $(GO) vet . && GOTOOLCHAIN=auto $(GO) test -count=1 . && GOTOOLCHAIN=auto $(GO) build -o $(CURDIR)/bin/karpenter-bench .
	bin/karpenter-bench -dump $(KARPENTER_DUMP) -joist $(CURDIR)/bin/benchtable -runs $(KARPENTER_RUNS) -cases "$(KARPENTER_CASES)"

## bench-scale: one provisioner pass on a real API server filled with N nodes (their instances in
## the EC2 simulator), M bound pods and K pending, each size in a fresh API server (test/scale,
## docs/scale.md); SCALE_SIZES overrides the sizes (nodes,pods,pending ...)
SCALE_SIZES ?= 500,10000,20 2000,50000,20 5000,100000,20
bench-scale: tools
	@echo "| nodes | bound pods | pending | pass | wall s | CPU s | API server CPU s | peak heap MB | peak RSS MB | allocated MB | API MB read (gzip) | requests | lists cache/etcd/fallback | launched | nominated | |"
	@echo "|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|---|"
	@for s in $(SCALE_SIZES); do \
	  JOIST_SCALE=$$s JOIST_REQUIRE_TOOLS=1 JOIST_TOOLS=$(TOOLS_DIR) $(GO) test -count=1 -timeout 60m -run '^$$' -bench 'ScalePass$$' -benchtime 1x ./test/scale/ | grep '^|' || exit 1; \
	done

## lint: gofmt, go vet, go mod tidy -diff (every module) and staticcheck (pinned; staticcheck.conf
## names the checks). The first run builds staticcheck (~2 min on a cold machine), later runs take seconds.
STATICCHECK := honnef.co/go/tools/cmd/staticcheck@v0.8.2
lint:
	@echo "lint: gofmt"
	@out=$$(gofmt -l $$(git ls-files '*.go' | grep -v '^tools/')); if [ -n "$$out" ]; then echo "not gofmt'ed:"; echo "$$out"; exit 1; fi
	@echo "lint: go mod tidy -diff (., infra, tools)"
	@$(GO) mod tidy -diff || { echo "go.mod/go.sum are not tidy: run go mod tidy"; exit 1; }
	@cd infra && $(GO) mod tidy -diff || { echo "infra/go.mod is not tidy: run (cd infra && go mod tidy)"; exit 1; }
	@cd tools && $(GO) mod tidy -diff || { echo "tools/go.mod is not tidy: run (cd tools && go mod tidy)"; exit 1; }
	@echo "lint: go vet (., infra)"
	$(GO) vet ./...
	cd infra && $(GO) vet ./...
	@echo "lint: staticcheck (., infra; first run builds it, ~2 min)"
	$(GO) run $(STATICCHECK) ./...
	cd infra && $(GO) run $(STATICCHECK) ./...

## synth: the CDK template, offline
synth: build-lambda
	cd infra && $(GO) run . 

clean:
	rm -rf bin build cdk.out infra/cdk.out
