# Fusion (rrf, combsum, combmnz): what it registers in method_tables.smk's tables; its rule is in fusion.smk.
from rankbench.retrieval.registry import any_method_setting


def fusion_serve_setup(method, qset):
    """How the serving probe fuses a method's inputs' answers (retrieval/serving.py, serve_fusion)."""
    spec = METHOD_SPECS[method]
    return {
        "inputs": {},
        "params": {
            "kind": spec["type"],
            "k": any_method_setting(spec, "k"),
            "normalization": any_method_setting(spec, "normalization"),
            "weights": spec.get("weights"),
        },
    }


SERVE_SETUPS["fuse"] = fusion_serve_setup
