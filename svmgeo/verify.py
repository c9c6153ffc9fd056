# SPDX-License-Identifier: BSD-3-Clause
r"""Verification: what gradient descent did against what the SVMs predict.

:func:`verify` trains softmax attention with :func:`~svmgeo.train`, reads off the selection
GD converged to, solves Att-SVM (Frobenius) and Att-SVM⋆ (nuclear) for that selection, decides
whether it is the optimal selection or a locally optimal one, and measures the correlation of
the trajectory with both SVM directions (and, for nonlinear heads, with the Gen-SVM prediction
:math:`W^{\mathrm{eq}}`). The answer is a :class:`VerifyReport` that prints as a table and
serializes to JSON.
"""

from __future__ import annotations

import dataclasses
import inspect
import json
import math
import warnings
from dataclasses import dataclass, field
from typing import Any, overload

import numpy as np

from ._compat import renamed
from ._errors import ProblemError
from ._linalg import correlation
from ._summary import summarized
from ._validation import check_option, check_real
from .analysis import GenSVMResult, LocalOptimality, gen_svm, is_locally_optimal, selected_sets
from .data import TokenData
from .gd import PARAMS, GDRun, train
from .ntp import NextTokenData, NTPReport
from .selection import optimal_token_sets
from .solvers import JointSVMResult, SVMResult, att_svm, joint_svm

__all__ = ["VerifyReport", "verify"]

# options of `train` that verify passes through unchanged (the others it sets itself)
_PASS_THROUGH = ("ridge", "log_domain", "grad_tol", "saturation_tol", "callback", "normalize_eps")
# float arrays that may be absent from a report (None)
_OPTIONAL_ARRAYS = (
    "farkas", "W_eq", "W_dir", "W_fin", "corr_eq", "corr_dir",
    "W_lp", "corr_lp", "v", "v_mm", "corr_v", "W_relax", "corr_relax",
)  # fmt: skip
# objects, not serialized
_FIELDS_OUT = ("svm_fro", "svm_nuc", "svm_lp", "lot", "gen", "run", "mirror_run", "joint")


def _f(x: Any) -> float | None:
    """A float for JSON: None for NaN/inf/None."""
    if x is None:
        return None
    x = float(x)
    return x if math.isfinite(x) else None


def _list(a: np.ndarray | None) -> Any:
    if a is None:
        return None
    arr = np.asarray(a)
    if arr.dtype == bool or np.issubdtype(arr.dtype, np.integer):
        return arr.tolist()
    return [_list(r) for r in arr] if arr.ndim > 0 else _f(arr)


def _array(x: Any, dtype: Any = float) -> np.ndarray | None:
    if x is None:
        return None
    if dtype is float:
        return np.array(_nan(x), dtype=float)
    return np.array(x, dtype=dtype)


def _nan(x: Any) -> Any:
    if isinstance(x, list):
        return [_nan(y) for y in x]
    return math.nan if x is None else x


@summarized
@dataclass(frozen=True, eq=False)
class VerifyReport:
    r"""What :func:`verify` found: GD's selection and trajectory against the SVM predictions.

    Curves have one entry per recorded step (``steps``).

    Attributes
    ----------
    param, head : str
        Parameterization (``"W"`` or ``"KQ"``) and head of the run.
    selection : ndarray of int, shape (n,) or (n, K)
        GD's final selection :math:`\arg\max_t s_{ikt}`.
    is_optimal : bool
        Whether every selected token is an optimal token (ties: any of the tied tokens).
    is_lot : bool
        Whether the selection is locally optimal (:func:`~svmgeo.is_locally_optimal`);
        ``lot_reason`` says why.
    feasible : bool
        Whether Att-SVM(selection) is feasible; when not, ``farkas`` is its Farkas
        vector and the SVM fields are None.
    W_fro, W_nuc : ndarray of shape (d, d) or None
        :math:`W^{\mathrm{mm}}_\alpha` and :math:`W^{\mathrm{mm}\star}_\alpha` for GD's selection
        (nuclear with rank bound ``m`` for ``param="KQ"`` with ``m < d``).
    steps : ndarray of int, shape (R,)
    corr_fro, corr_nuc : ndarray of shape (R,)
        :math:`\mathrm{corr}(W(t), W^{\mathrm{mm}}_\alpha)` and with
        :math:`W^{\mathrm{mm}\star}_\alpha` (NaN when infeasible).
    max_softmax : ndarray of shape (R,)
        Saturation: :math:`\min_{i,k} \max_t s_{ikt}(t)`.
    norm_W : ndarray of shape (R,)
        :math:`\|W(t)\|_F`.
    converged_to : {"fro", "nuc", "eq"} or None
        The prediction (:math:`W^{\mathrm{mm}}_\alpha`, :math:`W^{\mathrm{mm}\star}_\alpha`,
        or for nonlinear heads :math:`W^{\mathrm{eq}}`) with the largest final correlation,
        when that is at least ``threshold``.
    threshold : float
    W : ndarray of shape (d, d)
        GD's final W (:math:`KQ^\top` for ``param="KQ"``).
    status : str
        Why GD stopped (:class:`~svmgeo.StopStatus`).
    selected, masked : ndarray of bool or None
        Nonlinear heads: the sets :math:`O_{ik}` and :math:`\bar O_{ik}` read off the final
        probabilities (:func:`~svmgeo.selected_sets`); ``n_ambiguous`` tokens were neither.
    W_eq, W_dir, W_fin : ndarray or None
        Nonlinear heads: the Gen-SVM prediction fitted to the final W and its components.
    R : float or None
    gamma : float or None
        :math:`\Gamma`, the largest probability of a masked token.
    corr_eq, corr_dir : ndarray of shape (R,) or None
        :math:`\mathrm{corr}(W(t), W^{\mathrm{fin}} + R(t) W^{\mathrm{svm}})` with :math:`R(t)`
        fitted to :math:`W(t)` as in :func:`~svmgeo.gen_svm`, and with :math:`W^{\mathrm{svm}}`.
    gen_feasible : bool or None
    method : {"gd", "mirror"}
        The training algorithm; for ``"mirror"`` (:math:`\ell_p` mirror descent,
        :func:`~svmgeo.train_mirror`) ``is_lot``/``feasible`` are those of the
        :math:`\ell_p` Att-SVM, and ``converged_to`` may be ``"lp"``.
    mirror_p : float or None
        The exponent p of a mirror-descent run.
    W_lp, corr_lp : ndarray or None
        Mirror descent: :math:`W^{\mathrm{mm}}_{p,\alpha}` (``sg.att_svm(data, alpha,
        norm=("lp", p))``) and :math:`\mathrm{corr}(W(t), W^{\mathrm{mm}}_{p,\alpha})`.
    svm_fro, svm_nuc, svm_lp, lot, gen, run, mirror_run : objects or None
        The solves, the local-optimality verdict, the Gen-SVM result and the GD (or mirror
        descent) run behind the report (not serialized; None after :meth:`from_json`).
    train_head : bool
        Whether the head v was trained with the attention (:func:`verify` with
        ``train_head=True``).
    v, v_mm : ndarray of shape (d_u,) or None
        ``train_head``: GD's final head and the head SVM :math:`v^{\mathrm{mm}}` of GD's
        selection (:func:`~svmgeo.joint_svm`).
    corr_v : ndarray of shape (R,) or None
        :math:`\mathrm{corr}(v(t), v^{\mathrm{mm}})`.
    support : ndarray of bool, shape (n,) or (n, K), or None
        The inputs on :math:`v^{\mathrm{mm}}`'s margin.
    W_relax : ndarray or None
        The relaxed SVM (margin 1 on ``support``, 0 elsewhere): :math:`p^{\mathrm{relax}}`
        (d,) for ``param="p"``, a (d, d) matrix for ``param="W"``.
    corr_relax : ndarray of shape (R,) or None
        :math:`\mathrm{corr}(p(t), p^{\mathrm{relax}})` (W(t) for ``param="W"``).
    joint : JointSVMResult or None
        The joint prediction behind ``v_mm`` and ``W_relax`` (not serialized).

    Notes
    -----
    For ``param="p"`` the W-named fields hold the prompt vector: ``W`` the final p (d,),
    ``W_fro`` the p-SVM of GD's selection (Att-SVM with every query :math:`z_i = e_1`),
    ``corr_fro`` :math:`\mathrm{corr}(p(t), p^{\mathrm{mm}})`, ``norm_W`` :math:`\|p(t)\|`;
    a vector has no nuclear SVM, so ``W_nuc`` is None and ``corr_nuc`` NaN.
    """

    param: str
    head: str
    selection: np.ndarray
    is_optimal: bool
    is_lot: bool
    lot_reason: str
    feasible: bool
    farkas: np.ndarray | None
    W_fro: np.ndarray | None
    W_nuc: np.ndarray | None
    steps: np.ndarray
    corr_fro: np.ndarray
    corr_nuc: np.ndarray
    max_softmax: np.ndarray
    norm_W: np.ndarray
    converged_to: str | None
    threshold: float
    W: np.ndarray
    status: str
    selected: np.ndarray | None = None
    masked: np.ndarray | None = None
    n_ambiguous: int | None = None
    gen_feasible: bool | None = None
    gen_note: str | None = None
    W_eq: np.ndarray | None = None
    W_dir: np.ndarray | None = None
    W_fin: np.ndarray | None = None
    R: float | None = None
    gamma: float | None = None
    corr_eq: np.ndarray | None = None
    corr_dir: np.ndarray | None = None
    method: str = "gd"
    mirror_p: float | None = None
    W_lp: np.ndarray | None = None
    corr_lp: np.ndarray | None = None
    train_head: bool = False
    v: np.ndarray | None = None
    v_mm: np.ndarray | None = None
    corr_v: np.ndarray | None = None
    support: np.ndarray | None = None
    W_relax: np.ndarray | None = None
    corr_relax: np.ndarray | None = None
    svm_fro: SVMResult | None = field(default=None, repr=False)
    svm_nuc: SVMResult | None = field(default=None, repr=False)
    svm_lp: SVMResult | None = field(default=None, repr=False)
    lot: LocalOptimality | None = field(default=None, repr=False)
    gen: GenSVMResult | None = field(default=None, repr=False)
    run: GDRun | None = field(default=None, repr=False)
    mirror_run: GDRun | None = field(default=None, repr=False)
    joint: JointSVMResult | None = field(default=None, repr=False)

    # -- final values ----------------------------------------------------------------------
    certificate = renamed("certificate", "farkas", "VerifyReport")

    @property
    def final_corr_fro(self) -> float:
        return float(self.corr_fro[-1])

    @property
    def final_corr_nuc(self) -> float:
        return float(self.corr_nuc[-1])

    @property
    def final_corr_eq(self) -> float | None:
        return None if self.corr_eq is None else float(self.corr_eq[-1])

    @property
    def final_max_softmax(self) -> float:
        return float(self.max_softmax[-1])

    @property
    def final_norm_W(self) -> float:
        return float(self.norm_W[-1])

    # -- printing --------------------------------------------------------------------------
    def summary(self) -> str:
        """The report as a table (what ``print(report)`` shows)."""
        return str(self)

    def __str__(self) -> str:
        def num(x: float | None, fmt: str = ".6f") -> str:
            if x is None or not math.isfinite(x):
                return "-"
            return format(x, fmt)

        sel = np.asarray(self.selection).tolist()
        if self.is_optimal:
            verdict = "optimal (global)"
        elif self.is_lot:
            verdict = "locally optimal (LOT), not the optimal selection"
        else:
            verdict = "neither optimal nor locally optimal"
        prompt = self.param == "p"
        head = [
            ("selection", str(sel)),
            ("verdict", verdict),
            ("LOT test", self.lot_reason),
            ("GD stop", f"{self.status} after {int(self.steps[-1])} steps ({self.param} param)"),
            ("converged to", self.converged_to or f"none (threshold {self.threshold:g})"),
            ("corr(p, p_mm)" if prompt else "corr(W, W_mm fro)", num(self.final_corr_fro)),
        ]
        if not prompt:
            head.append(("corr(W, W_mm nuc)", num(self.final_corr_nuc)))
        head += [
            ("1 - min max softmax", num(1.0 - self.final_max_softmax, ".3e")),
            ("||p||" if prompt else "||W||_F", num(self.final_norm_W, ".6g")),
        ]
        if self.train_head:
            head += _joint_lines(self, num)
        if self.mirror_p is not None and self.corr_lp is not None:  # mirror descent
            head[3] = ("MD stop", f"{self.status} after {int(self.steps[-1])} steps (p = "
                       f"{self.mirror_p:g} mirror descent)")  # fmt: skip
            head.insert(5, (f"corr(W, W_mm l{self.mirror_p:g})", num(float(self.corr_lp[-1]))))
        if not self.feasible:
            head.append(("Att-SVM", "infeasible (Farkas certificate in .farkas)"))
        if self.gen_note is not None:
            head.append(("Gen-SVM", self.gen_note))
        if self.W_eq is not None or self.gen_feasible is not None:
            head += [
                ("Gen-SVM status", "conjecture (the paper's proposed equivalence, measured)"),
                ("corr(W, W_eq)", num(self.final_corr_eq)),
                ("Gamma", num(self.gamma, ".3g")),
                ("R", num(self.R, ".6g")),
                ("|O_i|", str(np.asarray(self.selected).sum(axis=-1).tolist())),
                ("ambiguous tokens", str(self.n_ambiguous)),
            ]
        width = max(len(k) for k, _ in head)
        lines = ["svmgeo verify report (" + self.head + " head)"]
        lines += [f"  {k:<{width}}  {v}" for k, v in head]
        cols = [("step", self.steps.astype(float), ".0f"), ("corr_fro", self.corr_fro, ".6f")]
        if not prompt:
            cols.append(("corr_nuc", self.corr_nuc, ".6f"))
        for name in ("corr_eq", "corr_lp", "corr_relax", "corr_v"):
            curve = getattr(self, name)
            if curve is not None:
                cols.append((name, curve, ".6f"))
        norm_name = "||p||" if prompt else "||W||_F"
        cols += [("1-max_softmax", 1.0 - self.max_softmax, ".3e"), (norm_name, self.norm_W, ".6g")]
        R = len(self.steps)
        rows = sorted({0, R - 1} | {int(j) for j in np.linspace(0, R - 1, 6).round()})
        table = [[name for name, _, _ in cols]]
        table += [[num(float(c[j]), fmt) for _, c, fmt in cols] for j in rows]
        widths = [max(len(r[c]) for r in table) for c in range(len(cols))]
        lines.append("")
        lines += ["  " + "  ".join(f"{r[c]:>{widths[c]}}" for c in range(len(cols))) for r in table]
        return "\n".join(lines)

    # -- JSON ------------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """Plain Python types (lists, floats, None for NaN/inf), without the solver objects."""
        out: dict[str, Any] = {}
        for f in dataclasses.fields(self):
            if f.name in _FIELDS_OUT:
                continue
            val = getattr(self, f.name)
            if isinstance(val, np.ndarray):
                out[f.name] = _list(val)
            elif isinstance(val, float):
                out[f.name] = _f(val)
            elif isinstance(val, (bool, int, str)) or val is None:
                out[f.name] = val
            else:  # pragma: no cover - every field is one of the above
                raise TypeError(f"cannot serialize field {f.name} of type {type(val)}")
        return out

    def to_json(self, **kwargs: Any) -> str:
        """The report as a JSON string (see :meth:`to_dict`; NaN and inf become null)."""
        return json.dumps(self.to_dict(), allow_nan=False, **kwargs)

    @classmethod
    def from_json(cls, text: str) -> VerifyReport:
        """Rebuild a report from :meth:`to_json` (the solver objects are None)."""
        raw = json.loads(text)
        if isinstance(raw, dict) and "certificate" in raw:  # written before the rename
            raw["farkas"] = raw.pop("certificate")
        if not isinstance(raw, dict):
            raise ProblemError("from_json needs the JSON object written by VerifyReport.to_json.")
        names = {f.name for f in dataclasses.fields(cls)} - set(_FIELDS_OUT)
        missing = sorted(
            names
            - set(raw)
            - {f.name for f in dataclasses.fields(cls) if f.default is not dataclasses.MISSING}
        )
        unknown = sorted(set(raw) - names)
        if missing or unknown:
            raise ProblemError(
                f"from_json: not a VerifyReport JSON (missing {missing}, unknown {unknown})."
            )
        kw: dict[str, Any] = dict(raw)
        for name in ("W_fro", "W_nuc", "corr_fro", "corr_nuc", "max_softmax", "norm_W", "W"):
            kw[name] = _array(raw[name])
        for name in _OPTIONAL_ARRAYS:
            kw[name] = _array(raw.get(name))
        kw["selection"] = _array(raw["selection"], np.int64)
        kw["steps"] = _array(raw["steps"], np.int64)
        for name in ("selected", "masked", "support"):
            kw[name] = _array(raw.get(name), bool)
        return cls(**kw)


def _head_scores(data: TokenData, head: str, v: Any, V: Any, lam: Any) -> np.ndarray | None:
    r"""Token scores :math:`\gamma_{ikt} = Y_{ik} h(u_{it})` of the head GD trains, (n, K, T),
    on the head features :math:`u_{it}` (``data.values``; the tokens when not given)."""
    X = np.asarray(data.values)
    Y = np.asarray(data.labels)[:, :, None]
    if head == "relu":
        Va = np.asarray(V, dtype=float)
        w = np.ones(Va.shape[1]) if v is None else np.asarray(v, dtype=float)
        h = np.maximum(X @ Va, 0.0) @ w
    else:
        if v is None:
            if data.v is None:
                return None if data.scores is None else np.asarray(data.scores)
            vv = np.asarray(data.v)
        else:
            vv = np.asarray(v, dtype=float)
        h = X @ vv
        if head == "concave":
            h = h - float(lam) * np.sum(X * X, axis=2)
    return Y * h[:, None, :]


def _scored(data: TokenData, scores: np.ndarray, prompt: bool = False) -> TokenData:
    r"""The same attention problem with explicit token scores (queries passed as Z).

    ``prompt``: every query :math:`z_{ik} = e_1`, so that Att-SVM of the result is the p-SVM
    (its solution :math:`p^{\mathrm{mm}} e_1^\top`) and its LOT test that of prompt attention.
    """
    Z = np.asarray(data.queries)
    if prompt:
        Z = np.zeros_like(Z)
        Z[..., 0] = 1.0
    return TokenData(
        np.asarray(data.X),
        Y=np.asarray(data.Y),
        Z=Z[:, 0] if data.single_query else Z,
        mask=None if data.mask is None else np.asarray(data.mask),
        scores=scores[:, 0] if data.single_query else scores,
    )


def _cone_init(
    W_mm: np.ndarray, param: str, m: int, radius: float, noise: float, seed: int | None
) -> Any:
    r""":math:`R\,W^{\mathrm{mm}}/\|W^{\mathrm{mm}}\|_F` plus a relative perturbation; for
    (K, Q) its balanced factorization :math:`K = U\Sigma^{1/2}, Q = V\Sigma^{1/2}` (top m)."""
    rng = np.random.default_rng(seed)
    d = W_mm.shape[0]
    W0 = radius * W_mm / np.linalg.norm(W_mm)
    if param == "W":
        E = rng.standard_normal((d, d))
        return W0 + noise * radius * E / np.linalg.norm(E)
    U, s, Vt = np.linalg.svd(W0)
    r = min(m, d)
    K = np.zeros((d, m))
    Q = np.zeros((d, m))
    K[:, :r] = U[:, :r] * np.sqrt(s[:r])
    Q[:, :r] = Vt[:r].T * np.sqrt(s[:r])
    scale = math.sqrt(radius)
    EK, EQ = rng.standard_normal((d, m)), rng.standard_normal((d, m))
    K = K + noise * scale * EK / np.linalg.norm(EK)
    Q = Q + noise * scale * EQ / np.linalg.norm(EQ)
    return (K, Q)


def _curve(Ws: np.ndarray, ref: np.ndarray | None) -> np.ndarray:
    if ref is None:
        return np.full(len(Ws), np.nan)
    return np.array([correlation(W, ref) for W in Ws])


@overload
def verify(data: NextTokenData, **options: Any) -> NTPReport: ...
@overload
def verify(data: TokenData, **options: Any) -> VerifyReport: ...


def verify(
    data: TokenData | NextTokenData,
    *,
    param: str = "W",
    m: int | None = None,
    loss: str | None = None,
    head: str = "linear",
    v: Any = None,
    V: Any = None,
    lam: float | None = None,
    step_size: float = 0.1,
    n_steps: int = 2000,
    normalized: bool = True,
    init: Any = "zero",
    alpha: Any = None,
    cone_radius: float = 10.0,
    cone_noise: float = 0.0,
    backend: str = "numba",
    seed: int | None = None,
    record_every: int | None = None,
    threshold: float = 0.99,
    method: str = "gd",
    p: float | None = None,
    train_head: bool = False,
    **train_options: Any,
) -> VerifyReport | NTPReport:
    r"""Run GD and the attention SVMs, and report how GD's direction compares with them.

    .. math::

        \alpha_{ik} = \arg\max_t s_{ikt}(W_{\mathrm{GD}}),\qquad
        \mathrm{corr}\big(W(t), W^{\mathrm{mm}}_\alpha\big),\quad
        \mathrm{corr}\big(W(t), W^{\mathrm{mm}\star}_\alpha\big),\qquad
        \mathrm{corr}(A, B) = \frac{\langle A, B\rangle}{\|A\|_F\|B\|_F}

    Theory (SPEC §4): W runs approach :math:`W^{\mathrm{mm}}_\alpha` (Frobenius), (K, Q) runs
    approach :math:`W^{\mathrm{mm}\star}_\alpha` (nuclear), for the optimal :math:`\alpha`
    (global convergence) or a locally optimal one (started in its cone). For nonlinear heads
    the report adds the Gen-SVM prediction :math:`W^{\mathrm{eq}} = W^{\mathrm{fin}} + R
    W^{\mathrm{svm}}` for the selected sets of the final probabilities, and :math:`\Gamma`
    (a *conjecture*: the paper's proposed equivalence, measured here, not a theorem).

    ``method="mirror"`` trains with :math:`\ell_p` mirror descent (:func:`~svmgeo.train_mirror`)
    and compares it with the :math:`\ell_p` Att-SVM :math:`W^{\mathrm{mm}}_{p,\alpha}` of its
    selection (``corr_lp``; its directional limit by Julistiono, Tarzanagh, Azizan,
    arXiv:2410.14581). A :class:`~svmgeo.NextTokenData` is verified by
    :func:`svmgeo.ntp.verify_ntp_training` (GD against :math:`W^{\mathrm{fin}} + R\,
    W^{\mathrm{svm}}`, Li et al., arXiv:2403.08081) and returns its
    :class:`~svmgeo.NTPReport`. Both refuse, by name, the options that do not apply to them.

    Parameters
    ----------
    data : TokenData or NextTokenData
    param : {"W", "KQ", "p"}
        ``"p"``: prompt attention :math:`f = v^\top U^\top \mathrm{softmax}(X p)`, compared
        with the p-SVM of GD's selection (see the Notes of :class:`VerifyReport`).
    m : int, optional
        Width of K and Q (default d). With ``m < d`` the nuclear SVM carries the rank bound m.
    loss, head, v, V, lam, step_size, n_steps, normalized, backend, record_every
        As in :func:`~svmgeo.train` (``n_steps`` defaults to 2000 here). ``loss`` defaults to
        ``"logistic"`` (``"ce"`` for a NextTokenData, as in :func:`~svmgeo.train_ntp`).
    init : "zero", ("random", scale), array, (K, Q), or "cone"
        As in :func:`~svmgeo.train`, plus ``"cone"``: start in the cone around
        :math:`W^{\mathrm{mm}}_\alpha` of the selection ``alpha``,
        :math:`W_0 = R\,W^{\mathrm{mm}}_\alpha / \|W^{\mathrm{mm}}_\alpha\|_F` (``R =
        cone_radius``) plus a random perturbation of relative size ``cone_noise``; for (K, Q)
        the balanced factorization of :math:`W_0` (its top ``m`` singular directions).
    alpha : array of int, shape (n,) or (n, K), optional
        The selection whose cone ``init="cone"`` starts in (required then, unused otherwise).
    cone_radius : float
        :math:`R > 0` of the cone start.
    cone_noise : float
        Relative size (in :math:`\|\cdot\|_F`) of the perturbation of the cone start, >= 0.
    seed : int, optional
        Seed of random initializations and of the cone perturbation.
    threshold : float
        ``converged_to`` names the best prediction when its final correlation is at least
        this.
    method : {"gd", "mirror"}, default "gd"
        ``"mirror"``: :math:`\ell_p` mirror descent, W parameter, linear head; uses ``p``,
        ``loss``, ``v``, ``step_size``, ``n_steps``, ``normalized``, ``init`` ("zero" or an
        array), ``backend``, ``record_every``, ``threshold``.
    p : float, optional
        The exponent of the mirror potential :math:`\psi(W) = \|W\|_p^p/p`, ``p > 1``
        (required with ``method="mirror"``, refused otherwise).
    train_head : bool, default False
        Train the head v with the attention (``param="p"`` or ``"W"``, linear head, from
        ``v`` or ``data.v``) and compare with both predictions of :func:`~svmgeo.joint_svm`:
        :math:`v(t)` with the head SVM :math:`v^{\mathrm{mm}}`, the attention with the relaxed
        SVM (``converged_to="relax"``) and with the SVM of GD's selection (``"fro"``).
    **train_options
        Passed to :func:`~svmgeo.train`: ``ridge``, ``log_domain``, ``grad_tol``,
        ``saturation_tol``, ``callback``, ``normalize_eps``. Any other name is a
        :class:`~svmgeo.ProblemError`.

    Returns
    -------
    VerifyReport
        An :class:`~svmgeo.NTPReport` for a NextTokenData.

    Raises
    ------
    ProblemError
        Invalid options (including unknown ``train_options``), ``init="cone"`` without
        ``alpha`` or with an infeasible Att-SVM(alpha), or data without scores for the head.

    Examples
    --------
    >>> import svmgeo as sg
    >>> data = sg.random_data(6, 8, 10, seed=2, score_gap=0.05)
    >>> rep = sg.verify(data, n_steps=2000, backend="numpy")
    >>> bool(rep.is_optimal), rep.converged_to
    (True, 'fro')
    """
    if (
        isinstance(data, NextTokenData) or method != "gd" or p is not None
    ):  # issue #13: mirror descent, NTP
        from ._verify_beyond import verify_beyond

        return verify_beyond(dict(locals()))
    loss = "logistic" if loss is None else loss
    where = "verify"
    if not isinstance(data, TokenData):
        raise ProblemError(f"verify takes one svmgeo.TokenData; got {type(data).__name__}.")
    check_option(param, "param", PARAMS, where=where)
    check_option(head, "head", ("linear", "relu", "concave"), where=where)
    threshold = check_real(threshold, "threshold", low=-1.0, high=1.0, where=where)
    unknown = sorted(set(train_options) - set(_PASS_THROUGH))
    if unknown:
        sig = inspect.signature(verify).parameters
        own = [p for p in sig if p not in ("data", "train_options")]
        raise ProblemError(
            f"verify got unknown option(s) {unknown}. It takes {', '.join(own)} and passes "
            f"{', '.join(_PASS_THROUGH)} through to train; record is set by verify itself."
        )
    if param == "p" or train_head:
        _check_prompt_options(param, head, init, alpha)
        train_kwargs = dict(
            m=m, loss=loss, step_size=step_size, n_steps=n_steps, normalized=normalized,
            init=init, seed=seed, backend=backend, record_every=record_every, **train_options,
        )  # fmt: skip
        return _verify_prompt(
            data, param=param, train_head=bool(train_head), v=v, threshold=threshold,
            train_kwargs=train_kwargs,
        )  # fmt: skip
    if head == "relu" and V is None:
        raise ProblemError(
            f"head='relu' needs V of shape ({data.d}, p): h(x) = vᵀReLU(Vᵀx) with V fixed."
        )
    if head == "concave" and lam is None:
        raise ProblemError("head='concave' needs lam, the λ of h(x) = vᵀx − λ‖x‖²; pass lam=0.1.")
    scores = _head_scores(data, head, v, V, lam)
    if scores is None:
        raise ProblemError(
            "verify needs token scores for the head: build the data with v=... or pass v=."
        )
    sdata = _scored(data, scores)
    width = data.d if m is None else m

    if isinstance(init, str) and init == "cone":
        if alpha is None:
            raise ProblemError(
                "init='cone' needs alpha=, the selection whose cone around W^mm_alpha GD "
                "starts in (e.g. a locally optimal selection)."
            )
        radius = check_real(cone_radius, "cone_radius", low=0.0, low_open=True, where=where)
        noise = check_real(cone_noise, "cone_noise", low=0.0, where=where)
        ref = att_svm(sdata, alpha)
        if ref.W is None:
            raise ProblemError(
                f"init='cone': Att-SVM(alpha) has no solution ({ref.message}); the cone around "
                "W^mm_alpha is undefined. Pick a feasible alpha (sg.feasibility(data, alpha))."
            )
        init = _cone_init(ref.W, param, width, radius, noise, seed)
    elif alpha is not None:
        raise ProblemError("alpha is used only with init='cone'; got alpha with another init.")

    record = ("W_norm", "max_prob", "selected", "W") + (("probs",) if head != "linear" else ())
    run = train(
        data, param=param, m=m, loss=loss, head=head, v=v, V=V, lam=lam, step_size=step_size,
        n_steps=n_steps, normalized=normalized, init=init, seed=seed, backend=backend,
        record_every=record_every, record=record, **train_options,
    )  # fmt: skip
    hist = run.history
    assert hist.W is not None and hist.max_prob is not None and hist.selected is not None
    assert hist.W_norm is not None
    sel_full, selection = _final_selection(data, hist)
    is_optimal = _selects_optimal(sdata, sel_full)

    lot = is_locally_optimal(sdata, selection)
    svm_fro: SVMResult | None = lot.support.svm
    feasible = bool(lot.support.feasible)
    farkas = None if feasible else lot.support.farkas
    svm_nuc: SVMResult | None = None
    if feasible:
        rank = width if (param == "KQ" and width < data.d) else None
        svm_nuc = att_svm(sdata, selection, norm="nuc", rank=rank)
    else:
        svm_fro = None
    W_fro = None if svm_fro is None else svm_fro.W
    W_nuc = None if svm_nuc is None else svm_nuc.W
    Ws = hist.W
    corr_fro = _curve(Ws, W_fro)
    corr_nuc = _curve(Ws, W_nuc)
    finals = {"fro": float(corr_fro[-1]), "nuc": float(corr_nuc[-1])}

    base: dict[str, Any] = dict(
        param=param,
        head=head,
        selection=selection,
        is_optimal=is_optimal,
        is_lot=bool(lot),
        lot_reason=lot.reason,
        feasible=feasible,
        farkas=farkas,
        W_fro=W_fro,
        W_nuc=W_nuc,
        steps=np.asarray(hist.step, dtype=np.int64),
        corr_fro=corr_fro,
        corr_nuc=corr_nuc,
        max_softmax=hist.max_prob.reshape(len(hist.step), -1).min(axis=1),
        norm_W=np.asarray(hist.W_norm, dtype=float),
        converged_to=None,
        threshold=threshold,
        W=run.W,
        status=str(run.status),
        svm_fro=svm_fro,
        svm_nuc=svm_nuc,
        lot=lot,
        run=run,
    )
    extra: dict[str, Any] = {}
    if head != "linear":
        P = hist.probs[-1] if hist.probs is not None else None
        assert P is not None
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # counted in n_ambiguous instead
            sets = selected_sets(P)
        extra.update(
            selected=sets.selected,
            masked=sets.masked,
            n_ambiguous=int(sets.ambiguous.sum()),
        )
        sel3 = sets.selected[:, None, :] if data.single_query else sets.selected
        vis = np.asarray(data.visible)
        full = (sel3 == vis).all(axis=2) & (vis.sum(axis=2) > 1)
        if np.any(full):
            i, k = (int(x) for x in np.argwhere(full)[0])
            extra["gen_note"] = (
                f"no Gen-SVM: the selected set of sequence {i}, query {k} holds every visible "
                "token (GD has not masked any of them; a finite optimum inside the simplex?)"
            )
            base["converged_to"] = _converged_to(finals, threshold)
            return VerifyReport(**base, **extra)
        gen = gen_svm(data, sets, probs=P, fit_to=run.W)
        extra.update(
            gen_feasible=bool(gen.feasible),
            W_eq=gen.W_eq,
            W_dir=gen.W_dir,
            W_fin=gen.W_fin,
            R=gen.R,
            gamma=gen.gamma,
            gen=gen,
        )
        if gen.W_dir is not None and gen.W_fin is not None:
            D, Fin = gen.W_dir, gen.W_fin
            dd = float(np.vdot(D, D))
            corr_eq = []
            for Wt in Ws:
                Rt = max(0.0, float(np.vdot(Wt - Fin, D)) / dd)
                corr_eq.append(correlation(Wt, Fin + Rt * D))
            extra["corr_eq"] = np.array(corr_eq)
            extra["corr_dir"] = _curve(Ws, D)
            finals["eq"] = float(extra["corr_eq"][-1])
    base["converged_to"] = _converged_to(finals, threshold)
    return VerifyReport(**base, **extra)


def _check_prompt_options(param: str, head: str, init: Any, alpha: Any) -> None:
    """What prompt attention and joint training support: a linear head, no cone start, and
    (with ``train_head``) ``param`` "p" or "W"."""
    what = "param='p'" if param == "p" else "train_head=True"
    if param == "KQ":
        raise ProblemError(
            "verify(train_head=True) compares with the relaxed SVM of p or W; param='KQ' has "
            "none here. Pass param='p' or param='W'."
        )
    if head != "linear":
        raise ProblemError(
            f"verify with {what} needs the linear head (the head SVM v_mm is linear); got "
            f"head={head!r}."
        )
    if (isinstance(init, str) and init == "cone") or alpha is not None:
        raise ProblemError(
            f"init='cone' and alpha are not available with {what}; start from 'zero', "
            "('random', scale) or an array."
        )


def _final_selection(data: TokenData, hist: Any) -> tuple[np.ndarray, np.ndarray]:
    """GD's final argmax selection as (n, K) and in the shape of a selection."""
    sel_full = np.asarray(hist.selected[-1], dtype=np.int64).reshape(data.n, data.K)
    return sel_full, (sel_full[:, 0] if data.single_query else sel_full)


def _selects_optimal(sdata: TokenData, sel_full: np.ndarray) -> bool:
    """Whether every selected token is an optimal token (ties: any of the tied tokens)."""
    opt_sets = optimal_token_sets(sdata)
    opt_full = opt_sets[:, None, :] if sdata.single_query else opt_sets
    return bool(np.all(np.take_along_axis(opt_full, sel_full[:, :, None], axis=2)))


def _joint_lines(report: VerifyReport, num: Any) -> list[tuple[str, str]]:
    """The report lines of joint (head, attention) training."""
    name = "p" if report.param == "p" else "W"
    support = None if report.support is None else np.asarray(report.support).tolist()
    return [
        ("head", "trained with the attention (train_head=True)"),
        ("v_mm support inputs", str(support)),
        (f"corr({name}, {name}_relax)", num(_last(report.corr_relax))),
        ("corr(v, v_mm)", num(_last(report.corr_v))),
        ("||v||", num(None if report.v is None else float(np.linalg.norm(report.v)), ".6g")),
    ]


def _last(curve: np.ndarray | None) -> float | None:
    return None if curve is None else float(curve[-1])


def _verify_prompt(
    data: TokenData,
    *,
    param: str,
    train_head: bool,
    v: Any,
    threshold: float,
    train_kwargs: dict[str, Any],
) -> VerifyReport:
    r""":func:`verify` for prompt attention p and for joint (head, attention) training.

    GD's selection α is its final argmax. The predictions: the p-SVM of α (Att-SVM with
    :math:`z_i = e_1`; Att-SVM for ``param="W"``) and, with ``train_head``, the head SVM
    :math:`v^{\mathrm{mm}}` and the relaxed SVM of :func:`~svmgeo.joint_svm`; optimality and
    the LOT test score tokens with :math:`v^{\mathrm{mm}}` (GD's final head when the head SVM
    has no solution), with the fixed head otherwise.
    """
    key = "p" if param == "p" else "W"
    record = (key, "max_prob", "selected") + (("v",) if train_head else ())
    run = train(data, param=param, v=v, train_head=train_head, record=record, **train_kwargs)
    hist = run.history
    thetas = np.asarray(getattr(hist, key), dtype=float)
    assert hist.max_prob is not None and hist.selected is not None
    sel_full, selection = _final_selection(data, hist)
    joint = joint_svm(data, selection, param="p" if key == "p" else "W") if train_head else None
    head_v = v
    if joint is not None:
        head_v = joint.v if joint.v is not None else run.v
    scores = _head_scores(data, "linear", head_v, None, None)
    if scores is None:
        raise ProblemError(
            "verify needs token scores for the head: build the data with v=... or pass v=."
        )
    sdata = _scored(data, scores, prompt=param == "p")
    lot = is_locally_optimal(sdata, selection)
    feasible = bool(lot.support.feasible)
    svm = lot.support.svm if feasible else None
    target = None if svm is None or svm.W is None else (svm.W[:, 0] if key == "p" else svm.W)
    svm_nuc = att_svm(sdata, selection, norm="nuc") if feasible and key == "W" else None
    W_nuc = None if svm_nuc is None else svm_nuc.W
    corr_fro = _curve(thetas, target)
    corr_nuc = _curve(thetas, W_nuc)
    finals: dict[str, float] = {}
    extra: dict[str, Any] = {"train_head": train_head}
    if joint is not None:
        relax = joint.p if key == "p" else joint.W
        assert hist.v is not None
        extra.update(
            v=run.v,
            v_mm=joint.v,
            corr_v=_curve(np.asarray(hist.v, dtype=float), joint.v),
            support=joint.support,
            W_relax=relax,
            corr_relax=_curve(thetas, relax),
            joint=joint,
        )
        finals["relax"] = float(extra["corr_relax"][-1])  # first: it wins ties with "fro"
    finals.update(fro=float(corr_fro[-1]), nuc=float(corr_nuc[-1]))
    return VerifyReport(
        param=param,
        head="linear",
        selection=selection,
        is_optimal=_selects_optimal(sdata, sel_full),
        is_lot=bool(lot),
        lot_reason=lot.reason,
        feasible=feasible,
        farkas=None if feasible else lot.support.farkas,
        W_fro=target,
        W_nuc=W_nuc,
        steps=np.asarray(hist.step, dtype=np.int64),
        corr_fro=corr_fro,
        corr_nuc=corr_nuc,
        max_softmax=hist.max_prob.reshape(len(hist.step), -1).min(axis=1),
        norm_W=np.linalg.norm(thetas.reshape(len(thetas), -1), axis=1),
        converged_to=_converged_to(finals, threshold),
        threshold=threshold,
        W=np.asarray(run.p if key == "p" else run.W),
        status=str(run.status),
        svm_fro=svm,
        svm_nuc=svm_nuc,
        lot=lot,
        run=run,
        **extra,
    )


def _converged_to(finals: dict[str, float], threshold: float) -> str | None:
    """The prediction with the largest final correlation, if it reaches ``threshold``."""
    ok = {k: c for k, c in finals.items() if math.isfinite(c) and c >= threshold}
    return max(ok, key=lambda k: ok[k]) if ok else None
