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

from svmgeo.experiments import mirror, optimizers, stability, variants

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


def _stability_row(seed: int, gap: float, corr: float) -> dict[str, Any]:
    """The final row of one softmax stability run (one recorded step)."""
    return {
        "attention": "softmax", "seed": seed, "step": 2000, "part": 0, "n_parts": 1,
        "loss": 0.1 + seed, "W_norm": 2.0, "lip_W": 1.5, "lip_W_bound": NAN, "lip_X": 3.0 + seed,
        "radius_min": 0.2, "radius_svm_min": NAN, "radius_gap": gap, "corr_limit": corr,
        "tied": "",
    }  # fmt: skip


def test_stability_headline_counts_the_seeds_without_a_limit():
    """Seed 1 has no limit direction (NaN gap and correlation): the spans said '0.01-0.01'
    as if over both seeds; the all-finite spans are unchanged."""
    rows = [_stability_row(0, 0.01, 0.99), _stability_row(1, NAN, NAN)]
    headline, _ = stability.summarize(rows)
    tag = "softmax at step 2000, seeds 0-1"
    count = f"(1 of 2 seeds; 1 NaN: {stability._NO_LIMIT})"
    assert headline[f"{tag}: max |r - r_svm|"] == f"{0.01:.2e}-{0.01:.2e} {count}"
    off = 1 - 0.99
    assert headline[f"{tag}: 1 - corr(W, limit)"] == f"{off:.1e}-{off:.1e} {count}"
    assert headline[f"{tag}: L_X"] == f"{3.0:.4g}-{4.0:.4g}"  # every seed: no count
    assert headline[f"{tag}: loss"] == f"{0.1:.3g}-{1.1:.3g}"


def _optimizers_row(seed: int, l1: float) -> dict[str, Any]:
    """A W gd row of the optimizers table: every correlation 0.5 but ``corr_l1``."""
    row: dict[str, Any] = {"param": "W", "optimizer": "gd", "seed": seed, "closest": "fro",
                           "tied": "", "face_lower_bounds": "none"}  # fmt: skip
    for k in optimizers.SVMS:
        row[f"corr_{k}"] = row[f"returned_corr_{k}"] = 0.5
    row["corr_l1"] = l1
    return row


def test_optimizers_headline_counts_a_none_correlation_by_kind():
    """A None cell (a CSV field read back empty) crashed _span with math.isnan(None); now
    missing, counted by kind as by _rows.span, beside a NaN one. All-finite spans unchanged."""
    rows = [_optimizers_row(0, 0.9), _optimizers_row(1, None), _optimizers_row(2, NAN)]  # type: ignore[arg-type]
    spans = optimizers.summarize(rows)[0]["W gd: corr min-max"]
    want = f"l1 {0.9:.3f}-{0.9:.3f} (1 of 3 seeds; 2 missing (1 None, 1 NaN): {optimizers._NO_SVM})"
    assert want in spans, spans
    assert f"fro {0.5:.3f}-{0.5:.3f}," in spans, spans  # every seed: no count
    spans = optimizers.summarize([_optimizers_row(0, None)])[0]["W gd: corr min-max"]  # type: ignore[arg-type]
    assert f"l1 - (0 of 1 seed; 1 missing (1 None): {optimizers._NO_SVM})" in spans, spans


def test_optimizers_headline_counts_the_seeds_without_an_svm():
    """Seed 1 has no l1 SVM (NaN): 'l1 0.900-0.900' read as a span over both seeds."""
    headline, _ = optimizers.summarize([_optimizers_row(0, 0.9), _optimizers_row(1, NAN)])
    spans = headline["W gd: corr min-max"]
    assert f"l1 {0.9:.3f}-{0.9:.3f} (1 of 2 seeds; 1 NaN: {optimizers._NO_SVM})" in spans, spans
    assert f"fro {0.5:.3f}-{0.5:.3f}," in spans, spans  # every seed: no count
    headline, _ = optimizers.summarize([_optimizers_row(0, NAN)])
    assert f"l1 - (0 of 1 seed; 1 NaN: {optimizers._NO_SVM})" in headline["W gd: corr min-max"]
