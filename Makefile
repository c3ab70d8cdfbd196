# Everything a fresh machine needs comes from these targets; `make help` lists them.
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
INSTALLED := $(VENV)/.installed

.DEFAULT_GOAL := help
.PHONY: help setup system-deps demo test test-unit ui lint format bench chaos clean

help: ## Show this help
	@awk 'BEGIN {FS = ":.*## "} /^[a-z-]+:.*## / {printf "  \033[1m%-12s\033[0m %s\n", $$1, $$2}' $(MAKEFILE_LIST)

$(INSTALLED): pyproject.toml
	@command -v $(PYTHON) >/dev/null || { echo "$(PYTHON) not found: install Python 3.11 or run make PYTHON=python3"; exit 1; }
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	@touch $@

setup: $(INSTALLED) ## Create .venv, check Java 17+, resolve the JVM jars (once)
	$(BIN)/platform setup

demo: setup ## The main job: local Kafka, synthetic topics, every stream through Dagster, a summary
	$(BIN)/platform demo

system-deps: ## Install Chromium and Docker Compose for the tests (Debian packages) if missing
	@scripts/system-deps.sh

test: setup system-deps ## Everything the tests need, then the whole suite (unit, Kafka, Spark, Dagster, UI)
	$(BIN)/pytest

test-unit: $(INSTALLED) ## Only the fast tests that need no JVM
	$(BIN)/pytest -m "not spark and not kafka and not dagster"

ui: setup ## The Dagster UI (webserver + daemon) and the local Kafka broker
	$(BIN)/platform ui

lint: $(INSTALLED) ## ruff lint + format check, mypy
	$(BIN)/ruff check platform_pipelines tests benchmarks
	$(BIN)/ruff format --check platform_pipelines tests benchmarks
	$(BIN)/mypy platform_pipelines

format: $(INSTALLED) ## Apply ruff fixes and formatting
	$(BIN)/ruff check --fix platform_pipelines tests benchmarks
	$(BIN)/ruff format platform_pipelines tests benchmarks

bench: setup ## Sessionization benchmark (writes benchmarks/results/)
	$(BIN)/python benchmarks/bench_sessionization.py

chaos: setup ## Kill the running pipeline at random moments, 20 trials (writes benchmarks/results/)
	$(BIN)/platform chaos --trials 20 --output benchmarks/results/chaos.json

clean: ## Remove run-time state (.local: broker data, tables, checkpoints); keeps .venv
	rm -rf .local
