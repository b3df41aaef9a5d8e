"""Agreement of the judge with human labels: weighted Cohen's kappa and confusion matrices, overall and per kind."""

from __future__ import annotations

import numpy as np
import pandas as pd

GRADES = 4  # the 0–3 scale
ALL = "all"


def confusion(human: np.ndarray, judge: np.ndarray, size: int = GRADES) -> np.ndarray:
    """Counts[h, j] of pairs graded h by people and j by the judge."""
    return np.bincount(np.asarray(human, dtype=np.int64) * size + np.asarray(judge, dtype=np.int64),
                       minlength=size * size).reshape(size, size)


def weighted_kappa(counts: np.ndarray, weights: str = "quadratic") -> float:
    """Cohen's kappa of a confusion matrix with linear or quadratic disagreement weights (None: unweighted).

    Same definition as sklearn.metrics.cohen_kappa_score(labels=range(size)): 1 − Σ w·observed / Σ w·expected.
    NaN when expected disagreement is zero (both raters used a single grade).
    """
    size = counts.shape[0]
    distance = np.abs(np.subtract.outer(np.arange(size), np.arange(size))).astype(np.float64)
    w = {"linear": distance, "quadratic": distance ** 2, None: (distance > 0).astype(np.float64)}[weights]
    observed = counts / counts.sum()
    expected = np.outer(observed.sum(axis=1), observed.sum(axis=0))
    denominator = float((w * expected).sum())
    return float("nan") if denominator == 0 else 1.0 - float((w * observed).sum()) / denominator


def agreement(judged: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Per kind and `all`: n, exact agreement, unweighted/linear/quadratic kappa; and the confusion counts (long).

    Only pairs with both a human and a judged grade count.
    """
    both = judged[judged["human"].notna() & judged["judge"].notna()]
    groups = [(ALL, both)] + [(kind, group) for kind, group in both.groupby("kind", sort=True)]
    stats, cells = [], []
    for kind, group in groups:
        counts = confusion(group["human"].to_numpy(), group["judge"].to_numpy())
        n = int(counts.sum())
        stats.append({"kind": kind, "n": n,
                      "exact": float(np.trace(counts) / n) if n else float("nan"),
                      "kappa": weighted_kappa(counts, None) if n else float("nan"),
                      "kappa_linear": weighted_kappa(counts, "linear") if n else float("nan"),
                      "kappa_quadratic": weighted_kappa(counts, "quadratic") if n else float("nan")})
        human, judge = np.divmod(np.arange(GRADES * GRADES), GRADES)
        cells.append(pd.DataFrame({"kind": kind, "human": human, "judge": judge, "count": counts.reshape(-1)}))
    return pd.DataFrame(stats), pd.concat(cells, ignore_index=True)


def agreement_markdown(stats: pd.DataFrame, cells: pd.DataFrame, judged: pd.DataFrame, title: str) -> str:
    """The report: what was judged, the agreement table and the overall confusion matrix."""
    seconds = judged.loc[judged["seconds"] > 0, "seconds"]
    lines = [f"# LLM judge agreement: {title}", "",
             f"Pooled pairs judged: {len(judged)} ({int(judged['judge'].isna().sum())} unparsable replies); "
             f"with a human label: {int(judged['human'].notna().sum())}.",
             f"Judge requests sent in this run: {len(seconds)}"
             + (f", {seconds.mean():.2f} s per pair on average." if len(seconds) else " (all from the cache)."),
             "", "Agreement where both a human and the judge graded the pair (grades 0–3):", "",
             "| kind | n | exact | kappa | kappa linear | kappa quadratic |", "|---|---:|---:|---:|---:|---:|"]
    for row in stats.itertuples(index=False):
        lines.append(f"| {row.kind} | {row.n} | {row.exact:.3f} | {row.kappa:.3f} | {row.kappa_linear:.3f} | "
                     f"{row.kappa_quadratic:.3f} |")
    overall = cells[cells["kind"] == ALL].pivot(index="human", columns="judge", values="count")
    lines += ["", "Confusion matrix (all kinds; rows: human grade, columns: judge grade):", "",
              "| human \\ judge | " + " | ".join(str(c) for c in overall.columns) + " |",
              "|---|" + "---:|" * len(overall.columns)]
    lines += [f"| {h} | " + " | ".join(str(int(v)) for v in overall.loc[h]) + " |" for h in overall.index]
    return "\n".join(lines) + "\n"
