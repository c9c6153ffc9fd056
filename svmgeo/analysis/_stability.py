# SPDX-License-Identifier: BSD-3-Clause
r"""Stability of attention: exact local Lipschitz constants, global bounds or certificates of
unboundedness, and the selection-changing radius of softmax attention.

.. math::

    y_{ik}(W, X_i) = U_i^\top \varphi(X_i W z_{ik}), \qquad
    \mathrm{Lip}_W = \|\partial_W y_{ik}\|_2 = \|U_i^\top J_\varphi(u_{ik}) X_i\|_2\, \|z_{ik}\|,
    \qquad r_{ik} = \min_{\tau \ne \alpha} \frac{(x_{i\alpha} - x_{i\tau})^\top W z_{ik}}
    {\sqrt2\, \|W z_{ik}\|}.

*svmgeo's reconstruction* from the abstract of Chen, Guo, Li, Song, Zhou, "On the Similarity
between Attention and SVM on the Token Separation and Selection Behavior" (ICLR 2024
submission 4416, withdrawn; its text is not public): the abstract claims softmax attention is
more stable than linear attention through Lipschitz constants. The formulas here are svmgeo's
derivations (proofs in docs/attention-maps.md); the bounds rest on standard facts
(Popoviciu's inequality, :math:`\|A \otimes B\|_2 = \|A\|_2\|B\|_2`).
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from .._errors import ProblemError
from .._linalg import frobenius_norm, row_norms
from .._summary import summarized
from .._validation import check_array, check_bool, check_int, check_option
from ..attention_maps import (
    AttentionMap,
    gamma,
    get_attention_map,
    logit_sum_bound,
    refuse_undetermined_sums,
    visible_sum,
)
from ..data import TokenData
from ..selection import (
    TIE_RTOL,
    logit_selection,
    logits_of_arrays,
    tied_maxima,
    underflow_size,
)
from ..selection import check_data as _check_data
from ..solvers import att_svm

__all__ = [
    "RECONSTRUCTION",
    "LipschitzResult",
    "RobustnessRadius",
    "UnboundednessCertificate",
    "attention_jacobian",
    "lipschitz",
    "robustness_radius",
]

RECONSTRUCTION = (
    "svmgeo's reconstruction from the abstract of Chen, Guo, Li, Song, Zhou (ICLR 2024 "
    "submission 4416, withdrawn); formulas are svmgeo's derivations, see docs/attention-maps.md"
)
"""The label every result of this paper's analyses carries."""


def _check_W(W: Any, d: int, where: str) -> np.ndarray:
    return check_array(
        W,
        "W",
        ndim=2,
        shape=(d, d),
        hint=f"{where} takes the attention matrix W of shape ({d}, {d}).",
    )


def _query_token(data: TokenData, k: int) -> int | None:
    """Index of the token that is query k (self-attention), None for cross-attention."""
    if data.query is None:
        return None
    return k if data.query == "all" else int(data.query)


def attention_jacobian(
    data: TokenData,
    W: Any,
    i: int,
    k: int = 0,
    *,
    attention: str = "softmax",
    wrt: Literal["W", "X"] = "W",
) -> np.ndarray:
    r"""The Jacobian of one attention output :math:`y_{ik} = U_i^\top\varphi(X_i W z_{ik})`.

    .. math::

        \partial_{\mathrm{vec}\,W}\, y_{ik} = (U_i^\top J X_i) \otimes z_{ik}^\top, \qquad
        \partial_{x_{it}}\, y_{ik} = U_i^\top J e_t (W z_{ik})^\top
            + [U = X]\,\varphi_t I + [t = q]\, U_i^\top J X_i W

    with :math:`J = J_\varphi(X_i W z_{ik})` over the visible keys, ``vec`` row-major (so
    :math:`a^\top W b = (a \otimes b)^\top \mathrm{vec}\,W`), the middle term when the head
    features are the tokens themselves, and the last for self-attention (query token
    :math:`q`, since :math:`z_{ik} = x_{iq}` moves with :math:`X_i`).

    Parameters
    ----------
    data : TokenData
    W : array of shape (d, d)
    i, k : int
        Sequence and query.
    attention : str
        A name in :data:`~svmgeo.attention_maps.ATTENTION_MAPS`.
    wrt : {"W", "X"}
        Differentiate in :math:`\mathrm{vec}\,W` (columns :math:`d^2`) or in
        :math:`\mathrm{vec}\,X_i` (columns :math:`T d`, row-major over tokens).

    Returns
    -------
    ndarray of shape (d_u, d*d) or (d_u, T*d)
        Entries beyond float64's range are inf (in X, at a W near its largest numbers).

    Raises
    ------
    ProblemError
        As :func:`lipschitz`.
    """
    data = _check_data(data, "attention_jacobian")
    Wc = _check_W(W, data.d, "attention_jacobian")
    amap = get_attention_map(attention, "attention_jacobian")
    check_option(wrt, "wrt", ("W", "X"), where="attention_jacobian")
    i = check_int(i, "i", low=0, high=data.n - 1, where="attention_jacobian")
    k = check_int(k, "k", low=0, high=data.K - 1, where="attention_jacobian")
    Ws, e = _factored(Wc, amap)
    M, f = _jacobian(data, Ws, e, i, k, amap, wrt, "attention_jacobian")
    return _times_power_of_two(M, f)


def _split(W: np.ndarray) -> tuple[np.ndarray, int]:
    r"""W as :math:`2^e W_s`: ``(W, 0)`` where :math:`\max|W|` is 0 or within
    :math:`[2^{-256}, 2^{256}]`, else :math:`W_s = 2^{-e} W` with :math:`2^{e-1} \le \max|W| <
    2^e` (exact for the entries above :math:`2^{e - 1075}`: a power of two). Logits and
    :math:`\|W z\|` leave float64's normal range for a W near the ends of it (the radius, which
    does not depend on W's scale, had relative errors of 2.6e-9 and 5e-4 at :math:`\max|W|
    \approx 10^{-315}` and :math:`10^{-320}` before it was computed from :math:`W_s`)."""
    top = float(np.abs(W).max(initial=0.0))
    if top == 0.0 or 2.0**-256 <= top <= 2.0**256:
        return W, 0
    e = math.frexp(top)[1]
    return np.ldexp(W, -e), e


def _degree(amap: AttentionMap) -> int | None:
    r"""p where the map is positively homogeneous of degree p, :math:`\varphi(cu) =
    c^p\varphi(u)` for :math:`c > 0` (so :math:`J_\varphi(cu) = c^{p-1} J_\varphi(u)`):
    0 for normalized linear attention, 1 for linear and ReLU; None for softmax and sigmoid."""
    return 0 if amap.scale_invariant else {"linear": 1, "relu": 1}.get(amap.name)


def _factored(W: np.ndarray, amap: AttentionMap) -> tuple[np.ndarray, int]:
    """:func:`_split` where it serves the map: at both ends for a homogeneous map (evaluated
    at :math:`W_s`'s logits), only above :math:`2^{256}` for the others (a tiny W's logits
    and Jacobians are within range as they are)."""
    Ws, e = _split(W)
    return (W, 0) if e < 0 and _degree(amap) is None else (Ws, e)


def _times_power_of_two(x: Any, f: int) -> Any:
    r""":math:`2^f x`, rounded: inf where it exceeds float64's range (the value does)."""
    if f == 0:
        return x
    with np.errstate(over="ignore", under="ignore"):
        return np.ldexp(x, f)


def _logits(data: TokenData, W: np.ndarray, i: int, k: int, e: int = 0) -> np.ndarray:
    r""":math:`u = 2^e X_i (W z_{ik})`, in this order wherever a map is evaluated at them
    (:math:`\pm\infty` where :math:`2^e` times a logit exceeds float64's range)."""
    return _times_power_of_two(np.asarray(data.X[i]) @ (W @ np.asarray(data.queries[i, k])), e)


def _sum_and_bound(data: TokenData, W: np.ndarray, i: int, k: int) -> tuple[float, float]:
    r""":math:`\mathbf 1^\top u` over the visible keys as computed from :func:`_logits`, and
    the bound on its rounding error (``svmgeo.attention_maps.logit_sum_bound``)."""
    vis = np.asarray(data.visible[i, k])
    S = float(visible_sum(_logits(data, W, i, k), vis)[0])
    z = np.asarray(data.queries[i, k])
    return S, float(logit_sum_bound(np.asarray(data.X[i]), W, z[None], vis[None])[0])


def _map_at(
    data: TokenData, Ws: np.ndarray, e: int, i: int, k: int, amap: AttentionMap, where: str
) -> tuple[np.ndarray, np.ndarray, int, int]:
    r"""``(u, J, f_J, f_phi)`` for :math:`W = 2^e W_s`: the logits the map is evaluated at,
    its Jacobian there, and the powers of two with :math:`J_\varphi(u_{ik}) = 2^{f_J} J` and
    :math:`\varphi(u_{ik}) = 2^{f_\varphi}\varphi(u)`. A homogeneous map of degree p
    (:func:`_degree`) is evaluated at :math:`W_s`'s logits (:math:`f_J = (p - 1)e`,
    :math:`f_\varphi = pe`); the others at :math:`2^e X_i (W_s z_{ik})`, refused where a
    visible one exceeds float64's range."""
    vis = np.asarray(data.visible[i, k])
    p = _degree(amap)
    if p is not None:
        u, f_J, f_phi = _logits(data, Ws, i, k), (p - 1) * e, p * e
        if amap.name == "normalized_linear":  # 1^T u from X, W, z: its own rounding error too
            S, bound = _sum_and_bound(data, Ws, i, k)
            refuse_undetermined_sums(np.array(S), np.array(bound), which=f"sequence {i}, query {k}")
    else:
        u, f_J, f_phi = _logits(data, Ws, i, k, e), 0, 0
        if not np.all(np.isfinite(u[vis])):
            top = float(np.abs(_logits(data, Ws, i, k)[vis]).max())
            raise ProblemError(
                f"{where}: at this W the logits u = X_i W z_ik of sequence {i}, query {k} reach "
                f"10^{math.log10(top) + e * math.log10(2.0):.1f}, beyond float64's largest "
                f"number (1.8e308): {amap.name} attention and its Jacobian cannot be evaluated "
                "there. Rescale W (e.g. W / np.abs(W).max()) to a scale whose logits float64 "
                "holds: this map's constants depend on W's scale (those of the homogeneous "
                "maps, linear, ReLU and normalized linear attention, are computed at any W)."
            )
    return u, amap.jacobian(u, vis), f_J, f_phi  # J: (T, T), 0 off the visible keys


def _jacobian(
    data: TokenData,
    Ws: np.ndarray,
    e: int,
    i: int,
    k: int,
    amap: AttentionMap,
    wrt: str,
    where: str = "",
) -> tuple[np.ndarray, int]:
    r"""``(M, f)`` with :math:`2^f M` the Jacobian of :func:`attention_jacobian` at
    :math:`W = 2^e W_s` (:func:`_factored`); :math:`f = 0` wherever the Jacobian is within
    float64's range."""
    X = np.asarray(data.X[i])
    U = np.asarray(data.values[i])
    z = np.asarray(data.queries[i, k])
    vis = np.asarray(data.visible[i, k])
    u, J, f_J, f_phi = _map_at(data, Ws, e, i, k, amap, where)
    if wrt == "W":
        return np.kron(U.T @ J @ X, z[None, :]), f_J
    # the terms in J W and J (W z) carry 2^(f_J + e) (W = 2^e W_s), phi_t I carries 2^f_phi
    f_g = f_J + e
    T, d = X.shape
    Jg = np.einsum("at,s->ats", U.T @ J, Ws @ z)  # (d_u, T, d): U^T J e_t g^T, over 2^f_g
    phi = None if data.has_values else amap.phi(u, vis)
    q = _query_token(data, k)
    Jq = None if q is None else U.T @ J @ X @ Ws

    def summed(c: int) -> np.ndarray:  # 2^-c times the Jacobian
        Jx = np.array(_times_power_of_two(Jg, f_g - c))  # a copy: Jg serves both scales
        if phi is not None:
            Jx += _times_power_of_two(phi, f_phi - c)[None, :, None] * np.eye(d)[:, None, :]
        if Jq is not None:
            Jx[:, q, :] += _times_power_of_two(Jq, f_g - c)
        return Jx.reshape(U.shape[1], T * d)

    c = max(f_g, f_phi)  # the scale of its largest terms
    if c > 0:  # as it is where float64 holds it
        with np.errstate(over="ignore", invalid="ignore"):  # inf - inf: not held either
            Jx = summed(0)
        if np.all(np.isfinite(Jx)):
            return Jx, 0
    return summed(c), c


def _stacked(parts: list[tuple[np.ndarray, int]]) -> tuple[np.ndarray, int]:
    """The rows of ``2^f M`` for each ``(M, f)`` as one ``(M, f)``, at the largest f."""
    top = max(f for _, f in parts)
    return np.concatenate([_times_power_of_two(M, f - top) for M, f in parts], axis=0), top


def _constant(M: np.ndarray, f: int) -> float:
    r""":math:`\|2^f M\|_2`: inf where it exceeds float64's range."""
    return float(_times_power_of_two(_spectral(M), f))


def _norm(x: np.ndarray) -> float:
    return frobenius_norm(x)  # no overflow of the squares at entries beyond 1e154


def _spectral(M: np.ndarray) -> float:
    return float(np.linalg.norm(M, 2)) if M.size else 0.0


@summarized
@dataclass(frozen=True, eq=False)
class UnboundednessCertificate:
    r"""An explicit family of :math:`W` along which the local constant grows without bound.

    Attributes
    ----------
    seq, query : int
        The query :math:`(i, k)` whose output the constants are of.
    parameter : {"scale", "eps"}
        ``"scale"``: :math:`W_c = c\,W_\star` with :math:`c` in ``values``; ``"eps"``:
        :math:`W_\varepsilon` with :math:`\mathbf 1^\top X_i W_\varepsilon z_{ik} = \varepsilon`.
    values : ndarray of shape (m,)
        :math:`c` (growing) or :math:`\varepsilon` (shrinking to 0).
    Ws : ndarray of shape (m, d, d)
        The matrices.
    constants : ndarray of shape (m,)
        The exact local constants at each (growing).
    reason : str
        Why they grow.
    """

    seq: int
    query: int
    parameter: str
    values: np.ndarray
    Ws: np.ndarray
    constants: np.ndarray
    reason: str


@summarized
@dataclass(frozen=True, eq=False)
class LipschitzResult:
    r"""Exact local Lipschitz constants of attention outputs, and the global bound or its absence.

    Attributes
    ----------
    attention, wrt : str
        The map and the variable (``"W"`` or ``"X"``).
    per_query : ndarray of shape (n, K)
        :math:`\|\partial y_{ik}\|_2` (inf where it exceeds float64's range).
    per_sequence : ndarray of shape (n,)
        The constant of the stacked outputs :math:`(y_{i1}, \dots, y_{iK})` of sequence i.
    overall : float
        The constant of all outputs stacked (in X: the largest per-sequence constant, the
        Jacobian being block-diagonal over sequences; in W: the spectral norm of the stacked
        Jacobian).
    bound_per_query : ndarray of shape (n, K) or None
        The global bound over all W (``wrt="W"``; also ``wrt="X"`` where every query sees one
        key of a map that sums to one, whose constants are then the same at every W), None
        when there is none. In W it is rounded up by the factor :math:`1 + \gamma_r`
        (:func:`~svmgeo.attention_maps.gamma`, Higham's :math:`\gamma`), r counting the
        roundings of the local constant and of the bound, with each largest singular value
        taken to err by (rows + columns) :math:`u\,\sigma_{\max}` (LAPACK's error bound
        :math:`p(m, n)\,u\|A\|_2`, its "modestly growing" p so taken): a conservative
        allowance for rounding under that assumption, not a proof that the float constants
        stay below it (the norm-wise error of the products carries factors such as
        :math:`\sqrt{\mathrm{rank}}`, and the rounding of J itself, of softmax's p or
        sigmoid's :math:`\sigma'`, is not counted). It is met by linear attention with
        values = tokens, :math:`\|X^\top X\|_2 = \|X\|_2^2`, where before session 61
        ``per_query`` exceeded the float bound by up to :math:`1.3\cdot 10^{-15}`; with the
        allowance it did not in the 800 cases of ``tests/analysis/test_stability.py``
        (measured).
    bound_overall : float or None
        The global bound for the stacked outputs, :math:`(\sum_{ik} b_{ik}^2)^{1/2}`.
    bound_reason : str
        The one-line reason for the bound, why there is none, or that it is not decided for
        these data (no query has a growing family).
    certificate : UnboundednessCertificate or None
        When there is no global bound: W's with growing local constants (None where no
        query has such a family).
    label : str
        :data:`RECONSTRUCTION`.
    """

    attention: str
    wrt: str
    per_query: np.ndarray
    per_sequence: np.ndarray
    overall: float
    bound_per_query: np.ndarray | None
    bound_overall: float | None
    bound_reason: str
    certificate: UnboundednessCertificate | None
    label: str = RECONSTRUCTION


def _onto_nearest_hyperplane(g: np.ndarray, H: np.ndarray) -> np.ndarray | None:
    r"""The projection of g onto the nearest hyperplane :math:`h_t^\top x = 0` among the nonzero
    rows of H (None when all are zero); inside the cone :math:`\{h_t^\top x \ge 0\}` the
    projection stays in it (the nearest facet is the boundary point closest to g)."""
    hn = np.linalg.norm(H, axis=1)
    ok = hn > 0
    if not np.any(ok):
        return None
    ratio = np.where(ok, np.abs(H @ g) / np.where(ok, hn, 1.0), np.inf)
    t = int(np.argmin(ratio))
    return g - (H[t] @ g) / hn[t] ** 2 * H[t]


def _certificate_base(
    data: TokenData, W: np.ndarray, i: int, k: int, amap: AttentionMap
) -> tuple[np.ndarray, str] | None:
    r""":math:`g_\star = W_\star z_{ik}` for the scaled family of ``wrt="X"`` (non-scale-invariant maps)."""
    X = np.asarray(data.X[i])
    vis = np.asarray(data.visible[i, k])
    Xv = X[vis]
    g = W @ np.asarray(data.queries[i, k])
    nrm = np.linalg.norm(Xv, axis=1)
    if _norm(g) <= 1e-300:
        g = Xv[int(np.argmax(nrm))].copy()
    u = Xv @ g
    if amap.name == "softmax":
        a = int(np.argmax(u))
        gs = _onto_nearest_hyperplane(g, Xv[a] - Xv)
        why = (
            "W_* z puts the two top keys in an exact tie, so J(c u) -> diag(s) - s s^T with "
            "s = (1/2, 1/2, 0, ...) for every c while the term U^T J e_t (c W_* z)^T grows like c"
        )
    elif amap.name == "sigmoid":
        gs = _onto_nearest_hyperplane(g, Xv)
        why = (
            "W_* z is orthogonal to one key, whose logit stays 0 where sigma' = 1/4 for every c, "
            "while the term U^T J e_t (c W_* z)^T grows like c"
        )
    elif amap.name == "relu":
        gs = g if np.max(u) > 0 else -g
        if np.max(Xv @ gs) <= 0:
            gs = Xv[int(np.argmax(nrm))].copy()
        why = "a key with a positive logit keeps ReLU' = 1 for every c while c W_* z grows"
    else:  # linear
        gs = g
        why = "J = I for every W, and the term U^T J e_t (c W z)^T grows like c"
    if gs is None or _norm(gs) <= 1e-12 * max(_norm(g), 1e-300):
        return None
    return gs, why


def _along(v: float, e: np.ndarray, e2: float) -> np.ndarray:
    r""":math:`v\, e / \|e\|^2` as ``v * e / e2``; as ``v * (e / e2)`` where that product
    overflows (tokens times W beyond about 1e150; the other order rounds differently, so
    it serves only there)."""
    with np.errstate(over="ignore"):
        out = v * e / e2
    return out if np.all(np.isfinite(out)) else v * (e / e2)


def _certificate(
    data: TokenData, W: np.ndarray, i: int, k: int, amap: AttentionMap, wrt: str
) -> UnboundednessCertificate | None:
    z = np.asarray(data.queries[i, k])
    z2 = float(z @ z)
    if z2 == 0.0:
        return None
    X = np.asarray(data.X[i])
    vis = np.asarray(data.visible[i, k])
    Xv = X[vis]
    g = W @ z
    if amap.scale_invariant:  # normalized linear: 1^T u -> 0
        e = Xv.sum(axis=0)
        e2 = float(e @ e)
        if e2 == 0.0:
            return None
        g0 = g - (e @ g) / e2 * e
        if _norm(g0) <= 1e-12 * max(_norm(g), 1.0):
            basis = np.linalg.svd(e[None, :])[2]
            g0 = basis[-1] if basis.shape[0] > 1 else g0
        scale = max(_norm(Xv @ g0), 1.0)
        values = scale * np.logspace(0, -4, 5)
        Ws = np.stack([W + np.outer(g0 + _along(v, e, e2) - g, z) / z2 for v in values])
        param, why = "eps", "J = (I - a 1^T) / (1^T u) with 1^T u = eps -> 0"
        if any(abs(S) <= bound for S, bound in (_sum_and_bound(data, Wk, i, k) for Wk in Ws)):
            return None  # a member's 1^T u is not determined by float64: no exact constants
    else:
        base = _certificate_base(data, W, i, k, amap)
        if base is None:
            return None
        gs, why = base
        Wstar = W + np.outer(gs - g, z) / z2
        Wstar = Wstar / max(_norm(Wstar), 1e-300)
        values = np.logspace(0, 4, 5)
        Ws = np.stack([c * Wstar for c in values])
        param = "scale"
    consts = np.array([_constant(*_jacobian(data, Wk, 0, i, k, amap, wrt)) for Wk in Ws])
    if not (np.all(np.diff(consts) > 0.0) and consts[-1] > 10.0 * consts[0]):
        return None  # the family does not grow here: it certifies nothing
    return UnboundednessCertificate(i, k, param, values, Ws, consts, why)


def lipschitz(
    data: TokenData,
    W: Any,
    attention: str = "softmax",
    wrt: Literal["W", "X"] = "W",
) -> LipschitzResult:
    r"""Exact local Lipschitz constants of the attention outputs in W or in the input tokens.

    .. math::

        L^W_{ik} = \|U_i^\top J_\varphi(u_{ik}) X_i\|_2\,\|z_{ik}\|
        \;\le\; \sup_u\|J_\varphi(u)\|_2\, \|U_i\|_2 \|X_i\|_2 \|z_{ik}\|, \qquad
        L^X_{ik} = \|\partial_{\mathrm{vec}\,X_i}\, y_{ik}\|_2

    with :math:`u_{ik} = X_i W z_{ik}` over the visible keys and the Jacobians of
    :func:`attention_jacobian`. The W-bound is :math:`\tfrac12\|X_i\|_2^2\|z_{ik}\|` for
    softmax without values (reason in ``bound_reason``). There is no global bound in X for any
    map, nor in W for normalized linear attention: ``certificate`` then holds an explicit
    family of W with growing local constants, for the first query (from the largest constant
    down) that has one; where no query has one (e.g. every :math:`z_{ik} = 0`, or softmax
    over equal tokens, where :math:`U_i^\top J = 0` at every W) ``bound_reason`` says the
    bound is not decided for these data. *svmgeo's derivation* (reconstruction of the
    abstract of Chen et al., ICLR 2024 submission 4416; docs/attention-maps.md).

    Every W float64 holds is taken: the homogeneous maps (linear and ReLU, of degree 1, and
    normalized linear, of degree 0) are evaluated at :math:`2^{-e} W` for W beyond
    :math:`2^{\pm 256}` and their constants scaled back by the power of two (a constant beyond
    float64's range is inf, e.g. linear attention's in X at :math:`\max|W| = 10^{308}`); softmax
    and sigmoid attention are evaluated at the logits :math:`X_i W z_{ik}` themselves, refused
    where one exceeds float64's range.

    ReLU is not differentiable where a visible :math:`u_t = 0` (W = 0, for one): there the
    Jacobian takes the one-sided derivative :math:`\mathbb 1[u_t > 0] = 0`, and the constants
    there are not the local Lipschitz constant: they can understate it (a ``UserWarning``
    says so, with the number of such queries).

    Parameters
    ----------
    data : TokenData
    W : array of shape (d, d)
    attention : str, default "softmax"
        ``"softmax"``, ``"linear"``, ``"normalized_linear"``, ``"sigmoid"`` or ``"relu"``.
    wrt : {"W", "X"}, default "W"
        The variable: the attention matrix, or every sequence's tokens (keys, the query
        token for self-attention, and the head features when they are the tokens).

    Returns
    -------
    LipschitzResult

    Raises
    ------
    ProblemError
        For an unknown map or ``wrt``, W of the wrong shape or not finite, softmax or sigmoid
        attention at a W whose logits :math:`X_i W z_{ik}` exceed float64's range (the message
        names the query and says how to rescale), or normalized linear attention where
        :math:`\mathbf 1^\top u` is 0 or within its rounding error bound of 0, where float64
        does not determine it (the bound: docs/attention-maps.md, "Normalized linear attention
        where 1^T u is within its rounding error of 0").

    Examples
    --------
    >>> import numpy as np, svmgeo as sg
    >>> from svmgeo.analysis import lipschitz
    >>> data = sg.random_data(4, 5, 6, seed=0)
    >>> lip = lipschitz(data, np.eye(6), "softmax", wrt="W")
    >>> bool(np.all(lip.per_query <= lip.bound_per_query))
    True
    """
    data = _check_data(data, "lipschitz")
    Wc = _check_W(W, data.d, "lipschitz")
    amap = get_attention_map(attention, "lipschitz")
    check_option(wrt, "wrt", ("W", "X"), where="lipschitz")
    n, K = data.n, data.K
    Ws, e = _factored(Wc, amap)  # W = 2^e W_s: W_s's logits and Jacobians, scaled as W's
    if amap.name == "relu":
        kinks = sum(
            bool(np.any(np.asarray(data.visible[i, k]) & (_logits(data, Ws, i, k) == 0.0)))
            for i in range(n)
            for k in range(K)
        )
        if kinks:
            warnings.warn(
                f"lipschitz: ReLU is not differentiable at u_t = 0, met by {kinks} of {n * K} "
                "queries at this W; their constants use the one-sided derivative 1[u_t > 0] "
                "and can understate the local Lipschitz constant there (move W off the kink, "
                "e.g. W + 1e-9 * noise, for a nearby value)",
                UserWarning,
                stacklevel=2,
            )
    jac = [
        [_jacobian(data, Ws, e, i, k, amap, wrt, "lipschitz") for k in range(K)] for i in range(n)
    ]
    per_query = np.array([[_constant(*J) for J in row] for row in jac])
    per_sequence = np.array([_constant(*_stacked(row)) for row in jac])
    if wrt == "X":
        overall = float(per_sequence.max())
    else:
        # stacked rows (C_ik ⊗ z_ik^T): Gram (C C'^T) * (z . z'), of the smaller size
        rows, f = [], 0  # every J_ik is 2^f times the J here: f = -e (normalized linear), else 0
        for i in range(n):
            for k in range(K):
                _, J, f, _ = _map_at(data, Ws, e, i, k, amap, "lipschitz")
                rows.append(np.asarray(data.values[i]).T @ J @ np.asarray(data.X[i]))
        C = np.concatenate(rows)
        Zs = np.repeat(np.asarray(data.queries).reshape(n * K, data.d), data.d_values, axis=0)
        # each factor scaled by its largest entry: the Gram's squares neither overflow (LinAlgError)
        # nor underflow to 0 (an overall constant of 0 beside nonzero per-query ones)
        c_top, z_top = float(np.abs(C).max(initial=0.0)), float(np.abs(Zs).max(initial=0.0))
        if c_top == 0.0 or z_top == 0.0:
            overall = 0.0
        else:
            Cs, Zn = C / c_top, Zs / z_top
            G = (Cs @ Cs.T) * (Zn @ Zn.T)
            top = c_top * z_top * math.sqrt(max(float(np.linalg.eigvalsh(G)[-1]), 0.0))
            overall = float(_times_power_of_two(top, f))
    bound = None
    bound_all = None
    cert = None
    if amap.sums_to_one and bool(np.all(np.asarray(data.visible).sum(axis=-1) == 1)):
        # phi = 1 on the one visible key, whatever W: J = 0, and these constants are global
        bound, bound_all = per_query.copy(), overall
        reason = (
            "every query sees one key, where phi = 1 and its Jacobian is 0 for every W: the "
            "constants above hold for every W"
        )
    elif wrt == "W" and amap.jacobian_bound is not None:
        bound = np.empty((n, K))
        T, d, d_v = data.T, data.d, data.d_values
        for i in range(n):
            for k in range(K):
                vis = np.asarray(data.visible[i, k])
                t_v = int(vis.sum())
                # rounded up by 1 + gamma_r, r the roundings of the local constant (J X, U^T
                # (J X): 2T; the Kronecker product with z: 1; its SVD: d_v + d^2) and of this
                # bound (two SVDs: 2 t_v + d_v + d; ||z||: d + 1; three products: 3), each
                # SVD's largest singular value taken to err by (rows + columns) u sigma_max
                # (LAPACK's p(m, n) u ||A||_2): a conservative allowance, not a proof (no
                # sqrt(rank) factors of norm-wise product errors, J's own rounding not
                # counted); linear attention with values = tokens meets the bound
                # (||X^T X|| = ||X||^2), where the two floats differ by ulps either way
                r = 2 * T + 2 * t_v + 2 * d_v + d * d + 2 * d + 5
                bound[i, k] = (
                    amap.jacobian_bound
                    * _spectral(np.asarray(data.values[i])[vis])
                    * _spectral(np.asarray(data.X[i])[vis])
                    * _norm(data.queries[i, k])
                    * (1.0 + gamma(r))
                )
        bound_all = frobenius_norm(bound)  # (sum b^2)^(1/2), without overflow of the squares
        reason = (
            f"||U^T J X||_2 ||z|| <= sup||J||_2 ||U||_2 ||X||_2 ||z|| with sup||J||_2 = "
            f"{amap.jacobian_bound:g}: {amap.bound_reason}; stacked: ||[M_1; ...]||_2 <= "
            "(sum ||M_j||_2^2)^(1/2)"
        )
    else:
        if wrt == "W":
            claim, why = "no global bound in W", amap.bound_reason
        else:
            claim = "no global bound in X over all W"
            why = (
                "the term U^T J e_t (W z)^T of the Jacobian grows with ||W z|| wherever J "
                "stays away from 0"
            )
        # the queries from the largest constant down: the first family that grows (a query
        # can have none: z_ik = 0, or softmax over equal tokens, where U^T J = 0 at every W)
        # (from W_s: the families depend on W's direction only, or, for the scale-invariant map,
        # start at W_s, whose constants are W's up to the factor 2^e)
        for flat in np.argsort(-per_query, axis=None, kind="stable"):
            i, k = divmod(int(flat), K)
            cert = _certificate(data, Ws, i, k, amap, wrt)
            if cert is not None:
                break
        if cert is not None:
            reason = f"{claim}: {why} (see certificate)"
        else:
            reason = (
                f"not decided for these data ({claim} in general: {why}): no query has a "
                "family of W with growing constants here (e.g. z = 0, or softmax over equal "
                "tokens); the constants above are local"
            )
    return LipschitzResult(
        attention=amap.name,
        wrt=wrt,
        per_query=per_query,
        per_sequence=per_sequence,
        overall=overall,
        bound_per_query=bound,
        bound_overall=bound_all,
        bound_reason=reason,
        certificate=cert,
    )


# -- the selection-changing radius ---------------------------------------------------------
@summarized
@dataclass(frozen=True, eq=False)
class RobustnessRadius:
    r"""The smallest Frobenius perturbation of a sequence's tokens that changes softmax's selection.

    Attributes
    ----------
    selected : ndarray of int, shape (n, K)
        :math:`\alpha_{ik} = \arg\max_t x_{it}^\top W z_{ik}` (visible keys), decided as
        in :func:`robustness_radius` (verify's selection wherever that is one key; one of
        the tied keys at a tie).
    competitor : ndarray of int, shape (n, K)
        The :math:`\tau` attaining the minimum (-1 when a query sees one key).
    per_query : ndarray of shape (n, K)
        :math:`r_{ik} = \min_\tau (x_{i\alpha} - x_{i\tau})^\top W z_{ik} / (\sqrt2\|W z_{ik}\|)`
        (0 at a tie, a gap within its round-off bound of 0, or at :math:`W z_{ik} = 0`; inf
        when a query sees one key).
    radius : ndarray of shape (n,)
        :math:`r_i = \min_k r_{ik}`: the infimum of :math:`\|\Delta X_i\|_F` over perturbations
        of sequence i's tokens that change some query's selection.
    perturbation : ndarray of shape (n, T, d)
        :math:`\Delta X_i` attaining it: :math:`\delta_\tau = -\delta_\alpha =
        m\, g / (2\|g\|^2)` with :math:`g = W z_{ik}`; it puts :math:`\tau` in an exact tie
        with :math:`\alpha`, and any :math:`(1 + \epsilon)\Delta X_i` selects :math:`\tau`.
    svm_per_query, svm_radius : ndarray
        The predicted limit along directional convergence to :math:`W^{\mathrm{mm}}` of the
        selection: the same formula at :math:`W^{\mathrm{mm}}` (NaN without a solution, or
        when W's largest logit ties on some query: no unique selection, said in ``message``).
    W_mm : ndarray of shape (d, d) or None
        Att-SVM of ``selected`` (Frobenius).
    message : str
    label : str
    """

    selected: np.ndarray
    competitor: np.ndarray
    per_query: np.ndarray
    radius: np.ndarray
    perturbation: np.ndarray
    svm_per_query: np.ndarray
    svm_radius: np.ndarray
    W_mm: np.ndarray | None
    message: str
    label: str = RECONSTRUCTION


def _radii(data: TokenData, W: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    r"""(selected, competitor, margin m, :math:`\|W z\|`), each of shape (n, K).

    :math:`\alpha` is the key of :func:`svmgeo.verify`'s selection rule on the logits
    (:func:`~svmgeo.selection.logit_selection` with W: the largest logit, up to
    ``TIE_RTOL`` of the logits' sizes) wherever that rule selects one key. Where it finds a
    tie (or logits beyond float64), the logits are compared through the tokens'
    differences, :math:`u_\tau - u_\alpha = -(x_{i\alpha} - x_{i\tau})^\top g_{ik}`,
    :math:`g_{ik} = W z_{ik}`, by :func:`~svmgeo.selection.tied_maxima` with the sizes of
    :func:`_gap_sizes` (:func:`_gaps`): :math:`\alpha` moves to a key that beats it beyond
    that bound (a larger exact logit: T - 1 moves at most) until none does, and the query
    is a tie (m = 0) where another key is within the bound. The gaps
    :math:`m_\tau = (x_{i\alpha} - x_{i\tau})^\top g_{ik}` are those differences, exact
    where the tokens' difference is (a common large component cancels before the product).
    Before, they were differences of the rounded logits, tied below :math:`10^{-12}
    \max_t |u_t|`: tokens :math:`(10^{13}, 1, 0), (10^{13}, 0, 0.3), (10^{13}, -1, 0.1)`
    with exact gaps 0.85 and 1.95 read as a tie (radius 0), and at :math:`10^8` the radius
    was off by 7e-9 relative.

    Verify's rule (an unoptimized three-way ``einsum``) runs only on the sequences of the
    queries that :func:`_clear` leaves in doubt; at the others its one key is the largest
    of the logits :math:`x_{it}^\top g_{ik}`, proved there."""
    X = np.asarray(data.X)
    Z = np.asarray(data.queries)
    vis = np.asarray(data.visible)
    G = np.einsum("de,nke->nkd", W, Z)  # W z_ik
    with np.errstate(over="ignore", invalid="ignore"):  # only where _clear's b >= 2^1000
        logits = np.where(vis, np.einsum("ntd,nkd->nkt", X, G), -np.inf)
    sel = logits.argmax(axis=2)  # a candidate for verify's key, which _clear proves or not
    gap = _gaps(X, G, sel, vis)[0]
    decided = _clear(X, Z, W, vis, gap, sel)
    tied = np.zeros(decided.shape, dtype=bool)
    tie_comp = np.zeros(sel.shape, dtype=sel.dtype)
    rows = np.flatnonzero(~decided.all(axis=1))  # the sequences of the queries in doubt
    if rows.size:  # verify's rule on all the data, its logits computed on these rows only
        Xr, Zr, vr = X[rows], Z[rows], vis[rows]
        with np.errstate(over="ignore", invalid="ignore"):  # non-finite logits: undecided
            logits[rows] = _verify_logits(Xr, W, Zr, vr)  # the others' are finite (_clear)
        # on the full data, not a TokenData of the rows: its checks (check_scale) read the
        # rows alone, and valid data with tiny rows raised "too small for float64"
        top = logit_selection(data, logits, W)[3][rows]
        sure = top.sum(axis=2) == 1  # verify's one key
        s = np.where(np.isnan(logits[rows]), -np.inf, logits[rows]).argmax(axis=2)
        Gr = G[rows]
        A = np.einsum("de,nke->nkd", np.abs(W), np.abs(Zr))  # |W| |z_ik|: gaps' sizes
        g, top = _gaps(Xr, Gr, s, vr, A)
        for _ in range(data.T - 1):
            beaten = ~sure & ~np.take_along_axis(top, s[..., None], axis=2)[..., 0]
            if not np.any(beaten):  # every other key's gap is positive, or within its bound
                break
            s = np.where(beaten, np.where(top, -g, -np.inf).argmax(axis=2), s)
            g, top = _gaps(Xr, Gr, s, vr, A)
        # a guard: where verify selects one key and another key's gap by the differences is
        # <= 0 after all, a tie (radius 0), never a negative radius. Not reached where the
        # worst-case round-off of verify's logits and of the gaps, 2 (gamma_{d^2+1} +
        # gamma_{2d+1}) of the logits' sizes, is below verify's tolerance TIE_RTOL of them
        # (d up to about 60; typical round-off is far smaller)
        lost = sure[..., None] & (g <= 0.0) & (np.arange(data.T) != s[..., None])
        doubt = lost.any(axis=2)
        sel[rows], gap[rows] = s, g
        tied[rows] = (~sure & (top.sum(axis=2) > 1)) | doubt
        others = np.where(doubt[..., None], lost, top & (np.arange(data.T) != s[..., None]))
        tie_comp[rows] = others.argmax(axis=2)
    np.put_along_axis(gap, sel[..., None], np.inf, axis=2)
    comp = np.where(tied, tie_comp, gap.argmin(axis=2))
    m = np.take_along_axis(gap, comp[..., None], axis=2)[..., 0]
    comp = np.where(np.isfinite(m), comp, -1)
    return sel, comp, np.where(tied, 0.0, m), row_norms(G, axis=2)  # ||W z||, any scale


def _clear(
    X: np.ndarray,
    Z: np.ndarray,
    W: np.ndarray,
    vis: np.ndarray,
    gap: np.ndarray,
    sel: np.ndarray,
) -> np.ndarray:
    r"""The queries (n, K) where :func:`svmgeo.verify`'s rule selects the key ``sel`` alone,
    proved from the gaps :math:`m_\tau` of :func:`_gaps` without verify's logits: those
    where ``sel`` is visible, :math:`b_{ik} < 2^{1000}` and every other visible key has

    .. math::

        m_\tau > 2 c\, b_{ik}, \qquad c = 2\,\mathrm{TIE\_RTOL} + \gamma_{2d+1}
        + \gamma_{d^2+1}, \qquad b_{ik} = \xi_i\, (\mathbf 1^\top |W|\,|z_{ik}| + d^2 \mu)
        + \mu\,(d\,\|z_{ik}\|_1 + d^2 + d),

    :math:`\xi_i = \max_{t, j} |x_{itj}|`, :math:`\mu` = ``selection.SMALLEST_NORMAL``
    (:func:`~svmgeo.selection.underflow_size`), :math:`\gamma_n = n u / (1 - n u)`.

    Proof. :math:`b_{ik}` bounds the size :math:`s_t = |x_t|^\top |W|\,|z| + \mu(d\|z\|_1 +
    d^2)` of each of verify's logits :math:`u_t` (:func:`~svmgeo.selection.logit_sizes`),
    and :math:`2 b_{ik}` the size :math:`|x_\alpha - x_\tau|^\top |W|\,|z| + \mu(d
    \|x_\alpha - x_\tau\|_1 + d)` of each gap (:func:`_gap_sizes`), to a factor :math:`1 +
    O(d u)` for the rounding of these sizes. The exact gap :math:`M_\tau = L_\alpha -
    L_\tau` is within :math:`\gamma_{2d+1}` times its size of :math:`m_\tau`, and each
    :math:`u_t` within :math:`\gamma_{d^2+1} s_t` of the exact :math:`L_t`, so
    :math:`u_\alpha - u_\tau \ge M_\tau - \gamma_{d^2+1}(s_\alpha + s_\tau) > (2\,
    \mathrm{TIE\_RTOL} - O(d u))\, 2 b_{ik} > \mathrm{TIE\_RTOL}\,\max(s_\alpha, s_\tau)`,
    verify's tolerance (one ``TIE_RTOL`` of room for the :math:`O(d u)` and the rounding of
    this test). So :math:`u_\alpha` is the one largest logit and no other is within
    verify's tolerance of it (:func:`~svmgeo.selection.tied_maxima`): verify selects
    :math:`\alpha` alone, and :math:`M_\tau > 0`: the exact largest logit. Verify's
    logits are finite there: each of their partial sums is at most about :math:`s_t \le
    b_{ik} < 2^{1000}` in magnitude. A query that sees one key is clear where
    :math:`b_{ik} < 2^{1000}` (and its key is ``sel``). :math:`b_{ik}` is looser than the
    sizes (the largest entry of the sequence for each entry of its tokens), which only sends
    more queries to verify's rule; it costs n (T d + K d), the test n K T, and verify's
    logits n K T :math:`d^2`."""
    T, d = X.shape[1:]
    xi = np.maximum(X.max(axis=(1, 2)), -X.min(axis=(1, 2)))[:, None]  # (n, 1): max |x_itj|
    Za = np.abs(Z)
    with np.errstate(over="ignore", invalid="ignore"):  # non-finite: not clear
        z_w = Za @ np.abs(W).sum(axis=0) + underflow_size(d * d)  # 1^T |W| |z| + d^2 mu
        b = xi * z_w + underflow_size(d * Za.sum(axis=2) + (d * d + d))  # (n, K)
        c = 2.0 * TIE_RTOL + gamma(2 * d + 1) + gamma(d * d + 1)
        beyond = gap > (2.0 * c * b)[..., None]  # False where either is NaN
    others = vis & (np.arange(T) != sel[..., None])
    seen = np.take_along_axis(vis, sel[..., None], axis=2)[..., 0]
    return seen & (b < 2.0**1000) & np.all(~others | beyond, axis=2)


def _verify_logits(X: np.ndarray, W: np.ndarray, Z: np.ndarray, vis: np.ndarray) -> np.ndarray:
    r"""Verify's logits :math:`x_{it}^\top W z_{ik}` (``-inf`` on hidden keys) of the sequences
    X (n, T, d) with queries Z (n, K, d) and visible keys ``vis`` (n, K, T):
    :func:`~svmgeo.selection.weight_logits` of these rows of a TokenData, without building one
    (its checks read the rows alone), by the computation it uses
    (:func:`~svmgeo.selection.logits_of_arrays`: each logit is its own sum, the same bits as
    on all the data)."""
    return np.where(vis, logits_of_arrays(X, W, Z), -np.inf)


def _gaps(
    X: np.ndarray, G: np.ndarray, sel: np.ndarray, vis: np.ndarray, A: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    r"""The gaps :math:`(x_{i\alpha} - x_{i\tau})^\top g_{ik}` of every key :math:`\tau`
    (0 at :math:`\alpha`, :math:`+\infty` hidden) and, given ``A`` = :math:`|W|\,|z_{ik}|`,
    the keys whose logit is the largest up to round-off: :func:`~svmgeo.selection.tied_maxima`
    of :math:`u_\tau - u_\alpha = -m_\tau` with the sizes of :func:`_gap_sizes` (all False
    without ``A``); shape (n, K, T) each, computed key by key (memory n K d, not n K T d)."""
    n, K = sel.shape
    Xa = X[np.arange(n)[:, None], sel]  # (n, K, d): x_i,alpha_ik
    T = X.shape[1]
    gap = np.empty((n, K, T))
    size = None if A is None else np.empty((n, K, T))
    with np.errstate(over="ignore", invalid="ignore"):
        for t in range(T):
            D = Xa - X[:, t][:, None, :]
            gap[:, :, t] = np.einsum("nkd,nkd->nk", D, G)
            if A is not None and size is not None:
                size[:, :, t] = _gap_sizes(D, A)
    gap = np.where(vis, gap, np.inf)
    if size is None:  # gaps only
        return gap, np.zeros(gap.shape, dtype=bool)
    ranked = np.where(vis & np.isfinite(gap), -gap, -np.inf)  # u_tau - u_alpha
    return gap, tied_maxima(ranked, TIE_RTOL, np.where(vis, size, 0.0))


def _gap_sizes(D: np.ndarray, A: np.ndarray) -> np.ndarray:
    r"""The sizes :math:`|x_\alpha - x_\tau|^\top |W|\,|z| + \mu\,(d\,\|x_\alpha -
    x_\tau\|_1 + d)` of the computed gaps (``D`` the differences, ``A`` = :math:`|W|\,|z|`,
    shape (..., d)): the computed :math:`\mathrm{fl}(x_\alpha - x_\tau)^\top
    \mathrm{fl}(W z)` is within :math:`\gamma_{2d+1}` times the first term of the exact gap
    (Higham, *Accuracy and Stability of Numerical Algorithms*, 2nd ed., §3.1: :math:`u` for
    the subtraction, :math:`\gamma_d` for each of the two inner products), however its terms
    cancel, plus :math:`u\mu` for each of the products that may underflow (the :math:`d`
    of each :math:`(W z)_j`, which :math:`|x_{\alpha j} - x_{\tau j}|` multiplies, and the
    :math:`d` of the gap; :func:`~svmgeo.selection.underflow_size`): the shape of
    :func:`~svmgeo.selection.logit_sizes` with the tokens' difference for the token."""
    d = D.shape[-1]
    absD = np.abs(D)
    return np.einsum("...d,...d->...", absD, A) + underflow_size(d * absD.sum(axis=-1) + d)


def _radius_values(m: np.ndarray, gn: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        r = m / (math.sqrt(2.0) * gn)
    return np.where(np.isinf(m), np.inf, np.where((m == 0.0) | (gn == 0.0), 0.0, r))


def robustness_radius(data: TokenData, W: Any, *, svm: bool = True) -> RobustnessRadius:
    r"""Per sequence, the smallest perturbation of its tokens that changes softmax's selected
    token (to the precision below), the perturbation that attains it, and its predicted SVM
    limit.

    .. math::

        r_{ik} = \min_{\tau \ne \alpha_{ik}}
            \frac{(x_{i\alpha} - x_{i\tau})^\top W z_{ik}}{\sqrt2\, \|W z_{ik}\|}
        = \inf\{\|\Delta X_i\|_F : \arg\max_t (x_{it} + \delta_t)^\top W z_{ik} \ne \alpha_{ik}\},

    for cross-attention (queries fixed). Proof (*svmgeo's derivation*, docs/attention-maps.md):
    only :math:`\delta_\alpha, \delta_\tau` enter the condition
    :math:`(\delta_\tau - \delta_\alpha)^\top g \ge m` (:math:`g = W z_{ik}`), and
    Cauchy–Schwarz gives :math:`m \le \|g\|\,\|\delta_\tau - \delta_\alpha\| \le
    \sqrt2\,\|g\|\,(\|\delta_\alpha\|^2 + \|\delta_\tau\|^2)^{1/2}`, with equality at
    :math:`\delta_\tau = -\delta_\alpha \parallel g`. The radius is invariant under
    :math:`W \to cW`, so along directional convergence to :math:`W^{\mathrm{mm}}` it tends to
    the same formula at :math:`W^{\mathrm{mm}}`, i.e. :math:`1/(\sqrt2\|W^{\mathrm{mm}}
    z_{ik}\|)` when query (i, k) has a support token.

    Precision: :math:`\alpha_{ik}` is :func:`svmgeo.verify`'s selection where its rule on the
    logits selects one key; where that rule finds a tie, the keys are compared through the
    gaps, which are computed from the tokens' differences, :math:`\mathrm{fl}(x_{i\alpha} -
    x_{i\tau})^\top \mathrm{fl}(W z_{ik})`, within :math:`\gamma_{2d+1}\, s_\tau` of the
    exact gap, :math:`s_\tau = |x_{i\alpha} - x_{i\tau}|^\top |W|\,|z_{ik}|` (plus the
    underflow of tiny products), so a large component common to the tokens cancels exactly.
    A gap within :math:`10^{-12} s_\tau` of 0 (``selection.TIE_RTOL``), on a query that
    verify's rule also calls tied, is reported as a tie (radius 0: the exact radius is below
    about :math:`10^{-12} s_\tau / \|W z_{ik}\|`). Otherwise :math:`r_{ik}` is within a
    relative error of about :math:`(2d + 1)\,u\, s_\tau / m_\tau + d\,u\, \|\,|W|\,
    |z_{ik}|\,\| / \|W z_{ik}\|` of the exact radius (:math:`u = 2^{-53}`): to a few ulps
    where neither the terms of the gap nor those of :math:`W z_{ik}` cancel.

    Parameters
    ----------
    data : TokenData
        Cross-attention data (self-attention moves the query with the tokens: not derived).
    W : array of shape (d, d)
    svm : bool, default True
        Also solve Att-SVM of W's selection and give the predicted limit.

    Returns
    -------
    RobustnessRadius

    Raises
    ------
    ProblemError
        For self-attention data or W of the wrong shape.
    """
    data = _check_data(data, "robustness_radius")
    Wc = _check_W(W, data.d, "robustness_radius")
    svm = check_bool(svm, "svm", where="robustness_radius")
    Wc = _split(Wc)[0]  # the radius does not depend on W's scale
    if data.is_self_attention:
        raise ProblemError(
            "robustness_radius is derived for cross-attention, where the query z_ik stays fixed "
            f"when the tokens move; got self-attention data (query={data.query!r}), whose query "
            "moves with its token (not derived). Build the data with Z=... to fix the queries."
        )
    sel, comp, m, gn = _radii(data, Wc)
    per_query = _radius_values(m, gn)
    radius = per_query.min(axis=1)
    n, T, d = data.n, data.T, data.d
    pert = np.zeros((n, T, d))
    G = np.einsum("de,nke->nkd", Wc, np.asarray(data.queries))
    i = np.arange(n)
    k = np.argmin(per_query, axis=1)  # each sequence's smallest radius
    mk, gk = m[i, k], gn[i, k]
    i = i[np.isfinite(mk) & (mk > 0.0) & (gk > 0.0)]  # a perturbation to move
    k, mk, gk = k[i], mk[i], gk[i, None]
    # m g / (2 ||g||^2) as (m / (2 ||g||)) (g / ||g||): m <= 2 max||x|| ||g||, so neither
    # factor overflows (m g and ||g||^2 can, at large tokens and W)
    step = (mk[:, None] / (2.0 * gk)) * (G[i, k] / gk)
    pert[i, comp[i, k]] = 0.0 + step  # comp != sel where m > 0; base's += and -= on zeros:
    pert[i, sel[i, k]] = 0.0 - step  # the same bits, signed zeros included
    svm_q = np.full((n, data.K), np.nan)
    W_mm = None
    message = "radii of W; Att-SVM not solved (svm=False)"
    tied = np.argwhere(m == 0.0)  # W's top logit ties: no unique selection to solve for
    if svm and tied.size:
        shown = ", ".join(f"({i}, {k})" for i, k in tied[:5].tolist())
        message = (
            f"Att-SVM not solved: W's largest logit ties on {len(tied)} quer"
            f"{'y' if len(tied) == 1 else 'ies'} (sequence, query) {shown}"
            f"{', ...' if len(tied) > 5 else ''}, so W selects no unique tokens (ties are "
            "reported, not broken; SPEC §2)"
        )
    elif svm:
        alpha = sel[:, 0] if data.single_query else sel
        res = att_svm(data, alpha)
        if res.W is not None:
            W_mm = res.W
            _, _, m2, gn2 = _radii(data, W_mm)
            svm_q = _radius_values(m2, gn2)
            message = f"predicted limit from Att-SVM of W's selection ({res.status})"
        else:
            message = f"Att-SVM of W's selection has no solution ({res.status}): {res.message}"
    return RobustnessRadius(
        selected=sel,
        competitor=comp,
        per_query=per_query,
        radius=radius,
        perturbation=pert,
        svm_per_query=svm_q,
        svm_radius=svm_q.min(axis=1),
        W_mm=W_mm,
        message=message,
    )
