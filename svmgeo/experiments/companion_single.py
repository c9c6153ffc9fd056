# SPDX-License-Identifier: BSD-3-Clause
r"""Experiment ``companion_single``: one input, global and local convergence of prompt
attention p (companion paper, Tarzanagh, Li, Zhang, Oymak 2023, arXiv:2306.13596).

Tokens :math:`(-0.1, 1, 1), (1, 0, 0.9), (0, 0, \gamma_2)`, attention on the first two
coordinates, the head on the third (scores 1, 0.9, γ₂). Normalized GD on p from six starts
:math:`p_0 = (0, b, 0)`, :math:`b \in \{1, 0.5, 0, -0.5, -1, -1.5\}`, step 0.1, 1000 steps,

.. math::

    p \leftarrow p - \eta\,\frac{\nabla L(p)}{\|\nabla L(p)\| + \varepsilon},\qquad
    \cos\big(p(t), p^{\mathrm{mm}}_\alpha\big) \to 1,

for the token α each run selects; the p-SVMs of α = 0 and α = 1 have
:math:`\tfrac12\|p\|^2 = 0.49505` and 0.5 (the paper's printed optima). γ₂ = 0.9: only
token 0 is locally optimal (global convergence from every start); γ₂ = 0: token 1 is locally
optimal too, and some starts converge to it.

Protocol and measured numbers: ``docs/experiments.md``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from ..analysis import is_locally_optimal
from ..solvers import att_svm
from ._companion import PAPER_EPS_STEP, cosine, finish_figure, prompt_path, single_input_data
from ._registry import Experiment, register
from ._rows import Rows, final_parts, group, tied_entry, unknown
from ._selection import final_selection

__all__ = [
    "EXPERIMENT",
    "GAMMA2",
    "PAPER_N_STEPS",
    "PUBLISHED_OBJECTIVES",
    "STARTS",
    "grid",
    "plot",
    "summarize",
    "trial",
]

#: The third token's score in the two settings.
GAMMA2 = {"global": 0.9, "local": 0.0}
#: The second coordinate b of the six starts p0 = (0, b, 0).
STARTS = (1.0, 0.5, 0.0, -0.5, -1.0, -1.5)
PAPER_N_STEPS = 1000
#: ½‖p‖² of the p-SVM of token 0 (global) and token 1 (local), as printed by the paper's code.
PUBLISHED_OBJECTIVES = {0: 0.49505, 1: 0.5}


def trial(
    setting: str, start: int, eps: float, n_steps: int, record_every: int = 5
) -> list[dict[str, Any]]:
    r"""Normalized GD on p (step 0.1, ``normalize_eps=eps``) from start ``STARTS[start]``.

    One row per recorded step: p (``p1, p2, p3``), ‖p‖, the softmax probability of each token,
    the selected token (the largest logit :math:`x_t^\top p`; None where it is tied, the tied
    tokens then named in ``tied``, :func:`final_selection`; ``""`` without), and the cosines
    with the p-SVMs of tokens 0 and 1 (``cos_0``, ``cos_1``); every row also carries ½‖p^mm‖²
    of both SVMs and whether token 1 is locally optimal in this setting (``token1_is_lot``;
    None when the LOT test is undecided).
    """
    data = single_input_data(GAMMA2[setting])
    p0 = np.array([0.0, STARTS[start], 0.0])
    path = prompt_path(data, p0, n_steps=n_steps, record_every=record_every, eps=eps)
    svm = {a: att_svm(data, [a], param="p") for a in (0, 1)}
    target = {a: res.p for a, res in svm.items()}
    objective = {a: 0.5 * float(np.dot(t, t)) for a, t in target.items() if t is not None}
    lot1 = is_locally_optimal(data, [1]).answer  # None: the LOT test is undecided
    selections = [final_selection(data, p) for p in path.p]
    return [
        {
            "step": int(step),
            "p1": float(p[0]),
            "p2": float(p[1]),
            "p3": float(p[2]),
            "norm_p": float(np.linalg.norm(p)),
            "prob_0": float(s[0]),
            "prob_1": float(s[1]),
            "prob_2": float(s[2]),
            "selected": None if alpha is None else int(alpha[0]),
            "tied": tied,
            "cos_0": cosine(p, target[0]),
            "cos_1": cosine(p, target[1]),
            "objective_0": objective[0],
            "objective_1": objective[1],
            "token1_is_lot": lot1,
        }
        for step, p, s, (alpha, tied) in zip(
            path.step, path.p, path.probs[:, 0], selections, strict=True
        )
    ]


def grid(quick: bool) -> list[dict[str, Any]]:
    """Both settings × six starts; ε = 0 (exact) and the paper's 1e-9 (full only); 1000
    steps (quick 300)."""
    eps_values = (0.0,) if quick else (0.0, PAPER_EPS_STEP["single"])
    return [
        {
            "setting": setting,
            "start": start,
            "eps": eps,
            "n_steps": 300 if quick else PAPER_N_STEPS,
        }
        for setting in GAMMA2
        for eps in eps_values
        for start in range(len(STARTS))
    ]


def summarize(rows: Rows) -> tuple[dict[str, Any], Rows]:
    """Per run: the final token ("tied" where the final largest logit is tied), ‖p‖ and
    cosine with that token's p-SVM; headline: both p-SVM optima beside the published ones,
    where each setting's starts went, the smallest final cosine with the selected token's SVM,
    and the starts whose final selection is tied (when any). A row without ``tied`` (a table
    written before it) counts as unknown."""
    last = final_parts(rows)
    summary = [
        {
            "setting": r["setting"],
            "eps": r["eps"],
            "start": r["start"],
            "p0_2": STARTS[r["start"]],
            "step": r["step"],
            "selected": "tied" if r["selected"] is None else r["selected"],
            "tied": r.get("tied"),
            "norm_p": r["norm_p"],
            "cos_selected": r[f"cos_{r['selected']}"] if r["selected"] in (0, 1) else None,
            "prob_selected": None if r["selected"] is None else r[f"prob_{r['selected']}"],
        }
        for r in last
    ]
    headline: dict[str, Any] = unknown(last, ["tied"])
    if last:
        headline["p-SVM(token 0) 1/2|p|^2 (published 0.49505)"] = f"{last[0]['objective_0']:.6f}"
        headline["p-SVM(token 1) 1/2|p|^2 (published 0.5)"] = f"{last[0]['objective_1']:.6f}"
    for (setting, eps), g in group(summary, ("setting", "eps")).items():
        lot = next(r["token1_is_lot"] for r in last if r["setting"] == setting)
        tag = f"{setting} (gamma2={GAMMA2[setting]:g}, eps={eps:g})"
        headline[f"{tag}: token 1 locally optimal"] = "undecided" if lot is None else lot
        headline[f"{tag}: selected token per start"] = " ".join(str(r["selected"]) for r in g)
        headline.update(tied_entry(g, f"{tag}: tied final selection", by="start"))
        headline[f"{tag}: min final cos(p, p_mm of selected)"] = min(
            (r["cos_selected"] for r in g if r["cos_selected"] is not None), default=None
        )
        headline[f"{tag}: final |p| range"] = (
            f"{min(r['norm_p'] for r in g):.2f}-{max(r['norm_p'] for r in g):.2f}"
        )
    return headline, summary


def plot(rows: Rows, summary: Rows, path: Path) -> list[Path]:
    """Both settings: the paths of (p1, p2) over the first 200 steps (exact ε), the tokens, and
    the directions of the two p-SVMs."""
    from ..plot import pyplot

    plt = pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(10, 4.4))
    for ax, setting in zip(axes, GAMMA2, strict=True):
        data = single_input_data(GAMMA2[setting])
        X = np.asarray(data.X)[0]
        for t, (marker, color) in enumerate((("*", "r"), ("s", "b"), ("o", "g"))):
            score = np.asarray(data.values)[0, t, 2]
            ax.scatter(
                X[t, 0],
                X[t, 1],
                marker=marker,
                color=color,
                s=90,
                zorder=3,
                label=f"token {t} (score {score:g})",
            )
        for a, style in ((0, "r--"), (1, "b--")):
            p = att_svm(data, [a], param="p").p
            if p is not None:
                u = p[:2] / np.linalg.norm(p[:2])
                ax.plot([0, 12 * u[0]], [0, 12 * u[1]], style, lw=2, label=f"p_mm(token {a})")
        for (start,), g in group(
            [r for r in rows if r["setting"] == setting and r["eps"] == 0.0 and r["step"] <= 200],
            ("start",),
        ).items():
            ax.plot(
                [r["p1"] for r in g],
                [r["p2"] for r in g],
                color="gray",
                lw=1.5,
                label="GD paths" if start == 0 else None,
            )
        ax.set(
            xlim=(-4, 12),
            ylim=(-2, 10),
            xlabel="p1",
            ylabel="p2",
            title=f"{setting}: gamma2 = {GAMMA2[setting]:g}",
        )
    return finish_figure(fig, axes, path)


EXPERIMENT = register(
    Experiment(
        "companion_single",
        "companion paper: one input, six starts, global (gamma2=0.9) and local (gamma2=0) "
        "convergence of prompt attention p",
        trial,
        grid,
        summarize,
        plot,
    )
)
