"""TREC and Parquet runs and qrels in and out: validated with file and line, ordered as trec_eval orders them.

TREC qrels: `qid iter docno grade` (iter ignored). TREC runs: `qid Q0 docno rank score tag`; trec_eval ignores
the rank column and orders each question by score desc, then docno desc, and so do we. A run we write carries
scores derived from our ranks (strictly decreasing), so trec_eval scores exactly our order, ties included.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from rankbench.errors import InputError
from rankbench.io.files import write_text
from rankbench.io.qrels import check_grades
from rankbench.io.runs import RUN_COLUMNS, order_by_trec_rule

FORMATS = ("trec", "parquet")


def file_format(path: str | Path) -> str:
    """`parquet` for a .parquet file, `trec` for anything else (TREC files have no fixed extension)."""
    return "parquet" if Path(path).suffix.lower() == ".parquet" else "trec"


def _fields(path: Path, expected: int, layout: str) -> Iterator[tuple[int, list[str]]]:
    """(line number, whitespace-separated fields) of each non-blank line; a wrong field count is an InputError."""
    try:
        raw = Path(path).read_bytes()
    except OSError as error:
        raise InputError(path, None, f"cannot be read ({error.strerror})", "Check the path.") from None
    for number, line in enumerate(raw.removeprefix(b"\xef\xbb\xbf").split(b"\n"), start=1):
        try:
            fields = line.decode("utf-8").split()
        except UnicodeDecodeError as error:
            raise InputError(path, f"line {number}", f"is not valid UTF-8 (byte {error.start})",
                             "Save the file as UTF-8.") from None
        if not fields:
            continue
        if len(fields) != expected:
            raise InputError(path, f"line {number}", f"has {len(fields)} fields, expected {expected}",
                             f"Each line must read `{layout}` (whitespace-separated).")
        yield number, fields


def _first_repeat(frame: pd.DataFrame, columns: list[str]) -> tuple[int, int] | None:
    """Positions (first, second) of the first row repeating an earlier row's `columns` values, else None."""
    repeats = frame.duplicated(columns, keep="first").to_numpy()
    if not repeats.any():
        return None
    second = int(np.flatnonzero(repeats)[0])
    same = (frame[columns] == frame.iloc[second][columns]).all(axis=1).to_numpy()
    return int(np.flatnonzero(same)[0]), second


def _two(where: Sequence[str], first: int, second: int) -> str:
    """'lines 3 and 9' from ['line 3', ..., 'line 9'] (or 'rows …')."""
    kind, a = where[first].split(" ", 1)
    return f"{kind}s {a} and {where[second].split(' ', 1)[1]}"


def check_qrels(qrels: pd.DataFrame, path: str | Path, where: Sequence[str]) -> pd.DataFrame:
    """Grades are integers (check_grades, shared with the dataset loaders) and one (qid, item_id) has one grade;
    exact repeats are dropped.

    ``where[i]`` names row i in messages (e.g. "line 12" or "row 3").
    """
    named = [f"{w} (question {q!r}, id {i!r})" for w, q, i in zip(where, qrels["qid"], qrels["item_id"])]
    qrels = qrels.assign(grade=check_grades(qrels["grade"].tolist(), path, named)).reset_index(drop=True)
    distinct = qrels.drop_duplicates(["qid", "item_id", "grade"])
    pair = _first_repeat(distinct, ["qid", "item_id"])
    if pair is not None:
        first, second = (distinct.index[i] for i in pair)
        raise InputError(path, _two(where, first, second),
                         f"question {qrels['qid'][first]!r}, id {qrels['item_id'][first]!r} is graded "
                         f"{qrels['grade'][first]} and {qrels['grade'][second]}", "Keep one grade per question and id.")
    return distinct.reset_index(drop=True)


def check_run(run: pd.DataFrame, path: str | Path, where: Sequence[str], id_column: str) -> None:
    """Scores are finite numbers and no question lists an id twice; ``where[i]`` names row i in messages."""
    score = pd.to_numeric(run["score"], errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)
    bad = ~np.isfinite(score)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise InputError(path, f"{where[i]} (question {run['qid'].iloc[i]!r}, id {run[id_column].iloc[i]!r})",
                         f"score {run['score'].iloc[i]!r} is not a finite number", "Give every result a numeric score.")
    pair = _first_repeat(run.reset_index(drop=True), ["qid", id_column])
    if pair is not None:
        first, second = pair
        raise InputError(path, _two(where, first, second),
                         f"question {run['qid'].iloc[first]!r} lists id {run[id_column].iloc[first]!r} twice",
                         "A ranked list names each id once; remove the repeat.")


def read_trec_qrels(path: str | Path) -> pd.DataFrame:
    """A TREC qrels file as qid, item_id, grade (validated by check_qrels, errors naming the line)."""
    path = Path(path)
    rows = [(n, f[0], f[2], f[3]) for n, f in _fields(path, 4, "qid iteration docno grade")]
    frame = pd.DataFrame(rows, columns=["line", "qid", "item_id", "grade"])
    return check_qrels(frame[["qid", "item_id", "grade"]], path, [f"line {n}" for n in frame["line"]])


def read_trec_run(path: str | Path) -> pd.DataFrame:
    """A TREC run as RUN_COLUMNS (chunk_id = doc_id = docno), each question in trec_eval's order, ranks from 1."""
    path = Path(path)
    rows = [(n, f[0], f[2], f[4]) for n, f in _fields(path, 6, "qid Q0 docno rank score tag")]
    frame = pd.DataFrame(rows, columns=["line", "qid", "doc_id", "score"])
    check_run(frame, path, [f"line {n}" for n in frame["line"]], "doc_id")
    frame = frame.assign(score=frame["score"].astype(np.float64), chunk_id=frame["doc_id"], rank=0)
    return order_by_trec_rule(frame[RUN_COLUMNS], id_column="doc_id")


def read_parquet_run(path: str | Path) -> pd.DataFrame:
    """A Parquet run as RUN_COLUMNS: needs qid, doc_id, score; chunk_id defaults to doc_id; without a rank
    column each question is ordered by trec_eval's rule, with one by rank (renumbered from 1)."""
    path = Path(path)
    try:
        frame = pd.read_parquet(path)
    except (OSError, ValueError) as error:
        raise InputError(path, None, f"is not a readable Parquet file ({error})", "Check the path.") from None
    missing = sorted({"qid", "doc_id", "score"} - set(frame.columns))
    if missing:
        raise InputError(path, None, f"lacks column(s) {missing}",
                         "A Parquet run needs qid, doc_id, score (and optionally chunk_id, rank).")
    frame = frame.reset_index(drop=True)
    if "chunk_id" not in frame:
        frame = frame.assign(chunk_id=frame["doc_id"])
    frame = frame.assign(qid=frame["qid"].astype(str), doc_id=frame["doc_id"].astype(str),
                         chunk_id=frame["chunk_id"].astype(str))
    check_run(frame, path, [f"row {i + 1}" for i in range(len(frame))], "chunk_id")
    frame = frame.assign(score=pd.to_numeric(frame["score"]).astype(np.float64))
    if "rank" not in frame:
        return order_by_trec_rule(frame.assign(rank=0)[RUN_COLUMNS])
    ordered = frame.sort_values(["qid", "rank"], kind="stable")
    return ordered.assign(rank=ordered.groupby("qid").cumcount() + 1)[RUN_COLUMNS].reset_index(drop=True)


def read_run(path: str | Path, fmt: str | None = None) -> pd.DataFrame:
    """A TREC or Parquet run (format from the extension unless given) as RUN_COLUMNS."""
    fmt = fmt or file_format(path)
    return read_parquet_run(path) if fmt == "parquet" else read_trec_run(path)


def read_qrels(path: str | Path, grain: str = "document") -> pd.DataFrame:
    """TREC qrels, or Parquet qrels (qid, item_id or doc_id, grade; rows of other grains dropped when it has
    a grain column, as the workflow's qrels do), as validated qid, item_id, grade; qrels holding none raise."""
    if file_format(path) == "trec":
        qrels = read_trec_qrels(path)
        if qrels.empty:
            raise InputError(path, None, "holds no judgement", "Each line must read `qid iteration docno grade`.")
        return qrels
    path = Path(path)
    try:
        frame = pd.read_parquet(path)
    except (OSError, ValueError) as error:
        raise InputError(path, None, f"is not a readable Parquet file ({error})", "Check the path.") from None
    if "item_id" not in frame and "doc_id" in frame:
        frame = frame.rename(columns={"doc_id": "item_id"})
    missing = sorted({"qid", "item_id", "grade"} - set(frame.columns))
    if missing:
        raise InputError(path, None, f"lacks column(s) {missing}",
                         "Parquet qrels need qid, item_id (or doc_id), grade.")
    frame = frame.reset_index(drop=True)
    where = [f"row {i + 1}" for i in range(len(frame))]
    if "grain" in frame:
        keep = (frame["grain"] == grain).to_numpy()
        frame, where = frame[keep], [w for w, k in zip(where, keep) if k]
    if frame.empty:
        raise InputError(path, None, "holds no judgement" + (f" at {grain} grain" if "grain" in frame else ""),
                         "Give qrels with one row per judged (qid, item_id).")
    frame = frame.assign(qid=frame["qid"].astype(str), item_id=frame["item_id"].astype(str))
    return check_qrels(frame[["qid", "item_id", "grade"]], path, where)


def trec_run_text(run: pd.DataFrame, tag: str, id_column: str = "chunk_id") -> str:
    """A run as TREC lines in rank order, with scores depth + 1 - rank (strictly decreasing within a question)."""
    ordered = run.sort_values(["qid", "rank"], kind="stable")
    for column in ("qid", id_column):
        spaced = ordered[column].astype(str).str.contains(r"\s", regex=True).to_numpy()
        if spaced.any():
            value = ordered[column].iloc[int(np.flatnonzero(spaced)[0])]
            raise InputError(None, f"{column} {value!r}", "contains whitespace, which the TREC format cannot hold",
                             "Use ids without spaces.")
    depth = int(ordered["rank"].max()) if len(ordered) else 0
    scores = (depth + 1 - ordered["rank"].astype(np.int64)).astype(str)
    lines = ordered["qid"].astype(str) + " Q0 " + ordered[id_column].astype(str) + " " + \
        ordered["rank"].astype(str) + " " + scores + " " + tag
    return "".join(line + "\n" for line in lines)


def write_trec_run(run: pd.DataFrame, path: str | Path, tag: str, id_column: str = "chunk_id") -> None:
    """Write trec_run_text atomically."""
    write_text(trec_run_text(run, tag, id_column), path)
