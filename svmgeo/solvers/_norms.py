# SPDX-License-Identifier: BSD-3-Clause
r"""The table of norms: every norm of :func:`~svmgeo.solve_svm`, as data.

.. math::

    \min_W \|W\| \quad\text{s.t.}\quad a_j^\top W b_j \ge c_j\ (\text{margin}),\quad
    a_j^\top W b_j = c_j\ (\text{equality}),

for :math:`\|\cdot\|` the Frobenius norm (``"fro"``, Att-SVM), the nuclear norm (``"nuc"``,
Att-SVM⋆), the entrywise :math:`\ell_p` norm (``("lp", p)``: the ℓp-AttSVM that mirror
descent converges to, as the abstract of Julistiono et al., arXiv:2410.14581, states it;
hypotheses not checked, a conjecture here, docs/beyond.md) or the spectral norm
(``"spectral"``: the spectral-descent analogue of the linear-model theorems, not proved for
softmax attention, a conjecture: docs/spectral.md, MATH-NOTES §7). In the way cvxpy maps
solver names to solvers and qpsolvers describes its backends, each :class:`NormEntry` of
:data:`NORMS` owns everything that depends on the norm: its name and command-line spelling,
parsing (a parameterised entry parses ``("lp", p)`` and ``"lp:1.5"``), its dual norm and
certificate (:class:`~._certificates.NormGeometry`), its solve driver, its cvxpy reference
model, its fallback, which options apply (and the one check that refuses the others), and
whether the matrix-free route is taken. Adding a norm is adding an entry; no other module
asks which norm it is.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .._errors import ProblemError
from .._linalg import balanced_factors, numerical_rank
from .._validation import check_bool, check_int, check_iterations, check_option, check_real
from ..constraints import ConstraintSet
from ._backends import CvxpyBackend
from ._certificates import (
    FRO,
    NUC,
    SPECTRAL,
    NormGeometry,
    lp_geometry,
    primal_certificate,
    primal_infeasibility,
)
from ._frobenius import frobenius
from ._frobenius_matfree import (
    available_bytes,
    dense_bytes,
    solve_frobenius_matfree,
    use_matrix_free,
)
from ._geometry import RowGeometry
from ._lowrank import factored_certificate, solve_lowrank
from ._lp_norm import lp_fast, lp_reference
from ._nuclear import solve_nuclear, solve_sdp_first
from ._reference import solve_reference
from ._result import FeasibilityResult, SVMResult, better_answer, finish, no_solution, replaced
from ._scale import SCALE_BAND, check_rows, unit_rows
from ._spectral import SPECTRAL_BACKENDS, solve_spectral
from ._status import Status

__all__ = [
    "METHODS",
    "NORMS",
    "OPTIONS",
    "NormEntry",
    "Request",
    "cli_norm",
    "faces",
    "norm_choices",
    "on_unit_rows",
    "parse_norm",
    "request",
]

METHODS = ("auto", "fast", "cvxpy")
"""The ``method=`` values of :func:`~svmgeo.solve_svm`."""

OPTIONS = ("solver", "max_iter", "seed", "n_restarts")
"""The options whose use depends on the norm (and on ``method`` and ``rank``): every one
given is either used or refused by :meth:`NormEntry.check_options`."""

CVXPY_FALLBACK_SIZE = 5e7
"""Largest d²·N for which ``method="auto"`` falls back to the Frobenius reference model."""

_QUERY_RANK_RTOL = 1e-12
"""Relative threshold of the rank of the distinct queries (a rank bound is vacuous at it)."""


@dataclass(frozen=True)
class Request:
    """One validated call of :func:`~svmgeo.solve_svm` (or of a function built on it)."""

    cs: ConstraintSet
    entry: NormEntry
    geometry: NormGeometry
    method: str
    tol: float
    solver: str | None
    rank: int | None
    binding: bool
    seed: int | None
    n_restarts: int
    max_iter: int | None
    exact: bool
    where: str
    matrix_free: bool = False

    @property
    def p(self) -> float | None:
        """The exponent of an :math:`\\ell_p` request, else None."""
        return self.geometry.p

    @property
    def extras(self) -> dict[str, Any]:
        """What every result of this request records (``{"p": p}`` for :math:`\\ell_p`)."""
        return {} if self.p is None else {"p": self.p}


Driver = Callable[[Request, "RowGeometry | None", "FeasibilityResult | None"], SVMResult]
Applies = Callable[[str, Request], "str | None"]


@dataclass(frozen=True)
class NormEntry:
    """One entry of :data:`NORMS`: everything :func:`~svmgeo.solve_svm` needs of a norm.

    Attributes
    ----------
    name : str
        The ``norm=`` value (``("lp", p)`` for a parameterised entry) and the result's
        ``norm``.
    title : str
        A few words for help texts.
    geometry : callable ``parameter -> NormGeometry``
        The norm, its dual and its certificate (the parameter is None for an entry without
        one).
    solve : callable ``(Request, RowGeometry | None, FeasibilityResult | None) -> SVMResult``
        svmgeo's solver (``method="fast"`` / ``"auto"``), given the rows' geometry and the
        feasibility verdict already decided (both None on the matrix-free route).
    reference : callable ``Request -> SVMResult``
        The cvxpy reference model (``method="cvxpy"``), certified by svmgeo.
    fallback : callable ``Request -> str | None``, optional
        Whether ``method="auto"`` runs ``reference`` after a failed ``solve``: None when it
        does, else why not (added to the message). Absent: no fallback at this level.
    applies : callable ``(option, Request) -> str | None``
        None when the option (one of :data:`OPTIONS`) is used by this request, else the fix
        to tell the user.
    matrix_free : callable ``(ConstraintSet, method) -> bool``
        Whether the request takes the matrix-free route (no Gram, no dense feasibility check).
    backends : tuple of str
        Accepted ``solver`` names of the fast path (empty: none).
    rank_bound : bool
        Whether ``rank=`` applies.
    parameter : str or None
        The name of the entry's parameter (``"p"``), or None.
    gram_qp : bool
        Whether the SVM is the QP :math:`\\max c^\top\\lambda - \tfrac12\\lambda^\top G\\lambda`
        on the rows' Gram matrix (the Frobenius dual): the compiled leaf solver of
        :func:`~svmgeo.locally_optimal_selections` solves it directly, and
        :func:`~svmgeo.solve_svm` asks the compiled feasibility check to polish it in the same
        call (:attr:`~._geometry.RowGeometry.polish_tol`).
    spelling : str
        The command-line spelling (``"lp:P"`` for a parameterised entry).
    lot : bool
        Whether :func:`~svmgeo.locally_optimal_selections` decides local optimality by this
        norm's support tokens (Att-SVM and Att-SVM⋆, TF-SVM's definition); the others are
        refused there (the spectral optimum, for one, is not unique, MATH-NOTES §7, so its
        support tokens would depend on the answer the solver returns).
    solve_first : callable ``Request -> SVMResult | None``, optional
        svmgeo's answer before the feasibility check, on rows where its solver costs less
        than the check's Phase-1 LP (None: the check first, as for every other request),
        and the same answer ``solve`` gives there after a feasible verdict. Its W is the
        check's first candidate point before that LP
        (:func:`~._feasibility.decide_feasibility`, proved exactly with ``exact=True``);
        the answer is kept after a feasible verdict on the rows as given, else the check and
        the solve run as usual. Absent: never.
    scale_band : float or None
        Rows are scaled to unit size (:func:`~._scale.unit_rows`) when
        :math:`\\max|a|\\max|b|` lies outside [1/band, band]: :data:`SCALE_BAND` when None;
        the ``lp`` and ``spectral`` entries take 2^4, since their LP and SDP backends'
        absolute tolerances gave uncertified answers to rows of size 2^-19 to 2^-20, inside
        the default band.
    unique_optimum : callable ``parameter -> bool``
        Whether the optimum is unique for every problem, by strict convexity (the Frobenius
        norm, and :math:`\\ell_p` for :math:`1 < p < \\infty`). Where it is not (the nuclear
        norm), support tokens and LOT verdicts are those of the returned optimum, and
        :func:`~svmgeo.is_locally_optimal` checks the optimal face
        (:func:`~svmgeo.solvers.optimum_uniqueness`).
    """

    name: str
    title: str
    geometry: Callable[[float | None], NormGeometry]
    solve: Driver
    reference: Callable[[Request], SVMResult]
    applies: Applies
    fallback: Callable[[Request], str | None] | None = None
    matrix_free: Callable[[ConstraintSet, str], bool] = field(default=lambda cs, method: False)
    backends: tuple[str, ...] = ()
    rank_bound: bool = False
    parameter: str | None = None
    gram_qp: bool = False
    spelling: str = ""
    lot: bool = False
    unique_optimum: Callable[[float | None], bool] = field(default=lambda parameter: False)
    scale_band: float | None = None
    solve_first: Callable[[Request], SVMResult | None] | None = None

    def check_options(self, req: Request, values: dict[str, Any]) -> None:
        """Raise :class:`ProblemError` for every given option that ``req`` would ignore."""
        ignored = []
        for name in OPTIONS:
            value = values.get(name)
            if value is None:
                continue
            fix = self.applies(name, req)
            if fix is not None:
                ignored.append((name, value, fix))
        if ignored:
            norm = self.name if req.p is None else (self.name, req.p)
            raise ProblemError(
                " ".join(
                    f"The '{name}' parameter of {req.where} has no effect with norm={norm!r}, "
                    f"method={req.method!r}, rank={req.rank!r}; got {name}={value!r}: {fix}."
                    for name, value, fix in ignored
                )
            )

    def _repr_html_(self) -> str:  # Jupyter: the field table (svmgeo._summary)
        from .._summary import html_summary

        return html_summary(self)


# -- scale --------------------------------------------------------------------------------------
def on_unit_rows(
    req: Request, run: Driver, geo: RowGeometry | None, feas: FeasibilityResult | None
) -> SVMResult:
    r"""``run(req, geo, feas)`` on rows and bounds of unit size, its answer mapped back to
    ``req.cs``.

    .. math::

        a'_j = a_j/\alpha,\quad b'_j = b_j/\beta,\quad c'_j = c_j/\gamma,\quad s = \alpha\beta
        \quad\Longrightarrow\quad W = \gamma W'/s,\quad \lambda = \gamma^{k-1}\lambda'/s^k,

    with :math:`\alpha, \beta, \gamma` powers of two (:func:`~._scale.unit_rows`: exact, and
    the identity when :math:`\max|a|\max|b|` is within the norm's ``scale_band`` of 1,
    :math:`2^{\pm 20}` or :math:`2^{\pm 4}`, and :math:`\max_j|c_j|` within :math:`2^{\pm 20}`)
    and :math:`k` the norm's ``dual_degree``. The margins are the same numbers on both
    sets of rows up to the factor :math:`\gamma`, so the solvers' inner (absolute) tolerances
    see O(1) data at every scale, including right-hand sides such as :math:`c_j = 10^{-10}`;
    the result is certified again on ``req.cs`` (:func:`~._result.finish`; a binding rank
    bound by its factored certificate, :func:`~._lowrank.factored_certificate`).

    Raises
    ------
    ProblemError
        When the answer mapped back does not fit in float64 (:class:`~._scale.Scale`: W, the
        multipliers, the objective or the margins beyond :math:`2^{1024}`, or W or the
        multipliers below :math:`2^{-1022}`), or the rows' :math:`a_j b_j^\top` do not
        (:func:`~._scale.unit_rows`), naming ``rhs``, ``A`` and ``B`` and how to rescale.
    """
    band = SCALE_BAND if req.entry.scale_band is None else req.entry.scale_band
    rows, scale = unit_rows(req.cs, req.where, band)
    if scale.identity:
        return run(req, geo, feas)
    scaled_feas = None if feas is None else scale.verdict_on_unit(feas)
    res = run(
        dataclasses.replace(req, cs=rows), None if geo is None else RowGeometry(rows), scaled_feas
    )
    factored = (
        (lambda cs, K, Q, lam, m: factored_certificate(cs, cs.A, cs.B, K, Q, lam, m, req.tol))
        if req.binding
        else None
    )
    return scale.result(res, req.geometry, req.tol, factored)


# -- the reference model, certified -----------------------------------------------------------
def _reference(req: Request) -> SVMResult:
    """The naive cvxpy model (:func:`~._reference.solve_reference`), certified by svmgeo."""
    start = time.perf_counter()
    cs, rank = req.cs, req.rank
    name = "CLARABEL" if req.solver is None else req.solver
    label = f"cvxpy-{name.lower()}"
    norm = req.geometry.name
    try:
        W, lam, native, value, _ = solve_reference(cs, req.geometry, solver=name)
    except Exception as exc:  # cvxpy raises SolverError and friends: a result, with the reason
        return no_solution(
            cs,
            Status.SOLVER_ERROR,
            f"cvxpy/{name} failed: {type(exc).__name__}: {exc}",
            norm=norm,
            solver=label,
            rank=rank,
            solve_time=time.perf_counter() - start,
            extras={"exception": exc},
        )
    status = CvxpyBackend.status(native)
    message = f"cvxpy status {native!r}"
    if native not in CvxpyBackend.STATUS_MAP:
        message += " (unknown to svmgeo: treated as a solver error)"
    extras = {"cvxpy_status": native, "cvxpy_value": value}
    if W is None or not status.has_solution:
        return no_solution(
            cs,
            status if not status.has_solution else Status.SOLVER_ERROR,
            message,
            norm=norm,
            solver=label,
            rank=rank,
            solve_time=time.perf_counter() - start,
            extras=extras,
        )
    margins = cs.apply(W)
    res = finish(
        cs,
        W,
        lam,
        norm=req.geometry,
        tol=req.tol,
        status=status,
        message=message,
        solver=label,
        margins=margins,
        certificate=(
            primal_certificate(cs, W, margins, req.tol, f"cvxpy/{name} returned no multipliers")
            if lam is None
            else None
        ),
        rank=rank,
        extras=extras,
    )
    return replaced(_with_factors(req, res), solve_time=time.perf_counter() - start)


# -- Frobenius ----------------------------------------------------------------------------------
def _solve_fro(req: Request, geo: RowGeometry | None, feas: FeasibilityResult | None) -> SVMResult:
    """svmgeo's exact Frobenius solver (dense), or the matrix-free one past memory; when the
    matrix-free one fails (dependent rows, e.g. Gen-SVM's equality rows, leave its CG systems
    singular) and the dense path still fits in the memory available, the dense one too."""
    kw = {} if req.max_iter is None else {"max_iter": req.max_iter}
    if req.matrix_free:
        res = solve_frobenius_matfree(req.cs, tol=req.tol)
        if res.success or dense_bytes(req.cs) > available_bytes():
            return res
        # a geometry of its own: with geometry=None, frobenius would choose the matrix-free
        # path again (the memory estimate that chose it has not changed)
        dense = frobenius(req.cs, tol=req.tol, geometry=RowGeometry(req.cs), warm_start=None, **kw)
        return better_answer(
            replaced(dense, message=f"{dense.message} (dense, after the matrix-free path: "
                     f"{res.status}: {res.message})"),
            res,
        )  # fmt: skip
    warm = None if feas is None else feas.extras.get("qp_dual")
    return frobenius(req.cs, tol=req.tol, geometry=geo, warm_start=warm, **kw)


def _fallback_fro(req: Request) -> str | None:
    # the naive model has d^2 variables and N dense rows: only a fallback for small problems
    size = req.cs.d**2 * req.cs.N
    if size <= CVXPY_FALLBACK_SIZE:
        return None
    return (
        f"no cvxpy fallback: d^2*N = {size:.3g} exceeds {CVXPY_FALLBACK_SIZE:.0e} "
        "(try method='cvxpy' explicitly, or a looser tol)"
    )


def _applies_fro(option: str, req: Request) -> str | None:
    if option == "solver" and req.method != "cvxpy":
        return (
            "svmgeo's Frobenius solver has no backend; pass method='cvxpy' "
            "to choose a cvxpy solver, or drop solver"
        )
    if option == "max_iter" and req.method == "cvxpy":
        return _MAX_ITER_FIX
    if option in ("seed", "n_restarts"):
        return _restarts_fix(option)
    return None


_MAX_ITER_FIX = (
    "it limits svmgeo's Frobenius interior point (norm='fro') "
    "and the rank-bounded solver (norm='nuc' with rank); drop max_iter"
)


def _restarts_fix(option: str) -> str:
    return (
        "it drives the restarts of the rank-bounded solver only "
        f"(norm='nuc' with rank=m); drop {option} or pass a rank"
    )


# -- nuclear ------------------------------------------------------------------------------------
def _solve_nuc(req: Request, geo: RowGeometry | None, feas: FeasibilityResult | None) -> SVMResult:
    """The convex Att-SVM⋆ (factors attached for a vacuous rank bound), or the factored
    nonconvex solver for a binding one."""
    backend = "auto" if req.solver is None else req.solver.lower()
    if req.binding:
        assert req.rank is not None  # a binding rank bound is an int (see request)
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
    return _with_factors(req, solve_nuclear(req.cs, solver=backend, tol=req.tol, feasibility=feas))


def _solve_nuc_first(req: Request) -> SVMResult | None:
    """The convex Att-SVM⋆ (``solver="auto"``, no binding rank bound) where
    :func:`~._nuclear.solve_nuclear` answers by Clarabel first
    (:func:`~._nuclear.solve_sdp_first`) on rows that need no scaling
    (:func:`on_unit_rows` would solve them as given), factors attached as by
    :func:`_solve_nuc`; else None."""
    if req.binding or (req.solver or "auto").lower() != "auto":
        return None
    band = SCALE_BAND if req.entry.scale_band is None else req.entry.scale_band
    if not unit_rows(req.cs, req.where, band)[1].identity:
        return None
    res = solve_sdp_first(req.cs, req.tol)
    return None if res is None else _with_factors(req, res)


def _with_factors(req: Request, res: SVMResult) -> SVMResult:
    """``res`` of the convex Att-SVM⋆ with a vacuous rank bound m: its factors K, Q of width m
    and ``lower_bound`` (the convex optimum is the rank-m optimum, so its value is also the
    lower bound); ``res`` itself otherwise. :func:`above_vacuous_rank` checks the factors."""
    m = _vacuous_rank(req)
    if m is None or res.W is None:
        return res
    K, Q = balanced_factors(res.W, m)
    return replaced(res, K=K, Q=Q, lower_bound=res.objective)


def _vacuous_rank(req: Request) -> int | None:
    """The rank bound m of a nuclear-norm request when it is not binding (the convex problem
    is solved), else None."""
    return (
        req.rank if req.rank is not None and not req.binding and req.entry.name == "nuc" else None
    )


def above_vacuous_rank(req: Request, res: SVMResult) -> SVMResult:
    r"""``res`` (the final answer of a solve under a rank bound m taken as vacuous: queries
    of rank :math:`\le m` to rtol ``_QUERY_RANK_RTOL``) at best ``OPTIMAL_INACCURATE``, with a
    message and no K, Q, when the rank-m truncation :math:`W_m` of its W misses the rows by
    more than ``tol`` (:func:`primal_infeasibility`): nearly dependent queries, or a
    fallback's feasible point, give a W of higher rank; ``res`` itself otherwise."""
    m = _vacuous_rank(req)
    if m is None or res.W is None:
        return res
    K, Q = (res.K, res.Q) if res.K is not None and res.Q is not None else balanced_factors(res.W, m)
    W_m = K @ Q.T
    missed = primal_infeasibility(req.cs, req.cs.apply(W_m), W_m)
    if missed <= req.tol:
        return res
    return replaced(
        res,
        status=Status.OPTIMAL_INACCURATE if res.status is Status.OPTIMAL else res.status,
        message=f"{res.message}; the rank bound {m} was taken as vacuous (the queries span at "
        f"most {m} dimensions to rtol {_QUERY_RANK_RTOL:g}), but W is not of rank {m}: its "
        f"rank-{m} truncation misses the rows by {missed:.3g}",
        K=None,
        Q=None,
        lower_bound=None,
    )


def _applies_nuc(option: str, req: Request) -> str | None:
    # the options of the rank-constrained solver are taken with any rank, binding or not: a
    # caller (a sweep, a property test) cannot tell beforehand whether the data make it bind
    if option == "max_iter" and (req.method == "cvxpy" or req.rank is None):
        return _MAX_ITER_FIX
    if option in ("seed", "n_restarts") and req.rank is None:
        return _restarts_fix(option)
    return None


# -- l_p ----------------------------------------------------------------------------------------
def _solve_lp(req: Request, geo: RowGeometry | None, feas: FeasibilityResult | None) -> SVMResult:
    assert req.p is not None  # an l_p request carries its exponent
    return lp_fast(req.cs, req.p, req.tol, req.extras)


def _reference_lp(req: Request) -> SVMResult:
    assert req.p is not None
    return lp_reference(req.cs, req.p, req.tol, req.solver, req.extras)


def _fallback_lp(req: Request) -> str | None:
    return None if _smooth(req) else "p = 1 and p = inf are linear programs: no fallback"


def _smooth(req: Request) -> bool:
    return req.p is not None and 1.0 < req.p < math.inf


def _applies_lp(option: str, req: Request) -> str | None:
    if option == "solver" and not (
        req.method == "cvxpy" or (req.method == "auto" and _smooth(req))
    ):
        return (
            "the l_p solvers have no backend (HiGHS for p = 1 and inf, svmgeo's smooth dual "
            "otherwise); a cvxpy solver name applies with method='cvxpy' (or the fallback of "
            "method='auto' for 1 < p < inf); drop solver"
        )
    if option == "max_iter":
        return "the l_p solvers take no iteration limit; drop max_iter"
    if option in ("seed", "n_restarts"):
        return _restarts_fix(option)
    return None


# -- spectral -----------------------------------------------------------------------------------
def _solve_spectral(
    req: Request, geo: RowGeometry | None, feas: FeasibilityResult | None
) -> SVMResult:
    """The compressed SDP of :mod:`._spectral` (span(A) ⊗ span(B)), certified by svmgeo."""
    return solve_spectral(req.cs, solver="auto" if req.solver is None else req.solver.lower(),
                          tol=req.tol)  # fmt: skip


def _applies_spectral(option: str, req: Request) -> str | None:
    if option == "max_iter":
        return "the spectral SDP takes no iteration limit; drop max_iter"
    if option in ("seed", "n_restarts"):
        return _restarts_fix(option)
    return None


def _parse_lp(value: Any, where: str) -> float:
    return check_real(value, "p (of norm=('lp', p))", low=1.0, high=math.inf, where=where)


NORMS: dict[str, NormEntry] = {
    "fro": NormEntry(
        name="fro",
        title="Frobenius norm (Att-SVM)",
        geometry=lambda _: FRO,
        solve=_solve_fro,
        reference=_reference,
        fallback=_fallback_fro,
        applies=_applies_fro,
        matrix_free=lambda cs, method: method != "cvxpy" and use_matrix_free(cs),
        gram_qp=True,
        lot=True,
        unique_optimum=lambda _: True,
        spelling="fro",
    ),
    "nuc": NormEntry(
        name="nuc",
        title="nuclear norm (Att-SVM*)",
        geometry=lambda _: NUC,
        solve=_solve_nuc,
        solve_first=_solve_nuc_first,
        reference=_reference,
        applies=_applies_nuc,
        backends=("auto", "clarabel", "scs"),
        rank_bound=True,
        lot=True,
        spelling="nuc",
    ),
    "lp": NormEntry(
        name="lp",
        title="entrywise l_p norm, p >= 1 (mirror descent's l_p Att-SVM: a conjecture here)",
        geometry=lambda p: lp_geometry(float(p)),  # type: ignore[arg-type]
        solve=_solve_lp,
        reference=_reference_lp,
        fallback=_fallback_lp,
        applies=_applies_lp,
        parameter="p",
        unique_optimum=lambda p: p is not None and 1.0 < p < math.inf,
        spelling="lp:P",
        scale_band=2.0**4,
    ),
    "spectral": NormEntry(
        name="spectral",
        title="spectral norm (spectral descent's Att-SVM: a conjecture for attention)",
        geometry=lambda _: SPECTRAL,
        solve=_solve_spectral,
        reference=_reference,
        applies=_applies_spectral,
        backends=SPECTRAL_BACKENDS,
        spelling="spectral",
        scale_band=2.0**4,
    ),
}
"""The norms of :func:`~svmgeo.solve_svm`: adding one is adding an entry here."""


def _norm_error(norm: Any, where: str) -> ProblemError:
    plain = ", ".join(repr(n) for n, e in NORMS.items() if e.parameter is None)
    shaped = ", ".join(f"({n!r}, {e.parameter})" for n, e in NORMS.items() if e.parameter)
    return ProblemError(
        f"The 'norm' parameter of {where} must be one of {plain} or {shaped} with p >= 1; "
        f"got {norm!r}. Example: norm=('lp', 1.5)."
    )


def parse_norm(norm: Any, where: str) -> tuple[NormEntry, float | None]:
    """The entry and parameter of ``norm``: a name, ``(name, parameter)`` or ``"name:value"``.

    Parameters
    ----------
    norm : str or tuple
        ``"fro"``, ``"nuc"``, ``("lp", p)`` or the command-line spelling ``"lp:p"``.
    where : str
        The function the user called (named in errors).

    Returns
    -------
    entry : NormEntry
    parameter : float or None
    """
    if isinstance(norm, str) and ":" in norm:
        name, _, text = norm.partition(":")
        entry = NORMS.get(name)
        if entry is None or entry.parameter is None:
            raise _norm_error(norm, where)
        try:
            value: Any = float(text)
        except ValueError:
            raise _norm_error(norm, where) from None
        return entry, _parse_lp(value, where)
    if isinstance(norm, tuple):
        entry = NORMS.get(norm[0]) if len(norm) == 2 and isinstance(norm[0], str) else None
        if entry is None or entry.parameter is None:
            raise _norm_error(norm, where)
        return entry, _parse_lp(norm[1], where)
    if not isinstance(norm, str) or norm not in NORMS or NORMS[norm].parameter is not None:
        raise _norm_error(norm, where)
    return NORMS[norm], None


def faces(norms: dict[str, Any]) -> frozenset[str]:
    r"""The labels of ``norms`` (label → ``norm`` of :func:`~svmgeo.solve_svm`) whose optimum
    need not be unique (:attr:`NormEntry.unique_optimum` False: every norm but the strictly
    convex Frobenius and :math:`\ell_p`, :math:`1 < p < \infty`): a direction is compared
    with their optimal face, not with one returned solution."""
    parsed = {k: parse_norm(v, "faces") for k, v in norms.items()}
    return frozenset(k for k, (entry, p) in parsed.items() if not entry.unique_optimum(p))


def cli_norm(text: str) -> str | tuple[str, float]:
    """The ``norm=`` value of a command-line spelling (``"fro"``, ``"lp:1.5"`` → ``("lp", 1.5)``)."""
    entry, parameter = parse_norm(text, "--norm")
    return entry.name if parameter is None else (entry.name, parameter)


def norm_choices() -> tuple[str, ...]:
    """The command-line spellings of the norms, in table order (``"lp:P"`` for ℓp)."""
    return tuple(e.spelling for e in NORMS.values())


def _query_rank(cs: ConstraintSet) -> int:
    r"""Dimension of :math:`\mathrm{span}\{b_j\}` (computed on the distinct rows of B)."""
    if cs.N == 0:
        return 0
    return numerical_rank(np.unique(cs.B, axis=0), _QUERY_RANK_RTOL)


def _check_cvxpy_solver(solver: str, where: str) -> None:
    import cvxpy as cp  # lazily: only when a cvxpy solver is named

    installed = cp.installed_solvers()
    if solver.upper() not in installed:
        raise ProblemError(
            f"The 'solver' parameter of {where} names a cvxpy solver; got {solver!r}, which "
            f"is not installed. Expected one of {', '.join(sorted(installed))}."
        )


def request(
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
) -> Request:
    """Validate one solve's arguments against the table; errors name ``where``."""
    entry, parameter = parse_norm(norm, where)
    check_rows(cs, where)
    method = check_option(method, "method", METHODS, where=where)
    tol = check_real(tol, "tol", low=0.0, high=1.0, low_open=True, where=where)
    shown = entry.name if parameter is None else (entry.name, parameter)
    if rank is not None:
        rank = check_int(rank, "rank", low=1, where=where)
        if not entry.rank_bound:
            raise ProblemError(
                f"The 'rank' parameter of {where} applies to norm='nuc' only (Att-SVM⋆); got "
                f"rank={rank} with norm={shown!r}. Drop rank or pass norm='nuc'."
            )
        factor_bytes = 16.0 * cs.d * rank  # K and Q, (d, rank) each, zero columns past d
        if rank > cs.d and factor_bytes > available_bytes():
            raise ProblemError(
                f"The 'rank' parameter of {where} asks for factors K, Q of shape "
                f"({cs.d}, {rank}): {factor_bytes:.3g} bytes, more than the memory available. "
                f"A rank of at least d = {cs.d} bounds nothing (their columns past d are 0): "
                f"pass rank={cs.d} or rank=None."
            )
    if solver is not None and not isinstance(solver, str):
        raise ProblemError(
            f"The 'solver' parameter of {where} must be a str or None. Got {solver!r} instead."
        )
    exact = check_bool(exact, "exact", where=where)
    req = Request(
        cs=cs,
        entry=entry,
        geometry=entry.geometry(parameter),
        method=method,
        tol=tol,
        solver=solver,
        rank=rank,
        binding=rank is not None and rank < min(cs.d, _query_rank(cs)),
        seed=None,
        n_restarts=10,
        max_iter=None,
        exact=exact,
        where=where,
        matrix_free=entry.matrix_free(cs, method),
    )
    if not (solver is None and seed is None and n_restarts is None and max_iter is None):
        entry.check_options(
            req, {"solver": solver, "seed": seed, "n_restarts": n_restarts, "max_iter": max_iter}
        )
    if solver is not None:
        if method != "cvxpy" and entry.backends:
            check_option(solver.lower(), "solver", entry.backends, where=where)
        else:
            _check_cvxpy_solver(solver, where)
    if req.binding and method == "cvxpy":
        raise ProblemError(
            f"method='cvxpy' of {where} cannot impose rank <= {rank} (nonconvex); use "
            "method='fast' or 'auto', or drop rank for the convex Att-SVM⋆."
        )
    if seed is None and n_restarts is None and max_iter is None:
        return req  # the defaults above
    return dataclasses.replace(
        req,
        n_restarts=10
        if n_restarts is None
        else check_int(n_restarts, "n_restarts", low=0, where=where),
        max_iter=None if max_iter is None else check_iterations(max_iter, "max_iter", where=where),
        seed=None if seed is None else check_int(seed, "seed", low=0, where=where),
    )
