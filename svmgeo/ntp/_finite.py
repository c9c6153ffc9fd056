# SPDX-License-Identifier: BSD-3-Clause
r"""The finite component :math:`W^{\mathrm{fin}}` of next-token prediction and its subspace."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.linalg as sla
import scipy.optimize as so

from .._errors import ProblemError
from .._summary import summarized
from .._validation import check_option, check_real
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


def _exponents(X: np.ndarray, offset: float) -> tuple[np.ndarray, np.ndarray]:
    r"""Per row :math:`x` of ``X``: the integer :math:`k` nearest
    :math:`\log_2\|x\| - \mathrm{offset}`, and whether :math:`x \ne 0` (else :math:`k = 0`).

    Read from the largest entry's binary exponent plus a scale-free remainder, so no square
    under- or overflows and :math:`2^m X` gives :math:`k + m` exactly.
    """
    top = np.max(np.abs(X), axis=1)
    nonzero = top > 0.0
    top = np.where(nonzero, top, 1.0)
    frac, exp = np.frexp(top)
    rest = np.log2(frac) + np.log2(np.linalg.norm(X / top[:, None], axis=1)) - offset
    return np.where(nonzero, exp + np.round(rest).astype(np.int64), 0), nonzero


def _logit_scale(P: np.ndarray, kappa: np.ndarray) -> np.ndarray:
    r"""The (r, r) coordinate map :math:`M` of :func:`finite_component`.

    ``P`` (m, r) holds the logits :math:`\hat a_j^\top B_r \hat b_j` of the basis
    directions on the normalized generators (:math:`a_j = 2^{k_{a,j}}\hat a_j`, the same for
    :math:`b`), so :math:`D P` with :math:`D = \mathrm{diag}(2^{\kappa_j})`,
    :math:`\kappa_j = k_{a,j} + k_{b,j}`, holds their true logits. :math:`M = 2^{-\kappa} I`
    when every :math:`\kappa_j` is the same :math:`\kappa`, else
    :math:`M = R^{-1}\hat R`, with :math:`D P = Q R` and :math:`P = \hat Q \hat R` (QR, the
    rows sorted by decreasing :math:`\kappa_j`): :math:`D P M = Q \hat R`, the scales
    taken out and the geometry of the normalized generators kept (what :math:`2^{-\kappa} I`
    does for one scale). Powers of two throughout: exact under :math:`E \to 2^m E`.
    """
    r = P.shape[1]
    hi = int(kappa.max())
    if int(kappa.min()) == hi:
        return np.ldexp(np.eye(r), -hi)
    order = np.argsort(-kappa, kind="stable")
    P = P[order]
    R = np.linalg.qr(np.ldexp(P, (kappa[order] - hi)[:, None]), mode="r")
    R_hat = np.linalg.qr(P, mode="r")
    with np.errstate(all="ignore"):  # a singular R (scales beyond float64): inf, refused
        return np.ldexp(sla.solve_triangular(R, R_hat), -hi)


@summarized
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
        :func:`finite_component`: each direction scaled to order-1 logits) is at most ``tol``
        (scipy BFGS's ``gtol``).
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
    attention restricted to the tokens of its label's SCC. Solved by BFGS from zero on
    coordinates :math:`u` in which every direction moves the attention logits by order 1,
    whatever the scale of each embedding:

    * each generator :math:`a_j b_j^\top` (:math:`a_j = e_i - e_j`, :math:`b_j = e_k`) is
      normalized to :math:`\hat G_j = 2^{-\kappa_j} a_j b_j^\top`, with :math:`2^{k_{a,j}}`
      the power of two nearest :math:`\|a_j\|/\sqrt2`, :math:`2^{k_{b,j}}` the one nearest
      :math:`\|b_j\|` and :math:`\kappa_j = k_{a,j} + k_{b,j}`; the orthonormal basis
      :math:`(B_r)` of :math:`S_{\mathrm{fin}}` and its rank (singular values above
      :math:`10^{-12}` of the largest) are those of the :math:`\hat G_j`, so a generator
      small next to another is not cut as round-off;
    * :math:`W = \sum_r (M u)_r B_r`: with one :math:`\kappa` for every generator (e.g.
      orthonormal embeddings, or :math:`c` times them) :math:`M = 2^{-\kappa} I`; else
      :math:`M` takes the scales :math:`2^{\kappa_j}` out of the logits
      :math:`a_j^\top B_r b_j` (a QR of them, rows by decreasing :math:`\kappa_j`) and keeps
      the geometry of the :math:`\hat G_j`, as :math:`2^{-\kappa} I` does for one scale.

    The gradient in :math:`u` is so, direction by direction, the loss's slope per unit of
    that direction's logits: ``tol`` is scale-free, and a direction whose embeddings are
    small next to the others' is not left at zero with a gradient already below ``tol``
    (as one scale from the largest embedding norm did). Every factor is a power of two,
    exact in float64: for the retrieval loss (whose value depends on W and E only through
    the logits) :math:`W^{\mathrm{fin}}(cE) = W^{\mathrm{fin}}(E)/c^2` with the same loss,
    exactly for :math:`c` a power of two. (The cross-entropy outputs :math:`E E_X^\top s`
    scale with :math:`c^2` too: that loss changes with the scale of the embeddings.) BFGS
    can still stop short of ``tol``, and then says so (``success=False``): on
    :math:`E = I_5` with one embedding scaled to :math:`10^{-20}` its line search ends in
    precision loss at a largest gradient entry of 1.9e-9 (``tol=1e-9``), W right to 2e-8;
    and with scales far apart on embeddings that are not orthogonal, the large parts of W
    along small-scale directions cancel on the large-scale logits, which float64 then
    computes with an error of about :math:`10^{-16}\,\|e_x\|\,\|W\|\,\|e_k\|`, and BFGS
    can stop far from the minimum (svmgeo's measurement on random data with Gaussian
    embeddings: largest gradient entries up to 1e-3 at norm ratios of about :math:`10^7`).

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
        Invalid options, or embeddings so small that :math:`W^{\mathrm{fin}}` along some
        direction of :math:`S_{\mathrm{fin}}` (of order :math:`2^{-\kappa_j}`, about
        :math:`1/(\|e_i - e_j\|\,\|e_k\|)`) would pass the next-token risk's norm limit.

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
    # normalized generators 2^-(k_a + k_b) a_j b_j^T (norm 1 to 2): the basis and its rank do
    # not depend on how large one generator is next to another
    A, B = cs.A[eq], cs.B[eq]
    k_a, nz_a = _exponents(A, 0.5)  # 2^k_a nearest ||a|| / sqrt(2): a = e_i - e_j
    k_b, nz_b = _exponents(B, 0.0)
    live = nz_a & nz_b  # a zero generator spans nothing (shared embeddings, zero query)
    kappa = (k_a + k_b)[live]
    gens = np.einsum(
        "ja,jb->jab", np.ldexp(A[live], -k_a[live, None]), np.ldexp(B[live], -k_b[live, None])
    ).reshape(-1, d * d)
    if gens.shape[0] == 0:
        basis = np.zeros((0, d, d))
    else:
        U, sv, Vt = np.linalg.svd(gens.T, full_matrices=False)
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
    # W = sum_r (M u)_r B_r with M scaling every basis direction's logits to order 1
    M = _logit_scale(Vt[:r].T * sv[:r], kappa)
    top_scale = float(np.max(np.abs(M)))
    if not top_scale <= _NORM_LIMIT:
        j = int(np.argmin(kappa))
        row = np.flatnonzero(eq)[np.flatnonzero(live)[j]]  # the smallest generator's row
        k, i, i2 = int(cs.seq[row]), int(cs.pref[row]), int(cs.comp[row])
        raise ProblemError(
            "finite_component: S_fin has a direction whose logits are so small that W_fin "
            f"along it passes the next-token risk's norm limit {_NORM_LIMIT:.0e} (its "
            f"smallest generator: tokens {i}, {i2} under last token {k}, with "
            f"||e_{i} - e_{i2}|| ||e_{k}|| about 2^{int(kappa[j])}; W_fin is of order 1 / "
            "that). Give these tokens larger embeddings, or rescale all embeddings "
            "(W_fin(c E) = W_fin(E) / c^2 for the retrieval loss)."
        )

    def weights(u: np.ndarray) -> np.ndarray:
        return np.einsum("r,rab->ab", M @ u, basis)

    def fun(u: np.ndarray) -> tuple[float, np.ndarray]:
        value, G, _ = _risk(data, weights(u), loss, keep)
        return value, M.T @ np.einsum("rab,ab->r", basis, G)

    res = so.minimize(
        fun,
        np.zeros(basis.shape[0]),
        jac=True,
        method="BFGS",
        options={"gtol": tol, "maxiter": 20000},
    )
    W = weights(np.asarray(res.x))
    value, G, _ = _risk(data, W, loss, keep)
    g_basis = np.einsum("rab,ab->r", basis, G)
    g = M.T @ g_basis
    gnorm = float(np.linalg.norm(g_basis))  # the gradient in W's basis coordinates
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
