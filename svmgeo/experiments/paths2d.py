# SPDX-License-Identifier: BSD-3-Clause
r"""Experiment ``paths2d``: W and (K, Q) gradient-descent paths on d = 2 instances, against
the Frobenius :math:`W^{mm}` and nuclear :math:`W^{mm\star}` directions of Att-SVM(opt).

.. math::

    \operatorname{corr}(W(t), W^{mm}) = \frac{\langle W(t), W^{mm}\rangle}
    {\|W(t)\|_F\,\|W^{mm}\|_F}

Protocol and measured numbers: ``docs/experiments.md``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from .._linalg import correlation
from ..data import random_data
from ..gd import train
from ..selection import optimal_tokens
from ..solvers import att_svm
from ._registry import Experiment, register
from ._rows import Rows, final_parts, median, seeds

__all__ = ["EXPERIMENT", "grid", "plot", "summarize", "trial"]


def trial(
    n: int, T: int, seed: int, param: str, n_steps: int, n_records: int = 100
) -> list[dict[str, Any]]:
    r"""W or (K, Q) GD paths on a d = 2 instance, against W^mm (Frobenius) and W^mm⋆ (nuclear).

    W from zero, (K, Q) (m = 2) from a random start of scale 0.01. One row per recorded step:
    the entries of W(t) (``w00, w01, w10, w11``) and its correlations with both SVM solutions.
    """
    data = random_data(n, T, 2, seed=seed)
    alpha = optimal_tokens(data)
    fro = att_svm(data, alpha, norm="fro")
    nuc = att_svm(data, alpha, norm="nuc")
    if fro.W is None or nuc.W is None:
        return [
            {
                "step": 0,
                "w00": None,
                "w01": None,
                "w10": None,
                "w11": None,
                "corr_fro": None,
                "corr_nuc": None,
                "feasible": False,
            }
        ]
    run = train(
        data,
        param=param,
        m=2 if param == "KQ" else None,
        step_size=0.1 if param == "W" else 0.05,
        n_steps=n_steps,
        init="zero" if param == "W" else ("random", 0.01),
        seed=None if param == "W" else seed,
        record_every=max(1, n_steps // n_records),
        record=("W",),
    )
    assert run.history.W is not None
    return [
        {
            "step": int(step),
            "w00": float(W[0, 0]),
            "w01": float(W[0, 1]),
            "w10": float(W[1, 0]),
            "w11": float(W[1, 1]),
            "corr_fro": correlation(W, fro.W) if np.any(W) else 0.0,
            "corr_nuc": correlation(W, nuc.W) if np.any(W) else 0.0,
            "feasible": True,
        }
        for step, W in zip(run.history.step, run.history.W, strict=True)
    ]


def grid(quick: bool) -> dict[str, Any]:
    """n = 2, T = 3, seeds 0–3 (quick 0–1), W and (K, Q), 5000 steps (quick 500)."""
    return {
        "n": [2],
        "T": [3],
        "seed": seeds(quick, 2, 4),
        "param": ["W", "KQ"],
        "n_steps": [500 if quick else 5000],
    }


def summarize(rows: Rows) -> tuple[dict[str, Any], Rows]:
    """Final correlations per instance and parameterization; their medians."""
    last = [r for r in final_parts(rows) if r["feasible"]]
    summary = [{k: r[k] for k in ("seed", "param", "step", "corr_fro", "corr_nuc")} for r in last]
    headline = {
        "instances": len({r["seed"] for r in last}),
        "W: median final corr with W_mm fro": median(
            r["corr_fro"] for r in last if r["param"] == "W"
        ),
        "W: median final corr with W_mm nuc": median(
            r["corr_nuc"] for r in last if r["param"] == "W"
        ),
        "KQ: median final corr with W_mm nuc": median(
            r["corr_nuc"] for r in last if r["param"] == "KQ"
        ),
        "KQ: median final corr with W_mm fro": median(
            r["corr_fro"] for r in last if r["param"] == "KQ"
        ),
    }
    return headline, summary


def plot(rows: Rows, summary: Rows, path: Path) -> list[Path]:
    r"""Paths of :math:`W(t)z_i` in the plane for W and (K, Q), with SVM directions as rays."""
    from ..plot import pyplot, save_figure

    plt = pyplot()
    seed_list = sorted({r["seed"] for r in rows if r["feasible"]})
    fig, axes = plt.subplots(
        1, max(1, len(seed_list)), figsize=(3.6 * max(1, len(seed_list)), 3.6), squeeze=False
    )
    for ax, seed in zip(axes[0], seed_list, strict=False):
        g = [r for r in rows if r["seed"] == seed]
        n, T = g[0]["n"], g[0]["T"]
        data = random_data(n, T, 2, seed=seed)
        Z = data.queries[:, 0]
        alpha = optimal_tokens(data)
        sols = {nm: att_svm(data, alpha, norm=nm).W for nm in ("fro", "nuc")}
        for i in range(n):
            for k, param in enumerate(("W", "KQ")):
                h = [r for r in g if r["param"] == param]
                W = np.stack([[[r["w00"], r["w01"]], [r["w10"], r["w11"]]] for r in h])
                p = W @ Z[i]
                scale = np.linalg.norm(p, axis=1).max() or 1.0
                ax.plot(
                    p[:, 0] / scale,
                    p[:, 1] / scale,
                    color=f"C{k}",
                    lw=1.2,
                    label=f"{param} path" if i == 0 else None,
                )
            for nm, style in (("fro", "--"), ("nuc", ":")):
                Wm = sols[nm]
                if Wm is not None:
                    q = Wm @ Z[i]
                    q = q / np.linalg.norm(q)
                    ax.plot(
                        [0, q[0]],
                        [0, q[1]],
                        style,
                        color="k",
                        label=f"W_mm {nm}" if i == 0 else None,
                    )
        ax.set(title=f"seed {seed}: W(t) z_i (normalized)", aspect="equal")
        ax.legend(fontsize=6)
    return save_figure(fig, path)


EXPERIMENT = register(
    Experiment(
        "paths2d",
        "2-D trajectories: W and (K, Q) GD paths vs Frobenius / nuclear SVM directions",
        trial,
        grid,
        summarize,
        plot,
    )
)
