# SPDX-License-Identifier: BSD-3-Clause
r"""Independent checks, written from the mathematics (SPEC.md), not from svmgeo's solvers.

Only the dataset arrays (tokens, queries, labels, head, visibility) and the constraint rows
are read from svmgeo; margins, KKT residuals, Farkas residuals, the risk and its gradient are
recomputed here with plain numpy. The ``assert_*`` helpers raise ``AssertionError`` with the
offending quantity, as :mod:`numpy.testing` does.
"""

from __future__ import annotations

import numpy as np

import svmgeo as sg
from svmgeo._linalg import numerical_rank as matrix_rank
from svmgeo._validation import check_real
from svmgeo.constraints import rows_without_tokens

# Relative tolerance for solver outputs (solvers certify to 1e-8; allow some slack).
SOLVER_RTOL = 1e-7
LOSSES = ("logistic", "exponential", "correlation")


# -- rows, points and certificates ---------------------------------------------------------
def margin_rows(A: np.ndarray, B: np.ndarray) -> sg.ConstraintSet:
    r"""A :class:`~svmgeo.ConstraintSet` of margin rows :math:`a_j^\top W b_j \ge 1` from raw
    arrays A, B of shape (N, d), one sequence per row: for hand-built problems that need no
    attention data."""
    N = np.shape(A)[0]
    return rows_without_tokens(A, B, np.full(N, sg.MARGIN, dtype=np.int8), np.ones(N))


def _check_rtol(rtol: object, where: str) -> float:
    """``rtol`` as a float in [0, 1] (a ProblemError otherwise: a negative tolerance made every
    check fail with a misleading margin)."""
    return check_real(rtol, "rtol", low=0.0, high=1.0, where=where)


def row_values(cs: sg.ConstraintSet, W: np.ndarray) -> np.ndarray:
    r""":math:`a_j^\top W b_j` for every row."""
    return np.einsum("ja,ab,jb->j", cs.A, W, cs.B)


def adjoint(cs: sg.ConstraintSet, lam: np.ndarray) -> np.ndarray:
    r""":math:`\sum_j \lambda_j a_j b_j^\top`."""
    return np.einsum("j,ja,jb->ab", lam, cs.A, cs.B)


def assert_feasible_point(
    cs: sg.ConstraintSet, W: np.ndarray | None, *, rtol: float = 1e-9, atol: float = 0.0
) -> None:
    r"""``W`` proves feasibility: every margin row meets :math:`c_j` up to a slack of
    ``atol + rtol * max(|c_j|, ||a_j|| ||W||_F ||b_j||)`` (the rounding of
    :math:`a_j^\top W b_j` is about machine epsilon times the second term) and is strictly
    positive (so a scaling by at most :math:`1 + O(\mathrm{rtol})` makes it exact); equality
    rows hold to the same slack."""
    rtol = _check_rtol(rtol, "assert_feasible_point")
    assert W is not None, "a feasible verdict must carry a point"
    m = row_values(cs, W)
    margin = cs.kind == sg.MARGIN
    size = np.linalg.norm(cs.A, axis=1) * np.linalg.norm(cs.B, axis=1) * np.linalg.norm(W)
    slack = atol + rtol * np.maximum(np.abs(cs.rhs), size)
    short = (cs.rhs - m)[margin] - slack[margin]
    assert np.all(short <= 0.0), f"margin below its bound by {float(short.max()):.3g}"
    assert np.all(m[margin & (cs.rhs > 0)] > 0.0), float(m[margin].min())
    assert np.all(np.abs(m - cs.rhs)[~margin] <= slack[~margin])


def exact_rows(cs: sg.ConstraintSet, data: sg.TokenData | None = None) -> list[tuple[list, list]]:
    r"""The rows :math:`(a_j, b_j)` as :class:`fractions.Fraction` lists, exactly.

    With ``data`` (the tokens the rows were built from), :math:`a_j = x_{ip} - x_{iq}` is the
    exact difference of the float tokens (which may not be a float itself); without, the float
    rows ``cs.A`` are taken as given.
    """
    from fractions import Fraction

    out = []
    X = None if data is None else np.asarray(data.X)
    for j in range(cs.N):
        if X is None:
            a = [Fraction(float(x)) for x in cs.A[j]]
        else:
            xp, xq = X[cs.seq[j], cs.pref[j]], X[cs.seq[j], cs.comp[j]]
            a = [Fraction(float(p)) - Fraction(float(q)) for p, q in zip(xp, xq, strict=True)]
        out.append((a, [Fraction(float(x)) for x in cs.B[j]]))
    return out


def exact_margins(cs: sg.ConstraintSet, W: np.ndarray, data: sg.TokenData | None = None) -> list:
    r"""Margins :math:`a_j^\top W b_j` in exact rational arithmetic on the float inputs
    (see :func:`exact_rows`): independent of any summation order or BLAS."""
    from fractions import Fraction

    Wf = [[Fraction(float(x)) for x in row] for row in np.asarray(W)]
    out = []
    for a, b in exact_rows(cs, data):
        u = [sum((w * y for w, y in zip(row, b, strict=True)), Fraction(0)) for row in Wf]
        out.append(sum((x * y for x, y in zip(a, u, strict=True)), Fraction(0)))
    return out


def assert_farkas(cs: sg.ConstraintSet, lam: np.ndarray | None, *, rtol: float = 1e-9) -> None:
    r"""Farkas certificate of infeasibility: :math:`\lambda_{\mathcal M} \ge 0`,
    :math:`\sum_j \lambda_j a_j b_j^\top = 0` (relative to :math:`\sum_j |\lambda_j|
    \|a_j\|\|b_j\|`) and :math:`c^\top\lambda = 1`."""
    rtol = _check_rtol(rtol, "assert_farkas")
    assert lam is not None, "an infeasible result must carry a Farkas certificate"
    lam = np.asarray(lam, dtype=float)
    assert lam.shape == (cs.N,), f"Farkas vector of shape {lam.shape} for {cs.N} rows"
    margin = cs.kind == sg.MARGIN
    assert np.all(lam[margin] >= 0.0), float(lam[margin].min())
    scale = float(np.sum(np.abs(lam) * np.linalg.norm(cs.A, axis=1) * np.linalg.norm(cs.B, axis=1)))
    np.testing.assert_allclose(adjoint(cs, lam), 0.0, atol=rtol * max(scale, 1e-300))
    np.testing.assert_allclose(lam @ cs.rhs, 1.0, rtol=1e-12)


ILL_CONDITIONED = 1e-6


def signed_margin(G: np.ndarray, *, zero: float = 1e-9) -> tuple[float, np.ndarray]:
    r"""The max-min margin of the rows :math:`g_j` of ``G`` over the max-entry unit sphere,
    signed (Renegar's), by LPs written here (scipy HiGHS):

    .. math::

        t^\star = \max_{\|w\|_\infty = 1} \min_j g_j^\top w .

    Positive iff some w has :math:`g_j^\top w > 0` for every j (then the ball LP
    :math:`\max_{\|w\|_\infty \le 1}` attains it); otherwise :math:`0 \in
    \mathrm{conv}\{g_j\}` (Gordan) and :math:`t^\star \le 0` measures how deep: the ball LP
    would answer 0 (at w = 0) for every such system, so where it answers at most ``zero`` the
    sphere is searched face by face, :math:`w_i = \pm 1`, 2k LPs. Returns ``(t, w)``.
    """
    from scipy.optimize import linprog

    k = G.shape[1]
    c = np.zeros(k + 1)
    c[-1] = -1.0
    A_ub = np.hstack([-G, np.ones((G.shape[0], 1))])

    def face(fixed: tuple[int, float] | None) -> tuple[float, np.ndarray]:
        bounds: list[tuple[float | None, float | None]] = [(-1.0, 1.0)] * k + [(None, None)]
        if fixed is not None:
            bounds[fixed[0]] = (fixed[1], fixed[1])
        res = linprog(c, A_ub=A_ub, b_ub=np.zeros(G.shape[0]), bounds=bounds, method="highs")
        assert res.status == 0, res.message
        return float(-res.fun), res.x[:-1]

    t, w = face(None)
    if t > zero:
        return t, w
    return max((face((i, s)) for i in range(k) for s in (1.0, -1.0)), key=lambda tw: tw[0])


def conditioning(cs: sg.ConstraintSet) -> float:
    r"""Relative signed max-min margin of the margin rows (:func:`signed_margin`):

    .. math::

        t^\star = \max_{\|W\|_{\max} = 1} \min_j a_j^\top W b_j
        \quad (\text{margin rows with } a_j b_j^\top \ne 0),

    divided by :math:`\max_j \|a_j\|\|b_j\|`. Positive: feasible, with
    :math:`\|W^{mm}\|_F \approx 1/t^\star` in units of the data; negative: infeasible with that
    margin of error; :math:`|t^\star| <` :data:`ILL_CONDITIONED`: beyond the precision the
    solvers certify (an inaccurate status is then acceptable).
    """
    margin = cs.kind == sg.MARGIN
    G = np.einsum("ja,jb->jab", cs.A, cs.B).reshape(cs.N, -1)[margin]
    G = G[np.abs(G).max(axis=1, initial=0.0) > 0]
    if G.shape[0] == 0:
        return 1.0
    scale = float(np.max(np.linalg.norm(cs.A, axis=1) * np.linalg.norm(cs.B, axis=1)))
    return signed_margin(G / scale, zero=ILL_CONDITIONED)[0]


def well_conditioned(cs: sg.ConstraintSet) -> bool:
    r""":math:`|t^\star| \ge` :data:`ILL_CONDITIONED` (:func:`conditioning`): the solvers
    must decide ``cs`` (an inaccurate status is not acceptable)."""
    return abs(conditioning(cs)) >= ILL_CONDITIONED


def verdict(res: sg.SVMResult) -> str | None:
    """ "optimal" or "infeasible" when the result claims it (its proof is checked here: a
    feasible W, or a Farkas vector); None for an inaccurate or failed answer, which is
    acceptable only on an ill-conditioned problem (:func:`conditioning`)."""
    if res.status is sg.Status.OPTIMAL:
        assert res.W is not None
        assert_feasible_point(res.constraints, res.W, rtol=SOLVER_RTOL)
        return "optimal"
    if res.status is sg.Status.OPTIMAL_INACCURATE and res.dual is not None and res.rank is None:
        try:  # svmgeo certifies to 1e-8; this suite accepts answers certified to SOLVER_RTOL
            assert_kkt(res)
        except AssertionError:
            pass
        else:
            return "optimal"
    if res.status is sg.Status.INFEASIBLE:
        assert res.W is None
        assert_farkas(res.constraints, res.farkas)
        return "infeasible"
    t = conditioning(res.constraints)
    assert abs(t) < ILL_CONDITIONED, f"{res.status} on a problem with max-min margin {t:.3g}"
    return None


def assert_agree(a: object, b: object, cs: sg.ConstraintSet) -> None:
    """Two checked verdicts on one problem agree, unless it is ill-conditioned: there a point
    and a Farkas vector can both hold to their tolerances."""
    if a != b:
        assert not well_conditioned(cs), f"verdicts {a!r} and {b!r} on a well-conditioned problem"


def assert_exact_point(cs: sg.ConstraintSet, W: np.ndarray | None) -> None:
    r"""``W`` proves feasibility in exact arithmetic: its exact margins (:func:`exact_margins`,
    on the tokens the rows came from when ``cs.tokens`` is set) are positive on every margin row
    with :math:`c_j > 0`, nonnegative where :math:`c_j = 0`, and zero on equality rows, so a
    positive multiple of ``W`` meets every row. For points of any norm (a float evaluation of
    :math:`a_j^\top W b_j` at :math:`\|W\| \sim 10^{16}` can even have the wrong sign)."""
    assert W is not None, "a feasible verdict must carry a point"
    m = exact_margins(cs, W, cs.tokens)
    for j, mj in enumerate(m):
        c = float(cs.rhs[j])
        if cs.kind[j] != sg.MARGIN:
            assert mj == 0 and c == 0.0, f"equality row {j}: exact value {float(mj):.3g}, rhs {c}"
        elif c > 0:
            assert mj > 0, f"row {j}: exact margin {float(mj):.3g} is not positive"
        else:
            assert mj >= 0 or c < 0, f"row {j}: exact margin {float(mj):.3g} below 0"


def feasibility_verdict(feas: sg.FeasibilityResult) -> bool | None:
    """The checked verdict of a feasibility result (None: undecided, ill-conditioned only).

    A feasible verdict proved in exact arithmetic (``proof == "exact"``) is checked with
    :func:`assert_exact_point`, otherwise with :func:`assert_feasible_point`."""
    if feas.feasible and feas.status is sg.Status.OPTIMAL:
        if feas.proof == "exact":
            assert_exact_point(feas.constraints, feas.point)
        else:
            assert_feasible_point(feas.constraints, feas.point)
        return True
    if feas.status is sg.Status.INFEASIBLE:
        assert_farkas(feas.constraints, feas.farkas)
        return False
    t = conditioning(feas.constraints)
    assert abs(t) < ILL_CONDITIONED, f"{feas.status} on a problem with max-min margin {t:.3g}"
    return None


def numerical_rank(W: np.ndarray, rtol: float = 1e-7) -> int:
    r"""Numerical rank :math:`\#\{k : \sigma_k > \mathrm{rtol}\,\sigma_1\}` (the testing kit's
    default threshold 1e-7; :func:`svmgeo._linalg.numerical_rank`)."""
    return matrix_rank(W, rtol)


def assert_frobenius_kkt(res: sg.SVMResult, *, rtol: float = SOLVER_RTOL) -> None:
    r"""KKT of :math:`\min \frac12\|W\|_F^2` s.t. rows: feasibility, :math:`\lambda \ge 0` on
    margin rows, :math:`W = \sum_j \lambda_j a_j b_j^\top`, complementarity and zero gap
    :math:`\|W\|_F^2 = c^\top\lambda`."""
    rtol = _check_rtol(rtol, "assert_frobenius_kkt")
    cs, W, lam = res.constraints, res.W, res.dual
    assert W is not None and lam is not None, res.message
    nW = float(np.linalg.norm(W))
    margin = cs.kind == sg.MARGIN
    m = row_values(cs, W)
    assert_feasible_point(cs, W, rtol=rtol)
    # every test relative to the solution's own scale (scaling the rows by s scales W by 1/s
    # and lambda by 1/s^2, the products lambda_j (m_j - c_j) like ||W||^2): no absolute floor,
    # under which a W twice the optimum passed once ||W||_F was below rtol
    lam_scale = float(np.abs(lam).max(initial=0.0))
    assert np.all(lam[margin] >= -rtol * lam_scale), float(lam[margin].min())
    np.testing.assert_allclose(W, adjoint(cs, lam), rtol=0.0, atol=rtol * nW)
    slack = (m - cs.rhs)[margin]
    assert np.all(np.abs(lam[margin] * slack) <= rtol * nW**2)
    np.testing.assert_allclose(nW**2, lam @ cs.rhs, rtol=rtol, atol=0.0)


def assert_nuclear_kkt(res: sg.SVMResult, *, rtol: float = SOLVER_RTOL) -> None:
    r"""Optimality of :math:`\min \|W\|_*` s.t. rows: feasibility, a dual :math:`\lambda \ge 0`
    (margin rows) with :math:`\|\sum_j \lambda_j a_j b_j^\top\|_2 \le 1` and
    :math:`c^\top \lambda = \|W\|_*` (weak duality then makes both optimal)."""
    rtol = _check_rtol(rtol, "assert_nuclear_kkt")
    cs, W, lam = res.constraints, res.W, res.dual
    assert W is not None and lam is not None, res.message
    margin = cs.kind == sg.MARGIN
    assert_feasible_point(cs, W, rtol=rtol)
    lam_scale = float(np.abs(lam).max(initial=0.0))  # relative, as in assert_frobenius_kkt
    assert np.all(lam[margin] >= -rtol * lam_scale), float(lam[margin].min())
    spectral = float(np.linalg.norm(adjoint(cs, lam), 2))
    assert spectral <= 1.0 + rtol, spectral
    nuc = float(np.linalg.norm(W, "nuc"))
    np.testing.assert_allclose(lam @ cs.rhs, nuc, rtol=rtol, atol=0.0)


def assert_certified(
    res: sg.SVMResult | sg.FeasibilityResult, *, rtol: float = SOLVER_RTOL
) -> None:
    r"""``res`` claims a decided answer and its proof holds, recomputed here.

    An :class:`~svmgeo.SVMResult` with status ``OPTIMAL`` must carry a W and a dual that pass
    :func:`assert_frobenius_kkt` or :func:`assert_nuclear_kkt` (rank-bounded answers: a feasible
    point with ``rank(W) <= m`` whose :math:`\|W\|_*`, recomputed, is the optimum of the convex
    Att-SVM⋆, checked by :func:`assert_nuclear_kkt`); ``INFEASIBLE`` must carry a Farkas vector passing
    :func:`assert_farkas`. A :class:`~svmgeo.FeasibilityResult` must be feasible with a point
    passing :func:`assert_feasible_point`, or infeasible with a Farkas vector. Anything else
    (an inaccurate or failed status, a rank-bounded answer above the convex bound, which is
    only a local optimum) fails with the result's message.
    """
    rtol = _check_rtol(rtol, "assert_certified")
    if isinstance(res, sg.FeasibilityResult):
        if res.feasible:
            assert res.status is sg.Status.OPTIMAL, f"not certified: {res.status}: {res.message}"
            if res.proof == "exact":
                assert_exact_point(res.constraints, res.point)
            else:
                assert_feasible_point(res.constraints, res.point, rtol=rtol)
        else:
            assert res.status is sg.Status.INFEASIBLE, f"{res.status}: {res.message}"
            assert_farkas(res.constraints, res.farkas)
        return
    if res.status is sg.Status.INFEASIBLE:
        assert_farkas(res.constraints, res.farkas)
        return
    assert res.status is sg.Status.OPTIMAL, f"not certified: {res.status}: {res.message}"
    if res.rank is not None:  # global optimality: the convex lower bound is attained
        assert res.W is not None and res.lower_bound is not None, res.message
        assert res.objective is not None, res.message
        assert_feasible_point(res.constraints, res.W, rtol=rtol)
        assert numerical_rank(res.W) <= res.rank
        # recomputed here: ||W||_* from W, and the bound from the convex Att-SVM* (no rank),
        # whose KKT the kit checks itself; a feasible W of rank <= m attaining it is optimal
        value = float(np.linalg.norm(res.W, "nuc"))
        np.testing.assert_allclose(value, res.objective, rtol=rtol)
        convex = sg.solve_svm(res.constraints, norm="nuc")
        assert_nuclear_kkt(convex, rtol=rtol)
        assert convex.objective is not None, convex.message
        np.testing.assert_allclose(value, convex.objective, rtol=rtol)
    else:
        assert_kkt(res, rtol=rtol)


def assert_kkt(res: sg.SVMResult, *, rtol: float = SOLVER_RTOL) -> None:
    r"""The KKT conditions of ``res``'s norm, checked by the kit's own test for that norm
    (:func:`assert_frobenius_kkt`, :func:`assert_nuclear_kkt`); a norm without one
    (:math:`\ell_p`) by its certificate in the table of norms, recomputed at ``rtol``."""
    rtol = _check_rtol(rtol, "assert_kkt")
    own = _KKT.get(res.norm)
    if own is not None:
        own(res, rtol=rtol)
        return
    assert res.W is not None and res.dual is not None, res.message
    p = res.extras.get("p")
    entry, parameter = sg.solvers.parse_norm(res.norm if p is None else (res.norm, p), "assert_kkt")
    cert = entry.geometry(parameter).certificate(res.constraints, res.W, res.dual, rtol)
    assert cert.passed, cert.failures


_KKT = {"fro": assert_frobenius_kkt, "nuc": assert_nuclear_kkt}
"""The kit's independent KKT checks, by norm name."""


# -- scores and the risk ------------------------------------------------------------------
def visible_scores(data: sg.TokenData) -> np.ndarray:
    r""":math:`\gamma_{ikt} = Y_{ik} v^\top u_{it}`, :math:`-\infty` on hidden keys; (n, K, T)."""
    g = (
        np.asarray(data.labels)[:, :, None]
        * (np.asarray(data.values) @ np.asarray(data.v))[:, None, :]
    )
    return np.where(data.visible, g, -np.inf)


def loss(u: np.ndarray, name: str) -> np.ndarray:
    r""":math:`\ell(u)`: :math:`\log(1 + e^{-u})` (``"logistic"``), :math:`e^{-u}`
    (``"exponential"``), else :math:`-u` (``"correlation"``), written independently of
    :mod:`svmgeo.losses`."""
    if name == "logistic":
        return np.logaddexp(0.0, -u)
    if name == "exponential":
        return np.exp(-u)
    return -u


def dloss(u: np.ndarray, name: str) -> np.ndarray:
    r""":math:`\ell'(u) < 0`."""
    if name == "logistic":
        return -np.exp(-np.logaddexp(0.0, u))
    if name == "exponential":
        return -np.exp(-u)
    return -np.ones_like(u)


def softmax_rows(data: sg.TokenData, W: np.ndarray) -> np.ndarray:
    r"""Attention :math:`s_{ik} = \mathrm{softmax}(X_i W z_{ik})` over visible keys; (n, K, T)."""
    logits = np.einsum("ntd,de,nke->nkt", data.X, W, data.queries)
    logits = np.where(data.visible, logits, -np.inf)
    logits = logits - logits.max(axis=2, keepdims=True)
    e = np.exp(logits)
    return e / e.sum(axis=2, keepdims=True)


def risk(data: sg.TokenData, W: np.ndarray, name: str) -> float:
    r""":math:`L(W) = \frac1n \sum_{i,k} \ell(Y_{ik} v^\top X_i^\top s_{ik})` (linear head)."""
    s = softmax_rows(data, W)
    g = np.where(data.visible, visible_scores(data), 0.0)
    u = np.sum(s * g, axis=2)
    return float(np.sum(loss(u, name)) / data.n)


def risk_grad(data: sg.TokenData, W: np.ndarray, name: str) -> np.ndarray:
    r""":math:`\nabla L = \frac1n \sum_{i,k} \ell'(\gamma_{ik}^\top s_{ik})\,
    X_i^\top(\mathrm{diag}\, s_{ik} - s_{ik}s_{ik}^\top)\gamma_{ik}\, z_{ik}^\top` (SPEC §1)."""
    s = softmax_rows(data, W)
    g = np.where(data.visible, visible_scores(data), 0.0)
    u = np.sum(s * g, axis=2, keepdims=True)
    r = s * (g - u)  # (diag s - s s^T) gamma
    coef = dloss(u[..., 0], name)
    return np.einsum("nk,nkt,ntd,nke->de", coef, r, data.X, data.queries) / data.n


def optimal_risk(data: sg.TokenData, name: str) -> float:
    r""":math:`L_\star = \frac1n \sum_{i,k} \ell(\max_t \gamma_{ikt})` over visible keys."""
    best = visible_scores(data).max(axis=2)
    return float(np.sum(loss(best, name)) / data.n)


def risk_gap_lower_bound(data: sg.TokenData, W: np.ndarray, name: str) -> float:
    r"""A lower bound on :math:`L(W) - L_\star` free of cancellation.

    For convex decreasing :math:`\ell`, :math:`\ell(u) - \ell(\gamma^\star) \ge
    |\ell'(\gamma^\star)|(\gamma^\star - u)` and :math:`\gamma^\star - u = \sum_t s_t
    (\gamma^\star - \gamma_t) \ge 0` is a sum of nonnegative terms.
    """
    s = softmax_rows(data, W)
    g = visible_scores(data)
    best = g.max(axis=2)
    deficit = np.sum(s * np.where(data.visible, best[..., None] - g, 0.0), axis=2)
    return float(np.sum(-dloss(best, name) * deficit) / data.n)


def is_support_lot(data: sg.TokenData, alpha: np.ndarray, res: sg.SVMResult, tol: float) -> bool:
    r"""SPEC §5 from the margins: every support token (margin within ``tol`` of 1) scores
    strictly below the selected token of its query."""
    cs = res.constraints
    assert res.W is not None
    m = row_values(cs, res.W)
    g = visible_scores(data)
    a = np.asarray(alpha).reshape(data.n, data.K)
    for j in np.flatnonzero(np.abs(m - 1.0) <= tol * np.maximum(1.0, np.abs(m))):
        i, k, t = int(cs.seq[j]), int(cs.query[j]), int(cs.comp[j])
        if g[i, k, t] >= g[i, k, a[i, k]]:
            return False
    return True
