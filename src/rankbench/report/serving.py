"""The cost page's "Served" section: serving.parquet as a table (latency percentiles with their CIs, batch
throughput, start-up, memory, disk, dimensions, money per 1,000 queries), the machine the figures hold for, and how
they were measured."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from rankbench.io.markdown import markdown_grid, markdown_literal


def _ms(value: float, low: float, high: float) -> str:
    if pd.isna(value):
        return "–"
    digits = 2 if value < 10 else 1
    interval = "" if pd.isna(low) else f" [{low:.{digits}f}, {high:.{digits}f}]"
    return f"{value:.{digits}f}{interval}"


def _number(value: Any, text: str) -> str:
    return "–" if pd.isna(value) else text.format(value)


def machine_line(metadata: Mapping[str, Any]) -> str:
    """Where and how the probe measured: the CPU, its cores, the threads used, the questions timed of how many (and
    the adjustment when `cost.probe_questions` asked for more than the version has, or a quick run capped it)."""
    machine = metadata.get("machine", {})
    threads = machine.get("threads", 1)
    timed, total, asked = metadata.get("timed", 0), metadata.get("questions", 0), metadata.get("asked", 0)
    if not metadata.get("probe", True):
        sample = "the probe is off (`cost.probe: false`): every figure is the latency its run recorded"
    elif asked > total and timed == total:
        sample = (f"all {total} questions of the version timed (`cost.probe_questions` asks for {asked}: more than "
                  "there are, so every question is used)")
    elif metadata.get("quick") and timed < min(asked, total):
        sample = f"{timed} of the {total} questions timed (a `--quick` run probes at most {timed})"
    else:
        sample = f"{timed} of the {total} questions timed (seeded sample)"
    load = metadata.get("load")
    busy = (f" The load average was {load[0]:.1f} when the probe started and {load[1]:.1f} when it ended"
            + (f": above the {machine.get('cores')} cores, so the latencies include waiting for a CPU."
               if max(load) > machine.get("cores", 1) else ".") if load else "")
    return (f"Measured on {machine.get('cpu', 'an unknown CPU')} ({machine.get('cores', '?')} cores), "
            f"{threads} thread{'s' if threads != 1 else ''} used (`cost.probe_threads`); {sample}. These figures "
            f"hold for that machine: another CPU, more threads or a loaded machine give other ones.{busy}")


def served_section(serving: pd.DataFrame, metadata: Mapping[str, Any]) -> list[str]:
    """Markdown lines of the Served section (empty for an empty table)."""
    if serving.empty:
        return []
    frame = pd.DataFrame({
        "method": [markdown_literal(m) + ("" if how == "probe" else " ‡")
                   for m, how in zip(serving["method"], serving["measured"])],
        **{f"p{p} ms [95% CI]": [_ms(v, lo, hi) for v, lo, hi in
                                 zip(serving[f"p{p}_ms"], serving[f"p{p}_ms_low"], serving[f"p{p}_ms_high"])]
           for p in (50, 95, 99)},
        "questions/s (batch)": serving["qps_batch"].map(lambda v: _number(v, "{:,.1f}")),
        "start-up s": serving["startup_s"].map(lambda v: _number(v, "{:.2f}")),
        "RAM MB": serving["ram_bytes"].map(lambda v: _number(v, "{:,.2f}") if pd.isna(v) else f"{v / 1e6:,.2f}"),
        "disk MB": serving["disk_bytes"].map(lambda v: _number(v, "") if pd.isna(v) else f"{v / 1e6:,.2f}"),
        "dimensions": serving["dimensions"].map(lambda v: _number(v, "{}")),
    })
    if serving["usd_per_1k"].notna().any():
        frame["USD per 1,000 queries"] = serving["usd_per_1k"].map(lambda v: _number(v, "{:,.4f}"))
    recorded = bool((serving["measured"] == "recorded").any())
    return ["## Served: what a question costs at query time", "", machine_line(metadata), "",
            markdown_grid(frame.set_index("method")), "",
            "Each method's query path ran once more after the run, in a warm process, as a service would run it: "
            "models and indexes loaded first (start-up s, with the first question), then the sampled questions one "
            "at a time with no cache — the query encoded by the model, the index searched, a fusion's inputs "
            "answered and a reranker's first stage answered before it reranks at its depth; a rewrite comes from "
            "its frozen file (an LLM rewrite was paid when the run made it). A step two methods share is timed once "
            "per question and counted in full for each. p50/p95/p99: over the questions timed, with 95% percentile-"
            "bootstrap intervals over them; questions/s: the same questions sent as one batch. RAM MB: bytes loaded "
            "to answer; disk MB: the files searched; – : not known."
            + (" ‡ : the probe cannot run this method's path (or the probe is off): the latencies its run recorded "
               "(a search service's or an engine's round trips, a job's per-question seconds), with no batch "
               "figure." if recorded else ""), ""]
