# SPDX-License-Identifier: BSD-3-Clause
r"""Experiment ``mirror``: does :math:`\ell_p` mirror descent converge in direction to the
:math:`\ell_p` Att-SVM, and is its attention sparser for p near 1? (Julistiono, Tarzanagh,
Azizan, arXiv:2410.14581; issue #13.)

.. math::

    \nabla\psi(W_{t+1}) = \nabla\psi(W_t) - \eta\,g_t,\quad \psi(W) = \tfrac1p\|W\|_p^p,
    \qquad 1 - \mathrm{corr}\big(W_t, W^{\mathrm{mm}}_{p,\alpha}\big) \to 0,

with α the selection the run ends on and :math:`W^{\mathrm{mm}}_{p,\alpha}` its
:math:`\ell_p` Att-SVM (``sg.att_svm(data, alpha, norm=("lp", p))``), for
p ∈ {1.1, 1.5, 2, 3}, from W = 0, with normalized steps (svmgeo's option) and with the
paper's plain steps. Sparsity: the fraction of entries of W below 1e-3·max|W|.

Protocol and measured numbers: ``docs/experiments.md``; theory labels: ``docs/beyond.md``.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np

from .._linalg import correlation
from ..data import random_data
from ..gd import sparsity
from ..solvers import att_svm
from ._registry import Experiment, register
from ._rows import (
    Rows,
    coverage,
    final_parts,
    finite,
    group,
    median,
    seeds,
    span,
    tied_entry,
    unknown,
)
from ._selection import verified_or_tied

__all__ = ["EXPERIMENT", "PS", "STEP_SIZES", "grid", "plot", "summarize", "trial"]

#: The exponents of the potential ψ(W) = ‖W‖_p^p / p.
PS = (1.1, 1.5, 2.0, 3.0)
#: Step size of each kind of step: normalized (gradient / its Frobenius norm) and plain.
STEP_SIZES = {"normalized": 0.1, "plain": 2.0}
#: Records per run.
N_RECORDS = 40


def _key(q: float) -> str:
    """Column of 1 − corr with the ℓ_q SVM, e.g. ``one_minus_corr_p1_5``."""
    return "one_minus_corr_p" + format(q, "g").replace(".", "_")


def trial(
    n: int, T: int, d: int, seed: int, p: float, steps: str, n_steps: int
) -> list[dict[str, Any]]:
    r"""ℓp mirror descent from W = 0 on ``random_data(n, T, d, seed)``, via
    ``sg.verify_mirror(data, exponent=p)``.

    One row per recorded step: 1 − corr(W_t, W^mm_{p,α}) (``one_minus_corr``), 1 − corr with
    the ℓ_q SVM of the same α for every q in :data:`PS` (``one_minus_corr_pQ``, NaN when
    Att-SVM(α) is infeasible), the sparsity of W_t and of W^mm_{p,α}, whether α (the
    final selection) is optimal and locally optimal for the ℓp SVM (``alpha_is_lot``: None
    when the LOT test is undecided), and ``tied``: ``""``, or the queries where the final
    largest logit is tied (``verify_mirror`` refuses such a run; its error carries the run,
    reported here, :func:`~svmgeo.experiments._selection.verified_or_tied`: no α, every SVM
    cell NaN,
    ``alpha_is_opt`` and ``alpha_is_lot`` None).
    """
    from ..verify import verify_mirror

    data = random_data(n, T, d, seed=seed)
    options: dict[str, Any] = dict(
        exponent=p, step_size=STEP_SIZES[steps], normalized=steps == "normalized",
        n_steps=n_steps, record_every=max(1, n_steps // N_RECORDS), backend="numpy",
    )  # fmt: skip
    nan = float("nan")
    rep, run, tied = verified_or_tied(verify_mirror, data, options)
    if rep is None:  # a tied final selection: no α, no SVM (SPEC §2)
        assert run.history.W is not None  # a mirror run records W
        steps_, Ws, corr = run.history.step, run.history.W, np.full(len(run.history.step), nan)
        svms: dict[float, Any] = {}
        W_lp, is_opt, is_lot, stop = None, None, None, str(run.status)
    else:
        assert rep.mirror_run is not None and rep.corr_lp is not None and rep.lot is not None
        assert rep.mirror_run.history.W is not None  # a mirror run records W
        norms: dict[float, Any] = {q: ("lp", q) for q in PS}
        svms = (
            {q: att_svm(data, rep.selection, norm=norms[q]).W for q in PS} if rep.feasible else {}
        )
        steps_, Ws, corr = rep.steps, rep.mirror_run.history.W, rep.corr_lp
        W_lp, is_opt, is_lot, stop = rep.W_lp, rep.is_optimal, rep.lot.answer, rep.status
    rows = []
    for step, W, c in zip(steps_, Ws, corr, strict=True):
        row: dict[str, Any] = {"step": int(step), "one_minus_corr": 1.0 - float(c)}
        for q in PS:
            Wq = svms.get(q)
            row[_key(q)] = nan if Wq is None else 1.0 - correlation(W, Wq)
        row.update(
            sparsity_W=sparsity(W),
            sparsity_svm=nan if W_lp is None else sparsity(W_lp),
            alpha_is_opt=is_opt,
            alpha_is_lot=is_lot,  # None: the LOT test is undecided (or no selection)
            stop=stop,
            tied=tied,
        )
        rows.append(row)
    return rows


def grid(quick: bool) -> list[dict[str, Any]]:
    """n = 4, T = 5, d = 10, seeds 0–9 (quick 0–1), p ∈ PS; normalized steps (η = 0.1,
    4000 steps) and plain steps (η = 2, 20000 steps); quick: 400 steps of each."""
    return [
        {"n": 4, "T": 5, "d": 10, "seed": s, "p": p, "steps": kind, "n_steps": n_steps}
        for kind, full_steps in (("normalized", 4000), ("plain", 20000))
        for n_steps in [400 if quick else full_steps]
        for p in PS
        for s in seeds(quick, 2, 10)
    ]


def _closest(row: dict[str, Any]) -> float | None:
    """The q of :data:`PS` whose ℓ_q SVM is closest in direction to the row's W; None when
    no ℓ_q SVM was solved (Att-SVM(α) infeasible, or no selection α)."""
    gaps = {q: v[0] for q in PS if (v := finite([row[_key(q)]]))}
    return min(gaps, key=gaps.__getitem__) if gaps else None


#: Why a seed has no ℓ_q SVM (its SVM cells NaN), for the headline's coverage counts.
_NO_SVM = "no SVM (Att-SVM(α) infeasible, or a tied selection)"

#: The note on a seed whose final selection is not opt, by ``alpha_is_lot`` (None: undecided).
_LOT_NOTE = {True: "", False: " (not a LOT)", None: " (LOT test undecided)"}


def summarize(rows: Rows) -> tuple[dict[str, Any], Rows]:
    """Per (steps, p, step): median and max over seeds of 1 − corr(W_t, W^mm_p) and median
    sparsity of W_t; headline: the final 1 − corr of every seed, the closest other ℓ_q SVM,
    the sparsity of W_T and W^mm_p, the selections that are not optimal (marked "not a
    LOT", or "LOT test undecided" where the LOT test could not decide), and the seeds whose
    final selection is tied (when any; no α: neither opt nor not, and no closest SVM). A row
    without ``tied`` (a table written before it) counts as unknown."""
    nan = float("nan")
    summary = []
    for (kind, p, step), g in sorted(group(rows, ("steps", "p", "step")).items()):
        summary.append(
            {
                "steps": kind,
                "p": p,
                "step": step,
                "seeds": len(g),
                "median_one_minus_corr": median(r["one_minus_corr"] for r in g),
                "max_one_minus_corr": max(finite(r["one_minus_corr"] for r in g), default=nan),
                "median_sparsity_W": median(r["sparsity_W"] for r in g),
                "median_sparsity_svm": median(r["sparsity_svm"] for r in g),
            }
        )
    last = final_parts(rows)
    headline: dict[str, Any] = unknown(last, ["tied"])
    for (kind, p), g in group(last, ("steps", "p")).items():
        g = sorted(g, key=lambda r: r["seed"])
        tag = f"{kind} p={p:g}"
        headline[f"{tag}: 1-corr(W_T, W_mm_p), seeds {g[0]['seed']}-{g[-1]['seed']}"] = ", ".join(
            f"{r['one_minus_corr']:.1e}" for r in g
        )
        others = [finite(r[_key(q)] for q in PS if q != p) for r in g]
        nearest = min((x for o in others for x in o), default=nan)
        headline[f"{tag}: min 1-corr(W_T, W_mm_q), q != p"] = f"{nearest:.2g}" + coverage(
            sum(1 for o in others if o), len(g), f"missing: {_NO_SVM}"
        )
        ratios = [
            math.log10(min(o) / own) if o and min(o) > 0 and math.isfinite(own) and own > 0 else nan
            for o, own in zip(others, (r["one_minus_corr"] for r in g), strict=True)
        ]
        headline[f"{tag}: log10(nearest other / own 1-corr), min-max"] = span(
            ratios, ".1f", f"{_NO_SVM}, or a 1-corr <= 0"
        )
        closest = [_closest(r) == p for r in g]
        headline[f"{tag}: seeds whose closest of the 4 SVMs is W_mm_p"] = f"{sum(closest)}/{len(g)}"
        headline[f"{tag}: sparsity W_T [W_mm_p], min-max"] = (
            f"{span((r['sparsity_W'] for r in g), '.2f', '')} "
            f"[{span((r['sparsity_svm'] for r in g), '.2f', _NO_SVM)}]"
        )
        odd = [f"{r['seed']}{_LOT_NOTE[r['alpha_is_lot']]}" for r in g
               if not r.get("tied") and not r["alpha_is_opt"]]  # fmt: skip
        headline[f"{tag}: seeds whose final selection is not opt"] = ", ".join(odd) or "none"
        headline.update(tied_entry(g, f"{tag}: tied final selection (no SVM)"))
    return headline, summary


def plot(rows: Rows, summary: Rows, path: Path) -> list[Path]:
    """1 − corr(W_t, W^mm_p) vs step (every seed thin, the median thick) for normalized and
    plain steps; median sparsity of W_t vs step (dashed: that of W^mm_p)."""
    from ..plot import column, pyplot, save_figure

    plt = pyplot()
    fig, axes = plt.subplots(1, 3, figsize=(14, 3.6))
    for k, p in enumerate(PS):
        color = f"C{k}"
        for ax, kind in zip(axes[:2], ("normalized", "plain"), strict=True):
            for _, g in group(
                [r for r in rows if r["p"] == p and r["steps"] == kind], ("seed",)
            ).items():
                ax.semilogy(column(g, "step"), column(g, "one_minus_corr"), color=color, lw=0.4)
            s = [r for r in summary if r["p"] == p and r["steps"] == kind]
            ax.semilogy(
                column(s, "step"), column(s, "median_one_minus_corr"), color=color, lw=2,
                label=f"p = {p:g}",
            )  # fmt: skip
        s = [r for r in summary if r["p"] == p and r["steps"] == "normalized"]
        axes[2].plot(column(s, "step"), column(s, "median_sparsity_W"), color=color,
                     label=f"p = {p:g}")  # fmt: skip
        axes[2].axhline(float(np.median(column(s, "median_sparsity_svm"))), color=color, ls="--")
    axes[0].set(xlabel="step", ylabel="1 - corr(W_t, W_mm_p)", title="normalized MD (eta 0.1)")
    axes[1].set(xlabel="step", ylabel="1 - corr(W_t, W_mm_p)", title="plain MD (eta 2)",
                xscale="log")  # fmt: skip
    axes[2].set(
        xlabel="step", ylabel="fraction |W_kl| < 1e-3 max|W|",
        title="sparsity of W_t (normalized; dashed: W_mm_p)",
    )  # fmt: skip
    for ax in axes:
        ax.legend(fontsize=7)
    return save_figure(fig, path)


EXPERIMENT = register(
    Experiment(
        "mirror",
        "l_p mirror descent (n=4, T=5, d=10), p in {1.1, 1.5, 2, 3}: correlation with the "
        "l_p Att-SVM and sparsity of W",
        trial,
        grid,
        summarize,
        plot,
    )
)
