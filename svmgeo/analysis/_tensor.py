# SPDX-License-Identifier: BSD-3-Clause
r"""The tensor form: attention as a vector model in :math:`w = \mathrm{vec}(W) \in \mathbb{R}^{d^2}`.

.. math::

    a^\top W b = (a \otimes b)^\top w \ \ (\text{row-major vec}), \qquad
    X_i W z_{ik} = \mathsf A_{ik} w, \quad \mathsf A_{ik} = X_i \otimes z_{ik}^\top,

so Att-SVM is the homogeneous hard-margin vector SVM on the rows :math:`u_j = a_j \otimes b_j`
and the risk is a vector softmax regression :math:`\frac1n\sum_{ik}\ell(\gamma_{ik}^\top
\varphi(\mathsf A_{ik} w))`. *svmgeo's reconstruction* of the "tensor trick" named in the
abstract of Chen, Guo, Li, Song, Zhou (ICLR 2024 submission 4416, withdrawn); the vector SVM is
solved with the Lawson–Hanson NNLS (Lawson & Hanson 1974) through the classical reduction of a
hard-margin SVM to non-negative least squares. Only the Frobenius norm has this vector form
among svmgeo's SVMs: the nuclear norm depends on W's singular values and (K, Q) makes the
logits bilinear, so both raise a ProblemError here.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.optimize import nnls

from .._errors import ProblemError
from .._summary import summarized
from .._validation import check_array, check_int
from ..attention_maps import get_attention_map
from ..constraints import (
    EQUALITY,
    ConstraintSet,
    check_constraint_set,
    check_row_kinds,
    rows_without_tokens,
)
from ..data import TokenData
from ..losses import check_user_loss, get_loss, is_builtin
from ..selection import check_data as _check_data
from ..selection import scores_full as _scores_full
from ..solvers import NORMS, FeasibilityResult, decide_feasibility, parse_norm, unit_rows
from ._stability import RECONSTRUCTION

__all__ = ["TensorData", "TensorRows", "TensorSVM", "tensor_rows", "tensor_svm", "tensorize"]

_NO_VECTOR_FORM = {
    "nuc": (
        "the nuclear norm ||W||_* = sum of W's singular values is a norm of the matrix, not an "
        "entrywise norm of vec(W): the tensor form turns Att-SVM into a Euclidean vector SVM "
        "only for the Frobenius norm (||W||_F = ||vec W||_2). Solve Att-SVM* with "
        "svmgeo.att_svm(data, norm='nuc')."
    ),
    "spectral": (
        "the spectral norm ||W||_2 = the largest singular value of W is a norm of the matrix, "
        "not an entrywise norm of vec(W): the tensor form turns Att-SVM into a Euclidean "
        "vector SVM only for the Frobenius norm (||W||_F = ||vec W||_2). Solve the "
        "spectral-norm SVM with svmgeo.att_svm(data, norm='spectral')."
    ),
    "KQ": (
        "with W = K Q^T the logits x^T K Q^T z are bilinear in (K, Q), not linear in one "
        "parameter vector, so (K, Q) has no vector form; its implicit bias is the nuclear-norm "
        "Att-SVM*, svmgeo.att_svm(data, norm='nuc')."
    ),
}


def _no_vector_form(what: str, where: str) -> ProblemError:
    return ProblemError(f"{where}: no vector form for {what!r}: {_NO_VECTOR_FORM[what]}")


def _vec(w: Any, d: int) -> np.ndarray:
    r""":math:`w = \mathrm{vec}(W)`, shape (d*d,), from ``w`` of shape (d*d,) or W of shape
    (d, d), checked real and finite (:func:`~svmgeo._validation.check_array`)."""
    hint = f"Pass vec(W) of shape ({d * d},) or W of shape ({d}, {d})."
    arr = check_array(w, "'w' of TensorData", ndim=(1, 2), hint=hint)
    if arr.shape == (d, d):
        return arr.reshape(d * d)
    if arr.shape == (d * d,):
        return arr
    raise ProblemError(
        f"'w' of TensorData must be vec(W) of shape ({d * d},) or W of shape ({d}, {d}); got "
        f"{arr.shape}."
    )


def _softmax_jtg_scaled(
    u: np.ndarray, gamma: np.ndarray, visible: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    r""":math:`q = J_{\mathrm{softmax}}(u)^\top\gamma` per query as :math:`e^{\sigma}\hat q`
    with :math:`\max_t|\hat q_t| = 1` (:math:`\sigma = -\infty`, :math:`\hat q = 0` where
    q = 0), formed in the log domain, so that q does not underflow to 0 once the softmax
    saturates.

    .. math::

        q_t = s_t(\gamma_t - s^\top\gamma)
            = \frac{e^{\delta_t}}{Z^2}\sum_{\tau \ne t} e^{\delta_\tau}(\gamma_t - \gamma_\tau),
        \qquad \delta = u - \max u,\ Z = \sum_\tau e^{\delta_\tau},

    each sum shifted by its own largest :math:`\delta_\tau` (:math:`\tau \ne t`), over the
    visible keys. Returns (:math:`\hat q`, :math:`\sigma`) of shapes (n, K, T) and (n, K)."""
    delta = np.where(visible, u, -np.inf)
    delta = delta - delta.max(axis=-1, keepdims=True)
    log_z = np.log(np.sum(np.exp(delta), axis=-1))  # Z >= 1: the top key's term is 1
    T = u.shape[-1]
    others = np.where(np.eye(T, dtype=bool), -np.inf, delta[..., None, :])  # (n, K, t, tau)
    kappa = others.max(axis=-1)  # the largest delta_tau, tau != t (-inf: no other key)
    with np.errstate(invalid="ignore"):
        weights = np.exp(others - np.where(np.isfinite(kappa), kappa, 0.0)[..., None])
    gaps = gamma[..., :, None] - gamma[..., None, :]  # gamma_t - gamma_tau
    e_hat = np.sum(weights * gaps, axis=-1)
    with np.errstate(divide="ignore"):
        log_q = delta + kappa + np.log(np.abs(e_hat)) - 2.0 * log_z[..., None]
    log_q = np.where(visible & np.isfinite(kappa), log_q, -np.inf)
    sigma = log_q.max(axis=-1)
    safe = np.where(np.isfinite(sigma), sigma, 0.0)
    q_hat = np.sign(e_hat) * np.exp(log_q - safe[..., None])
    return q_hat, sigma


@summarized
@dataclass(frozen=True, eq=False)
class TensorData:
    r"""Vectorized data :math:`\mathsf A_{ik} = X_i \otimes z_{ik}^\top` and the risk in
    :math:`w = \mathrm{vec}(W)`.

    Attributes
    ----------
    A : ndarray of shape (n, K, T, d*d)
        Row t of :math:`\mathsf A_{ik}` is :math:`x_{it} \otimes z_{ik}`.
    gamma : ndarray of shape (n, K, T) or None
        Token scores (linear head); None when the data have none.
    visible : ndarray of bool, shape (n, K, T)
    d : int
    """

    A: np.ndarray
    gamma: np.ndarray | None
    visible: np.ndarray
    d: int

    def __post_init__(self) -> None:
        where = "TensorData"
        hint = "Build it from a TokenData with svmgeo.analysis.tensorize(data)."
        d = check_int(self.d, "d", low=1, where=where)
        A = check_array(self.A, f"'A' of {where}", ndim=4, shape=(None, None, None, d * d),
                        hint=hint)  # fmt: skip
        n, K, T, _ = A.shape
        if min(n, K, T) < 1:  # risk and gradient would be 0/0 (n = 0) or empty sums
            raise ProblemError(
                f"'A' of {where} must have n, K, T >= 1 (shape (n, K, T, d*d)); got shape "
                f"{A.shape}. {hint}"
            )
        visible = check_array(self.visible, f"'visible' of {where}", ndim=3, shape=(n, K, T),
                              dtype=bool, hint=hint)  # fmt: skip
        if not np.all(visible.any(axis=2)):  # softmax over no key: 0/0
            i, k = (int(x) for x in np.argwhere(~visible.any(axis=2))[0])
            raise ProblemError(
                f"'visible' of {where} hides every key from query {k} of sequence {i}; each "
                f"query must see at least one token. {hint}"
            )
        gamma = None if self.gamma is None else check_array(
            self.gamma, f"'gamma' of {where}", ndim=3, shape=(n, K, T), hint=hint
        )  # fmt: skip
        for name, value in (("A", A), ("gamma", gamma), ("visible", visible), ("d", d)):
            object.__setattr__(self, name, value)

    @property
    def n(self) -> int:
        return int(self.A.shape[0])

    def logits(self, w: Any) -> np.ndarray:
        r""":math:`\mathsf A_{ik} w = X_i W z_{ik}`, shape (n, K, T)."""
        return self.A @ _vec(w, self.d)

    def _parts(self, w: Any, loss: Any, attention: str) -> tuple[Any, ...]:
        if self.gamma is None:
            raise ProblemError(
                "the risk needs token scores (a linear head): build the TokenData with v=... or "
                "scores=..., then tensorize it again."
            )
        spec = get_loss(loss, "TensorData")
        amap = get_attention_map(attention, "TensorData")
        u = self.logits(w)
        f = np.sum(self.gamma * amap.phi(u, self.visible), axis=-1)  # (n, K)
        if not is_builtin(spec):  # the user's callables, on the values they get here
            check_user_loss(spec, f, "TensorData", overflow_ok=True)
        J = amap.jacobian(u, self.visible)  # (n, K, T, T)
        q = np.einsum("nkts,nkt->nks", J, self.gamma)  # J^T gamma
        return spec, amap, u, f, q

    def risk(self, w: Any, loss: Any = "logistic", attention: str = "softmax") -> float:
        r""":math:`L(w) = \frac1n \sum_{ik} \ell(\gamma_{ik}^\top \varphi(\mathsf A_{ik} w))`."""
        spec, _, _, f, _ = self._parts(w, loss, attention)
        return float(np.sum(spec.value(f)) / self.n)

    def gradient(self, w: Any, loss: Any = "logistic", attention: str = "softmax") -> np.ndarray:
        r""":math:`\nabla L = \frac1n \sum_{ik} \ell'(f_{ik})\, \mathsf A_{ik}^\top J^\top \gamma_{ik}`,
        shape (d*d,)."""
        spec, _, _, f, q = self._parts(w, loss, attention)
        return np.einsum("nk,nks,nksp->p", spec.d1(f), q, self.A) / self.n

    def direction(self, w: Any, loss: Any = "logistic", attention: str = "softmax") -> np.ndarray:
        r"""The normalized step direction :math:`-\nabla L / \|\nabla L\|`, shape (d*d,), with
        the loss weights :math:`|\ell'(f_{ik})|` and, for softmax, :math:`J^\top\gamma_{ik}`
        (:func:`_softmax_jtg_scaled`) taken in the log domain, so that it stays exact where
        :math:`\nabla L` itself underflows, e.g. once the softmax saturates (losses with
        :math:`\ell' < 0` only)."""
        spec, _, u, f, q = self._parts(w, loss, attention)
        if spec.log_abs_d1 is None:
            raise ProblemError(
                f"direction needs log|l'| (a loss with l' < 0 everywhere): the {spec.name!r} loss "
                "has none; use gradient() instead."
            )
        logc = spec.log_abs_d1(f)
        if attention == "softmax":  # q = e^sigma q_hat: it underflows once softmax saturates
            assert self.gamma is not None  # _parts raised otherwise
            q, sigma = _softmax_jtg_scaled(u, self.gamma, self.visible)
            logc = logc + sigma
        top = logc.max()
        if not top > -np.inf:
            raise ProblemError("direction: the gradient is zero at this w (a stationary point).")
        c = np.exp(logc - top)
        g = np.einsum("nk,nks,nksp->p", c, q, self.A)  # -grad L, up to a positive factor
        size = float(np.linalg.norm(g))
        if size == 0.0:
            raise ProblemError("direction: the gradient is zero at this w (a stationary point).")
        return g / size

    def hessian(self, w: Any, loss: Any = "logistic", attention: str = "softmax") -> np.ndarray:
        r"""The closed-form Hessian of the risk, shape (d*d, d*d).

        .. math::

            H = \frac1n \sum_{ik} \Big[\ell''(f_{ik})\, (\mathsf A_{ik}^\top q_{ik})
                (\mathsf A_{ik}^\top q_{ik})^\top
                + \ell'(f_{ik})\, \mathsf A_{ik}^\top M_{ik} \mathsf A_{ik}\Big],

        :math:`q = J_\varphi^\top\gamma`, :math:`M = \sum_t \gamma_t \nabla^2\varphi_t` (softmax:
        :math:`\mathrm{diag}(q) - q s^\top - s q^\top`).
        """
        spec, amap, u, f, q = self._parts(w, loss, attention)
        if spec.d2 is None:
            raise ProblemError(
                "the Hessian needs the loss's second derivative: pass (value, d1, d2) or a "
                "built-in name."
            )
        M = amap.hessian(u, self.gamma, self.visible)  # (n, K, T, T)
        Aq = np.einsum("nks,nksp->nkp", q, self.A)
        H = np.einsum("nk,nkp,nkr->pr", spec.d2(f), Aq, Aq)
        # sum_ik l'(f_ik) A_ik^T (M_ik A_ik): O(n K T d^4) in one matrix product, where the
        # four-operand einsum "nk,nktp,nkts,nksr->pr" costs O(n K T^2 d^4)
        MA = spec.d1(f)[..., None, None] * (M @ self.A)  # (n, K, T, d*d)
        H += self.A.reshape(-1, self.d * self.d).T @ MA.reshape(-1, self.d * self.d)
        return H / self.n

    def hessian_spectrum(
        self, Ws: Any, loss: Any = "logistic", attention: str = "softmax"
    ) -> np.ndarray:
        """Eigenvalues (ascending) of the Hessian at each W of a history, shape (R, d*d)."""
        return np.stack([np.linalg.eigvalsh(self.hessian(W, loss, attention)) for W in Ws])


def tensorize(data: TokenData, *, param: str = "W") -> TensorData:
    r"""Vectorize a dataset: :math:`\mathsf A_{ik} = X_i \otimes z_{ik}^\top`.

    .. math::

        x_{it}^\top W z_{ik} = (x_{it} \otimes z_{ik})^\top \mathrm{vec}(W)

    with row-major ``vec`` (``W.reshape(-1)``). *svmgeo's reconstruction* of the tensor trick of
    Chen et al. (ICLR 2024 submission 4416, abstract only).

    Parameters
    ----------
    data : TokenData
    param : {"W"}
        ``"KQ"`` raises: (K, Q) has no vector form.

    Returns
    -------
    TensorData

    Raises
    ------
    ProblemError
        For ``param="KQ"`` (or anything but ``"W"``).
    """
    data = _check_data(data, "tensorize")
    if param == "KQ":
        raise _no_vector_form("KQ", "tensorize")
    if param != "W":
        raise ProblemError(f"The 'param' parameter of tensorize must be 'W'; got {param!r}.")
    X = np.asarray(data.X)
    Z = np.asarray(data.queries)
    n, T, d = X.shape
    A = np.einsum("ntp,nkq->nktpq", X, Z).reshape(n, data.K, T, d * d)
    gamma = None if data.v is None and data.scores is None else _scores_full(data)
    return TensorData(A=A, gamma=gamma, visible=np.asarray(data.visible), d=d)


@summarized
@dataclass(frozen=True, eq=False)
class TensorRows:
    r"""Rows :math:`u_j = a_j \otimes b_j` of a constraint set, shape (N, d*d), with kinds and
    right-hand sides.

    .. math::

        u_j^\top w \ge c_j \ (\text{margin rows}), \qquad u_j^\top w = c_j \
        (\text{equality rows}), \qquad w = \mathrm{vec}(W) \in \mathbb{R}^{d^2}.

    Attributes
    ----------
    U : ndarray of shape (N, d*d)
        The rows :math:`u_j`, finite.
    kind : ndarray of int8, shape (N,)
        :data:`~svmgeo.MARGIN` or :data:`~svmgeo.EQUALITY` per row.
    rhs : ndarray of shape (N,)
        The right-hand sides :math:`c_j`, finite.
    d : int
        The token dimension (:math:`d \ge 1`).
    """

    U: np.ndarray
    kind: np.ndarray
    rhs: np.ndarray
    d: int

    def __post_init__(self) -> None:
        where = "TensorRows"
        hint = "Build the rows from a ConstraintSet with svmgeo.analysis.tensor_rows(cs)."
        d = check_int(self.d, "d", low=1, where=where)
        U = check_array(self.U, f"'U' of {where}", ndim=2, shape=(None, d * d), hint=hint)
        N = U.shape[0]
        rhs = check_array(self.rhs, f"'rhs' of {where}", ndim=1, shape=(N,), hint=hint)
        for name, value in (("U", U), ("kind", check_row_kinds(self.kind, N, where)), ("rhs", rhs),
                            ("d", d)):  # fmt: skip
            object.__setattr__(self, name, value)


def tensor_rows(cs: ConstraintSet) -> TensorRows:
    r"""The vector rows :math:`u_j = a_j \otimes b_j` of a :class:`~svmgeo.ConstraintSet`, so
    that :math:`a_j^\top W b_j = u_j^\top \mathrm{vec}(W)`.

    Parameters
    ----------
    cs : ConstraintSet

    Returns
    -------
    TensorRows
    """
    cs = check_constraint_set(cs, "tensor_rows")
    A, B = np.asarray(cs.A), np.asarray(cs.B)
    U = np.einsum("jp,jq->jpq", A, B).reshape(cs.N, cs.d * cs.d)
    return TensorRows(U=U, kind=np.asarray(cs.kind).copy(), rhs=np.asarray(cs.rhs).copy(), d=cs.d)


@summarized
@dataclass(frozen=True, eq=False)
class TensorSVM:
    r"""The Euclidean vector SVM :math:`\min \|w\|_2` s.t. :math:`u_j^\top w \ge c_j`
    (margin rows), :math:`= c_j` (equality rows).

    Attributes
    ----------
    feasible : bool
    w : ndarray of shape (d*d,) or None
    W : ndarray of shape (d, d) or None
        ``w.reshape(d, d)``.
    dual : ndarray of shape (N,) or None
        :math:`\lambda` with :math:`w = \sum_j \lambda_j u_j` (:math:`\lambda \ge 0` on margin rows);
        None beside a w when float64 cannot hold it (the message says why).
    margins : ndarray of shape (N,) or None
    primal_residual, dual_residual : float
        :math:`\max_j (c_j - u_j^\top w)_+` (and :math:`|\cdot|` on equality rows), and
        :math:`\max(\|w - U^\top\lambda\|, \max_j(-\lambda_j)_+)` with complementarity;
        the latter, whose terms have different units, on the rows of unit size where
        :func:`tensor_svm` rescaled them.
    message : str
    label : str
    farkas : ndarray of shape (N,) or None
        When infeasible: :math:`y` with :math:`y_j \ge 0` on margin rows, :math:`U^\top y
        = 0` and :math:`c^\top y > 0` (proved in exact arithmetic, on the caller's rows as
        floats, for the exact rational vector of which this is the float rounding:
        :math:`U^\top y` of the float vector is 0 to round-off only), which no w can meet.
        ``feasible`` is True only when the rows were proved feasible in exact arithmetic
        (:func:`~svmgeo.solvers.check_feasibility` on the caller's vector rows) and w meets
        every row in floats (to :math:`10^{-9}\max(1, \max_j|c_j|)` at unit size, the check
        of its margins); False with ``farkas`` None means undecided (said in ``message``).
    """

    feasible: bool
    w: np.ndarray | None
    W: np.ndarray | None
    dual: np.ndarray | None
    margins: np.ndarray | None
    primal_residual: float
    dual_residual: float
    message: str
    label: str = RECONSTRUCTION
    farkas: np.ndarray | None = None


_DUAL_TOL = 1e-8
"""The largest dual residual, relative to max(1, ||w||), of an answer :func:`tensor_svm` calls
solved (the solvers' default ``tol``)."""


def tensor_svm(rows: TensorRows | ConstraintSet, *, norm: str = "fro") -> TensorSVM:
    r"""Solve the vector hard-margin SVM on tensor rows by non-negative least squares.

    .. math::

        \min_{\mu \ge 0} \|U^\top \mu\|^2 + (c^\top \mu - 1)^2, \qquad
        w = U^\top \mu / (1 - c^\top \mu)

    (the KKT conditions of this NNLS, with :math:`\kappa = 1 - c^\top\mu > 0`, are those of
    :math:`\min\|w\|` s.t. :math:`Uw \ge c` with :math:`\lambda = \mu/\kappa`; equality rows
    enter as the two inequalities :math:`\pm u_j^\top w \ge \pm c_j`; :math:`\kappa = 0` means
    infeasible, with the Farkas vector :math:`\mu`). The rows with :math:`\mu_j > 0` are then
    polished by the least-norm solution of :math:`U_S w = c_S`, and the answer is feasible only
    when that w meets every row in floats (to :math:`10^{-9}\max(1, \max_j|c_j|)`) and the
    rows are proved feasible in exact arithmetic (:func:`~svmgeo.solvers.check_feasibility`
    on the vector rows: rows inconsistent by less than that tolerance pass it in floats, e.g.
    equality rows :math:`-w_1 = c_1`, :math:`-2w_1 = c_2` with :math:`2c_1 - c_2 =
    -1.1\cdot 10^{-16}`, which are infeasible), "solved" only when
    its dual residual is at most :math:`10^{-8}\max(1, \|w\|)` as well (else the message says
    feasible, not proved optimal), infeasible only with a
    Farkas vector proved in exact arithmetic (:func:`~svmgeo.solvers.check_feasibility` on the
    vector rows), else undecided. (At the optimum :math:`\kappa = 1/(1 + \|w\|^2)`, below
    round-off for :math:`\|w\| \gtrsim 10^8`: the verdict does not rest on :math:`\kappa`.)
    The NNLS runs on rows and bounds of unit size (:func:`~svmgeo.solvers.unit_rows`:
    :math:`U/s`, :math:`c/\gamma`, powers of two), the answer mapped back exactly
    (:math:`w` times :math:`\gamma/s`, :math:`\lambda` times :math:`\gamma/s^2`, the margins
    times :math:`\gamma`); nothing changes when :math:`\max|U|` and :math:`\max_j|c_j|` are
    within :math:`2^{\pm 20}` of 1. Every verdict is proved on the caller's rows
    (:func:`~svmgeo.solvers.check_feasibility` scales them itself): where the unit rows are not
    the caller's exactly (an entry far below the largest is subnormal at unit size, its bits
    lost, or 0), w is mapped back and its margins checked on the caller's rows, with ``dual``
    None and at best "feasible, not proved optimal".

    Parameters
    ----------
    rows : TensorRows or ConstraintSet
    norm : {"fro"}
        Only the Frobenius norm has a vector form; ``"nuc"`` raises a ProblemError.

    Returns
    -------
    TensorSVM

    Raises
    ------
    ProblemError
        A norm other than ``"fro"``, or rows whose answer float64 cannot hold (naming
        ``rhs`` and the rows, :func:`~svmgeo.solvers.unit_rows`).
    """
    entry, _ = parse_norm(norm, "tensor_svm")  # the table of norms
    if entry.name in _NO_VECTOR_FORM:
        raise _no_vector_form(entry.name, "tensor_svm")
    if entry is not NORMS["fro"]:
        raise ProblemError(
            f"The 'norm' parameter of tensor_svm must be 'fro'; got {norm!r}. Entrywise l_q "
            "norms have a vector form (the l_q SVM in R^(d*d)) but tensor_svm solves the "
            "Euclidean one only: use svmgeo.att_svm(data, norm=('lp', q))."
        )
    if isinstance(rows, ConstraintSet):
        rows = tensor_rows(rows)
    if not isinstance(rows, TensorRows):
        raise ProblemError(
            f"tensor_svm takes TensorRows (from tensor_rows) or a ConstraintSet; got "
            f"{type(rows).__name__}."
        )
    d = rows.d
    if rows.U.shape[0] == 0:  # no rows: w = 0 (and no NNLS of a matrix with no columns)
        w = np.zeros(d * d)
        return TensorSVM(True, w, w.reshape(d, d), np.zeros(0), np.zeros(0), 0.0, 0.0,
                         "solved: no rows, the least-norm w = 0")  # fmt: skip
    vector = _vector_rows(rows)
    unit, scale = unit_rows(vector, "tensor_svm")
    # every verdict is proved on the caller's rows: check_feasibility scales them itself and
    # proves on the rows given, and the unit rows may not be these rows (an entry far below
    # the largest is subnormal there, its bits lost, or 0); the rows are checked (unit_rows)
    verdict = decide_feasibility(vector, None, True, where="tensor_svm")
    out = _solve_vector(unit, d)
    exact = scale.identity or _scaled_exactly(vector, unit, scale.rows, scale.bounds)
    if not exact and out.w is not None:  # checked again on the caller's rows, never solved
        try:
            w_caller: np.ndarray | None = scale.w(out.w, "w")
        except ProblemError:  # no such w in float64
            w_caller = None
        out = _on_caller_rows(vector, w_caller, scale.gamma, d)
    if not (out.feasible and verdict.proof == "exact" and verdict.feasible):
        return _no_vector_solution(verdict, out.feasible)
    if scale.identity or not exact:  # as given, or already on the caller's rows
        return out
    w = scale.w(out.w, "w")
    message = out.message
    try:
        dual = scale.dual(out.dual, 2)  # w = U^T lambda: lambda scales like gamma / s^2
    except ProblemError as exc:  # w fits and its multipliers do not: w, not proved optimal
        dual = None
        message = (
            "feasible, not proved optimal on these rows (dual None; solved on them at unit "
            f"scale): {exc}"
        )
    return dataclasses.replace(
        out,
        w=w,
        W=w.reshape(d, d),
        dual=dual,
        margins=scale.bound(out.margins),
        primal_residual=scale.bound(out.primal_residual, "the primal residual"),
        message=message,
    )


def _scaled_exactly(vector: ConstraintSet, unit: ConstraintSet, rows: int, bounds: int) -> bool:
    r"""Whether the unit rows ``unit`` (:func:`~svmgeo.solvers.unit_rows`) are ``vector``'s
    divided by powers of two exactly: :math:`2^{\texttt{rows}} u'_j = u_j` and
    :math:`2^{\texttt{bounds}} c'_j = c_j` bit for bit, so that an answer on them is one on
    ``vector`` (not so where an entry far below the largest is subnormal or 0 at unit
    size)."""
    return bool(
        np.array_equal(np.ldexp(unit.A, rows), vector.A)
        and np.array_equal(np.ldexp(unit.rhs, bounds), vector.rhs)
    )


def _on_caller_rows(vector: ConstraintSet, w: np.ndarray | None, gamma: float, d: int) -> TensorSVM:
    r"""The NNLS's w from unit rows that are not ``vector``'s exactly (:func:`_scaled_exactly`),
    mapped back to ``w`` (None where float64 cannot hold it), on ``vector``: its margins
    computed on ``vector``'s own rows, ``feasible`` whether it meets every row in floats (to
    :math:`10^{-9}\max(\gamma, \max_j|c_j|)`, the unit rows' tolerance, :math:`\gamma` the
    bounds' scale). Never "solved": the NNLS's multipliers are those of other rows (``dual``
    None)."""
    if w is None or not np.all(np.isfinite(w)):
        return TensorSVM(False, None, None, None, None, np.inf, np.inf, "no w meets every row")
    with np.errstate(over="ignore", invalid="ignore"):
        margins = vector.A @ w
        primal = _primal_residual(vector, margins)
    met = bool(primal <= 1e-9 * max(gamma, float(np.abs(vector.rhs).max(initial=0.0))))
    message = (
        "feasible, not proved optimal: solved on the rows at unit size (U/s, c/gamma, powers "
        "of two), which lose bits of these rows (entries far below the largest are subnormal "
        "there, or 0); w meets every row of these in floats (dual None)"
    )
    return TensorSVM(met, w, w.reshape(d, d), None, margins, primal, np.inf, message)


def _vector_rows(rows: TensorRows) -> ConstraintSet:
    r"""The vector rows as a :class:`~svmgeo.ConstraintSet`: :math:`u_j^\top W' e_1 =
    u_j^\top w` (:math:`W'` of size :math:`d^2`, of which only the first column counts)."""
    first = np.zeros(rows.U.shape)
    first[:, 0] = 1.0
    return rows_without_tokens(rows.U, first, rows.kind, rows.rhs)


def _primal_residual(vector: ConstraintSet, margins: np.ndarray) -> float:
    r""":math:`\max_j (c_j - m_j)_+` over margin rows and :math:`|m_j - c_j|` over equality rows
    of ``vector`` at margins :math:`m` (nan where a margin is)."""
    c, eq = vector.rhs, vector.kind == EQUALITY
    viol = np.where(eq, np.abs(margins - c), np.maximum(c - margins, 0.0))
    return float(viol.max(initial=0.0))


def _solve_vector(vector: ConstraintSet, d: int) -> TensorSVM:
    r"""The NNLS's answer on the vector rows ``vector`` (:func:`_vector_rows`, of unit size):
    ``feasible`` whether its w meets every row in floats (to
    :math:`10^{-9}\max(1, \max_j|c_j|)`), no verdict (:func:`tensor_svm` proves that on the
    caller's rows)."""
    U, c, eq = vector.A, vector.rhs, vector.kind == EQUALITY
    n_rows = U.shape[0]
    Us = np.concatenate([U, -U[eq]])
    cs = np.concatenate([c, -c[eq]])
    M = np.vstack([Us.T, cs[None, :]])
    target = np.zeros(M.shape[0])
    target[-1] = 1.0
    mu, _ = nnls(M, target, maxiter=50 * M.shape[1] + 100)
    kappa = 1.0 - float(cs @ mu)
    scale = max(float(np.abs(cs).max(initial=0.0)), 1.0)
    # the rows the NNLS uses (mu / kappa's support when kappa > 0; kappa = 1 / (1 + |w|^2)
    # is below round-off once |w| is ~1e8, so the candidate does not wait for kappa)
    active = mu > 1e-12 * max(float(mu.max(initial=0.0)), 1e-300)
    lam_s = mu / kappa if kappa > 0.0 else np.zeros_like(mu)
    w = Us[active].T @ lam_s[active]
    if np.any(active):  # polish: least-norm solution of the active equalities
        w_pol = np.linalg.lstsq(Us[active], cs[active], rcond=None)[0]
        lam_pol = np.linalg.lstsq(Us[active].T, w_pol, rcond=None)[0]
        if np.all(lam_pol >= -1e-12 * max(float(np.abs(lam_pol).max()), 1.0)):
            w = w_pol
            lam_s = np.zeros_like(lam_s)
            lam_s[active] = lam_pol
    margins = U @ w
    primal = _primal_residual(vector, margins)
    if not (np.all(np.isfinite(w)) and primal <= 1e-9 * scale):
        return TensorSVM(False, None, None, None, None, np.inf, np.inf, "no w meets every row")
    dual = lam_s[:n_rows].copy()
    dual[eq] -= lam_s[n_rows:]
    with np.errstate(over="ignore", invalid="ignore"):  # multipliers beyond float64: not solved
        dual_res = max(
            float(np.linalg.norm(w - U.T @ dual)),
            float(np.maximum(-dual[~eq], 0.0).max(initial=0.0)),
            float(np.abs(dual[~eq] * (margins[~eq] - c[~eq])).max(initial=0.0)),
        )
        relative = dual_res / max(1.0, float(np.linalg.norm(w)))
    message = (
        "solved: vector SVM by NNLS, active rows polished"
        if relative <= _DUAL_TOL
        else f"feasible, not proved optimal: the NNLS's w meets every row, but its dual "
        f"residual is {relative:.1e} of ||w|| (an ill-conditioned SVM); svmgeo.solve_svm on "
        "the ConstraintSet checks its answer with a KKT certificate"
    )
    return TensorSVM(True, w, w.reshape(d, d), dual, margins, primal, dual_res, message)


def _no_vector_solution(verdict: FeasibilityResult, met: bool) -> TensorSVM:
    r""":func:`tensor_svm`'s answer without a proved feasible w: infeasible only with a Farkas
    vector proved in exact arithmetic by :func:`~svmgeo.solvers.check_feasibility` on the
    vector rows (:func:`_vector_rows`), its ``verdict``; else undecided, saying whether the
    rows were proved feasible. ``met``: whether the NNLS's w met every row in floats (to
    :math:`10^{-9}\max(1, \max_j|c_j|)`), which rows inconsistent by less than that do: two
    equality rows :math:`2 c_1 - c_2 = -1.1\cdot 10^{-16}` apart, exactly. (The NNLS's own
    :math:`\mu` is no proof either: :math:`U^\top\mu` is small, not 0, whenever the optimal
    :math:`\|w\|` is beyond :math:`\sim 10^8`, where :math:`\kappa = 1/(1 + \|w\|^2)` is below
    round-off.)"""
    nnls = (
        "the NNLS's w meets every row in floats, to 1e-9 of max(1, max|c_j|) at unit "
        "size, as rows inconsistent by less do too"
        if met
        else "the NNLS gave no w meeting every row"
    )
    if verdict.proof == "exact" and verdict.farkas is not None:
        return TensorSVM(False, None, None, None, None, np.inf, np.inf,
                         "infeasible: Farkas vector y >= 0 (margin rows) with U^T y = 0 and "
                         "c^T y > 0, proved in exact arithmetic (svmgeo.check_feasibility)"
                         + (f"; {nnls}" if met else ""),
                         farkas=np.asarray(verdict.farkas))  # fmt: skip
    # the verdict is the vector rows' u_j, which only round a ConstraintSet's vec(a_j b_j^T)
    if verdict.proof == "exact" and verdict.feasible:
        why = ("the vector rows u_j are feasible (proved by svmgeo.check_feasibility on them), "
               "but the optimal w is too large for the NNLS's accuracy (an ill-conditioned "
               "SVM); try svmgeo.solve_svm on the ConstraintSet the rows came from (it "
               "decides on the token rows, which u_j only rounds)")  # fmt: skip
    else:
        why = (f"svmgeo.check_feasibility did not prove a verdict on the vector rows u_j "
               f"{'' if met else 'either '}({verdict.status}); on the ConstraintSet the rows "
               "came from it decides on the token rows (a_j, b_j), of which u_j = "
               "vec(a_j b_j^T) is only the rounded product")  # fmt: skip
    return TensorSVM(False, None, None, None, None, np.inf, np.inf,
                     f"undecided: {nnls}; {why}")  # fmt: skip
