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
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from .._errors import ProblemError
from .._validation import check_int, check_option, check_real
from ..constraints import ConstraintSet, att_svm_constraints, check_constraint_set
from ..data import TokenData
from ..selection import optimal_tokens
from ._backends import CvxpyBackend
from ._certificates import (
    downgrade,
    frobenius_certificate,
    judge,
    nuclear_certificate,
    primal_infeasibility,
)
from ._feasibility import check_feasibility
from ._frobenius import solve_frobenius
from ._frobenius_matfree import use_matrix_free
from ._geometry import RowGeometry, dense_dimension
from ._lowrank import solve_lowrank
from ._lp_norm import parse_lp_norm, solve_lp
from ._nuclear import solve_nuclear
from ._prompt import prompt_constraints
from ._reference import solve_naive_cvxpy_duals
from ._result import Certificate, FeasibilityResult, SVMResult, no_solution, warns_if_inaccurate
from ._status import Status
from ._threads import blas_threads

__all__ = [
    "NORMS",
    "PARAMS",
    "STATUS_MAP",
    "Norm",
    "att_svm",
    "check_param",
    "feasibility",
    "solve_svm",
    "svm_constraints",
    "with_prompt",
]

METHODS = ("auto", "fast", "cvxpy")
_SOLVE_KEYWORDS = frozenset({"solver", "seed", "n_restarts", "max_iter", "exact"})

STATUS_MAP: dict[Any, Status] = CvxpyBackend.STATUS_MAP
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


def _objective_fro(W: np.ndarray) -> float:
    return float(np.linalg.norm(W))


def _objective_nuc(W: np.ndarray) -> float:
    return float(np.linalg.norm(W, "nuc"))


def _certificate_fro(
    cs: ConstraintSet, W: np.ndarray, lam: np.ndarray, tol: float, margins: np.ndarray
) -> Certificate:
    return frobenius_certificate(cs, W, lam, tol, margins=margins)


def _certificate_nuc(
    cs: ConstraintSet, W: np.ndarray, lam: np.ndarray, tol: float, margins: np.ndarray
) -> Certificate:
    return nuclear_certificate(cs, W, lam, tol)


@dataclass(frozen=True)
class _Request:
    """One validated call of :func:`solve_svm` (or of a function built on it)."""

    cs: ConstraintSet
    norm: str
    method: str
    tol: float
    solver: str | None
    rank: int | None
    binding: bool
    seed: int | None
    n_restarts: int
    max_iter: int | None
    exact: bool


def _solve_fro(req: _Request, geo: RowGeometry, feas: FeasibilityResult) -> SVMResult:
    """svmgeo's exact Frobenius solver; with ``method="auto"`` the cvxpy model as fallback."""
    cs, tol = req.cs, req.tol
    kw = {} if req.max_iter is None else {"max_iter": req.max_iter}
    warm = feas.extras.get("qp_dual")
    res = solve_frobenius(cs, tol=tol, geometry=geo, warm_start=warm, **kw)
    if req.method != "auto" or res.success:
        return res
    # the naive model has d^2 variables and N dense rows: only a fallback for small problems
    size = cs.d**2 * cs.N
    if size > _CVXPY_FALLBACK_SIZE:
        return dataclasses.replace(
            res,
            message=f"{res.message}; no cvxpy fallback: d^2*N = {size:.3g} exceeds "
            f"{_CVXPY_FALLBACK_SIZE:.0e} (try method='cvxpy' explicitly, or a looser tol)",
        )
    ref = _solve_cvxpy(req)
    if ref.success:
        return dataclasses.replace(
            ref, message=f"{ref.message} (fast path: {res.status}: {res.message})"
        )
    # keep svmgeo's answer, and say that the fallback was tried
    return dataclasses.replace(
        res,
        message=f"{res.message}; the cvxpy fallback did not certify either "
        f"({ref.status}: {ref.message})",
    )


def _solve_nuc(req: _Request, geo: RowGeometry, feas: FeasibilityResult) -> SVMResult:
    """The convex Att-SVM⋆ (factors attached for a vacuous rank bound), or the factored
    nonconvex solver for a binding one."""
    backend = "auto" if req.solver is None else req.solver.lower()
    if req.binding:
        assert req.rank is not None  # a binding rank bound is an int (checked in _solve)
        kw = {} if req.max_iter is None else {"max_iter": req.max_iter}
        return solve_lowrank(
            req.cs,
            req.rank,
            n_restarts=req.n_restarts,
            seed=req.seed,
            tol=req.tol,
            solver=backend,
            **kw,
        )
    res = solve_nuclear(req.cs, solver=backend, tol=req.tol, feasibility=feas)
    if req.rank is not None and res.W is not None:
        K, Q = balanced_factors(res.W, req.rank)
        # the convex optimum is the rank-m optimum: its value is also the lower bound
        res = dataclasses.replace(res, K=K, Q=Q, lower_bound=res.objective)
    return res


@dataclass(frozen=True)
class Norm:
    """One entry of :data:`NORMS`: everything :func:`solve_svm` needs to know about a norm.

    Attributes
    ----------
    name : str
        The ``norm=`` value.
    objective : callable ``W -> float``
        The norm itself (the reported ``objective``).
    certificate : callable ``(cs, W, lam, tol, margins) -> Certificate``
        The KKT certificate recomputed by svmgeo.
    solve : callable ``(request, RowGeometry, FeasibilityResult) -> SVMResult``
        svmgeo's fast solver (``method="fast"`` / ``"auto"``), given the rows' geometry and
        the feasibility check already done.
    cvxpy_objective : callable ``(cvxpy, W) -> expression``
        The objective of the naive cvxpy model, minimised by the same W.
    from_cvxpy_value : callable ``float -> float``
        The norm from the naive model's optimal value.
    backends : tuple of str
        Accepted ``solver`` names for the fast path (empty: any cvxpy solver name, used by
        the fallback only).
    rank_bound : bool
        Whether ``rank=`` applies.
    """

    name: str
    objective: Callable[[np.ndarray], float]
    certificate: Callable[[ConstraintSet, np.ndarray, np.ndarray, float, np.ndarray], Certificate]
    solve: Callable[[_Request, RowGeometry, FeasibilityResult], SVMResult]
    cvxpy_objective: Callable[[Any, Any], Any]
    from_cvxpy_value: Callable[[float], float]
    backends: tuple[str, ...] = ()
    rank_bound: bool = False


NORMS: dict[str, Norm] = {
    "fro": Norm(
        name="fro",
        objective=_objective_fro,
        certificate=_certificate_fro,
        solve=_solve_fro,
        # ½‖W‖_F² (a QP: Clarabel solves it to ~1e-11 in W, the cone form only to ~1e-6)
        cvxpy_objective=lambda cp, W: 0.5 * cp.sum_squares(W),
        from_cvxpy_value=lambda v: float(np.sqrt(2.0 * max(v, 0.0))) if np.isfinite(v) else v,
    ),
    "nuc": Norm(
        name="nuc",
        objective=_objective_nuc,
        certificate=_certificate_nuc,
        solve=_solve_nuc,
        cvxpy_objective=lambda cp, W: cp.normNuc(W),
        from_cvxpy_value=float,
        backends=("auto", "clarabel", "scs"),
        rank_bound=True,
    ),
}
"""The norms of :func:`solve_svm`: adding one is adding an entry here."""


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
    margins = cs.apply(W)
    spec = NORMS[norm]
    value = spec.objective(W)
    lam = np.zeros(cs.N)
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
    return downgrade(out, spec.certificate(cs, W, lam, tol, margins))


def _query_rank(cs: ConstraintSet) -> int:
    r"""Dimension of :math:`\mathrm{span}\{b_j\}` (computed on the distinct rows of B)."""
    if cs.N == 0:
        return 0
    Bu = np.unique(cs.B, axis=0)
    s = np.linalg.svd(Bu, compute_uv=False)
    return int(np.count_nonzero(s > (s[0] if s.size else 0.0) * 1e-12)) if s[0] > 0 else 0


def _infeasible_result(
    cs: ConstraintSet, feas: FeasibilityResult, norm: str, rank: int | None, solve_time: float
) -> SVMResult:
    return no_solution(
        cs,
        feas.status if feas.status.is_infeasible else Status.INFEASIBLE_INACCURATE,
        f"the constraints admit no W: {feas.message}",
        norm=norm,
        solver=feas.solver,
        rank=rank,
        solve_time=solve_time,
        farkas=feas.farkas,
        extras={"feasibility": feas},
    )


def _solve_cvxpy(req: _Request) -> SVMResult:
    """Wrap the naive cvxpy model into an :class:`SVMResult` with svmgeo's certificate."""
    start = time.perf_counter()
    cs, norm, tol, rank = req.cs, req.norm, req.tol, req.rank
    name = "CLARABEL" if req.solver is None else req.solver
    try:
        W, mu, native, value, _ = solve_naive_cvxpy_duals(cs, norm, solver=name)  # type: ignore[arg-type]
    except Exception as exc:  # cvxpy raises SolverError and friends: a result, with the reason
        return no_solution(
            cs,
            Status.SOLVER_ERROR,
            f"cvxpy/{name} failed: {type(exc).__name__}: {exc}",
            norm=norm,
            solver=f"cvxpy-{name.lower()}",
            rank=rank,
            solve_time=time.perf_counter() - start,
            extras={"exception": exc},
        )
    status = CvxpyBackend.status(native)
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
    spec = NORMS[norm]
    margins = cs.apply(W)
    # cvxpy's sign convention on equality rows is the opposite of svmgeo's
    lam = None if mu is None else np.where(cs.is_margin, mu, -mu)
    res = SVMResult(
        W=W,
        status=status,
        message=message,
        objective=spec.objective(W),
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
    else:
        cert = spec.certificate(cs, W, lam, tol, margins)
    res = downgrade(res, cert)
    return dataclasses.replace(res, solve_time=time.perf_counter() - start)


@warns_if_inaccurate("solve_svm")
def solve_svm(
    cs: ConstraintSet,
    *,
    norm: Literal["fro", "nuc"] = "fro",
    rank: int | None = None,
    method: Literal["auto", "fast", "cvxpy"] = "auto",
    tol: float = 1e-8,
    solver: str | None = None,
    seed: int | None = None,
    n_restarts: int | None = None,
    max_iter: int | None = None,
    exact: bool = True,
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
        Frobenius (Att-SVM) or nuclear (Att-SVM⋆); see :data:`NORMS`.
    rank : int, optional
        Rank bound m for ``norm="nuc"``. Vacuous (the convex problem is solved) when
        m ≥ d or m ≥ dim span{b_j}, since some optimum then has rank ≤ m (Lemma 1); the
        result then still carries ``K = U_m Σ_m^{1/2}``, ``Q = V_m Σ_m^{1/2}`` (width m,
        zero columns beyond the rank) and ``lower_bound`` = the optimal value.
    method : {"auto", "fast", "cvxpy"}, default "auto"
        ``"fast"``: svmgeo's exact solvers. ``"cvxpy"``: the naive reference model.
        ``"auto"``: fast, and for ``norm="fro"`` the cvxpy model when the fast answer fails
        its certificate and the problem is small (d²·N ≤ 5e7); the cvxpy answer is kept only
        when it passes the certificate. For ``norm="nuc"`` (no binding rank) "fast" and
        "auto" run the factored path first (:math:`W = KQ^\top`, whose multipliers give
        the proved dual bound :math:`\|\sum_j \lambda_j a_j b_j^\top\|_2 \le 1`; kept
        when the recomputed gap is at most 1e-9) and the compressed SDP (SCS, then Clarabel)
        only as the fallback; the SDP is also the reference (``solver="scs"`` or
        ``"clarabel"`` runs it alone). The feasibility verdict decided here is reused, not
        recomputed.
    tol : float in (0, 1], default 1e-8
        Tolerance of svmgeo's certificate check (relative residuals, SPEC §6). The backends
        run at their own, tighter tolerances.
    solver : str, optional
        Backend: for ``method="cvxpy"`` a cvxpy solver name (e.g. ``"CLARABEL"``, ``"SCS"``);
        for ``norm="nuc"`` the SDP backend alone, ``"clarabel"`` or ``"scs"`` (default: the
        factored path, then SCS, then Clarabel). svmgeo's Frobenius solver has no backend
        (its cvxpy fallback uses Clarabel): ``solver`` with ``norm="fro"`` needs
        ``method="cvxpy"``.
    seed : int, optional
        Randomness of the rank-constrained (nonconvex) solver; needs ``rank``.
    n_restarts : int, optional
        Random restarts of the rank-constrained solver (default 10); needs ``rank``.
    max_iter : int, optional
        Iteration limit of svmgeo's Frobenius interior point, or SLSQP iterations per start of
        the rank-constrained solver (default 300). Not with ``method="cvxpy"`` nor with
        ``norm="nuc"`` without ``rank``.
    exact : bool, default True
        Prove the feasibility verdict in exact rational arithmetic (``proof="exact"``; see
        :func:`check_feasibility` and docs/certificates.md for the cost).

    Returns
    -------
    SVMResult
        Never ``INFEASIBLE`` on rows whose feasibility point was verified: should a solver
        answer so (an ill-conditioned problem), the verified point is returned as
        ``OPTIMAL_INACCURATE`` (an upper bound, with a failing certificate).

    Raises
    ------
    ProblemError
        Unknown ``norm``, ``method`` or SDP ``solver``, ``rank < 1``, ``tol`` outside (0, 1],
        a rank bound with ``norm="fro"``, a binding rank bound with ``method="cvxpy"``, or an
        option the chosen path would ignore (``solver`` with the Frobenius fast path,
        ``max_iter`` with ``norm="nuc"`` and no rank or with ``method="cvxpy"``, ``seed`` or
        ``n_restarts`` without ``rank``).

    Warns
    -----
    InaccurateSolutionWarning
        When the status is ``*_INACCURATE`` (``status.is_inaccurate``), at the caller's line;
        not when the caller is svmgeo itself. Statuses: ``docs/statuses.md``.

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
    return _solve(
        check_constraint_set(cs, "solve_svm"),
        norm=norm,
        rank=rank,
        method=method,
        tol=tol,
        solver=solver,
        seed=seed,
        n_restarts=n_restarts,
        max_iter=max_iter,
        exact=exact,
        where="solve_svm",
    )


def _solve(
    cs: ConstraintSet,
    *,
    norm: Any,
    rank: Any,
    method: Any,
    tol: Any,
    solver: Any,
    seed: Any,
    n_restarts: Any,
    max_iter: Any,
    exact: Any,
    where: str,
) -> SVMResult:
    """:func:`solve_svm`, with errors naming ``where`` (the function the user called)."""
    if isinstance(norm, tuple):  # norm=("lp", p): the l_p Att-SVM (solvers/_lp_norm.py)
        if rank is not None:
            raise ProblemError(
                f"The 'rank' parameter of {where} applies to norm='nuc' only; got rank={rank} "
                f"with norm={norm!r}. Drop rank."
            )
        return solve_lp(cs, parse_lp_norm(norm, where), method=method, tol=tol, solver=solver)
    norm = check_option(norm, "norm", tuple(NORMS), where=where)
    spec = NORMS[norm]
    method = check_option(method, "method", METHODS, where=where)
    tol = check_real(tol, "tol", low=0.0, high=1.0, low_open=True, where=where)
    if rank is not None:
        rank = check_int(rank, "rank", low=1, where=where)
        if not spec.rank_bound:
            raise ProblemError(
                f"The 'rank' parameter of {where} applies to norm='nuc' only (Att-SVM⋆); got "
                f"rank={rank} with norm={norm!r}. Drop rank or pass norm='nuc'."
            )
    if solver is not None and not isinstance(solver, str):
        raise ProblemError(
            f"The 'solver' parameter of {where} must be a str or None. Got {solver!r} instead."
        )
    _check_options_apply(
        where,
        norm=norm,
        method=method,
        rank=rank,
        solver=solver,
        seed=seed,
        n_restarts=n_restarts,
        max_iter=max_iter,
    )
    if solver is not None and method != "cvxpy" and spec.backends:
        check_option(solver.lower(), "solver", spec.backends, where=where)
    n_restarts = (
        10 if n_restarts is None else check_int(n_restarts, "n_restarts", low=1, where=where)
    )
    if max_iter is not None:
        max_iter = check_int(max_iter, "max_iter", low=1, where=where)
    if seed is not None:
        seed = check_int(seed, "seed", low=0, where=where)
    if not isinstance(exact, bool):
        raise ProblemError(
            f"The 'exact' parameter of {where} must be True or False. Got {exact!r} instead."
        )

    req = _Request(
        cs=cs,
        norm=norm,
        method=method,
        tol=tol,
        solver=solver,
        rank=rank,
        binding=rank is not None and rank < min(cs.d, _query_rank(cs)),
        seed=seed,
        n_restarts=n_restarts,
        max_iter=max_iter,
        exact=exact,
    )
    if req.binding and method == "cvxpy":
        raise ProblemError(
            f"method='cvxpy' of {where} cannot impose rank <= {rank} (nonconvex); use "
            "method='fast' or 'auto', or drop rank for the convex Att-SVM⋆."
        )
    with blas_threads(dense_dimension(cs)):  # one BLAS thread for small dense solves
        return _solve_feasible_first(req)


def _check_options_apply(
    where: str,
    *,
    norm: str,
    method: str,
    rank: int | None,
    solver: str | None,
    seed: Any,
    n_restarts: Any,
    max_iter: Any,
) -> None:
    """Raise :class:`ProblemError` for an option that the chosen path would ignore.

    ``solver``: the cvxpy solver of ``method="cvxpy"``, or the SDP backend of ``norm="nuc"``
    (svmgeo's Frobenius solver has none). ``max_iter``: the Frobenius interior point, or the
    SLSQP iterations per start of a rank bound (not the SDP backends, nor cvxpy).
    ``seed``, ``n_restarts``: the restarts of a rank bound only.
    """
    ignored: list[tuple[str, Any, str]] = []
    if solver is not None and norm == "fro" and method != "cvxpy":
        ignored.append(
            (
                "solver",
                solver,
                "svmgeo's Frobenius solver has no backend; pass method='cvxpy' "
                "to choose a cvxpy solver, or drop solver",
            )
        )
    if max_iter is not None and (method == "cvxpy" or (norm == "nuc" and rank is None)):
        ignored.append(
            (
                "max_iter",
                max_iter,
                "it limits svmgeo's Frobenius interior point (norm='fro') "
                "and the rank-bounded solver (norm='nuc' with rank); drop max_iter",
            )
        )
    for name, value in (("seed", seed), ("n_restarts", n_restarts)):
        if value is not None and rank is None:
            ignored.append(
                (
                    name,
                    value,
                    "it drives the restarts of the rank-bounded solver only "
                    f"(norm='nuc' with rank=m); drop {name} or pass a rank",
                )
            )
    if ignored:
        raise ProblemError(
            " ".join(
                f"The '{name}' parameter of {where} has no effect with norm={norm!r}, "
                f"method={method!r}, rank={rank!r}; got {name}={value!r}: {fix}."
                for name, value, fix in ignored
            )
        )


def _solve_feasible_first(req: _Request) -> SVMResult:
    """Feasibility first, then the norm's solver (validated arguments)."""
    start = time.perf_counter()
    cs, norm, rank = req.cs, req.norm, req.rank
    if norm == "fro" and req.method != "cvxpy" and use_matrix_free(cs):
        # past the dense Gram: solve matrix-free; a certified optimum proves feasibility
        res = solve_frobenius(cs, tol=req.tol)
        note = "" if res.success else "; feasibility not decided (the dense check would not fit)"
        return dataclasses.replace(
            res, rank=rank, message=res.message + note, solve_time=time.perf_counter() - start
        )
    geo = RowGeometry(cs)
    feas = check_feasibility(cs, geometry=geo, exact=req.exact)
    if not feas.feasible:
        res = _infeasible_result(cs, feas, norm, rank, time.perf_counter() - start)
        return dataclasses.replace(res, proof=feas.proof)
    res = _solve_cvxpy(req) if req.method == "cvxpy" else NORMS[norm].solve(req, geo, feas)
    if res.status.is_infeasible and not req.binding:
        # the exact LP above verified a feasible point: a solver's INFEASIBLE contradicts it
        # (a binding rank bound may make a feasible convex problem infeasible)
        res = _feasible_point_result(cs, feas, res, norm, req.tol)
    extras = dict(res.extras)
    extras["feasibility"] = feas
    return dataclasses.replace(
        res, rank=rank, extras=extras, solve_time=time.perf_counter() - start, proof=feas.proof
    )


PARAMS = ("W", "p")
"""The parameterizations with an SVM of their own: ``param=`` of :func:`att_svm`."""


def check_param(param: Any, where: str) -> str:
    """``param`` validated against :data:`PARAMS`; ``"KQ"`` is pointed to Att-SVM⋆."""
    if param == "KQ":
        raise ProblemError(
            f"The 'param' parameter of {where} takes 'W' or 'p'; got 'KQ'. The (K, Q) "
            "parameterization has no SVM of its own: its regularization path goes to Att-SVM⋆, "
            f"{where}(data, alpha, param='W', norm='nuc')."
        )
    return check_option(param, "param", PARAMS, where=where)


def svm_constraints(data: TokenData, alpha: Any, param: str) -> ConstraintSet:
    """The rows of Att-SVM(α) (``param="W"``) or of the p-SVM (``param="p"``, every query e1)."""
    return prompt_constraints(data, alpha) if param == "p" else att_svm_constraints(data, alpha)


def with_prompt(res: SVMResult, param: str) -> SVMResult:
    """``res`` with :attr:`SVMResult.p` = :math:`W e_1` for ``param="p"`` (unchanged otherwise)."""
    if param != "p":
        return res
    extras = {**res.extras, "param": "p"}
    p = None if res.W is None else np.array(res.W[:, 0])
    return dataclasses.replace(res, p=p, extras=extras)


@warns_if_inaccurate("att_svm")
def att_svm(
    data: TokenData,
    alpha: Any = None,
    *,
    param: Literal["W", "p"] = "W",
    norm: Literal["fro", "nuc"] | tuple[str, float] = "fro",
    rank: int | None = None,
    method: Literal["auto", "fast", "cvxpy"] = "auto",
    tol: float = 1e-8,
    **kwargs: Any,
) -> SVMResult:
    r"""Att-SVM(α) of a dataset (Frobenius) or Att-SVM⋆(α) (nuclear, optional rank bound);
    with ``param="p"`` the p-SVM of prompt attention.

    .. math::

        W^{\mathrm{mm}}_\alpha = \arg\min_W \|W\| \quad\text{s.t.}\quad
        (x_{i\alpha_{ik}} - x_{it})^\top W z_{ik} \ge 1
        \quad \forall\, i, k,\ t \ne \alpha_{ik} \text{ visible to query } k ;

        p^{\mathrm{mm}}_\alpha = \arg\min_p \|p\| \quad\text{s.t.}\quad
        (x_{i\alpha_{ik}} - x_{it})^\top p \ge 1 \quad (\texttt{param="p"}).

    The p-SVM is Att-SVM with every query :math:`z_{ik} = e_1`: its solution is
    :math:`W = p\,e_1^\top` and ``result.p`` is :math:`p`. In each norm
    :math:`\|p\,e_1^\top\| = \|p\|`: ``"fro"`` and ``"nuc"`` both give the Euclidean
    p-SVM (the same problem, through the QP or the SDP), ``("lp", q)`` the :math:`\ell_q`
    p-SVM (docs/companion.md).

    Parameters
    ----------
    data : TokenData
    alpha : array of int, shape (n,) or (n, K), optional
        The selection; default the optimal tokens (ties raise :class:`~svmgeo.TieError`).
    param : {"W", "p"}, default "W"
        ``"W"``: the query-dependent Att-SVM; ``"p"``: the p-SVM (scores :math:`x_{it}^\top p`,
        queries ignored, mask kept).
    norm, rank, method, tol, **kwargs
        As in :func:`solve_svm`.

    Returns
    -------
    SVMResult
        With ``param="p"``: ``p`` of shape (d,) (None without a solution) and
        ``W = p e1ᵀ``.

    Raises
    ------
    ProblemError
        An unknown ``param`` (``"KQ"``: use ``norm="nuc"``), and as :func:`solve_svm`.

    Warns
    -----
    InaccurateSolutionWarning
        When the status is ``*_INACCURATE`` (``status.is_inaccurate``), at the caller's line;
        not when the caller is svmgeo itself. Statuses: ``docs/statuses.md``.

    References
    ----------
    .. [1] D. A. Tarzanagh, Y. Li, C. Thrampoulidis, S. Oymak, "Transformers as Support Vector
       Machines", arXiv:2308.16898, Eq. (Att-SVM).
    """
    unknown = sorted(set(kwargs) - _SOLVE_KEYWORDS)
    if unknown:
        raise ProblemError(
            f"att_svm got unknown keyword argument(s) {', '.join(map(repr, unknown))}; "
            f"expected one of {', '.join(sorted(_SOLVE_KEYWORDS))} (see solve_svm)."
        )
    kind = check_param(param, "att_svm")
    if alpha is None:
        alpha = optimal_tokens(data)
    cs = svm_constraints(data, alpha, kind)
    options = {
        "solver": None,
        "seed": None,
        "n_restarts": None,
        "max_iter": None,
        "exact": True,
        **kwargs,
    }
    res = _solve(cs, norm=norm, rank=rank, method=method, tol=tol, where="att_svm", **options)
    return with_prompt(res, kind)


@warns_if_inaccurate("feasibility")
def feasibility(
    data: TokenData,
    alpha: Any = None,
    *,
    param: Literal["W", "p"] = "W",
    exact: bool = True,
) -> FeasibilityResult:
    r"""Is Att-SVM(α) (or the p-SVM, ``param="p"``) feasible? Exact, with a point or a Farkas
    certificate.

    .. math::

        \exists W:\ (x_{i\alpha_{ik}} - x_{it})^\top W z_{ik} \ge 1\ \forall i, k, t \ne \alpha_{ik}
        \quad\Longleftrightarrow\quad
        \nexists \lambda \ge 0:\ \textstyle\sum_j \lambda_j a_j b_j^\top = 0,\ \sum_j \lambda_j = 1 .

    Parameters
    ----------
    data : TokenData
    alpha : array of int, optional
        Default the optimal tokens (ties raise).
    param : {"W", "p"}, default "W"
        The rows of Att-SVM or of the p-SVM (every query :math:`e_1`; a feasible ``point``
        is then :math:`p\,e_1^\top`).
    exact : bool, default True
        Prove the verdict in exact rational arithmetic on the tokens (``proof="exact"``); a
        verdict without proof is undecided (``*_INACCURATE``). See docs/certificates.md.

    Returns
    -------
    FeasibilityResult

    Warns
    -----
    InaccurateSolutionWarning
        When the status is ``*_INACCURATE`` (``status.is_inaccurate``), at the caller's line;
        not when the caller is svmgeo itself. Statuses: ``docs/statuses.md``.

    References
    ----------
    .. [1] D. A. Tarzanagh, Y. Li, C. Thrampoulidis, S. Oymak, "Transformers as Support Vector
       Machines", arXiv:2308.16898, Theorem 1.
    """
    kind = check_param(param, "feasibility")
    if alpha is None:
        alpha = optimal_tokens(data)
    return check_feasibility(svm_constraints(data, alpha, kind), exact=exact)
