# SPDX-License-Identifier: BSD-3-Clause
r"""Feasibility study of a token dataset (and, optionally, of trained attention weights).

One call answers the questions a researcher asks of their own data before and after training:

* Theorem 1's size condition :math:`d \ge \max(T-1, nK)` (*theorem*, arXiv:2308.16898 Thm 1
  for K = 1; for K queries per sequence svmgeo's extension, MATH-NOTES §3);
* feasibility of Att-SVM(opt), with the verified point or Farkas certificate and the max-min
  margin :math:`1/\|W^{mm}\|_F`;
* the support tokens of :math:`W^{mm}_{\mathrm{opt}}`;
* the ranks of :math:`W^{mm}` and :math:`W^{mm}_\star` (Lemma 1: rank :math:`\le nK`);
* a bounded count of locally optimal selections (exact when the selection space is small);
* for trained weights :math:`W` (or :math:`KQ^\top`): the selection they make
  (:math:`\arg\max_t x_{it}^\top W z_{ik}`), whether it is optimal and a LOT, and the
  correlation of :math:`W` with the SVM solutions of that selection;
* three *measurements* (not theorems) of the trained W, for the write-up's practical claims:
  attention mass on the top-k tokens (``sparsity``), numerical rank and singular-value profile
  against the two SVMs (``spectrum``), and support-token pruning (``pruning``).
"""

from __future__ import annotations

import json
import math
import os
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ._errors import ProblemError, TieError
from ._linalg import correlation, frobenius_norm, numerical_rank
from ._summary import html_figures, html_summary
from ._validation import check_array, check_bool, check_int, check_real
from .analysis import (
    is_locally_optimal,
    locally_optimal_selections,
    robustness_radius,
    support_from_result,
    support_tokens,
)
from .data import TokenData
from .selection import (
    TIE_RTOL,
    first_five,
    logit_selection,
    optimal_tokens,
    scores_full,
    selection_space,
    weight_logits,
)
from .solvers import Status, att_svm, feasibility

__all__ = ["StudyReport", "study"]

RANK_RTOL = 1e-6  # singular values above RANK_RTOL * sigma_1 count towards the rank
TOP_K = (1, 2, 3)  # the top-k attention masses measured
MEASUREMENT = "measurement (not a theorem): measured on the given data and trained W"

# why Att-SVM(opt) is missing where the optimal tokens tie (the report's message then)
_NOT_STUDIED = "Att-SVM(opt) is not studied: the study takes one optimal token per query"
_TIED_MESSAGE = (
    "Att-SVM(opt) is not studied (the study takes one optimal token per query, and some "
    "queries have several; see notes)"
)
#: What a study's user can do about tied optimal tokens, in Python (the note's last sentence,
#: which the command line replaces with its own commands; an internal constant).
TIE_HINT = (
    "Study a choice among the tied tokens with sg.att_svm(data, alpha) (or sg.feasibility, "
    "sg.support_tokens), e.g. alpha = sg.optimal_tokens(data, ties='first') (each query's "
    "lowest tied token), or perturb the data."
)


def _rank(W: np.ndarray | None) -> int | None:
    if W is None:
        return None
    return numerical_rank(W, RANK_RTOL)


def _as_list(a: np.ndarray | None) -> Any:
    return None if a is None else np.asarray(a).tolist()


@dataclass(frozen=True, eq=False)
class StudyReport:
    r"""What :func:`study` found. Every field is plain data (JSON-serializable via :meth:`to_json`).

    Attributes
    ----------
    sizes : dict
        n, T, d, K and the attention kind.
    theorem1 : dict
        ``holds`` (d ≥ max(T−1, nK)), the bound, and the statement's status.
    opt : list or None
        The optimal selection (None with the reason in ``notes`` when scores tie).
    feasible : bool or None
        Verdict of Att-SVM(opt), where it is verified (``OPTIMAL``) or proved (``INFEASIBLE``);
        None when the scores tie or the check is undecided (an ``*_INACCURATE`` or failed
        status, with a note); ``status`` and ``message`` of the feasibility check, or, where
        the optimal tokens tie, ``"no optimal selection (tie)"`` and why Att-SVM(opt) is not
        studied (the note names the tied queries and what to do).
    margin : float or None
        Max-min margin :math:`1/\|W^{mm}\|_F` of the optimal selection.
    support : list or None
        Support-token mask of :math:`W^{mm}_{\mathrm{opt}}`, shape (n, T) or (n, K, T).
    margins : list or None
        Every row's margin :math:`(x_{i\alpha}-x_{it})^\top W^{mm} z_{ik}` with its (i, k, t).
    rank_fro, rank_nuc : int or None
        Numerical ranks (:data:`RANK_RTOL`) of :math:`W^{mm}` and :math:`W^{mm}_\star`.
    lots : dict
        ``count`` (None when the space exceeds the cap), ``space``, ``cap``, ``exact``.
    trained : dict or None
        For given weights: ``selection``, ``tied``, ``is_optimal``, ``is_lot`` (None when the
        verdict is undecided, :func:`~svmgeo.is_locally_optimal`), ``corr_fro``, ``corr_nuc``
        (correlation with the SVMs of the trained selection), ``norm``. A query whose largest
        logits tie up to round-off (:data:`~svmgeo.selection.TIE_RTOL`, the rule of
        :func:`svmgeo.verify`) selects no one token, so W then makes no selection:
        ``selection`` is None, ``tied`` names those queries and their tied keys
        (``"sequence 0: tokens [1, 3]"``; ``[]`` without ties), and ``is_optimal``,
        ``is_lot``, ``corr_fro`` and ``corr_nuc`` are None (undetermined; no SVM of a
        selection is solved).
    timings : dict
        Wall seconds of each step.
    notes : list of str
        Anything the reader must know (ties, infeasibility, caps, inaccurate solves).
    sparsity : dict or None
        *Measurement* (trained W only): ``top1``, ``top2``, ``top3``, the attention mass
        :math:`\sum_{j \le k} s_{ik(j)}` of the k largest softmax entries of each query, shape
        (n, K), and ``summary`` (min / median / mean of each).
    spectrum : dict or None
        *Measurement* (trained W only): singular values divided by :math:`\sigma_1` (``profile``)
        and numerical rank (:data:`RANK_RTOL`) of the trained W, of :math:`W^{mm}` and of
        :math:`W^{mm}_\star` of the trained selection (``W``, ``fro``, ``nuc``).
    pruning : dict or None
        *Measurement* (trained W only): see :func:`study`; per query (shape (n, K)) and per
        sequence (max over its queries), for dropping the non-support tokens (``support``) and
        the tokens below an attention mass (``mass``): ``kept``, ``dropped_mass``,
        ``output_change``, ``prediction_change``, ``output_bound``, ``prediction_bound``;
        ``radius`` and ``radius_bounds`` for the robustness radius (cross-attention only).
    """

    sizes: dict[str, Any]
    theorem1: dict[str, Any]
    opt: Any
    feasible: bool | None
    status: str
    message: str
    margin: float | None
    support: Any
    margins: Any
    rank_fro: int | None
    rank_nuc: int | None
    lots: dict[str, Any]
    trained: dict[str, Any] | None
    timings: dict[str, float]
    notes: list[str] = field(default_factory=list)
    sparsity: dict[str, Any] | None = None
    spectrum: dict[str, Any] | None = None
    pruning: dict[str, Any] | None = None
    # the arrays behind the figures (not serialized)
    _attention: dict[str, np.ndarray] = field(default_factory=dict, repr=False)

    def __repr__(self) -> str:
        return f"StudyReport({self.summary().splitlines()[0]})"

    def summary(self) -> str:
        """A few lines: sizes, Theorem 1, the verdict on opt, ranks, LOTs, trained weights."""
        s = self.sizes
        lines = [
            f"n={s['n']}, T={s['T']}, d={s['d']}, K={s['K']} ({s['kind']}); "
            f"Theorem 1 condition d >= {self.theorem1['bound']}: {self.theorem1['holds']}",
            f"Att-SVM(opt): {self.status}"
            + (f", max-min margin {self.margin:.4g}" if self.margin is not None else ""),
            f"ranks: W^mm {self.rank_fro}, W^mm_* {self.rank_nuc}",
            f"LOTs: {_lots_text(self.lots)}",
        ]
        if self.trained is not None and self.trained["selection"] is None:
            lines.append(
                f"trained W: no selection (its top logits tie at {_queries(self.trained)}; "
                "see notes): optimal and LOT undetermined, no correlation"
            )
        elif self.trained is not None:
            t = self.trained
            lines.append(
                f"trained W: selection optimal={t['is_optimal']}, LOT={t['is_lot']}, "
                f"corr with W^mm {t['corr_fro']}, with W^mm_* {t['corr_nuc']}"
            )
        lines += _measurement_lines(self)
        lines += [f"note: {n}" for n in self.notes]
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        """Jupyter's rich display: the field table, the summary and the figures (PNG)."""
        return html_summary(self, figures=html_figures(self.figures))

    def to_dict(self) -> dict[str, Any]:
        """Every field but the figure arrays, as JSON-ready data."""
        out = asdict(self)
        out.pop("_attention")
        return out

    def to_json(self, path: str | os.PathLike[str]) -> Path:
        """Write :meth:`to_dict` as JSON (non-finite numbers as null) and return the path."""
        path = Path(path)
        text = json.dumps(_finite(self.to_dict()), indent=2, allow_nan=False)
        path.write_text(text + "\n")
        return path

    def to_markdown(self, path: str | os.PathLike[str] | None = None) -> str:
        """The report as a markdown page; written to ``path`` when given."""
        s = self.sizes
        rows = [
            ("sizes", f"n={s['n']}, T={s['T']}, d={s['d']}, K={s['K']} ({s['kind']})"),
            (
                "Theorem 1 condition",
                f"d >= {self.theorem1['bound']}: **{self.theorem1['holds']}** "
                f"({self.theorem1['status']})",
            ),
            ("optimal selection", "tied scores" if self.opt is None else _fmt_selection(self.opt)),
            ("Att-SVM(opt)", f"{self.status}: {self.message}"),
            ("max-min margin 1/‖W^mm‖", _fmt(self.margin)),
            ("support tokens per query", _support_counts(self.support)),
            ("rank W^mm / W^mm_*", f"{self.rank_fro} / {self.rank_nuc}"),
            ("LOTs", _lots_text(self.lots)),
        ]
        if self.trained is not None:
            t = self.trained
            tied = t["selection"] is None
            rows += [
                (
                    "trained selection",
                    f"none: the top logits tie at {_queries(t)} (see notes)"
                    if tied
                    else _fmt_selection(t["selection"]),
                ),
                (
                    "… is optimal / a LOT",
                    "undetermined (tied) / undetermined (tied)"
                    if tied
                    else f"{t['is_optimal']} / {t['is_lot']}",
                ),
                (
                    "corr(W, W^mm) / corr(W, W^mm_*)",
                    f"{_fmt(t['corr_fro'])} / {_fmt(t['corr_nuc'])}",
                ),
                ("‖W‖_F", _fmt(t["norm"])),
            ]
        rows += [(f"time: {k}", f"{v:.2f} s") for k, v in self.timings.items()]
        text = "# svmgeo feasibility study\n\n| quantity | value |\n|---|---|\n"
        text += "".join(f"| {k} | {v} |\n" for k, v in rows)
        measured = _measurement_lines(self)
        if measured:
            text += "\n## Measurements (not theorems)\n\n" + "".join(f"- {m}\n" for m in measured)
            if self.pruning is not None:
                text += f"- robustness radius: {self.pruning['radius_bounds']}\n"
        if self.notes:
            text += "\n" + "".join(f"- {n}\n" for n in self.notes)
        if path is not None:
            Path(path).write_text(text)
        return text

    def figures(self, directory: str | os.PathLike[str]) -> list[Path]:
        """Write ``margins.png`` (every row's margin under :math:`W^{mm}`, per query; not
        written without rows) and, when trained weights were given, ``attention.png`` (softmax
        of the trained W beside the softmax of :math:`\\|W\\|_F\\, W^{mm}/\\|W^{mm}\\|_F`).
        Needs matplotlib."""
        from .plot import pyplot

        plt = pyplot()
        out = Path(directory)
        out.mkdir(parents=True, exist_ok=True)
        paths: list[Path] = []
        if self.margins is not None and len(self.margins["value"]) > 0:
            m = np.asarray(self.margins["value"])
            q = np.asarray(self.margins["query_index"])
            fig, ax = plt.subplots(figsize=(6, 3.5))
            sup = np.abs(m - 1.0) <= 1e-6
            ax.scatter(q[~sup], m[~sup], s=12, label="other tokens")
            ax.scatter(q[sup], m[sup], s=18, marker="x", color="C3", label="support tokens")
            ax.axhline(1.0, color="k", lw=0.8)
            ax.set_yscale("log")
            ax.set_xlabel("query (sequence i, query k)")
            ax.set_ylabel("margin under W^mm (opt)")
            ax.legend(fontsize=8)
            fig.tight_layout()
            paths.append(out / "margins.png")
            fig.savefig(paths[-1], dpi=120, bbox_inches="tight")
            plt.close(fig)
        if "trained" in self._attention:
            fig, axes = plt.subplots(1, 2, figsize=(8, 3.5), sharey=True)
            for ax, key, title in zip(
                axes, ("trained", "svm"), ("trained W", "‖W‖·W^mm/‖W^mm‖"), strict=True
            ):
                im = ax.imshow(self._attention[key], aspect="auto", vmin=0, vmax=1, cmap="viridis")
                ax.set_title(title)
                ax.set_xlabel("token t")
            axes[0].set_ylabel("query (i, k)")
            fig.colorbar(im, ax=axes, shrink=0.8, label="softmax")
            paths.append(out / "attention.png")
            fig.savefig(paths[-1], dpi=120, bbox_inches="tight")
            plt.close(fig)
        return paths


def _fmt_count(count: int) -> str:
    """A count as digits up to 10^12, else as ~10^k (k digits would drown the report)."""
    return str(count) if count < 10**12 else f"~10^{len(str(count)) - 1}"


def _fmt_selection(sel: Any) -> str:
    flat = np.asarray(sel).ravel().tolist()
    return str(flat) if len(flat) <= 24 else f"{flat[:24]}… ({len(flat)} entries; see study.json)"


def _fmt(x: float | None) -> str:
    return "—" if x is None else f"{x:.6g}"


def _finite(obj: Any) -> Any:
    if isinstance(obj, float):
        return obj if np.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: _finite(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_finite(v) for v in obj]
    return obj


def _support_counts(mask: Any) -> str:
    if mask is None:
        return "—"
    counts = np.asarray(mask).reshape(-1, np.asarray(mask).shape[-1]).sum(axis=1)
    return f"min {counts.min()}, median {np.median(counts):g}, max {counts.max()}"


def _softmax(data: TokenData, W: np.ndarray) -> np.ndarray:
    """(n·K, T) attention of ``W``, hidden keys 0."""
    return _attention(weight_logits(data, W))


def _attention(logits: np.ndarray) -> np.ndarray:
    """(n·K, T) softmax of the logits (n, K, T) (``-inf`` on hidden keys, which get 0)."""
    e = np.exp(logits - logits.max(axis=2, keepdims=True))
    return (e / e.sum(axis=2, keepdims=True)).reshape(-1, logits.shape[2])


def _stats(a: np.ndarray) -> dict[str, float]:
    return {"min": float(a.min()), "median": float(np.median(a)), "mean": float(a.mean())}


def _sparsity(attn: np.ndarray) -> dict[str, Any]:
    r"""Top-k attention mass :math:`\sum_{j\le k} s_{ik(j)}` per query, attn of shape (n, K, T)."""
    ranked = -np.sort(-attn, axis=2)
    out: dict[str, Any] = {"status": MEASUREMENT, "summary": {}}
    for k in TOP_K:
        mass = ranked[:, :, :k].sum(axis=2)
        out[f"top{k}"] = _as_list(mass)
        out["summary"][f"top{k}"] = _stats(mass)
    return out


def _profile(W: np.ndarray | None) -> dict[str, Any] | None:
    if W is None:
        return None
    sv = np.linalg.svd(W, compute_uv=False)
    profile = sv / sv[0] if sv[0] > 0.0 else sv
    return {"rank": numerical_rank(W, RANK_RTOL), "profile": _as_list(profile)}


def _spectrum(W: np.ndarray, W_fro: np.ndarray | None, W_nuc: np.ndarray | None) -> dict[str, Any]:
    return {
        "status": MEASUREMENT,
        "rtol": RANK_RTOL,
        "W": _profile(W),
        "fro": _profile(W_fro),
        "nuc": _profile(W_nuc),
    }


def _prune(data: TokenData, attn: np.ndarray, keep: np.ndarray) -> dict[str, Any]:
    r"""Measured effect of keeping only the keys ``keep`` (n, K, T) of each query.

    Attention over the kept keys is the renormalized :math:`s_{ikt}/(1 - m_{ik})` with
    :math:`m_{ik}` the dropped mass; output :math:`o_{ik} = \sum_t s_{ikt} u_{it}`, prediction
    :math:`Y_{ik} f_{ik} = \sum_t s_{ikt}\gamma_{ikt}`. From :math:`o - o' = m\,(o_D - o')`
    (:math:`o_D` the dropped keys' average) the bounds are :math:`\|o - o'\| \le m\,
    \max_{t,t'} \|u_{it} - u_{it'}\|` and :math:`|Yf - Yf'| \le m\,(\max_t\gamma - \min_t\gamma)`
    over the visible keys.
    """
    kept_attn = np.where(keep, attn, 0.0)
    dropped = np.where(keep, 0.0, attn).sum(axis=2)
    pruned = kept_attn / kept_attn.sum(axis=2, keepdims=True)
    U = np.asarray(data.values)
    out_full = np.einsum("nkt,ntu->nku", attn, U)
    out_pruned = np.einsum("nkt,ntu->nku", pruned, U)
    vis = np.asarray(data.visible)
    diam = np.zeros((data.n, data.K))
    for i in range(data.n):
        for k in range(data.K):
            Ui = U[i][vis[i, k]]
            diam[i, k] = np.max(np.linalg.norm(Ui[:, None] - Ui[None], axis=2))
    res: dict[str, Any] = {
        "kept": _as_list(keep.sum(axis=2)),
        "dropped_mass": _as_list(dropped),
        "output_change": _as_list(np.linalg.norm(out_full - out_pruned, axis=2)),
        "output_bound": _as_list(dropped * diam),
    }
    gamma = scores_full(data)
    g = np.where(vis, gamma, 0.0)
    spread = np.where(vis, gamma, -np.inf).max(axis=2) - np.where(vis, gamma, np.inf).min(axis=2)
    res["prediction_change"] = _as_list(np.abs(((attn - pruned) * g).sum(axis=2)))
    res["prediction_bound"] = _as_list(dropped * spread)
    res["per_sequence"] = {
        key: _as_list(np.asarray(res[key]).max(axis=1))
        for key in ("dropped_mass", "output_change", "prediction_change")
    }
    return res


RADIUS_BOUNDS = (
    "r_i bounds token perturbations, not pruning: every perturbation Delta X_i of sequence i's "
    "tokens (kept tokens included) with ||Delta X_i||_F < r_i leaves the selection of every "
    "query of W unchanged, before and after pruning (the selected token is always kept, and "
    "pruning only removes competitors, so the pruned head's radius is >= r_i). It says nothing "
    "about the size of the output change, which output_bound bounds."
)


def _pruning(
    data: TokenData,
    Wt: np.ndarray,
    attn: np.ndarray,
    selected: np.ndarray,
    support: np.ndarray | None,
    threshold: float,
) -> dict[str, Any]:
    """The two prunings of the trained W's attention, each keeping the selected token (the
    mask ``selected``, shape (n, K, T): every tied top key of a tied query)."""
    n, K, T = attn.shape
    out: dict[str, Any] = {"status": MEASUREMENT, "threshold": threshold}
    if support is not None:
        keep = selected | np.asarray(support, dtype=bool).reshape(n, K, T)
        out["support"] = _prune(data, attn, keep)
    else:
        out["support"] = None
    # a visible key whose attention reaches the threshold (hidden keys, attention exactly 0,
    # never: they passed at threshold 0)
    out["mass"] = _prune(data, attn, selected | (data.visible & (attn >= threshold)))
    if data.is_self_attention:
        out["radius"] = None
        out["radius_bounds"] = (
            "not derived for self-attention (the query moves with its token); see robustness_radius"
        )
    else:
        out["radius"] = _as_list(robustness_radius(data, Wt, svm=False).radius)
        out["radius_bounds"] = RADIUS_BOUNDS
    return out


def _queries(trained: dict[str, Any]) -> str:
    """The number of queries whose top logits tie under the trained W, as words."""
    count = len(trained["tied"])
    return f"{count} {'query' if count == 1 else 'queries'}"


def _measurement_lines(rep: StudyReport) -> list[str]:
    lines: list[str] = []
    if rep.sparsity is not None:
        s = rep.sparsity["summary"]
        lines.append(
            "measured attention mass, median over queries: "
            + ", ".join(f"top-{k} {s[f'top{k}']['median']:.4g}" for k in TOP_K)
        )
    if rep.spectrum is not None:
        sp = rep.spectrum
        if rep.trained is not None and rep.trained["selection"] is None:  # no SVM to rank
            lines.append(
                f"measured numerical rank: trained W {sp['W']['rank']} (no selection, so no "
                "W^mm or W^mm_* of one)"
            )
        else:
            ranks = [
                f"{name} {sp[key]['rank'] if sp[key] is not None else '—'}"
                for key, name in (("W", "trained W"), ("fro", "W^mm"), ("nuc", "W^mm_*"))
            ]
            lines.append("measured numerical ranks (trained selection): " + ", ".join(ranks))
    if rep.pruning is not None:
        for key, label in (("support", "non-support tokens"), ("mass", "low-mass tokens")):
            p = rep.pruning[key]
            if p is None:
                continue
            ps = p["per_sequence"]
            lines.append(
                f"measured pruning of {label}: max dropped mass {max(ps['dropped_mass']):.3g}, "
                f"output change {max(ps['output_change']):.3g}, prediction change "
                f"{max(ps['prediction_change']):.3g}"
            )
    return lines


_NO_ROWS = (
    "no constraint rows (every query sees a single token): W^mm = 0, every W is optimal, the "
    "max-min margin is unbounded (inf) and correlations with W^mm are undefined (None)"
)


def _lots_text(lots: dict[str, Any]) -> str:
    """The LOT count of a report in words: "N of S selections" (exact or not), or why it is
    not there (over the cap)."""
    space = _fmt_count(lots["space"])
    if lots["count"] is None:
        return f"not enumerated ({space} selections > cap {lots['cap']})"
    return f"{lots['count']} of {space} selections" + (
        " (exact)" if lots["exact"] else " (not exact: see notes)"
    )


def _note_unsolved(notes: list[str], what: str, res: Any) -> None:
    """Append ``what: status: message`` to ``notes`` when the solve ``res`` is not certified
    optimal (its numbers, or their absence, are then not the SVM's)."""
    if res is not None and not res.success:
        notes.append(f"{what}: {res.status.value}: {res.message}")


def _direction_corr(W: np.ndarray, W_svm: np.ndarray | None) -> float | None:
    """corr(W, W_svm); None without an SVM solution or when one of them is 0 (no direction)."""
    if W_svm is None or not np.any(W_svm) or not np.any(W):
        return None
    return correlation(W, W_svm)


def _trained_matrix(W: Any, K: Any, Q: Any, d: int) -> np.ndarray | None:
    if W is not None and (K is not None or Q is not None):
        raise ProblemError("study: give either W or both K and Q, not both. Use W=K @ Q.T.")
    if W is None and K is None and Q is None:
        return None
    if W is None:
        if K is None or Q is None:
            raise ProblemError("study: K and Q go together (W = K Q^T); got only one of them.")
        hint = "study takes trained factors K and Q of shape (d, m) (W = K Q^T)."
        Kc = check_array(K, "K", ndim=2, shape=(d, None), hint=hint)
        Qc = check_array(Q, "Q", ndim=2, shape=(d, Kc.shape[1]), hint=hint)
        with np.errstate(over="ignore", invalid="ignore"):
            W = Kc @ Qc.T
        if not np.all(np.isfinite(W)):
            raise ProblemError(
                "study: W = K Q^T overflows float64; rescale K and Q (a positive scale changes "
                "no selection and no correlation)."
            )
    try:
        Wm = np.asarray(W)
    except ValueError:  # a ragged nesting of lists
        Wm = np.asarray(W, dtype=object)
    if Wm.shape != (d, d) or not np.issubdtype(Wm.dtype, np.number) or np.iscomplexobj(Wm):
        raise ProblemError(
            f"study: W must be a real array of shape (d, d) = ({d}, {d}); got "
            f"{Wm.dtype} of shape {Wm.shape}. Pass the attention product W = W_K W_Q^T."
        )
    Wm = Wm.astype(float)
    if not np.all(np.isfinite(Wm)):
        raise ProblemError("study: W has NaN or infinite entries.")
    return Wm


def study(
    data: TokenData,
    W: Any = None,
    *,
    K: Any = None,
    Q: Any = None,
    max_lot_selections: int = 4096,
    prune_threshold: float = 0.01,
    progress: bool = True,
) -> StudyReport:
    r"""Feasibility study of ``data``: Theorem 1, Att-SVM(opt), support tokens, ranks, LOTs,
    and (with trained weights) where the trained attention stands.

    .. math::

        W^{mm}_\alpha = \arg\min \|W\|_F \ \text{s.t.}\ (x_{i\alpha_{ik}} - x_{it})^\top W
        z_{ik} \ge 1, \qquad W^{mm}_{\star,\alpha} = \arg\min \|W\|_* \ \text{(same rows)}.

    Parameters
    ----------
    data : TokenData
        Needs scores (``v`` or explicit ``scores``).
    W : array of shape (d, d), optional
        Trained key-query product :math:`W = W_K W_Q^\top` (e.g. from :func:`from_torch`).
    K, Q : arrays of shape (d, m), optional
        Trained factors instead of ``W`` (:math:`W = KQ^\top`).
    max_lot_selections : int, default 4096
        Enumerate locally optimal selections exactly when the selection space is at most this
        large; otherwise report the space and the cap (the count is then None).
    prune_threshold : float in [0, 1], default 0.01
        For trained weights, the second pruning drops the keys whose attention is below this
        mass (the selected key is always kept).
    progress : bool, default True
        A progress bar over the steps (and inside the LOT enumeration).

    Returns
    -------
    StudyReport
        With :meth:`~StudyReport.summary`, :meth:`~StudyReport.to_markdown`,
        :meth:`~StudyReport.to_json` and :meth:`~StudyReport.figures`. Data without
        constraint rows (every query sees one token, :math:`W^{mm} = 0`) give the margin
        ``inf`` and correlations None, with a note.

    Notes
    -----
    For trained weights the report holds three *measurements* (each labelled so in its
    ``status``; none is a theorem): ``sparsity`` (mass on the top-1/2/3 keys per query),
    ``spectrum`` (numerical rank and singular values of W against :math:`W^{mm}` and
    :math:`W^{mm}_\star` of W's selection) and ``pruning``. Pruning keeps, per query, the
    selected key :math:`\alpha_{ik}` (every tied top key where W's top logits tie, W then
    making no selection) and either the support tokens of Att-SVM of W's selection
    (``support``; None without a selection) or the keys of attention :math:`\ge`
    ``prune_threshold`` (``mass``), renormalizes the softmax over the kept keys, and measures the change of the attention
    output :math:`o_{ik} = \sum_t s_{ikt} u_{it}` and of the prediction
    :math:`Y_{ik} f_{ik} = \sum_t s_{ikt} \gamma_{ikt}`. With :math:`m_{ik}` the dropped
    mass, :math:`o - o' = m_{ik}(o_D - o')` gives the bounds ``output_bound`` :math:`= m_{ik}
    \max_{t,t'}\|u_{it} - u_{it'}\|` and ``prediction_bound`` :math:`= m_{ik}(\max_t
    \gamma_{ikt} - \min_t \gamma_{ikt})`: as W saturates along :math:`W^{mm}` the dropped
    mass, hence both changes, go to 0. ``radius`` is :func:`robustness_radius` of W
    (cross-attention): it bounds token perturbations that keep the selection, not the output
    change (``radius_bounds`` says so).

    Raises
    ------
    ProblemError
        ``data`` not a TokenData (or prompt-attention data without queries); ``W``, ``K``,
        ``Q`` of the wrong shape, not real and finite, or whose logits overflow;
        ``max_lot_selections`` not an int >= 1; ``prune_threshold`` not in [0, 1];
        ``progress`` not a bool.

    Examples
    --------
    >>> import svmgeo as sg
    >>> rep = sg.study(sg.random_data(4, 3, 6, seed=0), progress=False)
    >>> rep.feasible, rep.theorem1["holds"], rep.lots["count"] >= 1
    (True, True, True)
    """
    if not isinstance(data, TokenData):
        raise ProblemError(
            f"study: data must be a TokenData; got {type(data).__name__}. "
            "Build one with sg.TokenData(X, ...) or sg.load_data(path)."
        )
    if not data.has_queries:
        raise ProblemError(
            "study: this TokenData has no queries (prompt-attention data, built without Z or "
            "query), and the study solves Att-SVM of the query-dependent W: build the data with "
            "Z=... (cross-attention) or query=... (self-attention)."
        )
    if data.v is None and data.scores is None:
        raise ProblemError(
            "study: the data have no token scores (the optimal tokens need them); give the "
            "TokenData a head v=... (with values=..., if any) or scores=...."
        )
    Wt = _trained_matrix(W, K, Q, data.d)
    trained_logits = None if Wt is None else weight_logits(data, Wt)
    if (
        Wt is not None
        and trained_logits is not None
        and not np.all(np.isfinite(trained_logits[data.visible]))
    ):
        raise ProblemError(
            "study: the logits x^T W z of the trained W overflow float64 (max |W_ij| = "
            f"{float(np.abs(Wt).max()):.3g}); pass W at a smaller scale or rescale the data."
        )
    max_lot_selections = check_int(max_lot_selections, "max_lot_selections", low=1, where="study")
    prune_threshold = check_real(
        prune_threshold, "prune_threshold", low=0.0, high=1.0, where="study"
    )
    progress = check_bool(progress, "progress", where="study")
    from tqdm.auto import tqdm

    steps = ["optimal selection", "support tokens", "nuclear SVM", "LOT count"]
    if Wt is not None:
        steps.append("trained weights")
    bar = tqdm(total=len(steps), desc="study", disable=not progress, leave=False)
    timings: dict[str, float] = {}
    notes: list[str] = []
    kind = (
        "self-attention"
        if data.is_self_attention and data.single_query
        else ("cross-attention" if data.single_query else f"{data.K} queries per sequence")
    )
    bound = max(data.T - 1, data.n * data.K)
    theorem1 = {
        "holds": bool(data.d >= bound),
        "bound": bound,
        "status": "theorem (arXiv:2308.16898, Thm 1) for K = 1; svmgeo's extension for K > 1",
        "statement": "d >= max(T-1, nK) implies Att-SVM(alpha) feasible for every alpha, for "
        "almost every dataset",
    }

    def step(name: str) -> float:
        bar.set_postfix_str(name)
        return time.perf_counter()

    t0 = step(steps[0])
    try:
        opt = optimal_tokens(data)
    except TieError as exc:
        opt = None
        listed = str(exc).partition(" Take ")[0]  # "optimal tokens are not unique for ...: ..."
        notes.append(f"{listed} {_NOT_STUDIED}. {TIE_HINT}")
    feas = res = None
    decided = None
    if opt is not None:
        feas = feasibility(data, opt)
        res = att_svm(data, opt) if feas.feasible else None
        _note_unsolved(notes, "Att-SVM(opt)", res)
        decided = feas.verdict  # None for an *_INACCURATE or failed check: noted
        if decided is None:
            notes.append(f"feasibility of Att-SVM(opt) undecided ({feas.status}): {feas.message}")
        elif decided is False and theorem1["holds"]:
            notes.append(
                f"Att-SVM(opt) is infeasible although d >= {bound}: Theorem 1 "
                "(arXiv:2308.16898; svmgeo's extension for K > 1) holds for almost every "
                "dataset, and these data are one of its exceptions (a null set; a zero query "
                "is one)"
            )
    timings[steps[0]] = time.perf_counter() - t0
    bar.update()

    t0 = step(steps[1])
    support = margins = None
    margin = None
    if res is not None and res.W is not None:
        sup = support_tokens(data, opt)
        support = _as_list(sup.mask)
        cs = res.constraints
        margins = {
            "value": _as_list(res.margins),
            "seq": _as_list(cs.seq),
            "query": _as_list(cs.query),
            "token": _as_list(cs.comp),
            "query_index": _as_list(cs.seq * data.K + cs.query),
        }
        norm_mm = float(np.linalg.norm(res.W))
        if norm_mm > 0.0:
            margin = 1.0 / norm_mm
        else:  # no constraint row: every query sees one token
            margin = math.inf
            notes.append(_NO_ROWS)
    timings[steps[1]] = time.perf_counter() - t0
    bar.update()

    t0 = step(steps[2])
    nuc = att_svm(data, opt, norm="nuc") if res is not None else None
    _note_unsolved(notes, "nuclear Att-SVM(opt)", nuc)
    timings[steps[2]] = time.perf_counter() - t0
    bar.update()

    t0 = step(steps[3])
    space = selection_space(data)
    lots: dict[str, Any] = {
        "count": None,
        "space": space,
        "cap": max_lot_selections,
        "exact": False,
    }
    if space <= max_lot_selections:
        enum = locally_optimal_selections(
            data, max_selections=max_lot_selections, progress=progress
        )
        unsettled = {  # selections whose LOT verdict is not proved (LOTEnumeration's fields)
            "inaccurate solves": enum.inaccurate,
            "unproved non-LOT verdicts": enum.infeasible,
            "failed solves": len(enum.failed),
            "undecided LOT verdicts": len(enum.undecided_selections),
        }
        lots.update(count=len(enum.selections), exact=not any(unsettled.values()))
        if not lots["exact"]:
            notes.append(
                "LOT count not exact: "
                + ", ".join(f"{count} {what}" for what, count in unsettled.items())
            )
    timings[steps[3]] = time.perf_counter() - t0
    bar.update()

    trained = sparsity = spectrum = pruning = None
    attention: dict[str, np.ndarray] = {}
    if Wt is not None and trained_logits is not None:
        t0 = step(steps[4])
        # the one rule of a final selection (largest_logits, shared with verify and the
        # experiments): a query whose top logits tie up to round-off (TIE_RTOL) selects no one
        # token, so W makes no selection there: its verdicts are undetermined, not False, and
        # no SVM of a selection is solved (its logits are finite: checked above). top: the
        # selected key, or every tied top key
        sel, tied, _, top = logit_selection(data, trained_logits, Wt)
        svm_fro = svm_nuc = None
        if sel is None:
            notes.append(
                f"trained W ties the top logits of {len(tied)} of {data.n * data.K} queries "
                f"(equal up to round-off: {TIE_RTOL:g} times the sizes of their terms, "
                f"underflow included; {first_five(tied)}): it selects no "
                "one token there, so it makes no selection; whether it is optimal or a LOT is "
                "undetermined and no SVM of its selection is solved (None)"
            )
            lot_answer = None
        else:
            lot = is_locally_optimal(data, sel)
            lot_answer = lot.answer
            if lot.answer is None:
                notes.append(f"LOT verdict of the trained selection undecided: {lot.reason}")
            svm_fro = att_svm(data, sel)
            svm_nuc = att_svm(data, sel, norm="nuc") if svm_fro.W is not None else None
            if svm_fro.status is not Status.INFEASIBLE:  # proved infeasible: noted below
                _note_unsolved(notes, "Att-SVM of the trained selection", svm_fro)
            _note_unsolved(notes, "nuclear Att-SVM of the trained selection", svm_nuc)
        W_fro = None if svm_fro is None else svm_fro.W
        W_nuc = None if svm_nuc is None else svm_nuc.W
        trained = {
            "selection": _as_list(sel),
            "tied": tied,
            "is_optimal": None if opt is None or sel is None else bool(np.array_equal(sel, opt)),
            "is_lot": lot_answer,  # None: undecided (lot.reason) or tied
            "corr_fro": _direction_corr(Wt, W_fro),
            "corr_nuc": _direction_corr(Wt, W_nuc),
            "norm": frobenius_norm(Wt),
        }
        attention["trained"] = _attention(trained_logits)
        attn = attention["trained"].reshape(data.n, data.K, data.T)
        sparsity = _sparsity(attn)
        spectrum = _spectrum(Wt, W_fro, W_nuc)
        sup_mask = None
        if svm_fro is not None and svm_fro.W is not None:
            sup_mask = support_from_result(
                data,
                np.asarray(sel).reshape(data.n, data.K),
                svm_fro,
                warn=False,
            ).mask
        pruning = _pruning(data, Wt, attn, top, sup_mask, prune_threshold)
        if W_fro is not None:
            norm_svm = frobenius_norm(W_fro)
            if norm_svm == 0.0 and _NO_ROWS not in notes:
                notes.append(_NO_ROWS)
            scale = trained["norm"] / norm_svm if norm_svm > 0.0 else 0.0
            attention["svm"] = _softmax(data, scale * W_fro)
        else:
            if svm_fro is not None and svm_fro.status is Status.INFEASIBLE:
                notes.append(
                    "Att-SVM of the trained selection is infeasible (proved): it is not a LOT"
                )
            attention["svm"] = np.zeros_like(attention["trained"])
        timings[steps[4]] = time.perf_counter() - t0
        bar.update()
    bar.close()
    status = "no optimal selection (tie)" if feas is None else str(feas.status)
    return StudyReport(
        sizes={"n": data.n, "T": data.T, "d": data.d, "K": data.K, "kind": kind},
        theorem1=theorem1,
        opt=_as_list(opt),
        feasible=decided,
        status=status,
        message=_TIED_MESSAGE if feas is None else feas.message,
        margin=margin,
        support=support,
        margins=margins,
        rank_fro=_rank(None if res is None else res.W),
        rank_nuc=_rank(None if nuc is None else nuc.W),
        lots=lots,
        trained=trained,
        timings=timings,
        notes=notes,
        sparsity=sparsity,
        spectrum=spectrum,
        pruning=pruning,
        _attention=attention,
    )
