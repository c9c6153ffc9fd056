# SPDX-License-Identifier: BSD-3-Clause
r"""The paper's experiments, one call each: :func:`reproduce` and :func:`list_experiments`.

Every experiment is a grid of seeded trials (:mod:`svmgeo.experiments._recipes`) run through
:func:`svmgeo.experiments.sweep` (resumable CSV, local processes or Dask), a summary table of
the numbers behind its figure, the figure (:mod:`svmgeo.plot`) and a dict of headline numbers.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .._errors import ProblemError
from .._validation import check_option
from . import _recipes as rc
from ._sweep import SweepResult, sweep

__all__ = ["Experiment", "ReproduceResult", "list_experiments", "reproduce"]

Rows = list[dict[str, Any]]


@dataclass(frozen=True)
class Experiment:
    """One paper experiment: its trials, grid, summary and figure.

    ``grid(quick)`` gives the sweep grid; ``summarize(rows)`` returns ``(headline,
    summary_rows)``; ``plot(rows, summary_rows, out_dir, name)`` writes figures and returns
    their paths.
    """

    name: str
    title: str
    trial: Callable[..., Any]
    grid: Callable[[bool], Any]
    summarize: Callable[[Rows], tuple[dict[str, Any], Rows]]
    plot: Callable[[Rows, Rows, Path, str], list[Path]]


@dataclass(frozen=True)
class ReproduceResult:
    """What :func:`reproduce` wrote and measured.

    Attributes
    ----------
    name : str
    quick : bool
    tables : tuple of Path
        The trial table (one row per trial or recorded step; the sweep's resumable CSV) and the
        summary table (the numbers behind the figure).
    figures : tuple of Path
    headline : dict
        The headline numbers (printed by ``str(result)``).
    n_errors : int
        Trials that raised (their rows have ``status="error"``).
    sweep : SweepResult
    """

    name: str
    quick: bool
    tables: tuple[Path, ...]
    figures: tuple[Path, ...]
    headline: dict[str, Any]
    n_errors: int
    sweep: SweepResult = field(repr=False)

    def __str__(self) -> str:
        lines = [f"{self.name} ({'quick' if self.quick else 'full'}): {self.sweep.n_trials} trials"]
        for key, value in self.headline.items():
            text = f"{value:.4g}" if isinstance(value, float) else str(value)
            lines.append(f"  {key}: {text}")
        lines += [f"  table: {p}" for p in self.tables]
        lines += [f"  figure: {p}" for p in self.figures]
        if self.n_errors:
            lines.append(f"  ERRORS: {self.n_errors} trial(s) failed; see the 'error' column")
        return "\n".join(lines)


# -- helpers --------------------------------------------------------------------------------


def _ok(rows: Rows) -> Rows:
    return [r for r in rows if r.get("status") == "ok"]


def _group(rows: Iterable[dict[str, Any]], keys: tuple[str, ...]) -> dict[tuple[Any, ...], Rows]:
    out: dict[tuple[Any, ...], Rows] = {}
    for r in rows:
        out.setdefault(tuple(r[k] for k in keys), []).append(r)
    return out


def _finite(values: Iterable[Any]) -> list[float]:
    return [float(v) for v in values if v is not None and math.isfinite(float(v))]


def _mean(values: Iterable[Any]) -> float:
    v = _finite(values)
    return statistics.fmean(v) if v else float("nan")


def _median(values: Iterable[Any]) -> float:
    v = _finite(values)
    return float(statistics.median(v)) if v else float("nan")


def _last_parts(rows: Rows) -> Rows:
    """The final recorded step of each multi-row trial."""
    return [r for r in rows if r["part"] == r["n_parts"] - 1]


def _write_csv(path: Path, rows: Rows) -> None:
    import csv

    columns: list[str] = []
    for r in rows:
        columns += [k for k in r if k not in columns]
    with path.open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=columns)
        w.writeheader()
        for r in rows:
            w.writerow({k: ("" if r.get(k) is None else r.get(k)) for k in columns})


def _seeds(quick: bool, n_quick: int, n_full: int) -> list[int]:
    return list(range(n_quick if quick else n_full))


# -- rank study -----------------------------------------------------------------------------


def _rank_grid(quick: bool) -> list[dict[str, Any]]:
    ns, Ts = ([5], [5]) if quick else ([5, 10, 15], [5, 10, 15])
    ds = [2, 4, 8] if quick else [2, 4, 6, 8, 10, 15, 20, 25, 30]
    return [
        {"n": n, "T": T, "d": d, "seed": s, "scs": n == 5}
        for n in ns
        for T in Ts
        for d in ds
        for s in _seeds(quick, 2, 10)
    ]


def _rank_summary(rows: Rows) -> tuple[dict[str, Any], Rows]:
    rows = _ok(rows)
    summary = []
    for (n, T, d), g in sorted(_group(rows, ("n", "T", "d")).items()):
        feas = [r for r in g if r["feasible"]]
        summary.append(
            {
                "n": n,
                "T": T,
                "d": d,
                "trials": len(g),
                "feasible": len(feas),
                "mean_rank_fro": _mean(r["rank_fro"] for r in feas),
                "mean_rank_nuc": _mean(r["rank_nuc"] for r in feas),
                "mean_rank_nuc_scs": _mean(r["rank_nuc_scs"] for r in feas),
            }
        )
    feas = [r for r in rows if r["feasible"]]
    n5 = [s for s in summary if s["n"] == 5 and s["feasible"]]
    headline = {
        "rank_threshold": f"sigma_k > {rc.RANK_RTOL:g} sigma_1",
        "feasible_trials": f"{len(feas)}/{len(rows)}",
        "max(rank_fro - n)": max((r["rank_fro"] - r["n"] for r in feas), default=None),
        "max(rank_nuc - n)": max((r["rank_nuc"] - r["n"] for r in feas), default=None),
        "share rank_fro >= rank_nuc": _mean(r["rank_fro"] >= r["rank_nuc"] for r in feas),
        "mean rank_fro (n=5)": _mean(r["rank_fro"] for r in feas if r["n"] == 5),
        "mean rank_nuc (n=5, accurate)": _mean(r["rank_nuc"] for r in feas if r["n"] == 5),
        "mean rank_nuc (n=5, SCS default)": _mean(r["rank_nuc_scs"] for r in feas if r["n"] == 5),
        "nuclear solves certified": _mean(r["nuc_certified"] for r in feas),
        "cells (n=5) by d": len(n5),
    }
    return headline, summary


# -- local convergence ----------------------------------------------------------------------


def _local_grid(quick: bool) -> dict[str, Any]:
    return {
        "n": [6],
        "T": [8],
        "d": [10],
        "seed": _seeds(quick, 3, 100),
        "param": ["W", "KQ"],
        "n_steps": [400 if quick else 5000],
    }


def _local_summary(rows: Rows) -> tuple[dict[str, Any], Rows]:
    rows = _ok(rows)
    summary = []
    for (param, step), g in sorted(_group(rows, ("param", "step")).items()):
        summary.append(
            {
                "param": param,
                "step": step,
                "median_corr_fro": _median(r["corr_fro"] for r in g),
                "median_corr_nuc": _median(r["corr_nuc"] for r in g),
                "q10_corr_fro": _quantile([r["corr_fro"] for r in g], 0.1),
                "q10_corr_nuc": _quantile([r["corr_nuc"] for r in g], 0.1),
                "mean_softmax_alpha": _mean(r["softmax_alpha"] for r in g),
            }
        )
    last = _last_parts(rows)
    w = [r for r in last if r["param"] == "W"]
    kq = [r for r in last if r["param"] == "KQ"]
    headline = {
        "datasets": len(w),
        "LOT alpha != opt": sum(not r["alpha_is_opt"] for r in w),
        "W: median final corr(W, W_mm fro)": _median(r["corr_fro"] for r in w),
        "W: min final corr(W, W_mm fro)": min(_finite(r["corr_fro"] for r in w), default=None),
        "W: median final corr(W, W_mm nuc)": _median(r["corr_nuc"] for r in w),
        "KQ: median final corr(KQ', W_mm nuc)": _median(r["corr_nuc"] for r in kq),
        "KQ: min final corr(KQ', W_mm nuc)": min(_finite(r["corr_nuc"] for r in kq), default=None),
        "KQ: median final corr(KQ', W_mm fro)": _median(r["corr_fro"] for r in kq),
        "mean final softmax of alpha (W)": _mean(r["softmax_alpha"] for r in w),
    }
    return headline, summary


def _quantile(values: list[Any], q: float) -> float:
    v = sorted(_finite(values))
    if not v:
        return float("nan")
    return v[min(len(v) - 1, int(q * len(v)))]


# -- global convergence ---------------------------------------------------------------------

GLOBAL_THRESHOLD = 0.99
#: (K, Q) protocol: random start of this scale (m = d) and this many steps in full mode, so that
#: the rate measures where GD converges rather than how fast (docs/experiments.md, ``global``).
KQ_INIT_SCALE = 0.1
KQ_STEPS = 50_000


def _global_grid(quick: bool) -> list[dict[str, Any]]:
    ds = [4, 10] if quick else [2, 4, 6, 8, 10, 12, 16, 20, 30]
    grid = [
        {
            "n": 6,
            "T": 8,
            "d": d,
            "seed": s,
            "param": p,
            "n_steps": (500 if p == "W" else 2000) if quick else (4000 if p == "W" else KQ_STEPS),
            "threshold": GLOBAL_THRESHOLD,
            "init_scale": KQ_INIT_SCALE if p == "KQ" else 0.0,  # W starts from 0
        }
        for d in ds
        for p in ("W", "KQ")
        for s in _seeds(quick, 3, 100)
    ]
    # Assumption B.1 alone (no GD) at large d, where it starts to hold
    grid += [
        {
            "n": 6,
            "T": 8,
            "d": d,
            "seed": s,
            "param": "none",
            "n_steps": 0,
            "threshold": GLOBAL_THRESHOLD,
            "init_scale": 0.0,
        }
        for d in ([40] if quick else [60, 120, 250, 500])
        for s in _seeds(quick, 3, 100)
    ]
    return grid


def _global_summary(rows: Rows) -> tuple[dict[str, Any], Rows]:
    rows = _ok(rows)
    b1 = {d: 100.0 * _mean(r["b1"] for r in g) for (d,), g in _group(rows, ("d",)).items()}
    summary = []
    for (param, d), g in sorted(_group(rows, ("param", "d")).items()):
        feas = [r for r in g if r["feasible"]]
        summary.append(
            {
                "param": param,
                "d": d,
                "trials": len(g),
                "feasible": len(feas),
                "pct_reached": 100.0 * _mean(r["reached"] for r in g)
                if param != "none"
                else float("nan"),
                "pct_selects_opt": 100.0 * _mean(r["selects_opt"] for r in feas),
                "pct_b1": b1[d],
                "median_corr": _median(r["corr"] for r in feas),
                "pct_norm_within_1pct": 100.0
                * _mean(r["norm_ratio"] is not None and r["norm_ratio"] <= 1.01 for r in g)
                if param != "none"
                else float("nan"),
                "median_norm_ratio_opt": _median(r["norm_ratio"] for r in feas if r["selects_opt"]),
            }
        )
    headline: dict[str, Any] = {
        "threshold": GLOBAL_THRESHOLD,
        "KQ start, steps (full)": f"m = d, random {KQ_INIT_SCALE}, {KQ_STEPS}",
        "KQ measure": "% norm within 1% (where GD converges); % reached (corr) kept",
    }
    for s in summary:
        if s["param"] == "none":
            headline[f"d={s['d']}: B.1 %"] = f"{s['pct_b1']:.0f}"
            continue
        headline[
            f"{s['param']} d={s['d']}: % reached, % norm within 1%, % selecting opt, (B.1 %)"
        ] = (
            f"{s['pct_reached']:.0f}, {s['pct_norm_within_1pct']:.0f}, "
            f"{s['pct_selects_opt']:.0f} ({s['pct_b1']:.0f})"
        )
    return headline, summary


# -- Gen-SVM, ReLU head ---------------------------------------------------------------------


GAMMA_SMALL = 1e-8


def _gensvm_grid(quick: bool) -> dict[str, Any]:
    return {
        "n": [3],
        "T": [4],
        "d": [4, 8] if quick else [4, 6, 8, 10],
        "seed": _seeds(quick, 3, 50),
        "n_steps": [500 if quick else 5000],
        "v_sign": ["ones"] if quick else ["ones", "alt"],
    }


def _gensvm_summary(rows: Rows) -> tuple[dict[str, Any], Rows]:
    rows = _ok(rows)
    summary = []
    for (v_sign, d, step), g in sorted(_group(rows, ("v_sign", "d", "step")).items()):
        summary.append(
            {
                "v_sign": v_sign,
                "d": d,
                "step": step,
                "with_gen_svm": len(_finite(r["one_minus_corr_eq"] for r in g)),
                "median_1m_corr_eq": _median(r["one_minus_corr_eq"] for r in g),
                "median_1m_corr_dir": _median(r["one_minus_corr_dir"] for r in g),
                "median_1m_corr_svm": _median(r["one_minus_corr_svm"] for r in g),
            }
        )
    headline: dict[str, Any] = {}
    for (v_sign, d), g in sorted(_group(_last_parts(rows), ("v_sign", "d")).items()):
        key = f"v={v_sign} d={d}"
        defined = [r for r in g if math.isfinite(r["one_minus_corr_eq"])]
        mixed = [r for r in defined if r["max_selected"] > 1 and r["n_ambiguous"] == 0]
        eq = [1.0 - r["one_minus_corr_eq"] for r in defined]
        headline[f"{key}: Gen-SVM defined / trials"] = f"{len(defined)}/{len(g)}"
        headline[f"{key}: median corr(W, W_eq)"] = _median(eq)
        headline[f"{key}: share corr(W, W_eq) > 0.99"] = _mean(c > 0.99 for c in eq)
        headline[f"{key}: |O_i| >= 2 without ambiguous tokens: n, median corr(W, W_eq)"] = (
            f"{len(mixed)}, {_median(1.0 - r['one_minus_corr_eq'] for r in mixed):.4f}"
        )
        tiny = [1.0 - r["one_minus_corr_eq"] for r in defined if r["gamma"] <= GAMMA_SMALL]
        headline[f"{key}: Gamma <= {GAMMA_SMALL:g}: n, median corr(W, W_eq), share > 0.99"] = (
            f"{len(tiny)}, {_median(tiny):.6f}, {_mean(c > 0.99 for c in tiny):.2f}"
        )
        headline[f"{key}: median corr(W, one-token W_mm)"] = _median(
            1.0 - r["one_minus_corr_svm"] for r in g
        )
    return headline, summary


# -- λ-concave head -------------------------------------------------------------------------


def _concave_grid(quick: bool) -> dict[str, Any]:
    return {
        "n": [4],
        "T": [6],
        "d": [8],
        "seed": _seeds(quick, 2, 50),
        "lam": [0.0, 1.0] if quick else [0.0, 0.1, 0.25, 0.5, 1.0, 2.0, 4.0],
        "n_steps": [500 if quick else 3000],
    }


def _concave_summary(rows: Rows) -> tuple[dict[str, Any], Rows]:
    rows = _ok(rows)
    summary = []
    for (lam, tau), g in sorted(_group(rows, ("lam", "tau")).items()):
        summary.append(
            {
                "lam": lam,
                "tau": tau,
                "trials": len(g),
                "mean_selected": _mean(r["mean_selected"] for r in g),
                "median_corr_eq": _median(r["corr_eq"] for r in g),
                "with_gen_svm": len(_finite(r["corr_eq"] for r in g)),
            }
        )
    headline: dict[str, Any] = {}
    for s in summary:
        if s["tau"] == 1e-2:
            headline[f"lam={s['lam']:g}: mean #tokens with s>=0.01"] = s["mean_selected"]
    for s in summary:
        if s["tau"] == 1e-2:
            headline[f"lam={s['lam']:g}: median corr(W, W_eq) [with Gen-SVM]"] = (
                f"{s['median_corr_eq']:.4f} [{s['with_gen_svm']}/{s['trials']}]"
            )
    return headline, summary


# -- 2-D trajectories -----------------------------------------------------------------------


def _paths2d_grid(quick: bool) -> dict[str, Any]:
    return {
        "n": [2],
        "T": [3],
        "seed": _seeds(quick, 2, 4),
        "param": ["W", "KQ"],
        "n_steps": [500 if quick else 5000],
    }


def _paths2d_summary(rows: Rows) -> tuple[dict[str, Any], Rows]:
    rows = _ok(rows)
    last = [r for r in _last_parts(rows) if r["feasible"]]
    summary = [{k: r[k] for k in ("seed", "param", "step", "corr_fro", "corr_nuc")} for r in last]
    headline = {
        "instances": len({r["seed"] for r in last}),
        "W: median final corr with W_mm fro": _median(
            r["corr_fro"] for r in last if r["param"] == "W"
        ),
        "W: median final corr with W_mm nuc": _median(
            r["corr_nuc"] for r in last if r["param"] == "W"
        ),
        "KQ: median final corr with W_mm nuc": _median(
            r["corr_nuc"] for r in last if r["param"] == "KQ"
        ),
        "KQ: median final corr with W_mm fro": _median(
            r["corr_fro"] for r in last if r["param"] == "KQ"
        ),
    }
    return headline, summary


# -- registry -------------------------------------------------------------------------------


def _plotter(name: str) -> Callable[[Rows, Rows, Path, str], list[Path]]:
    def plot(rows: Rows, summary: Rows, out: Path, stem: str) -> list[Path]:
        from .. import plot as _plot

        fn = getattr(_plot, f"plot_{name}")
        return list(fn(_ok(rows), summary, out / f"{stem}.png"))

    return plot


EXPERIMENTS: dict[str, Experiment] = {
    e.name: e
    for e in (
        Experiment(
            "paths2d",
            "2-D trajectories: W and (K, Q) GD paths vs Frobenius / nuclear SVM directions",
            rc.paths2d_trial,
            _paths2d_grid,
            _paths2d_summary,
            _plotter("paths2d"),
        ),
        Experiment(
            "rank",
            "rank of W_mm (Frobenius) and W_mm* (nuclear) vs d, n and T in {5, 10, 15}",
            rc.rank_trial,
            _rank_grid,
            _rank_summary,
            _plotter("rank"),
        ),
        Experiment(
            "local",
            "local convergence from the cone of a random LOT (n=6, T=8, d=10), W and (K, Q)",
            rc.local_trial,
            _local_grid,
            _local_summary,
            _plotter("local"),
        ),
        Experiment(
            "global",
            "global convergence rate vs d for W and (K, Q), with Assumption B.1",
            rc.global_trial,
            _global_grid,
            _global_summary,
            _plotter("global"),
        ),
        Experiment(
            "gensvm",
            "Gen-SVM with the ReLU-value head (n=3, T=4, d in {4, 6, 8, 10})",
            rc.gensvm_trial,
            _gensvm_grid,
            _gensvm_summary,
            _plotter("gensvm"),
        ),
        Experiment(
            "concave",
            "lambda-concave head: selected tokens vs lambda and tau, correlation with W_eq",
            rc.concave_trial,
            _concave_grid,
            _concave_summary,
            _plotter("concave"),
        ),
    )
}


def list_experiments() -> list[str]:
    r"""Names of the experiments :func:`reproduce` runs, in the order of the paper's story.

    .. math::

        \{\texttt{paths2d}, \texttt{rank}, \texttt{local}, \texttt{global},
        \texttt{gensvm}, \texttt{concave}\}

    Returns
    -------
    list of str
        One name per experiment (``svmgeo reproduce --list`` prints them one per line).
    """
    return list(EXPERIMENTS)


def reproduce(
    name: str,
    *,
    quick: bool = False,
    out: str | Path = "svmgeo-results",
    scheduler: Any = None,
    workers: int | None = None,
    progress: bool = True,
    resume: bool = True,
) -> ReproduceResult:
    r"""Run one of the paper's experiments: trials, tables, figure and headline numbers.

    .. math::

        \text{grid}(\text{quick}) \xrightarrow{\ \text{sweep}\ } \text{trial table}
        \xrightarrow{\ \text{summarize}\ } (\text{headline}, \text{summary table})
        \xrightarrow{\ \text{plot}\ } \text{figure}

    Parameters
    ----------
    name : str
        One of :func:`list_experiments`.
    quick : bool, default False
        Reduced grid (seconds, for CI); the default is the full size (minutes).
    out : str or Path, default "svmgeo-results"
        Directory for ``NAME.csv`` (or ``NAME-quick.csv``; the trial table, resumable),
        ``NAME_summary.csv`` and ``NAME.png``; created if missing.
    scheduler : str or distributed.Client, optional
        Dask scheduler address (or client) to run the trials on; default local processes.
    workers : int, optional
        Local worker processes (``0``: in this process); default one per core.
    progress, resume : bool
        Passed to :func:`~svmgeo.experiments.sweep`.

    Returns
    -------
    ReproduceResult

    Raises
    ------
    ProblemError
        Unknown ``name``.
    """
    name = check_option(name, "name", EXPERIMENTS, where="reproduce")
    exp = EXPERIMENTS[name]
    out_dir = Path(out)
    out_dir.mkdir(parents=True, exist_ok=True)
    stem = f"{name}-quick" if quick else name
    result = sweep(
        exp.trial,
        exp.grid(quick),
        out=out_dir / f"{stem}.csv",
        scheduler=scheduler,
        workers=workers,
        progress=progress,
        resume=resume,
        desc=name,
    )
    headline, summary = exp.summarize(result.rows)
    summary_path = out_dir / f"{stem}_summary.csv"
    _write_csv(summary_path, summary)
    if not summary:
        raise ProblemError(f"experiment {name!r}: no trial finished; see {result.path}")
    figures = exp.plot(result.rows, summary, out_dir, stem)
    assert result.path is not None
    return ReproduceResult(
        name=name,
        quick=quick,
        tables=(result.path, summary_path),
        figures=tuple(figures),
        headline=headline,
        n_errors=result.n_errors,
        sweep=result,
    )
