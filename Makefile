# Two commands for a fresh machine: `make run` (the demo workflow) and `make test`.
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
CORES ?= 4

.PHONY: setup run test lint wheel-check clean

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
	for test in .test/*/; do $(BIN)/snakemake --directory $$test --lint && \
		$(BIN)/snakemake --directory $$test --dry-run --quiet rules || exit 1; done
	$(BIN)/snakefmt --check workflow/Snakefile workflow/rules
	$(BIN)/ruff check .
	$(BIN)/mypy
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --quiet --site-dir site

# The wheel installed alone (the core) into fresh venvs on Python 3.10, 3.12 and 3.13: the core tests there.
wheel-check: setup
	scripts/check-wheel.sh

clean:
	rm -rf results .snakemake site .test/*/results .test/*/.snakemake
