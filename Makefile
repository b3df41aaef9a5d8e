# Two commands for a fresh machine: `make run` (the demo workflow) and `make test`.
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
CORES ?= 4

.PHONY: setup run test lint clean

$(STAMP): pyproject.toml requirements.lock
	test -x $(BIN)/python || python3.11 -m venv $(VENV) || python3 -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -r requirements.lock
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --no-deps -e .
	touch $(STAMP)

setup: $(STAMP)

run: setup
	$(BIN)/snakemake --cores $(CORES)

test: setup
	$(BIN)/python -m pytest -q --durations=10  # the slowest tests: CI must stay under 40 min

lint: setup
	$(BIN)/snakemake --lint
	$(BIN)/snakefmt --check workflow/Snakefile workflow/rules
	$(BIN)/ruff check .
	$(BIN)/mypy

clean:
	rm -rf results .snakemake
