# SPDX-License-Identifier: BSD-3-Clause
r"""Experiment ``ntp``: next-token prediction with one self-attention layer (Li, Huang,
Ildiz, Rawat, Oymak, arXiv:2403.08081; issue #13). GD from W = 0 against the prediction

.. math::

    W_t \approx W^{\mathrm{fin}} + R_t\,W^{\mathrm{svm}}:\qquad
    \mathrm{corr}(W_t, W^{\mathrm{svm}}) \to 1,\qquad
    \frac{\|P_{S_{\mathrm{fin}}}W_t - W^{\mathrm{fin}}\|_F}{\max(1, \|W^{\mathrm{fin}}\|_F)} \to 0,

in the two synthetic settings of ``sg.random_next_token_data``: ``acyclic`` (tiers of one
token: every token-priority graph is a DAG, :math:`S_{\mathrm{fin}} = \{0\}`, pure retrieval)
and ``cyclic`` (tiers of two tokens: cycles inside tiers, soft composition inside the top
SCC), for the retrieval loss and the cross-entropy loss with the embeddings as output layer.

Protocol and measured numbers: ``docs/experiments.md``; theory labels: ``docs/beyond.md``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..ntp import random_next_token_data
from ._registry import Experiment, register
from ._rows import Rows, final_parts, finite, group, median, seeds

__all__ = ["EXPERIMENT", "SETTINGS", "STEP_SIZE", "grid", "plot", "summarize", "trial"]

#: Tier size of each setting of ``random_next_token_data``.
SETTINGS = {"acyclic": 1, "cyclic": 2}
#: Plain GD step size.
STEP_SIZE = 5.0
#: Records per run.
N_RECORDS = 40


def trial(
    n: int, T: int, V: int, d: int, seed: int, setting: str, loss: str, n_steps: int
) -> list[dict[str, Any]]:
    r"""Plain GD (η = :data:`STEP_SIZE`) from W = 0 on ``random_next_token_data(n, T, V, d,
    tier_size, seed)``, via ``sg.ntp.verify_ntp_training(data, loss=loss)``.

    One row per recorded step: the loss, corr(W_t, W^svm), the fin error (against the last
    point of :func:`~svmgeo.finite_component`; ``fin_success`` says whether its BFGS reached
    its tolerance, ``fin_at_boundary`` whether it found no finite W^fin, by svmgeo's heuristic),
    the composition error (largest total-variation distance between GD's attention and
    W^fin's prediction), the smallest attention mass on the top-priority tokens, and R_t.
    """
    from ..ntp import verify_ntp_training

    data = random_next_token_data(n, T, V, d, tier_size=SETTINGS[setting], seed=seed)
    rep = verify_ntp_training(
        data,
        loss=loss,
        step_size=STEP_SIZE,
        normalized=False,
        n_steps=n_steps,
        record_every=max(1, n_steps // N_RECORDS),
    )
    return [
        {
            "step": int(rep.steps[j]),
            "train_loss": float(rep.train_loss[j]),
            "corr_svm": float(rep.corr_svm[j]),
            "fin_error": float(rep.fin_error[j]),
            "composition_error": float(rep.composition_error[j]),
            "top_mass": float(rep.top_mass[j]),
            "R": float(rep.R[j]),
            "acyclic": rep.acyclic,
            "n_equality_rows": rep.n_equality_rows,
            "fin_success": rep.fin_success,
            "fin_at_boundary": rep.fin_at_boundary,
        }
        for j in range(len(rep.steps))
    ]


def grid(quick: bool) -> list[dict[str, Any]]:
    """n = 60, T = 5, V = 6, d = 10 (orthonormal embeddings), seeds 0–9 (quick 0–1), both
    settings, both losses, 20000 plain GD steps (quick 1000)."""
    return [
        {"n": 60, "T": 5, "V": 6, "d": 10, "seed": s, "setting": setting, "loss": loss,
         "n_steps": 1000 if quick else 20000}
        for setting in SETTINGS
        for loss in ("retrieval", "ce")
        for s in seeds(quick, 2, 10)
    ]  # fmt: skip


def summarize(rows: Rows) -> tuple[dict[str, Any], Rows]:
    """Per (setting, loss, step): median and min corr(W_t, W^svm), median fin error (runs with
    a finite W^fin: not at the boundary, svmgeo's heuristic) and median composition error;
    headline: every seed's final values."""
    summary = []
    for (setting, loss, step), g in sorted(group(rows, ("setting", "loss", "step")).items()):
        fin = [r for r in g if not r["fin_at_boundary"]]
        summary.append(
            {
                "setting": setting,
                "loss": loss,
                "step": step,
                "seeds": len(g),
                "median_corr_svm": median(r["corr_svm"] for r in g),
                "min_corr_svm": min(finite(r["corr_svm"] for r in g), default=float("nan")),
                "median_fin_error": median(r["fin_error"] for r in fin),
                "fin_finite": len(fin),
                "median_composition_error": median(r["composition_error"] for r in g),
            }
        )
    headline: dict[str, Any] = {}
    for (setting, loss), g in group(final_parts(rows), ("setting", "loss")).items():
        g = sorted(g, key=lambda r: r["seed"])
        tag = f"{setting} {loss}"
        seeds_ = f"seeds {g[0]['seed']}-{g[-1]['seed']}"
        headline[f"{tag}: corr(W_T, W_svm), {seeds_}"] = ", ".join(
            f"{r['corr_svm']:.5f}" for r in g
        )
        n_finite = sum(not r["fin_at_boundary"] for r in g)
        headline[f"{tag}: W_fin finite / trials"] = f"{n_finite}/{len(g)}"
        if setting == "cyclic":
            headline[f"{tag}: fin error (W_fin finite only), {seeds_}"] = ", ".join(
                f"{r['fin_error']:.1e}" if not r["fin_at_boundary"] else "-" for r in g
            )
        headline[f"{tag}: composition error, {seeds_}"] = ", ".join(
            f"{r['composition_error']:.1e}" for r in g
        )
    return headline, summary


def plot(rows: Rows, summary: Rows, path: Path) -> list[Path]:
    """Median 1 − corr(W_t, W^svm), median fin error (cyclic, finite W^fin) and median
    composition error vs step, per setting and loss."""
    from ..plot import column, pyplot, save_figure

    plt = pyplot()
    fig, axes = plt.subplots(1, 3, figsize=(14, 3.6))
    for k, ((setting, loss), s) in enumerate(group(summary, ("setting", "loss")).items()):
        style = {"color": f"C{k}", "label": f"{setting}, {loss}"}
        step = column(s, "step")
        axes[0].semilogy(step[1:], 1.0 - column(s, "median_corr_svm")[1:], **style)
        axes[2].semilogy(step[1:], column(s, "median_composition_error")[1:], **style)
        if setting == "cyclic":
            finite_runs = f" ({s[-1]['fin_finite']}/{s[-1]['seeds']} W_fin finite)"
            axes[1].loglog(step[1:], column(s, "median_fin_error")[1:], color=style["color"],
                           label=style["label"] + finite_runs)  # fmt: skip
    axes[0].set(xlabel="GD step", ylabel="median 1 - corr(W_t, W_svm)", title="direction")
    axes[1].set(
        xlabel="GD step", ylabel="median fin error", title="finite component (cyclic, finite)"
    )
    axes[2].set(xlabel="GD step", ylabel="median composition error (TV)", title="attention")
    for ax in axes:
        ax.legend(fontsize=7)
    return save_figure(fig, path)


EXPERIMENT = register(
    Experiment(
        "ntp",
        "next-token prediction (n=60, T=5, V=6, d=10): GD vs W_fin + R W_svm, acyclic and "
        "cyclic token-priority graphs, retrieval and cross-entropy losses",
        trial,
        grid,
        summarize,
        plot,
    )
)
