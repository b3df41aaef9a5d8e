"""The Anserini jar and JDK the lucene tests run: skip with the reason where this machine has none, fail instead
where CI asks for them (RANKBENCH_REQUIRE_LUCENE=1, set by `make test` after `make lucene-jar`)."""

from __future__ import annotations

import os

import pytest
from workflow_helpers import REPO

from rankbench.retrieval.lucene import JAR_ENV, Engine, EngineError, find_engine

# Where `make lucene-jar` puts the jar it takes out of pyserini's source distribution.
DEFAULT_JAR = REPO / ".cache" / "anserini" / "anserini-1.7.1-fatjar.jar"


def lucene_engine() -> Engine:
    """The engine the tests run (RANKBENCH_ANSERINI_JAR defaults to `make lucene-jar`'s jar, for the workflow's
    subprocesses too), or a skip (a failure in CI) saying what is missing."""
    if not os.environ.get(JAR_ENV) and DEFAULT_JAR.is_file():
        os.environ[JAR_ENV] = str(DEFAULT_JAR)
    try:
        return find_engine({})
    except EngineError as error:
        reason = f"no Anserini engine here ({error}); run `make lucene-jar`"
        if os.environ.get("RANKBENCH_REQUIRE_LUCENE"):
            pytest.fail(reason)
        pytest.skip(reason)
