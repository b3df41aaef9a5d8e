# The methods of the config as the rules read them, and the tables each method type registers from its own
# workflow/rules/methods/<type>_common.smk.
import re

from rankbench.configuration.config import method_chunker
from rankbench.configuration.models import used_models, with_resolved_revision
from rankbench.configuration.rules import RUN_RULES
from rankbench.corpus.chunking import chunker_settings
from rankbench.retrieval.encoders.kinds import encoder_kind
from rankbench.retrieval.registry import (
    REPORT_ONLY_KEYS,
    engine_key,
    index_rule,
    method_grains,
)


def drafts_of(*qsets):
    """The draft versions among these (a page's params: freezing a version remakes its pages)."""
    return [qset for qset in qsets if qset in DRAFTS]


def choice(names):
    """A wildcard regex matching exactly these names (or nothing)."""
    return "|".join(re.escape(name) for name in sorted(names)) or "(?!)"


def methods_indexed_by(builder):
    """Methods that search an index this rule builds (the registry's `index` of their type)."""
    return [name for name in METHODS if index_rule(METHOD_SPECS[name]) == builder]


def methods_of_rule(rule):
    """Methods whose run this rule makes (configuration/rules.py, RUN_RULES)."""
    return [name for name in METHODS if RUN_RULES[METHOD_SPECS[name]["type"]] == rule]


# What each method type registers from its own file, workflow/rules/methods/<type>_common.smk (docs/development.md,
# "Add a method type"); the shared rules and pages read these, never a type's rule or helper names. Which of them a
# type owes is declared by its registry entry (retrieval/registry.py, REGISTRATIONS and MethodType.registers), and
# checked at start and by `rankbench check` (configuration/registrations.py).
# Index rule -> the name of the index a first-stage method searches (methods with the same parameters share one); an
# index rule absent here names its jobs without one.
INDEX_NAMES = {}
# Method -> the size and build-time record of the index it searches (the cost page's index build seconds).
INDEX_STATS = {}
# Method -> the corpus-side files and folders its own query job reads to answer a question (its index, the float
# vectors it re-scores with): the memory and disk it takes to serve (records/footprint.py; footprint.smk adds its
# inputs'). Never the vectors an index was built from.
SERVED_FILES = {}
# Method -> the index block of a first-stage index built over its chunks that a chunker can yield too few chunks for
# (the chunk job refuses then, before the corpus is encoded).
INDEX_BLOCKS = {}
# Methods searching an approximate or compressed index: each version gets their recall page, ann-recall/<method>.md.
ANN_RECALL_METHODS = []
# Further pages of each version a type writes (`<page>.md` and `<page>.html`, linked from the index page).
VERSION_PAGES = []
# Methods whose runs reorder another method's with a scorer that can fail: the comparison page reads their runs'
# degraded flags.
RERANKED_METHODS = []
# A type's run rule -> its function of (method, version) giving the files and settings ({"inputs", "params"}) the
# serving probe hands the type's `serve` hook (serving.smk; retrieval/serving.py), as the run rule reads them; None
# when the probe cannot run that method's path (it is then costed from the latencies its run recorded).
SERVE_SETUPS = {}


def methods_at_grain(grain):
    """Methods scored at this grain (external runs rank documents: document grain only)."""
    return [name for name in METHODS if grain in method_grains(METHOD_SPECS[name])]


def chunk_settings(spec):
    """A chunker's spec as its job takes it: its unit's size and overlap where it gives none (so a changed default
    reruns it), and a tokens chunker without a tokenizer counts with the evaluation's.
    """
    spec = chunker_settings(spec)
    if spec.get("kind") == "tokens" and not spec.get("tokenizer"):
        spec = {**spec, "tokenizer": PROMPT_TOKENIZER[0]}
    return dict(sorted(spec.items()))


def chunker_of(method):
    return method_chunker(EXPANDED_CONFIG, method, CONFIG_SOURCE)


def method_spec(method):
    """The method's config with sorted keys, without its description and abstention zones (pages read them, and a
    new value reruns no job): a plain, deterministic params value."""
    return dict(
        sorted(
            (key, value)
            for key, value in METHOD_SPECS[method].items()
            if key not in REPORT_ONLY_KEYS
        )
    )


def encoder_spec(encoder):
    """An encoder's settings for EncoderSpec (how many shards embed the corpus is the workflow's business), a hub
    model's revision being the commit resolved at start."""
    spec = {k: v for k, v in config["encoders"][encoder].items() if k != "shards"}
    return with_resolved_revision(spec, MODEL_COMMITS.get(f"encoders.{encoder}"))


def resolved_models():
    """Every model and endpoint the methods use (configuration.models.used_models), hub revisions as the commits
    resolved at start."""
    return used_models(EXPANDED_CONFIG, MODEL_COMMITS)


def engine_methods():
    """Methods answered by an engine (Anserini, a vector database, a search service: `methods.<name>.engine` of
    resolved_models), whose run file records what it was."""
    return [m for m in METHODS if engine_key(m, METHOD_SPECS[m])]


def engine_runs(wildcards):
    """The run files of engine_methods(), in that order: the pages and records read each engine from them."""
    return [run_path(m, wildcards.qset) for m in engine_methods()]


def is_api_encoder(encoder):
    return encoder_kind(config["encoders"][encoder]).api


def shared_index_name(method, builder, keys_of):
    """Methods whose index the same keys shape (and of one chunker) share one index, named after the first."""
    keys = (index_chunker(method), keys_of(method))
    return next(
        m for m in methods_indexed_by(builder) if (index_chunker(m), keys_of(m)) == keys
    )


def index_name(method):
    """The index a first-stage method searches, as its type names it (None: its index rule names none)."""
    builder = index_rule(METHOD_SPECS[method])
    return INDEX_NAMES[builder](method) if builder in INDEX_NAMES else None
