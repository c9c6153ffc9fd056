# SPDX-License-Identifier: BSD-3-Clause
r"""Experiment ``local``: does GD converge in direction to the SVM of the tokens it selects?
n = 6, T = 8, d = 10, W and (K, Q), under two protocols.

``protocol="cone"`` (a cone start in the spirit of TF-SVM Theorem 5, outside its step-size and
μ(α) hypotheses: Theorem 5 is for plain GD with η ≤ 1/L_W, μ = μ(α), R = R(μ); this runs
normalized GD, step 0.1, from R = 100 with 5 % noise, and computes neither; measured):
normalized GD started in the cone around the SVM direction of a random locally optimal token
selection (LOT) α,

.. math::

    W(0) = R\,\frac{W^{mm}_\alpha}{\|W^{mm}_\alpha\|_F} + \text{noise},\qquad
    \operatorname{corr}(W(t), W^{mm}_\alpha) \overset{?}{\to} 1

(the question the run measures, not a theorem for these steps).

``protocol="paper"`` (the paper's experiment): GD from zero (W) or a small random start
(K, Q); α is GD's final argmax selection, and every recorded iterate is correlated with
:math:`W^{mm}_\alpha` and :math:`W^{mm\star}_\alpha` of that α (none where the final largest
logit is tied: no selection, NaN, the tied queries named in ``tied``, :func:`final_selection`).
The paper's published curve for W is 0.75, 0.88, 0.97, 0.99, 0.996 at steps 100, 200, 500,
1000, 2000 (100 seeds).

Protocols and measured numbers: ``docs/experiments.md``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from .._linalg import balanced_factors, correlation
from .._validation import check_option
from ..analysis import is_locally_optimal
from ..data import TokenData, random_data
from ..gd import random_init, train
from ..selection import optimal_tokens
from ..solvers import att_svm
from ._registry import Experiment, register
from ._rows import (
    Rows,
    final_parts,
    finite,
    group,
    mean,
    median,
    quantile,
    seeds,
    tied_entry,
    unknown,
)
from ._selection import final_selection

__all__ = [
    "EXPERIMENT",
    "PAPER_KQ_INIT_SCALE",
    "PAPER_RECORD_EVERY",
    "PAPER_STEPS",
    "PUBLISHED_W_CURVE",
    "grid",
    "plot",
    "random_lot",
    "summarize",
    "trial",
]

#: Paper protocol, (K, Q): scale of the i.i.d. Gaussian start (W starts at zero).
PAPER_KQ_INIT_SCALE = 0.01
#: Steps of the paper's published W curve and its values (mean corr(W(t), W^mm_α) over 100
#: seeds of (n, T, d) = (6, 8, 10), α = GD's final selection).
PAPER_STEPS = (100, 200, 500, 1000, 2000)
#: Paper protocol: record every this many steps (a divisor of every step in PAPER_STEPS).
PAPER_RECORD_EVERY = 20
PUBLISHED_W_CURVE = (0.75, 0.88, 0.97, 0.99, 0.996)


def random_lot(data: TokenData, seed: int, max_tries: int) -> tuple[np.ndarray, bool]:
    """A random selection that is a LOT for both norms, by score ascent from a uniform draw.

    Start from α_i uniform; while α is not locally optimal for Att-SVM(α) (Frobenius) and
    Att-SVM⋆(α) (nuclear, whose support tokens may differ), move every violating sequence to
    its highest-scoring violating support token (a strict score increase, so this ends, at
    worst at the optimal tokens). Returns α and whether it is such a LOT (False only after
    ``max_tries`` moves or an infeasible α; then α = opt).
    """
    rng = np.random.default_rng([seed, 7])
    alpha = rng.integers(data.T, size=data.n)
    for _ in range(max_tries):
        lot = is_locally_optimal(data, alpha)
        if lot:
            lot = is_locally_optimal(data, alpha, norm="nuc")
            if lot:
                return alpha, True
        if not lot.violations:
            break
        best: dict[int, tuple[float, int]] = {}
        for v in lot.violations:
            if v.seq not in best or v.score_token > best[v.seq][0]:
                best[v.seq] = (v.score_token, v.token)
        for i, (_, t) in best.items():
            alpha[i] = t
    return optimal_tokens(data), False


def _alpha_softmax(probs: np.ndarray, alpha: np.ndarray) -> np.ndarray:
    """(R,) mean over sequences of the softmax probability of the selected token α_i."""
    p = probs[:, :, 0, :] if probs.ndim == 4 else probs
    return p[:, np.arange(p.shape[1]), alpha].mean(axis=1)


def _cone_start(
    data: TokenData, alpha: np.ndarray, seed: int, param: str, radius: float, noise: float
) -> Any:
    """R·W^mm_α/‖W^mm_α‖ (nuclear W^mm⋆_α for (K, Q), as balanced factors) plus noise."""
    target = att_svm(data, alpha, norm="fro" if param == "W" else "nuc").W
    assert target is not None  # a LOT is feasible by definition
    rng = np.random.default_rng([seed, 11])
    W0 = radius * target / np.linalg.norm(target)
    W0 = W0 + noise * radius * rng.standard_normal((data.d, data.d)) / data.d
    return W0 if param == "W" else balanced_factors(W0, data.d)


def trial(
    n: int,
    T: int,
    d: int,
    seed: int,
    param: str,
    n_steps: int,
    protocol: str = "cone",
    radius: float = 100.0,
    noise: float = 0.05,
    max_tries: int = 50,
    n_records: int = 50,
    init_scale: float = PAPER_KQ_INIT_SCALE,
) -> list[dict[str, Any]]:
    r"""Normalized GD on W or (K, Q) (m = d); correlation of every recorded iterate with the
    SVMs of a selection α.

    ``protocol="cone"``: α is a random LOT for both norms (see :func:`random_lot`). W runs
    start at :math:`R\,W^{\mathrm{mm}}_\alpha/\|W^{\mathrm{mm}}_\alpha\|_F` (Frobenius),
    (K, Q) runs at the balanced factors of the same point built from the nuclear
    :math:`W^{\mathrm{mm}\star}_\alpha`; both plus a Gaussian perturbation of relative size
    ``noise``.

    ``protocol="paper"``: W starts at zero, (K, Q) at i.i.d. N(0, ``init_scale``²) entries
    (seeded by ``seed``); α is GD's argmax selection at the last step, none where that is
    tied (:func:`final_selection`: the SVMs, the softmax of α and the α verdicts are then NaN /
    None and ``tied`` names the tied queries; ``""`` otherwise, and always for the cone
    protocol); records every ``PAPER_RECORD_EVERY`` steps (``n_records`` applies to the cone
    protocol).

    One row per recorded step: correlations of W(t) with both SVM solutions of α (NaN when
    Att-SVM(α) is infeasible, possible for the paper's α only), the mean softmax probability
    of the α tokens, whether α is the optimal selection and whether it is a LOT (Frobenius;
    ``alpha_is_lot`` None when the LOT test is undecided, :class:`~svmgeo.LocalOptimality`),
    and for the cone protocol whether the random LOT search succeeded (None for "paper").
    """
    check_option(protocol, "protocol", ("cone", "paper"), where="local trial")
    data = random_data(n, T, d, seed=seed)
    found: bool | None = None
    alpha: np.ndarray | None
    if protocol == "cone":
        alpha, found = random_lot(data, seed, max_tries)
        init: Any = _cone_start(data, alpha, seed, param, radius, noise)
    else:
        init = "zero" if param == "W" else ("random", init_scale)
    run = train(
        data,
        param=param,
        m=d if param == "KQ" else None,
        step_size=0.1 if param == "W" else 0.02,
        n_steps=n_steps,
        init=init,
        seed=seed if random_init(init) else None,
        record_every=max(1, n_steps // n_records) if protocol == "cone" else PAPER_RECORD_EVERY,
        record=("W", "probs"),
    )
    hist = run.history
    assert hist.W is not None and hist.probs is not None and run.W is not None
    tied = ""
    if protocol != "cone":
        alpha, tied = final_selection(data, run.W)
    nan = float("nan")
    if alpha is None:  # a tied final selection: no α, no SVM to compare with
        fro = nuc = None
        soft = np.full(len(hist.step), nan)
        is_opt: bool | None = None
        is_lot: bool | None = None
    else:
        fro = att_svm(data, alpha, norm="fro").W
        nuc = att_svm(data, alpha, norm="nuc").W
        soft = _alpha_softmax(hist.probs, alpha)
        is_opt = bool(np.array_equal(alpha, optimal_tokens(data)))
        # three values: True (a LOT), False (not a LOT; an infeasible alpha), None (undecided)
        is_lot = is_locally_optimal(data, alpha).answer if fro is not None else False
    return [
        {
            "step": int(step),
            "corr_fro": nan if fro is None else correlation(W, fro),
            "corr_nuc": nan if nuc is None else correlation(W, nuc),
            "softmax_alpha": float(s),
            "alpha_is_opt": is_opt,
            "alpha_is_lot": is_lot,
            "random_lot_found": found,
            "tied": tied,
        }
        for step, W, s in zip(hist.step, hist.W, soft, strict=True)
    ]


def grid(quick: bool) -> list[dict[str, Any]]:
    """n = 6, T = 8, d = 10, 100 seeds (quick 3), W and (K, Q); the cone protocol with 5000
    steps (quick 400), the paper's with 2000 (quick 200)."""
    return [
        {
            "n": 6,
            "T": 8,
            "d": 10,
            "seed": s,
            "param": param,
            "n_steps": steps,
            "protocol": protocol,
        }
        for protocol, steps in (("cone", 400 if quick else 5000), ("paper", 200 if quick else 2000))
        for s in seeds(quick, 3, 100)
        for param in ("W", "KQ")
    ]


def summarize(rows: Rows) -> tuple[dict[str, Any], Rows]:
    """Per (protocol, param, step): median, 10 % quantile and mean of the correlations, mean
    softmax of α; headline: final correlations (cone), mean curve at the paper's steps, and
    how many paper runs end on α ≠ opt, on α not a LOT, on α whose LOT test is undecided
    (counted apart: neither a LOT nor not one) and on an infeasible Att-SVM(α), and the seeds
    whose final selection is tied (no α: in none of those counts; when any). A row without
    ``tied`` (a table written before it) counts as unknown."""
    summary = []
    for (protocol, param, step), g in sorted(group(rows, ("protocol", "param", "step")).items()):
        summary.append(
            {
                "protocol": protocol,
                "param": param,
                "step": step,
                "median_corr_fro": median(r["corr_fro"] for r in g),
                "median_corr_nuc": median(r["corr_nuc"] for r in g),
                "q10_corr_fro": quantile([r["corr_fro"] for r in g], 0.1),
                "q10_corr_nuc": quantile([r["corr_nuc"] for r in g], 0.1),
                "mean_corr_fro": mean(r["corr_fro"] for r in g),
                "mean_corr_nuc": mean(r["corr_nuc"] for r in g),
                "mean_softmax_alpha": mean(r["softmax_alpha"] for r in g),
            }
        )
    last = final_parts(rows)
    w = [r for r in last if r["param"] == "W" and r["protocol"] == "cone"]
    kq = [r for r in last if r["param"] == "KQ" and r["protocol"] == "cone"]
    headline: dict[str, Any] = unknown(rows, ["tied"])
    headline |= {
        "datasets": len(w),
        "LOT alpha != opt": sum(not r["alpha_is_opt"] for r in w),
        "W: median final corr(W, W_mm fro)": median(r["corr_fro"] for r in w),
        "W: min final corr(W, W_mm fro)": min(finite(r["corr_fro"] for r in w), default=None),
        "W: median final corr(W, W_mm nuc)": median(r["corr_nuc"] for r in w),
        "KQ: median final corr(KQ', W_mm nuc)": median(r["corr_nuc"] for r in kq),
        "KQ: min final corr(KQ', W_mm nuc)": min(finite(r["corr_nuc"] for r in kq), default=None),
        "KQ: median final corr(KQ', W_mm fro)": median(r["corr_fro"] for r in kq),
        "mean final softmax of alpha (W)": mean(r["softmax_alpha"] for r in w),
    }
    for param, key in (("W", "corr_fro"), ("KQ", "corr_nuc")):
        paper = [r for r in last if r["param"] == param and r["protocol"] == "paper"]
        if not paper:
            continue
        curve = [s for s in summary if s["protocol"] == "paper" and s["param"] == param]
        at = [s for s in curve if s["step"] in PAPER_STEPS]
        key_counts = (
            f"paper {param}: alpha != opt, alpha not a LOT, LOT test undecided, "
            "Att-SVM(alpha) infeasible"
        )
        selected = [r for r in paper if not r.get("tied")]
        headline[key_counts] = (
            f"{sum(not r['alpha_is_opt'] for r in selected)}, "
            f"{sum(r['alpha_is_lot'] is False for r in selected)}, "
            f"{sum(r['alpha_is_lot'] is None for r in selected)}, "
            f"{sum(not finite([r[key]]) for r in selected)} of {len(paper)}"
        )
        headline.update(tied_entry(paper, f"paper {param}: tied final selection (no alpha)"))
        headline[f"paper {param}: mean {key} at steps {', '.join(str(s['step']) for s in at)}"] = (
            ", ".join(f"{s[f'mean_{key}']:.4f}" for s in at)
        )
    headline["paper W: published mean corr at 100, 200, 500, 1000, 2000"] = ", ".join(
        f"{c:g}" for c in PUBLISHED_W_CURVE
    )
    return headline, summary


def plot(rows: Rows, summary: Rows, path: Path) -> list[Path]:
    """Cone protocol: median correlation with W^mm / W^mm⋆ and mean softmax of α vs step;
    paper protocol: mean correlation vs step with the published W curve."""
    from ..plot import column, pyplot, save_figure

    plt = pyplot()
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.4))
    for k, param in enumerate(("W", "KQ")):
        g = [s for s in summary if s["param"] == param and s["protocol"] == "cone"]
        step = column(g, "step")
        axes[0].plot(step, column(g, "mean_softmax_alpha"), color=f"C{k}", label=param)
        axes[1].plot(
            step, column(g, "median_corr_fro"), "-", color=f"C{k}", label=f"{param} vs Fro"
        )
        axes[1].plot(
            step, column(g, "median_corr_nuc"), "--", color=f"C{k}", label=f"{param} vs nuc"
        )
        g = [s for s in summary if s["param"] == param and s["protocol"] == "paper"]
        step = column(g, "step")
        axes[2].plot(step, column(g, "mean_corr_fro"), "-", color=f"C{k}", label=f"{param} vs Fro")
        axes[2].plot(step, column(g, "mean_corr_nuc"), "--", color=f"C{k}", label=f"{param} vs nuc")
    axes[2].plot(PAPER_STEPS, PUBLISHED_W_CURVE, "ko", ms=4, label="published (W vs Fro)")
    axes[0].set(xlabel="step", ylabel="mean softmax of alpha", title="cone start: softmax")
    axes[1].set(xlabel="step", ylabel="median corr", title="cone start: correlation")
    axes[2].set(xlabel="step", ylabel="mean corr", title="paper: GD from 0, alpha = final argmax")
    for ax in axes:
        ax.legend(fontsize=7)
    return save_figure(fig, path)


EXPERIMENT = register(
    Experiment(
        "local",
        "local convergence (n=6, T=8, d=10), W and (K, Q): from the cone of a random LOT, "
        "and the paper's protocol (GD from 0, alpha = GD's final selection)",
        trial,
        grid,
        summarize,
        plot,
    )
)
