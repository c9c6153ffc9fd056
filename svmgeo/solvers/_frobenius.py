# SPDX-License-Identifier: BSD-3-Clause
r"""Exact Frobenius-norm Att-SVM over a token-pair constraint set.

.. math::

    \min_W \tfrac12 \|W\|_F^2 \quad\text{s.t.}\quad a_j^\top W b_j \ge c_j\ (j \in \mathcal M),
    \qquad a_j^\top W b_j = c_j\ (j \in \mathcal E).

Its dual is the quadratic program

.. math::

    \max_\lambda\ c^\top \lambda - \tfrac12 \lambda^\top G \lambda, \qquad
    \lambda_j \ge 0\ (j \in \mathcal M), \qquad G = (AA^\top)\circ(BB^\top),

and :math:`W = \sum_j \lambda_j a_j b_j^\top`. svmgeo works either with :math:`G` (N×N) or with
compressed features :math:`\phi_j = \mathrm{vec}(U^\top a_j b_j^\top V)` of length
:math:`r_1 r_2` (U, V orthonormal bases of span{a_j}, span{b_j}), whichever is smaller.

Methods, in order, until one settles: a warm start (e.g. from the feasibility check); with
:math:`G`, a dense primal-dual active-set method started from "every row tight" (one Cholesky
factor of G serves every round through a Schur complement); a Mehrotra interior-point method on
the dual; Clarabel's direct API on the same QP. Every answer is *polished*: its active set is
solved exactly as an equality-constrained least-norm problem (margins equal :math:`c_j` up to
round-off), rows are dropped or added until the KKT conditions hold, and the certificate is
recomputed from the data.

On barely feasible problems (low d, :math:`\|W\|` of 1e3 and beyond) the multipliers are of
order :math:`\|W\|^2` and cancel, so margins computed as :math:`G\lambda` carry round-off far
above the certificate's tolerance. When the polish in :math:`G` does not settle or does not
certify, the active set is polished once more on the primal in compressed features
(:func:`polish_features`: :math:`w = \Phi_S^+ c_S`, margins :math:`\Phi w` accurate to
:math:`\epsilon\|\phi_j\|\|w\|`). What float64 can certify: margins of :math:`W` carry
round-off :math:`\sim\epsilon\|a_j\|\|W\|\|b_j\|` and the stationarity residual
:math:`\sim\epsilon\sum_j\lambda_j\|a_j\|\|b_j\|/\|W\| \approx \epsilon\|W\|` (for
:math:`c = 1`), so the 1e-8 certificate holds up to :math:`\|W\|\,\|a_j\|\|b_j\|` of about
1e7 (later when little cancels: the one-sequence wedge in the tests certifies at 8e8); an
uncertified answer is an honest ``OPTIMAL_INACCURATE``. Problems within 1e-9
(relative) of an infeasible one are reported ``INFEASIBLE`` with a Farkas vector verified to
that tolerance (:func:`check_feasibility`).
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from .._errors import ProblemError, SolverError
from .._validation import check_iterations, check_real
from ..constraints import ConstraintSet, check_constraint_set
from ._certificates import FRO, lift_kkt_pair
from ._feasibility import compiled_path
from ._frobenius_matfree import solve_frobenius_matfree, use_matrix_free
from ._geometry import RowGeometry
from ._qp import clarabel_qp, interior_point, polish_active_set, polish_features
from ._result import POLISHED, SVMResult, finish, no_solution, replaced
from ._scale import unit_rows
from ._status import Status
from ._threads import one_blas_thread_when_small

__all__ = ["frobenius", "solve_frobenius"]

_DEFAULT_MAX_ITER = 100
"""Default interior-point iterations of :func:`solve_frobenius` (and of :func:`frobenius`)."""
_DEFAULT_MAX_ROUNDS = 30
"""Default active-set rounds of :func:`solve_frobenius` (and of :func:`frobenius`)."""
_METHODS = (("ipm", "the interior-point method"), ("clarabel", "Clarabel's QP"))
"""The QP methods tried in turn until one's answer polishes: (key, name in messages)."""


@one_blas_thread_when_small
def solve_frobenius(
    cs: ConstraintSet,
    *,
    tol: float = 1e-8,
    max_iter: int = _DEFAULT_MAX_ITER,
    max_rounds: int = _DEFAULT_MAX_ROUNDS,
    geometry: RowGeometry | None = None,
    warm_start: np.ndarray | None = None,
) -> SVMResult:
    r"""Solve the Frobenius-norm Att-SVM over ``cs`` exactly.

    .. math::

        W^{\mathrm{mm}} = \arg\min_W \|W\|_F \quad\text{s.t.}\quad
        a_j^\top W b_j \ge c_j\ (\text{margin rows}),\quad a_j^\top W b_j = c_j\
        (\text{equality rows}),

    through its dual :math:`\max_\lambda c^\top\lambda - \tfrac12\lambda^\top G\lambda`,
    :math:`\lambda \ge 0` on margin rows, :math:`W = \sum_j \lambda_j a_j b_j^\top`.

    Parameters
    ----------
    cs : ConstraintSet
        The rows. The problem is assumed feasible (:func:`solve_svm` checks first); when it is
        not, a non-success status is returned, never an exception. Nothing is proved here
        (``proof`` is None): ``OPTIMAL`` is the floating-point certificate alone, which rows
        inconsistent by one ulp pass (docs/certificates.md, "What proof means").
    tol : float in (0, 1], default 1e-8
        Tolerance of svmgeo's certificate check (relative residuals, SPEC §6); the inner
        methods stop at their own, tighter tolerances.
    max_iter : int, default 100
        Interior-point iterations (and Clarabel's, its fallback), at most 2**31 - 1.
    max_rounds : int, default 30
        Active-set rounds of the fast path and of the polish, at most 2**31 - 1.
    geometry : RowGeometry, optional
        The rows' Gram matrix / features (and its cached factor) when already computed for
        ``cs`` (e.g. by :func:`check_feasibility`); built here otherwise, and not used when
        the rows are rescaled (below).
    warm_start : ndarray of shape (N,), optional
        Approximate multipliers λ; their active set is polished first. Another shape raises
        :class:`~svmgeo.ProblemError`.

    Returns
    -------
    SVMResult
        ``objective`` = :math:`\|W\|_F`, ``dual`` = λ, ``margins`` = :math:`a_j^\top W b_j`,
        ``solver`` = ``"svmgeo-active-set"``, ``"svmgeo-ipm"`` or ``"svmgeo-clarabel"`` (the
        method whose answer was polished), certificate attached. Rows with
        :math:`\max|a|\max|b|` or bounds :math:`\max_j|c_j|` outside :math:`2^{\pm 20}` are
        solved, as by :func:`solve_svm`, on rows and bounds of unit size (powers of two:
        exact), and the answer mapped back (``extras["row_scale"]``, ``extras["rhs_scale"]``).

    Raises
    ------
    ProblemError
        When float64 cannot hold the answer: :math:`W` scales like
        :math:`\max_j|c_j| / (\max|a|\max|b|)` and λ like
        :math:`\max_j|c_j| / (\max|a|\max|b|)^2`; each must be finite (below
        :math:`2^{1024} \approx 1.8\cdot 10^{308}`, with the objective and the margins) and,
        when not 0, at least :math:`2^{-1022}`; and :math:`\max|a|\max|b|` must lie in
        :math:`[2^{-1022}, 2^{1024})`. The error names ``rhs``, ``A`` and ``B`` and how to
        rescale (:mod:`~svmgeo.solvers._scale`).

    References
    ----------
    .. [1] D. A. Tarzanagh, Y. Li, C. Thrampoulidis, S. Oymak, "Transformers as Support Vector
       Machines", arXiv:2308.16898, Section 2 (Att-SVM) and Lemma 1.
    """
    where = "solve_frobenius"
    cs = check_constraint_set(cs, where)
    tol = check_real(tol, "tol", low=0.0, high=1.0, low_open=True, where=where)
    max_iter = check_iterations(max_iter, "max_iter", where=where)
    max_rounds = check_iterations(max_rounds, "max_rounds", where=where)
    rows, scale = unit_rows(cs, where)
    if not scale.identity:  # rows and bounds of unit size, as solve_svm solves them
        if warm_start is not None and np.shape(warm_start) == (cs.N,):  # else refused there
            warm_start = scale.inverse().dual_hint(warm_start, FRO.dual_degree)
        geometry = None
    res = frobenius(rows, tol=tol, max_iter=max_iter, max_rounds=max_rounds, geometry=geometry,
                    warm_start=warm_start)  # fmt: skip
    return res if scale.identity else scale.result(res, FRO, tol)


def frobenius(
    cs: ConstraintSet,
    *,
    tol: float,
    max_iter: int = _DEFAULT_MAX_ITER,
    max_rounds: int = _DEFAULT_MAX_ROUNDS,
    geometry: RowGeometry | None,
    warm_start: np.ndarray | None,
) -> SVMResult:
    """:func:`solve_frobenius` for svmgeo's own callers: the arguments already checked, the
    caller's BLAS limit kept (:func:`~._threads.blas_threads`)."""
    start = time.perf_counter()
    N, d = cs.N, cs.d
    if warm_start is not None and np.shape(warm_start) != (N,):
        raise ProblemError(
            f"The 'warm_start' parameter of solve_frobenius must be multipliers of shape (N,) = "
            f"({N},), one per row of cs; got shape {np.shape(warm_start)}. Pass the 'dual' of a "
            "result over the same rows, or None."
        )
    if N == 0:
        W = np.zeros((d, d))
        return finish(
            cs,
            W,
            np.zeros(0),
            norm=FRO,
            tol=tol,
            status=Status.OPTIMAL,
            message="no constraints: W = 0",
            solver="svmgeo-active-set",
            margins=np.zeros(0),
            solve_time=time.perf_counter() - start,
        )

    if geometry is None and use_matrix_free(cs):  # no Gram where it would not fit in memory
        return solve_frobenius_matfree(cs, tol=tol, max_rounds=max_rounds, warm_start=warm_start)
    geo = RowGeometry(cs) if geometry is None or geometry.cs is not cs else geometry
    extras: dict[str, Any] = {"representation": geo.kind}
    if geo.compiled and warm_start is None:
        # fast path: primal-dual active set from "every row tight", compiled (None: the
        # Python polish below decides)
        if (answer := compiled_path().polished(geo, tol, start, extras)) is not None:
            return answer
    if geo.kind == "primal":
        extras["compressed_dim"] = int(geo.Phi.shape[1]) if geo.Phi is not None else 0
    n_iter = 0
    settled = converged = False
    solver = "svmgeo-active-set"
    lam = np.zeros(N)
    if warm_start is not None:
        lam0 = np.asarray(warm_start, dtype=float)
        S0 = ~geo.margin | (lam0 > geo.matvec(lam0) - geo.c)
        lam, rounds, settled = polish_active_set(geo, lam0, S0, max_rounds=max_rounds)
        extras["warm_start_rounds"] = rounds
        n_iter += rounds
        solver = "svmgeo-warm-start"
    if geo.kind == "dual" and not settled:
        # fast path: primal-dual active set from "every row tight"
        lam, rounds, settled = polish_active_set(geo, None, None, max_rounds=8)
        extras["active_set_rounds"] = rounds
        n_iter += rounds
    starts: list[np.ndarray] = []  # working sets suggested by the raw solutions
    failures: list[str] = []  # why a method gave no usable multipliers
    converged_by = ""  # the method whose unpolished answer is kept
    for method, name in _METHODS:
        if settled:
            break
        try:
            if method == "ipm":
                lam_raw, its, ok = interior_point(geo, solver_tol=1e-10, max_iter=max_iter)
            else:
                lam_raw, its, ok = clarabel_qp(geo, max_iter=max_iter)
        except SolverError as exc:  # a backend failure is a failed attempt, with its reason
            failures.append(f"{name}: {exc}")
            extras[f"{method}_error"] = str(exc)
            continue
        solver = f"svmgeo-{method}"
        extras[f"{method}_iterations"] = its
        extras[f"{method}_converged"] = ok
        n_iter += its
        if not np.all(np.isfinite(lam_raw)):
            failures.append(f"{name}: non-finite multipliers after {its} iterations")
            continue
        slack = geo.matvec(lam_raw) - geo.c
        S0 = ~geo.margin | (lam_raw > slack)
        starts.append(S0)
        lam_pol, rounds, settled = polish_active_set(geo, lam_raw, S0, max_rounds=max_rounds)
        extras[f"{method}_polish_rounds"] = rounds
        n_iter += rounds
        if settled:
            lam = lam_pol
        elif ok and not converged:
            lam, converged = np.where(geo.margin, np.maximum(lam_raw, 0.0), lam_raw), True
            converged_by = name
    extras["polished"] = settled
    why = f" ({'; '.join(failures)})" if failures else ""
    if not np.all(np.isfinite(lam)) and not starts:
        return no_solution(
            cs,
            Status.NUMERICAL_ERROR,
            f"no method gave finite multipliers{why}; is the problem infeasible? see "
            "check_feasibility",
            norm="fro",
            solver=solver,
            n_iter=n_iter,
            solve_time=time.perf_counter() - start,
            extras=extras,
        )
    status = Status.OPTIMAL if (settled or converged) else Status.MAX_ITER
    if settled:
        message = POLISHED
    elif converged:
        message = f"solved by {converged_by}; the active-set polish did not settle"
    else:
        message = (
            f"neither {' nor '.join(name for _, name in _METHODS)} converged in "
            f"max_iter={max_iter} iterations{why} (is the problem infeasible? see "
            "check_feasibility)"
        )
    out: SVMResult | None = None
    if np.all(np.isfinite(lam)):
        out = _assemble(geo, lam, None, tol, status, message, solver, n_iter, extras)
        if settled and out.certificate is not None and out.certificate.passed:
            return _with_time(out, time.perf_counter() - start)
        # the Gram-space polish did not settle or its answer does not certify (round-off
        # with large, cancelling multipliers): polish the primal itself in compressed features
        if settled:  # the polished working set: rows with a positive multiplier or tight
            starts.insert(0, ~geo.margin | (lam > 0) | (geo.matvec(lam) <= geo.c * (1 + 1e-9)))
    rescue = _feature_rescue(geo, starts, tol, max_rounds, solver, n_iter, extras)
    if rescue is not None and (out is None or rescue.success or not out.success):
        # a polished, certified answer is preferred to an unpolished interior-point one
        out = rescue
    if out is None:
        out = no_solution(
            cs,
            Status.NUMERICAL_ERROR,
            f"no finite multipliers{why}, and the feature-space polish did not settle",
            norm="fro",
            solver=solver,
            n_iter=n_iter,
            extras=extras,
        )
    return _with_time(out, time.perf_counter() - start)


def _assemble(
    geo: RowGeometry,
    lam: np.ndarray,
    W: np.ndarray | None,
    tol: float,
    status: Status,
    message: str,
    solver: str,
    n_iter: int,
    extras: dict[str, Any],
) -> SVMResult:
    r"""The result for multipliers ``lam`` (and ``W``, else :math:`\sum_j\lambda_j a_j b_j^\top`).

    Margins short of their bound by round-off are met by scaling W by at most 1 + tol/8,
    which moves the duality gap by about tol/4 and keeps the certificate honest.
    """
    cs = geo.cs
    if W is None:
        W = geo.W(lam)
    W, lam, margins = lift_kkt_pair(cs, W, lam, tol)
    return finish(
        cs,
        W,
        lam,
        norm=FRO,
        tol=tol,
        status=status,
        message=message,
        solver=solver,
        margins=margins,
        n_iter=n_iter,
        solve_time=0.0,
        extras=extras,
    )


def _feature_rescue(
    geo: RowGeometry,
    starts: list[np.ndarray],
    tol: float,
    max_rounds: int,
    solver: str,
    n_iter: int,
    extras: dict[str, Any],
) -> SVMResult | None:
    """:func:`polish_features` from each working set in ``starts``; the first certified answer."""
    best = None
    for S0 in starts:
        out = polish_features(geo, S0, max_rounds=max(max_rounds, 2 * geo.cs.N))
        if out is None:
            return None
        lam, W, rounds, settled = out
        ext = dict(extras)
        ext["feature_polish_rounds"] = rounds
        ext["polished"] = settled
        if not settled:
            continue
        res = _assemble(
            geo,
            lam,
            W,
            tol,
            Status.OPTIMAL,
            "solved: active set polished exactly on the primal in compressed features "
            "(the Gram-space polish did not certify)",
            f"{solver}+features",
            n_iter + rounds,
            ext,
        )
        if res.success:
            return res
        best = best or res
    return best


def _with_time(res: SVMResult, solve_time: float) -> SVMResult:
    return replaced(res, solve_time=solve_time)
