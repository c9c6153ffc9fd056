# SPDX-License-Identifier: BSD-3-Clause
r"""Experiment ``global``: how often GD from zero (W) or a small random start (K, Q) reaches
the direction of Att-SVM(opt), against d, with Assumption B.1 (every non-optimal token is a
support token of :math:`W^{mm}`).

.. math::

    \text{reached} \iff \operatorname{corr}(W_{GD}, W^{mm}) \ge 0.99, \qquad
    \text{norm ratio} = \frac{\|W_{GD}\| / \min_j \langle W_{GD}, a_j b_j^\top\rangle}
    {\|W^{mm}\|} \ge 1

Protocol and measured numbers: ``docs/experiments.md``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import numpy as np

from .._linalg import correlation
from ..analysis import support_tokens
from ..constraints import att_svm_constraints
from ..data import random_data
from ..gd import train
from ..selection import optimal_tokens
from ..solvers import att_svm
from ._registry import Experiment, register
from ._rows import Rows, group, mean, median, seeds, tied_entry, unknown
from ._selection import final_selection

__all__ = [
    "EXPERIMENT",
    "GLOBAL_THRESHOLD",
    "KQ_INIT_SCALE",
    "KQ_STEPS",
    "grid",
    "plot",
    "summarize",
    "trial",
]

GLOBAL_THRESHOLD = 0.99
#: (K, Q) protocol: random start of this scale (m = d) and this many steps in full mode, so that
#: the rate measures where GD converges rather than how fast (docs/experiments.md, ``global``).
KQ_INIT_SCALE = 0.1
KQ_STEPS = 50_000


def trial(
    n: int,
    T: int,
    d: int,
    seed: int,
    param: str,
    n_steps: int,
    threshold: float = 0.99,
    init_scale: float = 0.01,
) -> dict[str, Any]:
    r"""GD from zero (W) or a small random start (K, Q; m = d, scale ``init_scale``) on random data.

    ``reached`` when corr(W_GD, W^mm) ≥ ``threshold``, with W^mm the Frobenius Att-SVM(opt)
    solution for W and the nuclear one for (K, Q). ``b1``: Assumption B.1 (every non-optimal
    token is a support token of W^mm). ``norm_ratio``: the norm of W_GD divided by its smallest
    Att-SVM(opt) margin, over the optimal norm (Frobenius for W, nuclear for (K, Q); ≥ 1, and
    → 1 exactly when W_GD approaches the solution set; None while a margin is ≤ 0).
    ``selects_opt``: whether GD's final selection (the largest logit of every query) is opt;
    None where it is tied, the tied queries then named in ``tied`` (:func:`final_selection`;
    ``""`` without). ``param="none"`` only decides B.1 (no GD; used for
    large d, where B.1 starts to hold).
    """
    data = random_data(n, T, d, seed=seed)
    alpha = optimal_tokens(data)
    sup = support_tokens(data, alpha)
    row: dict[str, Any] = {
        "feasible": bool(sup.feasible),
        "b1": None,
        "corr": None,
        "corr_other": None,
        "selects_opt": None,
        "reached": False,
        "norm_ratio": None,
        "tied": "",
    }
    if not sup.feasible or sup.mask is None:
        return row
    row["b1"] = bool(sup.mask.sum() == n * (T - 1))
    if param == "none":
        return row
    W_fro = sup.svm.W
    W_nuc = att_svm(data, alpha, norm="nuc").W
    assert W_fro is not None and W_nuc is not None
    run = train(
        data,
        param=param,
        m=d if param == "KQ" else None,
        step_size=0.1 if param == "W" else 0.02,
        n_steps=n_steps,
        init="zero" if param == "W" else ("random", init_scale),
        seed=None if param == "W" else seed,
        record_every=n_steps,
        record=("loss",),
    )
    assert run.W is not None  # None only for param="p"
    target, other = (W_fro, W_nuc) if param == "W" else (W_nuc, W_fro)
    corr = correlation(run.W, target)
    # solution-set invariant: the norm of W_GD rescaled to margin 1, over the optimal norm
    margin = float(att_svm_constraints(data, alpha).apply(run.W).min())
    order: Literal["fro", "nuc"] = "fro" if param == "W" else "nuc"
    if margin > 0:
        row["norm_ratio"] = float(
            np.linalg.norm(run.W / margin, order) / np.linalg.norm(target, order)
        )
    selected, tied = final_selection(data, run.W)
    row.update(
        corr=corr,
        corr_other=correlation(run.W, other),
        selects_opt=None if selected is None else bool(np.array_equal(selected, alpha)),
        reached=bool(corr >= threshold),
        tied=tied,
    )
    return row


def grid(quick: bool) -> list[dict[str, Any]]:
    """n = 6, T = 8, d from 2 to 30, W and (K, Q), 100 seeds (quick: d ∈ {4, 10}, 3 seeds);
    B.1 alone (``param="none"``) at d ∈ {60, 120, 250, 500} (quick: 40)."""
    ds = [4, 10] if quick else [2, 4, 6, 8, 10, 12, 16, 20, 30]
    gd_trials = [
        {
            "n": 6,
            "T": 8,
            "d": d,
            "seed": s,
            "param": p,
            "n_steps": (500 if p == "W" else 2000) if quick else (4000 if p == "W" else KQ_STEPS),
            "threshold": GLOBAL_THRESHOLD,
            "init_scale": KQ_INIT_SCALE if p == "KQ" else 0.0,  # W starts from 0
        }
        for d in ds
        for p in ("W", "KQ")
        for s in seeds(quick, 3, 100)
    ]
    # Assumption B.1 alone (no GD) at large d, where it starts to hold
    b1_trials = [
        {
            "n": 6,
            "T": 8,
            "d": d,
            "seed": s,
            "param": "none",
            "n_steps": 0,
            "threshold": GLOBAL_THRESHOLD,
            "init_scale": 0.0,
        }
        for d in ([40] if quick else [60, 120, 250, 500])
        for s in seeds(quick, 3, 100)
    ]
    return gd_trials + b1_trials


def summarize(rows: Rows) -> tuple[dict[str, Any], Rows]:
    """Per (param, d): % reached, % norm ratio within 1 %, % selecting opt (of the runs whose
    final selection is not tied), % B.1; headline: those, and the seeds whose final selection
    is tied (when any). A row without ``tied`` (a table written before it) counts as unknown."""
    b1 = {d: 100.0 * mean(r["b1"] for r in g) for (d,), g in group(rows, ("d",)).items()}
    summary = []
    groups = group(rows, ("param", "d"))
    for (param, d), g in sorted(groups.items()):
        feas = [r for r in g if r["feasible"]]
        summary.append(
            {
                "param": param,
                "d": d,
                "trials": len(g),
                "feasible": len(feas),
                "pct_reached": 100.0 * mean(r["reached"] for r in g)
                if param != "none"
                else float("nan"),
                "pct_selects_opt": 100.0 * mean(r["selects_opt"] for r in feas),
                "pct_b1": b1[d],
                "median_corr": median(r["corr"] for r in feas),
                "pct_norm_within_1pct": 100.0
                * mean(r["norm_ratio"] is not None and r["norm_ratio"] <= 1.01 for r in g)
                if param != "none"
                else float("nan"),
                "median_norm_ratio_opt": median(r["norm_ratio"] for r in feas if r["selects_opt"]),
            }
        )
    headline: dict[str, Any] = unknown(rows, ["tied"])
    headline |= {
        "threshold": GLOBAL_THRESHOLD,
        "KQ start, steps (full)": f"m = d, random {KQ_INIT_SCALE}, {KQ_STEPS}",
        "KQ measure": "% norm within 1% (where GD converges); % reached (corr) kept",
    }
    for s in summary:
        if s["param"] == "none":
            headline[f"d={s['d']}: B.1 %"] = f"{s['pct_b1']:.0f}"
            continue
        headline[
            f"{s['param']} d={s['d']}: % reached, % norm within 1%, % selecting opt, (B.1 %)"
        ] = (
            f"{s['pct_reached']:.0f}, {s['pct_norm_within_1pct']:.0f}, "
            f"{s['pct_selects_opt']:.0f} ({s['pct_b1']:.0f})"
        )
        tied_key = f"{s['param']} d={s['d']}: tied final selection (no selects-opt)"
        headline.update(tied_entry(groups[s["param"], s["d"]], tied_key))
    return headline, summary


def plot(rows: Rows, summary: Rows, path: Path) -> list[Path]:
    """% of instances reaching the global SVM direction (corr, and for (K, Q) the nuclear-norm
    ratio within 1 %), and % satisfying B.1, vs d."""
    from ..plot import column, pyplot, save_figure

    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6.5, 3.4))
    for k, param in enumerate(("W", "KQ")):
        g = [s for s in summary if s["param"] == param]
        ax.plot(
            column(g, "d"),
            column(g, "pct_reached"),
            "-o",
            color=f"C{k}",
            ms=3,
            label=f"{param} corr ≥ 0.99",
        )
        ax.plot(
            column(g, "d"),
            column(g, "pct_selects_opt"),
            ":",
            color=f"C{k}",
            label=f"{param} selects opt",
        )
    g = [s for s in summary if s["param"] == "KQ"]
    ax.plot(
        column(g, "d"),
        column(g, "pct_norm_within_1pct"),
        "-s",
        color="C2",
        ms=3,
        label="KQ ‖·‖_* within 1 %",
    )
    g = sorted((s for s in summary if s["param"] in ("W", "none")), key=lambda s: s["d"])
    ax.plot(column(g, "d"), column(g, "pct_b1"), "--k", label="B.1 holds")
    ax.set_xscale("log")
    ax.set(xlabel="d", ylabel="% of instances", ylim=(-2, 102), title="global convergence")
    ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.02, 0.5))
    return save_figure(fig, path)


EXPERIMENT = register(
    Experiment(
        "global",
        "global convergence rate vs d for W and (K, Q), with Assumption B.1",
        trial,
        grid,
        summarize,
        plot,
    )
)
