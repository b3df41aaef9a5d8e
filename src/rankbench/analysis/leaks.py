"""Leaks in a ranked list: staff-only chunks in a public question's top k, and chunks not in force at the
question's `as_of` in its top k. Counted for every method, filtered or not, so filters can be judged."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from rankbench.corpus.filters import staff_only
from rankbench.corpus.validity import in_force

LEAK_COLUMNS = ["qid", "leak", "k", "count"]
SUMMARY_COLUMNS = ["method", "leak", "k", "mean", "n_with_leak", "n_questions"]
# the chunk columns leak_flags reads (a job reads only these, not the corpus's text)
LEAK_CHUNK_COLUMNS = ["chunk_id", "audience", "valid_from", "valid_to"]


def leak_flags(run: pd.DataFrame, questions: pd.DataFrame, chunks: pd.DataFrame) -> pd.DataFrame:
    """The run's qid, rank, chunk_id with a boolean per leak: `staff` (a staff-only chunk for a public question),
    `outdated` (a chunk not in force at the question's as_of); rows of questions not in `questions` are dropped."""
    asked = questions[["qid", "audience", "as_of"]].rename(columns={"audience": "q_audience"})
    # Only staff-only or dated chunks can leak: the join skips the others (every chunk of a BEIR corpus).
    can_leak = staff_only(chunks) | chunks["valid_from"].notna().to_numpy() | chunks["valid_to"].notna().to_numpy()
    ranked = run[["qid", "rank", "chunk_id"]].merge(
        chunks.loc[can_leak, LEAK_CHUNK_COLUMNS], on="chunk_id", how="left").merge(asked, on="qid")
    outdated = np.zeros(len(ranked), dtype=bool)
    dated = ranked["as_of"].notna().to_numpy()
    if dated.any():  # columns without any date (BEIR) may be all-null floats: compare dated rows only, as objects
        when = ranked.loc[dated, ["valid_from", "valid_to", "as_of"]].astype(object)
        outdated[dated] = ~in_force(when["valid_from"], when["valid_to"], when["as_of"]).to_numpy(dtype=bool)
    staff = (ranked["q_audience"].fillna("public") == "public").to_numpy() & staff_only(ranked)
    return ranked[["qid", "rank", "chunk_id"]].assign(staff=staff, outdated=outdated)


def leak_counts(run: pd.DataFrame, questions: pd.DataFrame, chunks: pd.DataFrame, ks: Sequence[int]) -> pd.DataFrame:
    """Per question and k: `staff` (public questions only) and `outdated` (questions with an as_of only) counts.

    A question the run does not answer counts 0; a leak type that does not apply to a question gives no row.
    """
    asked = questions[["qid", "audience", "as_of"]].rename(columns={"audience": "q_audience"})
    ranked = leak_flags(run, questions, chunks)
    flags = {leak: ranked[leak].to_numpy() for leak in ("staff", "outdated")}
    applies = {"staff": asked["q_audience"].fillna("public") == "public", "outdated": asked["as_of"].notna()}
    frames = []
    for leak in ("staff", "outdated"):
        qids = asked.loc[applies[leak], "qid"].to_numpy()
        for k in sorted(set(ks)):
            top = ranked["rank"].to_numpy() <= k
            counts = pd.Series(flags[leak] & top, index=ranked["qid"]).groupby(level=0).sum()
            frames.append(pd.DataFrame({"qid": qids, "leak": leak, "k": k,
                                        "count": counts.reindex(qids, fill_value=0).to_numpy(dtype=np.int64)}))
    if not frames:
        return pd.DataFrame(columns=LEAK_COLUMNS)
    return pd.concat(frames, ignore_index=True)[LEAK_COLUMNS]


def leak_summary(per_method: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
    """Method × leak × k: mean leaked chunks per question, questions with at least one leak, questions counted."""
    rows = []
    for method in sorted(per_method):
        for (leak, k), group in per_method[method].groupby(["leak", "k"], sort=True):
            rows.append((method, leak, int(k), float(group["count"].mean()), int((group["count"] > 0).sum()),
                         len(group)))
    return pd.DataFrame(rows, columns=SUMMARY_COLUMNS)
