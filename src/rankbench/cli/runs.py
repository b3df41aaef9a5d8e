"""`rankbench runs`, `rankbench diff-runs` and `rankbench gate`: the recorded runs of a version, what changed
between two of them, and a regression gate for CI (exit 0 pass, 1 fail, 3 inconclusive; docs/how-to/runs.md)."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path

import pandas as pd

from rankbench.analysis.run_diff import RunDiff, abstention_verdict, diff_runs, gate_verdict
from rankbench.analysis.run_store import (
    RUNS_FOLDER,
    StoredRun,
    find_run,
    headline_means,
    pin_run,
    pinned_run,
    stored_runs,
)
from rankbench.cli.options import finite_number, whole_number
from rankbench.configuration.defaults import RESULTS
from rankbench.errors import InputError
from rankbench.evaluation.metric_names import parse_metrics
from rankbench.io.loaders import margin_bounds
from rankbench.report.run_pages import abstention_paragraph, diff_markdown, gate_paragraph, runs_table

DEFAULT_MAX_DROP = 0.01
DEFAULT_ABSTENTION_MARGIN = 0.05


def _only(found: list[str], what: str, flag: str, where: Path) -> str:
    if len(found) == 1:
        return found[0]
    if not found:
        raise InputError(where, None, f"holds no recorded run of any {what}",
                         "Run the workflow from the project folder first, or give --results.")
    raise InputError(where, None, f"holds runs of several {what}s ({', '.join(found)})", f"Choose one with {flag}.")


def store_folder(args: argparse.Namespace) -> Path:
    """The runs-history folder of --dataset / --qset under --results (each optional when only one has runs)."""
    results = Path(args.results)
    dataset = args.dataset or _only(sorted({p.parents[1].name for p in results.glob(f"*/*/{RUNS_FOLDER}")}),
                                    "dataset", "--dataset", results)
    qset = args.qset or _only(sorted(p.parent.name for p in (results / dataset).glob(f"*/{RUNS_FOLDER}")),
                              "question-set version", "--qset", results / dataset)
    folder = results / dataset / qset / RUNS_FOLDER
    if not folder.is_dir():
        raise InputError(folder, None, "does not exist: no run of this dataset and version is recorded",
                         "Check --dataset and --qset (`rankbench runs` lists what is recorded).")
    return folder


def _texts(folder: Path) -> dict[str, str]:
    """Question texts of the version (its questions.parquet), for naming the questions that moved."""
    path = folder.parent / "questions.parquet"
    if not path.exists():
        return {}
    questions = pd.read_parquet(path, columns=["qid", "question"])
    return dict(zip(questions["qid"].astype(str), questions["question"]))


def _diff(before: StoredRun, after: StoredRun, resamples: int, seed: int) -> RunDiff:
    return diff_runs(before.values(), after.values(), before.meta, after.meta, resamples, seed)


def store_folders(args: argparse.Namespace) -> list[Path]:
    """Every runs-history folder under --results matching --dataset and --qset (each: all when not given)."""
    found = sorted(path for path in Path(args.results).glob(f"{args.dataset or '*'}/{args.qset or '*'}/{RUNS_FOLDER}")
                   if path.is_dir())
    return found or [store_folder(args)]  # none: store_folder says what is missing


def runs_command(args: argparse.Namespace) -> int:
    """List the recorded runs of every version (of --dataset and --qset when given), one table per version."""
    folders = store_folders(args)
    for number, folder in enumerate(folders):
        runs = stored_runs(folder)
        headline = [tuple(item) for item in runs[-1].meta["headline"]] if runs else [("ndcg", 10)]
        metric, k = headline[0]
        means = {run.run_id: headline_means(run.values(), metric, int(k)) for run in runs}
        heading = f"# {folder.parents[1].name}, question-set version {folder.parent.name}\n\n" \
            if len(folders) > 1 else ""
        print(("\n" if number else "") + heading + (
            f"{len(runs)} run(s) recorded in {folder}\n\n{runs_table(runs, headline, means)}" if runs
            else f"No run recorded in {folder}."))
    return 0


def diff_runs_command(args: argparse.Namespace) -> int:
    """Print what changed between two runs (default: the last two)."""
    folder = store_folder(args)
    runs = stored_runs(folder)
    after = find_run(runs, args.b or "last", str(folder))
    before = find_run(runs, args.a, str(folder)) if args.a else find_run(runs, "last~1", str(folder))
    headline = [tuple(item) for item in after.meta["headline"]]
    print(diff_markdown(_diff(before, after, args.resamples, args.seed), headline, _texts(folder),
                        f"Run {before.run_id} → run {after.run_id}", level=1), end="")
    return 0


def gate_command(args: argparse.Namespace) -> int:
    """Exit 0 (pass), 1 (fail: the method's run is missing, or its metric dropped significantly beyond the tolerance
    or, with --margin, is shown worse and not within the margin) or 3 (inconclusive); bad usage is an InputError
    (exit 2)."""
    folder = store_folder(args)
    runs = stored_runs(folder)
    if args.pin:
        run = find_run(runs, args.pin, str(folder))
        print(f"{run.run_id} pinned as the gate's reference ({pin_run(folder, run)})")
        return 0
    if args.abstention:
        return abstention_gate(args, folder, runs)
    if args.lost_margin is not None or args.caught_margin is not None:
        raise InputError("rankbench gate", "--lost-margin/--caught-margin", "apply to the abstention gate only",
                         "Add --abstention, or drop them.")
    if not args.method or not args.metric:
        raise InputError("rankbench gate", None, "needs --method and --metric (or --pin RUN)",
                         "e.g. rankbench gate --method bm25 --metric ndcg@10")
    after = find_run(runs, "last", str(folder))
    if args.margin is not None and args.max_drop is not None:
        raise InputError("rankbench gate", "--margin", "replaces --max-drop (a tested margin instead of a tolerated "
                         "drop)", "Give one of them.")
    recorded = [f"{m}@{k}" if k else m for m, k in after.meta["recorded"]]
    try:
        (metric, k), = parse_metrics(args.metric)
    except ValueError:  # a MetricNameError too
        metric, k = "", 0
    if [metric, k] not in after.meta["recorded"]:
        raise InputError("rankbench gate", "--metric", f"{args.metric!r} is not a recorded metric",
                         f"Use one of: {', '.join(recorded)} (report.headline and report.plot_metric).")
    before = reference_run(args, folder, runs, after)
    if not any(args.method in run.meta.get("methods", {}) for run in (before, after)):
        known = sorted(set(before.meta.get("methods", {})) | set(after.meta.get("methods", {})))
        raise InputError("rankbench gate", "--method", f"{args.method!r} is in neither run ({before.run_id}, "
                         f"{after.run_id})", f"Use one of: {', '.join(known)}.")
    diff = _diff(before, after, args.resamples, args.seed)
    max_drop = DEFAULT_MAX_DROP if args.max_drop is None else args.max_drop
    verdict = gate_verdict(diff, args.method, metric, k, max_drop, args.alpha, args.margin)
    print(gate_paragraph(verdict, diff, args.method, metric, k, max_drop, args.alpha, _texts(folder), args.margin))
    return verdict.exit_code


def reference_run(args: argparse.Namespace, folder: Path, runs: list[StoredRun], after: StoredRun) -> StoredRun:
    """The gate's reference run (--against), checked to be of the same questions as the latest unless told not to."""
    if args.against == "pinned":
        before = pinned_run(folder, runs)
    else:
        before = find_run(runs, "last~1" if args.against == "last" else args.against, str(folder))
    if not args.across_question_sets:
        same_questions(before, after, folder)
    return before


def abstention_gate(args: argparse.Namespace, folder: Path, runs: list[StoredRun]) -> int:
    """`rankbench gate --abstention`: the method's answerable questions lost to the abstain zone and unanswerable
    questions caught by it, latest run against the reference, each against its margin (exit 0, 1 or 3)."""
    if not args.method or args.metric or args.margin is not None or args.max_drop is not None:
        raise InputError("rankbench gate", "--abstention", "needs --method and gates the abstention zones, not a "
                         "metric (no --metric, --margin or --max-drop)",
                         "e.g. rankbench gate --abstention --method bm25 --lost-margin 0.05 --caught-margin 0.05")
    after = find_run(runs, "last", str(folder))
    before = reference_run(args, folder, runs, after)
    for run in (before, after):
        if args.method not in run.meta.get("abstention", {}).get("zones", {}):
            zoned = sorted(run.meta.get("abstention", {}).get("zones", {}))
            raise InputError(run.path, args.method, "has no abstention zones in this run",
                             f"Use a method with zones ({', '.join(zoned)})" if zoned else
                             f"Set methods.{args.method}.abstention.zones: [t1, t2] in the config and run the "
                             "workflow again (the gate compares two runs that both have them)")
    diff = _diff(before, after, args.resamples, args.seed)
    lost = DEFAULT_ABSTENTION_MARGIN if args.lost_margin is None else args.lost_margin
    caught = DEFAULT_ABSTENTION_MARGIN if args.caught_margin is None else args.caught_margin
    verdict = abstention_verdict(diff, args.method, lost, caught, args.alpha)
    print(abstention_paragraph(verdict, diff, args.method, lost, caught, args.alpha))
    return verdict.exit_code


SCOPE = (("dataset", "datasets"), ("qset", "question-set versions"), ("qset_sha256", "question-set contents (sha256)"))


def same_questions(before: StoredRun, after: StoredRun, folder: Path) -> None:
    """The two runs were made from one dataset, question-set version and question-set content, or an InputError
    says which differs (a draft version's labels may have changed between them; a record may have been copied)."""
    for key, what in SCOPE:
        old, new = before.meta.get(key), after.meta.get(key)
        if old != new:
            shown = (old[:12] + "…", new[:12] + "…") if key == "qset_sha256" and old and new else (old, new)
            raise InputError(folder, f"runs {before.run_id} and {after.run_id}",
                             f"were made from different {what} ({shown[0]} and {shown[1]}), so their numbers are "
                             "not comparable", "Compare with a run of the same questions (`rankbench runs` lists "
                             "them; --against RUN), or pass --across-question-sets to compare them anyway.")


def _where(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--results", default=RESULTS, help=f"the results folder (default: {RESULTS})")
    parser.add_argument("--dataset", help="dataset name (optional when one has recorded runs)")
    parser.add_argument("--qset", help="question-set version (optional when one has recorded runs)")


def _resampling(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--resamples", type=whole_number(1), default=10_000,
                        help="randomization resamples (default: 10000)")
    parser.add_argument("--seed", type=whole_number(0), default=0)


def metric_change(*, open_low: bool) -> Callable[[str], float]:
    """An argparse type for --max-drop and --margin: a change of a metric's mean within evaluation.margin's bounds
    (io.loaders.margin_bounds), the lower one excluded when open. Beyond them every loss passes: a drop from 1.000 to
    0.105 is "within 2", and 1e308 overflows the test."""
    low, high = margin_bounds()
    read = finite_number(low, high, open_low=open_low)

    def checked(text: str) -> float:
        try:
            return read(text)
        except argparse.ArgumentTypeError as error:
            raise argparse.ArgumentTypeError(f"{error}: a change of the metric's mean, bounded as evaluation.margin is "
                                             "in the config (a larger one would pass every regression)") from None
    return checked


def add_run_commands(commands: argparse._SubParsersAction) -> None:
    """The subcommands `runs`, `diff-runs` and `gate` (docs/how-to/runs.md)."""
    runs = commands.add_parser("runs", help="list the recorded runs of a question-set version")
    _where(runs)
    runs.set_defaults(handler=runs_command)
    diff = commands.add_parser("diff-runs", help="what changed between two recorded runs (default: the last two)")
    diff.add_argument("a", nargs="?", help="earlier run: id, id prefix, number or last~N (default: last~1)")
    diff.add_argument("b", nargs="?", help="later run (default: last)")
    _where(diff)
    _resampling(diff)
    diff.set_defaults(handler=diff_runs_command)
    gate = commands.add_parser("gate", help="exit 0 pass, 1 fail (a significant drop), 2 bad usage, 3 inconclusive "
                                            "(for CI)")
    gate.add_argument("--method", help="method to check, e.g. bm25")
    gate.add_argument("--metric", help="recorded metric, e.g. ndcg@10")
    gate.add_argument("--against", default="last",
                      help="reference: last (the run before the latest, default), a RUN, or pinned")
    low, high = margin_bounds()
    gate.add_argument("--max-drop", type=metric_change(open_low=False),
                      help=f"tolerated drop of the mean, in [{low:g}, {high:g}] (default: {DEFAULT_MAX_DROP})")
    gate.add_argument("--margin", type=metric_change(open_low=True),
                      help=f"non-inferiority margin δ, in ({low:g}, {high:g}], instead of --max-drop: pass "
                           "only when the loss is shown within δ, fail when shown worse, else inconclusive "
                           "(exit 3)")
    gate.add_argument("--abstention", action="store_true",
                      help="gate the method's abstention zones instead of a metric: fail when answerable questions "
                           "lost to the abstain zone or unanswerable questions caught get worse beyond a margin")
    share = finite_number(0, 1, open_low=True)
    gate.add_argument("--lost-margin", type=share,
                      help="--abstention: tolerated rise of the share of answerable questions in the abstain zone, "
                           f"in (0, 1] (default: {DEFAULT_ABSTENTION_MARGIN})")
    gate.add_argument("--caught-margin", type=share,
                      help="--abstention: tolerated fall of the share of unanswerable questions in the abstain zone, "
                           f"in (0, 1] (default: {DEFAULT_ABSTENTION_MARGIN})")
    gate.add_argument("--alpha", type=finite_number(0, 1, open_low=True, open_high=True), default=0.05,
                      help="significance level, strictly between 0 and 1 (default: 0.05)")
    gate.add_argument("--across-question-sets", action="store_true",
                      help="compare runs of another dataset, question-set version or question-set content (sha256) "
                           "too; without it the gate refuses them")
    gate.add_argument("--pin", metavar="RUN", help="record RUN as the pinned reference and exit")
    _where(gate)
    _resampling(gate)
    gate.set_defaults(handler=gate_command)


