# Lucene's BM25 through Anserini: its helpers and what it registers in method_tables.smk; its rules are in lucene.smk.
from rankbench.configuration.defaults import DATASET_DEFAULTS
from rankbench.retrieval import lucene

# The java and Anserini jar of each lucene method, found (and checked) at start: the jobs run exactly these.
LUCENE_ENGINES = {
    m: vars(lucene.find_engine(METHOD_SPECS[m]))
    for m in methods_indexed_by("lucene_index")
}


def lucene_analyzer(method):
    return lucene.index_keys(
        METHOD_SPECS[method],
        DATASET.get("language", DATASET_DEFAULTS["language"]),
    )


def lucene_index_name(method):
    """lucene methods with the same analyzer and jar share one Lucene index."""
    return shared_index_name(
        method,
        "lucene_index",
        lambda m: (lucene_analyzer(m), LUCENE_ENGINES[m]["jar"]),
    )


def lucene_index_path(method):
    return corpus_path(method, "lucene", lucene_index_name(method))


INDEX_NAMES["lucene_index"] = lucene_index_name
SERVED_FILES.update(
    {m: [lucene_index_path(m)] for m in methods_indexed_by("lucene_index")}
)
