# SPDX-License-Identifier: BSD-3-Clause
r"""Experiment ``companion_losses``: the logistic loss against the correlation loss at score
scales C (companion paper, Tarzanagh, Li, Zhang, Oymak 2023, arXiv:2306.13596).

Two inputs of two tokens (:func:`~svmgeo.experiments._companion.losses_data`): (0, 0) and
(1, 1) with scores 0 and C, (0, 0) and (1, −1) with scores 0 and 1; the second token is
optimal in both, and the p-SVM is :math:`p^{\mathrm{mm}} = (1, 0, 0)` whatever C. Normalized
GD on p from 0 (step 0.1, 1000 steps) under

.. math::

    \ell(u) = \log(1 + e^{-u}) \ (\text{logistic}),\qquad \ell(u) = -u \ (\text{correlation}),

for C ∈ {1, …, 10, 100}. Measured: the path of p, its final direction
:math:`\cos(p, p^{\mathrm{mm}})` and its offset :math:`p_2` (the component orthogonal to
:math:`p^{\mathrm{mm}}`), against the offset at which the two inputs' pulls on :math:`p_2`
balance (svmgeo's derivation, :func:`limit_offset`):

.. math::

    p_2^\ast = \tfrac12 \log\frac{C\,|\ell'(C)|}{|\ell'(1)|}
    = \begin{cases} \tfrac12\log C & \text{correlation} \\
    \tfrac12\log\frac{C(1 + e)}{1 + e^{C}} & \text{logistic.} \end{cases}

Protocol and measured numbers: ``docs/experiments.md``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from ..solvers import att_svm
from ._companion import PAPER_EPS_STEP, cosine, finish_figure, losses_data, prompt_path
from ._registry import Experiment, register
from ._rows import Rows, final_parts

__all__ = ["EXPERIMENT", "LOSSES", "SCALES", "grid", "limit_offset", "plot", "summarize", "trial"]

#: The score scales C of the paper's code.
SCALES = (1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 100)
LOSSES = ("correlation", "logistic")


def limit_offset(loss: str, C: float) -> float:
    r"""The offset :math:`p_2^\ast` that normalized GD's :math:`p_2` approaches as
    :math:`p_1 \to \infty` (svmgeo's derivation, not the paper's).

    .. math::

        p_2^\ast = \tfrac12\big(\log C + \log|\ell'(C)| - \log|\ell'(1)|\big),\qquad
        \log|\ell'(u)| = \begin{cases} 0 & \text{correlation} \\
        -\log(1 + e^{u}) & \text{logistic}\end{cases}

    Along :math:`p = (p_1, p_2, 0)` with :math:`p_1 \to \infty`, input 1 pulls :math:`p_2` down
    with weight :math:`|\ell'(f_1)|\,C\,s_1(1 - s_1) \approx |\ell'(C)|\,C\,e^{-(p_1 + p_2)}`
    and input 2 up with :math:`|\ell'(1)|\,e^{-(p_1 - p_2)}`; the pulls balance at
    :math:`p_2^\ast`.
    """

    def log_dloss(u: float) -> float:
        return 0.0 if loss == "correlation" else -float(np.logaddexp(0.0, u))

    return 0.5 * (float(np.log(C)) + log_dloss(C) - log_dloss(1.0))


def trial(
    loss: str, C: float, eps: float, n_steps: int, record_every: int = 5
) -> list[dict[str, Any]]:
    r"""Normalized GD on p from 0 (step 0.1, ``normalize_eps=eps``) on the data of scale C.

    One row per recorded step: ``p1, p2``, ‖p‖, :math:`\cos(p, p^{\mathrm{mm}})`, the softmax
    probability of the optimal token in each input (``prob_1``, ``prob_2``) and
    :func:`limit_offset` (``p2_limit``).
    """
    data = losses_data(C)
    p_mm = att_svm(data, np.ones(data.n, dtype=int), param="p").p
    path = prompt_path(
        data, np.zeros(data.d), n_steps=n_steps, record_every=record_every, eps=eps, loss=loss
    )
    return [
        {
            "step": int(step),
            "p1": float(p[0]),
            "p2": float(p[1]),
            "norm_p": float(np.linalg.norm(p)),
            "cos_mm": cosine(p, p_mm),
            "prob_1": float(s[0, 1]),
            "prob_2": float(s[1, 1]),
            "p2_limit": limit_offset(loss, C),
        }
        for step, p, s in zip(path.step, path.p, path.probs, strict=True)
    ]


def grid(quick: bool) -> list[dict[str, Any]]:
    """Both losses × C ∈ SCALES (quick: 1, 10, 100); ε = 0 (exact), 3000 steps (quick 300),
    and, full size, the paper's ε = 1e-9 and 1000 steps."""
    scales = (1, 10, 100) if quick else SCALES
    runs = [(0.0, 300)] if quick else [(0.0, 3000), (PAPER_EPS_STEP["losses"], 1000)]
    return [
        {"loss": loss, "C": float(C), "eps": eps, "n_steps": n_steps}
        for loss in LOSSES
        for eps, n_steps in runs
        for C in scales
    ]


def summarize(rows: Rows) -> tuple[dict[str, Any], Rows]:
    """Per (loss, ε, C): final p, cos(p, p^mm), p2 at step 200 (the paper's plotted range);
    headline: the range over C of the final cosine and of p2, per loss and ε."""
    last = final_parts(rows)
    at200 = {(r["loss"], r["eps"], r["C"]): r["p2"] for r in rows if r["step"] == 200}
    summary = [
        {
            "loss": r["loss"],
            "eps": r["eps"],
            "C": r["C"],
            "step": r["step"],
            "p1": r["p1"],
            "p2": r["p2"],
            "p2_at_200": at200.get((r["loss"], r["eps"], r["C"])),
            "p2_limit": r["p2_limit"],
            "norm_p": r["norm_p"],
            "cos_mm": r["cos_mm"],
        }
        for r in last
    ]
    headline: dict[str, Any] = {}
    for loss in LOSSES:
        for eps in sorted({s["eps"] for s in summary}):
            g = [s for s in summary if s["loss"] == loss and s["eps"] == eps]
            if not g:
                continue
            tag = f"{loss} (eps={eps:g})"
            headline[f"{tag}: final cos(p, p_mm) min over C"] = min(s["cos_mm"] for s in g)
            scales = ", ".join(f"{s['C']:g}" for s in g)
            headline[f"{tag}: final p2 per C {scales}"] = ", ".join(f"{s['p2']:.3f}" for s in g)
            headline[f"{tag}: limit p2* per C {scales}"] = ", ".join(
                f"{s['p2_limit']:.3f}" for s in g
            )
            headline[f"{tag}: final |p| range"] = (
                f"{min(s['norm_p'] for s in g):.2f}-{max(s['norm_p'] for s in g):.2f}"
            )
    return headline, summary


def plot(rows: Rows, summary: Rows, path: Path) -> list[Path]:
    """The paths of (p1, p2) over the first 200 steps for both losses and every C (exact ε;
    lighter for smaller C, dashed for C = 100), and the final p2 against C."""
    from ..plot import pyplot

    plt = pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.4))
    scales = sorted({r["C"] for r in rows})
    for k, loss in enumerate(LOSSES):
        color = ("r", "b")[k]
        for j, C in enumerate(scales):
            g = [
                r
                for r in rows
                if r["loss"] == loss and r["C"] == C and r["eps"] == 0.0 and r["step"] <= 200
            ]
            axes[0].plot(
                [r["p1"] for r in g],
                [r["p2"] for r in g],
                color=color,
                ls="--" if C == 100 else "-",
                alpha=0.25 + 0.75 * (j + 1) / len(scales),
                label=f"{loss}" if j == len(scales) - 1 else None,
            )
        g = [s for s in summary if s["loss"] == loss and s["eps"] == 0.0]
        axes[1].semilogx([s["C"] for s in g], [s["p2"] for s in g], "o-", color=color, label=loss)
    axes[0].axhline(0, color="k", lw=1, ls=":", label="p_mm direction")
    axes[0].set(xlim=(-2, 12), ylim=(-6, 6), xlabel="p1", ylabel="p2", title="paths, 200 steps")
    C = np.array(scales)
    for loss, color in zip(LOSSES, ("r", "b"), strict=True):
        limit = [limit_offset(loss, c) for c in C]
        axes[1].semilogx(C, limit, "x:", color=color, label=f"{loss}: limit p2*")
    axes[1].set(xlabel="C", ylabel="final p2", title="offset from the p_mm line")
    return finish_figure(fig, axes, path)


EXPERIMENT = register(
    Experiment(
        "companion_losses",
        "companion paper: logistic vs correlation loss at score scales C, prompt attention p",
        trial,
        grid,
        summarize,
        plot,
    )
)
