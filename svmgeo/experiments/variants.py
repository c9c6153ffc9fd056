# SPDX-License-Identifier: BSD-3-Clause
r"""Experiment ``variants``: every attention map's normalized GD against every SVM (issue #22).

.. math::

    \mathrm{corr}(W_T, W_s),\qquad s \in \{\text{fro}, \text{nuc}, \text{linear},
    \text{sigmoid}, \text{relu}\},

with :math:`W_T` the final iterate of each map of :data:`MAPS` on ``random_data(6, 8, 10,
seed)`` and each SVM taken at what :math:`W_T` ends on: softmax's Att-SVM (``fro``) and
Att-SVM⋆ (``nuc``) of the largest logits, linear attention's one-row SVM, the sigmoid SVM of
the final sign pattern, the ReLU QP of the final active pattern (``att_svm(data,
attention=...)``; NaN where infeasible, and ``fro``, ``nuc`` NaN where the largest logit is
tied: no selection, the tied queries named in ``tied``). *Closest* is the SVM of largest
correlation; *own* the map's prediction: for linear attention the hard-margin SVM of its
rows (the limit is a theorem — Soudry et al. 2018 — for separable rows, an exponentially tailed loss and plain GD with
η < 2/β; these runs take constant-step normalized steps, so here it is measured), for ReLU a KKT
point (Lyu & Li 2020 prove that for gradient flow and small-step GD on smooth models; ReLU
attention is not smooth: a conjecture, measured), for sigmoid svmgeo's conjecture; none for
normalized linear attention.

The correlation with Att-SVM⋆ is with the solution the solver returns, one point of the
optimal set, which the nuclear norm does not make unique in general. In these runs it
understates the best over that set by at most 5.8e-4 (measured on the full grid,
``benchmarks/nuclear_face_variants.py``: the τ-optimal face's best correlation minus the
returned one, 9.5e-5–5.8e-4: its smallest over τ among the maxima; the face narrows by
3.11–3.19 per decade of τ from 1e-4 to 1e-7, the √10 of a unique optimum). Evidence, not a
proof of uniqueness.

Sigmoid runs also report their *stuck* keys (final sign against the pull
:math:`\mathrm{sign}\,\gamma`) and the verdict of :func:`~svmgeo.is_locally_optimal_pattern`.
Measured numbers: docs/attention-maps.md.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np

from .._errors import ProblemError
from .._linalg import correlation
from ..analysis import PatternOptimality, is_locally_optimal_pattern
from ..data import TokenData, random_data
from ..solvers import att_svm
from ._registry import Experiment, register
from ._rows import Rows, group, median, seeds, span, tied_entry, unknown
from ._selection import final_selection
from .optimizers import closest
from .stability import train_map

__all__ = [
    "EXPERIMENT",
    "MAPS",
    "OWN",
    "SVMS",
    "closest",
    "grid",
    "plot",
    "summarize",
    "svm_solutions",
    "trial",
]

#: The attention maps (the table of :data:`svmgeo.attention_maps.ATTENTION_MAPS`).
MAPS = ("softmax", "linear", "normalized_linear", "sigmoid", "relu")
#: The SVMs every run is compared with.
SVMS = ("fro", "nuc", "linear", "sigmoid", "relu")
#: Each map's own prediction (None: normalized linear attention has no SVM limit).
OWN: dict[str, str | None] = {
    "softmax": "fro",
    "linear": "linear",
    "normalized_linear": None,
    "sigmoid": "sigmoid",
    "relu": "relu",
}
#: Data size: ``random_data(N, T, D)``.
N, T, D = 6, 8, 10


def svm_solutions(data: TokenData, W: np.ndarray) -> dict[str, np.ndarray | None]:
    """Each SVM of :data:`SVMS` at what W ends on (None where it has no solution, and for
    ``fro``, ``nuc`` where W selects no one key per query, tied or non-finite logits:
    :func:`final_selection`)."""
    return _svm_solutions(data, W, final_selection(data, W)[0])


def _svm_solutions(
    data: TokenData, W: np.ndarray, alpha: np.ndarray | None
) -> dict[str, np.ndarray | None]:
    """:func:`svm_solutions` with W's final selection ``alpha`` given (None: no selection)."""
    solves = {
        "fro": lambda: att_svm(data, alpha),
        "nuc": lambda: att_svm(data, alpha, norm="nuc"),
        "linear": lambda: att_svm(data, attention="linear"),
        "sigmoid": lambda: att_svm(data, attention="sigmoid", pattern=W),
        "relu": lambda: att_svm(data, attention="relu", pattern=W),
    }
    out: dict[str, np.ndarray | None] = {}
    for name, solve in solves.items():
        if alpha is None and name in ("fro", "nuc"):  # no selection: no Att-SVM
            out[name] = None
            continue
        try:
            res = solve()
        except ProblemError:  # a logit exactly 0: no sign pattern to build on
            out[name] = None
            continue
        out[name] = res.W if res.success and res.W is not None else None
    return out


def _stuck_verdict(lot: PatternOptimality) -> str:
    """The stuck keys' prediction: "none" (no key against its pull), "stays" (the pattern
    passes), "flips" (it fails) or "undecided" (the pattern's SVM was not decided)."""
    if not lot.decided:
        return "undecided"
    if not lot.stuck:
        return "none"
    return "stays" if lot.locally_optimal else "flips"


def trial(seed: int, attention: str, n_steps: int) -> dict[str, Any]:
    r"""One map on ``random_data(6, 8, 10, seed)``: ``corr_<svm>`` for every SVM of
    :data:`SVMS`, ``own`` and ``corr_own``, ``closest``, ``tied`` (the queries whose final
    largest logit is tied or not finite, :func:`final_selection`; ``""`` without); for
    sigmoid also
    ``n_stuck``, the
    stuck keys (``stuck``: ``seq:key m=margin``, the margin at the pattern's SVM) and
    ``stuck_verdict`` of :func:`~svmgeo.is_locally_optimal_pattern` ("none", "stays",
    "flips" or "undecided"; NaN / "" otherwise)."""
    data = random_data(N, T, D, seed=seed)
    run = train_map(data, attention, n_steps, seed=seed)
    W = np.asarray(run.W)
    alpha, tied = final_selection(data, W)
    sols = _svm_solutions(data, W, alpha)
    corr = {k: math.nan if v is None else correlation(W, v) for k, v in sols.items()}
    own = OWN[attention]
    assert run.history.loss is not None  # recorded by default
    row: dict[str, Any] = {f"corr_{k}": v for k, v in corr.items()}
    row.update(
        own=own or "none",
        corr_own=math.nan if own is None else corr[own],
        closest=closest(corr),
        tied=tied,
        loss=float(run.history.loss[-1]),
        n_stuck=math.nan,
        stuck="",
        stuck_verdict="",
    )
    if attention == "sigmoid":
        lot = is_locally_optimal_pattern(data, run)
        row["n_stuck"] = len(lot.stuck)
        row["stuck"] = " ".join(f"{s.seq}:{s.token} m={s.margin:.3f}" for s in lot.stuck)
        row["stuck_verdict"] = _stuck_verdict(lot)
    return row


def grid(quick: bool) -> list[dict[str, Any]]:
    """Seeds 0–5 (quick 0–1) × :data:`MAPS`; 20,000 steps (quick 2,000)."""
    n_steps = 2000 if quick else 20_000
    return [
        {"seed": s, "attention": a, "n_steps": n_steps} for a in MAPS for s in seeds(quick, 2, 6)
    ]


def _why(svm: str) -> str:
    """Why a correlation with ``svm`` is missing (NaN, :func:`span`): the SVM has no solution
    at W_T, or, for ``fro`` and ``nuc``, the final selection is tied (no Att-SVM)."""
    tied = ", or a tied selection" if svm in ("fro", "nuc") else ""
    return f"no {svm} SVM solution{tied}"


def _closest_text(row: dict[str, Any]) -> str:
    """A row's closest SVM and its correlation, e.g. ``"sigmoid 0.663"`` (``"none"``)."""
    best = row["closest"]
    return best if best == "none" else f"{best} {row[f'corr_{best}']:.3f}"


def summarize(rows: Rows) -> tuple[dict[str, Any], Rows]:
    """Summary: one row per (map, seed), every seed listed. Headline per map: the closest SVM
    of every seed (the largest correlation, no threshold) with its correlation, 1 − corr with
    its own SVM (min–max), the min–max of every correlation, each span saying how many seeds
    it covers and why the others are missing where some are (NaN: no solution;
    :func:`~svmgeo.experiments._rows.span`); the seeds whose final selection is tied (when
    any); and the stuck sigmoid keys with their verdicts. A row without ``tied`` (a table
    written before it) counts as unknown."""
    order = {a: k for k, a in enumerate(MAPS)}
    keys = ["attention", "seed", *(f"corr_{k}" for k in SVMS), "own", "corr_own", "closest",
            "tied", "loss", "n_stuck", "stuck", "stuck_verdict"]  # fmt: skip
    ordered = sorted(rows, key=lambda r: (order[r["attention"]], r["seed"]))
    summary = [{k: r.get(k) for k in keys} for r in ordered]
    headline: dict[str, Any] = unknown(ordered, ["tied"])
    for (att,), g in group(ordered, ("attention",)).items():
        tag = f"{att}, seeds {g[0]['seed']}-{g[-1]['seed']}"
        headline[f"{tag}: closest (largest corr, no threshold)"] = ", ".join(
            _closest_text(r) for r in g
        )
        headline.update(tied_entry(g, f"{tag}: tied final selection (no fro, nuc)"))
        own = g[0]["own"]
        headline[f"{tag}: 1 - corr(own {own})"] = (
            span((1 - r["corr_own"] for r in g), ".1e", _why(own))
            if own != "none"
            else "- (no own SVM)"
        )
        headline[f"{tag}: corr min-max"] = ", ".join(
            f"{k} {span((r[f'corr_{k}'] for r in g), '.3f', _why(k))}" for k in SVMS
        )
        if att == "sigmoid":
            headline[f"{tag}: stuck keys"] = (
                "; ".join(
                    f"seed {r['seed']}: {r['stuck']} ({r['stuck_verdict']})"
                    for r in g
                    if r["stuck"]
                )
                or "none"
            )
    return headline, summary


def plot(rows: Rows, summary: Rows, path: Path) -> list[Path]:
    """Median final correlation of each map (rows) with each SVM (columns), and 1 − corr with
    the own SVM per seed."""
    from ..plot import pyplot, save_figure

    plt = pyplot()
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(13, 4))
    maps = [a for a in MAPS if any(r["attention"] == a for r in summary)]
    med = np.array(
        [[median(r[f"corr_{k}"] for r in summary if r["attention"] == a) for k in SVMS]
         for a in maps]
    )  # fmt: skip
    im = ax.imshow(med, vmin=0, vmax=1, cmap="viridis")
    for (i, j), v in np.ndenumerate(med):
        ax.text(j, i, "-" if math.isnan(v) else f"{v:.2f}", ha="center", va="center",
                color="w" if not math.isnan(v) and v < 0.6 else "k", fontsize=8)  # fmt: skip
    ax.set_xticks(range(len(SVMS)), SVMS)
    ax.set_yticks(range(len(maps)), maps)
    ax.set(xlabel="SVM", ylabel="attention map", title="median final corr(W, SVM)")
    fig.colorbar(im, ax=ax)
    for j, a in enumerate(maps):
        g = [r for r in summary if r["attention"] == a and math.isfinite(r["corr_own"])]
        bx.scatter([j] * len(g), [max(1 - r["corr_own"], 1e-16) for r in g], s=14)
    bx.set_xticks(range(len(maps)), maps, rotation=20, fontsize=8)
    bx.set(yscale="log", ylabel="1 - corr(W, own SVM)", title="each seed")
    return save_figure(fig, path)


EXPERIMENT = register(
    Experiment(
        "variants",
        "variants (n=6, T=8, d=10): every attention map's normalized GD against every SVM "
        "(softmax Att-SVM fro / nuc, linear, sigmoid, ReLU); closest SVM, stuck sigmoid signs",
        trial,
        grid,
        summarize,
        plot,
    )
)
