# SPDX-License-Identifier: BSD-3-Clause
r"""Experiment ``stability``: softmax against linear and normalized-linear attention along
normalized GD (issue #22) — exact local Lipschitz constants, selection-changing radii, loss.

.. math::

    L^W(t) = \big\|\partial_{\mathrm{vec} W}\, y(W_t)\big\|_2, \quad
    L^X(t) = \max_i \big\|\partial_{\mathrm{vec} X_i}\, y_i(W_t)\big\|_2, \quad
    r_i(W) = \min_{\tau \ne \alpha_i} \frac{(x_{i\alpha_i} - x_{i\tau})^\top W z_i}
    {\sqrt2\, \|W z_i\|},

at recorded steps t of each map's normalized GD on ``random_data(6, 8, 10, seed)``
(:func:`~svmgeo.lipschitz`, :func:`~svmgeo.robustness_radius`; α the largest logit of each
sequence). The radius is invariant under :math:`W \to cW`, so if :math:`W_t/\|W_t\|`
converges to an SVM direction :math:`\bar W` it tends to :math:`r_i(\bar W)`. The directions
compared with: softmax's :math:`\bar W` is the Att-SVM of its selection (that GD from
:math:`W = 0` converges to it is a conjecture, measured here); linear attention's is its
one-row SVM (``att_svm(data, attention="linear")``; the limit is a theorem, Soudry et al.
2018, for separable rows, an exponentially tailed loss and plain GD with :math:`\eta < 2/\beta`,
and these constant-step normalized runs are measured); normalized linear attention has none
(NaN), and neither has softmax where its final largest logit is tied (no selection: NaN, the
tied queries named in ``tied``, :func:`final_selection`). Part of svmgeo's reconstruction
of Chen, Guo, Li, Song, Zhou (ICLR 2024 submission 4416); docs/attention-maps.md.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np

from .._linalg import correlation
from ..analysis import lipschitz, robustness_radius
from ..data import TokenData, random_data
from ..gd import GDRun, train
from ..solvers import att_svm
from ._registry import Experiment, register
from ._rows import Rows, final_parts, finite, group, seeds, span, tied_entry, unknown
from ._selection import final_selection

__all__ = [
    "EXPERIMENT",
    "MAPS",
    "RANDOM_START",
    "grid",
    "limit_direction",
    "marks",
    "plot",
    "summarize",
    "train_map",
    "trial",
]

#: The attention maps compared.
MAPS = ("softmax", "linear", "normalized_linear")
#: Maps that cannot start at W = 0 (normalized linear: undefined; ReLU: stationary) start from
#: this random W, seeded by the data seed.
RANDOM_START = ("random", 0.1)
#: Step size of normalized GD.
STEP = 0.1
#: Data size: ``random_data(N, T, D)``.
N, T, D = 6, 8, 10


def marks(quick: bool) -> tuple[int, ...]:
    """The recorded steps: 1,000 to 20,000 (quick: 250 to 2,000)."""
    return (250, 500, 1000, 2000) if quick else (1000, 2000, 5000, 10_000, 20_000)


def train_map(data: TokenData, attention: str, n_steps: int, seed: int = 0) -> GDRun:
    """Normalized GD (η = 0.1, logistic loss) with ``attention``, recording every 250 steps;
    from W = 0, or from :data:`RANDOM_START` (seeded by ``seed``) for normalized linear and
    ReLU attention."""
    kw: dict[str, Any] = {}
    if attention in ("normalized_linear", "relu"):
        kw = {"init": RANDOM_START, "seed": seed}
    return train(data, attention=attention, n_steps=n_steps, step_size=STEP, record_every=250, **kw)


def limit_direction(data: TokenData, attention: str, W: np.ndarray) -> np.ndarray | None:
    """The SVM direction the radius is predicted to tend to: softmax's Att-SVM of the largest
    logits at W, linear attention's one-row SVM, None for normalized linear attention and for
    softmax where W selects no one key per query (tied or non-finite logits,
    :func:`final_selection`)."""
    return _limit(data, attention, _softmax_selection(data, attention, W)[0])


def _softmax_selection(
    data: TokenData, attention: str, W: np.ndarray
) -> tuple[np.ndarray | None, str]:
    """softmax's final selection at W and its queries without one (:func:`final_selection`);
    ``(None, "")`` for the linear maps, whose limits use no selection."""
    if attention in ("linear", "normalized_linear"):
        return None, ""
    return final_selection(data, W)


def _limit(data: TokenData, attention: str, alpha: np.ndarray | None) -> np.ndarray | None:
    """:func:`limit_direction` of the selection ``alpha`` (:func:`_softmax_selection`)."""
    if attention == "normalized_linear":
        return None
    if attention == "linear":
        res = att_svm(data, attention="linear")
    elif alpha is None:
        return None
    else:
        res = att_svm(data, alpha)
    return res.W if res.success else None


def trial(seed: int, attention: str, quick: bool) -> list[dict[str, Any]]:
    r"""One map on ``random_data(6, 8, 10, seed)``: at each step of :func:`marks`, the loss,
    ‖W‖_F, the exact local Lipschitz constants ``lip_W``, ``lip_X`` (and the global W-bound
    ``lip_W_bound``, NaN when there is none), the smallest radius ``radius_min``, its predicted
    limit ``radius_svm_min`` and ``radius_gap = max_i |r_i − r_i(W̄)|``, ``corr_limit``,
    the correlation of W with the limit direction W̄ (NaN without one), and ``tied``, the
    queries whose largest logit is tied (or not finite) at softmax's final W
    (:func:`final_selection`; ``""`` without, and for the linear maps, whose limit uses no
    selection), the same on every row."""
    data = random_data(N, T, D, seed=seed)
    steps = marks(quick)
    run = train_map(data, attention, steps[-1], seed=seed)
    hist = {int(t): k for k, t in enumerate(run.history.step)}
    # softmax's limit is the Att-SVM of its selection; the linear maps' limits do not use one
    alpha, tied = _softmax_selection(data, attention, np.asarray(run.W))
    limit = _limit(data, attention, alpha)
    r_svm = robustness_radius(data, limit, svm=False).radius if limit is not None else None
    Ws, losses = run.history.W, run.history.loss
    assert Ws is not None and losses is not None  # recorded by default
    rows = []
    for step in steps:
        k = hist[step]
        W = np.asarray(Ws[k])
        lw = lipschitz(data, W, attention, wrt="W")
        lx = lipschitz(data, W, attention, wrt="X")
        rad = robustness_radius(data, W, svm=False).radius
        rows.append({
            "step": step,
            "loss": float(losses[k]),
            "W_norm": float(np.linalg.norm(W)),
            "lip_W": lw.overall,
            "lip_W_bound": math.nan if lw.bound_overall is None else lw.bound_overall,
            "lip_X": lx.overall,
            "radius_min": float(rad.min()),
            "radius_svm_min": math.nan if r_svm is None else float(r_svm.min()),
            "radius_gap": math.nan if r_svm is None else float(np.abs(rad - r_svm).max()),
            "corr_limit": math.nan if limit is None else correlation(W, limit),
            "tied": tied,
        })  # fmt: skip
    return rows


def grid(quick: bool) -> list[dict[str, Any]]:
    """Seeds 0–3 (quick 0–1) × :data:`MAPS`; 20,000 steps (quick 2,000)."""
    return [{"seed": s, "attention": a, "quick": quick} for a in MAPS for s in seeds(quick, 2, 4)]


#: Why a seed has no radius gap or correlation with the limit (NaN, for the headline's counts).
_NO_LIMIT = (
    "no limit direction (normalized linear attention; softmax's final selection tied, or its "
    "Att-SVM infeasible)"
)


def summarize(rows: Rows) -> tuple[dict[str, Any], Rows]:
    """Summary: every (map, seed, step) row. Headline per map, at the last step and over the
    seeds: L_X, L_X / ‖W‖, L_W, the radius gap to the SVM-limit prediction and the loss, each
    as min–max over the seeds with a finite value (how many and why the others are missing
    when some are, :func:`~svmgeo.experiments._rows.span`), with the seeds listed; and the
    seeds whose final selection is tied (when any).
    A row without ``tied`` (a table written before it) counts as unknown."""
    order = {a: k for k, a in enumerate(MAPS)}
    keys = ["attention", "seed", "step", "loss", "W_norm", "lip_W", "lip_W_bound", "lip_X",
            "radius_min", "radius_svm_min", "radius_gap", "corr_limit", "tied"]  # fmt: skip
    ordered = sorted(rows, key=lambda r: (order[r["attention"]], r["seed"], r["step"]))
    summary = [{k: r.get(k) for k in keys} for r in ordered]
    headline: dict[str, Any] = unknown(ordered, ["tied"])
    for (att,), g in group(final_parts(ordered), ("attention",)).items():
        g = sorted(g, key=lambda r: r["seed"])
        tag = f"{att} at step {g[0]['step']}, seeds {g[0]['seed']}-{g[-1]['seed']}"
        headline.update(tied_entry(g, f"{tag}: tied final selection"))
        headline[f"{tag}: L_X"] = span([r["lip_X"] for r in g], ".4g", "")
        headline[f"{tag}: L_X/||W||"] = span([r["lip_X"] / r["W_norm"] for r in g], ".3g", "")
        headline[f"{tag}: L_W"] = span([r["lip_W"] for r in g], ".3g", "")
        gaps = [r["radius_gap"] for r in g]
        headline[f"{tag}: max |r - r_svm|"] = span(gaps, ".2e", _NO_LIMIT)
        off = [1 - r["corr_limit"] for r in g]
        headline[f"{tag}: 1 - corr(W, limit)"] = span(off, ".1e", _NO_LIMIT)
        headline[f"{tag}: loss"] = span([r["loss"] for r in g], ".3g", "")
    return headline, summary


def plot(rows: Rows, summary: Rows, path: Path) -> list[Path]:
    """L_X, L_W, the radius gap and the loss against the step, one line per (map, seed)."""
    from ..plot import pyplot, save_figure

    plt = pyplot()
    fig, axes = plt.subplots(1, 4, figsize=(16, 3.6))
    colors = {"softmax": "C0", "linear": "C1", "normalized_linear": "C2"}
    panels = (("lip_X", "local Lipschitz in X"), ("lip_W", "local Lipschitz in W"),
              ("radius_gap", "max_i |r_i - r_i(SVM)|"), ("loss", "loss"))  # fmt: skip
    for (att, seed), g in group(summary, ("attention", "seed")).items():
        g = sorted(g, key=lambda r: r["step"])
        for ax, (key, _) in zip(axes, panels, strict=True):
            y = [r[key] for r in g]
            if not finite(y) or all(v <= 0 for v in finite(y)):
                continue
            ax.plot([r["step"] for r in g], y, color=colors[att], alpha=0.7,
                    label=att if seed == 0 else None)  # fmt: skip
    for ax, (_, title) in zip(axes, panels, strict=True):
        ax.set(xscale="log", yscale="log", xlabel="step", title=title)
        ax.legend(fontsize=7)
    return save_figure(fig, path)


EXPERIMENT = register(
    Experiment(
        "stability",
        "stability (n=6, T=8, d=10): softmax vs linear vs normalized-linear attention along "
        "normalized GD; exact local Lipschitz constants in W and X, selection radii against "
        "their SVM limit, loss",
        trial,
        grid,
        summarize,
        plot,
    )
)
