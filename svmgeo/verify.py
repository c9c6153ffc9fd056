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
from .gd import GDRun, train
from .gd._config import PARAMS
from .gd._mirror import MirrorRun
from .ntp import NextTokenData, NTPReport
from .selection import optimal_token_sets
from .solvers import SVMResult, att_svm

__all__ = ["VerifyReport", "verify"]

# options of `train` that verify passes through unchanged (the others it sets itself)
_PASS_THROUGH = ("ridge", "log_domain", "tol", "saturation_tol", "callback")
_FIELDS_OUT = ("svm_fro", "svm_nuc", "svm_lp", "lot", "gen", "run", "mirror_run")  # objects


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
    svm_fro: SVMResult | None = field(default=None, repr=False)
    svm_nuc: SVMResult | None = field(default=None, repr=False)
    svm_lp: SVMResult | None = field(default=None, repr=False)
    lot: LocalOptimality | None = field(default=None, repr=False)
    gen: GenSVMResult | None = field(default=None, repr=False)
    run: GDRun | None = field(default=None, repr=False)
    mirror_run: MirrorRun | None = field(default=None, repr=False)

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
        head = [
            ("selection", str(sel)),
            ("verdict", verdict),
            ("LOT test", self.lot_reason),
            ("GD stop", f"{self.status} after {int(self.steps[-1])} steps ({self.param} param)"),
            ("converged to", self.converged_to or f"none (threshold {self.threshold:g})"),
            ("corr(W, W_mm fro)", num(self.final_corr_fro)),
            ("corr(W, W_mm nuc)", num(self.final_corr_nuc)),
            ("1 - min max softmax", num(1.0 - self.final_max_softmax, ".3e")),
            ("||W||_F", num(self.final_norm_W, ".6g")),
        ]
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
        cols = [
            ("step", self.steps.astype(float), ".0f"),
            ("corr_fro", self.corr_fro, ".6f"),
            ("corr_nuc", self.corr_nuc, ".6f"),
        ]
        if self.corr_eq is not None:
            cols.append(("corr_eq", self.corr_eq, ".6f"))
        if self.corr_lp is not None:
            cols.append(("corr_lp", self.corr_lp, ".6f"))
        cols += [("1-max_softmax", 1.0 - self.max_softmax, ".3e"), ("||W||_F", self.norm_W, ".6g")]
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
        for name in ("farkas", "W_eq", "W_dir", "W_fin", "corr_eq", "corr_dir", "W_lp", "corr_lp"):
            kw[name] = _array(raw.get(name))
        kw["selection"] = _array(raw["selection"], np.int64)
        kw["steps"] = _array(raw["steps"], np.int64)
        for name in ("selected", "masked"):
            kw[name] = _array(raw.get(name), bool)
        return cls(**kw)


def _head_scores(data: TokenData, head: str, v: Any, V: Any, lam: Any) -> np.ndarray | None:
    r"""Token scores :math:`\gamma_{ikt} = Y_{ik} h(x_{it})` of the head GD trains, (n, K, T)."""
    X = np.asarray(data.X)
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


def _scored(data: TokenData, scores: np.ndarray) -> TokenData:
    """The same attention problem with explicit token scores (queries passed as Z)."""
    Z = np.asarray(data.queries)
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
    param : {"W", "KQ"}
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
    **train_options
        Passed to :func:`~svmgeo.train`: ``ridge``, ``log_domain``, ``tol``,
        ``saturation_tol``, ``callback``. Any other name is a :class:`~svmgeo.ProblemError`.

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
    sel_full = np.asarray(hist.selected[-1], dtype=np.int64).reshape(data.n, data.K)
    selection = sel_full[:, 0] if data.single_query else sel_full

    opt_sets = optimal_token_sets(sdata)
    opt_full = opt_sets[:, None, :] if data.single_query else opt_sets
    is_optimal = bool(np.all(np.take_along_axis(opt_full, sel_full[:, :, None], axis=2)))

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


def _converged_to(finals: dict[str, float], threshold: float) -> str | None:
    """The prediction with the largest final correlation, if it reaches ``threshold``."""
    ok = {k: c for k, c in finals.items() if math.isfinite(c) and c >= threshold}
    return max(ok, key=lambda k: ok[k]) if ok else None
