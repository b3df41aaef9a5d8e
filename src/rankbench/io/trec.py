"""TREC and Parquet runs and qrels in and out: validated with file and line, ordered as trec_eval orders them.

TREC qrels: `qid iter docno grade` (iter ignored), or BEIR's qrels TSV (`query-id corpus-id score` under that
header). TREC runs: `qid Q0 docno rank score tag`. Either may be gzipped (known by its magic bytes). trec_eval
ignores the rank column and orders each question by score desc, then docno desc, and so do we. A run we write
carries the method's own scores at full precision, nudged only where trec_eval (which reads 32-bit scores) would
reorder them (trec_scores), so trec_eval, ranx, ir_measures and fusion over exported runs see our scores and our order.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeAlias

import numpy as np
import pandas as pd

from rankbench.errors import InputError
from rankbench.io.adapters import adapted_qrels, adapted_run
from rankbench.io.files import file_bytes, write_parquet, write_text
from rankbench.io.loaders import read_qrels_tsv
from rankbench.io.qrels import check_qrels, first_repeat, two_rows
from rankbench.io.ranked_lists import RUN_COLUMNS, collapse_to_documents, order_by_trec_rule

# What the readers accept: a file (TREC or Parquet), a DataFrame, pytrec_eval's / ranx's {qid: {id: value}}, and
# the other toolkits' objects io.adapters reads (ranx Qrels/Run, PyTerrier frames, ir_datasets record iterables).
RunSource: TypeAlias = str | Path | pd.DataFrame | Mapping[str, Mapping[str, float]] | Iterable[Any] | object
QrelsSource: TypeAlias = str | Path | pd.DataFrame | Mapping[str, Mapping[str, int]] | Iterable[Any] | object
_WHITESPACE = re.compile(r"\s")
BEIR_QRELS_HEADER = ("query-id", "corpus-id", "score")  # the first line of BEIR's qrels/<split>.tsv


def file_format(path: str | Path) -> str:
    """`parquet` for a .parquet file, `trec` for anything else (TREC files have no fixed extension)."""
    return "parquet" if Path(path).suffix.lower() == ".parquet" else "trec"


def _lines(path: Path) -> Iterator[tuple[int, list[str]]]:
    """(line number, whitespace-separated fields) of each non-blank line of a text file (gzipped or not)."""
    raw = file_bytes(path)
    for number, line in enumerate(raw.removeprefix(b"\xef\xbb\xbf").split(b"\n"), start=1):
        try:
            fields = line.decode("utf-8").split()
        except UnicodeDecodeError as error:
            raise InputError(path, f"line {number}", f"is not valid UTF-8 (byte {error.start})",
                             "Save the file as UTF-8.") from None
        if fields:
            yield number, fields


def _counted(path: Path, lines: Iterable[tuple[int, list[str]]], expected: int, layout: str
             ) -> Iterator[tuple[int, list[str]]]:
    """The lines, each checked to have ``expected`` fields; a wrong field count is an InputError."""
    for number, fields in lines:
        if len(fields) != expected:
            raise InputError(path, f"line {number}", f"has {len(fields)} fields, expected {expected}",
                             f"Each line must read `{layout}` (whitespace-separated).")
        yield number, fields


def _fields(path: Path, expected: int, layout: str) -> Iterator[tuple[int, list[str]]]:
    """(line number, fields) of each non-blank line, each holding ``expected`` fields (else an InputError)."""
    return _counted(path, _lines(path), expected, layout)


def check_run(run: pd.DataFrame, path: str | Path | None, where: Sequence[str], id_column: str) -> None:
    """Scores are finite numbers and no question lists an id twice; ``where[i]`` names row i in messages."""
    score = pd.to_numeric(run["score"], errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)
    bad = ~np.isfinite(score)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise InputError(path, f"{where[i]} (question {run['qid'].iloc[i]!r}, id {run[id_column].iloc[i]!r})",
                         f"score {run['score'].iloc[i]!r} is not a finite number", "Give every result a numeric score.")
    pair = first_repeat(run.reset_index(drop=True), ["qid", id_column])
    if pair is not None:
        first, second = pair
        raise InputError(path, two_rows(where, first, second),
                         f"question {run['qid'].iloc[first]!r} lists id {run[id_column].iloc[first]!r} twice",
                         "A ranked list names each id once; remove the repeat.")


def read_trec_qrels(path: str | Path) -> pd.DataFrame:
    """A TREC qrels file, or BEIR's qrels TSV (known by its header), as qid, item_id, grade (validated by
    check_qrels, errors naming the line)."""
    path = Path(path)
    lines = list(_lines(path))
    if lines and tuple(field.lower() for field in lines[0][1]) == BEIR_QRELS_HEADER:
        labels = read_qrels_tsv(path)
        return labels.rename(columns={"doc_id": "item_id"})[["qid", "item_id", "grade"]]
    rows = [(n, f[0], f[2], f[3]) for n, f in _counted(path, lines, 4, "qid iteration docno grade")]
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


def trec_run_tag(path: str | Path) -> str | None:
    """The run tag of a TREC run file: the last field of its last result line (as trec_eval takes it), None for a
    Parquet run or a file without results."""
    if file_format(path) == "parquet":
        return None
    tag = None
    for _, fields in _fields(Path(path), 6, "qid Q0 docno rank score tag"):
        tag = fields[5]
    return tag


def _read_parquet(path: str | Path) -> pd.DataFrame:
    """A Parquet file as a DataFrame; an unreadable one is an InputError."""
    try:
        return pd.read_parquet(path)
    except (OSError, ValueError) as error:
        raise InputError(path, None, f"is not a readable Parquet file ({error})", "Check the path.") from None


def _frame_from_mapping(nested: Mapping[str, Mapping[str, Any]], columns: list[str]) -> pd.DataFrame:
    """{qid: {id: value}} (pytrec_eval's and ranx's dicts) as a frame of the given three columns."""
    return pd.DataFrame([(qid, item, value) for qid, items in nested.items() for item, value in items.items()],
                        columns=columns)


def run_from_frame(frame: pd.DataFrame, source: str | Path | None = None) -> pd.DataFrame:
    """A run table as RUN_COLUMNS: needs qid, doc_id, score; chunk_id defaults to doc_id; without a rank
    column each question is ordered by trec_eval's rule, with one by rank (renumbered from 1). ``source`` names
    the table in messages."""
    missing = sorted({"qid", "doc_id", "score"} - set(frame.columns))
    if missing:
        raise InputError(source, None, f"lacks column(s) {missing}",
                         "A run table needs qid, doc_id, score (and optionally chunk_id, rank).")
    frame = frame.reset_index(drop=True)
    if "chunk_id" not in frame:
        frame = frame.assign(chunk_id=frame["doc_id"])
    frame = frame.assign(qid=frame["qid"].astype(str), doc_id=frame["doc_id"].astype(str),
                         chunk_id=frame["chunk_id"].astype(str))
    check_run(frame, source, [f"row {i + 1}" for i in range(len(frame))], "chunk_id")
    frame = frame.assign(score=pd.to_numeric(frame["score"]).astype(np.float64))
    if "rank" not in frame:
        return order_by_trec_rule(frame.assign(rank=0)[RUN_COLUMNS])
    ordered = frame.sort_values(["qid", "rank"], kind="stable")
    return ordered.assign(rank=ordered.groupby("qid").cumcount() + 1)[RUN_COLUMNS].reset_index(drop=True)


def read_parquet_run(path: str | Path) -> pd.DataFrame:
    """A Parquet run as RUN_COLUMNS (see run_from_frame)."""
    return run_from_frame(_read_parquet(path), Path(path))


def read_run(source: RunSource, fmt: str | None = None, name: str | None = None) -> pd.DataFrame:
    """A run as RUN_COLUMNS from a TREC or Parquet file (format from the extension unless given), a DataFrame
    (qid, doc_id, score, optionally chunk_id and rank) or a {qid: {doc_id: score}} dict; ``name`` names an
    in-memory run in messages; ranx Runs, PyTerrier frames and record iterables are read too (io.adapters)."""
    source = adapted_run(source, name or "the run")
    if isinstance(source, pd.DataFrame):
        return run_from_frame(source, name or "the run table")
    if isinstance(source, Mapping):
        return run_from_frame(_frame_from_mapping(source, ["qid", "doc_id", "score"]), name or "the run dict")
    fmt = fmt or file_format(source)
    return read_parquet_run(source) if fmt == "parquet" else read_trec_run(source)


def qrels_from_frame(frame: pd.DataFrame, source: str | Path | None = None, grain: str = "document"
                     ) -> pd.DataFrame:
    """A qrels table (qid, item_id or doc_id, grade; rows of other grains dropped when it has a grain column, as
    the workflow's qrels do) as validated qid, item_id, grade; a table holding none raises."""
    if "item_id" not in frame and "doc_id" in frame:
        frame = frame.rename(columns={"doc_id": "item_id"})
    missing = sorted({"qid", "item_id", "grade"} - set(frame.columns))
    if missing:
        raise InputError(source, None, f"lacks column(s) {missing}", "Qrels tables need qid, item_id (or doc_id), "
                         "grade.")
    frame = frame.reset_index(drop=True)
    where = [f"row {i + 1}" for i in range(len(frame))]
    if "grain" in frame:
        keep = (frame["grain"] == grain).to_numpy()
        frame, where = frame[keep], [w for w, k in zip(where, keep) if k]
    if frame.empty:
        raise InputError(source, None, "holds no judgement" + (f" at {grain} grain" if "grain" in frame else ""),
                         "Give qrels with one row per judged (qid, item_id).")
    frame = frame.assign(qid=frame["qid"].astype(str), item_id=frame["item_id"].astype(str))
    return check_qrels(frame[["qid", "item_id", "grade"]], source, where)


def read_qrels(source: QrelsSource, grain: str = "document") -> pd.DataFrame:
    """Qrels as validated qid, item_id, grade from a TREC file, a Parquet file or DataFrame (see qrels_from_frame)
    or a {qid: {doc_id: grade}} dict, or another toolkit's qrels (io.adapters); qrels holding no judgement raise."""
    source = adapted_qrels(source, "the qrels")
    if isinstance(source, pd.DataFrame):
        return qrels_from_frame(source, "the qrels table", grain)
    if isinstance(source, Mapping):
        return qrels_from_frame(_frame_from_mapping(source, ["qid", "item_id", "grade"]), "the qrels dict", grain)
    if file_format(source) == "parquet":
        return qrels_from_frame(_read_parquet(source), Path(source), grain)
    qrels = read_trec_qrels(source)
    if qrels.empty:
        raise InputError(source, None, "holds no judgement", "Each line must read `qid iteration docno grade`.")
    return qrels


def _reordered(scores: np.ndarray, singles: np.ndarray, ids: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """Whether each of `rows` would be ranked above the row before it by trec_eval (its 32-bit score, then docno
    desc) or by a reader of 64-bit scores."""
    before = rows - 1
    later_id = ids[rows] > ids[before]
    return ((scores[rows] > scores[before]) | ((scores[rows] == scores[before]) & later_id)
            | (singles[rows] > singles[before]) | ((singles[rows] == singles[before]) & later_id))


def trec_scores(ordered: pd.DataFrame, id_column: str) -> list[str]:
    """The run's own scores as text (rows in rank order within each question), at full precision (the shortest repr
    that reads back to the same float).

    trec_eval (so pytrec_eval) reads scores as 32-bit floats and breaks their ties by docno desc; where that, or a
    reader of 64-bit scores, would order two results otherwise than our ranks, the later one takes the next 32-bit
    float below the one before it (written as that float32), so every reader ranks exactly as we do.
    """
    scores = ordered["score"].to_numpy(dtype=np.float64).copy()
    singles = scores.astype(np.float32)
    qids, ids = ordered["qid"].astype(str).to_numpy(), ordered[id_column].astype(str).to_numpy()
    same = np.zeros(len(scores), dtype=bool)
    same[1:] = qids[1:] == qids[:-1]
    text = [repr(score) for score in scores.tolist()]
    candidates = np.flatnonzero(same)
    for start in candidates[_reordered(scores, singles, ids, candidates)].tolist():  # rare: walk on from each
        row = start
        while row < len(scores) and same[row] and _reordered(scores, singles, ids, np.array([row]))[0]:
            single = np.nextafter(singles[row - 1], np.float32(-np.inf))
            text[row] = str(single)
            singles[row], scores[row] = single, float(text[row])
            row += 1
    return text


def trec_run_text(run: pd.DataFrame, tag: str, id_column: str = "chunk_id") -> str:
    """A run as TREC lines in rank order with its own scores at full precision, nudged only where trec_eval would
    reorder them (trec_scores)."""
    ordered = run.sort_values(["qid", "rank"], kind="stable")
    for column in ("qid", id_column):
        ids = ordered[column].astype(str)
        # one search over all ids joined (fast), the per-id test only to name the first offender
        if _WHITESPACE.search("".join(ids.tolist())):
            value = ids.iloc[int(np.flatnonzero(ids.str.contains(_WHITESPACE).to_numpy())[0])]
            raise InputError(None, f"{column} {value!r}", "contains whitespace, which the TREC format cannot hold",
                             "Use ids without spaces.")
    scores = pd.Series(trec_scores(ordered, id_column), index=ordered.index)
    lines = ordered["qid"].astype(str) + " Q0 " + ordered[id_column].astype(str) + " " + \
        ordered["rank"].astype(str) + " " + scores + " " + tag
    return "".join(line + "\n" for line in lines.tolist())


def write_trec_run(run: pd.DataFrame, path: str | Path, tag: str, id_column: str = "chunk_id") -> None:
    """Write trec_run_text atomically."""
    write_text(trec_run_text(run, tag, id_column), path)


def write_run(run: pd.DataFrame, path: str | Path, tag: str = "rankbench") -> None:
    """A run (RUN_COLUMNS) as Parquet (.parquet: every column kept) or else as a TREC run of its documents (chunks
    collapsed to their documents; the run's own scores, ordered so trec_eval reproduces its ranks)."""
    if file_format(path) == "parquet":
        write_parquet(run, path)
    else:
        write_trec_run(collapse_to_documents(run), path, tag, id_column="doc_id")


def write_qrels(qrels: pd.DataFrame, path: str | Path) -> None:
    """Qrels (qid, item_id, grade) as Parquet (.parquet) or else as TREC qrels lines `qid 0 item_id grade`."""
    frame = qrels[["qid", "item_id", "grade"]]
    if file_format(path) == "parquet":
        write_parquet(frame, path)
    else:
        write_text("".join(f"{q} 0 {i} {int(g)}\n" for q, i, g in frame.itertuples(index=False)), path)
