# Everything a fresh machine needs comes from these targets; `make help` lists them.
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
INSTALLED := $(VENV)/.installed

.DEFAULT_GOAL := help
.PHONY: help setup system-deps demo test test-unit test-cluster ui postgres cluster static docs lint audit format bench bench-quick bench-reaction bench-realtime-probe bench-codegen bench-state-show health-eval chaos clean

help: ## Show this help
	@awk 'BEGIN {FS = ":.*## "} /^[a-z-]+:.*## / {printf "  \033[1m%-12s\033[0m %s\n", $$1, $$2}' $(MAKEFILE_LIST)

$(INSTALLED): pyproject.toml
	@command -v $(PYTHON) >/dev/null || { echo "$(PYTHON) not found: install Python 3.11 or run make PYTHON=python3"; exit 1; }
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip setuptools==80.9.0  # venv ships setuptools 65.5 (3 advisories, fixed by 78.1.1)
	$(BIN)/pip install --quiet -e '.[dev]'
	@touch $@

setup: $(INSTALLED) ## Create .venv, check Java 17+, resolve the JVM jars, compile the sessionizer (once)
	$(BIN)/platform setup

demo: setup ## The main job: local Kafka, synthetic topics, every stream through Dagster, a summary
	$(BIN)/platform demo

system-deps: ## Install Chromium, Docker Compose, nginx, openssl and PostgreSQL for the tests (Debian packages) if missing
	@scripts/system-deps.sh

# The suite runs in two xdist workers: most of a Spark, Kafka or Dagster test waits for a trigger,
# a tick or a run (the whole suite: a little over 20 min with two workers on 2 cores, measured
# before the Spark-cluster tests joined it: they add a few minutes to one worker).
# TEST_WORKERS=0 runs it in one process.
TEST_WORKERS ?= 2

test: setup system-deps static docs ## Everything the tests need, the format/lint/type checks, the docs build, then the whole suite (unit, Kafka, Spark, Dagster, UI, the Spark cluster)
	$(BIN)/pytest --durations=25 $(if $(filter-out 0,$(TEST_WORKERS)),-n $(TEST_WORKERS) --dist loadgroup)

test-cluster: setup ## Only the tests on a real Spark standalone cluster, an executor kill included (also part of make test)
	$(BIN)/pytest -m cluster

# Every test that needs more than Python declares it with a marker (pyproject.toml lists them).
NEEDS_MORE := not spark and not kafka and not dagster and not ui and not cluster and not s3 and not postgres and not compose

test-unit: $(INSTALLED) ## Only the fast tests: no JVM, broker, database or other program (~30 s)
	$(BIN)/pytest -m "$(NEEDS_MORE)"

ui: setup ## The Dagster UI (webserver + daemon) and the local Kafka broker
	$(BIN)/platform ui

cluster: setup ## A local Spark standalone cluster (master + 2 workers on 127.0.0.1); prints the PLATFORM_SPARK_MASTER to export
	$(BIN)/platform cluster start

postgres: $(INSTALLED) system-deps ## A local PostgreSQL for Dagster's storage (.local/postgres); then: eval "$$(.venv/bin/platform postgres env)"
	$(BIN)/platform postgres start

CODE := platform_pipelines tests benchmarks user_streams docs

static: $(INSTALLED) ## The tools own the form: ruff format --check, ruff check, mypy (import layers: in the tests)
	$(BIN)/ruff format --check $(CODE)
	$(BIN)/ruff check $(CODE)
	$(BIN)/mypy platform_pipelines

docs: $(INSTALLED) ## Build the documentation site into site/ (strict: a broken link or anchor, or a setting missing from the reference, fails it)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict

lint: static ## static, then the dependency audit
	@$(MAKE) --no-print-directory audit

# pip-audit asks PyPI's JSON API (AUDIT_SERVICE=osv: the OSV database) about every package in
# .venv, one request per installed version.
# - An advisory not listed in .pip-audit-ignore (each listed one has its reason there): failure.
# - The service unreachable, or without data for some packages' versions: not a finding, so no
#   failure, but a warning saying how many packages were NOT audited (AUDIT_STRICT=1 fails
#   instead, for a machine that must audit everything).
# - Every package audited: pip-audit's own summary.
AUDIT_SERVICE ?= pypi
AUDIT_LOG := .local/pip-audit.log
AUDIT_IGNORED := $(shell grep -oE '^(PYSEC|GHSA|CVE)-[^ ]+' .pip-audit-ignore)

audit: $(INSTALLED) ## pip-audit of .venv against PyPI's advisories (exceptions: .pip-audit-ignore)
	@mkdir -p $(dir $(AUDIT_LOG))
	@$(BIN)/pip-audit --vulnerability-service $(AUDIT_SERVICE) --skip-editable --progress-spinner off \
	    $(addprefix --ignore-vuln ,$(AUDIT_IGNORED)) $(if $(AUDIT_STRICT),--strict) \
	    >$(AUDIT_LOG) 2>&1; status=$$?; \
	if grep -q '^Found [0-9]* known vulnerabilit' $(AUDIT_LOG); then cat $(AUDIT_LOG); exit 1; fi; \
	if [ $$status -ne 0 ]; then \
	  tail -n 2 $(AUDIT_LOG); \
	  echo "audit: NOT DONE, pip-audit stopped without a finding (log: $(AUDIT_LOG))"; \
	  exit $(if $(AUDIT_STRICT),1,0); \
	fi; \
	unaudited=$$(grep -c 'could not be audited' $(AUDIT_LOG)); \
	total=$$($(BIN)/pip list --exclude-editable --format=freeze | wc -l); \
	if [ $$unaudited -eq 0 ]; then grep -E '^No known vulnerabilities' $(AUDIT_LOG); else \
	  echo "audit: $(AUDIT_SERVICE) answered for $$((total - unaudited)) of $$total packages," \
	    "no known vulnerability in them; $$unaudited NOT AUDITED (no advisory data for" \
	    "their versions; list: $(AUDIT_LOG))"; \
	fi

format: $(INSTALLED) ## Apply ruff fixes and formatting
	$(BIN)/ruff check --fix $(CODE)
	$(BIN)/ruff format $(CODE)

bench: setup ## Benchmark suite: platform vs plain PySpark vs native; latency, scaling, restart (benchmarks/results/suite.json + PNG)
	$(BIN)/python benchmarks/suite.py

bench-reaction: setup ## Reaction time in continuous mode: alerts, the dedup path, stale services (benchmarks/results/reaction.json)
	$(BIN)/python benchmarks/bench_reaction.py

bench-realtime-probe: setup ## The alert as one query under Spark 4.3's Real-time Mode vs micro-batch (a separate venv; benchmarks/results/realtime-mode-probe.json)
	$(BIN)/python benchmarks/probe_realtime_mode.py

bench-codegen: setup ## How much a continuous run spends compiling generated code, and what it compiles again (benchmarks/results/codegen.json)
	$(BIN)/python benchmarks/bench_codegen.py

bench-state-show: setup ## `platform state show` against a bare JVM start, on the lakehouse `make demo` fills (benchmarks/results/state_show.json)
	$(BIN)/python benchmarks/bench_state_show.py

health-eval: $(INSTALLED) ## The health checks on 26 labelled scenarios (recorded traces, no JVM, ~10 s): the confusion matrix (benchmarks/results/health_eval.json)
	COLUMNS=$${COLUMNS:-160} $(BIN)/python benchmarks/health_eval/evaluate.py

bench-quick: setup ## The benchmark suite on tiny inputs (~4 min): a smoke run (benchmarks/results/suite-quick.*)
	$(BIN)/python benchmarks/suite.py --quick

chaos: setup ## Kill the running pipeline at random moments, 20 trials (writes benchmarks/results/)
	$(BIN)/platform chaos --trials 20 --output benchmarks/results/chaos.json

clean: ## Remove run-time state (.local: broker data, tables, checkpoints) and the built docs; keeps .venv
	rm -rf .local site
