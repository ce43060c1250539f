# xrun — build, test and demo targets. `make help` lists them.
GO        ?= go
BIN       ?= bin
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS   := -s -w -X github.com/xrun-dev/xrun/internal/version.Version=$(VERSION)
CPU_BASE  ?= xrun/cpu-torch:bookworm

.PHONY: help setup build install test test-unit test-python cpu-base k8s-cluster-build demo fuzz lint gpu-host-bundle server-image

help: ## list the targets
	@grep -hE '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-12s %s\n", $$1, $$2}'

setup: ## install the Debian packages that building and testing need (quick when they are there)
	./scripts/setup.sh

build: ## build static xrun and xrun-runner into bin/
	@test -d "$$($(GO) env GOMODCACHE)/github.com/moby" || echo "build: the first build downloads the Go modules and compiles them: about 7 minutes on 2 cores"
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN)/xrun ./cmd/xrun
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN)/xrun-runner ./runner/cmd/xrun-runner

server-image: ## the xrun server's container image, xrun/server:latest (images/server, docs/server.md)
	LDFLAGS='$(LDFLAGS)' ./scripts/server-image.sh

install: ## install a static xrun into $GOBIN
	CGO_ENABLED=0 $(GO) install -trimpath -ldflags '$(LDFLAGS)' ./cmd/xrun

cpu-base: ## make the CPU base image (Debian + python3 + numpy + torch) without a registry
	./images/make-cpu-base.sh --torch --name $(CPU_BASE)

# The integration suites (build tag integration: the real Docker daemon,
# real Python workers, test daemons and sshd, the Kubernetes cluster, the
# end-to-end suites under client/e2e) run with the unit tests here.
# -p 1: they share one Docker daemon, and one suite removing its images
# must never race another's build on shared layers.
# A line per package as it ends and one at least every 30 s while one runs
# (scripts/testprogress); a failed package's whole output.
test: setup k8s-cluster-build cpu-base test-python ## the whole suite: vet, unit, integration against the real Docker daemon and cluster
	$(GO) vet -tags integration ./...
	@command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1 || echo "test: no NVIDIA GPU here: client/e2e/gpu runs nothing on this host (run it on a GPU box: docs/gpu-host.md)"
	$(GO) build -o $(BIN)/testprogress ./scripts/testprogress
	CGO_ENABLED=0 bash -o pipefail -c '$(GO) test -json -tags integration -p 1 -count=1 -timeout 75m ./... | $(BIN)/testprogress'

# The Kubernetes suite's cluster is built from source the first time (about
# 30 minutes on 2 cores, 5.3 GB in ~/.cache/xrun/k8s-cluster): it starts now,
# in the background, beside the CPU base and the other suites; the suite waits
# for it (build.sh holds a lock per cache) and a complete cache makes it a no-op.
k8s-cluster-build: ## start building the test cluster's binaries in the background (log .ci/logs/k8s-build.log)
	@mkdir -p .ci/logs
	@echo "k8s-cluster-build: in the background, log .ci/logs/k8s-build.log (the first time about 30 minutes on 2 cores, cached in ~/.cache/xrun/k8s-cluster)"
	@nohup ./scripts/k8s-cluster/build.sh > .ci/logs/k8s-build.log 2>&1 < /dev/null &

test-unit: test-python ## the unit tests alone (no Docker, no Python workers): about a minute
	$(GO) vet ./...
	$(GO) test -short -count=1 ./...

# The first python3 on PATH may be a pyenv or venv one without pytest and
# numpy while the system's (Debian's python3-pytest, python3-numpy) has them.
# Found when the recipe runs, after setup has installed them.
test-python: ## the Python harness's tests (pytest; torch tests run where torch is installed, always under CI)
	@py="$(PYTEST_PYTHON)"; for p in $${py:-python3 /usr/bin/python3}; do $$p -c 'import pytest, numpy' >/dev/null 2>&1 && { py=$$p; break; }; py=; done; \
	test -n "$$py" || { echo "test-python: no python3 with pytest and numpy; run scripts/setup.sh (python3-pytest, python3-numpy)" >&2; exit 1; }; \
	set -x; PYTHONDONTWRITEBYTECODE=1 $$py -m pytest -q -p no:cacheprovider runner/harness/pytests

fuzz: ## run each fuzz target for 30 s
	$(GO) test ./spec -run XXX -fuzz FuzzParse -fuzztime 30s
	$(GO) test ./result -run XXX -fuzz FuzzDecode -fuzztime 30s
	$(GO) test ./runner/harness -run XXX -fuzz FuzzDecodeEvent -fuzztime 30s

demo: setup build cpu-base ## the main job: submit the GLA experiment (GPU host: drop --cpu)
	$(BIN)/xrun submit --cpu experiments/039-gla-pingpong
	@echo ""
	@echo "demo: done. This xrun is $(BIN)/xrun; make install puts it on your PATH as xrun. Next:"
	@echo "  $(BIN)/xrun ps --all                             # the job you just ran, with its id"
	@echo "  $(BIN)/xrun results --plot figs ID               # its table again, and its figures in figs/"
	@echo "  $(BIN)/xrun init my-kernel && $(BIN)/xrun submit --cpu my-kernel   # an experiment of your own"
	@echo "  on a GPU box: $(BIN)/xrun submit experiments/039-gla-pingpong (docs/hosts.md for remote hosts)"

gpu-host-bundle: ## .gpu-host/: Docker + NVIDIA toolkit bundle, xrun and the GPU suite, for a GPU box without Docker (docs/gpu-host.md)
	./scripts/gpu-host/bundle.sh .gpu-host
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o .gpu-host/xrun ./cmd/xrun
	CGO_ENABLED=0 $(GO) test -tags integration -c -ldflags '-s -w' -o .gpu-host/gpu-e2e.test ./client/e2e/gpu
	xz -T0 --x86 --lzma2=preset=9e -f .gpu-host/xrun .gpu-host/gpu-e2e.test
