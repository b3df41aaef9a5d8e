# Fusion (rrf, combsum, combmnz): what it registers in method_tables.smk's tables; its rule is in fusion.smk.
from rankbench.retrieval.registry import NORMALIZATION, RRF_K


def fusion_serve_setup(method, qset):
    """How the serving probe fuses a method's inputs' answers (retrieval/serving.py, serve_fusion)."""
    spec = METHOD_SPECS[method]
    return {
        "inputs": {},
        "params": {
            "kind": spec["type"],
            "k": spec.get("k", RRF_K),
            "normalization": spec.get("normalization", NORMALIZATION),
            "weights": spec.get("weights"),
        },
    }


SERVE_SETUPS["fuse"] = fusion_serve_setup
