# SPDX-License-Identifier: BSD-3-Clause
r"""Experiment ``optimizers``: which SVM does each optimizer's W end closest to? (issue #23.)

.. math::

    \mathrm{corr}\big(W_T, W^{\mathrm{mm}}_{\|\cdot\|,\alpha}\big),\qquad
    \|\cdot\| \in \{F, *, \ell_1, \ell_{1.5}, \ell_\infty, 2\},

with :math:`W_T` the final iterate of each optimizer of :data:`OPTIMIZERS` (from W = 0, or
from a small random (K, Q) start for ``param="KQ"``), α the selection it ends on (the most
probable key of every query) and :math:`W^{\mathrm{mm}}_{\|\cdot\|,\alpha}` the Att-SVM of α
in that norm (``sg.att_svm(data, alpha, norm=...)``). The ℓ1, ℓ∞ and spectral SVMs can have a
face of optimal solutions: for them the correlation is the best one over the optimal face
(:func:`~svmgeo.solvers.optimal_face_alignment`), and the correlation with the one returned
solution is kept next to it (``returned_corr_*``). *Closest* is the SVM of largest correlation.

The linear-model theorems (Gunasekar, Lee, Soudry, Srebro 2018; Fan, Schmidt, Thrampoulidis
2025) predict each steepest descent's own norm; for attention these are conjectures
(``docs/optimizers.md``, ``docs/atlas.md``).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np

from .._linalg import correlation
from ..data import TokenData, random_data
from ..gd import RiskOracle, train
from ..solvers import att_svm, optimal_face_alignment
from ._registry import Experiment, register
from ._rows import Rows, group, seeds

__all__ = [
    "EXPERIMENT",
    "FACE_SVMS",
    "KQ_INIT_SCALE",
    "KQ_OPTIMIZERS",
    "OPTIMIZERS",
    "SVMS",
    "closest",
    "final_run",
    "grid",
    "plot",
    "summarize",
    "svm_correlations",
    "trial",
]

#: The optimizers (label → options of :func:`svmgeo.train`), every one with η = 0.1.
OPTIMIZERS: dict[str, dict[str, Any]] = {
    "gd": {"optimizer": "gd"},
    "sign": {"optimizer": "sign"},
    "steepest 1.5": {"optimizer": ("steepest", 1.5)},
    "spectral": {"optimizer": "spectral"},
    "muon 0.9": {"optimizer": "spectral", "spectral_momentum": 0.9},
    "adam": {"optimizer": "adam"},
    "adam eps=0": {"optimizer": "adam", "adam_eps": 0.0},
    "mirror 1.5": {"optimizer": "mirror", "exponent": 1.5, "normalized": True},
}
#: The optimizers run on (K, Q) (mirror descent trains W only).
KQ_OPTIMIZERS = ("gd", "sign", "spectral", "adam")
#: The SVMs (label → ``norm`` of :func:`svmgeo.att_svm`): the five of issue #23 and ℓ1.5, the
#: own norm of the ℓ1.5 rules.
SVMS: dict[str, Any] = {
    "fro": "fro",
    "nuc": "nuc",
    "l1": ("lp", 1.0),
    "l1.5": ("lp", 1.5),
    "linf": ("lp", math.inf),
    "spectral": "spectral",
}
#: The SVMs whose optimum need not be unique: compared with their optimal face.
FACE_SVMS = frozenset({"l1", "linf", "spectral"})
#: Step size of every rule.
STEP = 0.1
#: Scale of the random (K, Q) start (m = d).
KQ_INIT_SCALE = 0.1
#: Data size: ``random_data(N, T, D)``.
N, T, D = 6, 8, 10


def final_run(
    data: TokenData, optimizer: str, *, param: str = "W", n_steps: int, seed: int = 0
) -> tuple[np.ndarray, np.ndarray]:
    r"""Train with the rule ``OPTIMIZERS[optimizer]`` and return the final
    :math:`W_T` (:math:`KQ^\top` for ``param="KQ"``) and the selection α it ends on.

    W starts from zero; (K, Q) (m = d) from ``("random", KQ_INIT_SCALE)`` seeded by ``seed``.
    """
    kw = dict(OPTIMIZERS[optimizer])
    if param == "KQ":
        kw.update(param="KQ", m=data.d, init=("random", KQ_INIT_SCALE), seed=seed)
    run = train(data, n_steps=n_steps, step_size=STEP, **kw)
    assert run.W is not None  # param "W" or "KQ" always gives W
    alpha = RiskOracle(data)(run.W).selected.reshape(data.selection_shape)
    return run.W, alpha


def svm_correlations(
    data: TokenData,
    W: np.ndarray,
    alpha: np.ndarray,
    norms: dict[str, Any],
    *,
    face: frozenset[str] = FACE_SVMS,
    cache: dict[tuple[str, bytes], Any] | None = None,
) -> tuple[dict[str, float], dict[str, float]]:
    r"""Correlation of W with the Att-SVM of α in each norm of ``norms``.

    .. math::

        c_{\|\cdot\|} = \mathrm{corr}(W, W^{\mathrm{mm}}_{\|\cdot\|,\alpha}), \text{ or }
        \max_{W' \in \mathcal F} \mathrm{corr}(W, W') \text{ over the optimal face }
        \mathcal F \text{ for the labels in ``face``.}

    Returns ``(corr, returned)``: the correlations (face ones for ``face``) and, for the
    labels in ``face``, the correlation with the returned solution. NaN where the SVM has no
    solution (α infeasible). ``cache`` (keyed by label and α) reuses solves across runs.
    """
    cache = {} if cache is None else cache
    corr: dict[str, float] = {}
    returned: dict[str, float] = {}
    for label, norm in norms.items():
        key = (label, alpha.tobytes())
        if key not in cache:
            res = att_svm(data, alpha, norm=norm)
            cache[key] = res if res.success and res.W is not None else None
        res = cache[key]
        if res is None:
            corr[label] = math.nan
            if label in face:
                returned[label] = math.nan
        elif label in face:
            returned[label] = correlation(W, res.W)
            corr[label] = optimal_face_alignment(res, W).correlation
        else:
            corr[label] = correlation(W, res.W)
    return corr, returned


def closest(corr: dict[str, float]) -> str:
    """The label of the largest finite correlation (the first when tied)."""
    return max(corr, key=lambda k: -math.inf if math.isnan(corr[k]) else corr[k])


def trial(seed: int, param: str, optimizer: str, n_steps: int) -> dict[str, Any]:
    r"""One optimizer on ``random_data(6, 8, 10, seed)``: the final correlation with every SVM
    of :data:`SVMS` (``corr_<svm>``; the optimal face's for :data:`FACE_SVMS`, and
    ``returned_corr_<svm>`` with the returned solution) and the closest SVM."""
    data = random_data(N, T, D, seed=seed)
    W, alpha = final_run(data, optimizer, param=param, n_steps=n_steps, seed=seed)
    corr, returned = svm_correlations(data, W, alpha, SVMS)
    row: dict[str, Any] = {f"corr_{k}": v for k, v in corr.items()}
    row.update({f"returned_corr_{k}": v for k, v in returned.items()})
    row["closest"] = closest(corr)
    row["feasible"] = not any(math.isnan(v) for v in corr.values())
    return row


def grid(quick: bool) -> list[dict[str, Any]]:
    """Seeds 0–9 (quick 0–1) of ``random_data(6, 8, 10)``; every optimizer on W and
    :data:`KQ_OPTIMIZERS` on (K, Q); 3000 steps (quick 1000)."""
    n_steps = 1000 if quick else 3000
    return [
        {"seed": s, "param": param, "optimizer": name, "n_steps": n_steps}
        for param, names in (("W", tuple(OPTIMIZERS)), ("KQ", KQ_OPTIMIZERS))
        for name in names
        for s in seeds(quick, 2, 10)
    ]


def _cells(row: dict[str, Any]) -> str:
    return " ".join(f"{row[f'corr_{k}']:.3f}" for k in SVMS)


def summarize(rows: Rows) -> tuple[dict[str, Any], Rows]:
    """Summary: one row per trial (every seed listed). Headline per (param, optimizer): the
    closest SVM of every seed, and the min–max over seeds of each correlation."""
    order = {name: k for k, name in enumerate(OPTIMIZERS)}
    keys = ["param", "optimizer", "seed", *(f"corr_{k}" for k in SVMS)]
    keys += [f"returned_corr_{k}" for k in SVMS if k in FACE_SVMS] + ["closest"]
    ordered = sorted(rows, key=lambda r: (r["param"] != "W", order[r["optimizer"]], r["seed"]))
    summary = [{k: r[k] for k in keys} for r in ordered]
    headline: dict[str, Any] = {"SVMs (face: best over the optimal face)": ", ".join(
        f"{k}{' (face)' if k in FACE_SVMS else ''}" for k in SVMS)}  # fmt: skip
    groups = group(ordered, ("param", "optimizer"))
    for (param, name), g in sorted(
        groups.items(), key=lambda kv: (kv[0][0] != "W", order[kv[0][1]])
    ):
        g = sorted(g, key=lambda r: r["seed"])
        tag = f"{param} {name}"
        headline[f"{tag}: closest, seeds {g[0]['seed']}-{g[-1]['seed']}"] = " ".join(
            r["closest"] for r in g
        )
        spans = []
        for k in SVMS:
            v = [r[f"corr_{k}"] for r in g if not math.isnan(r[f"corr_{k}"])]
            spans.append(f"{k} {min(v):.3f}-{max(v):.3f}" if v else f"{k} -")
        headline[f"{tag}: corr min-max"] = ", ".join(spans)
    return headline, summary


def plot(rows: Rows, summary: Rows, path: Path) -> list[Path]:
    """Median final correlation with each SVM (bars) per optimizer, W and (K, Q)."""
    from ..plot import pyplot, save_figure

    plt = pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(14, 3.8))
    for ax, param in zip(axes, ("W", "KQ"), strict=True):
        names = [n for n in OPTIMIZERS if any(r["param"] == param and r["optimizer"] == n
                                              for r in rows)]  # fmt: skip
        width = 0.8 / len(SVMS)
        for j, k in enumerate(SVMS):
            med = [
                float(np.nanmedian([r[f"corr_{k}"] for r in rows
                                    if r["param"] == param and r["optimizer"] == n]))
                for n in names
            ]  # fmt: skip
            ax.bar(np.arange(len(names)) + j * width, med, width, label=k)
        ax.set_xticks(np.arange(len(names)) + 0.4 - width / 2, names, rotation=30, fontsize=7)
        ax.set(ylabel="median final corr", title=f"param {param}", ylim=(0, 1.02))
        ax.legend(fontsize=7, ncol=3)
    return save_figure(fig, path)


EXPERIMENT = register(
    Experiment(
        "optimizers",
        "optimizers (n=6, T=8, d=10), W and (K, Q): final correlation with the Frobenius, "
        "nuclear, l1, l1.5, l_inf and spectral Att-SVMs (face for l1, l_inf, spectral)",
        trial,
        grid,
        summarize,
        plot,
    )
)
