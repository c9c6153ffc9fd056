# SPDX-License-Identifier: BSD-3-Clause
r"""The public solver API: :func:`solve_svm`, :func:`att_svm`, :func:`feasibility`.

.. math::

    \min_W \|W\| \quad\text{s.t.}\quad a_j^\top W b_j \ge c_j\ (\text{margin rows}),\quad
    a_j^\top W b_j = c_j\ (\text{equality rows}),\quad \mathrm{rank}(W) \le m\ (\text{optional}),

with :math:`\|\cdot\|` the Frobenius norm (``norm="fro"``, Att-SVM), the nuclear norm
(``norm="nuc"``, Att-SVM⋆) or the entrywise :math:`\ell_p` norm (``norm=("lp", p)``): an
entry of the table of norms (``_norms.py``), which validates the call, solves, and falls
back. Feasibility is always decided exactly, first (or, on Att-SVM⋆ rows that Clarabel
answers first, by proving the certified W a feasible point), so an infeasible problem is a
result with a Farkas certificate, never an exception.
"""

from __future__ import annotations

import dataclasses
import inspect
import math
import time
from fractions import Fraction
from typing import Any, Literal

import numpy as np

from .._errors import ProblemError
from .._validation import check_bool, check_option
from ..constraints import (
    NO_TOKEN,
    ConstraintSet,
    att_svm_constraints,
    attention_pattern,
    check_constraint_set,
    check_map_svm,
    map_svm_constraints,
)
from ..data import TokenData
from ..selection import check_data, optimal_tokens, query_label, scores_full
from ._backends import CvxpyBackend
from ._certificates import NormGeometry, farkas_residual
from ._exact import exact_dot_signs, exact_multiple
from ._feasibility import (
    Distinct,
    check_feasibility,
    decide_feasibility,
    row_label,
    with_roundoff_note,
)
from ._geometry import RowGeometry, dense_dimension
from ._norms import (
    NORMS,
    NormEntry,
    Request,
    above_vacuous_rank,
    on_unit_rows,
    parse_norm,
    request,
)
from ._prompt import prompt_constraints
from ._reference import solve_reference
from ._result import (
    FeasibilityResult,
    SVMResult,
    better_answer,
    finish,
    no_solution,
    on_every_row,
    replaced,
    warns_if_inaccurate,
)
from ._scale import LARGEST_EXPONENT
from ._status import Status
from ._threads import blas_threads

__all__ = [
    "NORMS",
    "PARAMS",
    "STATUS_MAP",
    "NormEntry",
    "att_svm",
    "check_param",
    "feasibility",
    "solve_for",
    "solve_naive_cvxpy",
    "solve_naive_cvxpy_duals",
    "solve_svm",
    "svm_constraints",
    "with_prompt",
]


STATUS_MAP: dict[Any, Status] = CvxpyBackend.STATUS_MAP
"""cvxpy status strings → :class:`Status`; anything else is :attr:`Status.SOLVER_ERROR`."""


def _feasible_point_result(req: Request, feas: FeasibilityResult, res: SVMResult) -> SVMResult:
    """The smaller proved upper bound of the verified feasibility point and the solver's own W,
    each scaled to a multiple whose exact margins meet every row (:func:`exact_multiple`), as
    ``OPTIMAL_INACCURATE`` with ``extras["feasible_point_only"]``, after a solver wrongly
    answered INFEASIBLE, or failed (:func:`_no_approximate_optimum`). Where neither is proved
    with a finite norm (:func:`_bounded_multiple`; rows with equalities, which an exact check
    never proves a float W to meet, say), ``res`` as it is when its W meets every row
    :math:`c_j > 0` by :data:`ROUNDOFF_SHORTFALL` of its bound or more (a W short by more
    than half gives way to a proved bound only: the solver's status stands, so a
    ``MAX_ITER`` stays no solution); else the feasibility point as it is where its float
    margins meet every row (a bound only as far as they do, the message says) or a multiple
    of it with entries in float64 was proved (a norm beyond float64). ``NUMERICAL_ERROR``
    without W (:func:`_without_w`, the point in ``extras["unmet_W"]``) where its float margins
    miss a row at every float64 scale, confirmed exactly, or its norm is not finite: the
    verdict :func:`_unmet_claim` would reach, reached once here, and the message says what
    was established (no certificate is checked on a W that is not returned). A
    ``feasible_point_only`` result is judged here: :func:`_unmet_claim` keeps it.
    ``NUMERICAL_ERROR`` too when there is no point."""
    note = (
        f"{res.message}; but the rows are feasible (a point was verified), so the solver failed "
        "numerically (an ill-conditioned problem?)"
    )
    if feas.point is None:  # pragma: no cover - a feasible verdict always carries its point
        return replaced(res, status=Status.NUMERICAL_ERROR, farkas=None, message=note)
    source, name = np.asarray(feas.point), "that feasible point"
    multiple = exact_multiple(req.cs, source)  # float margins can mislead here
    proved = _bounded_multiple(req, multiple)
    if res.W is not None:
        solver_W = np.asarray(res.W)
        own = _bounded_multiple(req, exact_multiple(req.cs, solver_W))
        if own is not None and (proved is None or own[1] < proved[1]):
            source, name, proved = solver_W, "the solver's W", own  # a smaller bound
    if proved is None and not (
        res.status.is_infeasible or _no_approximate_optimum(req.cs, res, feas, ROUNDOFF_SHORTFALL)
    ):
        return res  # a W short of a row by more than half: only a proved bound replaces it
    W, value = (source, req.geometry.value(source)) if proved is None else proved
    point = name if np.array_equal(W, source) else f"a multiple of {name}"
    if proved is not None:
        bound = (
            f"W is only {point}, an upper bound {value:.6g} on the optimal value (its exact "
            "margins meet every row)"
        )
    else:  # the point itself: the verdict _unmet_claim would reach on it
        margins = req.cs.apply(W)
        float_missed = _unmet_rows(req.cs, W, margins)
        # a float miss stands unless a multiple of W with float entries was proved
        missed = float_missed if multiple is None else float_missed[:0]
        if missed.size or not np.isfinite(value):
            established = (
                f"{name} {_missed_text(req.cs, missed, margins)}"
                if missed.size
                else f"the norm of {name} ({value:.6g}) is beyond float64's range"
                + ("" if multiple is None else " (so is that of its multiple meeting every row)")
            )
            message = (
                f"{note}; yet no W with a norm in float64 was proved to meet the rows: "
                f"{established}: no W returned (extras['unmet_W']){_beyond_note(req.cs)}"
            )
            failed = replaced(res, farkas=None, certificate=None, lower_bound=None)
            return _without_w(failed, W, message)
        if float_missed.size == 0:
            bound = (
                f"W is only {point}, {value:.6g}, an upper bound on the optimal value only as "
                "far as its float margins meet the rows (no multiple of it was proved to meet "
                "them exactly)"
            )
        else:  # its float margins cancel: a multiple with float entries, its norm beyond
            bound = (
                f"the one W at hand is {point} ({value:.6g}), no multiple of it with a norm in "
                "float64 proved"
            )
    return finish(
        req.cs,
        W,
        np.zeros(req.cs.N),
        norm=req.geometry,
        tol=req.tol,
        status=Status.OPTIMAL_INACCURATE,
        message=f"{note}; {bound} (no dual: the certificate fails)",
        solver=res.solver,
        objective=value,
        rank=res.rank,
        n_iter=res.n_iter,
        extras={**res.extras, "feasible_point_only": True},
    )


def _bounded_multiple(req: Request, M: np.ndarray | None) -> tuple[np.ndarray, float] | None:
    """``(M, value)``: :func:`exact_multiple`'s multiple ``M`` of a W (exact margins meeting
    every row; None: none found) and its norm, where that norm is finite in float64; None
    otherwise. A multiple whose entries are floats but whose norm overflows (rows 1e-308
    apart: entries 1.4e308, norm beyond 2^1024) bounds nothing in float64, as no multiple
    does (before session 57 it was returned as "an upper bound inf")."""
    if M is None:
        return None
    value = req.geometry.value(M)
    return (M, value) if np.isfinite(value) else None


SHORTFALL = 0.5
r"""A failed W that meets a row :math:`c_j > 0` by less than this share of its bound,
:math:`a_j^\top W b_j < c_j / 2` in floats, is no approximate optimum
(:func:`_no_approximate_optimum`): the least multiple of W that meets the rows is more than
twice W, so its norm is no approximation of a bound on the optimal value (a row a millionth
of the others, which the solve never resolved, say). A proved bound replaces it
(:func:`_feasible_point_result`); where none is proved, it stays unless it is short of
:data:`ROUNDOFF_SHORTFALL`."""

ROUNDOFF_SHORTFALL = 2.0**-52
r"""A failed W that meets a row :math:`c_j > 0` by less than this share of its bound left that
row at its round-off (a row 200 decades below the others, which the solve never resolved):
where no bound is proved, :func:`_feasible_point_result` puts the feasibility point as it is
in its place, as for no W or a margin :math:`\le 0`. A W short of a row by less (but more
than :data:`SHORTFALL`) then stays as the solver returned it: status, W and norm."""


def _no_approximate_optimum(
    cs: ConstraintSet, res: SVMResult, feas: FeasibilityResult, share: float = SHORTFALL
) -> bool:
    r"""A failed answer (any status but ``OPTIMAL``: ``OPTIMAL_INACCURATE``, ``MAX_ITER``,
    ``NUMERICAL_ERROR``, ...) with no W, or whose W misses a positive bound at every scale (a
    margin :math:`\le 0` where :math:`c_j > 0`) or by more than half of it (a margin below
    ``share`` (:data:`SHORTFALL`) :math:`c_j`: the least multiple meeting it is more than
    twice W), where a verified feasible point exists: :func:`_feasible_point_result` replaces
    it by the smaller proved bound of that point and of W, where one is proved. A W that
    misses its rows by less (a certificate failed by a small residual) stays: a rescaling by
    at most 2 makes it feasible in floats, and it is nearer the optimum than an arbitrary
    feasible point. (Before session 57 a MAX_ITER W with margins (5e-201, 1) on rows 1e-200
    and 1 was kept, no upper bound given; before session 58 a row :math:`10^{-10}` of its
    bound: rows (1, 0) and (:math:`10^{-300}`, 0) against :math:`b = (1, 0)` and
    (:math:`10^{-10}`, 0), bounds 1 and :math:`10^{-300}`, gave ``OPTIMAL_INACCURATE`` with objective 1, the optimum being
    :math:`10^{10}`.)"""
    if res.success or feas.point is None:
        return False
    if res.W is None:
        return True
    positive = cs._positive_rows
    margins = cs.apply(res.W)[positive]
    return bool(np.any(margins < share * cs.rhs[positive]))


def _unmet_rows(cs: ConstraintSet, W: np.ndarray, margins: np.ndarray) -> np.ndarray:
    r"""The rows :math:`c_j > 0` that no positive multiple of ``W`` in float64 meets: a margin
    :math:`a_j^\top W b_j \le 0`, or one so small that the multiple :math:`t W`,
    :math:`t = c_j / (a_j^\top W b_j)`, has an entry beyond :math:`2^{1024}`."""
    positive = cs._positive_rows
    short = positive & (margins > 0.0) & (margins < cs.rhs)
    top = float(np.max(np.abs(W))) if W.size else 0.0
    beyond = np.zeros_like(short)
    if short.any() and top > 0.0:
        log_t = np.log2(cs.rhs[short]) - np.log2(margins[short])
        beyond[short] = log_t + np.log2(top) >= LARGEST_EXPONENT
    return np.flatnonzero((positive & ~(margins > 0.0)) | beyond)


def _missed_text(cs: ConstraintSet, missed: np.ndarray, margins: np.ndarray) -> str:
    """What :func:`_unmet_rows` found, as a message: how many rows, the first one's margin."""
    j = int(missed[0])
    return (
        f"misses {missed.size} row(s) with a positive bound at every scale in float64 (e.g. "
        f"row {j}, {row_label(cs, j)[0]}: margin {margins[j]:.3g} against the bound "
        f"{cs.rhs[j]:.3g}; no multiple of W with finite entries meets it)"
    )


def _beyond_note(cs: ConstraintSet) -> str:
    r"""A note where one row :math:`c_j > 0` alone needs
    :math:`\|W\|_2 \ge c_j / (\|a_j\|\,\|b_j\|) \ge 2^{1024}` (Cauchy–Schwarz), beyond
    float64's range, decided and printed with the exact exponent rounded down to two decimals
    (:func:`_hundredths_below`: 2^1024.14, not 2^1024); "" otherwise. (Before session 58 the
    float :math:`\log_2` decided: :math:`c_j` the largest float64 and :math:`a_j = b_j =
    (1, 0)` read 1024.0 and printed ">= 2^1023.99 ..., beyond float64's range".)"""
    na, nb = cs._row_norms
    positive = np.flatnonzero(cs._positive_rows & (na > 0.0) & (nb > 0.0))
    log_need = np.log2(cs.rhs[positive]) - np.log2(na[positive]) - np.log2(nb[positive])
    # the float logarithm only picks the candidates (it errs by far less than a hundredth)
    for i in np.flatnonzero(log_need >= LARGEST_EXPONENT - 0.01):
        k = int(positive[i])
        h = _hundredths_below(cs.rhs[k], cs.A[k], cs.B[k], float(log_need[i]))
        if h >= 100 * LARGEST_EXPONENT:
            return (
                f"; row {k} alone needs ||W||_2 >= c_j/(||a_j|| ||b_j||) >= "
                f"2^{h // 100}.{h % 100:02d} (Cauchy-Schwarz), beyond float64's range "
                "(2^1024): W's spectral norm itself cannot be represented in float64"
            )
    return ""


def _hundredths_below(c: float, a: np.ndarray, b: np.ndarray, log_need: float) -> int:
    r"""The largest integer :math:`h` with :math:`2^{h/100} \le c / (\|a\|\,\|b\|)`,
    decided in exact arithmetic, :math:`2^{2h} (\|a\|^2 \|b\|^2)^{100} \le c^{200}`, from
    :math:`\lfloor 100\,\ell \rfloor` (``log_need`` = :math:`\ell`, the float estimate of
    :math:`\log_2 (c / (\|a\|\,\|b\|))`) up or down. So the two decimals never overstate
    the bound; ``floor(100 * x) / 100`` in floats printed 2^1024.01 for
    :math:`c = 4.0278222002268750`, :math:`a = b = (2^{-511}, 0)`, whose exponent is below
    1024.01 (both :math:`\log_2` and :math:`100x` round)."""
    h = math.floor(100 * Fraction(log_need))
    squares = sum(Fraction(float(x)) ** 2 for x in a) * sum(Fraction(float(x)) ** 2 for x in b)
    need = (Fraction(float(c)) ** 2 / squares) ** 100  # (c / (||a|| ||b||))^200
    while Fraction(2) ** (2 * h) > need:
        h -= 1  # the float logarithm rounded up past a hundredth (never more than one or two)
    while Fraction(2) ** (2 * (h + 1)) <= need:
        h += 1  # or down past one
    return h


def _without_w(res: SVMResult, W: np.ndarray, message: str) -> SVMResult:
    """``res`` as ``NUMERICAL_ERROR`` without W (nor its margins, multipliers, objective,
    factors or ``p``, nor ``extras["feasible_point_only"]``), the d x d ``W`` kept in
    ``extras["unmet_W"]``."""
    gone = dict.fromkeys(("W", "dual", "margins", "objective", "K", "Q", "p"))  # W's, all
    extras = {k: v for k, v in res.extras.items() if k != "feasible_point_only"}
    extras["unmet_W"] = W
    return replaced(res, status=Status.NUMERICAL_ERROR, message=message, extras=extras, **gone)


def _unmet_claim(cs: ConstraintSet, res: SVMResult) -> SVMResult:
    r"""``res`` unless it claims a solution (``status.has_solution``) with a W that no positive
    multiple in float64 makes meet a row :math:`c_j > 0` (a margin
    :math:`a_j^\top W b_j \le 0`, or one needing a multiple beyond :math:`2^{1024}`:
    :func:`_unmet_rows`, confirmed in exact arithmetic: :func:`exact_multiple` finds no
    multiple), or whose norm (``objective``) is not finite, so that its norm bounds
    nothing. Such a result becomes ``NUMERICAL_ERROR`` without W (:func:`_without_w`), its
    message naming the row; where one row alone needs
    :math:`\|W\|_2 \ge c_j / (\|a_j\|\,\|b_j\|)` (Cauchy–Schwarz) beyond float64's
    range, it says so (:func:`_beyond_note`). A certified W has no such margin at ``tol`` <
    1; the feasibility point put in place of a failed solve can, and
    :func:`_feasible_point_result` judges it itself (a ``feasible_point_only`` result is
    kept here): rows (0, -5e-324) and (1, -1) (with :math:`b = (0, 1)`) are feasible, proved
    exactly, but only by a W of :math:`\|W\| \sim 10^{323}`, and the float rounding of that
    exact point had margins (5e-324, 0) (returned ``OPTIMAL_INACCURATE``, objective 1.41,
    before session 57)."""
    if not res.status.has_solution or res.W is None or res.extras.get("feasible_point_only"):
        return res
    W = np.asarray(res.W)
    margins = cs.apply(W) if res.margins is None else np.asarray(res.margins)
    missed = _unmet_rows(cs, W, margins)
    if missed.size and exact_multiple(cs, W) is not None:
        # float margins that cancel are no verdict (collinear tokens, ||W|| ~ 5e16: a margin
        # of -2.92 in floats, while W's exact margins meet every row): a float64 multiple of W
        # is proved to meet them
        missed = missed[:0]
    overflow = res.objective is not None and not np.isfinite(res.objective)
    if missed.size == 0 and not overflow:
        return res
    if missed.size:
        message = (
            f"{res.message}; but that W {_missed_text(cs, missed, margins)}, so it is no "
            "solution and its norm bounds nothing: no W returned (extras['unmet_W'])"
        )
    else:
        message = (
            f"{res.message}; but that W's norm ({res.objective}) is beyond float64's range, "
            "so it bounds nothing: no W returned (extras['unmet_W'])"
        )
    return _without_w(res, W, message + _beyond_note(cs))


def _infeasible_result(req: Request, feas: FeasibilityResult, solve_time: float) -> SVMResult:
    proved = feas.status is Status.INFEASIBLE
    undecided = "" if feas.message.startswith("undecided") else "undecided: "
    return no_solution(
        req.cs,
        feas.status if feas.status.is_infeasible else Status.INFEASIBLE_INACCURATE,
        f"the constraints admit no W: {feas.message}" if proved else f"{undecided}{feas.message}",
        norm=req.geometry.name,
        solver=feas.solver,
        rank=req.rank,
        solve_time=solve_time,
        farkas=feas.farkas,
        extras={**req.extras, "feasibility": feas},
    )


@warns_if_inaccurate("solve_svm")
def solve_svm(
    cs: ConstraintSet,
    *,
    norm: Literal["fro", "nuc", "spectral"] | tuple[str, float] = "fro",
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

        \min_W \|W\|_F,\ \|W\|_* \ \text{or}\ \|W\|_p \quad\text{s.t.}\quad
        a_j^\top W b_j \ge c_j\ (\text{margin}),\ a_j^\top W b_j = c_j\ (\text{equality}),
        \ \mathrm{rank}(W) \le m .

    Feasibility is decided first (:func:`check_feasibility`); an infeasible problem returns
    status ``INFEASIBLE`` with ``W=None`` and the Farkas vector in ``farkas``. (One
    exception, same verdict: Att-SVM⋆ rows that ``solver="auto"`` gives Clarabel first,
    :math:`\min(r_1, r_2) \le 4`, :math:`N > r_1 r_2`, :math:`N r_1 r_2 \le 10^5`, are
    solved first, and a certified answer's W is the feasible point, proved exactly, in
    ``extras["feasibility"]``; where the SDP gives no such W, infeasible rows say, the check
    decides after it, so those rows pay for the SDP as well.)

    Parameters
    ----------
    cs : ConstraintSet
        The rows.
    norm : {"fro", "nuc", "spectral"} or ("lp", p), default "fro"
        Frobenius (Att-SVM), nuclear (Att-SVM⋆), the entrywise :math:`\ell_p` norm,
        :math:`p \ge 1` (the :math:`\ell_p` Att-SVM of mirror descent, a conjecture here:
        docs/beyond.md; also spelt ``"lp:1.5"``) or the spectral norm :math:`\|W\|_2` (docs/spectral.md: "fast"
        and "auto" solve the compressed SDP, "cvxpy" the naive ``sigma_max`` model); see
        :data:`~svmgeo.solvers.NORMS`, the table of norms.
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
        ``"clarabel"`` runs it alone). For ``("lp", p)``: "fast" is the smooth dual
        (L-BFGS-B, then a Newton polish; HiGHS for p = 1, ∞), "cvxpy" the power-cone model,
        "auto" the first and, for 1 < p < ∞, the second when the first fails its
        certificate. The feasibility verdict decided here is reused, not recomputed.
    tol : float in (0, 1], default 1e-8
        Tolerance of svmgeo's certificate check (relative residuals, SPEC §6). The backends
        run at their own, tighter tolerances.
    solver : str, optional
        Backend: for ``method="cvxpy"`` a cvxpy solver name (e.g. ``"CLARABEL"``, ``"SCS"``);
        for ``norm="nuc"`` the SDP backend alone, ``"clarabel"`` or ``"scs"`` (default: the
        factored path, then SCS, then Clarabel). svmgeo's Frobenius solver has no backend
        (its cvxpy fallback uses Clarabel): ``solver`` with ``norm="fro"`` needs
        ``method="cvxpy"``; with ``("lp", p)`` it names the cvxpy solver of "cvxpy" (or of
        the fallback of "auto", 1 < p < ∞). A cvxpy solver that is not installed is refused.
    seed : int, optional
        Randomness of the rank-constrained (nonconvex) solver; needs ``rank``.
    n_restarts : int, optional
        Random starts of the rank-constrained solver in addition to its truncated-SVD start
        (default 10; 0 runs that start alone, and ``seed`` then changes nothing); needs
        ``rank``.
    max_iter : int, optional
        Iteration limit of svmgeo's Frobenius interior point, or SLSQP iterations per start of
        the rank-constrained solver (default 300), at most 2**31 - 1 (SLSQP counts in 32
        bits). Not with ``method="cvxpy"``, with ``norm="nuc"`` without ``rank``, nor with
        ``("lp", p)``.
    exact : bool, default True
        Prove the feasibility verdict in exact rational arithmetic (``proof="exact"``; see
        :func:`check_feasibility` and docs/certificates.md for the cost).

    Returns
    -------
    SVMResult
        Never ``INFEASIBLE`` on rows whose feasibility point was verified: should a solver
        answer so (an ill-conditioned problem), the verified point is returned as
        ``OPTIMAL_INACCURATE`` (an upper bound, with a failing certificate). Never a status
        with a solution (``status.has_solution``) whose W misses a row :math:`c_j > 0` at
        every scale (margin :math:`\le 0`): that is ``NUMERICAL_ERROR``, without W or
        objective (the W in ``extras["unmet_W"]``), the message saying why (rows feasible
        only by a W beyond float64's range, say).

    Raises
    ------
    ProblemError
        Unknown ``norm``, ``method``, SDP ``solver`` or cvxpy solver, ``rank < 1``, ``tol``
        outside (0, 1], a rank bound with a norm other than ``"nuc"``, a binding rank bound
        with ``method="cvxpy"``, or an option the chosen path would ignore, for every norm
        (``solver`` with a path that has no backend, ``max_iter`` with ``norm="nuc"`` and no
        rank, with ``method="cvxpy"`` or with ``("lp", p)``, ``seed`` or ``n_restarts``
        without ``rank``). Each error names the function called (``att_svm`` or
        ``solve_svm``). Also where float64 cannot hold the answer (rows and bounds are solved
        at unit size and the answer scaled back by powers of two, exactly): W scales like
        :math:`\max_j|c_j| / (\max|a_j|\max|b_j|)`, its margins like :math:`\max_j|c_j|`;
        W, its norm, its margins and the feasibility point must be finite (below
        :math:`2^{1024} \approx 1.8\cdot 10^{308}`) and W at least :math:`2^{-1022}`, and
        :math:`\max|a_j|\max|b_j|` must lie in :math:`[2^{-1022}, 2^{1024})`. The error names
        ``rhs``, ``A`` and ``B`` and which to rescale (docs/certificates.md, "Scale"). A W
        whose multipliers alone leave that range (the Frobenius ones scale like
        :math:`\max_j|c_j| / (\max|a_j|\max|b_j|)^2`) is returned ``OPTIMAL_INACCURATE``
        with ``dual=None``, the message saying why.

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
    return solve_for(
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


_SOLVE_DEFAULTS: dict[str, Any] = {
    name: parameter.default
    for name, parameter in inspect.signature(solve_svm).parameters.items()
    if parameter.kind is inspect.Parameter.KEYWORD_ONLY
}
"""The keywords of :func:`solve_svm` and their defaults (norm, rank, method, tol, the options)."""


def solve_for(
    cs: ConstraintSet,
    *,
    where: str,
    infeasible: FeasibilityResult | None = None,
    **arguments: Any,
) -> SVMResult:
    """:func:`solve_svm` for the entry point ``where`` that the user called (``att_svm``,
    ``support_tokens``, ``gen_svm``, ...), which its errors name: ``arguments`` are
    :func:`solve_svm`'s keywords (its defaults for those not given); any other is a
    :class:`ProblemError`. ``infeasible``: a verdict of infeasibility the caller proved
    from the problem's structure, reported in place of the feasibility check."""
    unknown = sorted(set(arguments) - set(_SOLVE_DEFAULTS))
    if unknown:
        raise ProblemError(
            f"{where} got unknown keyword argument(s) {', '.join(map(repr, unknown))}; "
            f"expected one of {', '.join(sorted(_SOLVE_DEFAULTS))} (see solve_svm)."
        )
    req = request(cs, where=where, **{**_SOLVE_DEFAULTS, **arguments})
    if infeasible is not None:
        res = _infeasible_result(req, infeasible, infeasible.solve_time)
        return replaced(res, proof=infeasible.proof)
    with blas_threads(dense_dimension(cs)):  # one BLAS thread for small dense solves
        return _solve_feasible_first(req)


def _solve_feasible_first(req: Request) -> SVMResult:
    """Feasibility first, then the entry's solver, reference model or fallback."""
    start = time.perf_counter()
    cs, rank, entry = req.cs, req.rank, req.entry
    if req.matrix_free:
        # past the dense Gram: solve matrix-free; a certified optimum proves feasibility
        res = on_unit_rows(req, entry.solve, None, None)
        note = "" if res.success else "; feasibility not decided (the dense check would not fit)"
        res = replaced(
            res, rank=rank, message=res.message + note, solve_time=time.perf_counter() - start
        )
        return _unmet_claim(cs, res)
    geo = RowGeometry(cs)
    if req.entry.gram_qp and req.method != "cvxpy":  # svmgeo's Frobenius solve follows
        geo.polish_tol = req.tol
    # the nuclear norm's Clarabel-first rows: solved before the check, whose LP then tries
    # the certified W as its point first (and, past the LP, solve_nuclear would give it too)
    first = (
        None
        if req.method == "cvxpy" or req.entry.solve_first is None
        else req.entry.solve_first(req)
    )
    candidate = None if first is None or first.W is None else (first.W, first.solver)
    distinct: list[Distinct] = []
    feas = decide_feasibility(
        cs, geo, req.exact, distinct=distinct, where=req.where, candidate=candidate
    )
    if feas.feasible and distinct:
        # the check met copies of rows (repeated sequences, say): so do the solvers, whose
        # factors they make singular; solved on the distinct rows, with the check's verdict
        # and geometry there
        sub_geo, sub_feas, classes = distinct[0]
        res = _solve_checked(dataclasses.replace(req, cs=sub_geo.cs), sub_geo, sub_feas, start)
        res = on_every_row(res, cs, classes, time.perf_counter() - start)
    else:  # the answer found first, where there is one, is the one the solve would give
        res = _solve_checked(req, geo, feas, start, solved=first)
    res = _unmet_claim(cs, res)
    roundoff = feas.extras.get("roundoff_rows")  # the check's note, on the SVM's result too
    return res if roundoff is None else with_roundoff_note(res, cs, roundoff)


def _solve_checked(
    req: Request,
    geo: RowGeometry,
    feas: FeasibilityResult,
    start: float,
    solved: SVMResult | None = None,
) -> SVMResult:
    """The entry's solver, reference model or fallback after the feasibility verdict ``feas``
    on ``req.cs`` (decided on ``geo``); ``start``: the solve's ``perf_counter`` start;
    ``solved``: the entry's answer when it ran first (:attr:`NormEntry.solve_first`), the
    answer its solver gives on these rows after a feasible verdict."""
    rank, entry = req.rank, req.entry
    if not feas.feasible:
        res = _infeasible_result(req, feas, time.perf_counter() - start)
        return replaced(res, proof=feas.proof)
    if solved is not None:
        res = solved
    elif req.method == "cvxpy":
        res = on_unit_rows(req, _reference, geo, feas)
    else:
        res = on_unit_rows(req, entry.solve, geo, feas)
        if (req.method == "auto" and not res.success and entry.fallback is not None
                and "dual_beyond_float64" not in res.extras):  # fmt: skip
            # (multipliers beyond float64 are so for every solver: no fallback certifies W)
            res = _fall_back(req, res)
    if not req.binding and (res.status.is_infeasible or _no_approximate_optimum(req.cs, res, feas)):
        # the exact LP above verified a feasible point: a solver's INFEASIBLE contradicts it,
        # and a failed answer with no W, or one no scaling makes feasible, is worse
        # (a binding rank bound may make a feasible convex problem infeasible)
        res = _feasible_point_result(req, feas, res)
    res = above_vacuous_rank(req, res)
    if feas.proof is None and res.status is Status.OPTIMAL:
        # a certificate on rows whose feasibility was not proved is not a proof either
        # (rows inconsistent by one ulp pass a float certificate): docs/certificates.md
        res = replaced(
            res,
            status=Status.OPTIMAL_INACCURATE,
            message=f"undecided: {res.message}; but the feasibility verdict behind it was "
            f"not proved ({feas.message})",
        )
    extras = dict(res.extras)
    extras["feasibility"] = feas
    return replaced(
        res, rank=rank, extras=extras, solve_time=time.perf_counter() - start, proof=feas.proof
    )


def _reference(req: Request, geo: RowGeometry | None, feas: FeasibilityResult | None) -> SVMResult:
    """The entry's reference model, as a driver (:func:`~._norms.on_unit_rows`)."""
    return req.entry.reference(req)


def _fall_back(req: Request, res: SVMResult) -> SVMResult:
    """``method="auto"`` after a failed fast answer: the entry's reference model when it
    certifies, or when neither certifies and its certificate's largest residual is smaller;
    otherwise svmgeo's answer, saying that the fallback was tried."""
    assert req.entry.fallback is not None
    why_not = req.entry.fallback(req)
    if why_not is not None:
        return replaced(res, message=f"{res.message}; {why_not}")
    ref = on_unit_rows(req, _reference, None, None)
    if better_answer(res, ref) is ref:
        return replaced(ref, message=f"{ref.message} (fast path: {res.status}: {res.message})")
    return replaced(
        res,
        message=f"{res.message}; the cvxpy fallback did not certify either "
        f"({ref.status}: {ref.message})",
    )


def solve_naive_cvxpy_duals(
    cs: ConstraintSet,
    norm: Literal["fro", "nuc"] | tuple[str, float] = "fro",
    *,
    solver: str = "CLARABEL",
    **solver_options: object,
) -> tuple[np.ndarray | None, np.ndarray | None, str, float, float]:
    r"""The naive cvxpy model of the SVM of ``norm``, with the rows' multipliers.

    .. math::

        \min_W \|W\| \quad\text{s.t. the rows of cs, one cvxpy constraint each}

    (:math:`\tfrac12\|W\|_F^2` for ``"fro"``: the same minimiser, a QP). The oracle of the
    tests and the reference path (``method="cvxpy"``); see
    :func:`~svmgeo.solvers._reference.solve_reference`.

    Parameters
    ----------
    cs : ConstraintSet
    norm : {"fro", "nuc"} or ("lp", p), default "fro"
    solver : str, default "CLARABEL"
    **solver_options
        Passed to cvxpy's ``problem.solve``.

    Returns
    -------
    W : ndarray of shape (d, d) or None
    dual : ndarray of shape (N,) or None
        Multipliers in svmgeo's sign convention (:math:`\ge 0` on margin rows; equality rows
        as in :math:`W = \sum_j \lambda_j a_j b_j^\top` for ``"fro"``).
    status : str
        cvxpy's status.
    value : float
        The norm at cvxpy's optimum.
    solve_time : float
        Seconds, cvxpy's canonicalization included.
    """
    return solve_reference(
        cs, _geometry(norm, "solve_naive_cvxpy"), solver=solver, **solver_options
    )


def solve_naive_cvxpy(
    cs: ConstraintSet,
    norm: Literal["fro", "nuc"] | tuple[str, float] = "fro",
    *,
    solver: str = "CLARABEL",
    **solver_options: object,
) -> tuple[np.ndarray | None, str, float, float]:
    r"""Solve :math:`\min \|W\| \text{ s.t. rows of } cs` with a full cvxpy model.

    .. math::

        \min_W \|W\| \quad\text{s.t.}\quad a_j^\top W b_j \ge c_j\ (\text{margin}),\
        a_j^\top W b_j = c_j\ (\text{equality}),

    one cvxpy constraint per row (as :func:`solve_naive_cvxpy_duals`, without the duals).

    Returns
    -------
    W : ndarray of shape (d, d) or None
    status : str
        cvxpy's status string.
    objective : float
        The optimal norm (``inf`` when infeasible).
    solve_time : float
        Wall time in seconds, cvxpy's canonicalization included.
    """
    W, _, status, value, solve_time = solve_reference(
        cs, _geometry(norm, "solve_naive_cvxpy"), solver=solver, **solver_options
    )
    return W, status, value, solve_time


def _geometry(norm: Any, where: str) -> NormGeometry:
    entry, parameter = parse_norm(norm, where)
    return entry.geometry(parameter)


PARAMS = ("W", "p")
"""The parameterizations with an SVM of their own: ``param=`` of :func:`att_svm`."""


def check_param(param: Any, where: str) -> str:
    """``param`` validated against :data:`PARAMS`; ``"KQ"`` is pointed to Att-SVM⋆."""
    if param == "KQ":
        raise ProblemError(
            f"The 'param' parameter of {where} takes 'W' or 'p'; got 'KQ'. The (K, Q) "
            "parameterization has no SVM of its own: its regularization path goes to Att-SVM⋆, "
            + (
                f"{where}(data, alpha, param='W', norm='nuc')."
                if where == "att_svm"
                else "svmgeo.att_svm(data, alpha, norm='nuc')."
            )
        )
    return check_option(param, "param", PARAMS, where=where)


def svm_constraints(data: TokenData, alpha: Any, param: str) -> ConstraintSet:
    """The rows of Att-SVM(α) (``param="W"``) or of the p-SVM (``param="p"``, every query e1)."""
    return prompt_constraints(data, alpha) if param == "p" else att_svm_constraints(data, alpha)


def with_prompt(res: SVMResult, param: str) -> SVMResult:
    """``res`` with :attr:`SVMResult.p` = :math:`W e_1` and W = :math:`p e_1^\top` for
    ``param="p"`` (unchanged otherwise): the same margins and norm (:mod:`._prompt`), also
    where other optima exist (ℓ∞, spectral) and the solver returned one of them."""
    if param != "p":
        return res
    extras = {**res.extras, "param": "p"}
    if res.W is None:
        return replaced(res, p=None, extras=extras)
    p = np.array(res.W[:, 0])
    W = np.zeros_like(res.W)
    W[:, 0] = p
    return replaced(res, p=p, W=W, extras=extras)


@warns_if_inaccurate("att_svm")
def att_svm(
    data: TokenData,
    alpha: Any = None,
    *,
    param: Literal["W", "p"] = "W",
    norm: Literal["fro", "nuc", "spectral"] | tuple[str, float] = "fro",
    rank: int | None = None,
    method: Literal["auto", "fast", "cvxpy"] = "auto",
    tol: float = 1e-8,
    attention: str = "softmax",
    pattern: Any = None,
    **kwargs: Any,
) -> SVMResult:
    r"""Att-SVM(α) of a dataset (Frobenius) or Att-SVM⋆(α) (nuclear, optional rank bound);
    with ``param="p"`` the p-SVM of prompt attention; with ``attention=`` the SVM of another
    attention map.

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
    attention : {"softmax", "linear", "sigmoid", "relu"}, default "softmax"
        The attention map whose gradient descent (:func:`~svmgeo.train` with the same
        ``attention=``) the SVM predicts; rows from
        :func:`~svmgeo.constraints.map_svm_constraints` for the others (``alpha`` and
        ``param="p"`` are softmax's only): ``"linear"``, one row per query
        :math:`(\sum_t\gamma_{ikt}x_{it})^\top W z_{ik} \ge 1` (GD's limit: a theorem,
        Soudry et al. 2018, for separable rows, an exponentially tailed loss and plain GD with
        :math:`\eta < 2/\beta`; normalized steps are measured); ``"sigmoid"``, rows
        :math:`\pi_{ikt} x_{it}^\top W z_{ik} \ge 1` of a sign pattern (svmgeo's
        conjecture); ``"relu"``, the convex QP at an active pattern whose solution is the KKT
        point of :math:`\min\|W\|^2` s.t. :math:`Y f \ge 1` there (GD's limit: a
        conjecture, measured; Lyu & Li 2020 and Ji & Telgarsky 2020 prove KKT limits for
        gradient flow, and small-step GD on smooth models, which ReLU attention is not).
        ``normalized_linear`` has none (scale-invariant).
    pattern : optional
        ``"sigmoid"``: default the pull :math:`\mathrm{sign}\,\gamma`; or a W, a run
        (``run.W``) or a sign array (n, T) / (n, K, T). ``"relu"``: required, a W, a run or a
        boolean array of active keys. See :func:`~svmgeo.constraints.attention_pattern`.

    Returns
    -------
    SVMResult
        With ``param="p"``: ``p`` of shape (d,) (None without a solution) and
        ``W = p e1ᵀ``. With another ``attention``: ``extras["attention"]`` names it and
        ``extras["pattern"]`` holds the sign pattern (n, K, T) (sigmoid, relu).

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
    data = check_data(data, "att_svm")
    kind = check_param(param, "att_svm")
    check_map_svm(attention, "att_svm", softmax=True)
    if attention != "softmax":
        return _map_svm(data, alpha, kind, attention, pattern, norm, rank, method, tol, kwargs)
    if pattern is not None:
        raise ProblemError(
            "pattern= is the sign / active pattern of attention='sigmoid' or 'relu'; softmax's "
            "Att-SVM takes the selection alpha instead. Drop pattern or pass attention=."
        )
    if alpha is None:
        alpha = optimal_tokens(data)
    cs = svm_constraints(data, alpha, kind)
    res = solve_for(cs, norm=norm, rank=rank, method=method, tol=tol, where="att_svm", **kwargs)
    return with_prompt(res, kind)


def _map_svm(
    data: TokenData, alpha: Any, param: str, attention: str, pattern: Any, norm: Any,
    rank: int | None, method: str, tol: float, kwargs: dict[str, Any],
) -> SVMResult:  # fmt: skip
    """:func:`att_svm` for an attention map other than softmax."""
    if alpha is not None or param != "W":
        raise ProblemError(
            f"attention={attention!r} has its own SVM, with no selection and no prompt vector; "
            f"got {'alpha' if alpha is not None else 'param=' + repr(param)}. Drop it (alpha "
            "and param='p' are softmax's Att-SVM options)."
        )
    cs = map_svm_constraints(data, attention, pattern)
    blocked = _relu_without_pull(data, cs) if attention == "relu" else None
    res = solve_for(
        cs, norm=norm, rank=rank, method=method, tol=tol, where="att_svm", infeasible=blocked,
        **kwargs,
    )  # fmt: skip
    extras: dict[str, Any] = {**res.extras, "attention": attention}
    if attention != "linear":
        extras["pattern"] = attention_pattern(data, attention, pattern)
    return replaced(res, extras=extras)


def _relu_without_pull(data: TokenData, cs: ConstraintSet) -> FeasibilityResult | None:
    r"""ReLU's SVM (rows of :func:`~svmgeo.constraints.map_svm_constraints`) is infeasible when
    a query has no active key with a positive score: a proof, or None.

    .. math::

        \gamma_{ikt} \le 0\ \ \forall t \in A_{ik},\quad x_{it}^\top W z_{ik} \ge 0\ \ \forall
        t \in A_{ik} \quad\Longrightarrow\quad Y_{ik} f_{ik}(W) = \sum_{t \in A_{ik}}
        \gamma_{ikt}\, x_{it}^\top W z_{ik} \le 0 < 1 .

    The signs of the scores are exact (:func:`~._exact.exact_dot_signs`), so this is a proof
    on the user's numbers. The exact check of the rows cannot give it: the query's row is the
    *rounded* sum :math:`\mathrm{fl}(\sum_t \gamma_{ikt} x_{it})`, which breaks the exact
    dependence on its keys' rows (it leaves the check undecided). The Farkas vector, 1 on the
    query's row and :math:`-\gamma_{ikt}` on its active keys' rows, meets the rows up to
    that rounding (its ``residual``).
    """
    start = time.perf_counter()
    query_rows = np.flatnonzero((cs.pref == NO_TOKEN) & (cs.comp == NO_TOKEN))
    key_rows = np.flatnonzero((cs.pref != NO_TOKEN) & (cs.comp == NO_TOKEN))  # + x_t: active
    gamma = scores_full(data)[cs.seq[key_rows], cs.query[key_rows], cs.pref[key_rows]]
    for q in query_rows:
        own = (cs.seq[key_rows] == cs.seq[q]) & (cs.query[key_rows] == cs.query[q])
        mine, g = key_rows[own], gamma[own]
        if mine.size == 0 or np.any(g > 0.0):  # no active key: a zero row, proved elsewhere
            continue
        i, k, keys = int(cs.seq[q]), int(cs.query[q]), cs.pref[mine]
        if data.scores is not None or data.v is None:  # given scores: their signs are exact
            signs = np.sign(g)
        else:  # Y_ik v.u_it: the sign of Y_ik times the exact sign of v.u_it
            values = np.asarray(data.values)[i, keys]
            signs = np.sign(np.asarray(data.labels)[i, k]) * exact_dot_signs(values, data.v)
        if np.any(signs > 0):
            continue
        lam = np.zeros(cs.N)
        lam[q] = 1.0 / cs.rhs[q]
        lam[mine] = np.maximum(-g, 0.0) / cs.rhs[q]
        return FeasibilityResult(
            feasible=False,
            status=Status.INFEASIBLE,
            message=(
                f"{query_label(data, i, k)} has no active key with a positive score (active keys "
                f"{keys.tolist()}, scores {np.array2string(g, precision=3)}; exact signs): on "
                "the pattern's cone, Y f = sum over active keys of gamma_t x_t^T W z <= 0 < 1 "
                "for every W (proved by the signs; the Farkas vector meets the rows up to the "
                "rounding of the stored row sum_t gamma_t x_t)"
            ),
            constraints=cs,
            farkas=lam,
            residual=farkas_residual(cs, lam),
            solver="svmgeo",
            solve_time=time.perf_counter() - start,
            proof="exact",
        )
    return None


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
    data = check_data(data, "feasibility")
    kind = check_param(param, "feasibility")
    if alpha is None:
        alpha = optimal_tokens(data)
    exact = check_bool(exact, "exact", where="feasibility")
    return check_feasibility(svm_constraints(data, alpha, kind), exact=exact)
