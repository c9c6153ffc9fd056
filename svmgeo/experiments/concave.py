# SPDX-License-Identifier: BSD-3-Clause
r"""Experiment ``concave``: normalized GD on W with the λ-concave head; how many tokens the
final softmax keeps, against λ, and the correlation with the Gen-SVM prediction
:math:`W^{eq}` (the paper's proposed equivalence, a conjecture measured here).

.. math::

    h(x) = v^\top x - \lambda\|x\|^2, \qquad
    \#\{t : s_{i,t} \ge \tau\}, \quad \tau \in \{0.1, 0.01, 0.001\}

Protocol and measured numbers: ``docs/experiments.md``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..data import random_data
from ._registry import Experiment, register
from ._rows import Rows, as_float, finite, group, mean, median, seeds

__all__ = ["EXPERIMENT", "grid", "plot", "summarize", "trial"]


def trial(n: int, T: int, d: int, seed: int, lam: float, n_steps: int) -> list[dict[str, Any]]:
    r"""Normalized GD on W with the concave head :math:`h(x) = v^\top x - \lambda\|x\|^2`.

    One row per threshold τ ∈ {0.1, 0.01, 0.001}: the number of tokens with final softmax
    probability ≥ τ (mean and max over sequences); each row also carries corr(W, W^eq) of the
    Gen-SVM of the final softmax (NaN when a selected set holds every token) and Γ.
    """
    from ..verify import verify

    data = random_data(n, T, d, seed=seed)
    rep = verify(
        data, head="concave", lam=lam, step_size=0.1, n_steps=n_steps, record_every=n_steps
    )
    assert rep.run is not None and rep.run.history.probs is not None
    probs = rep.run.history.probs[-1].reshape(n, -1, T)
    corr_eq = rep.final_corr_eq
    rows = []
    for tau in (1e-1, 1e-2, 1e-3):
        counts = (probs >= tau).sum(axis=-1)
        rows.append(
            {
                "tau": tau,
                "mean_selected": float(counts.mean()),
                "max_selected": int(counts.max()),
                "corr_eq": as_float(corr_eq),
                "gamma": as_float(rep.gamma),
                "norm_W": rep.final_norm_W,
            }
        )
    return rows


def grid(quick: bool) -> dict[str, Any]:
    """n = 4, T = 6, d = 8, 50 seeds, λ from 0 to 4, 3000 steps (quick: 2 seeds, λ ∈ {0, 1},
    500 steps)."""
    return {
        "n": [4],
        "T": [6],
        "d": [8],
        "seed": seeds(quick, 2, 50),
        "lam": [0.0, 1.0] if quick else [0.0, 0.1, 0.25, 0.5, 1.0, 2.0, 4.0],
        "n_steps": [500 if quick else 3000],
    }


def summarize(rows: Rows) -> tuple[dict[str, Any], Rows]:
    """Per (λ, τ): mean number of kept tokens and median corr(W, W^eq) where it is defined."""
    summary = []
    for (lam, tau), g in sorted(group(rows, ("lam", "tau")).items()):
        summary.append(
            {
                "lam": lam,
                "tau": tau,
                "trials": len(g),
                "mean_selected": mean(r["mean_selected"] for r in g),
                "median_corr_eq": median(r["corr_eq"] for r in g),
                "with_gen_svm": len(finite(r["corr_eq"] for r in g)),
            }
        )
    headline: dict[str, Any] = {}
    for s in summary:
        if s["tau"] == 1e-2:
            headline[f"lam={s['lam']:g}: mean #tokens with s>=0.01"] = s["mean_selected"]
    for s in summary:
        if s["tau"] == 1e-2:
            headline[f"lam={s['lam']:g}: median corr(W, W_eq) [with Gen-SVM]"] = (
                f"{s['median_corr_eq']:.4f} [{s['with_gen_svm']}/{s['trials']}]"
            )
    return headline, summary


def plot(rows: Rows, summary: Rows, path: Path) -> list[Path]:
    """Mean number of tokens with softmax ≥ τ vs λ, per τ; median corr with W^eq vs λ."""
    from ..plot import column, pyplot, save_figure

    plt = pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.4))
    for k, tau in enumerate(sorted({s["tau"] for s in summary}, reverse=True)):
        g = [s for s in summary if s["tau"] == tau]
        axes[0].plot(
            column(g, "lam"),
            column(g, "mean_selected"),
            "-o",
            ms=3,
            color=f"C{k}",
            label=f"tau={tau:g}",
        )
    axes[0].set(xlabel="lambda", ylabel="mean # tokens with s >= tau", title="selected tokens")
    axes[0].legend(fontsize=7)
    g = [s for s in summary if s["tau"] == min(s2["tau"] for s2 in summary)]
    axes[1].plot(column(g, "lam"), column(g, "median_corr_eq"), "-o", ms=3)
    axes[1].set(xlabel="lambda", ylabel="median corr(W, W_eq)", title="Gen-SVM prediction")
    return save_figure(fig, path)


EXPERIMENT = register(
    Experiment(
        "concave",
        "lambda-concave head: selected tokens vs lambda and tau, correlation with W_eq",
        trial,
        grid,
        summarize,
        plot,
    )
)
