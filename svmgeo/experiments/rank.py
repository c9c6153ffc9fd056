# SPDX-License-Identifier: BSD-3-Clause
r"""Experiment ``rank``: the numerical rank of :math:`W^{mm}` (Frobenius) and :math:`W^{mm\star}`
(nuclear) of Att-SVM(opt) against d, for n, T ∈ {5, 10, 15}.

.. math::

    \operatorname{rank}_\epsilon(W) = \#\{k : \sigma_k(W) > \epsilon\,\sigma_1(W)\},
    \qquad \epsilon = 10^{-6}

Protocol and measured numbers: ``docs/experiments.md``.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import numpy as np

from .._linalg import numerical_rank as matrix_rank
from ..constraints import att_svm_constraints
from ..data import random_data
from ..selection import optimal_tokens
from ..solvers import att_svm
from ._registry import Experiment, register
from ._rows import Rows, as_float, group, mean, seeds

__all__ = ["EXPERIMENT", "RANK_RTOL", "grid", "numerical_rank", "plot", "summarize", "trial"]

#: Relative singular-value threshold of the rank study: rank = #{k : σ_k > RANK_RTOL·σ_1}.
RANK_RTOL = 1e-6


def numerical_rank(W: np.ndarray | None, rtol: float = RANK_RTOL) -> int | None:
    r"""Numerical rank :math:`\#\{k : \sigma_k(W) > \mathrm{rtol}\,\sigma_1(W)\}` (None for None)."""
    if W is None:
        return None
    return matrix_rank(W, rtol)


def trial(n: int, T: int, d: int, seed: int, scs: bool = False) -> dict[str, Any]:
    """Ranks of W^mm (Frobenius) and W^mm⋆ (nuclear) of Att-SVM(opt) on one random dataset.

    With ``scs=True`` the nuclear problem is also solved by the naive cvxpy model with SCS at
    its default accuracy (the low-accuracy protocol), whose numerical rank is reported apart.
    """
    data = random_data(n, T, d, seed=seed)
    alpha = optimal_tokens(data)
    fro = att_svm(data, alpha, norm="fro")
    row: dict[str, Any] = {
        "feasible": fro.W is not None,
        "rank_fro": None,
        "rank_nuc": None,
        "rank_nuc_scs": None,
        "norm_fro": None,
        "nuc_norm": None,
        "nuc_certified": None,
    }
    if fro.W is None:
        return row
    nuc = att_svm(data, alpha, norm="nuc")
    row.update(
        rank_fro=numerical_rank(fro.W),
        rank_nuc=numerical_rank(nuc.W),
        norm_fro=float(np.linalg.norm(fro.W)),
        nuc_norm=as_float(nuc.objective),
        nuc_certified=bool(nuc.certificate is not None and nuc.certificate.passed),
    )
    if scs:
        from ..solvers import solve_naive_cvxpy

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            W_scs, *_ = solve_naive_cvxpy(att_svm_constraints(data, alpha), "nuc", solver="SCS")
        row["rank_nuc_scs"] = numerical_rank(W_scs)
    return row


def grid(quick: bool) -> list[dict[str, Any]]:
    """n, T ∈ {5, 10, 15}, d from 2 to 30, 10 seeds (quick: n = T = 5, d ∈ {2, 4, 8}, 2 seeds);
    the SCS low-accuracy solve for n = 5."""
    ns, Ts = ([5], [5]) if quick else ([5, 10, 15], [5, 10, 15])
    ds = [2, 4, 8] if quick else [2, 4, 6, 8, 10, 15, 20, 25, 30]
    return [
        {"n": n, "T": T, "d": d, "seed": s, "scs": n == 5}
        for n in ns
        for T in Ts
        for d in ds
        for s in seeds(quick, 2, 10)
    ]


def summarize(rows: Rows) -> tuple[dict[str, Any], Rows]:
    """Mean ranks per (n, T, d) over the feasible instances; headline maxima and shares."""
    summary = []
    for (n, T, d), g in sorted(group(rows, ("n", "T", "d")).items()):
        feas = [r for r in g if r["feasible"]]
        summary.append(
            {
                "n": n,
                "T": T,
                "d": d,
                "trials": len(g),
                "feasible": len(feas),
                "mean_rank_fro": mean(r["rank_fro"] for r in feas),
                "mean_rank_nuc": mean(r["rank_nuc"] for r in feas),
                "mean_rank_nuc_scs": mean(r["rank_nuc_scs"] for r in feas),
            }
        )
    feas = [r for r in rows if r["feasible"]]
    n5 = [s for s in summary if s["n"] == 5 and s["feasible"]]
    headline = {
        "rank_threshold": f"sigma_k > {RANK_RTOL:g} sigma_1",
        "feasible_trials": f"{len(feas)}/{len(rows)}",
        "max(rank_fro - n)": max((r["rank_fro"] - r["n"] for r in feas), default=None),
        "max(rank_nuc - n)": max((r["rank_nuc"] - r["n"] for r in feas), default=None),
        "share rank_fro >= rank_nuc": mean(r["rank_fro"] >= r["rank_nuc"] for r in feas),
        "mean rank_fro (n=5)": mean(r["rank_fro"] for r in feas if r["n"] == 5),
        "mean rank_nuc (n=5, accurate)": mean(r["rank_nuc"] for r in feas if r["n"] == 5),
        "mean rank_nuc (n=5, SCS default)": mean(r["rank_nuc_scs"] for r in feas if r["n"] == 5),
        "nuclear solves certified": mean(r["nuc_certified"] for r in feas),
        "cells (n=5) by d": len(n5),
    }
    return headline, summary


def plot(rows: Rows, summary: Rows, path: Path) -> list[Path]:
    """Mean numerical rank of W^mm (solid) and W^mm⋆ (dashed; SCS default: dotted) vs d."""
    from ..plot import column, pyplot, save_figure

    plt = pyplot()
    ns = sorted({s["n"] for s in summary})
    fig, axes = plt.subplots(1, len(ns), figsize=(4 * len(ns), 3.4), squeeze=False)
    for ax, n in zip(axes[0], ns, strict=True):
        for k, T in enumerate(sorted({s["T"] for s in summary if s["n"] == n})):
            g = [s for s in summary if s["n"] == n and s["T"] == T and s["feasible"]]
            d = [s["d"] for s in g]
            c = f"C{k}"
            ax.plot(d, column(g, "mean_rank_fro"), "-o", color=c, ms=3, label=f"T={T} Fro")
            ax.plot(d, column(g, "mean_rank_nuc"), "--s", color=c, ms=3, label=f"T={T} nuc")
            scs = column(g, "mean_rank_nuc_scs")
            if np.isfinite(scs).any():
                ax.plot(d, scs, ":", color=c, label=f"T={T} nuc (SCS)")
        ax.axhline(n, color="gray", lw=0.8)
        ax.set(xlabel="d", ylabel="rank", title=f"n={n} (feasible instances)")
        ax.legend(fontsize=6)
    return save_figure(fig, path)


EXPERIMENT = register(
    Experiment(
        "rank",
        "rank of W_mm (Frobenius) and W_mm* (nuclear) vs d, n and T in {5, 10, 15}",
        trial,
        grid,
        summarize,
        plot,
    )
)
