# SPDX-License-Identifier: BSD-3-Clause
r"""The finite component :math:`W^{\mathrm{fin}}` of next-token prediction and its subspace."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import scipy.optimize as so

from .._errors import ProblemError
from .._validation import check_option, check_real, max_row_norm
from ..constraints import EQUALITY
from ..gd import NTP_LOSSES
from ._data import _NORM_LIMIT, NextTokenData, check_data
from ._graphs import TokenPriorityGraph, token_priority_graphs
from ._risk import _risk, forward
from ._svm import constraint_rows

__all__ = ["FiniteComponent", "finite_component", "top_positions"]

BOUNDARY = 1e-6
"""svmgeo's heuristic: top-token attention below this at BFGS's last point is read as the
restricted loss having no finite minimizer (its infimum on the boundary of the simplex)."""


def top_positions(data: NextTokenData, graphs: dict[int, TokenPriorityGraph]) -> np.ndarray:
    """(n, T) mask of each sequence's tokens in the SCC of its label."""
    keep = np.zeros((data.n, data.T), dtype=bool)
    for i in range(data.n):
        g = graphs[int(data.last[i])]
        toks = data.tokens[i]
        keep[i] = data.valid[i] & (g.component[np.maximum(toks, 0)] == g.component[data.labels[i]])
    return keep


@dataclass(frozen=True, eq=False)
class FiniteComponent:
    r"""The finite component :math:`W^{\mathrm{fin}}` and the subspace it lives in.

    Attributes
    ----------
    W : ndarray of shape (d, d)
    basis : ndarray of shape (r, d, d)
        Orthonormal basis (Frobenius) of :math:`S_{\mathrm{fin}}`; ``r = 0`` when no SCC has
        two or more tokens, or their embedding differences vanish (then ``W = 0``).
    keep : ndarray of bool, shape (n, T)
        The top-priority positions of each sequence (its label's SCC).
    loss : float
        The restricted loss at ``W``.
    loss_name : {"ce", "retrieval"}
        The loss it minimizes.
    grad_norm : float
        Norm of the restricted gradient projected on :math:`S_{\mathrm{fin}}` at ``W`` (in W's
        units: the basis coordinates, unscaled).
    success : bool
        BFGS converged: the gradient's largest entry in the solve's coordinates (those of
        :func:`finite_component`) is at most ``tol`` (scipy BFGS's ``gtol``).
    at_boundary : bool
        A top-priority token gets attention below :data:`BOUNDARY` (1e-6) at ``W``. svmgeo's
        heuristic, not a proof: the restricted loss then reads as minimized on the boundary
        of the simplex, with no finite minimizer, and ``W`` as a point far along a diverging
        path. False means a finite :math:`W^{\mathrm{fin}}` was found (to ``tol`` when
        ``success``).
    message : str
    """

    W: np.ndarray
    basis: np.ndarray
    keep: np.ndarray
    loss: float
    loss_name: str
    grad_norm: float
    success: bool
    at_boundary: bool
    message: str

    def project(self, W: np.ndarray) -> np.ndarray:
        r"""Orthogonal projection of ``W`` onto :math:`S_{\mathrm{fin}}`."""
        if self.basis.shape[0] == 0:
            return np.zeros_like(np.asarray(W, dtype=float))
        coef = np.einsum("rab,ab->r", self.basis, W)
        return np.einsum("r,rab->ab", coef, self.basis)

    def _repr_html_(self) -> str:  # Jupyter: the field table (svmgeo._summary)
        from .._summary import html_summary

        return html_summary(self)


def finite_component(
    data: NextTokenData, *, loss: str = "ce", tol: float = 1e-9
) -> FiniteComponent:
    r"""The finite component :math:`W^{\mathrm{fin}}` of next-token prediction.

    .. math::

        W^{\mathrm{fin}} = \arg\min_{W \in S_{\mathrm{fin}}} L_{\mathrm{top}}(W),\qquad
        S_{\mathrm{fin}} = \mathrm{span}\{(e_i - e_j)e_k^\top : i \asymp j \text{ in } G^{(k)}\},

    :math:`L_{\mathrm{top}}` the risk of :func:`ntp_loss_and_grad` with each sequence's
    attention restricted to the tokens of its label's SCC. Solved by BFGS from zero on the
    coordinates :math:`u` of :math:`W = 2^{-2k} \sum_r u_r B_r` in an orthonormal basis
    :math:`(B_r)` of :math:`S_{\mathrm{fin}}`, with :math:`k` the integer nearest
    :math:`\log_2 \max_v\|e_v\|` (0 for unit embeddings):
    the attention logits :math:`e_x^\top W e_{\bar x}` are of order :math:`\|u\|` at every
    scale of the embeddings, and the power of two is exact in float64. So ``tol`` is
    scale-free: for the retrieval loss (whose value depends on W and E only through the
    logits) :math:`W^{\mathrm{fin}}(cE) = W^{\mathrm{fin}}(E)/c^2` with the same loss, exactly
    for :math:`c` a power of two. (The cross-entropy outputs :math:`E E_X^\top s` scale with
    :math:`c^2` too: that loss changes with the scale of the embeddings.)

    For the retrieval loss :math:`L_{\mathrm{top}}` on :math:`S_{\mathrm{fin}}` is convex
    (within a sequence every position of the label token has the same logit: a log-sum-exp
    of the logits minus a linear term; *svmgeo's derivation*). For ``"ce"`` it is not: along
    one component's logit gap it can have a finite minimum and a lower-gradient plateau where
    the attention saturates, and BFGS from zero can stop on the plateau with its gradient
    below ``tol``. Measured on ``random_next_token_data(60, 5, 6, 10, tier_size=2, seed=1)``:
    the returned loss is 4.9e-5 above that of a point of :math:`S_{\mathrm{fin}}` with the
    gap (tokens 1, 3 under last token 5) moved from -97 to its finite minimizer -2.9 (an
    example, not a bound: how far above the minimum BFGS stops depends on the data). So for
    ``"ce"``, ``success`` means BFGS's tolerance was reached, not that the minimum was (the
    command that prints these figures: CHANGELOG.md, "Documented (session 42)").

    Parameters
    ----------
    data : NextTokenData
    loss : {"ce", "retrieval"}, default "ce"
    tol : float, default 1e-9
        Tolerance on the gradient's largest entry in the coordinates :math:`u` (BFGS's
        ``gtol``; the result says whether it was reached).

    Returns
    -------
    FiniteComponent

    Raises
    ------
    ProblemError
        Invalid options, or embeddings so small that :math:`W^{\mathrm{fin}}` (of order
        :math:`1/\max_v\|e_v\|^2`) would pass the next-token risk's norm limit.

    References
    ----------
    .. [1] Y. Li, Y. Huang, M. E. Ildiz, A. S. Rawat, S. Oymak, "Mechanics of Next Token
       Prediction with Self-Attention", arXiv:2403.08081 (the finite component).
    """
    data = check_data(data, "finite_component")
    check_option(loss, "loss", NTP_LOSSES, where="finite_component")
    tol = check_real(tol, "tol", low=0.0, low_open=True, where="finite_component")
    graphs = token_priority_graphs(data)
    cs = constraint_rows(data, graphs)
    eq = cs.kind == EQUALITY
    keep = top_positions(data, graphs)
    d = data.d
    gens = np.einsum("ja,jb->jab", cs.A[eq], cs.B[eq]).reshape(-1, d * d)
    if gens.shape[0] == 0:
        basis = np.zeros((0, d, d))
    else:
        U, sv, _ = np.linalg.svd(gens.T, full_matrices=False)
        r = int(np.count_nonzero(sv > sv[0] * 1e-12))
        basis = U[:, :r].T.reshape(r, d, d)
    if basis.shape[0] == 0:
        value = _risk(data, np.zeros((d, d)), loss, keep)[0]
        return FiniteComponent(
            W=np.zeros((d, d)),
            basis=basis,
            keep=keep,
            loss=value,
            loss_name=loss,
            grad_norm=0.0,
            success=True,
            at_boundary=False,
            message=(
                "S_fin = {0}: no strongly connected component with 2 or more tokens, or their "
                "embedding differences vanish; W_fin = 0"
            ),
        )

    # W = 2^-2k sum_r u_r B_r with 2^k the power of two nearest max ||e||: logits of order ||u||
    size = max_row_norm(data.embeddings)  # > 0: the basis is not empty
    k = round(math.log2(size))
    if 2.0 ** (-2 * k) > _NORM_LIMIT:
        raise ProblemError(
            f"finite_component: max ||embeddings|| = {size:.3g} is so "
            f"small that W_fin (of order 1 / max ||e||^2) passes the next-token risk's norm "
            f"limit {_NORM_LIMIT:.0e}. Rescale embeddings (W_fin(c E) = W_fin(E) / c^2 for "
            "the retrieval loss)."
        )

    def weights(u: np.ndarray) -> np.ndarray:
        return np.ldexp(np.einsum("r,rab->ab", u, basis), -2 * k)

    def fun(u: np.ndarray) -> tuple[float, np.ndarray]:
        value, G, _ = _risk(data, weights(u), loss, keep)
        return value, np.ldexp(np.einsum("rab,ab->r", basis, G), -2 * k)

    res = so.minimize(
        fun,
        np.zeros(basis.shape[0]),
        jac=True,
        method="BFGS",
        options={"gtol": tol, "maxiter": 20000},
    )
    value, g = fun(np.asarray(res.x))
    W = weights(np.asarray(res.x))
    gnorm = float(np.linalg.norm(np.ldexp(g, 2 * k)))  # the gradient in W's basis coordinates
    top = float(np.max(np.abs(g), initial=0.0))
    ok = top <= tol  # BFGS's criterion (gtol, max norm)
    msg = (
        f"BFGS: {res.message} (largest gradient entry {top:.2e}, tol {tol:g}; "
        f"|W_fin| = {np.linalg.norm(W):.3g})"
    )
    if not ok:
        msg += "; BFGS did not reach its tolerance"
    _, _, s_top = forward(data, W, keep)
    smallest = float(np.min(np.where(keep, s_top, 1.0)))
    boundary = smallest < BOUNDARY
    if boundary:
        msg += (
            f"; a top-priority token gets attention {smallest:.1e} < {BOUNDARY:g}: by svmgeo's "
            "heuristic (not a proof) the restricted loss is minimized on the boundary of the "
            "simplex with no finite minimizer, and W_fin is a point far along a diverging path"
        )
    return FiniteComponent(
        W=W, basis=basis, keep=keep, loss=value, loss_name=loss, grad_norm=gnorm, success=ok,
        at_boundary=boundary, message=msg,
    )  # fmt: skip
