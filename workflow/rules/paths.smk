# Where each file of a run lives: results/<dataset>/<version>/… and the caches beside them.
from rankbench.configuration.dataset_formats import version_files


def zones_input(wildcards, name):
    """The calibration rule's abstention output `name` of the version, or nothing when no method sets zones."""
    return f"{R}/{wildcards.qset}/calibration/{name}" if ABSTENTION_ZONES else []


def embedding_cache(chunker, encoder):
    """Chunk vectors of the last corpus embedding, reused by content (not a workflow output: see docs/how-to/large-corpora.md)."""
    return f"{R}/cache/embeddings/{chunker}/{encoder}"


# Read and written, never declared: every vector an embedding API returned, by (endpoint, model, dimensions, input
# type, prefixed text), shared by every chunker, encoder name and version, so no text is paid for twice.
API_EMBEDDING_CACHE = f"{R}/cache/api-embeddings"


def query_embedding_cache(encoder):
    """Question vectors of every version and rewrite source so far, reused by content (see docs/how-to/large-corpora.md)."""
    return f"{R}/cache/query-embeddings/{encoder}"


def qset_files(wildcards):
    """The files that make a question-set version (see dataset_formats.version_files)."""
    return version_files(config, wildcards.qset)


def run_path(method, qset="{qset}"):
    return f"{R}/{qset}/runs/{method}.parquet"


def corpus_path(method, *parts):
    """A corpus-side file of the chunker a method ranks."""
    return f"{R}/corpus/{chunker_of(method)}/" + "/".join(parts)


# Document expansions (dataset.expansions): name -> frozen JSONL of each document's likely questions.
EXPANSIONS = DATASET.get("expansions", {})


def index_chunker(method):
    """The chunks a method's index is built from: its chunker's, or with an expansion `<chunker>~<expansion>` (the
    same chunk ids, each expanded document's questions appended to its chunks' text)."""
    expansion = METHOD_SPECS[method].get("expansion")
    return f"{chunker_of(method)}~{expansion}" if expansion else chunker_of(method)


def index_corpus_path(method, *parts):
    """A file under the chunks a method's index is built from (see index_chunker)."""
    return f"{R}/corpus/{index_chunker(method)}/" + "/".join(parts)


def queries_path(method, qset):
    """The question texts a method sends: the version's questions, or their rewrites from a frozen file."""
    rewrite = METHOD_SPECS[method].get("rewrite")
    if rewrite:
        return f"{R}/{qset}/rewrites/{rewrite}.parquet"
    return f"{R}/{qset}/questions.parquet"


def query_embeddings_path(qset, encoder, rewrite=None):
    """Query embeddings, once per (version, encoder, rewrite source)."""
    if rewrite:
        return f"{R}/{qset}/query-embeddings/{rewrite}/{encoder}.npy"
    return f"{R}/{qset}/query-embeddings/{encoder}.npy"


def qrels_of(method, qset):
    return f"{R}/{qset}/qrels/{chunker_of(method)}.parquet"
