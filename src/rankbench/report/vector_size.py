"""The vector-size page: quality against index bytes, each compressed dense index beside its float flat twin (the
method ranking the same texts with the exact float index), tested against it with the paired tests of the pairs
table and Holm's correction over this page's tests."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from rankbench.evaluation.metric_names import metric_label
from rankbench.evaluation.scoring import ALL_KINDS
from rankbench.evaluation.stats import format_p, holm
from rankbench.io.markdown import markdown_grid
from rankbench.report.tables import megabytes, pair_row

NOTE = ("MB in RAM and on disk: what serving the method takes (records/footprint.py, as on the cost page): the "
        "FAISS file, which a search job loads whole, and with re-scoring the float vectors the candidates are "
        "re-scored with; × smaller: the twin's MB in RAM over the method's; dimensions: those the index searches. "
        "Δ: the method's mean minus its float flat twin's over the same questions, with the paired bootstrap's 95% "
        "interval; p: the paired randomization test, Holm-corrected over every test on this page at that metric (as "
        "on the comparison page, where Holm runs over all pairs). A compressed index without a twin is listed "
        "without a test: add a dense method with the same encoder, chunker, expansion, rewrite and filters and no "
        "`index` to test it.")


def size_row(spec: Mapping[str, Any], served: Mapping[str, Any]) -> dict[str, Any]:
    """What an index holds and weighs: dimensions, codes, re-scoring depth (from its `index` settings), bytes on disk
    and in memory (its row of records/footprint.py's frame)."""
    dimensions = served["dimensions"]
    return {"dimensions": "–" if pd.isna(dimensions) else int(dimensions),
            "codes": spec.get("quantization") or "float32", "rescore": int(spec.get("rescore") or 0) or "–",
            "disk": float(served["disk_bytes"]), "ram": float(served["ram_bytes"])}


def vector_size_page(aggregate: pd.DataFrame, pairs: pd.DataFrame, indexes: Mapping[str, Mapping[str, Any]],
                     served: pd.DataFrame, twins: Mapping[str, str | None],
                     report: Mapping[str, Any], n_resamples: int, dataset: str, qset: str) -> str:
    """The page: one row per float twin and each compressed method (indexes: method -> its `index` settings;
    served: what serving each takes, records/footprint.py's frame), the headline metrics with Δ against the twin and
    Holm's p."""
    sizes = served.set_index("method")
    grain, metrics = report["grain"], [tuple(item) for item in report["headline"]]
    rows = aggregate[(aggregate["grain"] == grain) & (aggregate["kind"] == ALL_KINDS)]
    means = rows.set_index(["method", "metric", "k"])
    found: dict[tuple[str, int], dict[str, pd.Series]] = {}
    adjusted = {}
    for metric, k in metrics:
        rows_of = {method: pair_row(pairs, grain, ALL_KINDS, metric, k, method, twin)
                   for method, twin in sorted(twins.items()) if twin}
        found[(metric, k)] = {method: row for method, row in rows_of.items() if row is not None}
        p_values = holm([row["p_randomization"] for row in found[(metric, k)].values()])
        adjusted[(metric, k)] = dict(zip(found[(metric, k)], p_values))
    order = sorted({twin for twin in twins.values() if twin}) + sorted(twins)
    table = []
    for method in dict.fromkeys(order):
        twin = twins.get(method)
        size = size_row(indexes[method], sizes.loc[method])
        cells = {"method": method, "float twin": twin or ("(itself)" if method not in twins else "none"),
                 "dimensions": size["dimensions"], "codes": size["codes"], "re-scored": size["rescore"],
                 "MB on disk": megabytes(size["disk"]), "MB in RAM": megabytes(size["ram"]),
                 "× smaller": f"{sizes.loc[twin, 'ram_bytes'] / size['ram']:.1f}" if twin else "–"}
        for metric, k in metrics:
            label = metric_label(metric, k)
            key = (method, metric, k)
            cells[label] = f"{means.loc[key, 'mean']:.3f}" if key in means.index else "–"
            row = found[(metric, k)].get(method)
            if row is None:
                cells[f"Δ {label}"], cells[f"p {label}"] = "–", "–"
                continue
            cells[f"Δ {label}"] = f"{row['diff']:+.3f} [{row['diff_low']:+.3f}, {row['diff_high']:+.3f}]"
            cells[f"p {label}"] = format_p(float(adjusted[(metric, k)][method]), float(row["p_randomization"]),
                                           n_resamples)
        table.append(cells)
    frame = pd.DataFrame(table).set_index("method")
    return "\n".join([f"# {dataset} — question-set version {qset}: index size against quality", "",
                      markdown_grid(frame), "", f"Quality: {grain} grain, all questions. {NOTE}", ""])

