"""The recommended configuration in words and as a config fragment: the box at the top of index.html and of the
comparison page (one line per axis with its evidence and what it saves), results/<dataset>/<version>/
recommended.yaml (methods, chunkers and encoders keys as config.yaml spells them) and the state `rankbench
recommend` exits on. The decisions are analysis/recommend_axes.py's."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import numpy as np
import yaml

from rankbench.analysis.recommend import Decision, Test, Thresholds, share_bounds
from rankbench.analysis.recommend_axes import Recommendation, grid_point
from rankbench.io.markdown import markdown_literal
from rankbench.retrieval.registry import METHOD_TYPES, method_inputs

FILE = "recommended.yaml"


def _p(p: float) -> str:
    return "p < 0.001" if p < 0.001 else f"p = {p:.3f}"


def _evidence(test: Test) -> str:
    kind = "non-inferiority" if test.kind == "noninferior" else "superiority"
    family = f" over {test.family} comparisons" if test.family > 1 else ""
    return (f"Δ {test.diff:+.3f} (95% CI {test.low:+.3f} to {test.high:+.3f}), one-sided {kind} Holm {_p(test.p_holm)}"
            f"{family}, W/T/L {test.wins}/{test.ties}/{test.losses} over {test.n} questions")


def _saves(decision: Decision) -> str:
    """What the kept option saves against the best-scoring one (the costliest, when the best is the cheapest), or
    costs against the cheapest, when it is the best because it is better."""
    kept, options = decision.kept, decision.options
    if kept.label != decision.best:
        other, verb = next(o for o in options if o.label == decision.best), "saves"
    elif kept.label == options[0].label:
        other, verb = options[-1], "saves"
    else:
        other, verb = options[0], "costs"
    if other.label == kept.label:
        return ""
    if "bytes" in kept.figures:
        ratio = other.figures["bytes"] / kept.figures["bytes"]
        return (f"; {verb}: an index {ratio if verb == 'saves' else 1 / ratio:.1f}× "
                f"{'smaller' if verb == 'saves' else 'larger'} than {markdown_literal(other.label)}'s "
                f"({kept.figures['bytes'] / 1e6:,.2f} MB against {other.figures['bytes'] / 1e6:,.2f})")
    if "depth" in kept.figures:
        fewer = abs(other.figures["depth"] - kept.figures["depth"])
        return f"; {verb}: {fewer:.0f} {'fewer' if verb == 'saves' else 'more'} candidates re-scored per question"
    tokens = kept.figures.get("tokens", np.nan), other.figures.get("tokens", np.nan)
    if np.isfinite(tokens[0]) and np.isfinite(tokens[1]):
        return (f"; {verb}: {abs(tokens[1] - tokens[0]):,.0f} prompt tokens per question "
                f"({tokens[0]:,.0f} against {tokens[1]:,.0f} with {other.label})")
    if "k" in kept.figures:
        more = abs(other.figures["k"] - kept.figures["k"])
        return f"; {verb}: {more:.0f} {'fewer' if verb == 'saves' else 'more'} chunks in the prompt"
    if "size" in kept.figures:
        sizes = [f"size {size:,.0f}" if np.isfinite(size) else "no size limit"
                 for size in (kept.figures["size"], other.figures["size"])]
        return f"; {verb}: chunks of {sizes[0]} against {sizes[1]} with {markdown_literal(other.label)}"
    return f"; {verb}: {markdown_literal(other.label)}'s extra work" if verb == "saves" else \
        f"; {verb}: more work than {markdown_literal(other.label)}"


def decision_line(decision: Decision) -> str:
    """One axis: the choice, how it was made, its evidence and what it saves (undecided: what would decide it)."""
    label = lambda name: markdown_literal(name) + (  # noqa: E731 - a label with its detail
        f" ({markdown_literal(detail)})" if (detail := next(o.detail for o in decision.options if o.label == name))
        and detail != name else "")
    head = f"- **{decision.axis}** ({decision.metric}, δ {decision.margin:g}"
    head += f"; {decision.note})" if decision.note else ")"
    test = decision.tests[0] if decision.tests else None
    if decision.how == "identical" and test:
        text = (f"**{label(decision.chosen)}**: ranks as {markdown_literal(test.b)} on every question "
                f"(W/T/L {test.wins}/{test.ties}/{test.losses})")
    elif decision.how == "cheapest":
        text = f"**{label(decision.chosen)}**: the cheapest option and the best"
        text += (f", shown no worse than the runner-up {markdown_literal(test.b)} by δ: {_evidence(test)}"
                 if test else "")
    elif decision.how == "noninferior" and test:
        text = (f"**{label(decision.chosen)}**: the cheapest option shown no worse than the best, "
                f"{markdown_literal(test.b)}, by δ: {_evidence(test)}")
    elif decision.how == "better":
        closest = max(decision.tests, key=lambda t: (t.p_holm, t.b))
        text = (f"**{label(decision.chosen)}**: shown above every cheaper option (the closest, "
                f"{markdown_literal(closest.b)}: {_evidence(closest)})")
    else:
        others = ", ".join(markdown_literal(name) for name in decision.remaining)
        needed = ("more questions would not decide it" if not np.isfinite(decision.needed)
                  else f"about {int(decision.needed):,} questions would decide it at δ {decision.margin:g}")
        last = decision.tests[-1] if decision.tests else None
        return (f"{head}: **undecided** between {others}: no cheaper option is shown no worse than the best by δ "
                f"and the best is not shown above them{f' ({_evidence(last)})' if last else ''}. These "
                f"questions could show no more than δ {decision.smallest_margin:.3f}; {needed}. "
                f"{FILE} keeps the best-scoring, {label(decision.best)}.")
    return f"{head}: {text}{_saves(decision)}."


def _share(count: int, n: int) -> str:
    low, high = share_bounds(count, n)
    return f"{count / n:.0%} ({count} of {n}; 95% CI {low:.0%}–{high:.0%})"


def thresholds_line(found: Thresholds, target: Mapping[str, float]) -> str:
    """The proposed thresholds with their held-out rates against the target."""
    lost, caught = found.lost[0] / found.lost[1], found.caught_t2[0] / found.caught_t2[1]
    met = lost <= target["answerable_lost"] and caught >= target["unanswerable_caught"]
    return (f"- **abstention thresholds** ({markdown_literal(found.method)}, target: catch "
            f"{target['unanswerable_caught']:.0%} of the unanswerable questions, lose at most "
            f"{target['answerable_lost']:.0%} of the answerable ones): t1 = {found.t1:.4g} (abstain below), "
            f"t2 = {found.t2:.4g} (answer with caution below), fitted on every question. Held out "
            f"({found.folds}-fold cross-validation, each question scored by thresholds fitted without it): below t1 "
            f"{_share(*found.lost)} of the answerable questions are lost and {_share(*found.caught_t1)} of the "
            f"unanswerable ones caught; below t2 {_share(*found.caught_t2)} of the unanswerable ones. "
            + ("The target is met on held-out questions." if met else
               "**Not met** on held-out questions: the score does not separate them this well; move the target or "
               "take another signal (calibration page)."))


def thresholds_met(found: Thresholds, target: Mapping[str, float]) -> bool:
    """The held-out rates meet the target."""
    return (found.lost[0] / found.lost[1] <= target["answerable_lost"]
            and found.caught_t2[0] / found.caught_t2[1] >= target["unanswerable_caught"])


def box_lines(rec: Recommendation, target: Mapping[str, float]) -> list[str]:
    """The box's body (Markdown, no heading, no link): the method the configuration keeps, one line per axis."""
    undecided = state(rec, target)["undecided"]
    lines = [f"Keep **{markdown_literal(rec.method)}**"
             + (f" over chunker **{markdown_literal(rec.chunker)}**" if rec.chunker else "")
             + f"; the config fragment is `{FILE}` in this version's folder (`rankbench recommend` prints it). "
             "On every axis the grid varies, the cheapest option shown no worse than the best by δ "
             "(`evaluation.margin`; docs/concepts/report.md, *Recommended configuration*)"
             + (f"; undecided: {', '.join(undecided)}." if undecided else "; every axis is decided."), ""]
    lines += [decision_line(decision) for decision in rec.decisions]
    if rec.thresholds is not None:
        lines.append(thresholds_line(rec.thresholds, target))
    elif rec.abstention_note:
        lines.append(f"- **abstention thresholds**: none proposed: {rec.abstention_note}.")
    return [*lines, ""]


def state(rec: Recommendation, target: Mapping[str, float]) -> dict[str, Any]:
    """What `rankbench recommend` exits on: each axis and whether it is decided."""
    axes = {d.axis: d.chosen is not None for d in rec.decisions}
    if rec.thresholds is not None:
        axes["abstention thresholds"] = thresholds_met(rec.thresholds, target)
    return {"method": rec.method, "axes": axes, "undecided": sorted(axis for axis, done in axes.items() if not done)}


def _name(method: str, kept: set[str]) -> str:
    """A kept method's name in the fragment: a grid point's base name (its own values written out), unless two
    points of one grid are kept."""
    point = grid_point(method)
    if point is None or sum(1 for m in kept if (grid_point(m) or ("",))[0] == point[0]) > 1:
        return re.sub(r"[^A-Za-z0-9_.+-]", "-", method).strip("-")
    return point[0]


def fragment(rec: Recommendation, config: Mapping[str, Any], methods: Mapping[str, Mapping[str, Any]],
             chunkers: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """The methods, chunkers and encoders keys of the recommended configuration: the kept method, the methods it
    consumes and the baseline (evaluation.baseline must name a method), each with the chosen chunker and the
    proposed abstention zones; `methods` the expanded methods as configured, `chunkers` the expanded chunkers."""
    kept: list[str] = []
    queue = [rec.method, *([config["evaluation"]["baseline"]] if config.get("evaluation", {}).get("baseline") else [])]
    while queue:
        method = queue.pop(0)
        if method in methods and method not in kept:
            kept.append(method)
            queue += [rec.swaps.get(name, name) for name in method_inputs(methods[method])]
    names = {method: _name(method, set(kept)) for method in kept}
    out_methods: dict[str, Any] = {}
    for method in kept:
        spec = {key: value for key, value in methods[method].items() if key != "grid"}
        if "input" in spec:
            spec["input"] = names.get(rec.swaps.get(spec["input"], spec["input"]), spec["input"])
        if "inputs" in spec:
            spec["inputs"] = [names.get(rec.swaps.get(name, name), name) for name in spec["inputs"]]
        if rec.chunker and "chunker" in METHOD_TYPES[spec["type"]].keys and not method_inputs(spec):
            spec["chunker"] = rec.chunker
        if rec.thresholds is not None and method == rec.thresholds.method:
            t1 = float(f"{rec.thresholds.t1:.6g}")
            t2 = max(float(f"{rec.thresholds.t2:.6g}"), float(np.nextafter(t1, np.inf)))
            spec["abstention"] = {**spec.get("abstention", {}), "zones": [t1, t2]}
        out_methods[names[method]] = spec
    used = {config["chunker"], *(spec["chunker"] for spec in out_methods.values() if "chunker" in spec)}
    encoders = {value for spec in out_methods.values() for value in _encoder_names(spec)}
    return {"chunkers": {name: dict(chunkers[name]) for name in sorted(used) if name in chunkers},
            "encoders": {name: dict(config["encoders"][name]) for name in sorted(encoders)
                         if name in config.get("encoders", {})},
            "methods": out_methods}


def _encoder_names(value: Any, key: str = "") -> list[str]:
    """The encoder names a method's settings name (under any `encoder` key, at any depth)."""
    if isinstance(value, Mapping):
        return [name for k, v in value.items() for name in _encoder_names(v, k)]
    return [value] if key == "encoder" and isinstance(value, str) else []


def fragment_yaml(rec: Recommendation, config: Mapping[str, Any], methods: Mapping[str, Mapping[str, Any]],
                  chunkers: Mapping[str, Mapping[str, Any]], target: Mapping[str, float], dataset: str,
                  qset: str) -> str:
    """recommended.yaml: a comment per axis (its choice and how sure), then the fragment."""
    lines = [f"# The recommended configuration of {dataset} {qset} (rankbench recommend; docs/concepts/report.md).",
             "# Paste these keys over the methods, chunkers and encoders of config.yaml: `rankbench check` accepts "
             "it.", f"# Kept: {rec.method}" + (f" over chunker {rec.chunker} (decided on the methods that differ only "
                                              "by chunker; this combination is measured once you run it)"
                                              if rec.chunker else "")]
    for decision in rec.decisions:
        chosen = decision.chosen or f"undecided (kept the best-scoring, {decision.best})"
        lines.append(f"# {decision.axis}: {chosen} [{decision.how}]")
    if rec.thresholds is not None:
        met = "met" if thresholds_met(rec.thresholds, target) else "NOT met"
        lines.append(f"# abstention thresholds: zones [t1, t2] on {rec.thresholds.method}; target {met} on held-out "
                     "questions")
    body = yaml.safe_dump(fragment(rec, config, methods, chunkers), sort_keys=False, allow_unicode=True)
    return "\n".join(lines) + "\n" + body
