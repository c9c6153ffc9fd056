# SPDX-License-Identifier: BSD-3-Clause
r"""The optimal face of an attention SVM: best alignment with a direction, and uniqueness.

.. math::

    \mathcal F_\tau = \{W :\ a_j^\top W b_j \ge c_j\ (=c_j),\ \|W\| \le (1 + \tau)\,\mathrm{OPT}\}

is the set of :math:`\tau`-optimal solutions of :math:`\min \|W\|` over the rows (OPT the
solved optimum). For the Frobenius norm (strictly convex) it shrinks to the one optimum as
:math:`\tau \to 0`, with diameter :math:`O(\sqrt\tau)\,\mathrm{OPT}`; for the entrywise
:math:`\ell_1`, :math:`\ell_\infty` and the spectral norm it can keep a whole face of optima, so
the correlation of a gradient-descent direction with the *one* returned solution can mislead
(issue #23). Two convex problems answer it, solved by the naive cvxpy model (every :math:`W \in \mathbb{R}^{d\times d}`, not compressed:
for these norms optima off the rows' spans exist):

* :func:`optimal_face_alignment` — the point of :math:`\mathcal F_\tau` of largest correlation
  :math:`\langle D, W\rangle / (\|D\|_F\|W\|_F)` with a direction :math:`D` (a linear-fractional
  problem, convex in the Charnes–Cooper form :math:`W = Y/s`);
* :func:`optimum_uniqueness` — the width :math:`\max - \min` of :math:`\langle R, W\rangle /
  \|R\|_F` over :math:`\mathcal F_\tau` along random directions :math:`R`, a lower bound on the
  face's diameter, compared with the :math:`10\sqrt{\tau}\,\|W\|_F` that a unique optimum's
  :math:`\tau`-neighbourhood can reach.

Both solve on rows and bounds of unit size (:func:`_on_unit_rows`), with the direction of
unit size (:func:`~._scale.unit_size`): the correlations and the relative width are
scale-invariant, and the points of the face are mapped back exactly.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .._errors import ProblemError, SolverError
from .._linalg import correlation
from .._summary import summarized
from .._validation import check_array, check_int, check_real
from ..constraints import MARGIN
from ._certificates import NormGeometry, primal_infeasibility
from ._norms import NORMS
from ._result import SVMResult, replaced
from ._scale import Scale, unit_rows, unit_size
from ._spectral import quiet_solve

__all__ = ["FaceAlignment", "FaceUniqueness", "optimal_face_alignment", "optimum_uniqueness"]

FACE_TOL = 1e-6
r"""Default :math:`\tau`: the face is :math:`\{\|W\| \le (1 + \tau)\mathrm{OPT}\}` (well above the
certificate's 1e-8, so the solved OPT's own error does not empty it)."""

CHECK_TOL = 1e-5
r"""How far a face problem's point may miss :math:`\mathcal F_\tau` and still be returned:
:math:`\|W\| \le (1 + \tau)(1 + 10^{-5})\,\mathrm{OPT}` and rows missed by at most
:math:`10^{-5}` (:func:`~._certificates.primal_infeasibility`), both recomputed by svmgeo
(:func:`_in_face`; Clarabel's SDPs of nuc / spectral can end 'optimal_inaccurate', a few 1e-6
above the bound)."""

_ASCENT = 5
"""At most this many linearized steps of :func:`_ascend` (a face where no correlation is
positive)."""

_CLARABEL = {"tol_gap_abs": 1e-10, "tol_gap_rel": 1e-10, "tol_feas": 1e-10, "max_iter": 400}
_SCS = {"eps_abs": 1e-9, "eps_rel": 1e-9, "max_iters": 100_000}
_SOLVED = ("optimal", "optimal_inaccurate")
"""cvxpy's statuses of a face problem that gave a point."""


@summarized
@dataclass(frozen=True, eq=False)
class FaceAlignment:
    r"""The point of the optimal face most aligned with a direction :math:`D`.

    Attributes
    ----------
    W : ndarray of shape (d, d)
        The point of :math:`\mathcal F_\tau` of largest correlation with D, checked by
        svmgeo to be in the face (to :data:`CHECK_TOL`); where no point of the face has a
        positive correlation, the best one found (a lower bound, :func:`_ascend`).
    correlation : float
        :math:`\langle D, W\rangle / (\|D\|_F \|W\|_F)`: the best correlation of D with a
        :math:`\tau`-optimal solution (a lower bound on it where ``maximum`` is False).
    returned_correlation : float
        The correlation of D with the solver's solution ``res.W``, for comparison.
    value : float
        :math:`\|W\|` in the SVM's norm (at most :math:`(1 + \tau)\,\mathrm{OPT}`).
    tol : float
        :math:`\tau`.
    status : str
        cvxpy's status of the face problem.
    maximum : bool
        Whether ``correlation`` is the maximum over the face: True when W is the face
        problem's maximizer, checked in the face, with a positive correlation. False when it
        is a lower bound: no point of the face has a positive correlation, or the face
        problem's point missed the face (an SDP solved to ~1e-5 against a face of width
        :math:`\tau`, say) and W is the best point checked in it (``status`` says which).
    """

    W: np.ndarray
    correlation: float
    returned_correlation: float
    value: float
    tol: float
    status: str
    maximum: bool = True

    def _repr_html_(self) -> str:  # Jupyter: the field table (svmgeo._summary)
        from .._summary import html_summary

        return html_summary(self)


@summarized
@dataclass(frozen=True, eq=False)
class FaceUniqueness:
    r"""Whether the optimum of an SVM is unique, measured on its :math:`\tau`-optimal face.

    Attributes
    ----------
    unique : bool
        ``width <= threshold``: no direction found along which the face is wider than a
        unique optimum's :math:`\tau`-neighbourhood can be.
    width : float
        :math:`\max_R \bigl(\max_{\mathcal F_\tau} \langle R, W\rangle - \min_{\mathcal F_\tau}
        \langle R, W\rangle\bigr) / \|R\|_F` over the directions tried, relative to
        :math:`\|W\|_F` of the returned solution (a lower bound on the face's relative diameter).
    threshold : float
        :math:`10\sqrt{\tau}` (:math:`10\max(\sqrt\tau, (p\tau)^{1/p})` for
        :math:`\ell_p`, 2 < p < ∞).
    W_max, W_min : ndarray of shape (d, d)
        The two extreme points along the widest direction (two optimal solutions up to
        :math:`\tau`; their distance is at least ``width`` times :math:`\|W\|_F`).
    tol : float
        :math:`\tau`.
    """

    unique: bool
    width: float
    threshold: float
    W_max: np.ndarray
    W_min: np.ndarray
    tol: float

    def _repr_html_(self) -> str:  # Jupyter: the field table (svmgeo._summary)
        from .._summary import html_summary

        return html_summary(self)


def _geometry(res: SVMResult, where: str) -> NormGeometry:
    if not isinstance(res, SVMResult):
        raise ProblemError(
            f"The 'res' parameter of {where} must be an SVMResult (from att_svm or solve_svm); "
            f"got {type(res).__name__}."
        )
    if res.W is None or res.objective is None or not res.status.has_solution:
        raise ProblemError(
            f"The 'res' parameter of {where} must hold a solution; got status "
            f"{res.status.value} without W. Solve a feasible SVM first."
        )
    if res.extras.get("feasible_point_only"):
        raise ProblemError(
            f"The 'res' parameter of {where} holds only a feasible point "
            f"(extras['feasible_point_only']: the solve failed, status {res.status.value}); its "
            "value is an upper bound on the optimum, not the optimum, so it defines no optimal "
            "face. Solve again (e.g. another method=, or rescaled data) for an optimum."
        )
    slack = 1.0 + (res.certificate.tol if res.certificate is not None else 1e-8)
    if (
        res.rank is not None
        and res.lower_bound is not None
        and res.objective > res.lower_bound * slack  # round-off: the convex optimum itself
    ):
        raise ProblemError(
            f"The 'res' parameter of {where} is a rank-bounded (nonconvex) solution; its "
            "optimal set is not a convex face. Pass a convex solve (no binding rank)."
        )
    entry = NORMS.get(res.norm)
    if entry is None:  # pragma: no cover - every result's norm is an entry of the table
        raise ProblemError(f"{where}: unknown norm {res.norm!r} of the result.")
    return entry.geometry(res.extras.get("p") if entry.parameter else None)


def _on_unit_rows(res: SVMResult, where: str) -> tuple[SVMResult, Scale]:
    r"""``res`` on rows and bounds of unit size (:func:`~._scale.unit_rows`), and the
    :class:`~._scale.Scale` that maps a point of its face back: :math:`\mathcal F_\tau` of
    ``res`` is :math:`\gamma/s` times that of the unit rows (W and OPT scale alike), so the
    face problems' solvers, whose tolerances are absolute, see O(1) data at every scale.
    ``res`` itself when nothing is scaled."""
    unit, scale = unit_rows(res.constraints, where)
    if scale.identity:
        return res, scale
    to_unit = scale.inverse()
    return replaced(
        res,
        constraints=unit,
        W=to_unit.w(res.W, "res.W"),
        objective=to_unit.w(res.objective, "res.objective"),
        lower_bound=to_unit.w(res.lower_bound, "res.lower_bound"),
    ), scale


def _solve_face(
    res: SVMResult, geometry: NormGeometry, D: np.ndarray, tol: float, *, scaled: bool
) -> tuple[np.ndarray | None, str]:
    r"""Maximize over :math:`\mathcal F_\tau` by the naive cvxpy model: :math:`\langle D,
    W\rangle` (``scaled=False``), or the correlation with D in the Charnes–Cooper form
    (``scaled=True``): :math:`W = Y/s`,

    .. math::

        \max_{Y, s \ge 0}\ \langle D, Y\rangle \quad\text{s.t.}\quad \|Y\|_F \le 1,\quad
        a_j^\top Y b_j \ge s\,c_j\ (= s\,c_j),\quad s\,\phi(Y/s) \le s\,\phi_\tau,

    convex because the correlation is scale-invariant and the set of :math:`(Y, s)` is a
    cone (:math:`s\,\phi(Y/s)` is the perspective of the model's objective :math:`\phi`,
    :math:`\phi(Y)` itself when :math:`\phi` is a norm). Returns W (None when the solver gave
    none, or the cone's apex: :math:`\|Y\|_F < 1/2`, no point of positive correlation) and
    cvxpy's status; the caller checks that W is in the face (:func:`_in_face`)."""
    import cvxpy as cp  # lazily: only the face problems need it

    cs = res.constraints
    assert res.W is not None  # checked by _geometry
    Y = cp.Variable((cs.d, cs.d))
    s: Any = cp.Variable(nonneg=True) if scaled else 1.0
    rows = np.einsum("ja,jb->jab", cs.A, cs.B).reshape(cs.N, -1) @ cp.vec(Y, order="C")
    margin = cs.kind == MARGIN
    # phi at (1 + tau) W_opt: phi is an increasing function of the norm (1/2 ||W||_F^2 for
    # Frobenius), so phi(W) <= bound is ||W|| <= (1 + tau) OPT. Where phi is the norm itself
    # (from_cvxpy_value linear), the bound is svmgeo's own norm: cvxpy's value of pnorm
    # underflows / overflows for p >~ 1000 (0 at W_opt for p = 2000: an empty face)
    unit = geometry.from_cvxpy_value(1.0)
    homogeneous = bool(np.isclose(geometry.from_cvxpy_value(2.0), 2.0 * unit, rtol=1e-12))
    if homogeneous:
        bound = (1.0 + tol) * geometry.value(res.W) / unit
    else:
        bound = float(geometry.cvxpy_objective(cp, cp.Constant((1.0 + tol) * res.W)).value)
    phi = geometry.cvxpy_objective(cp, Y)
    if scaled and not homogeneous:  # s phi(Y/s): phi(Y) itself for a norm
        phi = cp.perspective(phi, s)
    constraints = [phi <= bound * s]
    if np.any(margin):
        constraints.append(rows[np.flatnonzero(margin)] >= s * cs.rhs[margin])
    if np.any(~margin):
        constraints.append(rows[np.flatnonzero(~margin)] == s * cs.rhs[~margin])
    if scaled:
        constraints.append(cp.norm(cp.vec(Y, order="C"), 2) <= 1.0)
    problem = cp.Problem(cp.Maximize(cp.sum(cp.multiply(D, Y))), constraints)
    for name, options in ((cp.CLARABEL, _CLARABEL), (cp.SCS, _SCS)):
        # Clarabel first; SCS where it gives up (thin SDP faces of nuc / spectral)
        try:
            quiet_solve(problem, name, options)
        except cp.error.SolverError:
            continue
        if Y.value is not None and problem.status in _SOLVED:
            break
    if Y.value is None or problem.status not in _SOLVED:  # no point (the caller says so)
        return None, str(problem.status)
    scale = float(s.value) if scaled else 1.0
    Y_value = np.asarray(Y.value, dtype=float)
    # a positive optimum has ||Y||_F = 1 (scaling (Y, s) up raises <D, Y>), so s ||W||_F = 1;
    # s ||W||_F = ||Y||_F << 1 is the cone's apex (Y, s) -> (0, 0), the optimum when no point
    # of the face has a positive correlation: Y / s is then the solver's error, amplified
    if not scale > 0 or (scaled and not np.linalg.norm(Y_value) >= 0.5):
        return None, str(problem.status)
    return Y_value / scale, str(problem.status)


def _in_face(res: SVMResult, geometry: NormGeometry, W: np.ndarray | None, tol: float) -> bool:
    r"""Whether W is in :math:`\mathcal F_\tau`, recomputed by svmgeo to :data:`CHECK_TOL`:
    :math:`\|W\| \le (1 + \tau)(1 + \epsilon)\,\|W_{\mathrm{res}}\|` in svmgeo's own norm, and
    the rows met up to :math:`\epsilon` (:func:`~._certificates.primal_infeasibility`)."""
    assert res.W is not None  # checked by _geometry
    if W is None or not np.all(np.isfinite(W)):
        return False
    cs = res.constraints
    bound = (1.0 + tol) * geometry.value(res.W) * (1.0 + CHECK_TOL)
    return bool(
        geometry.value(W) <= bound and primal_infeasibility(cs, cs.apply(W), W) <= CHECK_TOL
    )


def _extreme(res: SVMResult, geometry: NormGeometry, D: np.ndarray, tol: float) -> Any:
    r""":math:`\arg\max_{W \in \mathcal F_\tau} \langle D, W\rangle` and cvxpy's status, checked
    to be in the face (:func:`_in_face`)."""
    W, status = _solve_face(res, geometry, D, tol, scaled=False)
    if W is None:  # the face holds res.W, so it is feasible: the solver failed
        raise SolverError(
            f"the optimal-face problem failed (cvxpy status {status!r}, Clarabel then SCS); the face "
            "could not be measured. Try another seed or tol."
        )
    if not _in_face(res, geometry, W, tol):
        cs = res.constraints
        assert res.W is not None  # checked by _geometry
        raise SolverError(
            f"the optimal-face problem's point (cvxpy status {status!r}) is not in the face: norm "
            f"{geometry.value(W) / geometry.value(res.W):.6g} x OPT (at most 1 + tol = "
            f"{1.0 + tol:.6g}), rows missed by {primal_infeasibility(cs, cs.apply(W), W):.2g} "
            f"(svmgeo's check, to {CHECK_TOL:g}); the face could not be measured. Try another "
            "tol."
        )
    return W, status


def _ascend(
    res: SVMResult, geometry: NormGeometry, D: np.ndarray, tol: float
) -> tuple[np.ndarray, str]:
    r"""A point of :math:`\mathcal F_\tau` of largest correlation with D when none is positive.

    .. math::

        W_{k+1} = \arg\max_{W \in \mathcal F_\tau}\ \Big\langle \hat D + |t_k|
        \frac{W_k}{\|W_k\|_F},\ W\Big\rangle, \qquad t_k = \mathrm{corr}(D, W_k) \le 0,

    from the better of the maximiser of :math:`\langle D, W\rangle` and the returned solution
    (both in the face). Not a convex problem (:math:`\{\mathrm{corr} \ge t\}`, t < 0, is not
    convex): each step maximizes a minorant of :math:`\langle \hat D, W\rangle + |t_k|\,
    \|W\|_F`, which is 0 at :math:`W_k`, so the correlation never falls (at most
    :data:`_ASCENT` steps towards a local maximum: a lower bound on the best, exact to
    :math:`O(\sqrt\tau)` where the optimum is unique)."""
    assert res.W is not None  # checked by _geometry
    try:
        W, status = _extreme(res, geometry, D, tol)
    except SolverError as exc:  # the ascent starts from the returned solution instead
        if not _in_face(res, geometry, res.W, tol):
            raise
        W, status = res.W, f"the returned solution (the face problem: {exc})"
    if correlation(D, res.W) > correlation(D, W) and _in_face(res, geometry, res.W, tol):
        W = res.W
    D_hat = D / np.linalg.norm(D)
    for _ in range(_ASCENT):
        t = correlation(D, W)
        if t > 0:  # the minorant holds for t <= 0 only (best correlation about 0)
            break
        try:
            step, step_status = _extreme(res, geometry, D_hat - t * W / np.linalg.norm(W), tol)
        except SolverError:  # keep the last point checked in the face
            break
        if not correlation(D, step) > t + 1e-12:
            break
        W, status = step, step_status
    return W, status


def optimal_face_alignment(
    res: SVMResult, direction: Any, *, tol: float = FACE_TOL
) -> FaceAlignment:
    r"""The best correlation of a direction with the optimal face of a solved SVM.

    .. math::

        W^\star = \arg\max_{W \in \mathcal F_\tau}\ \frac{\langle D, W\rangle}{\|D\|_F\|W\|_F},
        \qquad \mathcal F_\tau = \{W:\ a_j^\top W b_j \ge c_j\ (=c_j),\
        \|W\| \le (1 + \tau)\,\mathrm{OPT}\},

    one convex problem in the Charnes–Cooper form :math:`W = Y/s` (:func:`_solve_face`;
    the correlation is quasi-concave where positive). Maximizing :math:`\langle D, W\rangle`
    alone would not do: the points of a face differ in :math:`\|W\|_F`. When no point of
    the face has a positive correlation with D, that problem's optimum is its apex
    :math:`(Y, s) = (0, 0)`, and the best correlation is not a convex problem: the returned
    point then ends an ascent towards a local maximum, from the better of the returned
    solution and the maximiser of :math:`\langle D, W\rangle` (:func:`_ascend`). Every
    returned W is checked by svmgeo to be in the face (its norm and rows recomputed,
    :func:`_in_face`). When the optimum is unique this is the returned solution's
    correlation, up to :math:`O(\sqrt\tau)` (:math:`O((p\tau)^{1/p})` for :math:`\ell_p`,
    p > 2, see :func:`optimum_uniqueness`); on a face of optima (nuclear, ℓ1, ℓ∞, spectral) it can be
    much larger: compare a GD direction with the face, not with one point of it.

    Parameters
    ----------
    res : SVMResult
        A solved convex SVM (any norm of the table; not a binding rank bound).
    direction : array of shape (d, d)
        D, e.g. the last GD iterate (its scale does not matter).
    tol : float in (0, 1], default 1e-6
        :math:`\tau`.

    Returns
    -------
    FaceAlignment

    Raises
    ------
    ProblemError
        ``res`` without a solution, with a feasible point only, or rank-bounded, ``direction``
        of the wrong shape, zero or not finite, ``tol`` outside (0, 1]; a face point float64
        cannot hold on ``res``'s rows, or a ``res.W`` too far from the size of an answer on
        them to be solved with (naming ``rhs`` and the rows of ``res``,
        :class:`~._scale.Scale`).
    SolverError
        When Clarabel and then SCS fail on a face problem, or give a point that svmgeo's
        check puts outside the face, and the returned solution is not in the face either.
        (Where it is, the ascent starts from it: ``W`` is then a point of the face whose
        correlation is at least the returned solution's, a lower bound on the best, and
        ``status`` says why.)

    Examples
    --------
    >>> import numpy as np, svmgeo as sg
    >>> from svmgeo.solvers import optimal_face_alignment
    >>> data = sg.random_data(3, 4, 4, seed=0)
    >>> res = sg.att_svm(data, norm=("lp", np.inf))
    >>> face = optimal_face_alignment(res, res.W)
    >>> bool(face.correlation >= face.returned_correlation - 1e-6)
    True
    """
    geometry = _geometry(res, "optimal_face_alignment")
    tol = check_real(tol, "tol", low=0.0, high=1.0, low_open=True, where="optimal_face_alignment")
    D = _direction(direction, res, "optimal_face_alignment")
    res, scale = _on_unit_rows(res, "optimal_face_alignment")  # correlations: scale-invariant
    W, status = _solve_face(res, geometry, D, tol, scaled=True)
    maximum = W is not None and _in_face(res, geometry, W, tol) and correlation(D, W) > 0
    if W is None or not maximum:
        W, status = _ascend(res, geometry, D, tol)
    value = geometry.value(W)
    return FaceAlignment(
        W=W if scale.identity else scale.w(W),
        correlation=correlation(D, W),
        returned_correlation=correlation(D, res.W),
        value=value if scale.identity else scale.w(value, "the norm ||W||"),
        tol=tol,
        status=status,
        maximum=maximum,
    )


def _unique_width(res: SVMResult, tol: float) -> float:
    r"""How wide, relative to :math:`\|W\|_F`, a unique optimum's :math:`\tau`-face can be:
    :math:`\sqrt\tau` where the norm grows at least quadratically away from the optimum
    (Frobenius: :math:`\tfrac12\|W\|_F^2` is 1-strongly convex); for
    :math:`\ell_p`, 2 < p < ∞, :math:`\max(\sqrt\tau, (p\tau)^{1/p})`: moving an entry
    that is 0 at the optimum by δ raises :math:`\|W\|_p^p` by :math:`|\delta|^p` only, so
    the face reaches :math:`|\delta| = (p\tau)^{1/p}\,\mathrm{OPT}` along such an entry
    (every p-SVM has such entries, W = p e_1^T)."""
    p = res.extras.get("p") if res.norm == "lp" else None
    if p is not None and 2.0 < float(p) < np.inf:
        return max(float(np.sqrt(tol)), float(p * tol) ** (1.0 / float(p)))
    return float(np.sqrt(tol))


def _direction(direction: Any, res: SVMResult, where: str) -> np.ndarray:
    d = res.constraints.d
    D = check_array(direction, f"The 'direction' parameter of {where}", ndim=2)
    if D.shape != (d, d) or not np.any(D != 0):
        raise ProblemError(
            f"The 'direction' parameter of {where} must be a nonzero array of shape ({d}, {d}) "
            f"(the SVM's W); got shape {D.shape}{'' if np.any(D != 0) else ', all zero'}."
        )
    return unit_size(D)  # its scale does not matter: O(1) for the face problems' solvers


def optimum_uniqueness(
    res: SVMResult, *, tol: float = FACE_TOL, n_directions: int = 2, seed: int = 0
) -> FaceUniqueness:
    r"""Is the optimum of a solved SVM unique? The width of its optimal face along random
    directions.

    .. math::

        \text{width} = \max_{R}\ \frac{\max_{W \in \mathcal F_\tau} \langle R, W\rangle
        - \min_{W \in \mathcal F_\tau} \langle R, W\rangle}{\|R\|_F\,\|W_{\mathrm{res}}\|_F},
        \qquad \text{unique} \iff \text{width} \le 10\,w_\tau,

    over ``n_directions`` Gaussian directions R (two convex solves each), with
    :math:`w_\tau = \sqrt\tau` (:math:`\max(\sqrt\tau, (p\tau)^{1/p})` for
    :math:`\ell_p`, 2 < p < ∞: :func:`_unique_width`). A unique optimum's
    :math:`\tau`-face has diameter at most about :math:`2\sqrt{2\tau}` times OPT in the
    Frobenius norm (:math:`O(\tau)` at a sharp vertex, :math:`(p\tau)^{1/p}` along an entry
    that is 0 at an :math:`\ell_p` optimum), so a width above the threshold is a face of
    optima, shown by two :math:`\tau`-optimal solutions ``W_max``, ``W_min`` (both meet the
    rows with norm at most :math:`(1 + \tau)\mathrm{OPT}`, to the face solver's accuracy). A
    width below it is evidence, not proof: a random direction almost surely sees a face of
    positive dimension. (For the Frobenius norm and :math:`\ell_p`, 1 < p < ∞, the optimum
    is unique, a theorem: the norm is strictly convex; the measurement then checks the
    solve.)

    Parameters
    ----------
    res : SVMResult
        A solved convex SVM (any norm of the table).
    tol : float in (0, 1], default 1e-6
        :math:`\tau`.
    n_directions : int, default 2
    seed : int, default 0
        Randomness of the directions.

    Returns
    -------
    FaceUniqueness

    Raises
    ------
    ProblemError
        As :func:`optimal_face_alignment`, and ``n_directions < 1``.
    SolverError
        When Clarabel and then SCS fail on a face problem, or give a point that svmgeo's
        check puts outside the face (:func:`_in_face`).
    """
    where = "optimum_uniqueness"
    geometry = _geometry(res, where)
    tol = check_real(tol, "tol", low=0.0, high=1.0, low_open=True, where=where)
    n_directions = check_int(n_directions, "n_directions", low=1, where=where)
    seed = check_int(seed, "seed", low=0, where=where)
    res, scale = _on_unit_rows(res, where)  # the width is relative: scale-invariant
    assert res.W is not None  # checked by _geometry
    size = max(float(np.linalg.norm(res.W)), np.finfo(float).tiny)
    rng = np.random.default_rng(seed)
    best: tuple[float, np.ndarray, np.ndarray] | None = None
    for _ in range(n_directions):
        R = rng.standard_normal(res.W.shape)
        W_max, _ = _extreme(res, geometry, R, tol)
        W_min, _ = _extreme(res, geometry, -R, tol)
        width = float(np.vdot(R, W_max - W_min)) / float(np.linalg.norm(R)) / size
        if best is None or width > best[0]:
            best = (width, W_max, W_min)
    assert best is not None  # n_directions >= 1
    threshold = 10.0 * _unique_width(res, tol)
    return FaceUniqueness(
        unique=best[0] <= threshold,
        width=best[0],
        threshold=threshold,
        W_max=best[1] if scale.identity else scale.w(best[1]),
        W_min=best[2] if scale.identity else scale.w(best[2]),
        tol=tol,
    )
