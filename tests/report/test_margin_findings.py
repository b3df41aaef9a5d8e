"""evaluation.margin end to end in the library: the pairs' one-sided tests point the right way (checked against
scipy on symmetric differences), and the findings say "no worse than the best by more than δ" only when it is
shown, never for a method merely not shown different."""

from __future__ import annotations

import numpy as np
import pandas as pd
import scipy.stats

from rankbench.evaluation.scoring import MARGIN_COLUMNS, summarize
from rankbench.report.findings import findings

N = 60
NOISE = np.tile([0.04, -0.04, 0.1, -0.1], N // 4)  # symmetric: the one-sided test is scipy's t-test


def _values() -> pd.DataFrame:
    best = np.linspace(0.5, 0.9, N)
    per_method = {"best": best, "close": best - 0.01 + NOISE, "vague": best - 0.02 + 10 * NOISE / 4,
                  "worse": best - 0.3 + NOISE}
    return pd.concat([pd.DataFrame({"method": m, "qid": [f"q{i}" for i in range(N)], "metric": "ndcg", "k": 10,
                                    "value": v, "grain": "document", "kind": "all"})
                      for m, v in per_method.items()], ignore_index=True)


def test_pairs_carry_the_margin_tests_in_both_directions() -> None:
    _, pairs = summarize(_values(), ["grain", "kind"], None, n_resamples=2000, margins={("ndcg", 10): 0.05})
    row = pairs[(pairs["method_a"] == "best") & (pairs["method_b"] == "close")].iloc[0]
    d = (_values().query("method == 'close'")["value"].to_numpy() - _values().query("method == 'best'")["value"]
         .to_numpy())  # close - best: symmetric about -0.01
    assert row["margin"] == 0.05
    assert row["p_noninferior_b"] == scipy.stats.ttest_1samp(d, -0.05, alternative="greater").pvalue
    assert row["p_noninferior_a"] < 1e-6  # best no worse than close: obviously
    _, plain = summarize(_values(), ["grain", "kind"], None, n_resamples=2000)
    assert plain[MARGIN_COLUMNS].isna().all().all()  # no margin: no test


def test_findings_say_no_worse_only_when_shown() -> None:
    values = _values()
    summary, pairs = summarize(values, ["grain", "kind"], None, n_resamples=2000, margins={("ndcg", 10): 0.05})
    aggregate = summary.assign(dataset="d", qset="v1", n_excluded=0)
    sentences = findings(aggregate, pairs, "document", [("ndcg", 10)], {}, 0.05, 2000)
    margin = next(s for s in sentences if "no worse than best by more than 0.05" in s)
    named = margin.split(" no worse than")[0]
    assert "close (Holm p" in named and "vague" not in named and "worse (Holm" not in named, margin
    assert "for vague, worse that is not shown" in margin
    noise = next(s for s in sentences if "not shown different from best" in s)
    assert "vague" in noise and "Not shown different is not equivalent" in noise  # never worded as equivalence
    _, plain = summarize(values, ["grain", "kind"], None, n_resamples=2000)
    assert not any("no worse than" in s for s in findings(aggregate, plain, "document", [("ndcg", 10)], {}, 0.05,
                                                          2000))
