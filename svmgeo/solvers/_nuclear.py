# SPDX-License-Identifier: BSD-3-Clause
r"""Att-SVM⋆ (nuclear norm) as a compressed semidefinite program.

.. math::

    \min_{W\in\mathbb{R}^{d\times d}} \|W\|_* \quad\text{s.t.}\quad
    a_j^\top W b_j \ge c_j \ (\text{margin rows}),\qquad a_j^\top W b_j = c_j \ (\text{equality rows}).

Every solution can be taken in :math:`\mathrm{span}\{a_j\}\otimes\mathrm{span}\{b_j\}`:
:math:`W = U M V^\top` with orthonormal bases :math:`U \in \mathbb{R}^{d\times r_1}`,
:math:`V \in \mathbb{R}^{d\times r_2}` (Lemma 1 of Tarzanagh et al., applied on both sides), and
:math:`\|W\|_* = \|M\|_*`. With :math:`k = \min(r_1, r_2)` and :math:`M` oriented so that its
rows :math:`m_i` have length :math:`k`, svmgeo uses the *split* form of the nuclear norm

.. math::

    \|M\|_* = \min_{R \succ 0}\ \tfrac12\bigl(\operatorname{tr} R + \operatorname{tr}(M R^{-1} M^\top)\bigr)
            = \min\ \tfrac12\Bigl(\operatorname{tr} R + \sum_i t_i\Bigr)
              \ \text{s.t.}\ \begin{bmatrix} R & m_i^\top \\ m_i & t_i\end{bmatrix} \succeq 0,

i.e. :math:`\max(r_1, r_2)` PSD cones of size :math:`k + 1` sharing :math:`R`, instead of one cone
of size :math:`r_1 + r_2` (and instead of :math:`2d` for the naive model). Interior-point cost
then grows linearly with the longer side and not at all with :math:`d` once
:math:`d \ge r_1, r_2`.

The dual is :math:`\max c^\top\lambda` s.t. :math:`\|\sum_j \lambda_j a_j b_j^\top\|_2 \le 1`,
:math:`\lambda_j \ge 0` on margin rows. The backend's interior-point answer (about 1e-8
relative) is polished by Gauss–Newton on the KKT system of the identified rank and active
rows (:func:`_refine`), and the multipliers are re-checked by
:func:`~svmgeo.solvers._certificates.nuclear_certificate`.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp

from .._errors import ProblemError, SolverError
from .._validation import check_option, check_real
from ..constraints import MARGIN, ConstraintSet, check_constraint_set
from ._backends import CONIC_BACKENDS, ConicBackend
from ._certificates import (
    DECADES,
    FARKAS_TOL,
    NUC,
    RESTORE_LIMIT,
    farkas_residual,
    lift_factor,
    nuclear_certificate,
    zero_is_feasible,
)
from ._exact import identical_rows
from ._factored import Compressed, FactoredProblem, compress
from ._feasibility import _rescale_point, check_feasibility
from ._frobenius import solve_frobenius
from ._frobenius_matfree import use_matrix_free
from ._nuclear_factored import GAP_TOL, polish_nuclear, solve_nuclear_factored, trivial_nuclear
from ._result import FeasibilityResult, SVMResult, better_answer, finish, no_solution, replaced
from ._scale import unit_rows
from ._status import Status
from ._threads import one_blas_thread_when_small

__all__ = ["solve_nuclear", "solve_sdp_first"]

_SQRT2 = math.sqrt(2.0)
_MAX_NEWTON = 3000
"""Largest KKT system (unknowns) the dense Gauss–Newton polish takes on."""


@dataclass(frozen=True)
class _Conic:
    """``min qᵀx s.t. A x + s = b``, s in (zero^n_eq × nonneg^n_margin × PSD(k+1)^n_cones)."""

    A: sp.csc_matrix
    b: np.ndarray
    q: np.ndarray
    n_eq: int
    n_margin: int
    n_cones: int
    cone_size: int
    eq_rows: np.ndarray
    margin_rows: np.ndarray
    r_long: int
    k: int


def _build(cs: ConstraintSet, comp: Compressed, backend: type[ConicBackend]) -> _Conic:
    r"""Assemble the split SDP.

    Variables, in order: the upper triangle of :math:`R` (off-diagonals scaled by √2, so a
    cone entry equals its variable), :math:`X` row-major (r_long × k), and :math:`t`.
    """
    r_long, k = comp.long.shape[1], comp.short.shape[1]
    iu, ju = np.triu_indices(k)
    nR, nX = iu.size, r_long * k
    nx = nR + nX + r_long
    q = np.zeros(nx)
    q[np.flatnonzero(iu == ju)] = 0.5
    q[nR + nX :] = 0.5

    eq_rows = np.flatnonzero(cs.kind != MARGIN)
    margin_rows = np.flatnonzero(cs.kind == MARGIN)
    # a_jᵀ W b_j = <X, long_j short_jᵀ>
    F = np.einsum("jp,jq->jpq", comp.long, comp.short).reshape(cs.N, nX)
    zeros_R = sp.csr_matrix((cs.N, nR))
    zeros_t = sp.csr_matrix((cs.N, r_long))
    rows_eq = sp.hstack([zeros_R[eq_rows], sp.csr_matrix(F[eq_rows]), zeros_t[eq_rows]])
    rows_mg = sp.hstack(
        [zeros_R[margin_rows], sp.csr_matrix(-F[margin_rows]), zeros_t[margin_rows]]
    )

    s = k + 1
    ns = s * (s + 1) // 2
    # per cone: R entries, then sqrt(2) * x_{i,p} at (p, k), then t_i at (k, k)
    r_pos = backend.svec_index(iu, ju, s)
    m_pos = backend.svec_index(np.arange(k), np.full(k, k), s)
    t_pos = backend.svec_index(np.array([k]), np.array([k]), s)
    cone = np.arange(r_long)[:, None]
    row_idx = np.concatenate(
        [
            (cone * ns + r_pos[None, :]).ravel(),
            (cone * ns + m_pos[None, :]).ravel(),
            (cone * ns + t_pos[None, :]).ravel(),
        ]
    )
    col_idx = np.concatenate(
        [
            np.broadcast_to(np.arange(nR), (r_long, nR)).ravel(),
            (nR + cone * k + np.arange(k)[None, :]).ravel(),
            nR + nX + np.arange(r_long),
        ]
    )
    vals = np.concatenate(
        [np.full(r_long * nR, -1.0), np.full(r_long * k, -_SQRT2), np.full(r_long, -1.0)]
    )
    cones = sp.csr_matrix((vals, (row_idx, col_idx)), shape=(r_long * ns, nx))
    A = sp.vstack([rows_eq, rows_mg, cones]).tocsc()
    b = np.concatenate([cs.rhs[eq_rows], -cs.rhs[margin_rows], np.zeros(r_long * ns)])
    return _Conic(
        A=A,
        b=b,
        q=q,
        n_eq=eq_rows.size,
        n_margin=margin_rows.size,
        n_cones=r_long,
        cone_size=s,
        eq_rows=eq_rows,
        margin_rows=margin_rows,
        r_long=r_long,
        k=k,
    )


def _split(conic: _Conic, x: np.ndarray, z: np.ndarray, N: int) -> tuple[np.ndarray, np.ndarray]:
    """X (r_long × k) from the primal vector and row multipliers λ from the dual vector."""
    k = conic.k
    nR = k * (k + 1) // 2
    X = x[nR : nR + conic.r_long * k].reshape(conic.r_long, k)
    lam = np.zeros(N)
    lam[conic.eq_rows] = -z[: conic.n_eq]  # equality rows enter A with a + sign
    lam[conic.margin_rows] = z[conic.n_eq : conic.n_eq + conic.n_margin]
    return X, lam


def _refine(
    cs: ConstraintSet, comp: Compressed, X: np.ndarray, lam: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    r"""Newton polish of an interior-point pair :math:`(M, \lambda)` (compressed coordinates).

    Interior-point iterates separate strictly: a singular value :math:`\sigma_i(M)` is kept
    when it exceeds :math:`1 - \sigma_i(\tilde\Lambda)` (rank :math:`k`), a row is active when
    :math:`\lambda_j` exceeds its slack :math:`m_j - c_j` (equality rows always). An optimum of
    rank :math:`k` is a KKT point of the factored problem :math:`M = KQ^\top` with width
    :math:`k` (:math:`K = \tilde\Lambda Q`, :math:`Q = \tilde\Lambda^\top K`, active rows at
    :math:`c_j`), a square-ish smooth system that Gauss–Newton solves to machine precision from
    :math:`K = U_k\Sigma_k^{1/2}`, :math:`Q = V_k\Sigma_k^{1/2}`, updating the singular
    subspaces as well. The caller keeps the result only if its certificate is better. Skipped
    (the interior-point answer is returned) above ``_MAX_NEWTON`` unknowns.
    """
    At, Bt = cs.A @ comp.U, cs.B @ comp.V
    M = X.T if comp.swapped else X
    Um, s, Vmt = np.linalg.svd(M, full_matrices=False)
    sl = np.linalg.svd(At.T @ (lam[:, None] * Bt), compute_uv=False)
    n_pair = min(s.size, sl.size)
    k = int(np.count_nonzero(s[:n_pair] > 1.0 - sl[:n_pair]))
    margins = np.einsum("jp,pq,jq->j", At, M, Bt)
    active = np.flatnonzero((cs.kind != MARGIN) | (lam > margins - cs.rhs))
    if k == 0 or active.size == 0:
        return X, lam
    if (At.shape[1] + Bt.shape[1]) * k + active.size > _MAX_NEWTON:
        return X, lam  # dense Gauss-Newton would dominate the solve; keep the IPM answer
    root = np.sqrt(s[:k])
    try:
        K, Q, lam_new = FactoredProblem(cs, At, Bt, k).newton(
            Um[:, :k] * root, Vmt[:k].T * root, lam * np.isin(np.arange(cs.N), active), active
        )
    except np.linalg.LinAlgError:
        return X, lam
    M_new = K @ Q.T
    return (M_new.T if comp.swapped else M_new), lam_new


def _farkas(cs: ConstraintSet, lam: np.ndarray) -> np.ndarray | None:
    """Normalize a backend infeasibility ray to cᵀλ = 1 and keep it only if it verifies."""
    lam = lam.copy()
    lam[cs.kind == MARGIN] = np.maximum(lam[cs.kind == MARGIN], 0.0)
    value = float(cs.rhs @ lam)
    if not value > 0:
        return None
    lam /= value
    # relative to the rows' own scale (as check_feasibility): tiny rows must not pass
    if not farkas_residual(cs, lam) <= FARKAS_TOL:
        return None
    return lam


_SDP_FIRST_K = 4
"""Largest min(r1, r2) for which solver="auto" tries Clarabel's split SDP first."""
_SDP_FIRST_ENTRIES = 100_000
"""Largest N * r1 * r2 (the entries of the SDP's dense row block) for Clarabel first."""


def _sdp_first(cs: ConstraintSet, comp: Compressed) -> bool:
    r"""Whether ``solver="auto"`` runs Clarabel's split SDP before the factored path.

    :math:`k = \min(r_1, r_2) \le 4`, more rows than compressed unknowns
    (:math:`N > r_1 r_2`: the rows are linearly dependent, the regime where the factored
    path's augmented Lagrangian stalls) and :math:`N r_1 r_2 \le 10^5`. Measured (session 58,
    ad hoc, docs/performance.md): Clarabel alone faster than the factored path alone on 49 of
    the 50 grid instances inside the rule (1.2-150x CPU); outside it the factored path is
    2.6-100x faster from k = 10 and at N r1 r2 > 1e5, and the two within a few milliseconds on
    the tiny cross-attention instances (N <= r1 r2, k <= 5).
    """
    k, r_long = comp.short.shape[1], comp.long.shape[1]
    entries = r_long * k
    return k <= _SDP_FIRST_K and cs.N > entries and cs.N * entries <= _SDP_FIRST_ENTRIES


def _clarabel_first(
    cs: ConstraintSet, comp: Compressed, tol: float, options: dict[str, Any], start: float
) -> SVMResult | None:
    """Clarabel's answer when it meets the factored path's own bar (``OPTIMAL``, recomputed
    gap at most ``min(tol, GAP_TOL)``), else None: the usual chain then runs unchanged."""
    early = _attempt(cs, comp, "clarabel", tol, options, start, [])
    certificate = early.certificate
    if early.success and certificate is not None and certificate.duality_gap <= min(tol, GAP_TOL):
        return early
    return None


@one_blas_thread_when_small
def solve_sdp_first(cs: ConstraintSet, tol: float) -> SVMResult | None:
    r"""``solve_nuclear(cs, tol=tol)``'s answer where ``solver="auto"`` takes Clarabel's split
    SDP first and keeps it, before any feasibility check; else None.

    .. math::

        \min_W \|W\|_* \quad\text{s.t. the rows of } cs, \qquad
        \min(r_1, r_2) \le 4,\quad N > r_1 r_2,\quad N r_1 r_2 \le 10^5

    (:func:`_sdp_first`), kept when ``OPTIMAL`` with recomputed gap at most
    ``min(tol, GAP_TOL)`` (:func:`_clarabel_first`): the same answer as
    :func:`solve_nuclear` gives after a feasible verdict, whose own check then never ran.
    :func:`~svmgeo.solve_svm` calls it before its feasibility check on such rows, whose
    Phase-1 LP costs more than the SDP there, and which tries the answer's W as its point
    before that LP (:func:`~._feasibility.decide_feasibility`). ``cs`` already checked.

    None, before any SDP, on rows with copies (:func:`~._exact.identical_rows`, cached on the
    rows): the SVM's check, which asks next, sets the copies aside before it would try the
    answer's W, and the SVM solves the distinct rows, where this answer was thrown away
    after its SDP on every row. Where the check decides on every row before it asks (a
    feasible point from an earlier route on the ``"dual"`` geometry, such as its max-margin
    QP on a large Gram), :func:`solve_nuclear` runs the same :func:`_clarabel_first` on every row after the
    verdict: the answer this function would have given, by one SDP as before. Either way
    the same answers; one SDP instead of two where the check sets the copies aside
    (measured, session 60: ``docs/performance.md``, "Copies of rows",
    ``benchmarks/bench_svm_nuclear.py --parallel-queries --copies K``).
    """
    start = time.perf_counter()
    comp = compress(cs)
    if cs.N == 0 or comp.short.shape[1] == 0 or zero_is_feasible(cs) or not _sdp_first(cs, comp):
        return None  # solve_nuclear decides these otherwise (trivially, or factored first)
    if identical_rows(cs) is not None:
        return None  # left to the check, which asks next (see above)
    return _clarabel_first(cs, comp, tol, {}, start)


def _rank_one_rows(cs: ConstraintSet) -> bool:
    r""":math:`\min(r_1, r_2) \le 1` (the ranks of the rows' A and B): every feasible W has
    rank one, so the Frobenius optimum is the nuclear one."""
    return bool(min(np.linalg.matrix_rank(cs.A), np.linalg.matrix_rank(cs.B)) <= 1)


def _from_frobenius(cs: ConstraintSet, tol: float, start: float) -> SVMResult | None:
    r"""Att-SVM⋆ bounds from the Frobenius optimum :math:`W_F` (when the SDP backends fail).

    .. math::

        \frac{\|W_F\|_F^2}{\|W_F\|_2} = c^\top\lambda \;\le\; \min_W \|W\|_*
        \;\le\; \|W_F\|_*, \qquad \lambda = \lambda^F / \|W_F\|_2,

    since :math:`W_F = \sum_j \lambda^F_j a_j b_j^\top` (so :math:`\lambda` is dual feasible,
    :math:`\|\sum_j \lambda_j a_j b_j^\top\|_2 = 1`) and :math:`c^\top\lambda^F =
    \|W_F\|_F^2`. When :math:`\min(r_1, r_2) = 1` every feasible :math:`W` has rank one, the
    bounds meet and :math:`W_F` is the nuclear optimum (``OPTIMAL`` when
    :func:`nuclear_certificate` passes). Otherwise the result is always ``OPTIMAL_INACCURATE``,
    a feasible :math:`W` within the stated gap: the SDP could not resolve the problem, and a
    gap below ``tol`` there (a nearly rank-one :math:`W_F` of an ill-conditioned problem) is
    reported, not promoted. None when the Frobenius solve gives no feasible point.
    """
    fro = solve_frobenius(cs, tol=tol)
    if fro.W is None or fro.dual is None or not fro.status.has_solution:
        return None
    W_fro = np.asarray(fro.W)
    lifted = lift_factor(
        cs,
        cs.apply(W_fro),
        max_factor=RESTORE_LIMIT,
        increments=DECADES,
        recompute=lambda g: cs.apply(g * W_fro),
        rows="all",
    )
    if lifted is None:
        return None
    W = lifted[0] * W_fro
    spectral = float(np.linalg.norm(W, 2))
    lam = fro.dual / spectral if spectral > 0 else np.zeros(cs.N)
    lam = np.where(cs.kind == MARGIN, np.maximum(lam, 0.0), lam)
    nuc = float(np.linalg.svd(W, compute_uv=False).sum())
    lower = float(cs.rhs @ lam)
    certificate = nuclear_certificate(cs, W, lam, tol)
    exact = _rank_one_rows(cs)
    message = (
        "the SDP backends failed; the Frobenius optimum W_F is feasible and "
        f"||W_F||_* = {nuc:.6g} >= min ||W||_* >= c^T lam = {lower:.6g} "
        f"(lam = lam_F / ||W_F||_2; {fro.message})"
    )
    return finish(
        cs,
        W,
        lam,
        norm=NUC,
        tol=tol,
        status=Status.OPTIMAL if exact and certificate.passed else Status.OPTIMAL_INACCURATE,
        message=message,
        solver=f"{fro.solver}+frobenius-bound",
        objective=nuc,
        certificate=certificate,
        n_iter=fro.n_iter,
        solve_time=time.perf_counter() - start,
        extras={**fro.extras, "frobenius_bound": True, "lower_bound": lower},
    )


@one_blas_thread_when_small
def solve_nuclear(
    cs: ConstraintSet,
    *,
    solver: str = "auto",
    tol: float = 1e-8,
    feasibility: FeasibilityResult | None = None,
    **options: Any,
) -> SVMResult:
    r"""Solve Att-SVM⋆ without a rank bound: the minimum-nuclear-norm :math:`W` meeting the rows.

    .. math::

        \min_W \|W\|_* \quad\text{s.t.}\quad a_j^\top W b_j \ge c_j\ (\text{margin}),\quad
        a_j^\top W b_j = c_j\ (\text{equality}).

    The problem is compressed to :math:`W = U M V^\top` on the spans of the rows (see the
    module docstring) and solved as a split SDP of :math:`\max(r_1, r_2)` cones of size
    :math:`\min(r_1, r_2) + 1` by Clarabel (interior point, default) or SCS (first order).
    The answer is recomputed and judged by svmgeo: ``objective`` is :math:`\|W\|_*` from the
    singular values, ``dual`` are the row multipliers :math:`\lambda` (rescaled so that
    :math:`\|\sum_j\lambda_j a_j b_j^\top\|_2 \le 1`), and ``certificate`` is
    :func:`~svmgeo.solvers._certificates.nuclear_certificate`. The status is ``OPTIMAL`` only
    when that certificate holds at ``tol``; a backend's "almost solved" whose certificate
    holds is reported as ``OPTIMAL`` with a note, and a failed certificate downgrades the
    status with a message naming the residuals.

    Parameters
    ----------
    cs : ConstraintSet
        The rows :math:`(a_j, b_j, \mathrm{kind}_j, c_j)`.
    solver : {"clarabel", "scs", "auto"}, default "auto"
        ``"auto"`` (what :func:`~svmgeo.att_svm` uses): rows that the floating-point
        :func:`~svmgeo.solvers.check_feasibility` proves infeasible return ``INFEASIBLE``
        at once; rows with :math:`\min(r_1, r_2) \le 4`, :math:`N > r_1 r_2` and
        :math:`N r_1 r_2 \le 10^5` (:func:`_sdp_first`) are first solved by Clarabel's split
        SDP, before that check, and its answer is kept when it meets the factored path's bar
        below and its W passes the check's own test of a feasible point (else the check
        runs, and the answer is kept unless the rows are proved infeasible); otherwise the
        factored path
        (:func:`~svmgeo.solvers._nuclear_factored.solve_nuclear_factored`) runs, and its
        answer is kept when it is ``OPTIMAL`` (recomputed gap at most 1e-9). Else the SDP:
        SCS first and Clarabel only when
        SCS's polished answer does not pass the certificate: measured on this problem's split
        SDP, Clarabel's setup grows steeply with the number of cones sharing the block ``R``
        (12 s at (n, T, d) = (20, 10, 20) against 0.8 s for SCS), while the KKT polish makes
        either backend's answer exact (gaps ~1e-15). When both backends fail (ill-conditioned
        rows), the Frobenius optimum brackets the optimum (:func:`_from_frobenius`): exact
        and ``OPTIMAL`` when min(r1, r2) = 1, else ``OPTIMAL_INACCURATE`` with the bracket.
    tol : float in (0, 1], default 1e-8
        Tolerance of the certificate (relative for the gap, absolute for margins with
        :math:`c_j = 1`). The backend runs at :math:`10^{-2}\,\mathrm{tol}` (at most 1e-10).
    feasibility : FeasibilityResult, optional
        :func:`~svmgeo.solvers.check_feasibility`'s verdict on ``cs`` when already decided
        (:func:`~svmgeo.solve_svm` does so first, exactly): ``solver="auto"`` then reuses it
        instead of running the floating-point check again. Its ``constraints`` must be
        ``cs`` itself.
    **options
        SDP backend settings (attributes of ``clarabel.DefaultSettings`` or SCS keyword
        arguments), overriding svmgeo's. With ``solver="auto"`` they go to the SDP
        fallback (the factored path, which runs first, takes none); a backend that rejects
        an option is skipped (a ``SOLVER_ERROR`` link of the chain, named in the message)
        and the next one runs; an option that every backend rejects raises before any
        solve.

    Returns
    -------
    SVMResult
        With ``norm="nuc"``. Infeasible rows give ``status`` ``INFEASIBLE`` (with a Farkas
        vector in ``farkas`` when the backend's ray verifies), never an exception.
        ``extras`` holds the backend's native status and objective, the compressed sizes
        ``r1``, ``r2``, and ``newton_polish`` (whether the KKT polish was kept). Rows with
        :math:`\max|a|\max|b|` or bounds :math:`\max_j|c_j|` outside :math:`2^{\pm 20}` are
        solved, as by :func:`~svmgeo.solve_svm` and :func:`~svmgeo.solvers.solve_frobenius`,
        on rows and bounds of unit size (:func:`~._scale.unit_rows`: powers of two, exact), and
        the answer mapped back and certified again on ``cs`` (``extras["row_scale"]``,
        ``extras["rhs_scale"]``): on keys of size 1e-8 the backends' absolute tolerances
        gave uncertified answers there before session 60 (``OPTIMAL_INACCURATE``; measured,
        objectives up to 24 % above the optimum).

    Raises
    ------
    ProblemError
        Bad ``cs``, ``solver`` or ``tol``; a ``feasibility`` on other rows (with
        ``solver="auto"``); an option name unknown to the chosen backend (to every backend
        with ``solver="auto"``); rows or an answer beyond float64's range
        (:mod:`~svmgeo.solvers._scale`: the error names ``rhs``, ``A`` and ``B`` and how to
        rescale).
    SolverError
        The chosen backend crashed (with ``solver="auto"`` the chain goes on instead).

    Notes
    -----
    Measured on (n, T, d) = (n, 10, 200) cross-attention instances (2 shared CPU cores,
    ``OPENBLAS_NUM_THREADS=1``): Clarabel 1.0 s / 2.5 s / 5.9 s at n = 10 / 12 / 15
    (k = n), but its setup alone exceeds 100 s at n = 20 (180 cones of size 21); SCS takes
    1.7 s / 3.1 s / 4.7 s / 17 s at n = 10 / 12 / 15 / 20. With the Newton polish both reach
    relative duality gaps around 1e-14. The polish is dense and skipped above
    ``_MAX_NEWTON`` unknowns; the certificate then judges the backend's own accuracy.

    References
    ----------
    Tarzanagh, Li, Thrampoulidis, Oymak, *Transformers as Support Vector Machines*,
    arXiv:2308.16898, Att-SVM⋆ (eq. (Att-SVM⋆)) and Lemma 1.

    Examples
    --------
    >>> import svmgeo as sg
    >>> from svmgeo.solvers._nuclear import solve_nuclear
    >>> data = sg.random_data(3, 4, 6, seed=0)
    >>> cs = sg.att_svm_constraints(data, sg.optimal_tokens(data))
    >>> res = solve_nuclear(cs)
    >>> res.status, res.certificate.passed
    (<Status.OPTIMAL: 'optimal'>, True)
    """
    start = time.perf_counter()
    where = "solve_nuclear"
    cs = check_constraint_set(cs, where)
    solver = check_option(solver, "solver", (*CONIC_BACKENDS, "auto"), where=where)
    tol = check_real(tol, "tol", low=0.0, high=1.0, low_open=True, where=where)
    if solver == "auto" and feasibility is not None and feasibility.constraints is not cs:
        raise ProblemError(
            "The 'feasibility' parameter of solve_nuclear must be check_feasibility's result "
            f"on these rows (the same ConstraintSet object, N = {cs.N}); got one on other "
            f"rows (N = {feasibility.constraints.N}). Drop it to let solve_nuclear decide."
        )
    rows, scale = unit_rows(cs, where)
    if scale.identity:
        return _solve_nuclear(cs, solver, tol, feasibility, options, start)
    if solver == "auto" and feasibility is not None:
        # a verdict on cs: an INFEASIBLE one (its Farkas vector is cs's) answers here; any
        # other is reused on the unit rows, where only its being given matters
        infeasible = _infeasible(cs, start, feasibility)
        if infeasible is not None:
            return infeasible
        feasibility = scale.verdict_on_unit(feasibility)
    return scale.result(_solve_nuclear(rows, solver, tol, feasibility, options, start), NUC, tol)


def _solve_nuclear(
    cs: ConstraintSet,
    solver: str,
    tol: float,
    feasibility: FeasibilityResult | None,
    options: dict[str, Any],
    start: float,
) -> SVMResult:
    """:func:`solve_nuclear` on rows and bounds of unit size (or rows it solves as given:
    :func:`~._scale.unit_rows`), the arguments already checked; ``feasibility``, when given
    with ``solver="auto"``, is a verdict on ``cs`` itself."""
    comp = compress(cs)
    preferred, fallback = CONIC_BACKENDS  # the preference order of solver="auto"
    if cs.N == 0 or comp.short.shape[1] == 0 or zero_is_feasible(cs):
        return trivial_nuclear(cs, "svmgeo", tol, start)  # decided by svmgeo: no backend ran
    if solver != "auto":
        return _solve_with(cs, comp, solver, tol, options, start)
    _check_auto_options(options)
    # small, redundant rows: Clarabel's split SDP first (_sdp_first), before the float
    # feasibility check, which costs as much as the SDP there; its answer is kept at once
    # only when its W is the feasible point the check itself would accept (_rescale_point):
    # a certified W that misses a row by rounding must not overrule the check's Farkas
    # vector. A verdict already given decides first, for free.
    sdp_first = _sdp_first(cs, comp)
    early = None
    if sdp_first and feasibility is None:
        early = _clarabel_first(cs, comp, tol, options, start)
        if early is not None and early.W is not None and _rescale_point(cs, early.W) is not None:
            return early
    infeasible = _infeasible(cs, start, feasibility)
    if infeasible is not None:
        return infeasible
    if sdp_first and feasibility is not None:
        early = _clarabel_first(cs, comp, tol, options, start)
    if early is not None:  # not proved infeasible: Clarabel's answer, solved once
        return early
    # the factored primal with its dual certificate first (seconds where the SDP takes
    # minutes); the SDP chain is the fallback and the reference, and takes the backend options
    try:
        fast = solve_nuclear_factored(cs, tol=tol)
    except np.linalg.LinAlgError:  # an SVD or solve on non-finite iterates: the SDP decides
        pass
    else:
        if fast.success:
            return fast
    rejected: list[str] = []
    first = _attempt(cs, comp, preferred, tol, options, start, rejected)
    if first.success:
        return first
    second = _attempt(cs, comp, fallback, tol, options, start, rejected)
    if len(rejected) == len(CONIC_BACKENDS):
        raise _rejected_everywhere(options, rejected)
    if not second.success and not first.status.has_solution and not second.status.has_solution:
        # both backends failed outright: the Frobenius optimum gives a feasible W with an
        # explicit gap (exact when min(r1, r2) = 1)
        third = _from_frobenius(cs, tol, start)
        if third is not None:
            return replaced(
                third,
                message=f"{third.message} ({preferred}: {first.status}; "
                f"{fallback}: {second.status})",
            )
    if second.success or not first.status.has_solution:
        return replaced(
            second,
            message=f"{second.message} (after {preferred}: {first.status}: {first.message})",
        )
    if not second.status.has_solution:
        return first
    # two answers, neither certified: the Frobenius optimum where it is the nuclear one, else
    # the answer with the smaller largest residual, naming the other
    if _rank_one_rows(cs):
        third = _from_frobenius(cs, tol, start)
        if third is not None and third.success:
            return replaced(
                third,
                message=f"{third.message} ({preferred}: {first.status}; {fallback}: "
                f"{second.status})",
            )
    best = better_answer(first, second)
    other, name = (second, fallback) if best is first else (first, preferred)
    return replaced(
        best,
        message=f"{best.message} (kept over {name}'s answer, {other.status}, whose largest "
        f"residual is larger: {other.message})",
    )


def _check_auto_options(options: dict[str, Any]) -> None:
    """Raise before any solve when every SDP backend rejects one of the ``options``.

    With ``solver="auto"`` the options are the SDP fallback's; checking them first keeps a
    misspelt name an error even when the factored path answers and no backend runs.
    """
    if not options:
        return
    rejected = []
    for name, backend in CONIC_BACKENDS.items():
        try:
            backend.check_options(options, "solve_nuclear")
        except ProblemError as exc:
            rejected.append(f"{name}: {exc}")
        else:
            return
    raise _rejected_everywhere(options, rejected)


def _rejected_everywhere(options: dict[str, Any], rejected: list[str]) -> ProblemError:
    """The error for options that every SDP backend of ``solver="auto"`` rejects."""
    return ProblemError(
        f"Every backend of solve_nuclear(solver='auto') rejected the options "
        f"{sorted(options)}: {'; '.join(rejected)}. Pass solver='scs' or 'clarabel' with "
        "that backend's own option names."
    )


def _infeasible(
    cs: ConstraintSet, start: float, feas: FeasibilityResult | None = None
) -> SVMResult | None:
    r"""``INFEASIBLE`` with the verified Farkas vector of :func:`check_feasibility`, else None.

    The floating-point check (an LP / QP on the rows' Gram matrix; measured 0.34 s CPU at
    (n, T, d) = (100, 20, 1000) against 48 s for the factored solve, 0.01 s against 0.5 s
    at (25, 10, 200)) runs before the factored path, whose augmented Lagrangian would
    otherwise spend seconds raising its penalty on infeasible rows before the SDP decides.
    Skipped past the dense Gram (``use_matrix_free``). A verdict ``feas`` already decided
    on ``cs`` is reused.
    """
    if feas is None:
        if use_matrix_free(cs):
            return None
        feas = check_feasibility(cs, exact=False)
    if feas.status is not Status.INFEASIBLE:  # feasible, or not proved infeasible
        return None
    return no_solution(
        cs,
        feas.status,
        f"the constraints admit no W: {feas.message}",
        norm="nuc",
        solver=feas.solver,
        solve_time=time.perf_counter() - start,
        farkas=feas.farkas,
        extras={"feasibility": feas},
    )


def _attempt(
    cs: ConstraintSet,
    comp: Compressed,
    solver: str,
    tol: float,
    options: dict[str, Any],
    start: float,
    rejected: list[str],
) -> SVMResult:
    """One link of the ``solver="auto"`` chain: a backend that rejects an option (or crashes)
    is a ``SOLVER_ERROR`` result with the reason, so the chain goes on to the next backend;
    each rejection is appended to ``rejected``."""
    try:
        return _solve_with(cs, comp, solver, tol, options, start)
    except (ProblemError, SolverError) as exc:
        if isinstance(exc, ProblemError):
            rejected.append(f"{solver}: {exc}")
        return no_solution(
            cs,
            Status.SOLVER_ERROR,
            f"{solver} failed: {exc}",
            norm="nuc",
            solver=solver,
            solve_time=time.perf_counter() - start,
            extras={"exception": exc},
        )


def _solve_with(
    cs: ConstraintSet,
    comp: Compressed,
    solver: str,
    tol: float,
    options: dict[str, Any],
    start: float,
) -> SVMResult:
    """One backend's solve of the compressed SDP, refined, polished and certified."""
    backend = CONIC_BACKENDS[solver]
    conic = _build(cs, comp, backend)
    out = backend.solve_conic(conic, 1e-2 * tol, options, where="solve_nuclear")
    X, lam = _split(conic, out.x, out.z, cs.N)
    status = out.status
    note = f"{solver}: {out.native}"
    extras = {**out.extras, "r1": comp.U.shape[1], "r2": comp.V.shape[1]}

    if not status.has_solution:
        farkas = _farkas(cs, lam) if status.is_infeasible else None
        if status is Status.INFEASIBLE and farkas is None:
            status = Status.INFEASIBLE_INACCURATE
            note += "; its infeasibility ray does not verify as a Farkas vector"
        return no_solution(
            cs,
            status,
            note,
            norm="nuc",
            solver=solver,
            n_iter=out.n_iter,
            solve_time=time.perf_counter() - start,
            farkas=farkas,
            extras=extras,
        )

    X_ref, lam_ref = _refine(cs, comp, X, lam)
    W, lam_out, scale = polish_nuclear(cs, comp.to_W(X_ref), lam_ref)
    certificate = nuclear_certificate(cs, W, lam_out, tol)
    if not certificate.passed:  # keep the interior-point answer when the polish did not help
        W_raw, lam_raw, scale_raw = polish_nuclear(cs, comp.to_W(X), lam)
        raw = nuclear_certificate(cs, W_raw, lam_raw, tol)
        if raw.worst < certificate.worst:
            X_ref, W, lam_out, scale, certificate = X, W_raw, lam_raw, scale_raw, raw
    extras["newton_polish"] = X_ref is not X
    lam = lam_out
    X = X_ref
    if status is Status.OPTIMAL_INACCURATE and certificate.passed:
        status = Status.OPTIMAL
        note += f" at its inner tolerance; svmgeo's certificate holds at tol={tol:.1e}"
    return finish(
        cs,
        W,
        lam,
        norm=NUC,
        tol=tol,
        status=status,
        message=note,
        solver=solver,
        objective=scale * float(np.linalg.svd(X, compute_uv=False).sum()),
        certificate=certificate,
        n_iter=out.n_iter,
        solve_time=time.perf_counter() - start,
        extras=extras,
    )
