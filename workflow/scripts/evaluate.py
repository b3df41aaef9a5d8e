"""Everything made from one run of a version, in one job (one process, one read of the run): its per-query metrics
at its grains and the share of each grade at each rank (a run that matches no label, empty or of foreign ids, is
named in the log, as its zeros say nothing about its ranking); its evidence-grain metrics (questions whose relevant
labels carry evidence); its TREC files and ir_metadata; its leak counts."""

from rankbench.execution.job_worker import hand_over

hand_over(snakemake, __file__)  # in the job worker its rule declares (in_worker), its libraries loaded

import json
import logging
from pathlib import Path

import pandas as pd

from rankbench.analysis.leaks import LEAK_CHUNK_COLUMNS, leak_counts
from rankbench.corpus.tokens import load_tokenizer
from rankbench.errors import InputError
from rankbench.evaluation.evidence import evidence_per_query
from rankbench.evaluation.metrics import grade_problem
from rankbench.evaluation.scoring import dictionary_coded, evaluate_run, grade_distribution
from rankbench.execution.scripting import run_script
from rankbench.io.files import corpus_record, parquet_metadata, write_parquet
from rankbench.io.ranked_lists import collapse_to_documents, unmatched
from rankbench.io.trec import write_trec_run
from rankbench.records.ir_metadata import run_metadata, write_run_metadata


def export_trec(run, snakemake):
    """The run as TREC run files with the method's own scores, ordered so trec_eval reproduces our ranks (ties
    included): at document grain (each document at its first chunk's rank: doc ids, scored by the dataset's own
    qrels) and, when asked, chunk grain; beside them its ir_metadata (PRIMAD) as YAML, with the provenance the run
    file holds (a search endpoint's)."""
    tag = snakemake.wildcards.method
    write_trec_run(collapse_to_documents(run), snakemake.output.docs, tag=tag, id_column="doc_id")
    if "chunks" in snakemake.output.keys():  # noqa: SIM118 (a Namedlist: `in` alone tests its values)
        write_trec_run(run, snakemake.output.chunks, tag=tag, id_column="chunk_id")
    corpus_sha256 = corpus_record(snakemake.input.documents).read_text().strip()
    qset = json.loads(Path(snakemake.input.manifest).read_text())
    provenance = parquet_metadata(snakemake.input.run).get("provenance")
    write_run_metadata(run_metadata(tag, snakemake.params.spec, snakemake.params.dataset, qset, corpus_sha256,
                                    provenance), snakemake.output.metadata)


def count_leaks(run, questions, snakemake):
    """Per question and k: staff-only chunks in a public question's top k, and chunks out of force at its as_of."""
    chunks = pd.read_parquet(snakemake.input.chunks, columns=LEAK_CHUNK_COLUMNS)
    write_parquet(leak_counts(run, questions, chunks, snakemake.params.ks), snakemake.output.leaks)


def score_evidence(run, questions, snakemake):
    """Per question with evidence on each relevant label: evidence recall, precision and prompt tokens at each k."""
    labels, params = pd.read_parquet(snakemake.input.labels), snakemake.params
    chunks = pd.read_parquet(snakemake.input.chunks, columns=["chunk_id", "doc_id", "start", "end", "text"])
    write_parquet(evidence_per_query(run, chunks, labels, questions, params.ks, params.relevance_threshold,
                                     load_tokenizer(params.tokenizer)), snakemake.output.evidence)


def main(snakemake):
    run, questions = pd.read_parquet(snakemake.input.run), pd.read_parquet(snakemake.input.questions)
    qrels, params = pd.read_parquet(snakemake.input.qrels), snakemake.params
    problem = grade_problem(qrels, params.extra_metrics)
    if problem:  # before any output is written
        raise InputError(snakemake.input.qrels, None, problem,
                         "Remove that metric from evaluation.metrics, or map the labels' grades onto its range.")
    export_trec(run, snakemake)
    count_leaks(run, questions, snakemake)
    if hasattr(snakemake.output, "evidence"):  # evaluate_documents (external runs) has no chunks to score
        score_evidence(run, questions, snakemake)
    for grain in params.grains:
        problem = unmatched(run, qrels[qrels["grain"] == grain], "doc_id" if grain == "document" else "chunk_id")
        if problem:
            logging.warning("method %s, %s grain: the run %s; it scores 0 on every metric", snakemake.wildcards.method,
                            grain, problem)
    run, qrels = dictionary_coded(run, qrels)  # ids hashed once for every grain and metric below
    per_query = evaluate_run(run, questions, qrels, params.ks, relevance_threshold=params.relevance_threshold,
                             gain=params.gain, grains=params.grains, extra_metrics=params.extra_metrics,
                             rbp_p=params.rbp_p)
    grades = grade_distribution(run, questions, qrels, max(params.ks),
                                relevance_threshold=params.relevance_threshold, grains=params.grains)
    write_parquet(grades, snakemake.output.grades)
    write_parquet(per_query, snakemake.output.metrics)


run_script(main, snakemake)
