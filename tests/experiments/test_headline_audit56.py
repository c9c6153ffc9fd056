# SPDX-License-Identifier: BSD-3-Clause
"""Audit J (session 56): a headline span over the seeds that have a value says how many it
covers and why the others are missing.

Before: ``variants``' quick headline read 'relu, seeds 0-1: 1 - corr(own relu)':
'3.7e-04-3.7e-04' and 'corr min-max': '... relu 1.000-1.000' while seed 1 had no ReLU SVM
(NaN), and its closest entry 'relu sigmoid' gave no correlation; ``mirror``'s spans and minima
dropped the seeds without an SVM the same way. The rows here are built by hand (no training),
so each expected entry is derived from the rows themselves.
"""

from __future__ import annotations

import math
from typing import Any

from svmgeo.experiments import mirror, variants

NAN = math.nan


def _variants_row(seed: int, corr: dict[str, float]) -> dict[str, Any]:
    """A relu row of the variants table with the given correlations."""
    return {
        "attention": "relu", "seed": seed, **{f"corr_{k}": corr[k] for k in variants.SVMS},
        "own": "relu", "corr_own": corr["relu"], "closest": variants.closest(corr), "tied": "",
        "loss": 0.1, "n_stuck": NAN, "stuck": "", "stuck_verdict": "",
    }  # fmt: skip


def test_variants_headline_counts_the_seeds_without_an_svm():
    rows = [
        _variants_row(0, dict(fro=0.571, nuc=0.592, linear=0.679, sigmoid=0.624, relu=0.9996)),
        _variants_row(1, dict(fro=0.419, nuc=0.287, linear=0.585, sigmoid=0.634, relu=NAN)),
    ]
    headline, _ = variants.summarize(rows)
    tag = "relu, seeds 0-1"
    own = headline[f"{tag}: 1 - corr(own relu)"]
    gap = 1 - rows[0]["corr_relu"]
    assert own.startswith(f"{gap:.1e}-{gap:.1e} (1 of 2 seeds; 1 NaN")
    spans = headline[f"{tag}: corr min-max"]
    r = rows[0]["corr_relu"]
    assert f"relu {r:.3f}-{r:.3f} (1 of 2 seeds; 1 NaN" in spans
    lo, hi = sorted(x["corr_fro"] for x in rows)
    assert f"fro {lo:.3f}-{hi:.3f}," in spans  # every seed has it: no count
    # the closest of each seed with its correlation; seed 1's is not its own SVM
    closest = headline[f"{tag}: closest (largest corr, no threshold)"]
    assert closest == ", ".join(f"{x['closest']} {x['corr_' + x['closest']]:.3f}" for x in rows)
    assert closest.endswith(f"sigmoid {rows[1]['corr_sigmoid']:.3f}")


def _mirror_rows(seed: int, own: float, others: dict[float, float], sparsity_svm: float):
    """The final row of one mirror run at p = 1.5 (two recorded steps, the last final)."""
    row = {
        "steps": "normalized", "p": 1.5, "seed": seed, "one_minus_corr": own,
        **{mirror._key(q): others.get(q, own if q == 1.5 else NAN) for q in mirror.PS},
        "sparsity_W": 0.1 + seed / 10, "sparsity_svm": sparsity_svm, "alpha_is_opt": True,
        "alpha_is_lot": True, "stop": "max_steps", "tied": "", "n_parts": 2,
    }  # fmt: skip
    return [{**row, "step": 0, "part": 0}, {**row, "step": 400, "part": 1}]


def test_mirror_headline_counts_the_seeds_without_an_svm():
    """Seed 1's Att-SVM(α) is infeasible: every ℓ_q cell NaN, no sparsity of W_mm_p."""
    rows = _mirror_rows(0, 1e-3, {1.1: 0.2, 2.0: 0.05, 3.0: 0.3}, 0.4) + _mirror_rows(
        1, NAN, {}, NAN
    )
    headline, _ = mirror.summarize(rows)
    tag = "normalized p=1.5"
    why = "no SVM (Att-SVM(α) infeasible, or a tied selection)"
    count = f"(1 of 2 seeds; 1 NaN: {why}"
    assert headline[f"{tag}: min 1-corr(W_T, W_mm_q), q != p"] == (
        f"{0.05:.2g} (1 of 2 seeds; 1 missing: {why})"
    )
    ratio = math.log10(0.05 / 1e-3)
    assert headline[f"{tag}: log10(nearest other / own 1-corr), min-max"].startswith(
        f"{ratio:.1f}-{ratio:.1f} {count}"
    )
    # a count over every seed, seed 1 counted as not closest (no SVM)
    assert headline[f"{tag}: seeds whose closest of the 4 SVMs is W_mm_p"] == "1/2"
    sparsity = headline[f"{tag}: sparsity W_T [W_mm_p], min-max"]
    assert sparsity.startswith(f"{0.1:.2f}-{0.2:.2f} [{0.4:.2f}-{0.4:.2f} {count}")


def test_span_names_what_it_leaves_out():
    """None, NaN and inf are missing values, counted by kind (not all called NaN); a span over
    every value carries no count."""
    from svmgeo.experiments._rows import span  # new in session 56

    assert span([0.25, 0.5], ".2f", "no SVM") == "0.25-0.50"
    assert span([0.25, None, NAN, math.inf, -math.inf, None], ".2f", "no SVM") == (
        "0.25-0.25 (1 of 6 seeds; 5 missing (2 None, 1 NaN, 1 inf, 1 -inf): no SVM)"
    )
    assert span([NAN], ".1e", "infeasible") == "- (0 of 1 seed; 1 NaN: infeasible)"
    assert span([None], ".1e", "") == "- (0 of 1 seed; 1 missing (1 None))"
