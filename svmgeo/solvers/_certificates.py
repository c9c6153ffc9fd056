# SPDX-License-Identifier: BSD-3-Clause
r"""Certificates recomputed by svmgeo from the problem data, never trusted from a backend.

The shared machinery lives here: primal residuals of a constraint set, judging residuals
against a tolerance, and downgrading a result whose check fails. Norm-specific KKT checks
(Frobenius, nuclear) and the Farkas check build on these.
"""

from __future__ import annotations

import dataclasses
import weakref

import numpy as np
import scipy.sparse as sp

from ..constraints import MARGIN, ConstraintSet
from ._result import Certificate, SVMResult
from ._status import Status

__all__ = [
    "adjoint_spectral_norm",
    "downgrade",
    "farkas_residual",
    "frobenius_certificate",
    "judge",
    "lift_margins",
    "lift_rows",
    "nuclear_certificate",
    "primal_infeasibility",
    "query_groups",
    "row_adjoint",
    "row_values",
]

_GROUPS: weakref.WeakKeyDictionary[ConstraintSet, tuple[np.ndarray, np.ndarray] | None] = (
    weakref.WeakKeyDictionary()
)


def query_groups(cs: ConstraintSet) -> tuple[np.ndarray, np.ndarray] | None:
    """(distinct b rows Q, index of each row's b in Q) when rows share few queries, else None."""
    if cs in _GROUPS:
        return _GROUPS[cs]
    groups = None
    if cs.N:
        keys = cs.seq * max(cs.K, 1) + cs.query
        _, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
        Q = cs.B[first]
        if 4 * first.size <= cs.N and np.array_equal(Q[inverse], cs.B):
            groups = (Q, inverse.reshape(-1))
    _GROUPS[cs] = groups
    return groups


def row_values(cs: ConstraintSet, W: np.ndarray) -> np.ndarray:
    r"""Margins :math:`a_j^\top W b_j` (as ``cs.apply``), grouped by distinct query when cheaper."""
    groups = query_groups(cs)
    if groups is None:
        return cs.apply(W)
    Q, inv = groups
    WQ = np.asarray(W) @ Q.T  # (d, n_queries)
    return np.einsum("jd,jd->j", cs.A, WQ.T[inv])


def row_adjoint(cs: ConstraintSet, lam: np.ndarray) -> np.ndarray:
    r""":math:`\sum_j \lambda_j a_j b_j^\top` (as ``cs.adjoint``), grouped by distinct query."""
    groups = query_groups(cs)
    if groups is None:
        return cs.adjoint(lam)
    Q, inv = groups
    lam = np.asarray(lam, dtype=float)
    group_sum = sp.csr_matrix((lam, (inv, np.arange(cs.N))), shape=(Q.shape[0], cs.N))
    C = np.asarray(group_sum @ cs.A)  # (n_queries, d): sum of lambda_j a_j per query
    return C.T @ Q


def primal_infeasibility(cs: ConstraintSet, margins: np.ndarray) -> float:
    r"""Largest violation: :math:`(c_j - m_j)_+` on margin rows, :math:`|m_j - c_j|` on equality rows."""
    if cs.N == 0:
        return 0.0
    diff = np.asarray(margins) - cs.rhs
    viol = np.where(cs.kind == MARGIN, np.maximum(-diff, 0.0), np.abs(diff))
    return float(viol.max())


def lift_rows(cs: ConstraintSet, W: np.ndarray, *, max_factor: float) -> np.ndarray | None:
    r"""``W`` scaled by a factor :math:`g \in [1, \text{max\_factor}]` so that every row holds
    exactly in floating point, or None.

    Only when every equality row has :math:`c_j = 0` (scaling keeps it) and every
    positive-rhs margin row is positive. The factors tried grow from :math:`f = \max_j
    c_j/m_j` by :math:`10^{-15}, 10^{-14}, \ldots` relative, each checked by recomputing the
    rows: on ill-conditioned rows (cancellation in :math:`a_j^\top W b_j`) the rounding can
    exceed a few ulps.
    """
    margins = row_values(cs, W)
    if primal_infeasibility(cs, margins) == 0.0:
        return W
    pos = (cs.kind == MARGIN) & (cs.rhs > 0)
    if np.any(cs.rhs[cs.kind != MARGIN] != 0.0) or np.any(margins[pos] <= 0.0):
        return None
    f = max(1.0, float(np.max(cs.rhs[pos] / margins[pos], initial=1.0)))
    for p in range(15, 0, -1):
        g = f * (1.0 + 10.0**-p)
        if g > max_factor:
            break
        if primal_infeasibility(cs, row_values(cs, g * W)) == 0.0:
            return g * W
    return None


def lift_margins(
    cs: ConstraintSet, W: np.ndarray, margins: np.ndarray, *, max_factor: float
) -> tuple[np.ndarray, np.ndarray, float]:
    r"""Scale ``W`` by the least :math:`f \in [1, \text{max\_factor}]` with every margin row met.

    Recomputes the margins after scaling (round-off) and adds a few ulps until
    :math:`a_j^\top (fW) b_j \ge c_j` holds exactly in floating point. Not applicable (f = 1)
    when an equality row has :math:`c_j \ne 0`, when a positive bound faces a nonpositive
    margin, or when the needed factor exceeds ``max_factor``.
    """
    rows = (cs.kind == MARGIN) & (cs.rhs > 0)
    if np.any(cs.rhs[cs.kind != MARGIN] != 0.0) or not np.any(rows):
        return W, margins, 1.0
    if np.any(margins[rows] <= 0):
        return W, margins, 1.0
    f = float(np.max(cs.rhs[rows] / margins[rows]))
    if f <= 1.0 and np.all(margins[rows] >= cs.rhs[rows]):
        return W, margins, 1.0
    if f > max_factor:
        return W, margins, 1.0
    eps = float(np.finfo(float).eps)
    for k in range(1, 6):
        g = max(f, 1.0) * (1.0 + 4.0 * k * eps)
        new = row_values(cs, W * g)
        if np.all(new[rows] >= cs.rhs[rows]):
            return W * g, new, g
    return W, margins, 1.0


def judge(
    *,
    tol: float,
    primal_infeasibility: float = 0.0,
    dual_infeasibility: float = 0.0,
    stationarity: float = 0.0,
    complementarity: float = 0.0,
    duality_gap: float = 0.0,
) -> Certificate:
    """Build a :class:`Certificate`, listing every residual above ``tol`` (NaN always fails)."""
    values = {
        "primal infeasibility": primal_infeasibility,
        "dual infeasibility": dual_infeasibility,
        "stationarity": stationarity,
        "complementarity": complementarity,
        "duality gap": duality_gap,
    }
    failures = tuple(
        f"{name} {value:.3g} > tol {tol:.1e}"
        for name, value in values.items()
        if not (value <= tol)  # catches NaN
    )
    return Certificate(
        primal_infeasibility=float(primal_infeasibility),
        dual_infeasibility=float(dual_infeasibility),
        stationarity=float(stationarity),
        complementarity=float(complementarity),
        duality_gap=float(duality_gap),
        tol=float(tol),
        failures=failures,
    )


def downgrade(result: SVMResult, certificate: Certificate) -> SVMResult:
    """Attach ``certificate``; when it fails, downgrade an optimal status and say why.

    ``OPTIMAL`` becomes ``OPTIMAL_INACCURATE`` and ``INFEASIBLE`` becomes
    ``INFEASIBLE_INACCURATE``; the message names each failed residual and its size.
    """
    status, message = result.status, result.message
    if not certificate.passed:
        text = "svmgeo's certificate check failed: " + "; ".join(certificate.failures)
        if status is Status.OPTIMAL:
            status = Status.OPTIMAL_INACCURATE
        elif status is Status.INFEASIBLE:
            status = Status.INFEASIBLE_INACCURATE
        message = f"{message}; {text}" if message else text
    return dataclasses.replace(result, status=status, message=message, certificate=certificate)


def frobenius_certificate(
    cs: ConstraintSet,
    W: np.ndarray,
    lam: np.ndarray,
    tol: float,
    *,
    margins: np.ndarray | None = None,
) -> Certificate:
    r"""KKT residuals of :math:`\min \tfrac12\|W\|_F^2` over ``cs`` at ``(W, lam)``.

    .. math::

        \text{stationarity} = \frac{\|W - \sum_j \lambda_j a_j b_j^\top\|_F}{\max(1, \|W\|_F)},
        \quad
        \text{complementarity} = \frac{\max_{j \in \mathcal M} |\lambda_j (m_j - c_j)|}
        {\max(1, \max_j |\lambda_j|)},
        \quad
        \text{gap} = \frac{|\tfrac12\|W\|_F^2 - (c^\top\lambda - \tfrac12\|W\|_F^2)|}
        {\max(1, \tfrac12\|W\|_F^2)},

    with :math:`m_j = a_j^\top W b_j`, primal infeasibility from :func:`primal_infeasibility`
    and dual infeasibility :math:`\max_{j \in \mathcal M} (-\lambda_j)_+`.

    Parameters
    ----------
    cs : ConstraintSet
    W : ndarray of shape (d, d)
    lam : ndarray of shape (N,)
    tol : float
    margins : ndarray of shape (N,), optional
        ``cs.apply(W)`` when already computed.

    Returns
    -------
    Certificate
    """
    W = np.asarray(W, dtype=float)
    lam = np.asarray(lam, dtype=float)
    m = row_values(cs, W) if margins is None else np.asarray(margins, dtype=float)
    is_m = cs.kind == MARGIN
    norm_w = float(np.linalg.norm(W))
    if cs.N:
        dual_inf = float(np.maximum(-lam[is_m], 0.0).max(initial=0.0))
        stat = float(np.linalg.norm(W - row_adjoint(cs, lam))) / max(1.0, norm_w)
        lam_scale = max(1.0, float(np.abs(lam).max()))
        comp = float(np.abs(lam[is_m] * (m[is_m] - cs.rhs[is_m])).max(initial=0.0)) / lam_scale
        half = 0.5 * norm_w**2
        gap = abs(half - (float(cs.rhs @ lam) - half)) / max(1.0, half)
    else:
        dual_inf = comp = 0.0
        stat = norm_w / max(1.0, norm_w)
        gap = 0.5 * norm_w**2 / max(1.0, 0.5 * norm_w**2)
    return judge(
        tol=tol,
        primal_infeasibility=primal_infeasibility(cs, m),
        dual_infeasibility=dual_inf,
        stationarity=stat,
        complementarity=comp,
        duality_gap=gap,
    )


def farkas_residual(cs: ConstraintSet, lam: np.ndarray) -> float:
    r"""Relative size of :math:`\sum_j \lambda_j a_j b_j^\top` for a Farkas vector ``lam``.

    .. math::

        \frac{\|\sum_j \lambda_j a_j b_j^\top\|_F}{\sum_j |\lambda_j|\,\|a_j\|\,\|b_j\|}

    (0 when the numerator is exactly 0). Together with :math:`\lambda_j \ge 0` on margin
    rows and :math:`c^\top\lambda = 1` it certifies that no :math:`W` satisfies the rows.
    """
    lam = np.asarray(lam, dtype=float)
    num = float(np.linalg.norm(row_adjoint(cs, lam)))
    if num == 0.0:
        return 0.0
    den = float(np.abs(lam) @ (np.linalg.norm(cs.A, axis=1) * np.linalg.norm(cs.B, axis=1)))
    return num / den if den > 0 else float("inf")


def adjoint_spectral_norm(cs: ConstraintSet, lam: np.ndarray) -> float:
    r""":math:`\|\sum_j \lambda_j a_j b_j^\top\|_2`, through thin QR factors of :math:`A^\top, B^\top` when :math:`d > N`."""
    if cs.N == 0:
        return 0.0
    if cs.d <= cs.N:
        return float(np.linalg.norm(cs.adjoint(lam), 2))
    Ra = np.linalg.qr(cs.A.T).R
    Rb = np.linalg.qr(cs.B.T).R
    return float(np.linalg.norm((Ra * np.asarray(lam)[None, :]) @ Rb.T, 2))


def nuclear_certificate(
    cs: ConstraintSet, W: np.ndarray, lam: np.ndarray, tol: float = 1e-8
) -> Certificate:
    r"""KKT certificate of Att-SVM⋆ (:math:`\min \|W\|_*` over the rows), recomputed from the data.

    With margins :math:`m_j = a_j^\top W b_j` and :math:`\Lambda = \sum_j \lambda_j a_j b_j^\top`:

    .. math::

        \text{primal: } \max_j (c_j - m_j)_+ \ (\text{margin}),\ |m_j - c_j|\ (\text{equality});\quad
        \text{dual: } (\|\Lambda\|_2 - 1)_+ + \max_{j\,\text{margin}} (-\lambda_j)_+;

        \text{stationarity: } \frac{|\langle\Lambda, W\rangle - \|W\|_*|}{\max(1, \|W\|_*)};\quad
        \text{complementarity: } \frac{\max_{j\,\text{margin}} |\lambda_j (m_j - c_j)|}
        {\max(1, \|W\|_*)};\quad
        \text{gap: } \frac{|c^\top\lambda - \|W\|_*|}{\max(1, \|W\|_*)}.

    Complementarity is relative like the gap: :math:`\sum_j \lambda_j (m_j - c_j) =
    \langle\Lambda, W\rangle - c^\top\lambda` is a difference of two quantities of size
    :math:`\|W\|_*`, so a row rounded at one ulp of its margin costs :math:`\lambda_j\,
    \epsilon`, which can be large in absolute terms when :math:`\|W\|_*` is.

    Dual feasibility and a zero gap make :math:`\lambda` a proof that no feasible :math:`W`
    has a smaller nuclear norm (weak duality: :math:`c^\top\lambda \le \langle\Lambda, W'\rangle
    \le \|\Lambda\|_2 \|W'\|_*`); stationarity says :math:`\Lambda` is a subgradient of the
    nuclear norm at :math:`W`.

    Parameters
    ----------
    cs : ConstraintSet
    W : array of shape (d, d)
    lam : array of shape (N,)
        Row multipliers.
    tol : float, default 1e-8

    Returns
    -------
    Certificate
    """
    W = np.asarray(W, dtype=float)
    lam = np.asarray(lam, dtype=float)
    margins = cs.apply(W)
    nuc = float(np.linalg.svd(W, compute_uv=False).sum()) if W.size else 0.0
    scale = max(1.0, nuc)
    margin = cs.kind == MARGIN
    spectral = adjoint_spectral_norm(cs, lam)
    sign = float(np.max(-lam[margin], initial=0.0))
    return judge(
        tol=tol,
        primal_infeasibility=primal_infeasibility(cs, margins),
        dual_infeasibility=max(spectral - 1.0, 0.0) + max(sign, 0.0),
        stationarity=abs(float(lam @ margins) - nuc) / scale,
        complementarity=float(
            np.max(np.abs(lam[margin] * (margins[margin] - cs.rhs[margin])), initial=0.0)
        )
        / scale,
        duality_gap=abs(float(cs.rhs @ lam) - nuc) / scale,
    )
