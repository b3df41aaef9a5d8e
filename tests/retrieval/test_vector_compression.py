"""Compressed FAISS indexes from one set of float embeddings: truncation, int8/binary/product codes, re-scoring."""

from pathlib import Path

import numpy as np
import pytest

from rankbench.corpus.filters import chunk_masks
from rankbench.retrieval.dense import IndexSpec, build_index, load_index, save_index, search, truncated
from tests.retrieval.test_methods import QUESTIONS, chunk_table, unit_vectors


def flat_top(corpus: np.ndarray, queries: np.ndarray, k: int) -> np.ndarray:
    """Exact top k by numpy (the reference, independent of FAISS)."""
    return np.argsort(-(queries @ corpus.T), axis=1, kind="stable")[:, :k]


def test_truncating_to_the_full_dimension_equals_flat_exactly() -> None:
    corpus, queries = unit_vectors(500, 32, 0), unit_vectors(30, 32, 1)
    flat = search(build_index(corpus), queries, 10)
    full = IndexSpec(dimensions=32)
    cut = search(build_index(corpus, full), queries, 10, full)
    np.testing.assert_array_equal(cut[0], flat[0])
    np.testing.assert_array_equal(cut[1], flat[1])


def test_truncation_keeps_the_first_dimensions_renormalised() -> None:
    corpus, queries = unit_vectors(400, 32, 2), unit_vectors(20, 32, 3)
    spec = IndexSpec(dimensions=8)
    positions, _ = search(build_index(corpus, spec), queries, 5, spec)
    short = corpus[:, :8] / np.linalg.norm(corpus[:, :8], axis=1, keepdims=True)
    short_q = queries[:, :8] / np.linalg.norm(queries[:, :8], axis=1, keepdims=True)
    np.testing.assert_array_equal(positions, flat_top(short, short_q, 5))
    np.testing.assert_allclose(np.linalg.norm(truncated(corpus, 8), axis=1), 1.0, rtol=1e-6)
    with pytest.raises(ValueError, match="exceeds the encoder's 32 dimensions"):
        build_index(corpus, IndexSpec(dimensions=64))


@pytest.mark.parametrize("spec", [IndexSpec(quantization="int8", rescore=400),
                                  IndexSpec(quantization="binary", rescore=1000),
                                  IndexSpec(quantization="pq", pq_m=4, rescore=400),
                                  IndexSpec(dimensions=16, quantization="binary", rescore=400),
                                  IndexSpec(kind="ivf", nlist=8, nprobe=8, quantization="int8", rescore=400)])
def test_rescoring_the_whole_corpus_equals_flat(spec: IndexSpec) -> None:
    corpus, queries = unit_vectors(400, 32, 4), unit_vectors(30, 32, 5)
    positions, scores = search(build_index(corpus, spec), queries, 10, spec, vectors=corpus)
    short = truncated(corpus, spec.dimensions)
    expected = flat_top(short, truncated(queries, spec.dimensions), 10)
    np.testing.assert_array_equal(positions, expected)
    np.testing.assert_allclose(scores, np.take_along_axis(truncated(queries, spec.dimensions) @ short.T,
                                                          expected, axis=1), rtol=1e-5)


@pytest.mark.parametrize("spec", [IndexSpec(quantization="int8"), IndexSpec(quantization="binary"),
                                  IndexSpec(quantization="pq", pq_m=8), IndexSpec(kind="ivf", nlist=8, nprobe=2,
                                                                                  quantization="binary")])
def test_quantized_indexes_are_approximate_deterministic_and_smaller(spec: IndexSpec, tmp_path: Path) -> None:
    corpus, queries = unit_vectors(1000, 64, 6), unit_vectors(40, 64, 7)
    first = search(build_index(corpus, spec), queries, 10, spec)[0]
    np.testing.assert_array_equal(first, search(build_index(corpus, spec), queries, 10, spec)[0])
    exact = flat_top(corpus, queries, 10)
    overlap = np.mean([len(set(a) & set(e)) / 10 for a, e in zip(first, exact)])
    assert 0.1 < overlap <= 1.0
    save_index(build_index(corpus), tmp_path / "flat.faiss")
    save_index(build_index(corpus, spec), tmp_path / "small.faiss")
    np.testing.assert_array_equal(search(load_index(tmp_path / "small.faiss"), queries, 10, spec)[0], first)
    assert (tmp_path / "small.faiss").stat().st_size < (tmp_path / "flat.faiss").stat().st_size / 3


def test_rescored_binary_search_keeps_filters() -> None:
    corpus, queries = unit_vectors(4, 8, 8), unit_vectors(3, 8, 9)
    masks = chunk_masks(QUESTIONS, chunk_table(), ["audience", "validity"])
    spec = IndexSpec(quantization="binary", rescore=4)
    positions, _ = search(build_index(corpus, spec), queries, 4, spec, masks, vectors=corpus)
    for row, g in enumerate(masks.group):
        allowed = np.flatnonzero(masks.masks[g])
        assert list(positions[row, : len(allowed)]) == list(allowed[np.argsort(-(corpus[allowed] @ queries[row]),
                                                                                kind="stable")])
        assert (positions[row, len(allowed):] == -1).all()


def test_index_names_and_settings_show_only_what_the_index_reads() -> None:
    assert IndexSpec().name == "flat" and IndexSpec().settings == {"kind": "flat"}
    spec = IndexSpec(dimensions=128, quantization="int8", rescore=50)
    assert spec.name == "flat-d128-int8"
    assert spec.settings == {"dimensions": 128, "kind": "flat", "quantization": "int8", "rescore": 50}
    assert IndexSpec(kind="ivf", quantization="pq", pq_m=16).name == "ivf-nlist100-pq16x8"
    assert "rescore" not in IndexSpec(quantization="binary").build_params
    with pytest.raises(ValueError, match="hnsw index holds float vectors only"):
        IndexSpec(kind="hnsw", quantization="int8")
    with pytest.raises(ValueError, match="a float index has nothing to re-score"):
        IndexSpec(rescore=10)


@pytest.mark.parametrize("chunks", [50, 255])
def test_product_codes_over_too_few_chunks_are_refused_before_encoding_with_the_nbits_that_fit(chunks: int) -> None:
    """FAISS stops with a raw RuntimeError under 2^pq_nbits vectors; check_index_sizes (the chunk job) says so
    first, and the pq_nbits it advises builds."""
    from rankbench.errors import InputError
    from rankbench.retrieval.dense import check_index_sizes

    vectors = unit_vectors(chunks, 64, seed=1)
    block = {"kind": "flat", "quantization": "pq"}
    with pytest.raises(RuntimeError):
        build_index(vectors, IndexSpec.from_config(block))
    with pytest.raises(InputError) as refused:
        check_index_sizes([["dense-pq", block]], chunks, "sections", "config")
    message = str(refused.value)
    assert "methods.dense-pq.index" in message and f"chunker 'sections' yields {chunks}" in message
    bits = int(message.split("pq_nbits: ")[1].split("`")[0])
    assert build_index(vectors, IndexSpec.from_config({**block, "pq_nbits": bits})).ntotal == chunks
    check_index_sizes([["dense-pq", {**block, "pq_nbits": bits}]], chunks, "sections", "config")
    check_index_sizes([["dense-pq", block]], 256, "sections", "config")


def anisotropic(n: int, dim: int, seed: int, shared: np.ndarray) -> np.ndarray:
    """Unit vectors sharing one large common component, as anisotropic encoders (e5) give: every vector's cosine with
    the others is high, and most of its signs are the shared direction's."""
    rng = np.random.default_rng(seed)
    vectors = 4.0 * shared + rng.standard_normal((n, dim))
    return (vectors / np.linalg.norm(vectors, axis=1, keepdims=True)).astype(np.float32)


def test_centered_binary_codes_recall_more_than_plain_ones_on_an_anisotropic_encoder(tmp_path: Path) -> None:
    dim = 64
    shared = np.random.default_rng(20).standard_normal(dim) * 0.5 + 1.0  # mostly positive: one sign everywhere
    corpus = anisotropic(2000, dim, 21, shared)
    # each query is a noisy copy of a corpus vector: its exact neighbours stand out from the shared component
    noisy = corpus[:100] + 0.05 * np.random.default_rng(22).standard_normal((100, dim)).astype(np.float32)
    queries = (noisy / np.linalg.norm(noisy, axis=1, keepdims=True)).astype(np.float32)
    exact = flat_top(corpus, queries, 10)

    def recall(spec: IndexSpec) -> float:
        index = build_index(corpus, spec)
        save_index(index, tmp_path / f"{spec.name}.faiss")  # the mean travels with the index file
        found = search(load_index(tmp_path / f"{spec.name}.faiss"), queries, 10, spec, vectors=corpus)[0]
        return float(np.mean([len(set(a) & set(e)) / 10 for a, e in zip(found, exact)]))

    # plain signs are nearly the shared direction's for every vector (recall@10 0.03; 0.16 re-scoring the top 100),
    # centered ones tell the vectors apart (0.21; 0.62)
    for rescore in (0, 100):
        plain = recall(IndexSpec(quantization="binary", rescore=rescore))
        centered = recall(IndexSpec(quantization="binary-centered", rescore=rescore))
        assert centered > 3 * plain and centered > plain + 0.15, (rescore, plain, centered)


def test_a_centered_binary_index_stores_its_mean_and_centers_the_queries(tmp_path: Path) -> None:
    corpus, queries = unit_vectors(300, 32, 23) + 0.5, unit_vectors(20, 32, 24) + 0.5
    spec = IndexSpec(quantization="binary-centered")
    index = build_index(corpus, spec)
    mean = corpus.astype(np.float64).mean(axis=0).astype(np.float32)
    np.testing.assert_allclose(index.mean, mean, rtol=1e-6)
    save_index(index, tmp_path / "centered.faiss")
    loaded = load_index(tmp_path / "centered.faiss")
    np.testing.assert_array_equal(loaded.mean, index.mean)
    assert (loaded.d, loaded.ntotal) == (32, 300)
    # the reference: ±1 codes of the centered vectors, scored by their inner product (d − 2·Hamming), ties by position
    signs_c, signs_q = np.where(corpus > mean, 1, -1), np.where(queries > mean, 1, -1)
    expected = np.argsort(-(signs_q @ signs_c.T), axis=1, kind="stable")[:, :5]
    positions, scores = search(loaded, queries, 5, spec)
    np.testing.assert_array_equal(np.take_along_axis(signs_q @ signs_c.T, positions, axis=1),
                                  np.take_along_axis(signs_q @ signs_c.T, expected, axis=1))
    np.testing.assert_array_equal(scores, np.take_along_axis(signs_q @ signs_c.T, expected, axis=1))
