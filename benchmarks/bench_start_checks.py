"""Benchmark the start-of-run dataset checks (rankbench.start_checks) on a BEIR or native config.

Usage: PYTHONPATH=src .venv/bin/python benchmarks/bench_start_checks.py CONFIG [--copies 1]

Times, side by side: hashing the frozen files; parsing every record (first run, or a changed corpus); the same
with documents.parquet and its corpus record in place (an unchanged corpus: hashed, not reparsed); and, as the
reference, hashing the corpus alone. --copies N repeats the corpus N times (ids suffixed) to see the scaling.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import yaml

from rankbench.configuration.dataset_formats import corpus_files
from rankbench.io.files import write_parquet, write_text
from rankbench.io.frozen import content_hash
from rankbench.io.loaders import load_beir_corpus, load_corpus
from rankbench.project.start_checks import (
    check_dataset_records,
    check_frozen_files,
    corpus_record,
)

SCHEMAS = Path(__file__).resolve().parents[1] / "workflow" / "schemas"


def seconds(call) -> float:
    start = time.perf_counter()
    call()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("config", type=Path)
    parser.add_argument("--copies", type=int, default=1)
    args = parser.parse_args()
    config = yaml.safe_load(args.config.read_text())
    native = config["dataset"]["format"] == "native"
    with tempfile.TemporaryDirectory() as folder:
        original = dict(config["dataset"])
        if args.copies > 1:
            source = Path(corpus_files(config)[0]).read_text(encoding="utf-8").splitlines()
            key = "doc_id" if native else "_id"
            big = Path(folder) / "corpus.jsonl"
            with big.open("w", encoding="utf-8") as out:
                for copy in range(args.copies):
                    for line in source:
                        record = json.loads(line)
                        record[key] = f"{record[key]}-{copy}" if copy else record[key]
                        out.write(json.dumps(record, ensure_ascii=False) + "\n")
            config["dataset"]["corpus" if native else "path"] = str(big if native else folder)
            if not native:  # a BEIR folder: the original queries and qrels beside the copied corpus
                for name in ("queries.jsonl", "qrels"):
                    (Path(folder) / name).symlink_to(Path(original["path"]).resolve() / name)
        corpus = Path(corpus_files(config)[0])
        results = Path(folder) / "results"
        documents = results / "corpus" / "documents.parquet"
        frozen = seconds(lambda: check_frozen_files(config, str(Path(folder) / "none")))
        parse = seconds(lambda: check_dataset_records(config, SCHEMAS, str(Path(folder) / "none")))
        schema = yaml.safe_load((SCHEMAS / "corpus.schema.yaml").read_text())
        write_parquet(load_corpus(corpus, schema) if native else load_beir_corpus(corpus), documents)
        write_text(content_hash([corpus]) + "\n", corpus_record(documents))
        unchanged = seconds(lambda: check_dataset_records(config, SCHEMAS, str(results)))
        hashing = seconds(lambda: content_hash([corpus]))
        size = corpus.stat().st_size / 1e6
        print(f"corpus {size:.0f} MB | frozen files {frozen:.3f} s | records, corpus parsed {parse:.3f} s | "
              f"records, unchanged corpus {unchanged:.3f} s | hash of the corpus alone {hashing:.3f} s")


if __name__ == "__main__":
    main()
