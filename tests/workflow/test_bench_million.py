"""benchmarks/bench_million.py's memory check: jobs read from a Snakemake log and benchmark files (fabricated,
small), flagged when their max_rss exceeds their declared mem_mb or 8 GB."""

import sys
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
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
