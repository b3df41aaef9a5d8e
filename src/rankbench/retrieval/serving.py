"""The serving probe's query paths: each method type's path from a question's text to its ranked list, as a warm
service would run it — its models and indexes loaded once, then one question at a time with no cache (the query
encoded by the model, the index searched, the inputs of a fusion or a reranker answered first).

A type registers its path through its registry entry's `serve` hook ("module:function"), called with a ServeSetup
and returning the Steps of the method's path (its inputs' steps first). Steps are keyed by the work they do, so a
step two methods share (the bm25 run under a reranker and a fusion, a question's encoding by one model) is timed
once per question and charged in full to each method whose path includes it; a method's latency for a question is
the sum of its steps' seconds for that question (the path runs them in turn, on `cost.probe_threads` threads).
"""

from __future__ import annotations

import json
import logging
import tempfile
import time
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from rankbench.errors import InputError

# A step's function of one question: (its loaded state, the question's position in the sample, what the earlier
# steps returned for it by key) -> its output. The batch function takes every position at once and returns the same
# kind of output for all of them (a run of every question, a matrix of every query vector).
One = Callable[[Any, int, Mapping[str, Any]], Any]
Many = Callable[[Any, Sequence[int], Mapping[str, Any]], Any]


@dataclass(frozen=True)
class Step:
    """One stage of a query path: `key` names the work (shared steps have one key), `load` builds its state once
    (start-up: models, indexes, chunks; once per `state_key` too, for a state that depends on the version's
    questions), `one` answers one question, `many` all of them as one batch; `sign(i)` is what question i's answer
    depends on (its id and the text sent, its filters' fields, its inputs' signs): another version asking the same
    is answered from what the probe measured already."""

    key: str
    load: Callable[[], Any]
    one: One
    many: Many
    sign: Callable[[int], Hashable]
    state_key: str = ""


@dataclass(frozen=True)
class ServeSetup:
    """What a type's serve hook gets: the method's name and config, the files and settings its run rule reads
    (`inputs`, `params`), the sampled questions (qid, question, audience, as_of where given) in probe order, the
    depth of its ranked lists, and the steps of each method it consumes (`upstream`: name -> steps)."""

    method: str
    spec: Mapping[str, Any]
    inputs: Mapping[str, str]
    params: Mapping[str, Any]
    questions: pd.DataFrame
    depth: int
    upstream: Mapping[str, list[Step]] = field(default_factory=dict)

    def texts(self) -> list[str]:
        """The texts the method sends, in probe order: its rewritten questions (`inputs.queries`) where it reads
        some, else the questions."""
        if "queries" not in self.inputs:
            return self.questions["question"].astype(str).tolist()
        queries = pd.read_parquet(self.inputs["queries"], columns=["qid", "question"])
        by_qid = dict(zip(queries["qid"].astype(str), queries["question"].astype(str)))
        return [by_qid[qid] for qid in self.questions["qid"].astype(str)]

    @cached_property
    def sampled(self) -> list[str]:
        """The sampled questions' ids, in probe order (read once: a step's call should cost only its own work)."""
        return self.questions["qid"].astype(str).tolist()

    def qids(self, positions: Sequence[int] | None = None) -> list[str]:
        return self.sampled if positions is None else [self.sampled[i] for i in positions]

    @cached_property
    def signatures(self) -> list[tuple[str, ...]]:
        """Per sampled question, what a first stage's answer to it depends on: its id, the text the method sends,
        and the fields its filters read."""
        fields = [self.questions[column].fillna("").astype(str).tolist() if column in self.questions
                  else [""] * len(self.questions) for column in ("audience", "as_of")]
        return [(qid, text, *values) for qid, text, *values in zip(self.sampled, self.texts(), *fields)]

    def sign(self, i: int) -> Hashable:
        return self.signatures[i]

    @cached_property
    def state_key(self) -> str:
        """Names a state built from this version's sampled questions (a filtered method's masks)."""
        return repr(self.signatures) if self.params.get("filters") else ""


@dataclass
class Timed:
    """What the probe measured of one method: per-question seconds (probe order), the batch's seconds and the
    start-up seconds (its steps' loads and first call)."""

    seconds: list[float]
    batch_s: float
    startup_s: float


# CPU seconds of each step over the whole probe (load, questions, batch), for the job's log: what the probe costs.
STEP_CPU: dict[str, float] = {}


@dataclass
class Probe:
    """The serving probe of a dataset's versions in one process: each step's state loaded once (start-up), and each
    question answered once per step (its seconds and answer kept by the step's key and the question's sign), so a
    version asking what another asked already pays nothing more to measure."""

    states: dict[tuple[str, str], Any] = field(default_factory=dict)
    startup: dict[tuple[str, str], float] = field(default_factory=dict)
    answered: dict[tuple[str, Hashable], tuple[float, Any]] = field(default_factory=dict)

    def run(self, plans: Mapping[str, list[Step]], n: int) -> dict[str, Timed]:
        """One version's methods on its first n sampled questions: each step loaded (and warmed on the first
        question) unless loaded already, then question by question each step once (timed alone), then all n
        questions as one batch per step."""
        steps: dict[str, Step] = {}
        for plan in plans.values():
            for step in plan:
                steps.setdefault(step.key, step)
        warm: dict[str, Any] = {}
        unanswered: set[str] = set()
        for key, step in steps.items():
            loaded = (key, step.state_key)
            started, cpu = time.perf_counter(), time.process_time()
            try:
                if loaded not in self.states:
                    self.states[loaded] = step.load()
                if n and not any(other.key in unanswered for other in _upstream(plans, key)):
                    warm[key] = step.one(self.states[loaded], 0, warm)
            except InputError as error:  # a service that does not answer: its methods keep their recorded latencies
                logging.warning("rankbench: warning: the serving probe cannot run %s (%s): its methods show the "
                                "latencies their runs recorded", key, error)
                unanswered.add(key)
            self.startup.setdefault(loaded, time.perf_counter() - started)
            STEP_CPU[key] = STEP_CPU.get(key, 0.0) + time.process_time() - cpu
        plans = {method: plan for method, plan in plans.items() if not {step.key for step in plan} & unanswered}
        kept = {step.key for plan in plans.values() for step in plan}
        steps = {key: step for key, step in steps.items() if key in kept}
        each: dict[str, list[float]] = {key: [] for key in steps}
        for i in range(n):
            outputs: dict[str, Any] = {}
            for key, step in steps.items():
                memo = (key, step.sign(i))
                if memo not in self.answered:
                    started, cpu = time.perf_counter(), time.process_time()
                    answer = step.one(self.states[key, step.state_key], i, outputs)
                    self.answered[memo] = (time.perf_counter() - started, answer)
                    STEP_CPU[key] += time.process_time() - cpu
                seconds, outputs[key] = self.answered[memo]
                each[key].append(seconds)
        batch: dict[str, float] = {}
        outputs = {}
        for key, step in steps.items():
            memo = (f"batch {key}", tuple(step.sign(i) for i in range(n)))
            if memo not in self.answered:
                started, cpu = time.perf_counter(), time.process_time()
                answer = step.many(self.states[key, step.state_key], list(range(n)), outputs)
                self.answered[memo] = (time.perf_counter() - started, answer)
                STEP_CPU[key] += time.process_time() - cpu
            batch[key], outputs[key] = self.answered[memo]
        timed = {}
        for method, plan in plans.items():
            used = list(dict.fromkeys((step.key, step.state_key) for step in plan))
            timed[method] = Timed([sum(each[key][i] for key, _ in used) for i in range(n)],
                                  sum(batch[key] for key, _ in used), sum(self.startup[loaded] for loaded in used))
        return timed


def _upstream(plans: Mapping[str, list[Step]], key: str) -> list[Step]:
    """The steps before `key` in the plans that use it (what it reads the answers of)."""
    return [step for plan in plans.values() if key in (keys := [s.key for s in plan])
            for step in plan[:keys.index(key)]]


def probe(plans: Mapping[str, list[Step]], n: int) -> dict[str, Timed]:
    """One version's probe in a fresh Probe (Probe.run)."""
    return Probe().run(plans, n)


@dataclass(frozen=True)
class Hits:
    """A first stage's answer as a service holds it: corpus positions and scores per question (a list of ids); the
    run table a fusion or a reranker reads is built by `as_run`, and its cost charged to that consumer."""

    qids: list[str]
    positions: np.ndarray
    scores: np.ndarray
    chunks: pd.DataFrame
    depth: int
    drop_nonpositive: bool = False


def as_run(output: Any) -> pd.DataFrame:
    """A step's output as a run (qid, chunk_id, doc_id, rank, score): Hits converted, a deferred run (a function
    that builds it) built, a run as it is."""
    if callable(output):
        return output()
    if isinstance(output, Hits):
        from rankbench.io.ranked_lists import run_from_topk

        return run_from_topk(output.qids, output.positions, output.scores, output.chunks, output.depth,
                             output.drop_nonpositive)
    return output


def _hits(setup: ServeSetup, positions: Sequence[int], found: tuple[np.ndarray, np.ndarray], chunks: pd.DataFrame,
          drop_nonpositive: bool = False) -> Hits:
    return Hits(setup.qids(positions), found[0], found[1], chunks, setup.depth, drop_nonpositive)


def _allowed(setup: ServeSetup, chunks: pd.DataFrame) -> Any:
    """The chunks each sampled question may see under the method's filters (None without filters), built at load."""
    from rankbench.corpus.filters import chunk_masks

    return chunk_masks(setup.questions, chunks, setup.params["filters"])


def _masks(allowed: Any, positions: Sequence[int]) -> Any:
    """The filter masks of some sampled questions (None without filters)."""
    from rankbench.corpus.filters import ChunkMasks

    return None if allowed is None else ChunkMasks(allowed.group[list(positions)], allowed.masks)


def encode_step(setup: ServeSetup, encoder: str, settings: Mapping[str, Any]) -> Step:
    """A question encoded by the model itself (no query-embedding cache; an API encoder's calls sent, uncached)."""
    texts = setup.texts()

    def load() -> Any:
        from rankbench.retrieval.encoders.kinds import encoder_spec, load_encoder

        return load_encoder(encoder_spec(settings), None, encoder)

    key = f"encode:{encoder}:{setup.spec.get('rewrite') or 'questions'}"  # one model per text source
    return Step(key, load, lambda model, i, _: model.encode_queries([texts[i]]),
                lambda model, positions, _: model.encode_queries([texts[i] for i in positions]),
                lambda i: (setup.sampled[i], texts[i]))


def serve_bm25(setup: ServeSetup) -> list[Step]:
    """BM25: the index and chunks loaded; a question analyzed and searched (with RM3 feedback and filters when set)."""
    from rankbench.corpus.chunking import passage_text
    from rankbench.retrieval.bm25 import RM3, load_index, search, search_weighted
    from rankbench.retrieval.rm3 import rm3_queries

    texts, prf, backend = setup.texts(), setup.params.get("prf"), setup.params["backend"]

    def load() -> tuple[Any, pd.DataFrame, Any, Any]:
        chunks = pd.read_parquet(setup.inputs["chunks"])
        return (load_index(Path(setup.inputs["index"])), chunks, passage_text(chunks) if prf else None,
                _allowed(setup, chunks))

    def answer(state: tuple[Any, pd.DataFrame, Any, Any], positions: Sequence[int]) -> Hits:
        index, chunks, passages, allowed = state
        mask = _masks(allowed, positions)
        asked = [texts[i] for i in positions]
        if prf:
            expanded = rm3_queries(index, index.analyzer, asked, passages, RM3(**prf), mask)
            found = search_weighted(index, expanded, setup.depth, mask, backend)
        else:
            found = search(index, index.analyzer, asked, setup.depth, mask, backend)
        return _hits(setup, positions, found, chunks, drop_nonpositive=True)

    return [Step(f"bm25:{setup.method}", load, lambda state, i, _: answer(state, [i]),
                 lambda state, positions, _: answer(state, positions), setup.sign, setup.state_key)]


def serve_dense(setup: ServeSetup) -> list[Step]:
    """Dense: the question encoded by its model, then the FAISS index searched (re-scored with the float vectors
    when the index says so, filtered when the method filters)."""
    from rankbench.retrieval.dense import IndexSpec, load_index, search

    encode = encode_step(setup, setup.spec["encoder"], setup.params["encoder"])
    spec = IndexSpec(**setup.params["index"])

    def load() -> tuple[Any, pd.DataFrame, Any, Any]:
        vectors = np.load(setup.inputs["vectors"]) if spec.rescore else None
        chunks = pd.read_parquet(setup.inputs["chunks"])
        return load_index(Path(setup.inputs["index"])), chunks, vectors, _allowed(setup, chunks)

    def answer(state: tuple[Any, pd.DataFrame, Any, Any], positions: Sequence[int], queries: np.ndarray) -> Hits:
        index, chunks, vectors, allowed = state
        found = search(index, np.asarray(queries, dtype=np.float32), setup.depth, spec, _masks(allowed, positions),
                       vectors)
        return _hits(setup, positions, found, chunks)

    return [encode, Step(f"faiss:{setup.method}", load,
                         lambda state, i, out: answer(state, [i], out[encode.key]),
                         lambda state, positions, out: answer(state, positions, out[encode.key]),
                         setup.sign, setup.state_key)]


def _upstream_keys(setup: ServeSetup) -> tuple[list[Step], list[Step]]:
    """The steps of the methods a method consumes (in order, each once) and the last step of each of them."""
    steps: dict[str, Step] = {}
    for name in setup.upstream:
        for step in setup.upstream[name]:
            steps.setdefault(step.key, step)
    return list(steps.values()), [setup.upstream[name][-1] for name in setup.upstream]


def serve_fusion(setup: ServeSetup) -> list[Step]:
    """Fusion: each input answers the question, then their lists are fused."""
    from rankbench.retrieval.fusion import fuse_runs

    before, finals = _upstream_keys(setup)
    p = setup.params

    def fused(outputs: Mapping[str, Any]) -> pd.DataFrame:
        return fuse_runs([as_run(outputs[step.key]) for step in finals], p["kind"], p["k"], p["normalization"],
                         setup.depth, p["weights"])

    return [*before, Step(f"fuse:{setup.method}", lambda: None, lambda _, i, out: fused(out),
                          lambda _, positions, out: fused(out), lambda i: tuple(step.sign(i) for step in finals))]


def serve_rerank(setup: ServeSetup) -> list[Step]:
    """Rerank: the first stage answers, then its top `depth` are re-scored: by a bi-encoder from the question's
    vector (encoded now) and the chunks' (loaded once), or by a cross-encoder scoring the pairs. (An LLM scorer's
    setup is None: its calls are charged as the run recorded them.)"""
    from rankbench.corpus.chunking import passage_text
    from rankbench.retrieval.rerank import bi_encoder_scorer, cross_encoder_scorer, rerank_or_fallback
    from rankbench.retrieval.scorer_kinds import scorer_kind

    before, (first,) = _upstream_keys(setup)
    scorer, depth = setup.params["scorer"], setup.params["depth"]
    encoder = scorer_kind(scorer).encoder and scorer.get("encoder")
    encode = encode_step(setup, encoder, setup.params["encoders"][encoder]) if encoder else None
    texts = setup.texts()

    def load() -> Any:
        chunks = pd.read_parquet(setup.inputs["chunks"])
        if encode is not None:
            return chunks["chunk_id"].astype(str).tolist(), np.load(setup.inputs["chunk_embeddings"])
        passages = dict(zip(chunks["chunk_id"], passage_text(chunks)))
        return lambda questions: cross_encoder_scorer(scorer["model"], questions, passages,
                                                      revision=scorer.get("revision"))

    def answer(state: Any, positions: Sequence[int], outputs: Mapping[str, Any]) -> pd.DataFrame:
        qids = setup.qids(positions)
        if encode is not None:
            score = bi_encoder_scorer(qids, outputs[encode.key], *state)
        else:
            score = state(dict(zip(qids, (texts[i] for i in positions))))
        return rerank_or_fallback(as_run(outputs[first.key]), depth, lambda: score)

    own = [encode] if encode is not None and encode.key not in {step.key for step in before} else []
    return [*before, *own, Step(f"rerank:{setup.method}", load, lambda state, i, out: answer(state, [i], out),
                                lambda state, positions, out: answer(state, positions, out),
                                lambda i: (setup.sign(i), first.sign(i)))]


def serve_http(setup: ServeSetup) -> list[Step]:
    """A search service: each question sent to the endpoint as the run sent it, no cache read or written, timed from
    the request built to the answer parsed; its output the run of those answers, built when a fusion or a reranker
    reads it."""
    from rankbench.retrieval.http_search import HttpSearch, _run, http_spec, question_values

    spec = http_spec(setup.params["spec"], setup.depth)
    values = question_values(setup.questions, spec.hits)
    chunks_path = setup.inputs.get("chunks")

    def load() -> tuple[HttpSearch, Any]:
        chunks = pd.read_parquet(chunks_path, columns=["chunk_id", "doc_id"]) if chunks_path else None
        return HttpSearch(spec, tempfile.gettempdir(), setup.method), chunks  # its cache is never used

    def answer(state: tuple[HttpSearch, Any], positions: Sequence[int]) -> Callable[[], pd.DataFrame]:
        search, chunks = state
        answers = {values[i]["qid"]: search.answered(values[i]) for i in positions}
        return lambda: _run(answers, spec, setup.depth, setup.method, chunks)  # built when a consumer reads it

    return [Step(f"http:{setup.method}", load, lambda state, i, _: answer(state, [i]),
                 lambda state, positions, _: answer(state, positions),
                 lambda i: json.dumps(values[i], sort_keys=True, default=str))]
