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
from fractions import Fraction
from typing import Any, Literal

import flint
import numpy as np

from .._errors import ProblemError
from .._validation import check_real
from ..constraints import ConstraintSet
from ..data import TokenData
from ..selection import check_data, check_selection, optimal_tokens
from ._api import check_param, solve_for, svm_constraints, with_prompt
from ._prompt import head_constraints, query_margins
from ._result import JointSVMResult, finish_joint, replaced, warns_if_inaccurate
from ._status import Status

__all__ = ["EXACT_SUPPORT_LIMIT", "JointSVMResult", "exact_support", "joint_svm"]

EXACT_SUPPORT_LIMIT = 200_000
"""Largest n·K·d_u for which the support of the head SVM is proved in rational arithmetic."""


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


def _support_candidates(lam: np.ndarray, near: np.ndarray) -> list[np.ndarray]:
    r"""Candidate active sets of the head SVM for :func:`exact_support`, each ordered by
    decreasing multiplier (its pivots are the heaviest independent rows): the rows with
    :math:`\lambda_j > 10^{-9}\max\lambda`, the rows ``near`` their bound or with
    :math:`\lambda_j > 0`, and the latter without its 1, 2, 3 lightest rows. Nearly dependent
    rows spread the float multipliers over more rows than the optimum's support (three rows in
    the plane, say), where the first independent rows in index order may not be that support.
    """
    order = np.argsort(-lam, kind="stable")
    positive = order[lam[order] > 1e-9 * max(float(lam.max(initial=0.0)), 1e-300)]
    wide = order[(near | (lam > 0))[order]]
    return [positive, wide] + [wide[:-k] for k in (1, 2, 3) if wide.size > k]


def _user_shape(x: np.ndarray, data: TokenData) -> np.ndarray:
    return x[:, 0] if data.single_query else x


@warns_if_inaccurate("joint_svm")
def joint_svm(
    data: TokenData,
    alpha: Any = None,
    *,
    param: Literal["p", "W"] = "p",
    norm: Literal["fro", "nuc", "spectral"] | tuple[str, float] = "fro",
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
    norm : {"fro", "nuc", "spectral"} or ("lp", q), default "fro"
        Norm of the relaxed SVM (as in :func:`att_svm`); the head SVM is always Euclidean.
    method, tol
        As in :func:`solve_svm`, for both SVMs.
    support_tol : float in (0, 1), default 1e-6
        Where the exact proof is not available (``exact=False``, n·K·d_u above
        :data:`EXACT_SUPPORT_LIMIT`, or a failed proof), query (i, k) is a support vector
        when :math:`m_{ik} - 1 \le \mathrm{support\_tol}\cdot\max(1, |m_{ik}|)` for its head
        margin :math:`m_{ik}` (the rule of :func:`~svmgeo.support_tokens`). After a failed
        proof the status is at best ``OPTIMAL_INACCURATE`` (message "undecided: ..."): the
        relaxed SVM is then certified for a support that is not proved.
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
    options: dict[str, Any] = {"method": method, "tol": tol, "exact": exact, "where": where}
    head = solve_for(head_constraints(data, a), norm="fro", **options)
    head = replaced(head, extras={**head.extras, "param": "v"})
    common: dict[str, Any] = {"param": kind, "alpha": _user_shape(a, data)}
    if not head.status.has_solution or head.W is None or head.margins is None:
        return finish_joint(
            head,
            None,
            note="no relaxed SVM without v^mm",
            v=None,
            head_margins=None,
            support=None,
            support_proof=None,
            margin=None,
            **common,
        )
    v = np.array(head.W[:, 0])
    m = np.asarray(head.margins, dtype=float)
    by_tol = m - 1.0 <= support_tol * np.maximum(1.0, np.abs(m))
    support, proof = by_tol, "tolerance"
    attempted = exact and head.constraints.A.size <= EXACT_SUPPORT_LIMIT and head.dual is not None
    if attempted:
        lam = np.asarray(head.dual, dtype=float)
        proved = exact_support(head.constraints, _support_candidates(lam, by_tol))
        if proved is not None:
            support, proof = proved, "exact"
    rhs = support.astype(float).reshape(data.n, data.K)
    rows = svm_constraints(data, a, kind)
    rows = dataclasses.replace(rows, rhs=query_margins(data, rhs, rows))
    attention = with_prompt(solve_for(rows, norm=norm, **options), kind)
    note = (
        f"support decided within support_tol={support_tol:g} (not proved exactly"
        + ("; its exact proof failed)" if attempted else ")")
        if proof == "tolerance"
        else ""
    )
    W_rel = attention.W if kind == "W" else None
    res = finish_joint(
        head,
        attention,
        note=note,
        v=v,
        head_margins=_user_shape(m.reshape(data.n, data.K), data),
        support=_user_shape(support.reshape(data.n, data.K), data),
        support_proof=proof,
        margin=_user_shape(rhs, data),
        p=attention.p,
        W=W_rel,
        **common,
    )
    if attempted and proof == "tolerance" and res.status is Status.OPTIMAL:
        # the relaxed SVM is certified for a support that is not: p^relax may be another S's
        return dataclasses.replace(
            res, status=Status.OPTIMAL_INACCURATE, message=f"undecided: {res.message}"
        )
    return res
