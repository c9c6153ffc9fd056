# SPDX-License-Identifier: BSD-3-Clause
r"""Experiment ``gensvm``: normalized GD on W with the ReLU-value head against the paper's
*proposed* Gen-SVM equivalence (a conjecture, measured here, never asserted).

.. math::

    h(x) = v^\top \mathrm{ReLU}(V^\top x), \qquad
    W^{eq}(t) = W^{fin} + R(t)\,W^{svm}

Protocol and measured numbers: ``docs/experiments.md``.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np

from ..data import random_data
from ..gd import DEFAULT_BACKEND
from ._registry import Experiment, register
from ._rows import (
    Rows,
    as_float,
    final_parts,
    finite,
    group,
    mean,
    median,
    seeds,
    tied_entry,
    unknown,
)
from ._selection import verified_or_tied

__all__ = ["EXPERIMENT", "GAMMA_SMALL", "grid", "plot", "summarize", "trial"]

#: Γ at or below this counts as "tiny" in the headline (the final softmax is nearly one-hot).
GAMMA_SMALL = 1e-8


def _verify_rows(rep: Any) -> list[dict[str, Any]]:
    def one_minus(c: np.ndarray | None, k: int) -> float:
        return float("nan") if c is None else float(1.0 - c[k])

    sizes = None if rep.selected is None else rep.selected.reshape(rep.selected.shape[0], -1)
    return [
        {
            "step": int(step),
            "one_minus_corr_eq": one_minus(rep.corr_eq, k),
            "one_minus_corr_dir": one_minus(rep.corr_dir, k),
            "one_minus_corr_svm": one_minus(rep.corr_fro, k),
            "gamma": as_float(rep.gamma),
            "max_selected": None if sizes is None else int(sizes.sum(axis=1).max()),
            "n_ambiguous": rep.n_ambiguous,
            "tied": "",
        }
        for k, step in enumerate(rep.steps)
    ]


def _tied_rows(steps: np.ndarray, tied: str) -> list[dict[str, Any]]:
    """The rows of a run whose final selection is tied: ``verify`` refuses it, so neither
    the one-token Att-SVM nor Gen-SVM (nor its Γ and selected sets) is computed: NaN / None
    in :func:`_verify_rows`'s columns, ``tied`` naming the queries."""
    nan = float("nan")
    unsolved = {"one_minus_corr_eq": nan, "one_minus_corr_dir": nan, "one_minus_corr_svm": nan,
                "gamma": nan, "max_selected": None, "n_ambiguous": None}  # fmt: skip
    return [{"step": int(step), **unsolved, "tied": tied} for step in steps]


def trial(
    n: int,
    T: int,
    d: int,
    seed: int,
    n_steps: int,
    v_sign: str = "ones",
    n_records: int = 30,
) -> list[dict[str, Any]]:
    r"""Normalized GD on W with the ReLU-value head :math:`h(x) = v^\top\mathrm{ReLU}(V^\top x)`.

    ``V`` (d × d) has i.i.d. N(0, 1) entries drawn from ``seed``; ``v`` is all ones
    (``v_sign="ones"``, the head of SPEC §1) or alternates +1, −1 (``"alt"``). One row per recorded step:
    1 − corr of W(t) with W^eq = W^fin + R(t) W^svm (Gen-SVM of the final softmax's selected
    sets), with W^svm, and with the one-token Att-SVM of GD's argmax selection; Γ of the final
    softmax; ``tied``: ``""``, or the queries where the final largest logit is tied
    (``verify`` refuses such a run; its error carries the run, reported here,
    :func:`~svmgeo.experiments._selection.verified_or_tied`: every SVM cell NaN).
    """
    from ..verify import verify

    data = random_data(n, T, d, seed=seed)
    V = np.random.default_rng([seed, 3]).standard_normal((d, d))
    options: dict[str, Any] = dict(
        head="relu",
        V=V,
        v=np.ones(d) if v_sign == "ones" else np.where(np.arange(d) % 2 == 0, 1.0, -1.0),
        step_size=0.1,
        normalized=True,
        backend=DEFAULT_BACKEND,
        n_steps=n_steps,
        record_every=max(1, n_steps // n_records),
    )
    rep, run, tied = verified_or_tied(verify, data, options)
    return _verify_rows(rep) if rep is not None else _tied_rows(run.history.step, tied)


def grid(quick: bool) -> dict[str, Any]:
    """n = 3, T = 4, d ∈ {4, 6, 8, 10}, 50 seeds, v all ones or alternating, 5000 steps
    (quick: d ∈ {4, 8}, 3 seeds, v all ones, 500 steps)."""
    return {
        "n": [3],
        "T": [4],
        "d": [4, 8] if quick else [4, 6, 8, 10],
        "seed": seeds(quick, 3, 50),
        "n_steps": [500 if quick else 5000],
        "v_sign": ["ones"] if quick else ["ones", "alt"],
    }


def summarize(rows: Rows) -> tuple[dict[str, Any], Rows]:
    """Median 1 − corr per (v, d, step); per (v, d) how often Gen-SVM is defined and predicts,
    and the seeds whose final selection is tied (when any; verify refuses them, so Gen-SVM is
    not computed: counted among the trials, not as defined). A row without ``tied`` (a table
    written before it) counts as unknown."""
    summary = []
    for (v_sign, d, step), g in sorted(group(rows, ("v_sign", "d", "step")).items()):
        summary.append(
            {
                "v_sign": v_sign,
                "d": d,
                "step": step,
                "with_gen_svm": len(finite(r["one_minus_corr_eq"] for r in g)),
                "median_1m_corr_eq": median(r["one_minus_corr_eq"] for r in g),
                "median_1m_corr_dir": median(r["one_minus_corr_dir"] for r in g),
                "median_1m_corr_svm": median(r["one_minus_corr_svm"] for r in g),
            }
        )
    last = final_parts(rows)
    headline: dict[str, Any] = unknown(last, ["tied"])
    for (v_sign, d), g in sorted(group(last, ("v_sign", "d")).items()):
        key = f"v={v_sign} d={d}"
        defined = [r for r in g if math.isfinite(r["one_minus_corr_eq"])]
        mixed = [r for r in defined if r["max_selected"] > 1 and r["n_ambiguous"] == 0]
        eq = [1.0 - r["one_minus_corr_eq"] for r in defined]
        headline[f"{key}: Gen-SVM defined / trials"] = f"{len(defined)}/{len(g)}"
        headline.update(tied_entry(g, f"{key}: tied final selection (no SVM)"))
        headline[f"{key}: median corr(W, W_eq)"] = median(eq)
        headline[f"{key}: share corr(W, W_eq) > 0.99"] = mean(c > 0.99 for c in eq)
        headline[f"{key}: |O_i| >= 2 without ambiguous tokens: n, median corr(W, W_eq)"] = (
            f"{len(mixed)}, {median(1.0 - r['one_minus_corr_eq'] for r in mixed):.4f}"
        )
        tiny = [1.0 - r["one_minus_corr_eq"] for r in defined if r["gamma"] <= GAMMA_SMALL]
        headline[f"{key}: Gamma <= {GAMMA_SMALL:g}: n, median corr(W, W_eq), share > 0.99"] = (
            f"{len(tiny)}, {median(tiny):.6f}, {mean(c > 0.99 for c in tiny):.2f}"
        )
        headline[f"{key}: median corr(W, one-token W_mm)"] = median(
            1.0 - r["one_minus_corr_svm"] for r in g
        )
    return headline, summary


def plot(rows: Rows, summary: Rows, path: Path) -> list[Path]:
    """Median 1 − corr with W^eq, W^svm and one-token W^mm vs step per d; Γ scatter."""
    from ..plot import column, pyplot, save_figure

    plt = pyplot()
    ds = sorted({s["d"] for s in summary})
    fig, axes = plt.subplots(1, len(ds) + 1, figsize=(3.3 * (len(ds) + 1), 3.2))
    for ax, d in zip(axes[:-1], ds, strict=True):
        for v_sign, style in (("ones", "-"), ("alt", "--")):
            g = [s for s in summary if s["d"] == d and s.get("v_sign", "ones") == v_sign]
            if not g:
                continue
            step = column(g, "step")
            for k, (key, label) in enumerate(
                (
                    ("median_1m_corr_eq", "W_eq"),
                    ("median_1m_corr_dir", "Gen-SVM dir"),
                    ("median_1m_corr_svm", "one-token SVM"),
                )
            ):
                y = np.maximum(column(g, key), 1e-16)
                ax.semilogy(step, y, style, color=f"C{k}", label=f"{label} (v={v_sign})")
        ax.set(xlabel="step", ylabel="median 1 - corr", title=f"d={d}")
        ax.legend(fontsize=5)
    last = final_parts(rows)
    gam = np.maximum(column(last, "gamma"), 1e-300)
    err = np.maximum(column(last, "one_minus_corr_eq"), 1e-16)
    ax = axes[-1]
    for k, d in enumerate(ds):
        sel = column(last, "d") == d
        ax.loglog(gam[sel], err[sel], "o", ms=3, color=f"C{k}", label=f"d={d}")
    ax.set(xlabel="Gamma", ylabel="final 1 - corr(W, W_eq)", title="Gamma scatter")
    ax.legend(fontsize=6)
    return save_figure(fig, path)


EXPERIMENT = register(
    Experiment(
        "gensvm",
        "Gen-SVM with the ReLU-value head (n=3, T=4, d in {4, 6, 8, 10})",
        trial,
        grid,
        summarize,
        plot,
    )
)
