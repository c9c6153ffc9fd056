# SPDX-License-Identifier: BSD-3-Clause
r"""Exact feasibility of a token-pair constraint set, with a certificate either way.

.. math::

    \exists\, W:\quad a_j^\top W b_j \ge c_j\ (j \in \mathcal M),\qquad
    a_j^\top W b_j = c_j\ (j \in \mathcal E)
    \quad\Longleftrightarrow\quad
    \nexists\, \lambda:\ \lambda_{\mathcal M} \ge 0,\ \sum_j \lambda_j a_j b_j^\top = 0,\
    c^\top \lambda = 1 .

Decided by a Phase-1 linear program (HiGHS) in a compressed space: every :math:`W` acts on the
rows only through :math:`\Phi\,\mathrm{vec}(W)`, and the range of :math:`\Phi` equals the range
of any factor :math:`L` of the Gram matrix :math:`G = (AA^\top)\circ(BB^\top) = LL^\top`. The LP
is posed on :math:`y` with :math:`Ly` in place of the margins; its dual multipliers give the
Farkas vector, which svmgeo polishes and verifies itself. When :math:`G` is singular and its
null space (N − rank G columns) is the smaller side, the same dual LP is first posed on that
null space (:func:`_solve_null_lp`; e.g. one column for rows holding a row and its reverse),
which decides an infeasible set in a fraction of the rank(G)-row LP's time; a zero value there
leaves the decision to the path above. Before any of this, rows with a large Gram matrix (all
margin rows, N ≥ :data:`GRADIENT_FROM`) are tried through the max-margin QP itself: its support
found with products with G only (:func:`~._qp.gradient_start`), solved exactly on that block
(:func:`~._qp.polish_active_set`), the optimum's W verified as the feasible point; small sets
first try every row tight (one Cholesky factor of G).
"""

from __future__ import annotations

import dataclasses
import math
import time
from types import ModuleType
from typing import Any, TypeVar

import numpy as np
import scipy.linalg as sla
import scipy.sparse as sp

from .._errors import ProblemError
from .._linalg import frobenius_norm
from .._validation import check_bool
from ..constraints import MARGIN, NO_TOKEN, ConstraintSet, check_constraint_set
from ._backends import HiGHSBackend
from ._certificates import (
    DECADES,
    FARKAS_TOL,
    ULPS,
    farkas_residual,
    lift_factor,
    point_violations,
    zero_row_farkas,
)
from ._exact import identical_rows, prove_verdict
from ._geometry import RowGeometry, compressed_width, dense_dimension, features
from ._qp import gradient_start, interior_point, polish_active_set
from ._result import (
    EVERY_ROW_TIGHT,
    FeasibilityResult,
    SVMResult,
    on_every_row,
    replaced,
    warns_if_inaccurate,
)
from ._scale import Scale, unit_rows
from ._status import Status
from ._threads import one_blas_thread_when_small

__all__ = [
    "Distinct",
    "check_feasibility",
    "decide_feasibility",
    "row_label",
    "with_roundoff_note",
]

_LP_OPTIONS = {"primal_feasibility_tolerance": 1e-10, "dual_feasibility_tolerance": 1e-10}
"""HiGHS's own (backend) tolerances; the verdict is verified by svmgeo afterwards."""
GRADIENT_FROM = 450
"""Fewest rows (Gram representation, margin rows only) for which feasibility is first sought
through the QP's support (:func:`~._qp.gradient_start` and the active-set polish) instead of
the Cholesky factor of all of G; below it the factor is cheaper than the gradient steps."""
_ROUNDOFF = 1e-13
"""Rows below this fraction of the largest row (in ‖a‖ or ‖b‖) are at the round-off level."""


_Answer = TypeVar("_Answer", SVMResult, FeasibilityResult)


def row_label(cs: ConstraintSet, j: int) -> tuple[str, bool]:
    """``"sequence i, query k, tokens p vs q"`` of row ``j``, and whether the row compares
    two tokens (else it is a row of a map's SVM, without a compared token)."""
    pair = bool(cs.pref[j] != NO_TOKEN and cs.comp[j] != NO_TOKEN)
    tokens = f", tokens {int(cs.pref[j])} vs {int(cs.comp[j])}" if pair else ""
    return f"sequence {int(cs.seq[j])}, query {int(cs.query[j])}{tokens}", pair


def _roundoff_rows(cs: ConstraintSet) -> np.ndarray:
    r"""The positive-rhs rows at the round-off level of the others, not zero:
    :math:`0 < \|a_j\| \le 10^{-13}\max_k\|a_k\|` (or the same for :math:`b`)."""
    na, nb = cs._row_norms
    tiny = (na <= _ROUNDOFF * na.max(initial=0.0)) | (nb <= _ROUNDOFF * nb.max(initial=0.0))
    return np.flatnonzero(tiny & cs._positive_rows & ~cs._zero_rows)  # zero rows: their own


def with_roundoff_note(res: _Answer, cs: ConstraintSet, rows: np.ndarray) -> _Answer:
    r"""``res`` with a note on ``rows`` (:func:`_roundoff_rows` of ``cs``), the rows at the
    round-off level of the others, where there are any (``extras["roundoff_rows"]``).

    The verdict stays that of the floats as given: a row of sequences at other scales (one
    at 1e8, one at 1e-8, say) is a row like any other, decided and proved exactly. But two
    identical tokens after a rotation differ by ~1e-16 instead of 0, and their row is met
    only by a huge :math:`W` (~1e16 times the data's scale for tokens one ulp apart), where
    the rows of exactly identical tokens would be infeasible: the note names the first such
    row, so that a caller who meant them identical can tell. (Before session 52 such rows
    made every verdict ``INFEASIBLE_INACCURATE`` at once, undecided, on mixed-scale data
    too.) The compiled route of every row tight takes no such rows, so its verdicts need no
    note.
    """
    if rows.size == 0:
        return res
    label, pair = row_label(cs, int(rows[0]))
    meant = "its tokens are meant identical" if pair else "it is meant zero (a zero query, say)"
    note = (  # no count: the note of the distinct rows of a set with copies is the same
        f"; note: rows at the round-off level of the others (below {_ROUNDOFF:.0e} of the "
        f"largest; extras['roundoff_rows']), e.g. {label}: decided on these floats as given; "
        f"if {meant} up to rounding, the rows as meant are infeasible"
    )
    message = res.message if note in res.message else res.message + note  # once (a result
    # built on a verdict's message has it)
    return replaced(res, message=message, extras={**res.extras, "roundoff_rows": rows})


def _rescale_point(cs: ConstraintSet, W: np.ndarray) -> tuple[np.ndarray, float] | None:
    r"""Scale ``W`` so that every margin row holds; return it with its worst residual, or None.

    A point is accepted only as a proof: every margin row with :math:`c_j > 0` must have a
    positive margin (then scaling meets it exactly), and every other row must hold up to the
    rounding of its own product, :math:`10^{-9}\,\|a_j\|\,\|W\|_F\,\|b_j\|` — a tolerance
    per row, so one huge margin cannot hide a violated row. (Scaling is exact when every
    equality row has :math:`c_j = 0`; otherwise the margin rows hold to that rounding.)
    """
    positive = cs._positive_rows
    if not np.all(np.isfinite(W)):
        return None
    margins = cs.apply(W)
    if np.any(margins[positive] <= 0.0):
        return None
    W0 = W

    def recompute(g: float) -> np.ndarray:
        return cs.apply(W0 * g)

    # a few ulps first; the exact few-ulp lift can fail on cancelling rows, and then any
    # larger factor that makes every row hold proves feasibility as well
    lifted = lift_factor(
        cs, margins, max_factor=np.inf, increments=ULPS, recompute=recompute
    ) or lift_factor(
        cs, margins, max_factor=np.inf, increments=DECADES, recompute=recompute, rows="all"
    )
    if lifted is not None:
        g, margins = lifted
        W = W0 * g
    viol = point_violations(cs, margins)
    row_scale = cs._row_norms[0] * cs._row_norms[1]
    allowed = 1e-9 * row_scale * max(frobenius_norm(W), 1e-300)  # scaled: W of 1e-200 has a norm
    if np.any(viol > allowed):
        return None
    return W, float(viol.max(initial=0.0))


def _normalized_rows(cs: ConstraintSet) -> tuple[ConstraintSet, np.ndarray] | None:
    r"""The rows scaled to :math:`\|a_j\| = \|b_j\| = 1` with right-hand side 1 (or 0), when
    that keeps feasibility: every equality row has :math:`c_j = 0` and every margin row
    :math:`c_j \ge 0`. Then feasibility asks for :math:`a_j^\top W b_j > 0` on the rows with
    :math:`c_j > 0` (and :math:`\ge 0`, :math:`= 0` on the others), a cone condition that each
    row's positive scale does not change. Returns the scaled set and the row scales
    :math:`\|a_j\|\,\|b_j\|` (1 for a zero row), or None.
    """
    m = cs.kind == MARGIN
    if np.any(cs.rhs[~m] != 0.0) or np.any(cs.rhs[m] < 0.0):
        return None
    na, nb = cs._row_norms
    na = np.where(na > 0, na, 1.0)
    nb = np.where(nb > 0, nb, 1.0)
    rhs = np.where(m & (cs.rhs > 0), 1.0, 0.0)
    scaled = dataclasses.replace(cs, A=cs.A / na[:, None], B=cs.B / nb[:, None], rhs=rhs)
    return scaled, na * nb


def _unit_bounds(cs: ConstraintSet) -> tuple[ConstraintSet, float]:
    r"""The rows with every right-hand side divided by :math:`s = 2^e`, :math:`\max_j|c_j|/s`
    in :math:`[1, 2)`, and :math:`s` (1 and ``cs`` itself when no :math:`c_j` is nonzero).

    :math:`W` meets the rows :math:`c/s` exactly when :math:`sW` meets :math:`c`, and a Farkas
    vector of one is a positive multiple of the other's; a power of two divides without
    rounding. The Phase-1 LP of rows that :func:`_normalized_rows` cannot scale (a
    :math:`c_j < 0`, an equality with :math:`c_j \ne 0`) runs on these bounds: its
    tolerances are absolute (bounds of 1e-20 met by W = 0, bounds of 1e20 read as infinite).
    """
    top = cs._largest_bound
    if top == 0.0 or not np.isfinite(top):
        return cs, 1.0
    s = math.ldexp(1.0, math.frexp(top)[1] - 1)
    if s == 1.0:
        return cs, 1.0
    return dataclasses.replace(cs, rhs=cs.rhs / s), s


class _Factor:
    r"""An orthonormal basis :math:`L` (N×r) of the range of the rows' features, and the map to :math:`W`.

    The margins of every :math:`W` are :math:`\Phi\,\mathrm{vec}(W)`, whose range is that of
    any factor of :math:`G = \Phi\Phi^\top = (Q\,S)(Q\,S)^\top`. The LP is posed on the
    orthonormal :math:`L = Q` (margins :math:`Ly`), not on :math:`QS`: the HiGHS tolerances
    then act equally on every direction, including those with tiny singular values
    (nearly degenerate data, whose feasible points are huge). ``W(y)`` maps back through
    :math:`S^{-1}`.
    """

    def __init__(self, geo: RowGeometry) -> None:
        self.geo = geo
        self._svd: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
        feats = None if geo.Phi is not None else _small_features(geo)
        if geo.Phi is not None or feats is not None:
            # G = ΦΦᵀ: the thin SVD of Φ keeps directions down to 1e-13 of the largest
            # singular value, where an eigendecomposition of G would cut at sqrt(1e-12)
            if geo.Phi is not None:
                assert geo.U is not None and geo.V is not None
                U, V, Phi = geo.U, geo.V, geo.Phi
            else:
                assert feats is not None
                U, V, Phi = feats
            Uq, s, Vt = np.linalg.svd(Phi, full_matrices=False)
            keep = s > (s[0] if s.size else 0.0) * 1e-13
            self.L = Uq[:, keep]
            self._s = s[keep]
            self._svd = (U, V, Vt[keep])
        else:
            G = geo.gram()
            evals, evecs = np.linalg.eigh(G)
            top = float(evals[-1]) if evals.size else 0.0
            keep = evals > max(top, 0.0) * 1e-12 * max(1, G.shape[0])
            self._evecs = evecs[:, keep]
            self._s = np.sqrt(evals[keep])
            self.L = self._evecs
            self._null = evecs[:, ~keep]

    def null_basis(self) -> np.ndarray:
        r"""An orthonormal basis :math:`Z` (N×(N−r)) of :math:`\{\lambda : L^\top\lambda = 0\}`,
        the :math:`\lambda` with :math:`\sum_j \lambda_j a_j b_j^\top = 0`."""
        if not hasattr(self, "_null"):
            N, r = self.L.shape
            self._null = sla.qr(self.L, mode="full")[0][:, r:] if r else np.eye(N)
        return np.asarray(self._null)

    def W(self, y: np.ndarray) -> np.ndarray:
        """The matrix whose margins are ``L @ y``."""
        if self._svd is not None:
            U, V, Vt = self._svd
            return np.asarray(U @ (Vt.T @ (y / self._s)).reshape(U.shape[1], V.shape[1]) @ V.T)
        lam = self._evecs @ (y / self._s**2)
        return self.geo.W(lam)

    def null_project(self, rows: np.ndarray, lam: np.ndarray) -> np.ndarray:
        r"""Project ``lam`` (supported on ``rows``) onto :math:`\{\mu : L_{rows}^\top \mu = 0\}`."""
        Lp = self.L[rows]
        if Lp.shape[1] == 0:
            return lam
        Uq, s, _ = np.linalg.svd(Lp, full_matrices=False)
        r = int(np.count_nonzero(s > (s[0] if s.size else 0.0) * 1e-10))
        Uq = Uq[:, :r]
        return lam - Uq @ (Uq.T @ lam)


def _small_features(geo: RowGeometry) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """Compressed features of a Gram-represented problem when their thin SVD is cheap."""
    cs = geo.cs
    width = compressed_width(cs)
    if cs.N * width * min(cs.N, width) > 2e8:
        return None
    return features(geo)


def _point_from_qp(
    cs: ConstraintSet, geo: RowGeometry, *, gradient: bool = False
) -> tuple[np.ndarray, float, np.ndarray] | None:
    """A verified feasible point (with its residual and the QP's λ) from the IPM (or, with
    ``gradient``, from :func:`~._qp.gradient_start`: products with G only) and the polish."""
    if gradient:
        lam, converged = gradient_start(geo), True
    else:
        lam, _, converged = interior_point(geo, solver_tol=1e-10, max_iter=60)
    if not converged or not np.all(np.isfinite(lam)):
        return None
    slack = geo.matvec(lam) - geo.c
    lam, _, settled = polish_active_set(geo, lam, ~geo.margin | (lam > slack), max_rounds=10)
    if not settled:
        return None
    point = _rescale_point(cs, geo.W(lam))
    return None if point is None else (point[0], point[1], lam)


def _solve_dual_lp(L: np.ndarray, cs: ConstraintSet) -> Any:
    r"""Dual of the Phase-1 LP: :math:`\max c^\top\lambda` s.t. :math:`L^\top\lambda = 0`,
    :math:`0 \le \lambda_{\mathcal M} \le 1`, :math:`|\lambda_{\mathcal E}| \le 1`.

    Only rank(G) equality rows (the primal form has N), so HiGHS solves it fast. Its value is the
    Phase-1 value; a positive optimum is itself a Farkas vector, and the multipliers of
    :math:`L^\top\lambda = 0` are (up to sign) a primal point y.
    """
    m = cs.kind == MARGIN
    bounds = np.where(m[:, None], [0.0, 1.0], [-1.0, 1.0])
    return HiGHSBackend.linprog(
        -np.asarray(cs.rhs, dtype=float),
        "the dual Phase-1 LP",
        A_eq=L.T,
        b_eq=np.zeros(L.shape[1]),
        bounds=bounds,
        options=_LP_OPTIONS,
    )


def _solve_null_lp(
    fac: _Factor, cs: ConstraintSet
) -> tuple[np.ndarray, float, dict[str, Any]] | None:
    r"""The dual Phase-1 LP of :func:`_solve_dual_lp` on its null space, when that is smaller.

    :math:`\lambda = Zz` with :math:`Z` an orthonormal basis of :math:`\{L^\top\lambda = 0\}`
    (:meth:`_Factor.null_basis`): :math:`\max c^\top Z z` s.t. :math:`0 \le (Zz)_{\mathcal M}
    \le 1`, :math:`|(Zz)_{\mathcal E}| \le 1` — the same LP in N−r free variables instead of
    N bounded ones under r equality rows. Returns (λ, its value, extras), or None when the
    null space is not the smaller side or HiGHS does not solve it.
    """
    N, r = fac.L.shape
    if N - r > r or N == r:  # the null space is the larger side, or {0}: nothing to decide
        return None
    Z = fac.null_basis()
    m = cs.kind == MARGIN
    lo = np.where(m, 0.0, -1.0)
    res = HiGHSBackend.linprog(
        -(Z.T @ np.asarray(cs.rhs, dtype=float)),
        "the null-space Phase-1 LP",
        A_ub=np.vstack([Z, -Z]),
        b_ub=np.concatenate([np.ones(N), -lo]),
        bounds=[(None, None)] * Z.shape[1],
        options=_LP_OPTIONS,
    )
    extras: dict[str, Any] = {"lp_status": int(res.status), "lp_message": str(res.message)}
    if res.status != 0:
        return None
    lam = Z @ np.asarray(res.x, dtype=float)
    extras["phase1_value"] = -float(res.fun)
    return lam, -float(res.fun), extras


def _solve_lp(L: np.ndarray, cs: ConstraintSet, c: np.ndarray) -> tuple[Any, int, int]:
    """Phase-1 LP: min Σ slacks s.t. L_M y + s ≥ c_M, L_E y + s⁺ − s⁻ = c_E."""
    m = cs.kind == MARGIN
    nM, nE = int(m.sum()), int((~m).sum())
    r = L.shape[1]
    cost = np.concatenate([np.zeros(r), np.ones(nM + 2 * nE)])
    A_ub = sp.hstack([sp.csr_matrix(-L[m]), -sp.identity(nM), sp.csr_matrix((nM, 2 * nE))])
    A_eq = sp.hstack(
        [sp.csr_matrix(L[~m]), sp.csr_matrix((nE, nM)), sp.identity(nE), -sp.identity(nE)]
    )
    bounds = [(None, None)] * r + [(0, None)] * (nM + 2 * nE)
    res = HiGHSBackend.linprog(
        cost,
        "the Phase-1 LP",
        A_ub=A_ub.tocsr() if nM else None,
        b_ub=-c[m] if nM else None,
        A_eq=A_eq.tocsr() if nE else None,
        b_eq=c[~m] if nE else None,
        bounds=bounds,
        options=_LP_OPTIONS,
    )
    return res, nM, nE


@warns_if_inaccurate("check_feasibility")  # outermost: it looks at its caller
@one_blas_thread_when_small
def check_feasibility(
    cs: ConstraintSet,
    *,
    geometry: RowGeometry | None = None,
    exact: bool = True,
) -> FeasibilityResult:
    r"""Decide exactly whether some :math:`W` satisfies every row of ``cs``.

    .. math::

        \text{feasible} \iff \exists W:\ a_j^\top W b_j \ge c_j\ (\mathcal M),\
        a_j^\top W b_j = c_j\ (\mathcal E);
        \qquad
        \text{infeasible} \iff \exists \lambda:\ \lambda_{\mathcal M} \ge 0,\
        \textstyle\sum_j \lambda_j a_j b_j^\top = 0,\ c^\top\lambda = 1 .

    Parameters
    ----------
    cs : ConstraintSet
    geometry : RowGeometry, optional
        The rows' Gram matrix / features when already computed for ``cs`` (reused, and its
        Cholesky factor cached for a later :func:`solve_frobenius`).
    exact : bool, default True
        Prove the verdict in exact rational arithmetic (``proof="exact"``); a verdict whose
        proof fails becomes undecided (``*_INACCURATE``), or the opposite verdict where that
        one is proved (rows inconsistent by one ulp, met by the float solves: an exact
        Farkas vector). False: the floating-point check
        only (``proof="float"``). The rows are formed exactly from ``cs.tokens`` when
        known. Cost: docs/certificates.md.

    Returns
    -------
    FeasibilityResult
        Feasible: ``point`` is a :math:`W` with margins :math:`\ge c_j` in floating point
        (scaled so the smallest margin row meets its bound; the exact proof is of a positive
        multiple, :attr:`FeasibilityResult.point`). Infeasible: ``farkas`` is a verified Farkas
        vector and ``residual`` its :func:`farkas_residual`; a certificate that does not verify
        to 1e-9 gives ``INFEASIBLE_INACCURATE``. Rows or bounds far from unit size are decided
        on rows and bounds of unit size (powers of two: exact; ``extras["row_scale"]``,
        ``extras["rhs_scale"]``) and proved on ``cs``.

    Raises
    ------
    ProblemError
        Where float64 cannot hold the certificate: the point W, which scales like
        :math:`\max_j|c_j| / (\max|a_j|\max|b_j|)`, and its margins must be finite (below
        :math:`2^{1024} \approx 1.8\cdot 10^{308}`) and W at least :math:`2^{-1022}`; the
        Farkas vector, like :math:`1/\max_j|c_j|`, finite and not below :math:`2^{-1074}`
        (subnormal entries are kept: bounds near :math:`10^{308}`); and
        :math:`\max|a_j|\max|b_j|` in :math:`[2^{-1022}, 2^{1024})`. The verdict itself holds
        at every scale; the error names ``rhs``, ``A`` and ``B`` and which to rescale.

    Warns
    -----
    InaccurateSolutionWarning
        When the status is ``*_INACCURATE`` (``status.is_inaccurate``), at the caller's line;
        not when the caller is svmgeo itself. Statuses: ``docs/statuses.md``.

    References
    ----------
    .. [1] D. A. Tarzanagh, Y. Li, C. Thrampoulidis, S. Oymak, "Transformers as Support Vector
       Machines", arXiv:2308.16898, Theorem 1 (feasibility of Att-SVM).
    """
    cs = check_constraint_set(cs, "check_feasibility")
    if geometry is not None and not isinstance(geometry, RowGeometry):
        raise ProblemError(
            "The 'geometry' parameter of check_feasibility takes the RowGeometry of cs "
            f"(svmgeo.solvers._geometry.RowGeometry(cs)) or None; got {type(geometry).__name__}."
        )
    return decide_feasibility(cs, geometry, check_bool(exact, "exact", where="check_feasibility"))


def compiled_path() -> ModuleType:
    """:mod:`~._frobenius_small`, the compiled small path, imported on first use (it imports
    numba); afterwards one read of a global (an import statement in a function runs the
    import machinery on each call, a cost of its own in a small solve).

    The global is set only once the import statement has returned, so it never holds a
    module still being imported: ``sys.modules`` holds the module from the start of its
    import, and the first small solves started at once in fresh threads read it there,
    without the attributes its body had not yet defined (``AttributeError: partially
    initialized module``). An import statement waits for another thread's import of the
    same module to finish (the module's import lock)."""
    global _compiled
    module = _compiled
    if module is None:
        from . import _frobenius_small

        module = _compiled = _frobenius_small
    return module


_compiled: ModuleType | None = None
"""The complete :mod:`~._frobenius_small` once :func:`compiled_path` has imported it."""


Distinct = tuple[RowGeometry, FeasibilityResult, tuple[np.ndarray, np.ndarray]]
"""What :func:`decide_feasibility` decided on the distinct rows of a set with copies of rows:
their geometry, the verdict there, and :func:`~._exact.identical_rows`' classes."""


def decide_feasibility(
    cs: ConstraintSet,
    geometry: RowGeometry | None,
    exact: bool,
    *,
    distinct: list[Distinct] | None = None,
    where: str = "check_feasibility",
    candidate: tuple[np.ndarray, str] | None = None,
) -> FeasibilityResult:
    """:func:`check_feasibility` for svmgeo's own callers: ``cs`` already checked, the
    caller's BLAS limit kept (:func:`~._threads.blas_threads`), no warning of its own.

    When the verdict was decided on the distinct rows of ``cs`` (copies set aside), what was
    decided there is appended to ``distinct`` (when given): a solve that follows takes it
    instead of deciding again, on a geometry with ``geometry.polish_tol``. Rows or bounds far
    from unit size are decided on rows and bounds of unit size and proved on ``cs``
    (:func:`_on_caller_scale`); ``where`` names the function called in its errors.

    ``candidate``: a solver's certified W and the solver's name (Att-SVM⋆ rows solved
    before the check, :attr:`~._norms.NormEntry.solve_first`), tried as the feasible point
    before the Phase-1 LP, where the check would reach that LP on ``cs`` itself: kept when it
    verifies (:func:`_rescale_point`) and, with ``exact``, its exact proof holds; else the
    LP decides as without it."""
    start = time.perf_counter()
    rows, to_caller = unit_rows(cs, where)
    if not to_caller.identity:
        found: list[Distinct] = []
        res = _on_caller_scale(decide_feasibility(rows, None, False, distinct=found), to_caller,
                               exact)  # fmt: skip
        if found and distinct is not None and res.feasible:  # copies set aside: on cs's scale
            unit_geo, unit_sub, copies = found[0]
            sub_geo = RowGeometry(cs.subset(copies[0]))
            sub_geo.polish_tol = None if geometry is None else geometry.polish_tol
            sub_scale = dataclasses.replace(to_caller, cs=sub_geo.cs, unit=unit_geo.cs)
            distinct.append((sub_geo, _on_caller_scale(unit_sub, sub_scale, exact), copies))
        return res
    N, d = cs.N, cs.d
    given = geometry if geometry is not None and geometry.cs is cs else None
    if given is None and 0 < N == dense_dimension(cs):  # a Gram representation costs nothing yet
        given = RowGeometry(cs)
    if given is not None and given.compiled:  # the route of every row tight, compiled
        if (verdict := compiled_path().tight_verdict(given, exact, start)) is not None:
            return verdict  # else decided below, on the G and factor it adopted
    prove = exact  # exact-proof hook (issue 11): `exact` is rebound by a loop below
    roundoff = _roundoff_rows(cs)  # decided as given, with a note

    def result(**kw: object) -> FeasibilityResult:
        elapsed = time.perf_counter() - start
        res = FeasibilityResult(constraints=cs, solve_time=elapsed, **kw)  # type: ignore[arg-type]
        res = prove_verdict(res) if prove else replaced(res, proof="float")
        return with_roundoff_note(res, cs, roundoff)

    def verified(point: tuple[np.ndarray, float], message: str, **kw: object) -> FeasibilityResult:
        """FEASIBLE with a point that :func:`_rescale_point` verified (and its residual)."""
        return result(
            feasible=True,
            status=Status.OPTIMAL,
            message=message,
            point=point[0],
            residual=point[1],
            **kw,
        )

    if N == 0:
        return result(
            feasible=True,
            status=Status.OPTIMAL,
            message="no constraints: W = 0 is feasible",
            point=np.zeros((d, d)),
            solver="svmgeo",
        )
    if (lam0 := zero_row_farkas(cs)) is not None:
        j = int(np.flatnonzero(lam0)[0])
        label, pair = row_label(cs, j)
        cause = (
            "a zero query or two identical tokens"
            if pair
            else "a zero query, or a zero weighted sum of its keys: no active key, say"
        )
        return result(
            feasible=False,
            status=Status.INFEASIBLE,
            message=f"row {j} ({label}) has a_j b_j^T = 0 ({cause}) but needs {cs.rhs[j]:g}",
            farkas=lam0,
            residual=0.0,
            solver="svmgeo",
        )
    geo = RowGeometry(cs) if given is None else given
    c = np.asarray(cs.rhs, dtype=float)

    def qp_verdict(gradient: bool) -> FeasibilityResult | None:
        """FEASIBLE from the max-margin QP's polished solution (:func:`_point_from_qp`), its
        multipliers kept for the solve; None when it does not verify."""
        qp = _point_from_qp(cs, geo, gradient=gradient)
        if qp is None:
            return None
        return verified(
            qp[:2],
            "feasible: the max-margin QP's polished solution meets every row",
            solver="svmgeo-active-set" if gradient else "svmgeo-ipm",
            extras={"qp_dual": qp[2]},
        )

    if geo.kind == "dual" and N >= GRADIENT_FROM and np.all(geo.margin):
        # large Gram: the max-margin QP's support from products with G, factored alone, gives
        # a point at a fraction of the cost of factoring all of G
        if (verdict := qp_verdict(gradient=True)) is not None:
            return verdict
    # fast path: G positive definite -> every row can be made tight at once
    if geo.kind == "dual":
        lam = geo.tight()  # kept on geo: the active-set polish's first round is the same solve
        if lam is not None:
            if np.all(np.isfinite(lam)):
                ok = _rescale_point(cs, geo.W(lam))
                if ok is not None:
                    return verified(ok, EVERY_ROW_TIGHT, solver="svmgeo-cholesky")
    if (classes := identical_rows(cs)) is not None:  # repeated sequences, say
        sub_geo = RowGeometry(cs.subset(classes[0]))
        sub_geo.polish_tol = geo.polish_tol
        sub = decide_feasibility(sub_geo.cs, sub_geo, prove)
        if distinct is not None:
            distinct.append((sub_geo, sub, classes))
        res = on_every_row(sub, cs, classes, time.perf_counter() - start)
        if roundoff.size:  # the note is the distinct rows'; the rows are every copy
            res = replaced(res, extras={**res.extras, "roundoff_rows": roundoff})
        if res.farkas is None:
            return res
        return replaced(res, residual=max(sub.residual, farkas_residual(cs, res.farkas)))
    if candidate is not None and (ok := _rescale_point(cs, candidate[0])) is not None:
        message = f"feasible: {candidate[1]}'s certified W meets every row"
        given_point = verified(ok, message, solver=candidate[1])
        if given_point.status is Status.OPTIMAL and (given_point.proof == "exact" or not prove):
            return given_point  # else (its exact proof failed) the LP decides, as without it
    # the LP decides on rows scaled to unit size when that keeps feasibility (homogeneous
    # rows): a tiny row must not drown in the tolerances of a large one
    normalized = _normalized_rows(cs)
    if normalized is not None:
        (cs_lp, row_scale), point_scale = normalized, 1.0
    else:  # bounds near 1 (the LP's tolerances are absolute); W scaled back below
        (cs_lp, point_scale), row_scale = _unit_bounds(cs), np.ones(N)
    c = np.asarray(cs_lp.rhs, dtype=float)
    scale = max(1.0, float(np.abs(c).max()))
    factor: list[_Factor] = []

    def lp_factor() -> _Factor:
        """The factor of the LP's rows, built once (an SVD or eigendecomposition)."""
        if not factor:
            factor.append(_Factor(RowGeometry(cs_lp) if normalized is not None else geo))
        return factor[0]

    def infeasible(lam: np.ndarray, opt: float, solver: str, extras: dict) -> FeasibilityResult:
        """INFEASIBLE from an LP's λ, polished and verified on the original rows."""
        lam_v, residual = _polish_farkas(cs_lp, lp_factor(), lam)
        if lam_v is not None and cs_lp is not cs:
            # back to the original rows: same sum of lam_j a_j b_j^T, c^T lam renormalized to 1
            lam_v = lam_v / row_scale
            lam_v = lam_v / float(cs.rhs @ lam_v)
            residual = max(residual, farkas_residual(cs, lam_v))
        if lam_v is None:
            return result(
                feasible=False,
                status=Status.NUMERICAL_ERROR,
                message=(
                    f"Phase-1 LP value {opt:.3g} > 0 but its dual gives no usable Farkas "
                    "vector; the problem is numerically borderline"
                    if opt > 1e-7 * scale
                    else f"Phase-1 LP value {opt:.3g} (0 to its tolerance) but no point of it "
                    "verified, and its dual gives no usable Farkas vector; the problem is "
                    "numerically borderline"
                ),
                solver=solver,
                extras=extras,
            )
        good = residual <= FARKAS_TOL
        return result(
            feasible=False,
            status=Status.INFEASIBLE if good else Status.INFEASIBLE_INACCURATE,
            message=(
                "infeasible: Farkas certificate verified"
                if good
                else f"infeasible, but the Farkas residual {residual:.3g} exceeds {FARKAS_TOL:.0e}"
            ),
            farkas=lam_v,
            residual=residual,
            solver=solver,
            extras=extras,
        )

    def null_space_verdict() -> FeasibilityResult | None:
        """INFEASIBLE from the Phase-1 LP on G's null space when that is the smaller side
        (a few columns instead of rank(G) equality rows); None when it does not decide."""
        null = _solve_null_lp(lp_factor(), cs_lp)
        if null is None or null[1] <= 1e-7 * scale:
            return None
        return infeasible(null[0], null[1], "highs-nullspace", null[2])

    width = cs.N if geo.Phi is None else geo.Phi.shape[1]
    large = cs.N * width > 20_000
    # G singular (no Cholesky, or rank <= width < N) and the null space possibly the smaller
    # side: decided there at once, before the QP unless the QP would spare an SVD of large
    # features
    singular = (geo.Phi is None and geo.full_factor() is None) or 2 * width >= N
    early = singular and (geo.Phi is None or not large)
    if early and (verdict := null_space_verdict()) is not None:
        return verdict
    if large:
        # large dense LP: first try to certify feasibility with the exact QP solver's answer
        if (verdict := qp_verdict(gradient=False)) is not None:
            return verdict
        if singular and not early and (verdict := null_space_verdict()) is not None:
            return verdict
    fac = lp_factor()
    dual = _solve_dual_lp(fac.L, cs_lp)
    extras: dict[str, Any] = {"lp_status": int(dual.status), "lp_message": str(dual.message)}
    if dual.status == 0:
        opt = -float(dual.fun)
        extras["phase1_value"] = opt
        feasible_lp = opt <= 1e-7 * scale
        lam = np.asarray(dual.x, dtype=float)
        y = np.array(dual.eqlin.marginals, dtype=np.float64)
        candidates = [y, -y] if feasible_lp else []
    else:  # fall back to the primal form of the Phase-1 LP
        res, nM, nE = _solve_lp(fac.L, cs_lp, c)
        if res.status != 0:
            return result(
                feasible=False,
                status=Status.SOLVER_ERROR,
                message=f"HiGHS failed on the Phase-1 LP: {res.message}",
                solver="highs",
                extras=extras,
            )
        opt = float(res.fun)
        extras["phase1_value"] = opt
        feasible_lp = opt <= 1e-7 * scale
        m = cs_lp.kind == MARGIN
        lam = np.zeros(N)
        if nM:
            lam[m] = -np.asarray(res.ineqlin.marginals)
        if nE:
            lam[~m] = np.asarray(res.eqlin.marginals)
        candidates = [np.asarray(res.x[: fac.L.shape[1]])] if feasible_lp else []
    if feasible_lp:
        # the LP says feasible: a point must verify; the margin-2c LP gives room for round-off
        for k in range(len(candidates) + 1):
            if k == len(candidates):
                x = _solve_lp(fac.L, cs_lp, 2.0 * c)[0].x
                if x is None:  # HiGHS failed on it
                    break
                y_k = np.asarray(x[: fac.L.shape[1]])
            else:
                y_k = candidates[k]
            ok = _rescale_point(cs, fac.W(y_k) * point_scale)
            if ok is not None:
                return verified(
                    ok,
                    "feasible: Phase-1 LP optimum 0, point verified",
                    solver="highs",
                    extras=extras,
                )
    return infeasible(lam, opt, "highs", extras)


def _on_caller_scale(res: FeasibilityResult, scale: Scale, exact: bool) -> FeasibilityResult:
    r"""The verdict ``res`` decided on rows and bounds of unit size (:func:`~._scale.unit_rows`)
    as the verdict on ``scale.cs``, proved there when ``exact``.

    .. math::

        W = \frac{\gamma}{s}\,W', \qquad \lambda_{\mathrm{Farkas}} = \lambda'/\gamma

    (powers of two: exact). The verdict is the same at every scale (a W meets the unit rows
    exactly when :math:`\gamma W/s` meets ``cs``, and :math:`\sum_j \lambda_j a_j b_j^\top`
    vanishes for both Farkas vectors); the point or the Farkas vector must fit in float64, else
    a :class:`~svmgeo.ProblemError` names ``rhs`` and the rows (:meth:`~._scale.Scale.verdict`,
    which :meth:`~._scale.Scale.result` uses too, for a verdict in a solver's ``extras``). The
    proof runs on ``scale.cs`` itself, whose rows an exact proof forms from its tokens."""
    out = scale.verdict(res)
    return prove_verdict(out) if exact else out


def _polish_farkas(
    cs: ConstraintSet, fac: _Factor, lam: np.ndarray
) -> tuple[np.ndarray | None, float]:
    """Normalise :math:`c^\\top\\lambda = 1`, project onto the null space on the support, verify."""
    m = cs.kind == MARGIN
    c = np.asarray(cs.rhs, dtype=float)

    def normalise(v: np.ndarray) -> np.ndarray | None:
        v = np.where(m, np.maximum(v, 0.0), v)
        ctl = float(c @ v)
        if not np.isfinite(ctl) or ctl <= 0.0:
            return None
        return v / ctl

    base = normalise(lam)
    if base is None:
        return None, float("inf")
    best, best_res = base, farkas_residual(cs, base)
    if best_res <= 1e-13:
        return best, best_res
    scale = float(np.abs(base).max())
    support = np.flatnonzero(np.abs(base) > 1e-12 * scale)
    v = base.copy()
    v[support] = fac.null_project(support, base[support])
    if np.all(v[m] >= -1e-12 * scale):
        cand = normalise(v)
        if cand is not None:
            cand_res = farkas_residual(cs, cand)
            if cand_res < best_res:
                best, best_res = cand, cand_res
    return best, best_res
