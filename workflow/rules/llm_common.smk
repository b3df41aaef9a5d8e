# Helpers of the optional LLM stage (llm.smk): its rules run only when the config has an `llm` section and the
# `llm` target (or one of its files) is requested. Everything it writes is a candidate file under results/;
# `rankbench publish` freezes one next to the question sets (docs/how-to/llm.md).
# Its references (versions, methods, chunker) are checked with the whole config at start (config.check_llm).
from rankbench.configuration.defaults import DATASET_DEFAULTS, LLM_DEFAULTS

LLM = config.get("llm", {})


def llm_chat():
    """The chat backend block, keys sorted (a plain params value)."""
    return dict(sorted(LLM.get("chat", {}).items()))


def llm_language():
    """Language of generated questions and rewrites: `llm.language`, else the dataset's."""
    return (
        LLM.get("language")
        or DATASET.get("language", DATASET_DEFAULTS["language"]).capitalize()
    )


def llm_setting(task, key):
    """A setting of an LLM task (`llm.generate`, `llm.judge`), its default from configuration/defaults.py."""
    return LLM[task].get(key, LLM_DEFAULTS[task][key])


def llm_threads():
    """CPU threads of an LLM job (chat_threads of `llm.chat`)."""
    return chat_threads(LLM.get("chat", {}))


def judged_methods():
    """Methods whose runs the judge pools (those on the judge's chunker)."""
    judge = LLM.get("judge", {})
    chunker = judge.get("chunker", config["chunker"])
    return [m for m in judge.get("methods", METHODS) if chunker_of(m) == chunker]


def judge_output_path(qset, name):
    """The judge's output `name` (agreement.parquet, judgements.parquet) when the config judges this version, else ""
    (a plain path, not an input: the pages use it once the `llm` target has made it, and a plain run never calls
    the LLM).
    """
    if qset in LLM.get("judge", {}).get("qsets", []):
        return f"{R}/{qset}/llm/{name}"
    return ""


def llm_outputs():
    """Every file the `llm` target asks for."""
    outputs = []
    if "generate" in LLM:
        outputs.append(f"{R}/llm/generated/{LLM['generate']['name']}.jsonl")
    for qset in LLM.get("judge", {}).get("qsets", []):
        outputs += [f"{R}/{qset}/llm/agreement.md", f"{R}/{qset}/llm/judged.jsonl"]
    for qset in LLM.get("rewrite", {}).get("qsets", []):
        outputs.append(f"{R}/{qset}/llm/rewrites.jsonl")
    if "expand" in LLM:
        outputs.append(f"{R}/llm/expansions.jsonl")
    return outputs
