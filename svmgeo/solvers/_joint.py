# SPDX-License-Identifier: BSD-3-Clause
r"""The prediction for joint (head, attention) training: the head SVM and the relaxed SVM.

Tarzanagh, Li, Zhang, Oymak (arXiv:2306.13596) train the head :math:`v` and the prompt
:math:`p` together. Their prediction (docs/companion.md says what is proved, and where):

.. math::

    v^{\mathrm{mm}} = \arg\min_v \|v\| \ \text{s.t.}\ Y_{ik}\, v^\top u_{i\alpha_{ik}} \ge 1,
    \qquad
    p^{\mathrm{relax}} = \arg\min_p \|p\| \ \text{s.t.}\
    (x_{i\alpha_{ik}} - x_{it})^\top p \ge \begin{cases} 1 & (i, k) \in S \\
    0 & (i, k) \notin S \end{cases}

with :math:`S` the queries on :math:`v^{\mathrm{mm}}`'s margin (its support vectors). svmgeo
solves both with the generic solver (the head SVM as rows :math:`Y_{ik} u_{i\alpha_{ik}}^\top
W e_1 \ge 1`), decides :math:`S` exactly when it can (a rational KKT proof of
:math:`v^{\mathrm{mm}}`), and extends the relaxed SVM to ``param="W"`` (queries :math:`z_{ik}`).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Literal

import flint
import numpy as np

from .._errors import ProblemError
from .._summary import summarized
from .._validation import check_real
from ..constraints import ConstraintSet
from ..data import TokenData
from ..selection import check_data, check_selection, optimal_tokens
from ._api import _solve, check_param, svm_constraints, with_prompt
from ._prompt import head_constraints, query_margins
from ._result import SVMResult, warns_if_inaccurate
from ._status import Status

__all__ = ["EXACT_SUPPORT_LIMIT", "JointSVMResult", "exact_support", "joint_svm"]

EXACT_SUPPORT_LIMIT = 200_000
"""Largest n·K·d_u for which the support of the head SVM is proved in rational arithmetic."""


@summarized
@dataclass(frozen=True, eq=False)
class JointSVMResult:
    r"""The head SVM :math:`v^{\mathrm{mm}}` and the relaxed attention SVM it induces.

    Attributes
    ----------
    status : Status
        The worse of the two parts: a part without a solution gives its own status (the head
        first); otherwise ``OPTIMAL_INACCURATE`` when either part is inaccurate, else
        ``OPTIMAL``. ``message`` says which part.
    message : str
    param : {"p", "W"}
        The attention parameterization of the relaxed SVM.
    alpha : ndarray of int, shape (n,) or (n, K)
        The selection both SVMs were built on.
    head : SVMResult
        :math:`\min\|v\|` s.t. :math:`Y_{ik} v^\top u_{i\alpha_{ik}} \ge 1`, solved as rows
        :math:`Y_{ik} u_{i\alpha_{ik}}^\top W e_1 \ge 1` (so ``head.W`` is :math:`v\,e_1^\top`,
        ``head.dual`` the multipliers); infeasible head data give its Farkas vector there.
    v : ndarray of shape (d_u,) or None
        :math:`v^{\mathrm{mm}}` (``head.W[:, 0]``).
    head_margins : ndarray of shape (n,) or (n, K), or None
        :math:`Y_{ik}\, v^{\mathrm{mm}\top} u_{i\alpha_{ik}}` (1 on the support).
    support : ndarray of bool, shape (n,) or (n, K), or None
        The queries (inputs) on :math:`v^{\mathrm{mm}}`'s margin.
    support_proof : {"exact", "tolerance"} or None
        ``"exact"``: :math:`v^{\mathrm{mm}}` was proved optimal in rational arithmetic and the
        support is the set of rows with exact margin 1. ``"tolerance"``: the margin is within
        ``support_tol`` (relative) of 1 on the certified float solution.
    margin : ndarray of shape (n,) or (n, K), or None
        The right-hand sides :math:`c_{ik}` of the relaxed SVM: 1 on the support, 0 elsewhere.
    attention : SVMResult or None
        The relaxed SVM (its ``constraints`` hold the rows and right-hand sides); None when the
        head SVM has no solution.
    p : ndarray of shape (d,) or None
        :math:`p^{\mathrm{relax}}` for ``param="p"``.
    W : ndarray of shape (d, d) or None
        :math:`W^{\mathrm{relax}}` for ``param="W"``.
    """

    status: Status
    message: str
    param: str
    alpha: np.ndarray
    head: SVMResult
    v: np.ndarray | None
    head_margins: np.ndarray | None
    support: np.ndarray | None
    support_proof: Literal["exact", "tolerance"] | None
    margin: np.ndarray | None
    attention: SVMResult | None
    p: np.ndarray | None = None
    W: np.ndarray | None = None

    @property
    def success(self) -> bool:
        """True when both parts are certified optimal (``status`` is ``OPTIMAL``)."""
        return self.status.success

    def summary(self) -> str:
        """The joint verdict, the support, then the summaries of both SVMs."""
        lines = [f"Joint SVM (param={self.param!r}): {self.status.value}", f"  {self.message}"]
        if self.support is not None:
            n_sup = int(np.count_nonzero(self.support))
            lines.append(
                f"  support    {n_sup} of {self.support.size} queries on v^mm's margin "
                f"(decided: {self.support_proof})"
            )
        lines += ["Head SVM (v^mm):", _indent(self.head.summary())]
        if self.attention is not None:
            lines += ["Relaxed attention SVM:", _indent(self.attention.summary())]
        return "\n".join(lines)


def _indent(text: str) -> str:
    return "\n".join("  " + line for line in text.splitlines())


def _fmpq(x: float) -> flint.fmpq:
    return flint.fmpq(*Fraction(float(x)).as_integer_ratio())


def exact_support(cs: ConstraintSet, candidates: list[np.ndarray]) -> np.ndarray | None:
    r"""Prove :math:`w^\star = \arg\min\|w\|` s.t. :math:`a_j^\top w \ge 1` in rational arithmetic,
    and return its support :math:`\{j : a_j^\top w^\star = 1\}` (bool, shape (N,)), or None.

    For each candidate active set :math:`D`: take a maximal independent subset :math:`P`
    (pivots of the exact Gram matrix), solve :math:`A_PA_P^\top\mu = \mathbf 1` exactly and set
    :math:`w = A_P^\top\mu`. KKT holds, so :math:`w = w^\star` (the objective is strictly
    convex), when :math:`\mu \ge 0` and :math:`a_j^\top w \ge 1` for every row, all checked
    without rounding on the float rows :math:`a_j` (``cs.A``; every ``cs.B`` row is
    :math:`e_1`).
    """
    N, d = cs.A.shape
    A = flint.fmpq_mat(N, d, [_fmpq(x) for x in cs.A.ravel()])
    ones = flint.fmpq(1)
    tried: set[tuple[int, ...]] = set()
    for D in candidates:
        key = tuple(int(j) for j in D)
        if not key or key in tried:
            continue
        tried.add(key)
        AD = flint.fmpq_mat([[A[j, c] for c in range(d)] for j in key])
        R, rank = (AD * AD.transpose()).rref()
        pivots = [next(c for c in range(len(key)) if R[r, c] != 0) for r in range(rank)]
        AP = flint.fmpq_mat([[AD[j, c] for c in range(d)] for j in pivots])
        mu = (AP * AP.transpose()).solve(flint.fmpq_mat(rank, 1, [ones] * rank))
        if any(mu[r, 0] < 0 for r in range(rank)):
            continue
        w = AP.transpose() * mu  # (d, 1)
        m = A * w
        if all(m[j, 0] >= ones for j in range(N)):
            return np.array([m[j, 0] == ones for j in range(N)], dtype=bool)
    return None


def _combined_status(head: SVMResult, attention: SVMResult | None) -> tuple[Status, str]:
    if not head.status.has_solution:
        return head.status, f"head SVM {head.status.value}: {head.message}"
    assert attention is not None  # solved whenever the head has a solution
    if not attention.status.has_solution:
        return attention.status, f"relaxed SVM {attention.status.value}: {attention.message}"
    bad = [
        f"{name} SVM {res.status.value}: {res.message}"
        for name, res in (("head", head), ("relaxed", attention))
        if not res.status.success
    ]
    if bad:
        return Status.OPTIMAL_INACCURATE, "; ".join(bad)
    return Status.OPTIMAL, "both SVMs certified optimal"


def _user_shape(x: np.ndarray, data: TokenData) -> np.ndarray:
    return x[:, 0] if data.single_query else x


@warns_if_inaccurate("joint_svm")
def joint_svm(
    data: TokenData,
    alpha: Any = None,
    *,
    param: Literal["p", "W"] = "p",
    norm: Literal["fro", "nuc"] | tuple[str, float] = "fro",
    method: Literal["auto", "fast", "cvxpy"] = "auto",
    tol: float = 1e-8,
    support_tol: float = 1e-6,
    exact: bool = True,
) -> JointSVMResult:
    r"""The prediction for joint training of the head and the attention: :math:`v^{\mathrm{mm}}`
    and the relaxed SVM of its support vectors.

    .. math::

        v^{\mathrm{mm}} = \arg\min_v \|v\|_2 \ \text{s.t.}\ Y_{ik}\, v^\top u_{i\alpha_{ik}} \ge 1;
        \qquad
        \min \|p\| \ \text{s.t.}\ (x_{i\alpha_{ik}} - x_{it})^\top p \ge c_{ik},\quad
        c_{ik} = [\,Y_{ik}\, v^{\mathrm{mm}\top} u_{i\alpha_{ik}} = 1\,]

    (``param="W"``: :math:`(x_{i\alpha_{ik}} - x_{it})^\top W z_{ik} \ge c_{ik}`). :math:`u` are
    the head features ``data.values``, :math:`x` the attention tokens ``data.X``. When every
    query is a support vector the relaxed SVM is the p-SVM (Att-SVM) itself.

    Parameters
    ----------
    data : TokenData
        Tokens, labels and head features; the head ``v`` is used only for the default
        ``alpha``.
    alpha : array of int, shape (n,) or (n, K), optional
        The selected tokens; default the optimal tokens of ``data`` (needs ``v`` or
        ``scores``; ties raise :class:`~svmgeo.TieError`).
    param : {"p", "W"}, default "p"
        The attention of the relaxed SVM: the prompt vector, or the query-dependent W.
    norm : {"fro", "nuc"} or ("lp", q), default "fro"
        Norm of the relaxed SVM (as in :func:`att_svm`); the head SVM is always Euclidean.
    method, tol
        As in :func:`solve_svm`, for both SVMs.
    support_tol : float in (0, 1), default 1e-6
        Where the exact proof is not available (``exact=False``, n·K·d_u above
        :data:`EXACT_SUPPORT_LIMIT`, or a failed proof), query (i, k) is a support vector
        when :math:`m_{ik} - 1 \le \mathrm{support\_tol}\cdot\max(1, |m_{ik}|)` for its head
        margin :math:`m_{ik}` (the rule of :func:`~svmgeo.support_tokens`).
    exact : bool, default True
        Prove both feasibility verdicts in exact arithmetic (as :func:`solve_svm`) and decide
        the support from an exact KKT proof of :math:`v^{\mathrm{mm}}`.

    Returns
    -------
    JointSVMResult
        Infeasible head data (no v separates the selected tokens' labels) give
        ``status=INFEASIBLE``, ``head.farkas`` the certificate and no relaxed SVM; infeasible
        relaxed rows give the relaxed SVM's Farkas vector in ``attention.farkas``.

    Raises
    ------
    ProblemError
        Invalid ``data``, ``alpha``, ``param``, ``norm``, ``method`` or tolerances; no
        ``alpha`` and no way to compute the optimal tokens.

    Warns
    -----
    InaccurateSolutionWarning
        When the status is ``*_INACCURATE``, at the caller's line.

    References
    ----------
    .. [1] D. A. Tarzanagh, Y. Li, X. Zhang, S. Oymak, "Max-Margin Token Selection in
       Attention Mechanism", NeurIPS 2023, arXiv:2306.13596, the joint (v, p)
       regularization path (docs/companion.md for its hypotheses).

    Examples
    --------
    >>> import numpy as np, svmgeo as sg
    >>> X = np.array([[[0, 0], [1, 1]], [[0, 0], [1, -1]], [[0, 0], [0.5, 1.5]]])
    >>> data = sg.TokenData(X, Y=[1, -1, 1], v=[0.0, 1.0], Z=np.ones((3, 2)))
    >>> res = sg.joint_svm(data)
    >>> res.support, res.support_proof
    (array([ True,  True, False]), 'exact')
    """
    where = "joint_svm"
    data = check_data(data, where)
    kind = check_param(param, where)
    support_tol = check_real(
        support_tol, "support_tol", low=0.0, high=1.0, low_open=True, high_open=True, where=where
    )
    if alpha is None:
        if data.v is None and data.scores is None:
            raise ProblemError(
                "joint_svm needs the selected tokens: pass alpha (one token index per query), "
                "or give the TokenData a head v or scores so that the optimal tokens are "
                "defined."
            )
        alpha = optimal_tokens(data)
    a = check_selection(data, alpha)
    options: dict[str, Any] = {
        "method": method,
        "tol": tol,
        "rank": None,
        "solver": None,
        "seed": None,
        "n_restarts": None,
        "max_iter": None,
        "exact": exact,
        "where": where,
    }
    head = _solve(head_constraints(data, a), norm="fro", **options)
    head = dataclasses.replace(head, extras={**head.extras, "param": "v"})
    common: dict[str, Any] = {"param": kind, "alpha": _user_shape(a, data), "head": head}
    if not head.status.has_solution or head.W is None or head.margins is None:
        status, message = _combined_status(head, None)
        return JointSVMResult(
            status=status,
            message=f"{message}; no relaxed SVM without v^mm",
            v=None,
            head_margins=None,
            support=None,
            support_proof=None,
            margin=None,
            attention=None,
            **common,
        )
    v = np.array(head.W[:, 0])
    m = np.asarray(head.margins, dtype=float)
    by_tol = m - 1.0 <= support_tol * np.maximum(1.0, np.abs(m))
    support, proof = by_tol, "tolerance"
    if exact and head.constraints.A.size <= EXACT_SUPPORT_LIMIT and head.dual is not None:
        lam = np.asarray(head.dual, dtype=float)
        positive = np.flatnonzero(lam > 1e-9 * max(float(lam.max(initial=0.0)), 1e-300))
        proved = exact_support(head.constraints, [positive, np.flatnonzero(by_tol | (lam > 0))])
        if proved is not None:
            support, proof = proved, "exact"
    rhs = support.astype(float).reshape(data.n, data.K)
    rows = svm_constraints(data, a, kind)
    rows = dataclasses.replace(rows, rhs=query_margins(data, rhs, rows))
    attention = with_prompt(_solve(rows, norm=norm, **options), kind)
    status, message = _combined_status(head, attention)
    if proof == "tolerance":
        message += f"; support decided within support_tol={support_tol:g} (not proved exactly)"
    W_rel = attention.W if kind == "W" else None
    return JointSVMResult(
        status=status,
        message=message,
        v=v,
        head_margins=_user_shape(m.reshape(data.n, data.K), data),
        support=_user_shape(support.reshape(data.n, data.K), data),
        support_proof=proof,  # type: ignore[arg-type]
        margin=_user_shape(rhs, data),
        attention=attention,
        p=attention.p,
        W=W_rel,
        **common,
    )
