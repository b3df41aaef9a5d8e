# What serving each method takes (records/footprint.py): the files it and its inputs read to answer a question, and
# the records of its query-side jobs that called a priced remote model; the cost page and the vector-size page read them.
from rankbench.retrieval.scorer_kinds import scorer_kind

# `cost.prices`: model -> dollars per 1M input tokens and per request (None: no money column).
PRICES = config.get("cost", {}).get("prices")


def served_files():
    """Per method: the corpus-side files and folders its query job and its inputs' read to answer a question
    (SERVED_FILES, registered by each method type; none: served elsewhere, e.g. a search endpoint).
    """

    def of(method):
        files = list(SERVED_FILES.get(method, []))
        for name in method_inputs(METHOD_SPECS[method]):
            files += of(name)
        return files

    return {method: sorted(set(of(method))) for method in METHODS}


def priced_records(qset):
    """Per method: [model, record] of each query-side job (its own and its inputs') of the version that may call a
    remote model: an embedding job's usage record (model None: the record names it) and the timing record of a
    reranker whose LLM scorer is served over HTTP (its `chat.model`)."""
    usage = api_usage_of(qset)
    records = {}
    for method in METHODS:
        found = []
        for stage, side, values in method_stages(
            METHOD_SPECS, method, index_chunker, index_name
        ):
            if side != "query":
                continue
            path = getattr(rules, stage).benchmark.format(qset=qset, **values)
            if path in usage:
                found.append([None, usage[path]])
            scorer = METHOD_SPECS.get(values.get("method"), {}).get("scorer") or {}
            chat = scorer.get("chat") or {}
            if scorer_kind(scorer).chat and chat.get("model") and chat.get("base_url"):
                found.append([chat["model"], timing_path(path)])
        records[method] = found
    return records
