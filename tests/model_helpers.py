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
