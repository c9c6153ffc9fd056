# SPDX-License-Identifier: BSD-3-Clause
r"""Experiment ``companion_multi``: several inputs, normalized GD against plain GD on prompt
attention p (companion paper, Tarzanagh, Li, Zhang, Oymak 2023, arXiv:2306.13596).

n = 3 inputs of T = 7 tokens (:func:`~svmgeo.experiments._companion.multi_input_data`),
token 0 optimal (score 1, the others 0.5). From six starts :math:`p_0 = (b, 0, 0)`,
:math:`b \in \{1, 0.5, 0, -0.5, -1, -1.5\}`, 1000 steps of

.. math::

    \text{NGD: } p \leftarrow p - 0.1\,\frac{\nabla L}{\|\nabla L\| + \varepsilon},\qquad
    \text{GD: } p \leftarrow p - 1\cdot\nabla L,

recording the mean softmax probability of the optimal tokens, ‖p‖ and
:math:`\cos(p, p^{\mathrm{mm}})`. The paper's figure: NGD saturates the softmax and grows ‖p‖
much faster than GD.

Protocol and measured numbers: ``docs/experiments.md``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from ..solvers import att_svm
from ._companion import (
    PAPER_EPS_STEP,
    cosine,
    finish_figure,
    import_torch,
    multi_input_data,
    prompt_data,
    prompt_path,
)
from ._registry import Experiment, register
from ._rows import Rows, final_parts, group, median, seeds

__all__ = [
    "EXPERIMENT",
    "METHODS",
    "PUBLISHED_OBJECTIVE_3D",
    "STARTS",
    "grid",
    "plot",
    "summarize",
    "trial",
]

#: The first coordinate b of the six starts p0 = (b, 0, 0).
STARTS = (1.0, 0.5, 0.0, -0.5, -1.0, -1.5)
#: method -> (normalized, step size, ε): NGD exact, NGD with the paper's ε, plain GD.
METHODS = {
    "ngd": (True, 0.1, 0.0),
    "ngd_paper_eps": (True, 0.1, PAPER_EPS_STEP["multi"]),
    "gd": (False, 1.0, 0.0),
}
#: ½‖p‖² printed by the paper's code for seed 0 (a p-SVM over all three coordinates).
PUBLISHED_OBJECTIVE_3D = 0.31319


def _objective(p: np.ndarray | None) -> float | None:
    return None if p is None else 0.5 * float(np.dot(p, p))


def trial(
    seed: int, method: str, start: int, n_steps: int, record_every: int = 5
) -> list[dict[str, Any]]:
    r"""NGD or GD on p from start ``STARTS[start]`` on the seed's data.

    One row per recorded step: ‖p‖, ``p1, p2``, the mean softmax probability of token 0
    (``prob_opt``), :math:`\cos(p, p^{\mathrm{mm}})` with the p-SVM of the attention features
    (``cos_mm``). Every row also carries ½‖p^mm‖² (``objective``), that of the p-SVM over all
    three coordinates (``objective_3d``, what the paper's code solved) and the cosine of the
    two directions in the (p1, p2) plane (``cos_2d``).
    """
    data = multi_input_data(seed)
    alpha = np.zeros(data.n, dtype=int)
    p_mm = att_svm(data, alpha, param="p").p
    U = np.asarray(data.values)
    full = prompt_data(U, np.asarray(data.Y), [0.0, 0.0, 1.0], attention=np.eye(3))
    p_3d = att_svm(full, alpha, param="p").p
    cos_2d = None if p_mm is None or p_3d is None else cosine(p_mm[:2], p_3d[:2])
    normalized, step_size, eps = METHODS[method]
    path = prompt_path(
        data,
        [STARTS[start], 0.0, 0.0],
        n_steps=n_steps,
        record_every=record_every,
        eps=eps,
        step_size=step_size,
        normalized=normalized,
    )
    return [
        {
            "step": int(step),
            "p1": float(p[0]),
            "p2": float(p[1]),
            "norm_p": float(np.linalg.norm(p)),
            "prob_opt": float(s[:, 0].mean()),
            "cos_mm": None if p_mm is None else cosine(p, p_mm),
            "objective": _objective(p_mm),
            "objective_3d": _objective(p_3d),
            "cos_2d": cos_2d,
        }
        for step, p, s in zip(path.step, path.p, path.probs, strict=True)
    ]


def grid(quick: bool) -> list[dict[str, Any]]:
    """Seed 0 (the paper's) and, full size, seeds 1–9 too; the three methods (quick: NGD
    exact and GD) × six starts; 1000 steps (quick 200). Needs torch (checked here, before
    any trial runs)."""
    import_torch()  # before any trial: the data need torch's generator
    methods = ("ngd", "gd") if quick else tuple(METHODS)
    return [
        {"seed": s, "method": m, "start": start, "n_steps": 200 if quick else 1000}
        for s in seeds(quick, 1, 10)
        for m in methods
        for start in range(len(STARTS))
    ]


def summarize(rows: Rows) -> tuple[dict[str, Any], Rows]:
    """Per (seed, method, step): mean over starts of the optimal-token probability, ‖p‖ and
    cos(p, p^mm); headline: the SVM optima of seed 0 beside the published one, the paper's
    curves (seed 0, start p0 = 0) at step 200, final cosines per method."""
    summary = []
    for (seed, method, step), g in sorted(group(rows, ("seed", "method", "step")).items()):
        summary.append(
            {
                "seed": seed,
                "method": method,
                "step": step,
                "mean_prob_opt": float(np.mean([r["prob_opt"] for r in g])),
                "mean_norm_p": float(np.mean([r["norm_p"] for r in g])),
                "mean_cos_mm": float(np.mean([r["cos_mm"] for r in g])),
            }
        )
    headline: dict[str, Any] = {}
    zero = [r for r in rows if r["seed"] == 0]
    if zero:
        r0 = zero[0]
        headline["seed 0: p-SVM 1/2|p|^2 over 3 coordinates (published 0.31319)"] = (
            f"{r0['objective_3d']:.6f}"
        )
        headline["seed 0: p-SVM 1/2|p|^2 of the attention features"] = f"{r0['objective']:.6f}"
        headline["seed 0: cos of the two SVM directions in (p1, p2)"] = r0["cos_2d"]
    center = STARTS.index(0.0)
    for method in METHODS:
        curve = [r for r in zero if r["method"] == method and r["start"] == center]
        at = [r for r in curve if r["step"] == 200]
        if at:
            headline[f"seed 0, p0=0, step 200, {method}: prob_opt, |p|"] = (
                f"{at[0]['prob_opt']:.4f}, {at[0]['norm_p']:.2f}"
            )
    last = final_parts(rows)
    for method in METHODS:
        g = [r for r in last if r["method"] == method]
        if g:
            headline[f"{method}: final cos(p, p_mm) median, min over {len(g)} runs"] = (
                f"{median(r['cos_mm'] for r in g):.6f}, {min(r['cos_mm'] for r in g):.6f}"
            )
            headline[f"{method}: final mean prob_opt, median |p|"] = (
                f"{np.mean([r['prob_opt'] for r in g]):.6f}, {median(r['norm_p'] for r in g):.2f}"
            )
    return headline, summary


def plot(rows: Rows, summary: Rows, path: Path) -> list[Path]:
    """Seed 0: the NGD paths of (p1, p2) with the tokens and p^mm; the optimal-token
    probability and ‖p‖ against the step for NGD and GD from p0 = 0 (the paper's figure)."""
    from ..plot import pyplot

    plt = pyplot()
    fig, axes = plt.subplots(1, 3, figsize=(14, 4.2))
    data = multi_input_data(0)
    X = np.asarray(data.X)
    for i in range(data.n):
        axes[0].scatter(X[i, 0, 0], X[i, 0, 1], marker="*", s=120, color=f"C{i + 2}")
        axes[0].scatter(X[i, 1:, 0], X[i, 1:, 1], marker="^", s=40, color=f"C{i + 2}")
    p_mm = att_svm(data, np.zeros(data.n, dtype=int), param="p").p
    if p_mm is not None:
        u = p_mm[:2] / np.linalg.norm(p_mm[:2])
        axes[0].plot([0, 10 * u[0]], [0, 10 * u[1]], "r--", lw=2, label="p_mm")
    seed0 = [r for r in rows if r["seed"] == 0 and r["step"] <= 200]
    for (start,), g in group([r for r in seed0 if r["method"] == "ngd"], ("start",)).items():
        label = "NGD paths" if start == 0 else None
        axes[0].plot([r["p1"] for r in g], [r["p2"] for r in g], color="gray", label=label)
    axes[0].set(xlim=(-2, 6), ylim=(-2, 4), xlabel="p1", ylabel="p2", title="seed 0: NGD paths")
    center = STARTS.index(0.0)
    for method, color in (("ngd", "red"), ("ngd_paper_eps", "orange"), ("gd", "blue")):
        g = [r for r in seed0 if r["method"] == method and r["start"] == center]
        if g:
            step = [r["step"] for r in g]
            axes[1].plot(step, [r["prob_opt"] for r in g], color=color, label=method)
            axes[2].plot(step, [r["norm_p"] for r in g], color=color, label=method)
    axes[1].set(xlabel="step", ylabel="mean softmax prob. of optimal tokens", title="p0 = 0")
    axes[2].set(xlabel="step", ylabel="|p|", title="p0 = 0")
    return finish_figure(fig, axes, path)


EXPERIMENT = register(
    Experiment(
        "companion_multi",
        "companion paper: three inputs, normalized GD vs plain GD on prompt attention p",
        trial,
        grid,
        summarize,
        plot,
    )
)
