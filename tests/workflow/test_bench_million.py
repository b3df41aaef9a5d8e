"""benchmarks/bench_million.py's memory check: jobs read from a Snakemake log, benchmark files and the job worker's
log lines (fabricated, small), flagged when their max_rss exceeds their declared mem_mb or 8 GB; and
bench_growth.py's growth exponent and projection."""

import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from bench_growth import growth_exponent, projection
from bench_million import job_log, oversized_jobs, read_benchmarks, synthetic_dataset

LOG = """\
[Mon Nov 30 17:51:39 2026]
localrule embed_corpus:
    input: results/million/corpus/passage/chunks.parquet
    log: logs/million/embed_corpus/passage/static/shard-0.log
    jobid: 7
    benchmark: results/million/benchmarks/embed_corpus/shard-0.tsv
    threads: 2
    resources: tmpdir=/tmp, mem_mb=4000, mem=4 GB, mem_mib=3815, runtime=120
[Mon Nov 30 17:51:40 2026]
localrule bm25_index:
    jobid: 3
    benchmark: results/million/benchmarks/bm25_index.tsv
    resources: tmpdir=/tmp, mem_mb=2000, mem=2 GB, runtime=60
[Mon Nov 30 17:51:41 2026]
localrule evaluate:
    jobid: 9
    resources: tmpdir=/tmp, mem_mb=2000, runtime=60
[Mon Nov 30 17:52:01 2026]
Finished jobid: 7 (Rule: embed_corpus)
[Mon Nov 30 17:52:11 2026]
Finished jobid: 3 (Rule: bm25_index)
[Mon Nov 30 17:52:21 2026]
Finished jobid: 9 (Rule: evaluate)
"""
HEADER = "s\th:m:s\tmax_rss\tmax_vms\tmax_uss\tmax_pss\tio_in\tio_out\tmean_load\tcpu_time\n"


def test_jobs_above_their_mem_mb_are_flagged(tmp_path: Path) -> None:
    folder = tmp_path / "results" / "million" / "benchmarks"
    (folder / "embed_corpus").mkdir(parents=True)
    (folder / "embed_corpus" / "shard-0.tsv").write_text(HEADER + "20.5\t0:00:20\t3500.2\t1\t1\t1\t0\t0\t90\t19\n")
    (folder / "bm25_index.tsv").write_text(HEADER + "30.1\t0:00:30\t2400.7\t1\t1\t1\t0\t0\t95\t29\n")
    jobs = read_benchmarks(job_log(LOG), tmp_path)
    assert jobs.set_index("rule")["mem_mb"].to_dict() == {"embed_corpus": 4000, "bm25_index": 2000, "evaluate": 2000}
    assert (jobs["end"] - jobs["start"]).dt.total_seconds().tolist() == [22.0, 31.0, 40.0]
    assert jobs.set_index("rule")["max_rss"].fillna(-1).to_dict() == {"embed_corpus": 3500.2, "bm25_index": 2400.7,
                                                                      "evaluate": -1}
    assert oversized_jobs(jobs)["rule"].tolist() == ["bm25_index"]


def test_the_8_gb_ceiling_applies_above_a_larger_mem_mb() -> None:
    jobs = pd.DataFrame({"rule": ["a", "b", "c"], "mem_mb": [16000, 16000, None], "max_rss": [8100.0, 7900.0, 9000.0]})
    assert oversized_jobs(jobs)["rule"].tolist() == ["a", "c"]


def test_synthetic_questions_come_from_their_passage() -> None:
    passages, questions = synthetic_dataset(300, 20)
    assert synthetic_dataset(300, 20) == (passages, questions)  # the seed alone decides
    texts = {p["doc_id"]: set(p["text"].rstrip(".").split()) for p in passages}
    for question in questions:
        words = question["question"].rstrip("?").split()
        assert len(words) == 5 and sum(word in texts[question["labels"][0]["doc_id"]] for word in words) >= 4


def test_the_job_workers_figures_replace_the_hand_over_process_benchmark(tmp_path: Path) -> None:
    folder = tmp_path / "results" / "million" / "benchmarks"
    (folder / "embed_corpus").mkdir(parents=True)
    (folder / "embed_corpus" / "shard-0.tsv").write_text(HEADER + "20.5\t0:00:20\t60.0\t1\t1\t1\t0\t0\t1\t0.1\n")
    (folder / "bm25_index.tsv").write_text(HEADER + "30.1\t0:00:30\t2400.7\t1\t1\t1\t0\t0\t95\t29\n")
    log = tmp_path / "logs" / "million" / "embed_corpus" / "passage" / "static" / "shard-0.log"
    log.parent.mkdir(parents=True)
    log.write_text("encoding\nrankbench job worker: the job took 18.25 CPU-s, peak memory 4512 MB (resident, ...)\n")
    jobs = read_benchmarks(job_log(LOG), tmp_path).set_index("rule")
    assert jobs.loc["embed_corpus", ["s", "cpu_time", "max_rss"]].tolist() == [20.5, 18.25, 4512.0]
    assert jobs.loc["bm25_index", ["cpu_time", "max_rss"]].tolist() == [29.0, 2400.7]  # no log line: the file's
    assert oversized_jobs(jobs.reset_index())["rule"].tolist() == ["embed_corpus", "bm25_index"]


def test_growth_exponents_recover_power_laws() -> None:
    sizes = np.array([1e5, 3e5, 1e6, 3e6])
    assert growth_exponent(sizes, 2e-3 * sizes ** 1.0) == pytest.approx(1.0)
    assert growth_exponent(sizes, 7e-6 * sizes ** 1.5) == pytest.approx(1.5)
    assert growth_exponent(sizes, np.full(4, 3.2)) == pytest.approx(0.0, abs=1e-12)
    assert growth_exponent(sizes, [0.0, 0.0, 0.0, 5.0]) != growth_exponent(sizes, [1.0, 2.0, 3.0, 5.0])
    assert np.isnan(growth_exponent(sizes, [0.0, np.nan, 0.0, 5.0]))


def test_projection_extrapolates_from_the_largest_size() -> None:
    sizes = [100_000, 1_000_000]
    stages = pd.DataFrame({"stage": ["bm25", "bm25", "questions", "questions"], "passages": sizes * 2,
                           "cpu_s": [10.0, 100.0, 5.0, 5.0], "max_rss_mb": [300.0, 3000.0, 200.0, 200.0]})
    rows = projection(stages, [10_000_000]).set_index("stage")
    assert rows.loc["bm25", "cpu_s@10,000,000"] == pytest.approx(1000.0)
    assert rows.loc["bm25", "largest_job_mb@10,000,000"] == pytest.approx(30000.0)
    assert rows.loc["questions", "cpu_s@10,000,000"] == pytest.approx(5.0)
