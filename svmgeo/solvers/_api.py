# SPDX-License-Identifier: BSD-3-Clause
r"""The public solver API: :func:`solve_svm`, :func:`att_svm`, :func:`feasibility`.

.. math::

    \min_W \|W\| \quad\text{s.t.}\quad a_j^\top W b_j \ge c_j\ (\text{margin rows}),\quad
    a_j^\top W b_j = c_j\ (\text{equality rows}),\quad \mathrm{rank}(W) \le m\ (\text{optional}),

with :math:`\|\cdot\|` the Frobenius norm (``norm="fro"``, Att-SVM) or the nuclear norm
(``norm="nuc"``, Att-SVM⋆). Feasibility is always decided first, exactly, so an infeasible
problem is a result with a Farkas certificate, never an exception.
"""

from __future__ import annotations

import dataclasses
import time
from typing import Any, Literal

import numpy as np

from .._errors import ProblemError
from .._validation import check_int, check_option, check_real
from ..constraints import ConstraintSet, att_svm_constraints
from ..data import TokenData
from ..selection import optimal_tokens
from ._certificates import (
    downgrade,
    frobenius_certificate,
    judge,
    nuclear_certificate,
    primal_infeasibility,
    row_values,
)
from ._cvxpy import solve_naive_cvxpy_duals
from ._feasibility import check_feasibility
from ._frobenius import RowGeometry, no_solution, solve_frobenius
from ._lowrank import solve_lowrank
from ._nuclear import solve_nuclear
from ._result import FeasibilityResult, SVMResult
from ._status import Status

__all__ = ["STATUS_MAP", "att_svm", "feasibility", "solve_svm"]

NORMS = ("fro", "nuc")
METHODS = ("auto", "fast", "cvxpy")

STATUS_MAP: dict[str, Status] = {
    "optimal": Status.OPTIMAL,
    "optimal_inaccurate": Status.OPTIMAL_INACCURATE,
    "infeasible": Status.INFEASIBLE,
    "infeasible_inaccurate": Status.INFEASIBLE_INACCURATE,
    "unbounded": Status.UNBOUNDED,
    "unbounded_inaccurate": Status.UNBOUNDED,
    "user_limit": Status.MAX_ITER,
    "solver_error": Status.SOLVER_ERROR,
}
"""cvxpy status strings → :class:`Status`; anything else is :attr:`Status.SOLVER_ERROR`."""

_CVXPY_FALLBACK_SIZE = 5e7
"""Largest d²·N for which ``method="auto"`` falls back to the naive cvxpy model."""


def balanced_factors(W: np.ndarray, width: int) -> tuple[np.ndarray, np.ndarray]:
    r"""Balanced factors :math:`K = U_m\Sigma_m^{1/2}`, :math:`Q = V_m\Sigma_m^{1/2}` of ``W``.

    .. math::

        W = KQ^\top,\qquad \tfrac12(\|K\|_F^2 + \|Q\|_F^2) = \|W\|_*,

    when :math:`\mathrm{rank}\,W \le m` (``width``); columns beyond the rank are zero.
    """
    U, s, Vt = np.linalg.svd(np.asarray(W, dtype=float))
    r = min(width, s.size)
    root = np.sqrt(s[:r])
    K = np.zeros((W.shape[0], width))
    Q = np.zeros((W.shape[1], width))
    K[:, :r] = U[:, :r] * root
    Q[:, :r] = Vt[:r].T * root
    return K, Q


def _feasible_point_result(
    cs: ConstraintSet, feas: FeasibilityResult, res: SVMResult, norm: str, tol: float
) -> SVMResult:
    """The verified feasibility point as an ``OPTIMAL_INACCURATE`` upper bound, after a solver
    wrongly answered INFEASIBLE (or ``NUMERICAL_ERROR`` when there is no point)."""
    note = (
        f"{res.message}; but the rows are feasible (a point was verified), so the solver failed "
        "numerically (an ill-conditioned problem?)"
    )
    if feas.point is None:  # pragma: no cover - a feasible verdict always carries its point
        return dataclasses.replace(res, status=Status.NUMERICAL_ERROR, farkas=None, message=note)
    W = np.asarray(feas.point)
    margins = row_values(cs, W)
    value = float(np.linalg.norm(W)) if norm == "fro" else float(np.linalg.norm(W, "nuc"))
    lam = np.zeros(cs.N)
    cert = (
        frobenius_certificate(cs, W, lam, tol, margins=margins)
        if norm == "fro"
        else nuclear_certificate(cs, W, lam, tol)
    )
    out = dataclasses.replace(
        res,
        W=W,
        status=Status.OPTIMAL_INACCURATE,
        message=f"{note}; W is only that feasible point, an upper bound {value:.6g} on the "
        "optimal value (no dual: the certificate fails)",
        objective=value,
        dual=lam,
        margins=margins,
        farkas=None,
    )
    return downgrade(out, cert)


def _check_cs(cs: Any, where: str) -> ConstraintSet:
    if not isinstance(cs, ConstraintSet):
        raise ProblemError(
            f"{where} expects a ConstraintSet as 'cs'; got {type(cs).__name__}. Build one with "
            "svmgeo.att_svm_constraints(data, alpha) or svmgeo.pair_constraints(...)."
        )
    return cs


def _query_rank(cs: ConstraintSet) -> int:
    r"""Dimension of :math:`\mathrm{span}\{b_j\}` (computed on the distinct rows of B)."""
    if cs.N == 0:
        return 0
    Bu = np.unique(cs.B, axis=0)
    s = np.linalg.svd(Bu, compute_uv=False)
    return int(np.count_nonzero(s > (s[0] if s.size else 0.0) * 1e-12)) if s[0] > 0 else 0


def _infeasible_result(
    cs: ConstraintSet, feas: FeasibilityResult, norm: str, rank: int | None, seconds: float
) -> SVMResult:
    return no_solution(
        cs,
        feas.status if feas.status.is_infeasible else Status.INFEASIBLE_INACCURATE,
        f"the constraints admit no W: {feas.message}",
        norm=norm,
        solver=feas.solver,
        rank=rank,
        solve_time=seconds,
        farkas=feas.certificate,
        extras={"feasibility": feas},
    )


def _solve_cvxpy(
    cs: ConstraintSet, norm: str, *, tol: float, solver: str | None, rank: int | None
) -> SVMResult:
    """Wrap the naive cvxpy model into an :class:`SVMResult` with svmgeo's certificate."""
    start = time.perf_counter()
    name = "CLARABEL" if solver is None else solver
    try:
        W, mu, native, value, _ = solve_naive_cvxpy_duals(cs, norm, solver=name)  # type: ignore[arg-type]
    except Exception as exc:  # cvxpy raises SolverError and friends
        return no_solution(
            cs,
            Status.SOLVER_ERROR,
            f"cvxpy/{name} failed: {exc}",
            norm=norm,
            solver=f"cvxpy-{name.lower()}",
            rank=rank,
            solve_time=time.perf_counter() - start,
        )
    status = STATUS_MAP.get(native, Status.SOLVER_ERROR)
    message = f"cvxpy status {native!r}"
    if native not in STATUS_MAP:
        message += " (unknown to svmgeo: treated as a solver error)"
    if W is None or not status.has_solution:
        return no_solution(
            cs,
            status if not status.has_solution else Status.SOLVER_ERROR,
            message,
            norm=norm,
            solver=f"cvxpy-{name.lower()}",
            rank=rank,
            solve_time=time.perf_counter() - start,
            extras={"cvxpy_status": native, "cvxpy_value": value},
        )
    margins = row_values(cs, W)
    norm_w = float(np.linalg.norm(W)) if norm == "fro" else float(np.linalg.norm(W, "nuc"))
    # cvxpy's sign convention on equality rows is the opposite of svmgeo's
    lam = None
    if mu is not None:
        lam = np.where(cs.is_margin, mu, -mu)
    res = SVMResult(
        W=W,
        status=status,
        message=message,
        objective=norm_w,
        dual=lam,
        margins=margins,
        constraints=cs,
        norm=norm,  # type: ignore[arg-type]
        solver=f"cvxpy-{name.lower()}",
        rank=rank,
        extras={"cvxpy_status": native, "cvxpy_value": value},
    )
    if lam is None:
        cert = judge(tol=tol, primal_infeasibility=primal_infeasibility(cs, margins))
    elif norm == "fro":
        cert = frobenius_certificate(cs, W, lam, tol, margins=margins)
    else:
        cert = nuclear_certificate(cs, W, lam, tol)
    res = downgrade(res, cert)
    return dataclasses.replace(res, solve_time=time.perf_counter() - start)


def solve_svm(
    cs: ConstraintSet,
    *,
    norm: Literal["fro", "nuc"] = "fro",
    rank: int | None = None,
    method: Literal["auto", "fast", "cvxpy"] = "auto",
    tol: float = 1e-8,
    solver: str | None = None,
    seed: int | None = None,
    n_restarts: int = 10,
    max_iter: int | None = None,
) -> SVMResult:
    r"""Solve an attention SVM over any :class:`~svmgeo.ConstraintSet`.

    .. math::

        \min_W \|W\|_F \ \text{or}\ \|W\|_* \quad\text{s.t.}\quad
        a_j^\top W b_j \ge c_j\ (\text{margin}),\ a_j^\top W b_j = c_j\ (\text{equality}),
        \ \mathrm{rank}(W) \le m .

    Feasibility is decided first (:func:`check_feasibility`); an infeasible problem returns
    status ``INFEASIBLE`` with ``W=None`` and the Farkas vector in ``farkas``.

    Parameters
    ----------
    cs : ConstraintSet
        The rows.
    norm : {"fro", "nuc"}, default "fro"
        Frobenius (Att-SVM) or nuclear (Att-SVM⋆).
    rank : int, optional
        Rank bound m for ``norm="nuc"``. Vacuous (the convex problem is solved) when
        m ≥ d or m ≥ dim span{b_j}, since some optimum then has rank ≤ m (Lemma 1); the
        result then still carries ``K = U_m Σ_m^{1/2}``, ``Q = V_m Σ_m^{1/2}`` (width m,
        zero columns beyond the rank) and ``lower_bound`` = the optimal value.
    method : {"auto", "fast", "cvxpy"}, default "auto"
        ``"fast"``: svmgeo's exact solvers. ``"cvxpy"``: the naive reference model.
        ``"auto"``: fast, and for ``norm="fro"`` the cvxpy model when the fast answer fails
        its certificate and the problem is small (d²·N ≤ 5e7); the cvxpy answer is kept only
        when it passes the certificate.
    tol : float, default 1e-8
        Tolerance of the certificate check.
    solver : str, optional
        Backend solver name for cvxpy / the nuclear SDP (e.g. ``"CLARABEL"``, ``"SCS"``).
    seed : int, optional
        Randomness of the rank-constrained (nonconvex) solver.
    n_restarts : int, default 10
        Random restarts of the rank-constrained solver.
    max_iter : int, optional
        Iteration limit passed to the fast Frobenius solver.

    Returns
    -------
    SVMResult
        Never ``INFEASIBLE`` on rows whose feasibility point was verified: should a solver
        answer so (an ill-conditioned problem), the verified point is returned as
        ``OPTIMAL_INACCURATE`` (an upper bound, with a failing certificate).

    Raises
    ------
    ProblemError
        Unknown ``norm`` or ``method``, ``rank < 1``, ``tol <= 0``, a rank bound with
        ``norm="fro"``, or a binding rank bound with ``method="cvxpy"``.

    References
    ----------
    .. [1] D. A. Tarzanagh, Y. Li, C. Thrampoulidis, S. Oymak, "Transformers as Support Vector
       Machines", arXiv:2308.16898, Eq. (Att-SVM), (Att-SVM⋆), Lemma 1.

    Examples
    --------
    >>> import svmgeo as sg
    >>> data = sg.random_data(4, 3, 6, seed=0)
    >>> cs = sg.att_svm_constraints(data, sg.optimal_tokens(data))
    >>> res = sg.solve_svm(cs)
    >>> res.status, bool(res.margins.min() >= 1 - 1e-12)
    (<Status.OPTIMAL: 'optimal'>, True)
    """
    where = "solve_svm"
    cs = _check_cs(cs, where)
    norm = check_option(norm, "norm", NORMS, where=where)  # type: ignore[assignment]
    method = check_option(method, "method", METHODS, where=where)  # type: ignore[assignment]
    tol = check_real(tol, "tol", low=0.0, low_open=True, where=where)
    if rank is not None:
        rank = check_int(rank, "rank", low=1, where=where)
        if norm == "fro":
            raise ProblemError(
                "The 'rank' parameter of solve_svm applies to norm='nuc' only (Att-SVM⋆); got "
                f"rank={rank} with norm='fro'. Drop rank or pass norm='nuc'."
            )
    if solver is not None and not isinstance(solver, str):
        raise ProblemError(
            f"The 'solver' parameter of solve_svm must be a str or None. Got {solver!r} instead."
        )
    n_restarts = check_int(n_restarts, "n_restarts", low=1, where=where)
    if max_iter is not None:
        max_iter = check_int(max_iter, "max_iter", low=1, where=where)
    if seed is not None:
        seed = check_int(seed, "seed", low=0, where=where)

    start = time.perf_counter()
    binding = rank is not None and rank < min(cs.d, _query_rank(cs))
    if binding and method == "cvxpy":
        raise ProblemError(
            f"method='cvxpy' cannot impose rank <= {rank} (nonconvex); use method='fast' or 'auto', "
            "or drop rank for the convex Att-SVM⋆."
        )
    # -- issue 16: past the dense Gram, solve matrix-free; a certified optimum proves feasibility
    from ._frobenius_matfree import use_matrix_free

    if norm == "fro" and method != "cvxpy" and use_matrix_free(cs):
        res = solve_frobenius(cs, tol=tol)
        note = "" if res.success else "; feasibility not decided (the dense check would not fit)"
        return dataclasses.replace(
            res, rank=rank, message=res.message + note, solve_time=time.perf_counter() - start
        )
    # -- end issue 16
    geo = RowGeometry(cs)
    feas = check_feasibility(cs, geometry=geo)
    if not feas.feasible:
        return _infeasible_result(cs, feas, norm, rank, time.perf_counter() - start)

    if method == "cvxpy":
        res = _solve_cvxpy(cs, norm, tol=tol, solver=solver, rank=rank)
    elif norm == "fro":
        kw = {} if max_iter is None else {"max_iter": max_iter}
        warm = feas.extras.get("qp_dual")
        res = solve_frobenius(cs, tol=tol, geometry=geo, warm_start=warm, **kw)
        # the naive model has d^2 variables and N dense rows: only a fallback for small problems
        size = cs.d**2 * cs.N
        if method == "auto" and not res.success and size <= _CVXPY_FALLBACK_SIZE:
            ref = _solve_cvxpy(cs, norm, tol=tol, solver=solver, rank=rank)
            if ref.success:
                res = dataclasses.replace(
                    ref, message=f"{ref.message} (fast path: {res.status}: {res.message})"
                )
            else:  # keep svmgeo's answer, and say that the fallback was tried
                res = dataclasses.replace(
                    res,
                    message=f"{res.message}; the cvxpy fallback did not certify either "
                    f"({ref.status}: {ref.message})",
                )
        elif method == "auto" and not res.success:
            res = dataclasses.replace(
                res,
                message=f"{res.message}; no cvxpy fallback: d^2*N = {size:.3g} exceeds "
                f"{_CVXPY_FALLBACK_SIZE:.0e} (try method='cvxpy' explicitly, or a looser tol)",
            )
    elif not binding:
        res = solve_nuclear(cs, solver="auto" if solver is None else solver.lower(), tol=tol)
        if rank is not None and res.W is not None:
            K, Q = balanced_factors(res.W, rank)
            # the convex optimum is the rank-m optimum: its value is also the lower bound
            res = dataclasses.replace(res, K=K, Q=Q, lower_bound=res.objective)
    else:
        assert rank is not None  # a binding rank bound is an int (checked above)
        res = solve_lowrank(
            cs,
            rank,
            n_restarts=n_restarts,
            seed=seed,
            tol=tol,
            solver="auto" if solver is None else solver.lower(),
        )
    if res.status.is_infeasible and not binding:
        # the exact LP above verified a feasible point: a solver's INFEASIBLE contradicts it
        # (a binding rank bound may make a feasible convex problem infeasible)
        res = _feasible_point_result(cs, feas, res, norm, tol)
    extras = dict(res.extras)
    extras["feasibility"] = feas
    return dataclasses.replace(
        res, rank=rank, extras=extras, solve_time=time.perf_counter() - start
    )


def att_svm(
    data: TokenData,
    alpha: Any = None,
    *,
    norm: Literal["fro", "nuc"] = "fro",
    rank: int | None = None,
    method: Literal["auto", "fast", "cvxpy"] = "auto",
    tol: float = 1e-8,
    **kwargs: Any,
) -> SVMResult:
    r"""Att-SVM(α) of a dataset (Frobenius) or Att-SVM⋆(α) (nuclear, optional rank bound).

    .. math::

        W^{\mathrm{mm}}_\alpha = \arg\min_W \|W\| \quad\text{s.t.}\quad
        (x_{i\alpha_{ik}} - x_{it})^\top W z_{ik} \ge 1
        \quad \forall\, i, k,\ t \ne \alpha_{ik} \text{ visible to query } k .

    Parameters
    ----------
    data : TokenData
    alpha : array of int, shape (n,) or (n, K), optional
        The selection; default the optimal tokens (ties raise :class:`~svmgeo.TieError`).
    norm, rank, method, tol, **kwargs
        As in :func:`solve_svm`.

    Returns
    -------
    SVMResult

    References
    ----------
    .. [1] D. A. Tarzanagh, Y. Li, C. Thrampoulidis, S. Oymak, "Transformers as Support Vector
       Machines", arXiv:2308.16898, Eq. (Att-SVM).
    """
    if alpha is None:
        alpha = optimal_tokens(data)
    cs = att_svm_constraints(data, alpha)
    return solve_svm(cs, norm=norm, rank=rank, method=method, tol=tol, **kwargs)


def feasibility(data: TokenData, alpha: Any = None) -> FeasibilityResult:
    r"""Is Att-SVM(α) feasible? Exact, with a point or a Farkas certificate.

    .. math::

        \exists W:\ (x_{i\alpha_{ik}} - x_{it})^\top W z_{ik} \ge 1\ \forall i, k, t \ne \alpha_{ik}
        \quad\Longleftrightarrow\quad
        \nexists \lambda \ge 0:\ \textstyle\sum_j \lambda_j a_j b_j^\top = 0,\ \sum_j \lambda_j = 1 .

    Parameters
    ----------
    data : TokenData
    alpha : array of int, optional
        Default the optimal tokens (ties raise).

    Returns
    -------
    FeasibilityResult

    References
    ----------
    .. [1] D. A. Tarzanagh, Y. Li, C. Thrampoulidis, S. Oymak, "Transformers as Support Vector
       Machines", arXiv:2308.16898, Theorem 1.
    """
    if alpha is None:
        alpha = optimal_tokens(data)
    return check_feasibility(att_svm_constraints(data, alpha))
