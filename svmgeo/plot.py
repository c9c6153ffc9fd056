# SPDX-License-Identifier: BSD-3-Clause
r"""Matplotlib figures (optional extra: ``pip install svmgeo[plot]``).

Every function writes a figure file and returns its path; matplotlib is imported lazily, with
the Agg backend, so figures work on headless machines. ``plot_NAME(rows, summary, path)``
draws experiment ``NAME`` of :func:`svmgeo.reproduce` from its trial and summary rows and
returns the list of paths written.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ._errors import SolverNotFound

if TYPE_CHECKING:  # pragma: no cover
    from .verify import VerifyReport

__all__ = [
    "plot_concave",
    "plot_gensvm",
    "plot_global",
    "plot_local",
    "plot_paths2d",
    "plot_rank",
    "plot_verify",
    "pyplot",
]

Rows = list[dict[str, Any]]


def pyplot() -> Any:
    """``matplotlib.pyplot`` on the Agg backend, or a clear error naming the extra."""
    try:
        import matplotlib
    except ImportError as exc:
        raise SolverNotFound(
            "Figures need matplotlib, which is not installed. Install the extra: "
            "pip install 'svmgeo[plot]'."
        ) from exc
    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt


def plot_verify(report: VerifyReport, path: str | os.PathLike[str]) -> str:
    r"""Figure of a :func:`~svmgeo.verify` report: :math:`1 - \mathrm{corr}` with each SVM
    prediction, softmax saturation and :math:`\|W(t)\|_F` against the step.

    Parameters
    ----------
    report : VerifyReport
    path : path-like
        Output file; the suffix (``.png``, ``.pdf``, ...) picks the format.

    Returns
    -------
    str
        The path written.
    """
    plt = pyplot()
    steps = np.asarray(report.steps)
    fig, axes = plt.subplots(1, 3, figsize=(12, 3.6), constrained_layout=True)
    ax = axes[0]
    curves = [
        ("Frobenius $W^{mm}_\\alpha$", report.corr_fro),
        ("nuclear $W^{mm\\star}_\\alpha$", report.corr_nuc),
    ]
    if report.corr_eq is not None:
        curves.append(("Gen-SVM $W^{eq}$", report.corr_eq))
    for label, corr in curves:
        gap = 1.0 - np.asarray(corr, dtype=float)
        if np.any(np.isfinite(gap)):
            ax.semilogy(steps, np.maximum(gap, 1e-16), label=label)
    ax.set_xlabel("step")
    ax.set_ylabel("1 - correlation")
    ax.set_title(f"direction ({report.param}, {report.head} head)")
    ax.legend(fontsize=8)
    ax = axes[1]
    ax.semilogy(steps, np.maximum(1.0 - np.asarray(report.max_softmax), 1e-16))
    ax.set_xlabel("step")
    ax.set_ylabel("1 - min max softmax")
    ax.set_title("saturation")
    ax = axes[2]
    ax.plot(steps, report.norm_W)
    ax.set_xlabel("step")
    ax.set_ylabel("$\\|W\\|_F$")
    ax.set_title("norm growth")
    verdict = "optimal" if report.is_optimal else ("LOT" if report.is_lot else "not a LOT")
    fig.suptitle(f"GD selection: {verdict}; closest prediction: {report.converged_to}")
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return os.fspath(path)


# -- the paper's experiments (svmgeo.reproduce) ----------------------------------------------


def _save(fig: Any, path: Path) -> list[Path]:
    plt = pyplot()
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return [path]


def _col(rows: Rows, key: str) -> np.ndarray:
    return np.array([np.nan if r[key] is None else float(r[key]) for r in rows])


def plot_rank(rows: Rows, summary: Rows, path: Path) -> list[Path]:
    """Mean numerical rank of W^mm (solid) and W^mm⋆ (dashed; SCS default: dotted) vs d."""
    plt = pyplot()
    ns = sorted({s["n"] for s in summary})
    fig, axes = plt.subplots(1, len(ns), figsize=(4 * len(ns), 3.4), squeeze=False)
    for ax, n in zip(axes[0], ns, strict=True):
        for k, T in enumerate(sorted({s["T"] for s in summary if s["n"] == n})):
            g = [s for s in summary if s["n"] == n and s["T"] == T and s["feasible"]]
            d = [s["d"] for s in g]
            c = f"C{k}"
            ax.plot(d, _col(g, "mean_rank_fro"), "-o", color=c, ms=3, label=f"T={T} Fro")
            ax.plot(d, _col(g, "mean_rank_nuc"), "--s", color=c, ms=3, label=f"T={T} nuc")
            scs = _col(g, "mean_rank_nuc_scs")
            if np.isfinite(scs).any():
                ax.plot(d, scs, ":", color=c, label=f"T={T} nuc (SCS)")
        ax.axhline(n, color="gray", lw=0.8)
        ax.set(xlabel="d", ylabel="rank", title=f"n={n} (feasible instances)")
        ax.legend(fontsize=6)
    return _save(fig, path)


def plot_local(rows: Rows, summary: Rows, path: Path) -> list[Path]:
    """Median correlation with W^mm / W^mm⋆ and mean softmax of α vs step, for W and (K, Q)."""
    plt = pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.4))
    for k, param in enumerate(("W", "KQ")):
        g = [s for s in summary if s["param"] == param]
        step = _col(g, "step")
        axes[0].plot(step, _col(g, "mean_softmax_alpha"), color=f"C{k}", label=param)
        axes[1].plot(step, _col(g, "median_corr_fro"), "-", color=f"C{k}", label=f"{param} vs Fro")
        axes[1].plot(step, _col(g, "median_corr_nuc"), "--", color=f"C{k}", label=f"{param} vs nuc")
    axes[0].set(xlabel="step", ylabel="mean softmax of alpha", title="softmax")
    axes[1].set(xlabel="step", ylabel="median corr", title="correlation")
    axes[0].legend(fontsize=7)
    axes[1].legend(fontsize=7)
    return _save(fig, path)


def plot_global(rows: Rows, summary: Rows, path: Path) -> list[Path]:
    """% of instances reaching the global SVM direction (corr, and for (K, Q) the nuclear-norm
    ratio within 1 %), and % satisfying B.1, vs d."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6.5, 3.4))
    for k, param in enumerate(("W", "KQ")):
        g = [s for s in summary if s["param"] == param]
        ax.plot(
            _col(g, "d"),
            _col(g, "pct_reached"),
            "-o",
            color=f"C{k}",
            ms=3,
            label=f"{param} corr ≥ 0.99",
        )
        ax.plot(
            _col(g, "d"),
            _col(g, "pct_selects_opt"),
            ":",
            color=f"C{k}",
            label=f"{param} selects opt",
        )
    g = [s for s in summary if s["param"] == "KQ"]
    ax.plot(
        _col(g, "d"),
        _col(g, "pct_norm_within_1pct"),
        "-s",
        color="C2",
        ms=3,
        label="KQ ‖·‖_* within 1 %",
    )
    g = sorted((s for s in summary if s["param"] in ("W", "none")), key=lambda s: s["d"])
    ax.plot(_col(g, "d"), _col(g, "pct_b1"), "--k", label="B.1 holds")
    ax.set_xscale("log")
    ax.set(xlabel="d", ylabel="% of instances", ylim=(-2, 102), title="global convergence")
    ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.02, 0.5))
    return _save(fig, path)


def plot_gensvm(rows: Rows, summary: Rows, path: Path) -> list[Path]:
    """Median 1 − corr with W^eq, W^svm and one-token W^mm vs step per d; Γ scatter."""
    plt = pyplot()
    ds = sorted({s["d"] for s in summary})
    fig, axes = plt.subplots(1, len(ds) + 1, figsize=(3.3 * (len(ds) + 1), 3.2))
    for ax, d in zip(axes[:-1], ds, strict=True):
        for v_sign, style in (("ones", "-"), ("alt", "--")):
            g = [s for s in summary if s["d"] == d and s.get("v_sign", "ones") == v_sign]
            if not g:
                continue
            step = _col(g, "step")
            for k, (key, label) in enumerate(
                (
                    ("median_1m_corr_eq", "W_eq"),
                    ("median_1m_corr_dir", "Gen-SVM dir"),
                    ("median_1m_corr_svm", "one-token SVM"),
                )
            ):
                y = np.maximum(_col(g, key), 1e-16)
                ax.semilogy(step, y, style, color=f"C{k}", label=f"{label} (v={v_sign})")
        ax.set(xlabel="step", ylabel="median 1 - corr", title=f"d={d}")
        ax.legend(fontsize=5)
    last = [r for r in rows if r["part"] == r["n_parts"] - 1]
    gam = np.maximum(_col(last, "gamma"), 1e-300)
    err = np.maximum(_col(last, "one_minus_corr_eq"), 1e-16)
    ax = axes[-1]
    for k, d in enumerate(ds):
        sel = _col(last, "d") == d
        ax.loglog(gam[sel], err[sel], "o", ms=3, color=f"C{k}", label=f"d={d}")
    ax.set(xlabel="Gamma", ylabel="final 1 - corr(W, W_eq)", title="Gamma scatter")
    ax.legend(fontsize=6)
    return _save(fig, path)


def plot_concave(rows: Rows, summary: Rows, path: Path) -> list[Path]:
    """Mean number of tokens with softmax ≥ τ vs λ, per τ; median corr with W^eq vs λ."""
    plt = pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.4))
    for k, tau in enumerate(sorted({s["tau"] for s in summary}, reverse=True)):
        g = [s for s in summary if s["tau"] == tau]
        axes[0].plot(
            _col(g, "lam"),
            _col(g, "mean_selected"),
            "-o",
            ms=3,
            color=f"C{k}",
            label=f"tau={tau:g}",
        )
    axes[0].set(xlabel="lambda", ylabel="mean # tokens with s >= tau", title="selected tokens")
    axes[0].legend(fontsize=7)
    g = [s for s in summary if s["tau"] == min(s2["tau"] for s2 in summary)]
    axes[1].plot(_col(g, "lam"), _col(g, "median_corr_eq"), "-o", ms=3)
    axes[1].set(xlabel="lambda", ylabel="median corr(W, W_eq)", title="Gen-SVM prediction")
    return _save(fig, path)


def plot_paths2d(rows: Rows, summary: Rows, path: Path) -> list[Path]:
    r"""Paths of :math:`W(t)z_i` in the plane for W and (K, Q), with SVM directions as rays."""
    from .data import random_data
    from .selection import optimal_tokens
    from .solvers import att_svm

    plt = pyplot()
    seeds = sorted({r["seed"] for r in rows if r["feasible"]})
    fig, axes = plt.subplots(
        1, max(1, len(seeds)), figsize=(3.6 * max(1, len(seeds)), 3.6), squeeze=False
    )
    for ax, seed in zip(axes[0], seeds, strict=False):
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
    return _save(fig, path)
