"""String ids take a fast path (run ids probed against the labels' vocabulary, repeats found by fingerprints of the
Arrow buffers): it must give the tables and errors of dictionary-coded ids, whatever the ids look like."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from rankbench.evaluation import metrics
from rankbench.evaluation.metrics import per_query_metrics

KS = (1, 3, 10)


def case(ids: list[str]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Three questions ranking the same ids in different orders; labels on some of them and on ids never ranked."""
    rows = [(q, item, rank + 1, float(len(ids) - rank))
            for q, shift in (("q1", 0), ("q2", 1), ("q3", 2))
            for rank, item in enumerate(ids[shift:] + ids[:shift])]
    run = pd.DataFrame(rows, columns=["qid", "item_id", "rank", "score"])
    labels = [("q1", ids[0], 2), ("q1", ids[3], 1), ("q2", ids[1], 3), ("q2", "never-ranked", 1), ("q3", ids[-1], 1)]
    return run, pd.DataFrame(labels, columns=["qid", "item_id", "grade"])


# Ids of every length class the fingerprints read (under a word, whole words, up to the 64-byte limit, beyond it),
# many alike but for one byte in the middle.
ID_SETS = {
    "short": [f"d{i}" for i in range(12)],
    "one word": [f"doc{i:05d}" for i in range(12)],
    "alike in the middle": [f"PMID-{i:08d}-chunk-0003" for i in range(12)],
    "64 bytes": [f"{'x' * 30}{i:04d}{'y' * 30}" for i in range(12)],
    "over 64 bytes": [f"{'x' * 60}{i:04d}{'y' * 10}" for i in range(12)],
    "non-ascii": [f"é{i}ü" for i in range(12)],
}


@pytest.mark.parametrize("ids", ID_SETS.values(), ids=ID_SETS.keys())
def test_string_ids_give_the_table_of_coded_ids(ids: list[str]) -> None:
    run, qrels = case(ids)
    assert isinstance(run["item_id"].array, pd.arrays.ArrowStringArray)  # the fast path is the one tested
    coded = per_query_metrics(run.astype({"qid": "category", "item_id": "category"}),
                              qrels.astype({"qid": "category", "item_id": "category"}), KS)
    assert per_query_metrics(run, qrels, KS).equals(coded)
    sliced = pd.concat([run.iloc[:3], run], ignore_index=True).iloc[3:].reset_index(drop=True)  # Arrow offset != 0
    assert per_query_metrics(sliced, qrels, KS).equals(coded)


@pytest.mark.parametrize("ids", ID_SETS.values(), ids=ID_SETS.keys())
def test_an_unlabelled_id_listed_twice_is_named(ids: list[str]) -> None:
    run, qrels = case(ids)
    twice = run.iloc[[5]].assign(rank=len(ids) * 3 + 1)  # q1's 6th id, which no label names, again at the end
    with pytest.raises(ValueError, match=rf"twice: question 'q1', item '{ids[5]}'"):
        per_query_metrics(pd.concat([run, twice], ignore_index=True), qrels, KS)


@pytest.mark.parametrize("fingerprint", ("constant", "length"))
def test_equal_fingerprints_of_different_ids_are_no_match_and_no_repeat(monkeypatch: pytest.MonkeyPatch,
                                                                       fingerprint: str) -> None:
    """Fingerprint collisions (forced: one for every id, or the id's length) are checked on the ids: labels are
    matched exactly, no repeat is reported, and a real repeat still is."""
    ids = [f"doc{i}" for i in range(12)] + [f"other{i}" for i in range(3)]
    run, qrels = case(ids)
    expected = per_query_metrics(run, qrels, KS)
    forced = {"constant": lambda strings: np.zeros(len(strings), dtype=np.int64),
              "length": lambda strings: strings.str.len().to_numpy(dtype=np.int64)}[fingerprint]
    monkeypatch.setattr(metrics, "_fingerprints", forced)
    assert per_query_metrics(run, qrels, KS).equals(expected)
    twice = run.iloc[[5]].assign(rank=len(ids) * 3 + 1)
    with pytest.raises(ValueError, match=rf"twice: question 'q1', item '{ids[5]}'"):
        per_query_metrics(pd.concat([run, twice], ignore_index=True), qrels, KS)


@pytest.mark.parametrize("buckets", ("low bits alike", "one bucket"))
def test_labels_are_found_whatever_bucket_their_fingerprints_fall_in(monkeypatch: pytest.MonkeyPatch,
                                                                     buckets: str) -> None:
    """The label lookup probes only run rows whose fingerprint's bucket (its low bits) a label fills: with every
    fingerprint in one bucket (low bits cleared, or a single bucket) every row is a candidate, and the table is the
    one of coded ids."""
    ids = [f"doc{i:05d}" for i in range(40)]
    run, qrels = case(ids)
    coded = per_query_metrics(run.astype({"qid": "category", "item_id": "category"}),
                              qrels.astype({"qid": "category", "item_id": "category"}), KS)
    if buckets == "low bits alike":
        real = metrics._fingerprints
        monkeypatch.setattr(metrics, "_fingerprints", lambda strings: real(strings) & np.int64(~0xFFFFFFF))
    else:
        monkeypatch.setattr(metrics, "_bucket_count", lambda n_labels: 1)
    assert per_query_metrics(run, qrels, KS).equals(coded)
