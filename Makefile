# ccbench — the two commands a new user needs are `make demo` and `make test` (see README).
SHELL := /bin/bash
VENV := .venv
PY := $(VENV)/bin/python
CCBENCH := $(VENV)/bin/ccbench
EXAMPLE := schemas/examples/dumbbell-reno-vs-cubic.yaml

SEEDS ?= 000 001 002 003 004

.PHONY: install lock agents demo reproduce test test-python test-rust lint schemas images test-helm test-compose-file test-compose bench-orchestration bench-link bench-analysis bench-report bench-bpf bench-userspace bench-hosts bench-chaos bench-scale bench-campaigns bench-plots bench-conformance bench-runcost bench-throughput

install:
	scripts/install.sh

# Pin the Python packages anew (constraints.txt) at PyPI's newest versions; then `make test`.
lock:
	scripts/lock.sh

# Install everything, start the embedded stack, run the example end to end, print its report.
demo: install
	$(CCBENCH) up --detach
	rc=0; $(CCBENCH) submit $(EXAMPLE) --wait || rc=$$?; $(CCBENCH) down; exit $$rc

# The seeds' headline experiments at the papers' own parameters, paper against measured per
# figure (docs/reproductions.md). Hours: `ccbench reproduce SEED --dry-run` shows each seed's
# runs and emulated time. One seed at a time, on the stack CCBENCH_API_URL (or `ccbench up`)
# names, else on an embedded stack started for it. SEEDS="002 003" for some, QUICK=1 for the
# quick variants.
reproduce:
	@started=0; \
	if ! $(CCBENCH) list --page-size 1 >/dev/null 2>&1; then $(CCBENCH) up --detach && started=1; fi; \
	rc=0; for seed in $(SEEDS); do \
	  $(CCBENCH) reproduce $$seed $(if $(QUICK),--quick) --wait || rc=$$?; \
	done; \
	if [ $$started = 1 ]; then $(CCBENCH) down; fi; exit $$rc

# The whole test suite. pytest exits 5 when it collected no test: that fails too.
test: lint test-rust test-python

# One test at a time: the agents' tests run real flows in namespaces and hold them to their
# rates (a 2 s CBR flow to 1%), which a concurrent test's flows on the same 2 CPUs spoiled in
# CI (7.50 of 8 Mbit/s, 2026-12-07). About 20 s more than in parallel.
test-rust:
	cd agents && cargo test --release --locked -- --test-threads=1

# The tests run the built agents and BPF objects: rebuild what changed first (a checkout that
# moved since the last install would otherwise test stale controllers).
test-python: agents
	$(PY) -m pytest -v --durations=15

agents:
	cd agents && cargo build --release --locked -q
	if [ -e /sys/kernel/btf/vmlinux ]; then $(MAKE) -s -C agents/kernel; fi

lint:
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy schemas ccbench api workers cli scheduler
	$(VENV)/bin/lint-imports
	$(VENV)/bin/ansible-lint -q --offline --profile production playbooks/
	cd agents && cargo clippy --release --locked --all-targets -- -D warnings
	cd agents && cargo fmt --check

# Regenerate the committed files generated from the Pydantic models: the JSON Schema files, the
# BPF tunables' defaults (agents/kernel/bpf/ccb_defaults.h) and the userspace transport's
# (agents/ccbench-transport/src/defaults.rs).
schemas:
	$(PY) -m schemas.generate

# Container images (podman; base image from Debian's packages where no registry is reachable):
# ccbench/api, ccbench/worker, ccbench/postgres, ccbench/redis. See README "Compose".
images:
	containers/build.sh

# The Helm chart, offline: lint, template, Kubernetes schemas, assertions (also in `make test`;
# builds helm from the Go module proxy into ~/.cache/ccbench-tools on first use).
test-helm:
	$(PY) -m pytest -v tests/deploy/test_helm.py

# docker-compose.yml validated as Docker Compose reads it (also in `make test`).
test-compose-file:
	$(PY) -m pytest -v tests/deploy/test_compose_file.py

# The compose stack for real (root, podman-compose): images, up, the example, psql, down.
test-compose:
	CCBENCH_TEST_COMPOSE=1 $(PY) -m pytest -v -s --durations=5 tests/deploy/test_compose.py

bench-orchestration:
	$(PY) -m bench.orchestration

bench-link:
	$(PY) -m bench.link

bench-analysis:
	$(PY) -m bench.analysis

bench-report:
	$(PY) -m bench.report

bench-bpf:
	$(PY) -m bench.bpf

bench-userspace:
	$(PY) -m bench.userspace

bench-hosts:
	$(PY) -m bench.hosts

bench-chaos:
	$(PY) -m bench.chaos

bench-campaigns:
	$(PY) -m bench.campaigns

bench-scale:
	$(PY) -m bench.scale

bench-plots:
	$(PY) -m bench.plots

bench-conformance:
	$(PY) -m bench.conformance

bench-runcost:
	$(PY) -m bench.runcost

bench-throughput:
	$(PY) -m bench.throughput
