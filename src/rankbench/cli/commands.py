"""The `rankbench` subcommands but `run` (cli/run.py, read without loading this module: pandas and the evaluation
layer cost ~0.5 s at every start): their parser, and what each does."""

from __future__ import annotations

import argparse
import os
import sys
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd

import rankbench
from rankbench.cli.judge import add_judge_command
from rankbench.cli.options import whole_number
from rankbench.cli.recommend import add_recommend_command
from rankbench.cli.run import RUN_DESCRIPTION, RUN_HELP, add_run_options, run_command
from rankbench.cli.runs import add_run_commands
from rankbench.errors import EXIT_USAGE, InputError
from rankbench.evaluation.experiment import DEFAULT_METRICS, UnmatchedRunWarning, compare
from rankbench.evaluation.metric_names import MetricNameError, known_metrics_text, parse_metrics, rbp_persistence
from rankbench.evaluation.metrics import GAINS
from rankbench.evaluation.scoring import GRAINS
from rankbench.evaluation.stats import format_p
from rankbench.evaluation.trec_eval_format import OFFICIAL, ZERO_TOPICS, parse_trec_measures, trec_eval_lines
from rankbench.execution.launch import PROJECT_INSTALL
from rankbench.io.files import write_parquet
from rankbench.io.frozen import freeze
from rankbench.io.ranked_lists import collapse_to_documents
from rankbench.io.trec import read_qrels, read_run, trec_run_tag

DESCRIPTION = ("`rankbench init` starts a project from documents and a questions sheet; `rankbench run` runs the "
               "packaged workflow in a project folder; `rankbench check` validates question-set versions, `rankbench "
               "freeze` registers one; `rankbench eval` scores runs without Snakemake; `rankbench pool-export` / "
               "`pool-import` (or `rankbench judge`, in the browser) complete labels through a new frozen version.")


def _argument(read: Callable[[str], object]) -> Callable[[str], Any]:
    """An argparse type from a reader of the evaluation layer: its MetricNameError becomes argparse's error (which
    shows the message; a plain ValueError would be shown as 'invalid value')."""
    def checked(text: str) -> Any:
        try:
            return read(text)
        except MetricNameError as error:
            raise argparse.ArgumentTypeError(str(error)) from None
    return checked


def _metrics(text: str) -> str:
    """Metric names, checked while the arguments are read (argparse type) and passed on as given."""
    _argument(parse_metrics)(text)
    return text


def _trec_measure(text: str) -> str:
    """A trec_eval -m value, checked while the arguments are read (argparse type) and passed on as given."""
    _argument(lambda item: parse_trec_measures([item]))(text)
    return text


def _label(metric: str, k: int) -> str:
    return f"{metric}@{k}" if k else metric


def _number(value: float, signed: bool = False) -> str:
    """A value to 4 decimals, never as -0.0000 (a difference of exactly or nearly 0 prints as 0.0000)."""
    value = round(float(value), 4) + 0.0  # + 0.0 turns -0.0 into 0.0
    return f"{value:+.4f}" if signed else f"{value:.4f}"


def _effect(value: float) -> str:
    """A standardized effect to 2 decimals with its sign, never -0.00."""
    return f"{round(float(value), 2) + 0.0:+.2f}"


def summary_text(summary: pd.DataFrame, resamples: int) -> str:
    """The summary as an aligned text table: mean and CI per run and metric, the baseline comparison beside (diff,
    its CI, the standardized effect d_z with its CI, n/a when the differences do not vary; randomization p-values at
    the resampling floor of `resamples` printed as bounds)."""
    table = pd.DataFrame({
        "metric": [_label(m, k) for m, k in zip(summary["metric"], summary["k"])],
        "run": summary["method"], "n": summary["n"], "mean": summary["mean"].map(_number),
        "95% CI": [f"[{_number(lo)}, {_number(hi)}]" for lo, hi in zip(summary["ci_low"], summary["ci_high"])],
    })
    if summary["diff"].notna().any():
        compared = summary["diff"].notna()
        table["diff"] = [_number(d, signed=True) if ok else "" for d, ok in zip(summary["diff"], compared)]
        table["diff 95% CI"] = [f"[{_number(lo, True)}, {_number(hi, True)}]" if ok else "" for lo, hi, ok in
                                zip(summary["diff_low"], summary["diff_high"], compared)]
        table["d_z [95% CI]"] = [f"{_effect(dz)} [{_effect(lo)}, {_effect(hi)}]" if ok and pd.notna(dz)
                                 else ("n/a" if ok else "") for dz, lo, hi, ok in
                                 zip(summary["d_z"], summary["d_z_low"], summary["d_z_high"], compared)]
        for column in ("p_randomization", "p_holm"):
            table[column] = [format_p(p, raw, resamples, 4) if ok else "" for p, raw, ok in
                             zip(summary[column], summary["p_randomization"], compared)]
        table["p_t"] = [_number(p) if ok else "" for p, ok in zip(summary["p_t"], compared)]
        table["W/T/L"] = [f"{w}/{t}/{loss}" if ok else "(baseline)" for w, t, loss, ok in
                          zip(summary["wins"], summary["ties"], summary["losses"], compared)]
        table["<1q"] = summary["below_one_question"].map({True: "yes", False: ""}).fillna("").astype(str)
    return table.to_string(index=False)


def run_names(paths: list[Path]) -> list[str]:
    """Each run's name: its TREC run tag (as trec_eval names it), or its file name when it has none or when two runs
    share a tag; two runs sharing both are an InputError."""
    tags = [trec_run_tag(path) or Path(path).stem for path in paths]
    if len(set(tags)) == len(tags):
        return tags
    stems = [Path(path).stem for path in paths]
    if len(set(stems)) != len(stems):
        raise InputError(None, "--run", f"two runs share a tag and a file name ({', '.join(stems)})",
                         "Give runs distinct tags (the last column) or file names: the name identifies the run.")
    return stems


def _eval_inputs(args: argparse.Namespace) -> tuple[Path, list[Path]]:
    """The qrels and runs, given as trec_eval takes them (QRELS RUN ...) or as --qrels / --run."""
    qrels, runs = (args.paths[0], args.paths[1:]) if args.paths else (args.qrels, args.run or [])
    if args.paths and (args.qrels or args.run):
        raise InputError(None, "eval", "takes QRELS RUN ... or --qrels/--run, not both", "Use one form.")
    if qrels is None or not runs:
        raise InputError(None, "eval", "needs qrels and at least one run", "Give QRELS RUN [RUN ...] (as trec_eval) "
                         "or --qrels FILE --run FILE.")
    return qrels, runs


def trec_eval_command(args: argparse.Namespace, qrels_path: Path, paths: list[Path]) -> int:
    """`rankbench eval` with trec_eval's flags: its three-column lines (measure, qid or all, value) per run, at
    document grain (a Parquet run's chunks collapsed to their documents)."""
    measures = parse_trec_measures(args.measures or list(OFFICIAL))
    qrels = read_qrels(qrels_path)
    runs = {name: collapse_to_documents(read_run(path)) for name, path in zip(run_names(paths), paths)}
    for path, run in zip(paths, runs.values()):
        if not set(run["qid"]) & set(qrels["qid"]):  # trec_eval stops here too, printing nothing
            raise InputError(path, None, f"shares no topic with the qrels {qrels_path} (trec_eval: \"No queries "
                             "with both results and relevance info\")", "Check that the run and the qrels are of the "
                             "same topics (the first column of both).")
    lines = trec_eval_lines(qrels, runs, measures, per_query=args.q, complete=args.c, summary=not args.n,
                            max_depth=args.M, relevance_level=args.l, zero_topics=args.zero_topics)
    print("\n".join(lines))
    return 0


def evaluate_command(args: argparse.Namespace) -> int:
    """`rankbench eval`: rankbench.compare over TREC/Parquet files, printed as a table, optionally written as tidy
    Parquet; a run that cannot score above 0 is named in a warning (refused with --strict) before anything is scored.
    With any of trec_eval's flags (-q -c -n -M -l -m), trec_eval's output instead (trec_eval_command)."""
    qrels_path, paths = _eval_inputs(args)
    if args.q or args.c or args.n or args.M is not None or args.l is not None or args.measures:
        if args.l is None:
            args.l = args.relevance_threshold
        args.zero_topics = args.zero_topics or "include"
        return trec_eval_command(args, qrels_path, paths)
    if args.zero_topics == "include":
        raise InputError(None, "--zero-topics include", "applies to trec_eval's output only: the table leaves out "
                         "questions without a relevant label and counts them apart", "Add a trec_eval flag such as "
                         "-m map, or drop --zero-topics.")
    names = run_names(paths)
    baseline = args.baseline or (names[0] if len(names) > 1 else None)
    if baseline is not None and baseline not in names:  # a run may also be named by its file name
        stems = [Path(path).stem for path in paths]
        baseline = names[stems.index(baseline)] if baseline in stems else baseline
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", UnmatchedRunWarning)
        result = compare(qrels_path, dict(zip(names, paths)), args.metrics, baseline, grain=args.grain,
                         relevance_threshold=args.relevance_threshold, gain=args.gain, rbp_p=args.rbp_p,
                         n_resamples=args.resamples, seed=args.seed, strict=args.strict)
    for warning in caught:
        print(f"rankbench: warning: {warning.message}", file=sys.stderr)
    per_query, summary = result.per_query, result.summary
    if args.per_query:
        for row in per_query.itertuples(index=False):
            print(f"{_label(row.metric, row.k):<16} {row.method:<20} {row.qid:<20} {_number(row.value)}")
        print()
    excluded = int(summary["n_excluded"].max()) if len(summary) else 0
    print(f"{args.grain} grain; relevant when grade >= {args.relevance_threshold}; gain {args.gain}; "
          f"{excluded} question(s) without a relevant label excluded; baseline: {baseline or 'none'}")
    print(summary_text(summary, args.resamples))
    if args.output:
        write_parquet(per_query if args.per_query else summary, args.output)
    return 0


def pool_export_command(args: argparse.Namespace) -> int:
    """`rankbench pool-export`: the unjudged passages among the top k of every method of a version's results."""
    from rankbench.analysis.pooling import results_pool, write_pool

    frame, runs = results_pool(args.results, args.qset, args.chunker, args.depth)
    write_pool(frame, args.output)
    print(f"{len(frame)} unjudged passages from {runs} runs (top {args.depth}) written to {args.output}; "
          "fill the grade column (0-3) and run `rankbench pool-import`")
    return 0


def pool_import_command(args: argparse.Namespace) -> int:
    """`rankbench pool-import`: a filled pool file becomes a new frozen question-set version."""
    from rankbench.analysis.pooling import import_labels, read_filled

    added, digest = import_labels(read_filled(args.filled), args.questions, args.output, args.version, args.lock)
    print(f"{args.version}: {added} labels added to the questions of {args.questions}, written to {args.output}, "
          f"sha256 {digest} registered in {args.lock}")
    return 0


def publish_command(args: argparse.Namespace) -> int:
    """`rankbench publish`: copy an LLM output next to the data and register its sha256 (never replaces a file)."""
    from rankbench.llm.versions import publish

    digest = publish(args.source, args.dest, args.version, args.lock)
    print(f"{args.version}: {args.dest} frozen, sha256 {digest} registered in {args.lock}")
    return 0


def init_command(args: argparse.Namespace) -> int:
    """`rankbench init`: a project folder from a folder of documents (or a collection) and a questions sheet."""
    try:
        from rankbench.project.project_init import init_project, summary_text
    except ModuleNotFoundError as error:
        raise InputError(None, "rankbench init", f"needs {error.name}, which is not installed",
                         f"Install what a project needs: `pip install '{PROJECT_INSTALL}'`."
                         ) from None

    try:
        summary = init_project(args.folder, args.documents, args.questions, args.version, args.language, args.name)
    except InputError as error:  # the documents' and the sheet's mistakes, all of them: exit 2, an input error
        print(f"rankbench: {error}", file=sys.stderr)
        return 2
    print(summary_text(summary))
    return 0


def check_command(args: argparse.Namespace) -> int:
    """`rankbench check`: every start check of `rankbench run` (the same function, start_run: config, models, the
    dataset's records, margins, report), then every (or the given) version of a project against its corpus;
    warnings are printed. Paths resolve against --directory (default: here), as the workflow's do."""
    from rankbench.execution.launch import quick_mode
    from rankbench.io.config_file import load_config_file
    from rankbench.project.drafts import check_version
    from rankbench.project.start_checks import start_run, start_study
    from rankbench.project.study import is_study

    source = str(args.config)
    config = load_config_file(args.config)
    config_path, here = args.config.resolve(), Path.cwd()
    os.chdir(args.directory or here)  # the config's paths start from the project folder, as the workflow's do
    try:
        quick_mode(config, source)
        if is_study(config):  # each dataset config's start checks and versions, then the study's plan
            members = start_study(config, source)
            configs = {Path(m.source).resolve(): m.config for m in members.values() if Path(m.source).is_file()}
            if args.version:
                raise InputError(source, "--version", "names versions, but this is a study config (its versions "
                                 "are its dataset configs')", "Run `rankbench check --config` on a dataset config "
                                 "to check one of its versions.")
        else:  # whatever the config lacks or holds (no `qsets`, a list of them) is refused as the run refuses it
            start_run(config, source)
            configs = {config_path: config}
        for path, settings in configs.items():
            for version in args.version or sorted(settings.get("qsets") or {}):
                result = check_version(path, version)
                for warning in result.warnings:
                    print(f"rankbench: warning: {warning}", file=sys.stderr)
                print(f"{'' if path == config_path else f'{path.name}: '}{version}: {result.questions} questions, "
                      f"{result.labels} labels: ok"
                      + (" (draft: may still change; `rankbench freeze --version " + version + "` freezes it)"
                         if result.draft else ""))
    finally:
        os.chdir(here)
    return 0


def freeze_command(args: argparse.Namespace) -> int:
    """`rankbench freeze`: a version file into a lock, or (without a file) a project's version after `check`."""
    if args.path is not None and args.lock is not None:
        digest, lock, edited = freeze(args.path, args.version, args.lock), args.lock, False
    elif args.path is None and args.lock is None:
        from rankbench.project.drafts import freeze_draft

        digest, lock, edited = freeze_draft(args.config, args.version, args.directory)
    else:
        raise InputError(None, "freeze", "takes a version file with --lock, or neither (the project's config names "
                         "both)", "Give both, or run `rankbench freeze --version NAME` in the project folder.")
    print(f"{args.version}: sha256 {digest} registered in {lock}"
          + (f"; `draft: true` removed from {args.config}" if edited else ""))
    return 0


def add_project_commands(commands: argparse._SubParsersAction) -> None:
    """The `init` and `check` subcommands (a project started from documents, draft versions checked)."""
    init_parser = commands.add_parser("init", help="start a project from a folder of documents and a questions sheet")
    init_parser.add_argument("folder", type=Path, help="the new project folder (must not exist, or be empty)")
    init_parser.add_argument("--documents", type=Path, required=True,
                             help="a folder of .md/.html/.txt/.pdf files, or a JSONL, BEIR or TREC collection")
    init_parser.add_argument("--questions", type=Path, required=True,
                             help="CSV, TSV or JSONL sheet, one row per label: question, document, [qid, section, "
                                  "grade, kind, audience, as_of, tags (;-separated), difficulty]")
    init_parser.add_argument("--version", default="v1", help="name of the draft question-set version (default: v1)")
    init_parser.add_argument("--language", default="english",
                             help="the documents' language, for BM25's analyzer; other than english, the dense "
                                  "method uses multilingual e5 (default: english)")
    init_parser.add_argument("--name", help="dataset name (default: from the folder's name)")
    init_parser.set_defaults(handler=init_command)
    check_parser = commands.add_parser("check", help="validate question-set versions against the corpus")
    _project_options(check_parser)
    check_parser.add_argument("--version", action="append", help="a version to check (repeat; default: all)")
    check_parser.set_defaults(handler=check_command)


def _project_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", type=Path, default=Path("config.yaml"), help="the project's config "
                        "(default: config.yaml)")
    parser.add_argument("--directory", type=Path, help="the folder the config's paths start from (default: here, as "
                        "for the workflow)")


def dispatch(argv: list[str]) -> int:
    """Every subcommand but `run`: its arguments read, its work done; its exit code."""
    parser = argparse.ArgumentParser(prog="rankbench", description=DESCRIPTION)
    parser.add_argument("--version", action="version", version=f"rankbench {rankbench.__version__}")
    commands = parser.add_subparsers(dest="command", required=True)
    freeze_parser = commands.add_parser("freeze",
                                        help="register a new question-set version (its sha256) in a lock file")
    freeze_parser.add_argument("path", type=Path, nargs="?",
                               help="the version's JSONL file (default: checked against the corpus and frozen as the "
                                    "project's config names it)")
    freeze_parser.add_argument("--version", required=True, help="version name used in config `qsets`")
    freeze_parser.add_argument("--lock", type=Path, help="the lock file (created if missing) when a file is given")
    _project_options(freeze_parser)
    freeze_parser.set_defaults(handler=freeze_command)
    add_project_commands(commands)
    eval_parser = commands.add_parser(
        "eval", help="score runs against qrels (TREC or Parquet); with -q/-c/-n/-M/-l/-m as a trec_eval drop-in",
        description="rankbench eval QRELS RUN [RUN ...] prints rankbench's table (means, CIs, tests vs the first "
                    "run, Holm); any of trec_eval's flags (-q -c -n -M -l -m) prints trec_eval's three columns "
                    "instead (docs/coming-from.md).")
    eval_parser.add_argument("--version", action="version",
                             version=f"rankbench eval {rankbench.__version__} (trec_eval 9 measures, output format)")
    eval_parser.add_argument("paths", nargs="*", type=Path, metavar="QRELS RUN",
                             help="qrels, then one or more runs, as trec_eval takes them")
    eval_parser.add_argument("--qrels", type=Path, help="TREC qrels (qid 0 docno grade) or .parquet")
    eval_parser.add_argument("--run", type=Path, action="append",
                             help="TREC run (qid Q0 docno rank score tag) or .parquet; repeat for several")
    trec = eval_parser.add_argument_group("trec_eval's flags (any of them: trec_eval's output)")
    trec.add_argument("-q", action="store_true", help="per-topic lines too, then the `all` lines")
    trec.add_argument("-c", action="store_true", help="average over every qrels topic (0 where a run lacks it)")
    trec.add_argument("-n", action="store_true", help="no summary (`all`) lines")
    trec.add_argument("-M", type=whole_number(1), metavar="N", help="score only the top N of each topic")
    trec.add_argument("-l", type=whole_number(1), metavar="N", help="relevant when grade >= N (default 1)")
    trec.add_argument("-m", dest="measures", action="append", metavar="MEASURE", type=_trec_measure,
                      help="trec_eval measure (P.5,10 / ndcg_cut.10 / map / recip_rank / Rprec / bpref / num_rel / "
                           "official) or a rankbench name; repeat for several (default: official)")
    trec.add_argument("--zero-topics", choices=ZERO_TOPICS,
                      help="with trec_eval's output, topics whose labels are all below -l: include them scoring 0, "
                           "as trec_eval (default), or exclude them, as rankbench's table always does")
    eval_parser.add_argument("--metrics", type=_metrics, default=",".join(DEFAULT_METRICS),
                             help="comma-separated, e.g. ndcg@10,P_5,map,recip_rank,Rprec (default: "
                                  f"{','.join(DEFAULT_METRICS)}); {known_metrics_text()}")
    eval_parser.add_argument("--per-query", action="store_true", help="print (and write) per-question values")
    eval_parser.add_argument("--relevance-threshold", type=whole_number(1), default=1,
                             help="a result is relevant when its grade is at least this (default: 1)")
    eval_parser.add_argument("--gain", choices=GAINS, default="linear", help="nDCG gain (default: linear)")
    eval_parser.add_argument("--grain", choices=GRAINS, default="document",
                             help="document (default) or chunk: which ids of a Parquet run and qrels are scored")
    eval_parser.add_argument("--baseline", help="run name (its tag or file name) the others are tested against "
                                                "(default: the first run)")
    eval_parser.add_argument("--resamples", type=whole_number(1), default=10_000,
                             help="bootstrap / randomization resamples (default: 10000)")
    eval_parser.add_argument("--seed", type=whole_number(0), default=0)
    eval_parser.add_argument("--rbp-p", type=_argument(rbp_persistence), default=0.8,
                             help="persistence p of rbp and rbp_residual, between 0 and 1 (default: 0.8)")
    eval_parser.add_argument("--strict", action="store_true",
                             help="fail, instead of warning, when a run is empty or shares no question or id with the "
                                  "qrels (it would score 0 whatever its order)")
    eval_parser.add_argument("--output", type=Path, help="write the tidy summary (or per-query values) as Parquet")
    eval_parser.set_defaults(handler=evaluate_command)
    export_parser = commands.add_parser("pool-export", help="unjudged passages in the top k of every method, to grade")
    export_parser.add_argument("--results", type=Path, required=True,
                               help="the dataset's results folder, e.g. results/demo")
    export_parser.add_argument("--qset", required=True, help="question-set version")
    export_parser.add_argument("--chunker", default="sections", help="chunker of the runs (default: sections)")
    export_parser.add_argument("--depth", type=whole_number(1), default=10,
                               help="top k of each run pooled (default: 10)")
    export_parser.add_argument("--output", type=Path, required=True, help="pool file to fill: .csv or .jsonl")
    export_parser.set_defaults(handler=pool_export_command)
    import_parser = commands.add_parser("pool-import", help="filled pool file -> a new frozen question-set version")
    import_parser.add_argument("filled", type=Path, help="the pool file with grades filled in")
    import_parser.add_argument("--questions", type=Path, required=True, help="the version's JSONL it was pooled from")
    import_parser.add_argument("--version", required=True, help="name of the new version")
    import_parser.add_argument("--output", type=Path, required=True, help="JSONL of the new version (must not exist)")
    import_parser.add_argument("--lock", type=Path, required=True, help="the lock file the new version is frozen in")
    import_parser.set_defaults(handler=pool_import_command)
    add_judge_command(commands)
    publish_parser = commands.add_parser("publish", help="copy an LLM output into the data folder and freeze it")
    publish_parser.add_argument("source", type=Path, help="the file the `llm` target wrote under results/")
    publish_parser.add_argument("--version", required=True, help="name in the lock (and in config `qsets`)")
    publish_parser.add_argument("--dest", type=Path, required=True, help="where the frozen file lives (never replaced)")
    publish_parser.add_argument("--lock", type=Path, required=True, help="the dataset's lock file")
    publish_parser.set_defaults(handler=publish_command)
    # Listed for --help; rankbench.cli runs it before this parser is built (with light imports: cli/run.py).
    run_parser = commands.add_parser("run", allow_abbrev=False, help=RUN_HELP, description=RUN_DESCRIPTION)
    add_run_options(run_parser)
    run_parser.set_defaults(handler=lambda _: run_command(argv[1:]))
    add_run_commands(commands)
    add_recommend_command(commands)
    args = parser.parse_args(argv)
    try:
        return int(args.handler(args))
    except InputError as error:
        print(f"rankbench: {error}", file=sys.stderr)
        return EXIT_USAGE
