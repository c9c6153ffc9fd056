# SPDX-License-Identifier: BSD-3-Clause
r"""Experiment ``optimizers``: which SVM does each optimizer's W end closest to? (issue #23.)

.. math::

    \mathrm{corr}\big(W_T, W^{\mathrm{mm}}_{\|\cdot\|,\alpha}\big),\qquad
    \|\cdot\| \in \{F, *, \ell_1, \ell_{1.5}, \ell_\infty, 2\},

with :math:`W_T` the final iterate of each optimizer of :data:`OPTIMIZERS` (from W = 0, or
from a small random (K, Q) start for ``param="KQ"``), α the selection it ends on (the most
probable key of every query; none where that key is tied, :func:`final_selection`: the SVMs
are then not solved, NaN, and ``tied`` names the queries) and
:math:`W^{\mathrm{mm}}_{\|\cdot\|,\alpha}` the Att-SVM of α in that norm
(``sg.att_svm(data, alpha, norm=...)``). The nuclear, ℓ1, ℓ∞ and spectral SVMs can have a
face of optimal solutions (:data:`FACE_SVMS`): for them the correlation is the best one over the optimal face
(:func:`~svmgeo.solvers.optimal_face_alignment`; ``face_lower_bounds`` names those that are
only a lower bound on it, printed "≥ x"), and the correlation with the one returned solution
is kept next to it (``returned_corr_*``). *Closest* is the SVM of largest correlation,
marked ``"x?"`` where another SVM's correlation is only a lower bound and so may exceed it
(:func:`closest`: not decided).

The linear-model theorems (Gunasekar, Lee, Soudry, Srebro 2018; Fan, Schmidt, Thrampoulidis
2025) predict each steepest descent's own norm; for attention these are conjectures
(``docs/optimizers.md``, ``docs/atlas.md``). Every number of the experiment is measured.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from .._errors import ProblemError
from .._linalg import correlation
from ..data import TokenData, random_data
from ..gd import train
from ..solvers import att_svm, faces, optimal_face_alignment
from ._registry import Experiment, register
from ._rows import Rows, finite, group, missing_note, seeds, span, tied_entry, unknown
from ._selection import final_selection

__all__ = [
    "EXPERIMENT",
    "FACE_SVMS",
    "KQ_INIT_SCALE",
    "KQ_OPTIMIZERS",
    "LINEAR_EXPERIMENT",
    "LINEAR_OPTIMIZERS",
    "LINEAR_THEOREM",
    "OPTIMIZERS",
    "SVMS",
    "closest",
    "face_lower_bounds",
    "final_run",
    "grid",
    "linear_grid",
    "linear_rows",
    "linear_step",
    "linear_summarize",
    "linear_tag",
    "linear_trial",
    "margin_ratio",
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
#: The SVMs whose optimum need not be unique, from the table of norms: compared with their
#: optimal face (the nuclear norm's too since session 52: its returned solution's correlation
#: fell short of the face's best by ~1e-3, e.g. W gd seed 0 at 2000 steps, 0.8161 and 0.8171).
FACE_SVMS = faces(SVMS)
#: Step size of every rule.
STEP = 0.1
#: Scale of the random (K, Q) start (m = d).
KQ_INIT_SCALE = 0.1
#: Data size: ``random_data(N, T, D)``.
N, T, D = 6, 8, 10


def final_run(
    data: TokenData, optimizer: str, *, param: str = "W", n_steps: int, seed: int = 0
) -> tuple[np.ndarray, np.ndarray | None, str]:
    r"""Train with the rule ``OPTIMIZERS[optimizer]`` and return the final
    :math:`W_T` (:math:`KQ^\top` for ``param="KQ"``), the selection α it ends on and the
    queries where that selection is tied (:func:`final_selection`: α is None and the text
    names them; ``""`` without ties).

    W starts from zero; (K, Q) (m = d) from ``("random", KQ_INIT_SCALE)`` seeded by ``seed``.
    """
    kw = dict(OPTIMIZERS[optimizer])
    if param == "KQ":
        kw.update(param="KQ", m=data.d, init=("random", KQ_INIT_SCALE), seed=seed)
    run = train(data, n_steps=n_steps, step_size=STEP, **kw)
    assert run.W is not None  # param "W" or "KQ" always gives W
    alpha, tied = final_selection(data, run.W)
    return run.W, alpha, tied


def svm_correlations(
    data: TokenData,
    W: np.ndarray,
    alpha: np.ndarray | None,
    norms: dict[str, Any],
    *,
    face: frozenset[str] = FACE_SVMS,
    cache: dict[tuple[str, bytes], Any] | None = None,
    lower_bounds: set[str] | None = None,
) -> tuple[dict[str, float], dict[str, float]]:
    r"""Correlation of W with the Att-SVM of α in each norm of ``norms``.

    .. math::

        c_{\|\cdot\|} = \mathrm{corr}(W, W^{\mathrm{mm}}_{\|\cdot\|,\alpha}), \text{ or }
        \max_{W' \in \mathcal F} \mathrm{corr}(W, W') \text{ over the optimal face }
        \mathcal F \text{ for the labels in ``face``.}

    Returns ``(corr, returned)``: the correlations (face ones for ``face``) and, for the
    labels in ``face``, the correlation with the returned solution. NaN where the SVM has no
    solution (α infeasible), and for every SVM when ``alpha`` is None (a tied selection,
    :func:`final_selection`). ``cache`` (keyed by label and α) reuses solves across runs.
    ``lower_bounds``, when given, receives the labels whose face correlation is only a lower
    bound on the face's best (:attr:`~svmgeo.solvers.FaceAlignment.maximum` False).
    """
    cache = {} if cache is None else cache
    solved: dict[str, Any] = {}
    for label, norm in norms.items():
        if alpha is None:
            solved[label] = None
            continue
        key = (label, alpha.tobytes())
        if key not in cache:
            res = att_svm(data, alpha, norm=norm)
            cache[key] = res if res.success and res.W is not None else None
        solved[label] = cache[key]
    return _correlations(W, solved, face, lower_bounds)


def _correlations(
    W: np.ndarray, solved: dict[str, Any], face: frozenset[str], lower_bounds: set[str] | None
) -> tuple[dict[str, float], dict[str, float]]:
    """:func:`svm_correlations` of SVMs already solved (label → a result with ``W``, or None:
    NaN): the correlations, the face's best for the labels in ``face`` (then also the
    returned solution's, the second dict), and the labels whose face correlation is only a
    lower bound added to ``lower_bounds`` (:attr:`~svmgeo.solvers.FaceAlignment.maximum`
    False)."""
    corr: dict[str, float] = {}
    returned: dict[str, float] = {}
    for label, res in solved.items():
        if res is None:
            corr[label] = math.nan
            if label in face:
                returned[label] = math.nan
        elif label in face:
            returned[label] = correlation(W, res.W)
            aligned = optimal_face_alignment(res, W)
            corr[label] = aligned.correlation
            if lower_bounds is not None and not aligned.maximum:
                lower_bounds.add(label)
        else:
            corr[label] = correlation(W, res.W)
    return corr, returned


def face_lower_bounds(row: dict[str, Any]) -> frozenset[str] | None:
    """The labels whose face correlation in a trial row is only a lower bound on the face's
    best (the ``face_lower_bounds`` cell: labels separated by spaces, ``"none"``); None when
    the row lacks the column (a table written before it: unknown)."""
    if "face_lower_bounds" not in row:
        return None
    cell = row["face_lower_bounds"]
    return frozenset() if cell in (None, "none") else frozenset(str(cell).split())


def _lower_bound_cell(labels: set[str]) -> str:
    """The ``face_lower_bounds`` cell of a trial row: the labels in :data:`SVMS` order."""
    return " ".join(k for k in SVMS if k in labels) or "none"


def _corr_text(row: dict[str, Any], k: str, fmt: str = ".3f") -> str:
    """``corr_<k>`` of a row, as "≥ x" where it is a lower bound on the face's best."""
    bounds = face_lower_bounds(row) or frozenset()
    return f"{'≥ ' if k in bounds else ''}{row[f'corr_{k}']:{fmt}}"


def closest(
    corr: Mapping[str, float | None], lower_bounds: frozenset[str] | set[str] = frozenset()
) -> str:
    """The label of the largest finite correlation (the first when tied); ``"none"`` when
    there is none (no SVM has a solution). A missing value, None (a table's empty cell) or
    NaN, counts as no correlation, as in the headline's spans (``_span``).

    ``lower_bounds`` names the labels whose value is only a lower bound on their best (a face
    correlation, :func:`face_lower_bounds`). When another label than the largest is one, its
    best may exceed the largest, so the closest is not decided: the label is returned with
    ``"?"``, e.g. ``"fro?"`` (the largest shown, not shown to be the closest). The largest
    label's own bound only raises it, and decides nothing against it."""
    known = {k: x for k, v in corr.items() for x in finite([v])}
    if not known:
        return "none"
    best = max(known, key=known.__getitem__)
    return f"{best}?" if any(k in lower_bounds for k in known if k != best) else best


def trial(seed: int, param: str, optimizer: str, n_steps: int) -> dict[str, Any]:
    r"""One optimizer on ``random_data(6, 8, 10, seed)``: the final correlation with every SVM
    of :data:`SVMS` (``corr_<svm>``; the optimal face's for :data:`FACE_SVMS`, and
    ``returned_corr_<svm>`` with the returned solution), the closest SVM (``"x?"`` where a
    lower bound leaves it undecided, :func:`closest`), ``feasible`` (every
    SVM solved; None where the selection is tied), ``face_lower_bounds`` (the labels whose
    face correlation is a lower bound on the face's best, ``"none"``; see
    :func:`face_lower_bounds`) and ``tied`` (:func:`final_selection`'s tied queries, ``""``
    without)."""
    data = random_data(N, T, D, seed=seed)
    W, alpha, tied = final_run(data, optimizer, param=param, n_steps=n_steps, seed=seed)
    bounds: set[str] = set()
    corr, returned = svm_correlations(data, W, alpha, SVMS, lower_bounds=bounds)
    row: dict[str, Any] = {f"corr_{k}": v for k, v in corr.items()}
    row.update({f"returned_corr_{k}": v for k, v in returned.items()})
    row["closest"] = closest(corr, bounds)
    row["feasible"] = None if tied else not any(math.isnan(v) for v in corr.values())
    row["face_lower_bounds"] = _lower_bound_cell(bounds)
    row["tied"] = tied
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


#: Why a seed has no correlation with an SVM (NaN, for the headline's counts).
_NO_SVM = "no SVM solution (Att-SVM(α) infeasible, or a tied selection)"


def _span(rows: Rows, k: str, fmt: str = ".3f") -> str:
    """The min–max over ``rows`` of the finite ``corr_<k>`` ("-" when there are none): the
    min "≥ x" where the row that attains it holds a lower bound on the face's best, the max
    "≥ x" where any row does (a row's true value, above its bound, may exceed the max of the
    values shown); with how many seeds it covers when some are missing (None, NaN, ±inf,
    counted by kind as by :func:`~svmgeo.experiments._rows.span`)."""
    values = [r[f"corr_{k}"] for r in rows]
    g = [r for r, x in zip(rows, values, strict=True) if finite([x])]
    if not g:
        return "-" + missing_note(values, _NO_SVM)
    lo = min(g, key=lambda r: r[f"corr_{k}"])
    hi = max(g, key=lambda r: r[f"corr_{k}"])
    bounded = any(k in (face_lower_bounds(r) or ()) for r in g)
    text = f"{_corr_text(lo, k, fmt)}-{'≥ ' if bounded else ''}{hi[f'corr_{k}']:{fmt}}"
    return text + missing_note(values, _NO_SVM)


def _marks(rows: Rows, tag: str, fmt: str = ".3f") -> dict[str, str]:
    """Headline entries of a group of rows: its face correlations that are lower bounds, the
    seeds whose closest SVM they leave undecided (:func:`closest`'s ``"x?"``) and its tied
    selections, each only when there is one."""
    out = {}
    bounds = [f"seed {r['seed']} {k} {_corr_text(r, k, fmt)}"
              for r in rows for k in sorted(face_lower_bounds(r) or ())]  # fmt: skip
    if bounds:
        out[f"{tag}: face lower bounds (≥)"] = "; ".join(bounds)
    undecided = [f"seed {r['seed']}" for r in rows if str(r["closest"]).endswith("?")]
    if undecided:
        out[f"{tag}: closest undecided (x?: a face lower bound may exceed x)"] = ", ".join(
            undecided
        )
    out.update(tied_entry(rows, f"{tag}: tied final selection (no SVM)"))
    return out


def summarize(rows: Rows) -> tuple[dict[str, Any], Rows]:
    """Summary: one row per trial (every seed listed). Headline per (param, optimizer): the
    closest SVM of every seed, the min–max over seeds of each correlation ("≥ x": a lower
    bound on the face's best), and, when there are any, the face correlations that are lower
    bounds and the tied selections. A row without ``face_lower_bounds`` or ``tied`` (a table
    written before them) counts as unknown there."""
    order = {name: k for k, name in enumerate(OPTIMIZERS)}
    keys = ["param", "optimizer", "seed", *(f"corr_{k}" for k in SVMS)]
    keys += [f"returned_corr_{k}" for k in SVMS if k in FACE_SVMS]
    keys += ["closest", "face_lower_bounds", "tied"]
    ordered = sorted(rows, key=lambda r: (r["param"] != "W", order[r["optimizer"]], r["seed"]))
    summary = [{k: r.get(k) for k in keys} for r in ordered]
    headline: dict[str, Any] = {
        "SVMs (face: best over the optimal face; ≥ x: a lower bound on it)": ", ".join(
            f"{k}{' (face)' if k in FACE_SVMS else ''}" for k in SVMS
        )
    }
    headline.update(unknown(ordered, ["face_lower_bounds", "tied"]))
    groups = group(ordered, ("param", "optimizer"))
    for (param, name), g in sorted(
        groups.items(), key=lambda kv: (kv[0][0] != "W", order[kv[0][1]])
    ):
        g = sorted(g, key=lambda r: r["seed"])
        tag = f"{param} {name}"
        headline[f"{tag}: closest, seeds {g[0]['seed']}-{g[-1]['seed']}"] = " ".join(
            r["closest"] for r in g
        )
        headline[f"{tag}: corr min-max"] = ", ".join(f"{k} {_span(g, k)}" for k in SVMS)
        headline.update(_marks(g, tag))
    return headline, summary


def plot(rows: Rows, summary: Rows, path: Path) -> list[Path]:
    """Median final correlation with each SVM (bars) per optimizer, W and (K, Q)."""
    from ..plot import pyplot, save_figure

    plt = pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(14, 3.8))
    for ax, param in zip(axes, ("W", "KQ"), strict=True):
        _bars(ax, [r for r in rows if r["param"] == param], list(OPTIMIZERS), "corr")
        ax.set(ylabel="median final corr", title=f"param {param}", ylim=(0, 1.02))
    return save_figure(fig, path)


def _bars(ax: Any, rows: Rows, order: list[str], field: str) -> None:
    """Bars of the median ``<field>_<svm>`` per optimizer (of ``order`` with rows) and SVM."""
    names = [n for n in order if any(r["optimizer"] == n for r in rows)]
    width = 0.8 / len(SVMS)
    for j, k in enumerate(SVMS):
        med = [float(np.nanmedian([r[f"{field}_{k}"] for r in rows if r["optimizer"] == n]))
               for n in names]  # fmt: skip
        ax.bar(np.arange(len(names)) + j * width, med, width, label=k)
    ax.set_xticks(np.arange(len(names)) + 0.4 - width / 2, names, rotation=30, fontsize=7)
    ax.legend(fontsize=7, ncol=3)


EXPERIMENT = register(
    Experiment(
        "optimizers",
        "optimizers (n=6, T=8, d=10), W and (K, Q): final correlation with the Frobenius, "
        "nuclear, l1, l1.5, l_inf and spectral Att-SVMs (face for nuc, l1, l_inf, spectral)",
        trial,
        grid,
        summarize,
        plot,
    )
)


# --- calibration on linear attention, where the limit is a theorem -----------------------

#: The rules of the calibration (label → options of :func:`svmgeo.train`, own SVM label of
#: :data:`SVMS`, whether :data:`LINEAR_THEOREM` covers the rule: Gunasekar, Lee, Soudry,
#: Srebro 2018, Thm. 5, for steepest descent of any norm with the steps of
#: :func:`linear_step`).
LINEAR_OPTIMIZERS: dict[str, tuple[dict[str, Any], str, bool]] = {
    "gd": ({"optimizer": "gd"}, "fro", True),
    "steepest 1": ({"optimizer": ("steepest", 1.0)}, "l1", True),
    "steepest 1.5": ({"optimizer": ("steepest", 1.5)}, "l1.5", True),
    "sign": ({"optimizer": "sign"}, "linf", True),
    "spectral": ({"optimizer": "spectral"}, "spectral", True),
    "muon 0.9": ({"optimizer": "spectral", "spectral_momentum": 0.9}, "spectral", False),
    "adam": ({"optimizer": "adam"}, "linf", False),
    "adam eps=0": ({"optimizer": "adam", "adam_eps": 0.0}, "linf", False),
}
#: What is proved about the rules that :data:`LINEAR_OPTIMIZERS` marks covered, as svmgeo
#: reads it (docs/optimizers.md, "Calibration"): a statement on the limit t → ∞ only; the
#: calibration's numbers, at a finite step, are measured.
LINEAR_THEOREM = (
    "Gunasekar, Lee, Soudry, Srebro 2018 (separable rows, the exponential loss, steepest "
    "descent in a norm with steps eta_t <= min(eta_+, 1/(B^2 L(w_t))), B = max_j ||A_j||_*): "
    "as t -> inf the margin ratio in that norm tends to 1 and the direction to that norm's "
    "optimal face"
)
#: Fraction of the largest step the theorem allows (:func:`linear_step`).
LINEAR_STEP_FRACTION = 0.5
#: The loss of the calibration: the theorem's exponential loss.
LINEAR_LOSS = "exponential"


def linear_rows(data: TokenData) -> np.ndarray:
    r"""The matrices :math:`A_j = a_j b_j^\top` (N, d, d) of linear attention's SVM rows,
    :math:`Y_{ik} f_{ik}(W) = \langle A_j, W\rangle` (one row per query)."""
    from ..constraints import map_svm_constraints

    cs = map_svm_constraints(data, "linear")
    return np.einsum("ji,jk->jik", cs.A, cs.B)


def _geometry(norm: Any) -> Any:
    from ..solvers import parse_norm

    entry, parameter = parse_norm(norm, "optimizers_linear")
    return entry.geometry(parameter)


def margin_ratio(rows: np.ndarray, W: np.ndarray, norm: Any, optimum: float) -> float:
    r"""The normalized margin of W in a norm over the largest one:

    .. math::

        \rho_{\|\cdot\|}(W) = \frac{\min_j \langle A_j, W\rangle / \|W\|}{1/\|W^{\mathrm{mm}}\|}
        \le 1,

    with equality exactly when :math:`W/\|W\|` is in the SVM's optimal face (``optimum`` is
    :math:`\|W^{\mathrm{mm}}\|`, the SVM's objective) — the quantity of the theorem.
    """
    value = float(_geometry(norm).value(W))
    return float(np.min(np.einsum("jkl,kl->j", rows, W))) / value * optimum


def linear_step(rows: np.ndarray, res: Any, norm: Any) -> float:
    r"""The step of the calibration in a norm: :math:`\eta = f\,\gamma/B^2`, with
    :math:`\gamma = 1/\|W^{\mathrm{mm}}\|` the max margin, :math:`B = \max_j\|A_j\|_\star`
    and f = :data:`LINEAR_STEP_FRACTION`.

    Normalized steepest descent :math:`W \leftarrow W - \eta D`, :math:`\|D\| = 1`, is the
    steepest descent of Gunasekar et al. (2018), :math:`w_{t+1} = w_t + \eta_t\Delta w_t`,
    :math:`\|\Delta w_t\| = \|\nabla L\|_\star`, with :math:`\eta_t = \eta/\|\nabla L\|_\star`;
    their theorem asks :math:`\eta_t \le 1/(B^2 L(w_t))`, which holds for every t when
    :math:`\eta \le \gamma/B^2`, since :math:`\|\nabla L\|_\star \ge
    \langle -\nabla L, W^{\mathrm{mm}}/\|W^{\mathrm{mm}}\|\rangle \ge \gamma L` for the
    exponential loss, and bounded steps :math:`\eta_t \le \eta_+`, which a finite run meets
    (:math:`\eta_+` its largest step) and the normalized rule continued forever does not.
    """
    dual = _geometry(norm).dual
    B = max(float(dual(A)) for A in rows)
    return LINEAR_STEP_FRACTION / (float(res.objective) * B * B)


def linear_trial(seed: int, optimizer: str, n_steps: int) -> dict[str, Any]:
    r"""One rule on linear attention, ``random_data(6, 8, 10, seed)``, exponential loss, from
    W = 0, step :func:`linear_step` of its own norm: the final correlation with every SVM of
    :data:`SVMS` of linear attention (``att_svm(data, attention="linear", norm=...)``; the
    optimal face's for :data:`FACE_SVMS`), the margin ratio :func:`margin_ratio` in every norm
    (``ratio_<svm>``, and at a tenth of the steps, ``own_ratio_tenth``), the closest SVM by
    each measure (by correlation ``"x?"`` where a face lower bound leaves it undecided,
    :func:`closest`; the margin ratios are exact), the step, and ``face_lower_bounds`` (the labels whose face correlation is
    only a lower bound on the face's best, ``"none"``; :func:`face_lower_bounds`)."""
    data = random_data(N, T, D, seed=seed)
    options, own, _ = LINEAR_OPTIMIZERS[optimizer]
    rows = linear_rows(data)
    svms = {k: att_svm(data, attention="linear", norm=norm) for k, norm in SVMS.items()}
    for k, res in svms.items():
        if res.W is None or res.objective is None:  # rows of random data are separable
            raise ProblemError(f"the {k} SVM of linear attention has no solution: {res.message}")
    eta = linear_step(rows, svms[own], SVMS[own])
    run = train(data, attention="linear", loss=LINEAR_LOSS, step_size=eta, n_steps=n_steps,
                record_every=max(1, n_steps // 10), **options)  # fmt: skip
    assert run.W is not None  # param "W" always gives W
    row: dict[str, Any] = {"own": own, "step": eta, "stop": str(run.status)}
    bounds: set[str] = set()
    corr, _ = _correlations(run.W, svms, FACE_SVMS, bounds)
    ratio = {}
    for k, res in svms.items():
        row[f"corr_{k}"] = corr[k]
        ratio[k] = margin_ratio(rows, run.W, SVMS[k], float(res.objective or math.nan))
        row[f"ratio_{k}"] = ratio[k]
    assert run.history.W is not None  # the steepest rules record W
    W_tenth = run.history.W[1]
    optimum = float(svms[own].objective or math.nan)
    row["own_ratio_tenth"] = margin_ratio(rows, W_tenth, SVMS[own], optimum)
    row["closest"] = closest(corr, bounds)
    row["closest_margin"] = closest(ratio)  # margin ratios are exact: no lower bound
    row["face_lower_bounds"] = _lower_bound_cell(bounds)
    return row


def linear_grid(quick: bool) -> list[dict[str, Any]]:
    """Seeds 0–9 (quick 0–1) of ``random_data(6, 8, 10)``; every rule of
    :data:`LINEAR_OPTIMIZERS`; 10000 steps (quick 1000)."""
    n_steps = 1000 if quick else 10000
    return [{"seed": s, "optimizer": name, "n_steps": n_steps}
            for name in LINEAR_OPTIMIZERS for s in seeds(quick, 2, 10)]  # fmt: skip


def linear_tag(name: str) -> str:
    """A rule's label in the calibration's headline: its own SVM, and whether its limit is
    :data:`LINEAR_THEOREM` — never its finite run, which is measured."""
    own, covered = LINEAR_OPTIMIZERS[name][1], LINEAR_OPTIMIZERS[name][2]
    return f"{name} (own {own}; limit: {'theorem' if covered else 'outside the theorem'})"


def linear_summarize(rows: Rows) -> tuple[dict[str, Any], Rows]:
    """One row per trial (every seed); headline: what is proved (:data:`LINEAR_THEOREM`, for
    which rules) and, per rule, what is measured at the last step: the closest SVM
    (correlation, margin) of every seed and the min–max of its own margin ratio and
    correlation ("≥ x": a lower bound on the face's best)."""
    order = {name: k for k, name in enumerate(LINEAR_OPTIMIZERS)}
    keys = ["optimizer", "seed", "own", "step", "stop", *(f"corr_{k}" for k in SVMS),
            *(f"ratio_{k}" for k in SVMS), "own_ratio_tenth", "closest", "closest_margin",
            "face_lower_bounds"]  # fmt: skip
    ordered = sorted(rows, key=lambda r: (order[r["optimizer"]], r["seed"]))
    summary = [{k: r.get(k) for k in keys} for r in ordered]
    covered = [name for name, (_, _, c) in LINEAR_OPTIMIZERS.items() if c]
    others = [name for name in LINEAR_OPTIMIZERS if name not in covered]
    steps = ", ".join(str(n) for n in sorted({r["n_steps"] for r in ordered}))
    headline: dict[str, Any] = {
        "theorem (the limit, t -> inf)": f"{LINEAR_THEOREM}; covers {', '.join(covered)}; not "
        f"{', '.join(others)} (Fan, Schmidt, Thrampoulidis 2025's theorems for Muon and Adam "
        "take hypotheses not checked here, for Adam a decaying step and no eps)",
        "measured (below)": f"the runs at step {steps}: closest SVM by correlation (the face's "
        "best for nuc, l1, linf, spectral; ≥ x: a lower bound on it) and by margin ratio, own margin "
        "ratio and correlation",
    }
    headline.update(unknown(ordered, ["face_lower_bounds"]))
    for name, g in sorted(group(ordered, ("optimizer",)).items(), key=lambda kv: order[kv[0][0]]):
        own = LINEAR_OPTIMIZERS[name[0]][1]
        tag = linear_tag(name[0])
        s = f"seeds {g[0]['seed']}-{g[-1]['seed']}"
        headline[f"{tag}: measured closest by corr, {s}"] = " ".join(r["closest"] for r in g)
        headline[f"{tag}: measured closest by margin, {s}"] = " ".join(
            r["closest_margin"] for r in g
        )
        own_r = [r[f"ratio_{own}"] for r in g]
        headline[f"{tag}: measured own margin ratio, own corr min-max"] = (
            f"{span(own_r, '.4f', '')}, {_span(g, own, '.4f')}"
        )
        headline.update(_marks(g, tag, ".4f"))
    return headline, summary


def linear_plot(rows: Rows, summary: Rows, path: Path) -> list[Path]:
    """Median final margin ratio in every norm (bars) per rule."""
    from ..plot import pyplot, save_figure

    plt = pyplot()
    fig, ax = plt.subplots(figsize=(10, 3.8))
    _bars(ax, rows, list(LINEAR_OPTIMIZERS), "ratio")
    ax.set(ylabel="median final margin ratio", title="linear attention", ylim=(0, 1.02))
    return save_figure(fig, path)


LINEAR_EXPERIMENT = register(
    Experiment(
        "optimizers_linear",
        "calibration on linear attention (n=6, T=8, d=10, exponential loss): each steepest "
        "descent's final margin ratio and correlation with the Frobenius, nuclear, l1, l1.5, "
        "l_inf and spectral SVMs of linear attention (measured; the limit of the steepest "
        "descents is a theorem, Gunasekar et al. 2018)",
        linear_trial,
        linear_grid,
        linear_summarize,
        linear_plot,
    )
)
