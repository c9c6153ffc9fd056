# SPDX-License-Identifier: BSD-3-Clause
r"""Experiment ``local``: normalized GD started in the cone around the SVM direction of a
random locally optimal token selection (LOT) α, for W and (K, Q) (n = 6, T = 8, d = 10).

.. math::

    W(0) = R\,\frac{W^{mm}_\alpha}{\|W^{mm}_\alpha\|_F} + \text{noise},\qquad
    \operatorname{corr}(W(t), W^{mm}_\alpha) \to 1 \quad (\text{Theorem 5 for } W)

Protocol and measured numbers: ``docs/experiments.md``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from .._linalg import correlation
from ..analysis import is_locally_optimal
from ..data import TokenData, random_data
from ..gd import train
from ..selection import optimal_tokens
from ..solvers import att_svm
from ._registry import Experiment, register
from ._rows import Rows, final_parts, finite, group, mean, median, quantile, seeds

__all__ = ["EXPERIMENT", "grid", "plot", "random_lot", "summarize", "trial"]


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


def _balanced_factors(W0: np.ndarray, m: int) -> tuple[np.ndarray, np.ndarray]:
    U, s, Vt = np.linalg.svd(W0)
    r = np.sqrt(s[:m])
    return U[:, :m] * r, Vt[:m].T * r


def _alpha_softmax(probs: np.ndarray, alpha: np.ndarray) -> np.ndarray:
    """(R,) mean over sequences of the softmax probability of the selected token α_i."""
    p = probs[:, :, 0, :] if probs.ndim == 4 else probs
    return p[:, np.arange(p.shape[1]), alpha].mean(axis=1)


def trial(
    n: int,
    T: int,
    d: int,
    seed: int,
    param: str,
    n_steps: int,
    radius: float = 100.0,
    noise: float = 0.05,
    max_tries: int = 50,
    n_records: int = 50,
) -> list[dict[str, Any]]:
    r"""Normalized GD started in the cone around the SVM direction of a random LOT α.

    α is locally optimal for both norms (see :func:`random_lot`).

    W runs start at :math:`R\,W^{\mathrm{mm}}_\alpha/\|W^{\mathrm{mm}}_\alpha\|_F` (Frobenius),
    (K, Q) runs (m = d) at the balanced factors of the same point built from the nuclear
    :math:`W^{\mathrm{mm}\star}_\alpha`; both plus a Gaussian perturbation of relative size
    ``noise``. One row per recorded step: correlations of W(t) with both SVM solutions and the
    mean softmax probability of the selected tokens.
    """
    data = random_data(n, T, d, seed=seed)
    alpha, found = random_lot(data, seed, max_tries)
    fro = att_svm(data, alpha, norm="fro")
    nuc = att_svm(data, alpha, norm="nuc")
    assert fro.W is not None and nuc.W is not None  # a LOT is feasible by definition
    rng = np.random.default_rng([seed, 11])
    target = fro.W if param == "W" else nuc.W
    W0 = radius * target / np.linalg.norm(target)
    W0 = W0 + noise * radius * rng.standard_normal((d, d)) / d
    init: Any = W0 if param == "W" else _balanced_factors(W0, d)
    run = train(
        data,
        param=param,
        m=d if param == "KQ" else None,
        step_size=0.1 if param == "W" else 0.02,
        n_steps=n_steps,
        init=init,
        record_every=max(1, n_steps // n_records),
        record=("W", "probs"),
    )
    hist = run.history
    assert hist.W is not None and hist.probs is not None
    soft = _alpha_softmax(hist.probs, alpha)
    is_opt = bool(np.array_equal(alpha, optimal_tokens(data)))
    return [
        {
            "step": int(step),
            "corr_fro": correlation(W, fro.W),
            "corr_nuc": correlation(W, nuc.W),
            "softmax_alpha": float(s),
            "alpha_is_opt": is_opt,
            "random_lot_found": found,
        }
        for step, W, s in zip(hist.step, hist.W, soft, strict=True)
    ]


def grid(quick: bool) -> dict[str, Any]:
    """n = 6, T = 8, d = 10, 100 seeds (quick 3), W and (K, Q), 5000 steps (quick 400)."""
    return {
        "n": [6],
        "T": [8],
        "d": [10],
        "seed": seeds(quick, 3, 100),
        "param": ["W", "KQ"],
        "n_steps": [400 if quick else 5000],
    }


def summarize(rows: Rows) -> tuple[dict[str, Any], Rows]:
    """Median and 10 % quantile of the correlations and mean softmax of α per (param, step)."""
    summary = []
    for (param, step), g in sorted(group(rows, ("param", "step")).items()):
        summary.append(
            {
                "param": param,
                "step": step,
                "median_corr_fro": median(r["corr_fro"] for r in g),
                "median_corr_nuc": median(r["corr_nuc"] for r in g),
                "q10_corr_fro": quantile([r["corr_fro"] for r in g], 0.1),
                "q10_corr_nuc": quantile([r["corr_nuc"] for r in g], 0.1),
                "mean_softmax_alpha": mean(r["softmax_alpha"] for r in g),
            }
        )
    last = final_parts(rows)
    w = [r for r in last if r["param"] == "W"]
    kq = [r for r in last if r["param"] == "KQ"]
    headline = {
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
    return headline, summary


def plot(rows: Rows, summary: Rows, path: Path) -> list[Path]:
    """Median correlation with W^mm / W^mm⋆ and mean softmax of α vs step, for W and (K, Q)."""
    from ..plot import column, pyplot, save_figure

    plt = pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.4))
    for k, param in enumerate(("W", "KQ")):
        g = [s for s in summary if s["param"] == param]
        step = column(g, "step")
        axes[0].plot(step, column(g, "mean_softmax_alpha"), color=f"C{k}", label=param)
        axes[1].plot(
            step, column(g, "median_corr_fro"), "-", color=f"C{k}", label=f"{param} vs Fro"
        )
        axes[1].plot(
            step, column(g, "median_corr_nuc"), "--", color=f"C{k}", label=f"{param} vs nuc"
        )
    axes[0].set(xlabel="step", ylabel="mean softmax of alpha", title="softmax")
    axes[1].set(xlabel="step", ylabel="median corr", title="correlation")
    axes[0].legend(fontsize=7)
    axes[1].legend(fontsize=7)
    return save_figure(fig, path)


EXPERIMENT = register(
    Experiment(
        "local",
        "local convergence from the cone of a random LOT (n=6, T=8, d=10), W and (K, Q)",
        trial,
        grid,
        summarize,
        plot,
    )
)
