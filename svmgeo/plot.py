# SPDX-License-Identifier: BSD-3-Clause
r"""Matplotlib figures (optional extra: ``pip install svmgeo[plot]``).

Every function writes a figure file and returns its path; matplotlib is imported lazily, with
the Agg backend, so figures work on headless machines. The figure of each experiment of
:func:`svmgeo.reproduce` is drawn by its module (``svmgeo/experiments/NAME.py``) with the
helpers :func:`save_figure` and :func:`column`.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ._errors import SolverNotFound

if TYPE_CHECKING:  # pragma: no cover
    from .verify import VerifyReport

__all__ = ["column", "plot_verify", "pyplot", "save_figure"]

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
    labels = {  # every prediction the report holds (None where the run has no such SVM)
        "corr_own": f"its own SVM ({report.attention})",
        "corr_fro": "Frobenius $W^{mm}_\\alpha$",
        "corr_nuc": "nuclear $W^{mm\\star}_\\alpha$",
        "corr_eq": "Gen-SVM $W^{eq}$",
        "corr_dir": "Gen-SVM direction $W^{svm}$",
        "corr_lp": "$\\ell_p$ SVM",
        "corr_l1": "$\\ell_1$ SVM",
        "corr_linf": "$\\ell_\\infty$ SVM",
        "corr_spectral": "spectral SVM",
        "corr_relax": "relaxed SVM",
        "corr_v": "head SVM $v^{mm}$",
    }
    curves = [(label, getattr(report, key, None)) for key, label in labels.items()]
    for label, corr in curves:
        if corr is None:
            continue
        gap = 1.0 - np.asarray(corr, dtype=float)
        if np.any(np.isfinite(gap)):
            ax.semilogy(steps, np.maximum(gap, 1e-16), label=label)
    ax.set_xlabel("step")
    ax.set_ylabel("1 - correlation")
    ax.set_title(f"direction ({report.param}, {report.head} head)")
    ax.legend(fontsize=8)
    ax = axes[1]
    if report.attention == "softmax":
        ax.semilogy(steps, np.maximum(1.0 - np.asarray(report.max_softmax), 1e-16))
        ax.set_ylabel("1 - min max softmax")
    else:  # max phi is not a probability for the other maps: 1 - it means nothing
        ax.plot(steps, np.asarray(report.max_softmax))
        ax.set_ylabel(f"min over queries of max {report.attention} attention")
    ax.set_xlabel("step")
    ax.set_title("saturation")
    ax = axes[2]
    ax.plot(steps, report.norm_W)
    ax.set_xlabel("step")
    ax.set_ylabel("$\\|W\\|_F$")
    ax.set_title("norm growth")
    fig.suptitle(f"GD selection: {report.verdict}; closest prediction: {report.converged_to}")
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return os.fspath(path)


# -- helpers of the experiments' figures (svmgeo.experiments) ------------------------------


def save_figure(fig: Any, path: Path) -> list[Path]:
    """Lay out ``fig``, write it to ``path`` (90 dpi) and close it; returns ``[path]``."""
    plt = pyplot()
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return [path]


def column(rows: Rows, key: str) -> np.ndarray:
    """The values of ``key`` in ``rows`` as a float array (NaN for ``None``)."""
    return np.array([np.nan if r[key] is None else float(r[key]) for r in rows])
